//! Memory and OS-resource probes: what a leak looks like from outside the code that leaked.
//!
//! A [`Sample`] is a snapshot of jemalloc's counters (which, with the malloc override, include
//! RocksDB's C++ heap), the process's OS resources from `/proc/self`, and a monotonic timestamp.
//! Process-wide signals are only trustworthy when nothing else in the process is working: keep
//! tests that read them in a process of their own.

mod coverage;
pub mod jemalloc;
pub mod process;

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use coverage::{check_malloc_coverage, CoverageError, MallocCoverage};
#[cfg(feature = "rocksdb")]
pub use coverage::{check_rocksdb_coverage, RocksDbCoverage};
pub use jemalloc::JemallocStats;
pub use process::ProcessStats;

/// Why a probe could not read something.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A jemalloc control (`mallctl`) failed.
    #[error("jemalloc mallctl `{name}` failed: {message}")]
    Jemalloc {
        /// The mallctl name.
        name: &'static str,
        /// jemalloc's error, as it describes itself.
        message: String,
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
}

impl ProbeError {
    fn jemalloc(name: &'static str, source: tikv_jemalloc_ctl::Error) -> Self {
        ProbeError::Jemalloc { name, message: source.to_string() }
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

    /// The watched directory, canonical.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// Takes a snapshot. Never fails: what cannot be read is absent.
    pub fn sample(&self) -> Sample {
        let jemalloc = jemalloc::read(self.purge).ok();
        let process = process::read(self.dir.as_deref());
        Sample { monotonic_ns: monotonic_ns(), jemalloc, process }
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}
