//! An offsets store on rust-rocksdb's own types, as most code leakcheck is pointed at is written:
//! `rocksdb::DB`, `rocksdb::Options`, `rocksdb::ColumnFamilyDescriptor`, no tracked wrapper and
//! no ledger. Its [`Lifecycle`] is the whole of the glue.
//!
//! Each cycle opens the DB with an `offsets` column family (options of its own, made for it),
//! commits the cycle's offset, flushes and closes; the flush at close is a fault point
//! (`close.flush`). After close, [`Lifecycle::check`] reopens the DB and reads the offset back:
//! an acknowledged offset must survive a failed flush (the write-ahead log has it).
//!
//! [`Variant::ParksOptionsOnFailedFlush`] is the KAFKA-20616 shape in safe Rust: when the flush
//! fails, the offsets column family's options are parked for a retry that never comes, in a list
//! the store keeps for its whole life. Every handle is dropped by Rust eventually, so no `Drop`
//! is skipped and no handle count can see it; the options' C++ memory stays, and the byte signals
//! name the line that made it.

// This crate is the store without wrappers: untracked rust-rocksdb types are its subject.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::PathBuf;

use leakcheck::{CycleCtx, Integrity, Lifecycle, StoreInfo};
use rocksdb::{ColumnFamilyDescriptor, Options, DB};

const OFFSETS: &str = "offsets";
const KEY: &[u8] = b"committed";

/// Which store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Releases everything, whatever fails.
    Clean,
    /// A failed flush at close parks the offsets column family's options for a retry that never
    /// comes: a raw leak, invisible to any handle count.
    ParksOptionsOnFailedFlush,
}

/// The store's long-lived state: where the data lives, what was acknowledged, and (the leaking
/// variant's) options parked for a retry.
pub struct OffsetStore {
    dir: PathBuf,
    variant: Variant,
    committed: Option<u64>,
    retry: Vec<Options>,
}

/// What a cycle holds open: the DB and the options its offsets column family was made with.
pub struct Open {
    db: DB,
    offsets_options: Options,
}

impl OffsetStore {
    /// A store whose DB lives in `dir` (made by the check when it does not exist yet).
    pub fn new(dir: PathBuf, variant: Variant) -> Self {
        OffsetStore { dir, variant, committed: None, retry: Vec::new() }
    }

    fn open_db(&self) -> Result<Open, rocksdb::Error> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        // The offsets column family is small: options of its own, with a small write buffer.
        let mut offsets_options = Options::default();
        offsets_options.set_write_buffer_size(64 << 10);
        let offsets = ColumnFamilyDescriptor::new(OFFSETS, offsets_options.clone());
        let db = DB::open_cf_descriptors(&opts, &self.dir, [offsets])?;
        Ok(Open { db, offsets_options })
    }
}

impl Lifecycle for OffsetStore {
    type Store = Open;
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["close.flush"]
    }

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<Open, String> {
        self.open_db().map_err(|e| format!("open: {e}"))
    }

    fn work(&mut self, store: &mut Open, ctx: &CycleCtx<'_>) -> Result<(), String> {
        let cf = store.db.cf_handle(OFFSETS).ok_or("no offsets column family")?;
        store.db.put_cf(cf, KEY, ctx.cycle.to_be_bytes()).map_err(|e| format!("put: {e}"))?;
        self.committed = Some(ctx.cycle); // acknowledged once the write returned
        Ok(())
    }

    fn close(&mut self, store: Open, ctx: &CycleCtx<'_>) -> Result<(), String> {
        let Open { db, offsets_options } = store;
        let flushed = if ctx.faults.check_error("close.flush") {
            Err("flush: injected failure".to_string())
        } else {
            db.flush().map_err(|e| format!("flush: {e}"))
        };
        drop(db);
        match (&flushed, self.variant) {
            (Err(_), Variant::ParksOptionsOnFailedFlush) => self.retry.push(offsets_options),
            _ => drop(offsets_options),
        }
        flushed
    }

    fn check(&mut self, _ctx: &CycleCtx<'_>) -> Integrity {
        let mut found = Integrity::default();
        let Some(expected) = self.committed else { return found };
        found.records_checked = 1;
        let read = self.open_db().map_err(|e| e.to_string()).and_then(|open| {
            let cf = open.db.cf_handle(OFFSETS).ok_or("no offsets column family")?;
            open.db.get_cf(cf, KEY).map_err(|e| e.to_string())
        });
        match read {
            Ok(Some(v)) if v == expected.to_be_bytes() => found.violation("lost_offsets", 0),
            other => {
                found.violation("lost_offsets", 1);
                found.problem(format!("offset {expected} read back as {other:?}"));
            }
        }
        found
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    fn describe(&self) -> StoreInfo {
        StoreInfo::new(match self.variant {
            Variant::Clean => "raw offsets store",
            Variant::ParksOptionsOnFailedFlush => "raw offsets store (parks options on a failed flush)",
        })
    }
}
