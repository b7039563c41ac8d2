//! `shared-cache-wbm`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Three DBs per cycle sharing one block cache and one write buffer manager (charged to the
/// cache), both made once and declared shared; each DB's directory is reused, so its data and
/// files grow.
pub struct SharedCacheWbm {
    dir: PathBuf,
    /// Made at start, let go of when the run ends, made anew if the store is opened again.
    shared: Option<Shared>,
}

struct Shared {
    cache: TrackedCache,
    wbm: TrackedWriteBufferManager,
}

impl Shared {
    fn new(ledger: &Ledger) -> Shared {
        let cache = TrackedCache::new_lru(ledger, 8 << 20);
        let wbm = TrackedWriteBufferManager::new_with_cache(ledger, 2 << 20, false, &cache);
        cache.token().declare_shared();
        wbm.token().declare_shared();
        Shared { cache, wbm }
    }
}

impl SharedCacheWbm {
    /// Makes the shared cache and write buffer manager.
    pub fn new(dir: &Path, ledger: &Ledger) -> Self {
        SharedCacheWbm { dir: dir.to_path_buf(), shared: Some(Shared::new(ledger)) }
    }

    fn options(&mut self, ledger: &Ledger) -> TrackedOptions {
        let shared = self.shared.get_or_insert_with(|| Shared::new(ledger));
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.set_block_cache(&shared.cache);
        let mut opts = busy_options(ledger);
        opts.set_block_based_table_factory(&table);
        opts.set_write_buffer_manager(&shared.wbm);
        opts
    }
}

impl Lifecycle for SharedCacheWbm {
    type Store = Vec<TrackedDb<SingleThreaded>>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.write", "close.marker"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let mut dbs = Vec::new();
        for i in 0..3 {
            let mut opts = self.options(ctx.ledger);
            if ctx.faults.check_error("open.db") {
                opts.set_error_if_exists(true);
            }
            // The DBs opened so far are dropped (closed) by the `?` on failure.
            dbs.push(TrackedDb::open(&opts, self.dir.join(format!("db-{i}")))?);
        }
        Ok(dbs)
    }

    fn work(&mut self, dbs: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        for db in dbs.iter() {
            let w = write_options(ctx, "work.write");
            for i in 0..300 {
                db.put_opt(key(c, i), value(c, i, 200), &w)?;
            }
            if c >= 20 {
                db.delete_range_cf(
                    &db.cf_handle("default").ok_or_else(|| CleanStoreError("no default".into()))?,
                    key(c - 20, 0),
                    key(c - 19, 0),
                )?;
            }
            for i in (0..300).step_by(11) {
                db.get(key(c.saturating_sub(3), i))?;
            }
            let scanned = db.iterator(IteratorMode::End).take(300).collect::<std::result::Result<Vec<_>, _>>()?;
            drop(scanned);
        }
        Ok(())
    }

    fn close(&mut self, dbs: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let mut first = None;
        for db in dbs {
            let marker = db.put_opt(b"closed", ctx.cycle.to_be_bytes(), &write_options(ctx, "close.marker"));
            let closed = db.close().into_result();
            if let Err(e) = marker.and(closed) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), |e| Err(e.into()))
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    fn instances_per_cycle(&self) -> u64 {
        3
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        let shared = self.shared.as_ref()?;
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        consumers.cache(&shared.cache).write_buffer_manager(&shared.wbm);
        consumers.read().ok()
    }

    /// Drops the shared cache and write buffer manager: the blocks the cycles cached are freed.
    fn let_go(&mut self) {
        self.shared = None;
    }
}
