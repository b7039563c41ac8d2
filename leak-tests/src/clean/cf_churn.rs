//! `cf-churn`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One DB reopened every cycle with the column families it has; each cycle creates three, writes
/// them, takes a checkpoint, reads it back through a read-only open, scans, and drops the column
/// families again. A failure leaves column families behind, which the next cycle opens and drops.
pub struct CfChurn {
    pub(super) dir: PathBuf,
    pub(super) cfs: BTreeSet<String>,
}

impl Lifecycle for CfChurn {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["work.create_cf", "work.write", "work.checkpoint", "work.scan", "close.drop_cf"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let opts = busy_options(ctx.ledger);
        let cfs: Vec<TrackedCfDescriptor> =
            self.cfs.iter().map(|n| TrackedCfDescriptor::new(n.clone(), TrackedOptions::new(ctx.ledger))).collect();
        Ok(TrackedDb::open_cf_descriptors(&opts, self.dir.join("db"), cfs)?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        for j in 0..3 {
            let name = format!("c{c}-{j}");
            fault(ctx, "work.create_cf")?;
            db.create_cf(&name, &TrackedOptions::new(ctx.ledger))?;
            self.cfs.insert(name);
        }
        let w = write_options(ctx, "work.write");
        for j in 0..3 {
            let cf = db.cf_handle(&format!("c{c}-{j}")).ok_or_else(|| CleanStoreError("created cf missing".into()))?;
            for i in 0..200 {
                db.put_cf_opt(cf, key(c, i), value(c, i, 100), &w)?;
            }
        }
        let target = self.dir.join(format!("checkpoint-{c}"));
        if ctx.faults.check_error("work.checkpoint") {
            // RocksDB refuses a checkpoint into a directory that exists.
            std::fs::create_dir_all(&target).map_err(|e| CleanStoreError(e.to_string()))?;
        }
        let checkpoint = TrackedCheckpoint::new(db)?;
        let made = checkpoint.create_checkpoint(&target);
        drop(checkpoint);
        let read = made.map_err(CleanStoreError::from).and_then(|()| {
            let opts = TrackedOptions::new(ctx.ledger);
            let names: Vec<String> = (0..3).map(|j| format!("c{c}-{j}")).collect();
            let cfs = names.iter().map(|n| TrackedCfDescriptor::new(n.clone(), TrackedOptions::new(ctx.ledger)));
            // Other cycles' leftover column families are in the checkpoint too: a read-only open
            // may name a subset.
            let ro = TrackedDb::<SingleThreaded>::open_cf_descriptors_read_only(&opts, &target, cfs, false)?;
            let cf = ro.cf_handle(&names[0]).ok_or_else(|| CleanStoreError("checkpoint cf missing".into()))?;
            let n = ro.iterator_cf(cf, IteratorMode::Start).count();
            if n != 200 {
                return Err(CleanStoreError(format!("checkpoint holds {n} of 200 records")));
            }
            Ok(())
        });
        let _ = std::fs::remove_dir_all(&target);
        read?;
        for j in 0..3 {
            let cf = db.cf_handle(&format!("c{c}-{j}")).ok_or_else(|| CleanStoreError("created cf missing".into()))?;
            let mut n = 0;
            for item in db.iterator_cf(cf, IteratorMode::Start) {
                item?;
                n += 1;
                if n == 50 {
                    fault(ctx, "work.scan")?;
                }
            }
        }
        Ok(())
    }

    fn close(&mut self, mut db: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let mut first: Option<CleanStoreError> = None;
        for name in std::mem::take(&mut self.cfs) {
            let dropped = fault(ctx, "close.drop_cf").and_then(|()| Ok(db.drop_cf(&name)?));
            if let Err(e) = dropped {
                // Still in the DB: the next cycle opens it and drops it again.
                self.cfs.insert(name);
                first.get_or_insert(e);
            }
        }
        close_after(db, first)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
