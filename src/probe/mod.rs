//! Memory and OS-resource probes: what a leak looks like from outside the code that leaked.
//!
//! A [`Sample`] is a snapshot of jemalloc's counters (which, with the malloc override, include
//! RocksDB's C++ heap), the process's OS resources from `/proc/self`, and a monotonic timestamp.
//! Process-wide signals are only trustworthy when nothing else in the process is working: keep
//! tests that read them in a process of their own.

mod coverage;
pub(crate) mod generations;
#[cfg(feature = "profiling")]
pub(crate) mod heap;
pub(crate) mod jemalloc;
#[cfg(feature = "profiling")]
mod pprof;
pub(crate) mod process;
#[cfg(feature = "rocksdb")]
mod rocksdb;
#[cfg_attr(not(feature = "profiling"), allow(dead_code))]
pub(crate) mod stacks;
pub(crate) mod symbols;

use crate::ledger::Settle;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

#[cfg(feature = "rocksdb")]
pub use self::rocksdb::MemoryConsumers;
#[cfg(feature = "rocksdb")]
pub use coverage::check_rocksdb_coverage;
pub use coverage::{check_global_allocator, check_malloc_coverage, Coverage};
pub use jemalloc::JemallocStats;
pub use process::ProcessStats;

/// Why a probe could not read something, or why native allocations are not visible to it (the
/// coverage checks, [`check_malloc_coverage`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A jemalloc control (`mallctl`) failed.
    #[error("jemalloc mallctl `{name}` failed: {source}")]
    Jemalloc {
        /// The mallctl name.
        name: &'static str,
        /// jemalloc's error.
        source: tikv_jemalloc_ctl::Error,
    },
    /// A void jemalloc control failed with an errno-style code.
    #[error("jemalloc mallctl `{name}` failed with code {code}")]
    Mallctl {
        /// The mallctl name.
        name: &'static str,
        /// The code jemalloc returned.
        code: i32,
    },
    /// A `/proc` file could not be read (not Linux, or /proc not mounted).
    #[error("cannot read {}: {source}", path.display())]
    Proc {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// The directory to watch cannot be resolved.
    #[error("cannot resolve watched directory {}: {source}", path.display())]
    Dir {
        /// The directory as given.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },
    /// Rust's global allocator is not jemalloc.
    #[error(
        "the global allocator is not jemalloc: a {requested_bytes}-byte Vec moved jemalloc's \
         stats.allocated by {allocated_delta_bytes} bytes"
    )]
    GlobalAllocatorNotJemalloc {
        /// Bytes requested through the global allocator.
        requested_bytes: u64,
        /// What jemalloc saw.
        allocated_delta_bytes: i64,
    },
    /// C `malloc` does not go through jemalloc.
    #[error(
        "C malloc is not routed to jemalloc: {requested_bytes} bytes malloc'ed moved \
         stats.allocated by {allocated_delta_bytes} bytes. {diagnosis}"
    )]
    MallocNotRouted {
        /// Bytes requested through `malloc`.
        requested_bytes: u64,
        /// What jemalloc saw.
        allocated_delta_bytes: i64,
        /// The likely cause and its fix.
        diagnosis: String,
    },
    /// RocksDB's memtable allocations do not show in jemalloc's counters.
    #[error(
        "RocksDB's allocations are not visible: writing {written_bytes} bytes into a memtable \
         moved stats.allocated by {allocated_delta_bytes} bytes (expected at least \
         {expected_bytes}). {diagnosis}"
    )]
    RocksDbNotVisible {
        /// Bytes written.
        written_bytes: u64,
        /// What jemalloc saw.
        allocated_delta_bytes: i64,
        /// The minimum growth that proves visibility.
        expected_bytes: u64,
        /// The likely cause and its fix.
        diagnosis: String,
    },
    /// The scratch database for the RocksDB check failed.
    #[cfg(feature = "rocksdb")]
    #[error("the RocksDB coverage check could not run its scratch database: {0}")]
    RocksDb(#[from] ::rocksdb::Error),
    /// A heap profile dump could not be read.
    #[error("heap profile, line {line}: {problem}")]
    HeapProfile {
        /// The line at fault (1-based).
        line: usize,
        /// What is wrong with it.
        problem: String,
    },
    /// jemalloc's heap profiler is unavailable or refused a command.
    #[error("heap profiling: {problem}{}", if fix.is_empty() { String::new() } else { format!(" ({fix})") })]
    Profiling {
        /// What failed.
        problem: String,
        /// What to do about it, when known.
        fix: String,
    },
    /// A profile could not be compressed.
    #[error("cannot compress a profile: {0}")]
    Compress(#[source] std::io::Error),
    /// The flame graph could not be drawn.
    #[error("cannot draw the flame graph: {0}")]
    Flame(#[source] std::io::Error),
    /// The scratch directory for the RocksDB check could not be made.
    #[error("the RocksDB coverage check could not create a scratch directory: {0}")]
    ScratchDir(#[source] std::io::Error),
}

impl ProbeError {
    fn jemalloc(name: &'static str, source: tikv_jemalloc_ctl::Error) -> Self {
        ProbeError::Jemalloc { name, source }
    }
}

/// One snapshot of the process's memory and OS resources.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Sample {
    /// `CLOCK_MONOTONIC` at the time of the sample, in nanoseconds.
    pub monotonic_ns: u64,
    /// jemalloc's counters; absent when jemalloc's controls cannot be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jemalloc: Option<JemallocStats>,
    /// OS resources from `/proc/self`.
    pub process: ProcessStats,
    /// What RocksDB reports for the live DBs and caches it was given, when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rocksdb: Option<RocksDbMemory>,
    /// Heap bytes the measuring code itself holds (the harness's per-cycle records), excluded
    /// from the net byte signals; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bookkeeping_bytes: Option<i64>,
    /// Resident bytes of the allocation record's own tables (mapped outside jemalloc; they grow
    /// with the live allocations recorded), excluded from the anonymous memory outside
    /// jemalloc; absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_resident_bytes: Option<u64>,
    /// Bytes of the live large blocks the record holds that were never written: counted in
    /// jemalloc's resident bytes, not yet in the process's RSS (a memtable's arena block filled a
    /// little each cycle). Absent when not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untouched_bytes: Option<u64>,
}

impl Sample {
    /// jemalloc's allocated bytes, if readable.
    pub fn allocated_bytes(&self) -> Option<u64> {
        self.jemalloc.map(|j| j.allocated_bytes)
    }

    /// Bytes explained without being a leak: what RocksDB accounts for (memtables, table
    /// readers, block caches of the live DBs and caches it was asked about), the measuring
    /// code's own bookkeeping, freed objects parked in threads' allocator caches, and the
    /// allocator's own internal allocations (its thread caches, the heap profiler's records).
    pub fn explained_bytes(&self) -> i64 {
        self.rocksdb.map_or(0, |r| r.explained_bytes()) as i64
            + self.bookkeeping_bytes.unwrap_or(0)
            + self.jemalloc.map_or(0, |j| j.tcache_bytes + j.internal_bytes) as i64
    }

    /// Allocated bytes minus [`Sample::explained_bytes`]. Equals allocated bytes when neither
    /// RocksDB nor the bookkeeping was measured.
    pub fn unexplained_bytes(&self) -> Option<i64> {
        Some(self.allocated_bytes()? as i64 - self.explained_bytes())
    }

    /// Whether more files or maps are open under the watched directory than in `earlier` (a
    /// close still releasing them, or a leak).
    pub(crate) fn holds_more_files_than(&self, earlier: &Sample) -> bool {
        let above = |a: Option<u64>, b: Option<u64>| a.zip(b).is_some_and(|(a, b)| a > b);
        above(self.process.open_fds_under_dir, earlier.process.open_fds_under_dir)
            || above(self.process.maps_under_dir, earlier.process.maps_under_dir)
    }

    /// Whether part of the bytes is explained (RocksDB's accounting, the bookkeeping or the
    /// thread caches were read).
    pub(crate) fn has_explanation(&self) -> bool {
        self.rocksdb.is_some() || self.bookkeeping_bytes.is_some() || self.jemalloc.is_some()
    }
}

/// RocksDB's own memory accounting by type, for a set of live DBs and caches (a cache shared by
/// many column families or DBs counts once).
///
/// Not all of a cache's usage is memory a live store explains. A write buffer manager that charges
/// memtables to a cache inserts dummy entries worth the memtables' size: the memtables are
/// memory, the reservation only accounting, so it is counted once (through the memtables of the
/// DBs asked about) and a never-closed DB's memtable, charged to the same cache, stays
/// unexplained. Usage above a cache's capacity is entries pinned beyond what the cache was sized
/// for (by leaked iterators, for instance) and is not explained either.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RocksDbMemory {
    /// Memory of all memtables, flushed-pending included.
    pub mem_table_total_bytes: u64,
    /// Memory of memtables not yet flushed.
    pub mem_table_unflushed_bytes: u64,
    /// Memory of table readers (index and filter blocks not in the block cache).
    pub table_readers_total_bytes: u64,
    /// Usage of the block caches.
    pub cache_total_bytes: u64,
    /// Part of `cache_total_bytes` that write buffer managers reserved for memtables (not memory
    /// of its own; the memtables are counted as memtables).
    #[serde(default)]
    pub cache_reserved_bytes: u64,
    /// Part of `cache_total_bytes`, net of reservations, above the caches' capacities.
    #[serde(default)]
    pub cache_over_capacity_bytes: u64,
    /// The live SST files of the DBs asked about (every column family): the store's data, which
    /// may legitimately grow.
    #[serde(default)]
    pub live_sst_files: u64,
    /// Their bytes on disk.
    #[serde(default)]
    pub live_sst_bytes: u64,
    /// The block caches' capacities: the bound their usage is explained by. A capacity that
    /// rises bounds nothing.
    #[serde(default)]
    pub cache_capacity_bytes: u64,
}

/// What a cache entry may take beyond its charge, as a fraction of the charge: RocksDB charges
/// the sizes it asked for (librocksdb-sys builds it without `ROCKSDB_MALLOC_USABLE_SIZE`), while
/// jemalloc counts the size class each allocation was rounded up to; above 128 bytes, classes are
/// a quarter of a power of two apart, so a block takes less than 1.25 times its charge. Found on a
/// kv store whose 8 MiB cache was still filling (blocks of flushed and compacted files): its
/// unexplained bytes grew by 5% to 25% of the cache's growth, and not at all with the cache off.
pub const CACHE_ROUNDING: f64 = 0.25;

/// What a live SST file of a DB kept open may take beyond what RocksDB accounts for: its
/// metadata in the current version, its table-cache entry and file reader. Measured 3.5 KB a file
/// on the clean catalog's growing-db (16-byte keys, files of 110 KB), bounded at 8 KiB: a store
/// whose data grows adds files, and memory with them, without leaking.
pub(crate) const LIVE_FILE_BYTES: f64 = 8192.0;

/// What table readers (index and filter blocks kept outside the block cache) may take per byte
/// of live SST data: measured 2.8% on growing-db without filters; a bloom filter of 10 bits per
/// key adds 1.25 bytes per entry (4% of 30-byte entries). Bounded at an eighth.
pub(crate) const TABLE_READER_SHARE: f64 = 0.125;

impl RocksDbMemory {
    /// Bytes RocksDB accounts for: memtables, table readers and caches (less the caches'
    /// reservations and what they hold above capacity), plus the most the cached entries can take
    /// beyond their charges (`RocksDbMemory::cache_rounding_bytes`).
    pub(crate) fn explained_bytes(&self) -> u64 {
        self.unbounded_bytes() + self.cache_bytes() + self.cache_rounding_bytes()
    }

    /// The caches' usage within capacity, net of reservations: bounded by the capacities, so
    /// never a leak by itself, however it grows while the caches fill.
    pub fn cache_bytes(&self) -> u64 {
        self.cache_total_bytes.saturating_sub(self.cache_reserved_bytes + self.cache_over_capacity_bytes)
    }

    /// The allocator's rounding of the cached entries, at its bound ([`CACHE_ROUNDING`]): while
    /// a cache fills, memory grows by between 1 and 1.25 times its usage, and the unexplained
    /// bytes are judged against the most it can be (so up to a quarter of a filling cache's growth
    /// could hide a leak; none once it is full).
    pub(crate) fn cache_rounding_bytes(&self) -> u64 {
        (self.cache_bytes() as f64 * CACHE_ROUNDING) as u64
    }

    /// What RocksDB accounts for that nothing bounds: memtables and table readers. It must level
    /// off (memtables pinned by a leaked iterator are RocksDB's memory, and grow every cycle).
    pub fn unbounded_bytes(&self) -> u64 {
        self.mem_table_total_bytes + self.table_readers_total_bytes
    }
}

/// A sample taken after settling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settled {
    /// The last sample taken.
    pub(crate) sample: Sample,
    /// Whether it agreed with the one before it (false: the timeout passed first).
    pub(crate) settled: bool,
}

