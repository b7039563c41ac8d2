//! RocksDB's own memory accounting (`rocksdb::perf`'s approximate memory usage by type).

// The RocksDB probe owns a native MemoryUsageBuilder inside each MemoryConsumers: made for one
// reading of memory by type and dropped with it (clippy.toml lists the type for everyone else).
#![allow(clippy::disallowed_types)]

use rocksdb::perf::MemoryUsageBuilder;
use rocksdb::{Cache, DBWithThreadMode, ThreadMode};

use super::RocksDbMemory;
use crate::tracked::{TrackedCache, TrackedDb, TrackedWriteBufferManager};

/// RocksDB's unit of cache reservation (`CacheReservationManager::kSizeDummyEntry`).
const DUMMY_ENTRY_BYTES: u64 = 256 << 10;

/// Reads one DB's live SST files: their count and bytes.
type LiveFiles<'a> = Box<dyn Fn() -> Result<(u64, u64), rocksdb::Error> + 'a>;

/// A cache added: its identity (the ledger's id when it is tracked, else the address of the value
/// given: the binding does not expose the native object, so add a raw cache once, not a clone of
/// it beside), its usage now, its capacity, and the ledger's id (what a write buffer manager
/// charges is matched by it).
struct CacheRef<'a> {
    at: usize,
    usage: &'a Cache,
    capacity: u64,
    token: Option<u64>,
}

/// The live DBs, caches and write buffer managers whose memory RocksDB should account for. A cache
/// shared by several of them counts once.
///
/// Add the caches the store sized (their usage above capacity is then not explained) and the
/// write buffer managers that charge memtables to them (their reservation is then counted once,
/// as the memtables of the DBs added, not again as cache usage). The reservation is estimated as
/// RocksDB makes it while memtables grow: the manager's usage rounded up to 256 KiB. After
/// memtables shrink RocksDB may keep up to a third more reserved until usage falls below three
/// quarters of it; that excess counts as explained until then.
///
/// ```
/// # let ledger = leakcheck::Ledger::new();
/// let cache = leakcheck::tracked::TrackedCache::new_lru(&ledger, 1 << 20);
/// let mut consumers = leakcheck::probe::MemoryConsumers::new()?;
/// consumers.cache(&cache);
/// let memory = consumers.read()?;
/// assert_eq!(memory.cache_total_bytes, cache.get_usage() as u64);
/// # Ok::<(), rocksdb::Error>(())
/// ```
pub struct MemoryConsumers<'a> {
    builder: MemoryUsageBuilder<'a>,
    /// Each DB's live SST files: how many, and their bytes.
    files: Vec<LiveFiles<'a>>,
    caches: Vec<CacheRef<'a>>,
    managers: Vec<&'a TrackedWriteBufferManager>,
}

impl std::fmt::Debug for MemoryConsumers<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConsumers")
            .field("caches", &self.caches.len())
            .field("managers", &self.managers.len())
            .finish_non_exhaustive()
    }
}

impl<'a> MemoryConsumers<'a> {
    /// An empty set.
    ///
    /// # Errors
    /// RocksDB's error when its accounting object cannot be made.
    pub fn new() -> Result<Self, rocksdb::Error> {
        Ok(MemoryConsumers {
            builder: MemoryUsageBuilder::new()?,
            files: Vec::new(),
            caches: Vec::new(),
            managers: Vec::new(),
        })
    }

    /// Adds a live DB (its memtables, table readers and the block caches of its column families).
    pub fn db<T: ThreadMode>(&mut self, db: &'a TrackedDb<T>) -> &mut Self {
        self.raw_db(db)
    }

    /// Adds a live DB of rust-rocksdb's own types ([`MemoryConsumers::db`] for a tracked one).
    pub(crate) fn raw_db<T: ThreadMode>(&mut self, db: &'a DBWithThreadMode<T>) -> &mut Self {
        self.builder.add_db(db);
        self.files.push(Box::new(move || {
            let files = db.live_files()?;
            Ok((files.len() as u64, files.iter().map(|f| f.size as u64).sum()))
        }));
        self
    }

    /// Adds a cache, bounded by its capacity.
    pub fn cache(&mut self, cache: &'a TrackedCache) -> &mut Self {
        self.add_cache(cache, cache.capacity() as u64, Some(cache.token().id()))
    }

    /// Adds a cache of rust-rocksdb's own type, bounded by `capacity_bytes`, the capacity it was
    /// made with (rust-rocksdb has no getter): what it holds above that is not explained.
    pub fn raw_cache(&mut self, cache: &'a Cache, capacity_bytes: usize) -> &mut Self {
        self.add_cache(cache, capacity_bytes as u64, None)
    }

    fn add_cache(&mut self, cache: &'a Cache, capacity: u64, token: Option<u64>) -> &mut Self {
        let at = token.map_or(std::ptr::from_ref(cache) as usize, |id| id as usize);
        if !self.caches.iter().any(|c| c.at == at) {
            self.builder.add_cache(cache);
            self.caches.push(CacheRef { at, usage: cache, capacity, token });
        }
        self
    }

    /// Adds a write buffer manager: its reservation in a cache added here is not explained as
    /// cache usage (the memtables it stands for are explained through the DBs added, and only
    /// through them).
    pub fn write_buffer_manager(&mut self, manager: &'a TrackedWriteBufferManager) -> &mut Self {
        if !self.managers.iter().any(|m| m.token().id() == manager.token().id()) {
            self.managers.push(manager);
        }
        self
    }

