//! `kept-cache`, `kept-db` and `bounded-log`, stores of the clean catalog: what a service keeps
//! for its whole life and never lets go of (no `Lifecycle::let_go`), bounded by a capacity it
//! reports or by its own design. Issue 56's shapes, each a false leak before the age rule.

#[allow(clippy::wildcard_imports)]
use super::*;

/// Keys of [`KeptCache`]'s data: 8 MiB of 1 KiB values, read at random into a 64 MiB cache.
const KEPT_CACHE_KEYS: u64 = 8192;

/// A 64 MiB block cache shared by every cycle's DB, filling by about 14 KB a cycle (blocks read at
/// random from 8 MiB of data) and far from full in a check's 800 cycles, reported through
/// `Lifecycle::rocksdb_memory` as the guide says, and never let go of. Its blocks are what many
/// cycles read, held at the cache's stacks: the cache's report explains them, within its capacity.
pub struct KeptCache {
    dir: PathBuf,
    cache: TrackedCache,
    /// What [`KeptCache::raising`] adds to the cache's capacity when it is nearly full.
    raise_by: Option<usize>,
}

impl KeptCache {
    /// The store in `dir/db`, its data written and flushed before the run; the cache declared
    /// shared.
    ///
    /// # Errors
    /// RocksDB's, writing the data.
    pub fn new(dir: &Path, ledger: &Ledger) -> Result<Self> {
        KeptCache::with_cache(dir, ledger, 64 << 20, None)
    }

    /// Not a clean store: the same with a 1 MiB cache whose capacity the store raises by 256 KiB
    /// whenever it is 7/8 full, and never lowers (an "auto-tuning" that only grows). It reports
    /// the cache within its capacity at every sample, and the cache grows by its 14 KB a cycle for
    /// as long as the run goes: a bound that rises with what it bounds, while the data does not,
    /// bounds nothing (leak-tests/tests/rising_cache_bound.rs).
    ///
    /// # Errors
    /// RocksDB's, writing the data.
    pub fn raising(dir: &Path, ledger: &Ledger) -> Result<Self> {
        KeptCache::with_cache(dir, ledger, 1 << 20, Some(256 << 10))
    }

    fn with_cache(dir: &Path, ledger: &Ledger, capacity: usize, raise_by: Option<usize>) -> Result<Self> {
        let cache = TrackedCache::new_lru(ledger, capacity);
        cache.token().declare_shared();
        let store = KeptCache { dir: dir.join("db"), cache, raise_by };
        let db = TrackedDb::<SingleThreaded>::open(&store.options(ledger), &store.dir)?;
        for i in 0..KEPT_CACHE_KEYS {
            db.put(i.to_be_bytes(), value(0, i, 1024))?;
        }
        db.flush()?;
        close_after(db, None)?;
        Ok(store)
    }

    fn options(&self, ledger: &Ledger) -> TrackedOptions {
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.set_block_cache(&self.cache);
        table.set_block_size(4 << 10);
        let mut opts = TrackedOptions::new(ledger);
        opts.create_if_missing(true);
        opts.set_block_based_table_factory(&table);
        opts
    }
}

impl Lifecycle for KeptCache {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.read", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        if let Some(step) = self.raise_by {
            let capacity = self.cache.capacity();
            if self.cache.get_usage() >= capacity / 8 * 7 {
                self.cache.set_capacity(capacity + step);
            }
        }
        let mut opts = self.options(ctx.ledger);
        if ctx.faults.check_error("open.db") {
            opts.set_error_if_exists(true);
        }
        Ok(TrackedDb::open(&opts, &self.dir)?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        // Four blocks' worth a cycle, most of them new to the cache until it holds the data.
        for i in 0..4u64 {
            if i == 2 {
                fault(ctx, "work.read")?;
            }
            let k = (c.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9)).rotate_left(17)
                % KEPT_CACHE_KEYS;
            if db.get(k.to_be_bytes())?.is_none() {
                return Err(CleanStoreError(format!("key {k} missing in cycle {c}")));
            }
        }
        Ok(())
    }

    fn close(&mut self, db: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let flushed = fault(ctx, "close.flush").and_then(|()| Ok(db.flush()?));
        close_after(db, flushed.err())
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        consumers.cache(&self.cache);
        consumers.read().ok()
    }
}

/// A DB kept open for the whole run (declared shared, reported through `MemoryConsumers::db`),
/// whose memtable fills by about 40 KB a cycle toward its 64 MiB write buffer and is never
/// flushed in a check's 800 cycles; beside it, a segment DB opened, written and closed every
/// cycle. While the kept DB is open, RocksDB's periodic-task timer keeps running and holds each
/// closed segment's cancelled tasks until they are next due (about 20 minutes): memory that grows
/// every cycle of a check and is given back by time.
pub struct KeptDb {
    dir: PathBuf,
    kept: TrackedDb<SingleThreaded>,
    _opts: TrackedOptions,
}

