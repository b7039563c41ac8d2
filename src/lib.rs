//! leakcheck proves that code built on RocksDB releases every native resource it creates.
//!
//! Three independent signals answer "did it leak?":
//!
//! - **handles**: an ownership [`Ledger`] of native handles, fed by the tracked wrappers in
//!   [`tracked`] (feature `rocksdb`). Exact: a leaked handle is reported at once with its kind,
//!   the line that created it and its owner path.
//! - **bytes**: jemalloc's counters ([`probe`]), which see RocksDB's C++ heap because jemalloc
//!   replaces `malloc` itself. Statistical: judged by a slope over cycles.
//! - **OS resources**: open files and memory maps under the store's directory, threads, RSS, from
//!   `/proc/self`. Exact after settling.
//!
//! # Example
//!
//! ```
//! use leakcheck::tracked::{SingleThreaded, TrackedCache, TrackedCfDescriptor, TrackedDb, TrackedOptions};
//! use leakcheck::{owner_scope, HandleKind, Ledger};
//!
//! let ledger = Ledger::new(); // one per test: tests can run in parallel
//! let dir = tempfile::tempdir()?;
//! {
//!     let _owner = owner_scope("task 0_1");
//!     let mut opts = TrackedOptions::new(&ledger);
//!     opts.create_if_missing(true);
//!     opts.create_missing_column_families(true);
//!     let offsets = TrackedCfDescriptor::new("offsets", TrackedOptions::new(&ledger));
//!     let db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&opts, dir.path(), [offsets])?;
//!     db.put(b"key", b"value")?;
//!
//!     // A cache nobody releases: the ledger sees it even though nothing refers to it.
//!     std::mem::forget(TrackedCache::new_lru(&ledger, 8 << 20));
//!
//!     db.close().into_result()?; // close errors cannot be dropped unseen
//! }
//! let report = ledger.report();
//! assert_eq!(report.retained_of(HandleKind::Cache), 1);
//! assert_eq!(report.retained[0].owner.as_deref(), Some("task 0_1"));
//! println!("{report}"); // kind, count, file:line, owner
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Process-wide signals (jemalloc, RSS, fds) are only trustworthy with one test per process: put
//! such tests in their own integration-test files. Ledger tests have no such limit.
//!
//! # Your own store
//!
//! Implement [`Lifecycle`] (open, work, close, and optionally an integrity check) and judge it
//! the way `leakcheck check` judges the reference store: [`check`] in `cargo test`,
//! [`runner::run`] from code, `leakcheck_cli::main` (crate `leakcheck-cli`) for a soak binary with
//! `check`, `soak` and `compare`. `examples/kv-service` in the repository does all three.

#![deny(missing_docs, missing_debug_implementations)]
#![deny(unreachable_pub)]
// `unsafe` lives in `sys` and in the allocation hooks' two files (probe::generations).
#![deny(unsafe_code)]

#[cfg(feature = "criterion")]
pub mod bench;
mod bookkeeping;
pub mod fault;
#[cfg(feature = "rocksdb")]
pub mod guide;
pub mod harness;
pub mod ledger;
pub mod probe;
pub mod report;
pub mod runner;
pub mod signal;
pub mod suppress;
#[allow(unsafe_code)]
mod sys;
#[cfg(feature = "rocksdb")]
pub mod tracked;
mod units;
pub mod verdict;
#[doc(hidden)]
pub mod workspace;

/// The README's examples, compiled by `cargo test --doc` so that the README stays true.
#[cfg(all(doctest, feature = "rocksdb"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeExamples;

pub use fault::fault;
pub use harness::{CycleCtx, Harness, HarnessConfig, HarnessReport, Integrity, Lifecycle, StoreInfo};
pub use leakcheck_macros::test;
pub use ledger::{
    current_owner, owner_scope, CloseResult, Depth, HandleKind, Hold, KindName, LeakError, LeakGuard, LeakReport,
    Ledger, Settle, Token,
};
pub use probe::{Probe, Sample};
pub use runner::attribute::test_ledger;
pub use runner::check;
pub use signal::{Class, Signal, SignalId};
pub use suppress::{Suppression, Suppressions};
/// jemalloc, as a test binary's global allocator: `#[global_allocator] static ALLOC:
/// leakcheck::Jemalloc = leakcheck::Jemalloc;` (what `#[leakcheck::test]` and the byte signals need).
pub use tikv_jemallocator::Jemalloc;
pub use verdict::{SignalVerdict, Verdict};
