//! The clean-store catalog: correct stores that differ from the reference store the way users'
//! stores do, each of which must come out **clean** (the verdict `Clean`, not "not a leak"). It is
//! the specificity twin of the planted-leak catalog ([`crate::mutants`]): a detector that cannot
//! say "clean" about a correct store is no CI gate.
//!
//! None of these stores was used to tune the detector's thresholds. Each runs under a fault plan
//! of its own, with the settings `leakcheck check` uses (its early look at 100 cycles, 200
//! cycles, going on while the memory verdict is inconclusive, up to 800). Process-wide signals
//! need one store per process: `leakcheck mutants` and the detection matrix spawn a process per
//! store and seed, each calling [`run_clean`].

mod async_close;
mod catalog;
mod cf_churn;
mod growing_reopened;
mod kept;
mod long_lived_db;
mod multi_threaded_cf;
mod read_only_beside_writer;
mod shared_cache_wbm;
mod turning_cache;

pub use async_close::*;
pub use catalog::*;
pub use cf_churn::*;
pub use growing_reopened::*;
pub use kept::*;
pub use long_lived_db::*;
pub use multi_threaded_cf::*;
pub use read_only_beside_writer::*;
pub use shared_cache_wbm::*;
pub use turning_cache::*;

// What the stores share (their files take it with `use super::*`): these imports, the error
// type and the helpers below.
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rocksdb::{Direction, IteratorMode, MultiThreaded, SingleThreaded};
use serde::{Deserialize, Serialize};

use crate::check_settings::{CHECK_CYCLES, CHECK_MAX_CYCLES, DEFAULT_CHECK_PLAN, EARLY_LOOK_CYCLES};
use crate::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::fault::{FaultAction, FaultPlan, InjectedPanic};
use leakcheck::harness::{CycleCtx, Harness, HarnessConfig, HarnessError, HarnessReport, Lifecycle};
use leakcheck::probe::RocksDbMemory;
use leakcheck::tracked::{
    TrackedBlockBasedOptions, TrackedCache, TrackedCfDescriptor, TrackedCheckpoint, TrackedDb, TrackedOptions,
    TrackedWriteBatch, TrackedWriteBufferManager, TrackedWriteOptions,
};
use leakcheck::{Ledger, Verdict};

/// An error of a catalog store: RocksDB's, or an injected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CleanStoreError(pub String);

impl fmt::Display for CleanStoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<rocksdb::Error> for CleanStoreError {
    fn from(e: rocksdb::Error) -> Self {
        CleanStoreError(e.to_string())
    }
}

type Result<T> = std::result::Result<T, CleanStoreError>;

/// An injected failure at `point`: an error, or a panic, as the plan says.
fn fault(ctx: &CycleCtx<'_>, point: &str) -> Result<()> {
    match ctx.faults.check(point) {
        None => Ok(()),
        Some(FaultAction::Error) => Err(CleanStoreError(format!("injected error at {point}"))),
        Some(FaultAction::Panic) => InjectedPanic::raise(point),
    }
}

/// A write that RocksDB itself rejects (`Sync writes has to enable WAL`) when the point fires.
fn write_options(ctx: &CycleCtx<'_>, point: &str) -> TrackedWriteOptions {
    let mut w = TrackedWriteOptions::new(ctx.ledger);
    if ctx.faults.check_error(point) {
        w.set_sync(true);
        w.disable_wal(true);
    }
    w
}

fn value(cycle: u64, i: u64, len: usize) -> Vec<u8> {
    let mut v = vec![(cycle as u8) ^ (i as u8); len];
    v[..8].copy_from_slice(&i.to_be_bytes());
    v
}

fn key(cycle: u64, i: u64) -> [u8; 16] {
    let mut k = [0; 16];
    k[..8].copy_from_slice(&cycle.to_be_bytes());
    k[8..].copy_from_slice(&i.to_be_bytes());
    k
}

/// Closes `db` whatever failed before; the first error wins.
fn close_after<T: rocksdb::ThreadMode>(db: TrackedDb<T>, first: Option<CleanStoreError>) -> Result<()> {
    let closed = db.close().into_result();
    match first {
        Some(e) => Err(e),
        None => Ok(closed?),
    }
}

/// Options that make RocksDB flush and compact within a cycle: small write buffers, small files,
/// an early L0 trigger.
fn busy_options(ledger: &Ledger) -> TrackedOptions {
    let mut opts = TrackedOptions::new(ledger);
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_write_buffer_size(64 << 10);
    opts.set_target_file_size_base(128 << 10);
    opts.set_max_bytes_for_level_base(512 << 10);
    opts.set_level_zero_file_num_compaction_trigger(2);
    opts.set_max_background_jobs(2);
    opts
}