fn agree(a: &Sample, b: &Sample, bound: u64) -> bool {
    let alloc = match (a.allocated_bytes(), b.allocated_bytes()) {
        (Some(x), Some(y)) => x.abs_diff(y) <= bound,
        (None, None) => true,
        _ => false,
    };
    alloc
        && a.process.open_fds_under_dir == b.process.open_fds_under_dir
        && a.process.maps_under_dir == b.process.maps_under_dir
        && a.process.threads == b.process.threads
}

/// Takes [`Sample`]s. Cheap to clone; configure once, sample many times.
///
/// ```
/// let probe = leakcheck::Probe::new().purge(true);
/// let sample = probe.sample();
/// assert!(sample.process.threads.is_some());
/// ```
#[derive(Debug, Clone, Default)]
pub struct Probe {
    dir: Option<PathBuf>,
    purge: bool,
}

impl Probe {
    /// A probe that reads without purging and watches no directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also counts file descriptors and memory mappings under `dir` (a store's data directory).
    ///
    /// # Errors
    /// When `dir` cannot be resolved to an absolute path (it must exist).
    pub fn watch_dir(mut self, dir: impl AsRef<Path>) -> Result<Self, ProbeError> {
        self.dir = Some(process::canonical_dir(dir.as_ref())?);
        Ok(self)
    }