    /// Reads the figures now.
    ///
    /// # Errors
    /// RocksDB's error from its accounting.
    pub fn read(&self) -> Result<RocksDbMemory, rocksdb::Error> {
        let usage = self.builder.build()?;
        let (mut reserved_total, mut over_capacity, mut capacity) = (0, 0, 0);
        for cache in &self.caches {
            capacity += cache.capacity;
            let reserved: u64 = self
                .managers
                .iter()
                .filter(|m| cache.token.is_some() && m.charged_cache() == cache.token)
                .map(|m| (m.get_usage() as u64).div_ceil(DUMMY_ENTRY_BYTES) * DUMMY_ENTRY_BYTES)
                .sum();
            let real = (cache.usage.get_usage() as u64).saturating_sub(reserved);
            over_capacity += real.saturating_sub(cache.capacity);
            reserved_total += reserved;
        }
        let (mut live_sst_files, mut live_sst_bytes) = (0, 0);
        for read in &self.files {
            let (n, bytes) = read()?;
            live_sst_files += n;
            live_sst_bytes += bytes;
        }
        Ok(RocksDbMemory {
            live_sst_files,
            live_sst_bytes,
            mem_table_total_bytes: usage.approximate_mem_table_total(),
            mem_table_unflushed_bytes: usage.approximate_mem_table_unflushed(),
            table_readers_total_bytes: usage.approximate_mem_table_readers_total(),
            cache_total_bytes: usage.approximate_cache_total(),
            cache_reserved_bytes: reserved_total,
            cache_over_capacity_bytes: over_capacity,
            cache_capacity_bytes: capacity,
        })
    }
}

#[cfg(test)]
mod tests {
    use rocksdb::SingleThreaded;

    use super::*;
    use crate::ledger::Ledger;
    use crate::tracked::{TrackedBlockBasedOptions, TrackedOptions};

    type Db = TrackedDb<SingleThreaded>;

    fn open(ledger: &Ledger, dir: &std::path::Path, cache: &TrackedCache, wbm: &TrackedWriteBufferManager) -> Db {
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.set_block_cache(cache);
        let mut o = TrackedOptions::new(ledger);
        o.create_if_missing(true);
        o.set_block_based_table_factory(&table);
        o.set_write_buffer_manager(wbm);
        Db::open(&o, dir).expect("open")
    }

    /// A directory, a cache of `capacity` and a write buffer manager charging it.
    fn charged(ledger: &Ledger, capacity: usize) -> (tempfile::TempDir, TrackedCache, TrackedWriteBufferManager) {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = TrackedCache::new_lru(ledger, capacity);
        let wbm = TrackedWriteBufferManager::new_with_cache(ledger, 64 << 20, false, &cache);
        (dir, cache, wbm)
    }

    fn fill(db: &Db, n: u32) {
        for i in 0..n {
            db.put(i.to_be_bytes(), [7u8; 512]).expect("put");
        }
    }

    #[test]
    fn a_memtable_charged_to_a_cache_counts_once() {
        let ledger = Ledger::new();
        let (dir, cache, wbm) = charged(&ledger, 64 << 20);
        let db = open(&ledger, dir.path(), &cache, &wbm);
        fill(&db, 2000);
        let mut consumers = MemoryConsumers::new().expect("consumers");
        consumers.db(&db).cache(&cache).write_buffer_manager(&wbm);
        let m = consumers.read().expect("read");
        assert!(m.mem_table_total_bytes > 0 && m.cache_reserved_bytes >= wbm.get_usage() as u64, "{m:?}");
        assert!(m.cache_total_bytes >= m.cache_reserved_bytes, "the reservation is part of the cache's usage: {m:?}");
        // Counted once: the memtables, plus what the cache holds besides the reservation.
        assert!(m.explained_bytes() < m.mem_table_total_bytes + m.cache_reserved_bytes, "{m:?}");
        assert!(m.explained_bytes() >= m.mem_table_total_bytes, "{m:?}");
    }

    #[test]
    fn a_memtable_of_a_db_not_asked_about_stays_unexplained() {
        let ledger = Ledger::new();
        let (dir, cache, wbm) = charged(&ledger, 64 << 20);
        let elsewhere = open(&ledger, dir.path(), &cache, &wbm);
        fill(&elsewhere, 2000);
        let mut consumers = MemoryConsumers::new().expect("consumers");
        consumers.cache(&cache).write_buffer_manager(&wbm);
        let m = consumers.read().expect("read");
        assert!(wbm.get_usage() > 512 * 1000, "the memtable is charged: {}", wbm.get_usage());
        assert!(m.explained_bytes() < (wbm.get_usage() / 10) as u64, "the reservation explains nothing: {m:?}");
    }

    #[test]
    fn usage_above_a_caches_capacity_is_not_explained() {
        let ledger = Ledger::new();
        let (dir, cache, wbm) = charged(&ledger, 1024);
        let db = open(&ledger, dir.path(), &cache, &wbm);
        fill(&db, 2000);
        db.flush().expect("flush");
        // Two iterators at opposite ends pin their data blocks beyond the cache's 1 KiB.
        let mut first = db.raw_iterator();
        first.seek_to_first();
        let mut last = db.raw_iterator();
        last.seek_to_last();
        assert!(first.valid() && last.valid());
        let mut consumers = MemoryConsumers::new().expect("consumers");
        consumers.cache(&cache).write_buffer_manager(&wbm);
        let m = consumers.read().expect("read");
        assert!(m.cache_over_capacity_bytes > 4096, "{m:?}");
        assert!(m.cache_bytes() <= 1024, "{m:?}");
        assert!(m.explained_bytes() <= 1280 + m.unbounded_bytes(), "at most the capacity and its rounding: {m:?}");
    }
}
