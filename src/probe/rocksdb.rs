//! RocksDB's own memory accounting (`rocksdb::perf`'s approximate memory usage by type).

use rocksdb::perf::MemoryUsageBuilder;
use rocksdb::ThreadMode;

use super::RocksDbMemory;
use crate::tracked::{TrackedCache, TrackedDb};

/// The live DBs and caches whose memory RocksDB should account for. A cache shared by several of
/// them counts once.
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
}

impl<'a> MemoryConsumers<'a> {
    /// An empty set.
    ///
    /// # Errors
    /// RocksDB's error when its accounting object cannot be made.
    pub fn new() -> Result<Self, rocksdb::Error> {
        Ok(MemoryConsumers { builder: MemoryUsageBuilder::new()? })
    }

    /// Adds a live DB (its memtables, table readers and the block caches of its column families).
    pub fn db<T: ThreadMode>(&mut self, db: &'a TrackedDb<T>) -> &mut Self {
        self.builder.add_db(db);
        self
    }

    /// Adds a cache.
    pub fn cache(&mut self, cache: &'a TrackedCache) -> &mut Self {
        self.builder.add_cache(cache);
        self
    }

    /// Reads the figures now.
    ///
    /// # Errors
    /// RocksDB's error from its accounting.
    pub fn read(&self) -> Result<RocksDbMemory, rocksdb::Error> {
        let usage = self.builder.build()?;
        Ok(RocksDbMemory {
            mem_table_total_bytes: usage.approximate_mem_table_total(),
            mem_table_unflushed_bytes: usage.approximate_mem_table_unflushed(),
            table_readers_total_bytes: usage.approximate_mem_table_readers_total(),
            cache_total_bytes: usage.approximate_cache_total(),
        })
    }
}
