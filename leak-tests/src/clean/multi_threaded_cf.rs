//! `multi-threaded-cf`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A DB in multi-threaded column-family mode, reopened every cycle: two column families created,
/// written and scanned by two threads at once through shared column-family references, then
/// dropped.
pub struct MultiThreadedCf {
    pub(super) dir: PathBuf,
    pub(super) leftover: BTreeSet<String>,
}

impl Lifecycle for MultiThreadedCf {
    type Store = TrackedDb<MultiThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["work.write", "work.scan"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let opts = busy_options(ctx.ledger);
        let cfs: Vec<TrackedCfDescriptor> = self
            .leftover
            .iter()
            .map(|n| TrackedCfDescriptor::new(n.clone(), TrackedOptions::new(ctx.ledger)))
            .collect();
        let db = TrackedDb::<MultiThreaded>::open_cf_descriptors(&opts, self.dir.join("db"), cfs)?;
        for name in std::mem::take(&mut self.leftover) {
            db.drop_cf(&name)?;
        }
        Ok(db)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        let names: Vec<String> = (0..2).map(|j| format!("t{c}-{j}")).collect();
        for name in &names {
            db.create_cf(name, &TrackedOptions::new(ctx.ledger))?;
            self.leftover.insert(name.clone());
        }
        let db = &*db;
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let handles: Vec<_> = names
                .iter()
                .map(|name| {
                    s.spawn(move || -> Result<()> {
                        let cf = db.cf_handle(name).ok_or_else(|| CleanStoreError("cf missing".into()))?;
                        let w = write_options(ctx, "work.write");
                        for i in 0..300 {
                            db.put_cf_opt(&cf, key(c, i), value(c, i, 128), &w)?;
                        }
                        let mut n = 0;
                        for item in db.iterator_cf(&cf, IteratorMode::Start) {
                            item?;
                            n += 1;
                            if n == 100 && ctx.faults.check_error("work.scan") {
                                return Err(CleanStoreError("injected error at work.scan".into()));
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err(CleanStoreError("worker panicked".into()))))
                .collect()
        });
        results.into_iter().collect::<Result<Vec<()>>>()?;
        Ok(())
    }

    fn close(&mut self, db: Self::Store, _ctx: &CycleCtx<'_>) -> Result<()> {
        let mut first: Option<CleanStoreError> = None;
        for name in std::mem::take(&mut self.leftover) {
            if let Err(e) = db.drop_cf(&name) {
                self.leftover.insert(name);
                first.get_or_insert(e.into());
            }
        }
        close_after(db, first)
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
