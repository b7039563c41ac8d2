//! jemalloc's process-wide statistics.
//!
//! With rocksdb's `jemalloc` feature, jemalloc replaces `malloc` for the whole process, so these
//! counters see RocksDB's C++ heap as well as Rust's. Stats are cached by jemalloc until the epoch
//! advances; every read here advances it first.

use std::ffi::CStr;

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

use tikv_jemalloc_ctl::{epoch, stats, Access, AsName, Mib};

use super::ProbeError;

/// `arena.<MALLCTL_ARENAS_ALL>.purge`: 4096 is jemalloc.h's `MALLCTL_ARENAS_ALL`, the pseudo-index
/// that addresses every arena at once.
const PURGE_ALL_ARENAS: &CStr = c"arena.4096.purge";

/// jemalloc's process-wide counters, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JemallocStats {
    /// Bytes allocated by the application (`stats.allocated`): the leak signal.
    pub allocated_bytes: u64,
    /// Bytes in active pages (`stats.active`), a multiple of the page size.
    pub active_bytes: u64,
    /// Bytes in physically resident data pages (`stats.resident`).
    pub resident_bytes: u64,
    /// Bytes in active extents mapped by the allocator (`stats.mapped`).
    pub mapped_bytes: u64,
    /// Bytes retained by the allocator: virtual memory kept for reuse, not returned to the OS
    /// (`stats.retained`).
    pub retained_bytes: u64,
    /// Bytes of allocator metadata (`stats.metadata`).
    pub metadata_bytes: u64,
    /// Whether every arena was purged and this thread's cache flushed before reading.
    pub purged: bool,
    /// Freed objects held in the thread caches of every thread (`stats.arenas.<all>.tcache_bytes`).
    /// `stats.allocated` still counts them: a cache is filled from the arena in batches and
    /// returns to it in batches, so a RocksDB flush or compaction thread that freed 90 KB leaves
    /// them "allocated" until its cache overflows or the thread exits. Only the sampling thread's
    /// cache can be flushed; the rest is subtracted as explained.
    #[serde(default)]
    pub tcache_bytes: u64,
    /// The allocator's own allocations among `stats.allocated` (`stats.arenas.<all>.internal`):
    /// threads' cache structures and, while the heap profiler samples, its records of every
    /// sampled stack and allocation. jemalloc counts them as allocated bytes too; they are
    /// subtracted as explained.
    #[serde(default)]
    pub internal_bytes: u64,
}

/// Reads jemalloc's counters after advancing the epoch. With `purge`, first flushes the calling
/// thread's cache and purges all arenas, so that samples taken at different times are comparable
/// (freed memory sitting in caches or dirty pages no longer depends on timing).
pub(crate) fn read(purge: bool) -> Result<JemallocStats, ProbeError> {
    if purge {
        purge_all()?;
    }
    let m = mibs()?;
    m.epoch.advance().map_err(|e| ProbeError::jemalloc("epoch", e))?;
    let read = |name: &'static str, r: tikv_jemalloc_ctl::Result<usize>| {
        r.map(|v| v as u64).map_err(|e| ProbeError::jemalloc(name, e))
    };
    Ok(JemallocStats {
        allocated_bytes: read("stats.allocated", m.allocated.read())?,
        active_bytes: read("stats.active", m.active.read())?,
        resident_bytes: read("stats.resident", m.resident.read())?,
        mapped_bytes: read("stats.mapped", m.mapped.read())?,
        retained_bytes: read("stats.retained", m.retained.read())?,
        metadata_bytes: read("stats.metadata", m.metadata.read())?,
        purged: purge,
        tcache_bytes: read("stats.arenas.<all>.tcache_bytes", m.tcache.read())?,
        internal_bytes: read("stats.arenas.<all>.internal", m.internal.read())?,
    })
}

/// The counters read at every sample, looked up by name once (jemalloc's MIBs).
#[derive(Clone, Copy)]
struct Mibs {
    epoch: tikv_jemalloc_ctl::epoch_mib,
    allocated: stats::allocated_mib,
    active: stats::active_mib,
    resident: stats::resident_mib,
    mapped: stats::mapped_mib,
    retained: stats::retained_mib,
    metadata: stats::metadata_mib,
    /// `stats.arenas.<MALLCTL_ARENAS_ALL>.tcache_bytes`: freed objects in every thread's cache.
    tcache: Mib<[usize; 4]>,
    /// `stats.arenas.<MALLCTL_ARENAS_ALL>.internal`: the allocator's internal allocations.
    internal: Mib<[usize; 4]>,
}

