//! The RocksDB consumers a store can report (`Lifecycle::rocksdb_memory`, through
//! `probe::MemoryConsumers`), and the allocating stacks that fill each: RocksDB charges a block
//! cache for the blocks it reads into it and their handles, a memtable for its arena, a table
//! reader for the index, filter and properties blocks it reads when it opens a file. What a
//! reported consumer accounts for explains that share of what its stacks hold
//! ([`super::age::History::explained_share`]); residue at its stacks with no report covering it
//! is never called a leak by its age, only open.
//!
//! A stack fills a consumer when one of its frames is one of RocksDB's functions that make the
//! consumer's memory (below, per kind). The budget bounds the explanation: a leak at those frames
//! beyond what the consumer reports (with the allocator's rounding, [`crate::probe::CACHE_ROUNDING`])
//! still shows in every cycle it took from.

use serde::{Deserialize, Serialize};

use crate::probe::RocksDbMemory;

/// A kind of memory RocksDB accounts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Consumer {
    /// A block cache's entries: blocks read into it, their parsed form, their handles.
    BlockCache,
    /// Memtables: their arenas and skip lists.
    Memtable,
    /// Table readers: the index, filter and properties blocks a file's reader keeps, its table
    /// cache entry.
    TableReader,
}

impl Consumer {
    /// Every kind.
    pub(crate) const ALL: [Consumer; 3] = [Consumer::BlockCache, Consumer::Memtable, Consumer::TableReader];

    /// RocksDB's functions whose allocations fill this consumer (a frame contains one).
    fn makers(self) -> &'static [&'static str] {
        match self {
            // A block read for the cache (MaybeReadBlockAndLoadToCache), put in it
            // (PutDataBlockToCache), its cache handle (the shards' Insert/CreateHandle).
            Consumer::BlockCache => &[
                "rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache",
                "rocksdb::BlockBasedTable::PutDataBlockToCache",
                "rocksdb::lru_cache::LRUCacheShard::",
                "rocksdb::clock_cache::",
                "rocksdb::ShardedCache<",
            ],
            // A memtable's arena and its entries (MemTable::Add through the concurrent arena),
            // the memtable itself.
            Consumer::Memtable => &["rocksdb::MemTable::", "rocksdb::ConcurrentArena::", "ConstructNewMemtable"],
            // A file's reader, made when the table cache opens it.
            Consumer::TableReader => &["rocksdb::BlockBasedTable::Open", "rocksdb::TableCache::GetTableReader"],
        }
    }

    /// The kind a stack's frames (named, innermost first) fill, if any: the innermost frame that
    /// is one of a kind's makers decides (a block read for the cache under a table reader's open
    /// is the cache's).
    pub(crate) fn of_frames(frames: &[String]) -> Option<Consumer> {
        frames.iter().find_map(|f| Consumer::ALL.into_iter().find(|k| k.makers().iter().any(|m| f.contains(m))))
    }

    /// What the report says this consumer holds, with the allocator's rounding above what RocksDB
    /// charges: the caches within their capacity (net of reservations), the memtables, the table
    /// readers.
    pub(crate) fn budget(self, m: &RocksDbMemory) -> f64 {
        let reported = match self {
            Consumer::BlockCache => m.cache_bytes(),
            Consumer::Memtable => m.mem_table_total_bytes,
            Consumer::TableReader => m.table_readers_total_bytes,
        };
        reported as f64 * (1.0 + crate::probe::CACHE_ROUNDING)
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Consumer::BlockCache => "block cache",
            Consumer::Memtable => "memtables",
            Consumer::TableReader => "table readers",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_innermost_maker_decides_the_kind() {
        let cached = frames(&[
            "rocksdb::BlockFetcher::ReadBlock(bool)",
            "std::enable_if<..>::type rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::Block_kData>(..)",
            "rocksdb::BlockBasedTable::Open(..)",
        ]);
        assert_eq!(Consumer::of_frames(&cached), Some(Consumer::BlockCache));
        let reader = frames(&["rocksdb::ReadTablePropertiesHelper(..)", "rocksdb::BlockBasedTable::Open(..)"]);
        assert_eq!(Consumer::of_frames(&reader), Some(Consumer::TableReader));
        let arena =
            frames(&["rocksdb::Arena::AllocateNewBlock(unsigned long)", "rocksdb::ConcurrentArena::AllocateAligned"]);
        assert_eq!(Consumer::of_frames(&arena), Some(Consumer::Memtable));
        let user = frames(&["store::Cache::insert (src/cache.rs:12)", "rocksdb::DBImpl::Get(..)"]);
        assert_eq!(Consumer::of_frames(&user), None);
    }
}
