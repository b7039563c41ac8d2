//! The RocksDB consumers a store can report (`Lifecycle::rocksdb_memory`, through
//! `probe::MemoryConsumers`), and the allocating stacks that fill each: RocksDB charges a block
//! cache for the blocks it reads into it and their handles, a memtable for its arena; and each
//! live SST file of a DB kept open has its reader (index, filter and properties blocks, its `Rep`)
//! and metadata (its entry in the current version, in the SST file manager, in the table cache, in
//! the set of files grabbed for a purge until the file is deleted), which grow with the DB's
//! data. What a reported consumer
//! accounts for explains that share of what its stacks hold
//! ([`super::age::History::explained_share`]); residue at its stacks with no report covering it
//! is never called a leak by its age, only open.
//!
//! One more holds memory by time rather than by amount: RocksDB's periodic-task timer. While any
//! DB is open, a DB closed beside it leaves its cancelled periodic tasks (the stats dump, the info
//! log's flush) in the timer's heap until they are next due: up to twice their period (the first
//! run is delayed by up to a period more), 600 s for the stats dump by default
//! ([`TIMER_HOLDS_SECONDS`]). Residue at `rocksdb::Timer::Add` turns over within that time,
//! converted into cycles at the run's own pace ([`SiteFacts::periodic_window`](super::SiteFacts)).
//!
//! A stack fills a consumer when one of its frames is one of RocksDB's functions that make the
//! consumer's memory (below, per kind): the innermost such frame decides. RocksDB's cache code
//! (its shards' insert) serves the block cache and the table cache alike, so it decides only
//! where no other maker is on the stack: a table cache's handle is the live file's. The budget
//! bounds the explanation: a leak at those frames beyond what the consumer reports (with the
//! allocator's rounding, [`crate::probe::CACHE_ROUNDING`]) still shows in every cycle it took
//! from.

use serde::{Deserialize, Serialize};

use crate::probe::RocksDbMemory;

/// A kind of memory RocksDB accounts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Consumer {
    /// A block cache's entries: blocks read into it, their parsed form, their handles.
    BlockCache,
    /// Memtables: their arenas and skip lists.
    Memtable,
    /// A DB's live SST files: each file's reader (the index, filter and properties blocks it
    /// keeps) and metadata (its entry in the current version, the SST file manager, the table
    /// cache, the files grabbed for a purge).
    Files,
    /// RocksDB's periodic-task timer: the tasks of DBs closed while another stays open, until next
    /// due (a window in time, not an amount).
    PeriodicTasks,
}

/// The longest a cancelled periodic task stays in RocksDB's timer by default, with a quarter
/// more: twice the stats dump's period of 600 s (`stats_dump_period_sec`; the first run of a task
/// is delayed by up to one period more than its period). A store that sets a longer period holds
/// its closed DBs' tasks longer: residue at `rocksdb::Timer::Add` older than this is judged.
pub(crate) const TIMER_HOLDS_SECONDS: f64 = 2.0 * 600.0 * 1.25;

/// RocksDB's cache code, which fills the block cache unless another maker is on the stack.
const CACHE_CODE: [&str; 3] =
    ["rocksdb::lru_cache::LRUCacheShard::", "rocksdb::clock_cache::", "rocksdb::ShardedCache<"];

impl Consumer {
    /// Every kind.
    pub(crate) const ALL: [Consumer; 4] =
        [Consumer::BlockCache, Consumer::Memtable, Consumer::Files, Consumer::PeriodicTasks];

