//! `long-lived-db`, a store of the clean catalog.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One DB open for the whole run (declared shared), written every cycle so that memtables fill,
/// flush and compact on RocksDB's background threads; keys are overwritten every 16 cycles so
/// compactions drop the old versions (or, [`LongLivedDb::growing`], never: the data and the live
/// files grow with the run). A cycle opens a batch and a snapshot, writes, scans and reads back,
/// and releases them.
pub struct LongLivedDb {
    /// The DB and what it keeps, until the run lets go of them.
    kept: Option<Kept>,
    /// Cycles whose keys are overwritten in turn; `None`: every cycle writes new keys.
    working_set: Option<u64>,
}

struct Kept {
    db: TrackedDb<SingleThreaded>,
    cache: TrackedCache,
    _opts: TrackedOptions,
}

fn let_go_already() -> CleanStoreError {
    CleanStoreError("the store let go of its DB (the run is over)".into())
}

/// A long-lived DB's per-cycle handles.
pub struct LongLivedCycle {
    batch: TrackedWriteBatch,
}

impl LongLivedDb {
    /// Opens the DB under `dir` and declares it shared.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened.
    pub fn new(dir: &Path, ledger: &Ledger) -> Result<Self> {
        Self::open(dir, ledger, Some(16))
    }

    /// Opens the DB under `dir`, declared shared, for a run that never overwrites a key: every
    /// cycle adds 100 KB of data, so files, RocksDB's per-file state and the table readers grow
    /// through the run, as a store's own data legitimately does.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened.
    pub fn growing(dir: &Path, ledger: &Ledger) -> Result<Self> {
        Self::open(dir, ledger, None)
    }

    fn open(dir: &Path, ledger: &Ledger, working_set: Option<u64>) -> Result<Self> {
        // An explicit block cache, accounted for: without one, RocksDB makes a 32 MiB cache per
        // column family that its memory accounting does not report, and the blocks of every
        // file a compaction replaced stay in it until it is full (100 KB a cycle here, all of it
        // "unexplained").
        let cache = TrackedCache::new_lru(ledger, 4 << 20);
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.set_block_cache(&cache);
        let mut opts = busy_options(ledger);
        opts.set_block_based_table_factory(&table);
        let db = TrackedDb::open(&opts, dir.join("db"))?;
        for token in [db.token(), opts.token(), cache.token()] {
            token.declare_shared();
        }
        Ok(LongLivedDb { kept: Some(Kept { db, cache, _opts: opts }), working_set })
    }
}

impl Lifecycle for LongLivedDb {
    type Store = LongLivedCycle;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.batch", "work.write", "work.scan", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<LongLivedCycle> {
        let batch = TrackedWriteBatch::new(ctx.ledger);
        fault(ctx, "open.batch")?;
        Ok(LongLivedCycle { batch })
    }

    fn work(&mut self, store: &mut LongLivedCycle, ctx: &CycleCtx<'_>) -> Result<()> {
        // A working set of 16 cycles' keys, overwritten in turn: compactions reclaim the old
        // versions, so the files (and RocksDB's per-file state) stay bounded. Without one, they
        // grow.
        let c = self.working_set.map_or(ctx.cycle, |n| ctx.cycle % n);
        for i in 0..400 {
            store.batch.put(key(c, i), value(ctx.cycle, i, 256));
        }
        let batch = std::mem::replace(&mut store.batch, TrackedWriteBatch::new(ctx.ledger));
        let db = &self.kept.as_ref().ok_or_else(let_go_already)?.db;
        db.write_opt(batch, &write_options(ctx, "work.write"))?;
        let snapshot = db.snapshot();
        let mut seen = 0;
        for item in snapshot.iterator(IteratorMode::From(&key(c, 0), Direction::Forward)) {
            let (k, _) = item?;
            if k.len() == 16 && k[..8] != c.to_be_bytes() {
                break;
            }
            seen += 1;
            if seen == 200 {
                fault(ctx, "work.scan")?;
            }
        }
        for i in (0..400).step_by(37) {
            db.get(key(c, i))?;
        }
        Ok(())
    }

    fn close(&mut self, store: LongLivedCycle, ctx: &CycleCtx<'_>) -> Result<()> {
        drop(store);
        fault(ctx, "close.flush")?;
        self.kept.as_ref().ok_or_else(let_go_already)?.db.flush_wal(false)?;
        Ok(())
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        let kept = self.kept.as_ref()?;
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        consumers.db(&kept.db).cache(&kept.cache);
        consumers.read().ok()
    }

    /// Closes the DB kept open through the run: its memtable, table readers and cached blocks
    /// hold what many cycles wrote.
    fn let_go(&mut self) {
        self.kept = None;
    }
}
