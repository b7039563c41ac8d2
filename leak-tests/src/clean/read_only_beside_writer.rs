//! `read-only-beside-writer`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A writer reopened every cycle, and beside it, while it is open, a read-only open of the same
/// directory that reads what the writer flushed (a query service next to its ingester).
pub struct ReadOnlyBesideWriter {
    pub(super) dir: PathBuf,
}

impl Lifecycle for ReadOnlyBesideWriter {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["work.write", "open.read_only"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        Ok(TrackedDb::open(&busy_options(ctx.ledger), self.dir.join("db"))?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        let w = write_options(ctx, "work.write");
        for i in 0..300 {
            db.put_opt(key(c, i), value(c, i, 200), &w)?;
        }
        if c >= 30 {
            db.delete_range_cf(
                &db.cf_handle("default").ok_or_else(|| CleanStoreError("no default".into()))?,
                key(c - 30, 0),
                key(c - 29, 0),
            )?;
        }
        db.flush()?;
        let path = if ctx.faults.check_error("open.read_only") {
            // RocksDB's own error: no DB there.
            self.dir.join("missing")
        } else {
            self.dir.join("db")
        };
        let mut ro_opts = TrackedOptions::new(ctx.ledger);
        ro_opts.create_if_missing(false);
        let ro = TrackedDb::<SingleThreaded>::open_for_read_only(&ro_opts, path, false)?;
        for i in (0..300).step_by(7) {
            if ro.get(key(c, i))?.is_none() {
                return Err(CleanStoreError(format!("read-only open misses key {i} of cycle {c}")));
            }
        }
        let n = ro.iterator(IteratorMode::Start).take(500).count();
        if n == 0 {
            return Err(CleanStoreError("read-only open sees nothing".into()));
        }
        // A read-only DB has no WAL to sync: dropping it is its close.
        drop(ro);
        Ok(())
    }

    fn close(&mut self, db: Self::Store, _ctx: &CycleCtx<'_>) -> Result<()> {
        Ok(db.close().into_result()?)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
