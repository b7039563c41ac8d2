//! leakcheck proves that code built on RocksDB releases every native resource it creates.
//!
//! Three independent signals answer "did it leak?": an ownership ledger of native handles
//! (exact), process memory from jemalloc and `/proc` (statistical), and OS resources such as open
//! files and memory maps under the store's directory (exact after settling).
//!
//! This crate is being built issue by issue; today it holds the probes.

#![warn(missing_docs)]

pub mod ledger;
pub mod probe;
#[cfg(feature = "rocksdb")]
pub mod tracked;

pub use ledger::{
    current_owner, owner_scope, CloseResult, Depth, HandleKind, Hold, LeakError, LeakGuard, LeakReport,
    Ledger, Settle, Token,
};
pub use probe::{Probe, Sample};