impl KeptDb {
    /// Opens the kept DB under `dir/kept` and declares it shared.
    ///
    /// # Errors
    /// RocksDB's, opening it.
    pub fn new(dir: &Path, ledger: &Ledger) -> Result<Self> {
        let mut opts = TrackedOptions::new(ledger);
        opts.create_if_missing(true);
        opts.set_write_buffer_size(64 << 20);
        let kept = TrackedDb::open(&opts, dir.join("kept"))?;
        for token in [kept.token(), opts.token()] {
            token.declare_shared();
        }
        Ok(KeptDb { dir: dir.to_path_buf(), kept, _opts: opts })
    }
}

impl Lifecycle for KeptDb {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.segment", "work.write", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let mut opts = TrackedOptions::new(ctx.ledger);
        opts.create_if_missing(true);
        if ctx.faults.check_error("open.segment") {
            opts.set_error_if_exists(true);
        }
        Ok(TrackedDb::open(&opts, self.dir.join("segment"))?)
    }

    fn work(&mut self, segment: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        let w = write_options(ctx, "work.write");
        // About 40 KB a cycle into the kept DB's memtable, new keys every cycle.
        for i in 0..40 {
            self.kept.put_opt(key(c, i), value(c, i, 1000), &w)?;
        }
        segment.put(key(c, 0), value(c, 0, 100))?;
        Ok(())
    }

    fn close(&mut self, segment: Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let flushed = fault(ctx, "close.flush").and_then(|()| Ok(segment.flush()?));
        close_after(segment, flushed.err())
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.join("segment"))
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        consumers.db(&self.kept);
        consumers.read().ok()
    }
}

/// One event of [`BoundedLog`]'s log: 64 bytes, kept inline.
#[derive(Debug, Clone, Copy)]
struct Event {
    cycle: u64,
    key: u64,
    len: u64,
    _pad: [u64; 5],
}

/// A log of the last 2,048 events (16 a cycle) in a `VecDeque` that starts empty and doubles until
/// it holds them, then drops its oldest: its buffer grows in cycles 32 and 64 (to 2,048) and never again. A
/// DB opened and closed every cycle makes the events. Nothing is let go of at the end.
pub struct BoundedLog {
    dir: PathBuf,
    log: std::collections::VecDeque<Event>,
}

/// The events [`BoundedLog`] keeps.
const LOG_EVENTS: usize = 2048;

impl BoundedLog {
    /// The store in `dir/db`.
    pub fn new(dir: &Path) -> Self {
        BoundedLog { dir: dir.join("db"), log: std::collections::VecDeque::new() }
    }
}

impl Lifecycle for BoundedLog {
    type Store = TrackedDb<SingleThreaded>;
    type Error = CleanStoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.write"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store> {
        let mut opts = TrackedOptions::new(ctx.ledger);
        opts.create_if_missing(true);
        if ctx.faults.check_error("open.db") {
            opts.set_error_if_exists(true);
        }
        Ok(TrackedDb::open(&opts, &self.dir)?)
    }

    fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<()> {
        let c = ctx.cycle;
        let w = write_options(ctx, "work.write");
        for i in 0..16 {
            let v = value(c, i, 64);
            db.put_opt(key(c % 32, i), &v, &w)?;
            if self.log.len() == LOG_EVENTS {
                self.log.pop_front();
            }
            self.log.push_back(Event { cycle: c, key: i, len: v.len() as u64, _pad: [0; 5] });
        }
        Ok(())
    }

    fn close(&mut self, db: Self::Store, _ctx: &CycleCtx<'_>) -> Result<()> {
        close_after(db, None)
    }

    fn check(&mut self, _ctx: &CycleCtx<'_>) -> leakcheck::Integrity {
        let mut found = leakcheck::Integrity::default();
        found.records_checked = self.log.len() as u64;
        let newest = self.log.back().map_or(0, |e| e.cycle);
        let out_of_order = self.log.iter().zip(self.log.iter().skip(1)).filter(|(a, b)| a.cycle > b.cycle).count();
        found.violation("log_out_of_order", out_of_order as u64);
        found.violation("log_over_bound", self.log.len().saturating_sub(LOG_EVENTS) as u64);
        found.count("newest_cycle", newest);
        found.count("bytes_logged", self.log.iter().map(|e| e.len + e.key).sum::<u64>() % 1000);
        found
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}