    /// RocksDB's functions whose allocations fill this consumer (a frame contains one).
    fn makers(self) -> &'static [&'static str] {
        match self {
            // A block read for the cache (MaybeReadBlockAndLoadToCache), put in it
            // (PutDataBlockToCache).
            Consumer::BlockCache => &[
                "rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache",
                "rocksdb::BlockBasedTable::PutDataBlockToCache",
            ],
            // A memtable's arena and its entries (MemTable::Add through the concurrent arena),
            // the memtable itself.
            Consumer::Memtable => &["rocksdb::MemTable::", "rocksdb::ConcurrentArena::", "ConstructNewMemtable"],
            // A file's reader, made when the table cache opens it; a file added to the current
            // version, tracked by the SST file manager, found in the table cache, grabbed for a
            // purge (RocksDB keeps a file that was still a pending output in that set until the
            // file is deleted).
            Consumer::Files => &[
                "rocksdb::BlockBasedTable::Open",
                "rocksdb::TableCache::GetTableReader",
                "rocksdb::VersionBuilder::",
                "rocksdb::VersionStorageInfo::",
                "rocksdb::SstFileManagerImpl::OnAddFile",
                "rocksdb::TableCache::FindTable",
                "rocksdb::DBImpl::MarkAsGrabbedForPurge",
            ],
            // A DB's periodic tasks, added to the timer when it opens (the scheduler copies each
            // task's function into the timer's argument: the copy is the timer entry's).
            Consumer::PeriodicTasks => &["rocksdb::Timer::Add", "rocksdb::PeriodicTaskScheduler::Register"],
        }
    }

    /// The kind a stack's frames (named, innermost first) fill, if any: the innermost frame that
    /// is one of a kind's makers decides (a block read for the cache under a table reader's open
    /// is the cache's); RocksDB's cache code alone, the block cache. A frame of the user's own code
    /// inside the maker (between the allocation and it: a comparator or a merge operator called
    /// from a memtable's insert) makes the allocation the user's: no consumer.
    pub(crate) fn of_frames(frames: &[String]) -> Option<Consumer> {
        let maker = frames
            .iter()
            .enumerate()
            .find_map(|(i, f)| {
                Consumer::ALL.into_iter().find(|k| k.makers().iter().any(|m| f.contains(m))).map(|k| (i, k))
            })
            .or_else(|| {
                let i = frames.iter().position(|f| CACHE_CODE.iter().any(|m| f.contains(m)))?;
                Some((i, Consumer::BlockCache))
            });
        let (at, kind) = maker?;
        let users = crate::probe::stacks::own_frame(frames).is_some_and(|own| own < at);
        (!users).then_some(kind)
    }

    /// What the report says this consumer holds, with the allocator's rounding above what RocksDB
    /// charges: the caches within their capacity (net of reservations), the memtables not yet
    /// flushed; for the
    /// files, the bounds the counter's data allowance uses: their readers' share of the files'
    /// bytes ([`crate::probe::TABLE_READER_SHARE`], or what RocksDB accounts for its readers, if
    /// more: its figure counts the index and filter, not the reader's own structures) and the
    /// most a file's metadata takes ([`crate::probe::LIVE_FILE_BYTES`]) each.
    pub(crate) fn budget(self, m: &RocksDbMemory) -> f64 {
        let rounded = |bytes: u64| bytes as f64 * (1.0 + crate::probe::CACHE_ROUNDING);
        match self {
            Consumer::BlockCache => rounded(m.cache_bytes()),
            // Those not yet flushed: RocksDB flushes them at its write buffers' size. A flushed
            // memtable something still pins (an iterator, a snapshot's version) is bounded by
            // nothing.
            Consumer::Memtable => rounded(m.mem_table_unflushed_bytes),
            Consumer::Files => {
                let readers = rounded(m.table_readers_total_bytes)
                    .max(m.live_sst_bytes as f64 * crate::probe::TABLE_READER_SHARE);
                readers + m.live_sst_files as f64 * crate::probe::LIVE_FILE_BYTES
            }
            // Bounded by time, not amount: see `bounded_by_time`.
            Consumer::PeriodicTasks => 0.0,
        }
    }

    /// Whether what it holds is bounded by time ([`TIMER_HOLDS_SECONDS`]) rather than by a report.
    pub(crate) fn bounded_by_time(self) -> bool {
        self == Consumer::PeriodicTasks
    }

    /// Its name in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Consumer::BlockCache => "block cache",
            Consumer::Memtable => "memtables",
            Consumer::Files => "SST files' readers and metadata",
            Consumer::PeriodicTasks => "RocksDB's periodic-task timer",
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
        assert_eq!(Consumer::of_frames(&reader), Some(Consumer::Files));
        let arena =
            frames(&["rocksdb::Arena::AllocateNewBlock(unsigned long)", "rocksdb::ConcurrentArena::AllocateAligned"]);
        assert_eq!(Consumer::of_frames(&arena), Some(Consumer::Memtable));
        let user = frames(&["store::Cache::insert (src/cache.rs:12)", "rocksdb::DBImpl::Get(..)"]);
        assert_eq!(Consumer::of_frames(&user), None);
        // The cache's own code: the block cache's, unless the table cache called it.
        let handle =
            frames(&["rocksdb::lru_cache::LRUCacheShard::CreateHandle(..)", "rocksdb::ShardedCache<..>::Insert(..)"]);
        assert_eq!(Consumer::of_frames(&handle), Some(Consumer::BlockCache));
        let table_cache = [handle.as_slice(), &frames(&["rocksdb::TableCache::FindTable(..)"])].concat();
        assert_eq!(Consumer::of_frames(&table_cache), Some(Consumer::Files));
    }

    #[test]
    fn a_frame_of_the_users_code_inside_a_consumer_makes_the_allocation_the_users() {
        // A comparator of the user's called from a memtable's insert: its allocation is its own.
        let comparator = frames(&[
            "alloc::raw_vec::RawVec<T,A>::grow_one (/rustc/59807616e/library/alloc/src/raw_vec.rs:1)",
            "store::KeyOrder::compare (src/order.rs:14)",
            "rocksdb::MemTable::KeyComparator::operator()(..)",
            "rocksdb::MemTable::Add(..)",
        ]);
        assert_eq!(Consumer::of_frames(&comparator), None);
        // The user's code outside it (the put that reached the memtable): the memtable's.
        let arena = frames(&[
            "rocksdb::Arena::AllocateNewBlock(unsigned long)",
            "rocksdb::ConcurrentArena::AllocateAligned",
            "rocksdb::MemTable::Add(..)",
            "store::Store::put (src/store.rs:40)",
        ]);
        assert_eq!(Consumer::of_frames(&arena), Some(Consumer::Memtable));
    }
}
