//! `growing-reopened`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One directory reopened every cycle; its data grows by about 100 KiB a cycle (the oldest is
/// deleted after 40 cycles), with small write buffers so flushes and compactions run inside the
/// cycle and the files to open grow with the run.
pub struct GrowingReopened {
    pub(super) dir: PathBuf,
}

impl Lifecycle for GrowingReopened {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.write", "work.scan", "close.marker"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let mut opts = busy_options(ctx.ledger);
        if ctx.faults.check_error("open.db") {
            // RocksDB's own error: the DB exists.
            opts.set_error_if_exists(true);
        }
        let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, busy_options(ctx.ledger)));
        Ok(TrackedDb::open_cf_descriptors(&opts, &self.dir, cfs)?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        let cf = db.cf_handle("data").ok_or_else(|| CleanStoreError("no data column family".into()))?;
        let w = write_options(ctx, "work.write");
        for i in 0..400 {
            db.put_cf_opt(cf, key(c, i), value(c, i, 256), &w)?;
        }
        if c >= 40 {
            db.delete_range_cf(cf, key(c - 40, 0), key(c - 39, 0))?;
        }
        let mut n = 0;
        for item in db.iterator_cf(cf, IteratorMode::Start) {
            item?;
            n += 1;
            if n == 100 {
                fault(ctx, "work.scan")?;
            }
            if n == 2000 {
                break;
            }
        }
        Ok(())
    }

    fn close(&mut self, db: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let marker = match db.cf_handle("offsets") {
            Some(cf) => db.put_cf_opt(cf, b"closed", ctx.cycle.to_be_bytes(), &write_options(ctx, "close.marker")),
            None => Ok(()),
        };
        let closed = db.close().into_result();
        marker?;
        Ok(closed?)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
