//! `async-close`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// A DB per cycle whose close finishes on another thread about 50 ms after `close` returns (a
/// store that hands its shutdown to a background executor). The closing thread reports its
/// error to the next `close`; the store joins its threads when it is dropped.
pub struct AsyncClose {
    pub(super) dir: PathBuf,
    pub(super) closing: Vec<JoinHandle<()>>,
    pub(super) errors: (mpsc::Sender<CleanStoreError>, mpsc::Receiver<CleanStoreError>),
}

impl AsyncClose {
    fn reap(&mut self) {
        let (done, running): (Vec<_>, Vec<_>) = self.closing.drain(..).partition(|h| h.is_finished());
        for h in done {
            // A closing thread that panicked has already reported nothing: surface it.
            if h.join().is_err() {
                let _ = self.errors.0.send(CleanStoreError("closing thread panicked".into()));
            }
        }
        self.closing = running;
    }
}

impl Drop for AsyncClose {
    fn drop(&mut self) {
        for h in self.closing.drain(..) {
            let _ = h.join();
        }
    }
}

impl Lifecycle for AsyncClose {
    type Store = (TrackedDb<SingleThreaded>, PathBuf);
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["work.write", "close.marker"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        self.reap();
        let opts = busy_options(ctx.ledger);
        let path = self.dir.join(format!("cycle-{}", ctx.cycle));
        let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, TrackedOptions::new(ctx.ledger)));
        Ok((TrackedDb::open_cf_descriptors(&opts, &path, cfs)?, path))
    }

    fn work(&mut self, store: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let db = &store.0;
        let cf = db.cf_handle("data").ok_or_else(|| CleanStoreError("no data column family".into()))?;
        let w = write_options(ctx, "work.write");
        for i in 0..300 {
            db.put_cf_opt(cf, key(ctx.cycle, i), value(ctx.cycle, i, 128), &w)?;
        }
        Ok(())
    }

    fn close(&mut self, store: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let (db, path) = store;
        let marker = match db.cf_handle("offsets") {
            Some(cf) => db.put_cf_opt(cf, b"closed", [1], &write_options(ctx, "close.marker")),
            None => Ok(()),
        };
        let errors = self.errors.0.clone();
        self.closing.push(std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            if let Err(e) = db.close().into_result() {
                let _ = errors.send(e.into());
            }
            let _ = std::fs::remove_dir_all(&path);
        }));
        marker?;
        // An earlier cycle's close that failed on its thread is reported now.
        match self.errors.1.try_recv() {
            Ok(e) => Err(e),
            Err(_) => Ok(()),
        }
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