    /// Before each sample, flush this thread's cache and purge every jemalloc arena, so samples
    /// are comparable. Costs more (a purge returns pages to the OS).
    pub fn purge(mut self, purge: bool) -> Self {
        self.purge = purge;
        self
    }

    /// Takes a snapshot. Never fails: what cannot be read is absent.
    pub fn sample(&self) -> Sample {
        let jemalloc = jemalloc::read(self.purge).ok();
        // Read beside jemalloc's resident bytes it corrects: a block allocated in between would
        // be counted by one and not the other.
        let untouched_bytes = generations::untouched_bytes();
        let process = process::read(self.dir.as_deref());
        let record_resident_bytes = Some(generations::record_resident_bytes());
        Sample {
            monotonic_ns: monotonic_ns(),
            jemalloc,
            process,
            rocksdb: None,
            bookkeeping_bytes: None,
            record_resident_bytes,
            untouched_bytes,
        }
    }

    /// Samples (purging first, whatever [`Probe::purge`] says) until two consecutive samples
    /// agree: allocated bytes within [`Settle::agree_within_bytes`], and the same fds and maps
    /// under the watched directory and the same thread count. Returns the last sample and whether
    /// it settled (false: the timeout passed first).
    ///
    /// ```
    /// let (sample, settled) = leakcheck::Probe::new().settled_sample(leakcheck::Settle::SAMPLES);
    /// assert!(sample.allocated_bytes().is_some() || !settled);
    /// ```
    pub fn settled_sample(&self, policy: Settle) -> (Sample, bool) {
        let s = self.settle(policy, None);
        (s.sample, s.settled)
    }