fn mibs() -> Result<Mibs, ProbeError> {
    static MIBS: OnceLock<Result<Mibs, (&'static str, tikv_jemalloc_ctl::Error)>> = OnceLock::new();
    let look_up = || -> Result<Mibs, (&'static str, tikv_jemalloc_ctl::Error)> {
        fn named<T>(
            name: &'static str,
            r: tikv_jemalloc_ctl::Result<T>,
        ) -> Result<T, (&'static str, tikv_jemalloc_ctl::Error)> {
            r.map_err(|e| (name, e))
        }
        Ok(Mibs {
            epoch: named("epoch", tikv_jemalloc_ctl::epoch::mib())?,
            allocated: named("stats.allocated", stats::allocated::mib())?,
            active: named("stats.active", stats::active::mib())?,
            resident: named("stats.resident", stats::resident::mib())?,
            mapped: named("stats.mapped", stats::mapped::mib())?,
            retained: named("stats.retained", stats::retained::mib())?,
            metadata: named("stats.metadata", stats::metadata::mib())?,
            tcache: named("stats.arenas.<all>.tcache_bytes", b"stats.arenas.4096.tcache_bytes\0".name().mib())?,
            internal: named("stats.arenas.<all>.internal", b"stats.arenas.4096.internal\0".name().mib())?,
        })
    };
    (*MIBS.get_or_init(look_up)).map_err(|(name, e)| ProbeError::jemalloc(name, e))
}

/// Reads only `stats.allocated` (after advancing the epoch): the cheapest trend signal.
pub fn allocated_bytes() -> Result<u64, ProbeError> {
    epoch::advance().map_err(|e| ProbeError::jemalloc("epoch", e))?;
    stats::allocated::read().map(|v| v as u64).map_err(|e| ProbeError::jemalloc("stats.allocated", e))
}

/// Flushes the calling thread's cache, then purges the dirty and muzzy pages of every arena.
pub fn purge_all() -> Result<(), ProbeError> {
    // `thread.tcache.flush` fails with EFAULT when the thread cache is disabled; that is not an
    // error for our purpose (there is nothing to flush).
    match void_ctl(c"thread.tcache.flush") {
        Ok(()) | Err(libc::EFAULT) => {}
        Err(code) => return Err(ProbeError::Mallctl { name: "thread.tcache.flush", code }),
    }
    void_ctl(PURGE_ALL_ARENAS).map_err(|code| ProbeError::Mallctl { name: "arena.<all>.purge", code })
}

fn void_ctl(name: &CStr) -> Result<(), i32> {
    crate::sys::mallctl_void(name)
}

/// jemalloc's counters of bytes the calling thread has allocated and deallocated so far. Reading
/// them is two loads. Used to measure what a block of code on this thread allocates, or retains
/// (allocated minus deallocated), without any other thread's activity.
pub(crate) struct ThreadCounters {
    allocated: tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
    deallocated: tikv_jemalloc_ctl::thread::ThreadLocal<u64>,
}

impl std::fmt::Debug for ThreadCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadCounters").field("allocated", &self.allocated()).field("net", &self.net()).finish()
    }
}

impl ThreadCounters {
    /// The calling thread's counters. The value must stay on this thread (it is not `Send`).
    ///
    /// # Errors
    /// When jemalloc's per-thread statistics are unavailable.
    pub(crate) fn current() -> Result<Self, ProbeError> {
        use tikv_jemalloc_ctl::thread::{allocatedp, deallocatedp};
        Ok(ThreadCounters {
            allocated: allocatedp::read().map_err(|e| ProbeError::jemalloc("thread.allocatedp", e))?,
            deallocated: deallocatedp::read().map_err(|e| ProbeError::jemalloc("thread.deallocatedp", e))?,
        })
    }

    /// Bytes allocated by this thread since it started.
    pub(crate) fn allocated(&self) -> u64 {
        self.allocated.get()
    }

    /// Bytes deallocated by this thread since it started.
    pub(crate) fn deallocated(&self) -> u64 {
        self.deallocated.get()
    }

    /// Allocated minus deallocated: the thread's net contribution to the heap.
    pub(crate) fn net(&self) -> i64 {
        self.allocated() as i64 - self.deallocated() as i64
    }
}
