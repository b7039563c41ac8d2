//! The simplest scenario: a 2-column-family DB in a fresh directory every cycle, written and
//! closed, the directory destroyed. Nothing persists across cycles, so the bytes signal is at
//! its quietest: the sensitivity baseline.

use std::path::PathBuf;

use rocksdb::SingleThreaded;

use leakcheck::harness::{CycleCtx, Lifecycle};
use leakcheck::tracked::{TrackedCfDescriptor, TrackedDb, TrackedOptions, TrackedWriteOptions};

/// One fresh-directory cycle outside any harness: open a 2-column-family DB at `path` through the
/// tracked wrappers, write `writes` keys into each column family, close it (the close error is
/// returned), destroy the directory. Benches and tests use it as the reference unit of work.
///
/// # Errors
/// RocksDB's error from open, a write or close.
pub fn cycle_once(ledger: &leakcheck::Ledger, path: &std::path::Path, writes: u32) -> Result<(), rocksdb::Error> {
    let mut opts = TrackedOptions::new(ledger);
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, TrackedOptions::new(ledger)));
    let db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&opts, path, cfs)?;
    let w = TrackedWriteOptions::new(ledger);
    for name in ["data", "offsets"] {
        if let Some(cf) = db.cf_handle(name) {
            for i in 0..writes {
                db.put_cf_opt(cf, i.to_be_bytes(), [0x5a; 64], &w)?;
            }
        }
    }
    let closed = db.close().into_result();
    let _ = std::fs::remove_dir_all(path);
    closed
}

/// A fresh DB directory per cycle.
#[derive(Debug)]
pub struct FreshDbLoop {
    dir: PathBuf,
    writes: u32,
}

impl FreshDbLoop {
    /// Cycles in subdirectories of `dir`, writing `writes` keys per column family.
    pub fn new(dir: impl Into<PathBuf>, writes: u32) -> Self {
        FreshDbLoop { dir: dir.into(), writes }
    }
}

impl Lifecycle for FreshDbLoop {
    type Store = (TrackedDb<SingleThreaded>, PathBuf);
    type Error = rocksdb::Error;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["close.marker"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store, rocksdb::Error> {
        let mut opts = TrackedOptions::new(ctx.ledger);
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, TrackedOptions::new(ctx.ledger)));
        let path = self.dir.join(format!("cycle-{}", ctx.cycle));
        Ok((TrackedDb::open_cf_descriptors(&opts, &path, cfs)?, path))
    }

    fn work(&mut self, store: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<(), rocksdb::Error> {
        let w = TrackedWriteOptions::new(ctx.ledger);
        for name in ["data", "offsets"] {
            if let Some(cf) = store.0.cf_handle(name) {
                for i in 0..self.writes {
                    store.0.put_cf_opt(cf, i.to_be_bytes(), [0x5a; 64], &w)?;
                }
            }
        }
        Ok(())
    }

    fn close(&mut self, store: Self::Store, ctx: &CycleCtx<'_>) -> Result<(), rocksdb::Error> {
        let (db, path) = store;
        let marker = match db.cf_handle("offsets") {
            Some(cf) => {
                let mut w = TrackedWriteOptions::new(ctx.ledger);
                if ctx.faults.check_error("close.marker") {
                    w.set_sync(true);
                    w.disable_wal(true);
                }
                db.put_cf_opt(cf, b"closed", [1], &w)
            }
            None => Ok(()),
        };
        let closed = db.close().into_result();
        let _ = std::fs::remove_dir_all(&path);
        marker.and(closed)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