    /// [`Probe::settled_sample`], and besides: while more files or maps are open under the
    /// watched directory than in `target` (a sample from before anything was opened), keep
    /// sampling up to [`Settle::pending_timeout`].
    pub(crate) fn settled_sample_towards(&self, policy: Settle, target: &Sample) -> Settled {
        self.settle(policy, Some(target))
    }

    pub(crate) fn settle(&self, policy: Settle, target: Option<&Sample>) -> Settled {
        let purging = Probe { dir: self.dir.clone(), purge: true };
        let start = Instant::now();
        let pending = |s: &Sample| target.is_some_and(|t| s.holds_more_files_than(t));
        let mut backoff = policy.initial_backoff;
        let mut prev = purging.sample();
        loop {
            std::thread::sleep(backoff);
            let next = purging.sample();
            let elapsed = start.elapsed();
            let agreed = agree(&prev, &next, policy.agree_within_bytes);
            if agreed && !(pending(&next) && elapsed < policy.pending_timeout) {
                return Settled { sample: next, settled: true };
            }
            if elapsed >= policy.timeout.max(if pending(&next) { policy.pending_timeout } else { Duration::ZERO }) {
                return Settled { sample: next, settled: false };
            }
            prev = next;
            backoff = (backoff * 2).min(policy.max_backoff);
        }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    crate::sys::monotonic_ns()
}
