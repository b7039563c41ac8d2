//! Tracked wrappers for every RocksDB native handle (feature `rocksdb`).
//!
//! Each wrapper owns the rust-rocksdb object and a ledger [`Token`]: it registers on creation at
//! the caller's line (`#[track_caller]`), deregisters when the native object is really released,
//! and `Deref`s to the rust-rocksdb type so existing code changes little. Methods that create
//! further native handles (iterators, snapshots, column families, batches) or that make one object
//! keep another alive (a block cache set on options, options used to open a DB) are shadowed by
//! tracked versions of the same name.
//!
//! Fields are declared in drop order: the native object first, then the holds it had on others,
//! then its own token, so the ledger records a release only after the native release happened.
//!
//! Calling the untracked rust-rocksdb constructors directly bypasses the ledger; `clippy.toml` at
//! the repository root shows a configuration that forbids that outside a wrapper module.

// This is the wrapper module: the one place that may name untracked rust-rocksdb types.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod batch;
mod db;
mod iter;
mod optimistic;
mod options;
mod tools;
mod txn;

pub use batch::TrackedWriteBatch;
pub use db::{TrackedBoundCf, TrackedCfDescriptor, TrackedDb};
pub use iter::{TrackedIterator, TrackedRawIterator, TrackedSnapshot};
pub use optimistic::{TrackedOptimisticTransactionDb, TrackedOptimisticTransactionOptions};
pub use options::{
    TrackedBlockBasedOptions, TrackedCache, TrackedEnv, TrackedOptions, TrackedReadOptions, TrackedWriteBufferManager,
    TrackedWriteOptions,
};
pub use tools::{TrackedCheckpoint, TrackedSstFileWriter};
pub use txn::{
    TrackedBackupEngine, TrackedBackupEngineOptions, TrackedRestoreOptions, TrackedTransaction, TrackedTransactionDb,
    TrackedTransactionDbCheckpoint, TrackedTransactionDbOptions, TrackedTransactionOptions,
};

/// The rust-rocksdb items the wrappers' signatures use, so users need not name the crate. They are
/// rust-rocksdb's own (documented there), re-exported as they are.
#[doc(no_inline)]
pub use rocksdb::{Direction, IteratorMode, MultiThreaded, SingleThreaded};

#[allow(unused_imports)]
use crate::ledger::Token;

/// Implements `Deref`/`DerefMut` to the wrapped rust-rocksdb object (field `inner`) and
/// `token()`.
macro_rules! deref_and_token {
    ($ty:ident $(<$($lt:lifetime),* $(,)? $($gen:ident : $bound:path),*>)?, $target:ty) => {
        impl $(<$($lt,)* $($gen: $bound),*>)? std::ops::Deref for $ty $(<$($lt,)* $($gen),*>)? {
            type Target = $target;
            fn deref(&self) -> &Self::Target {
                &self.inner
            }
        }
        impl $(<$($lt,)* $($gen: $bound),*>)? std::ops::DerefMut for $ty $(<$($lt,)* $($gen),*>)? {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.inner
            }
        }
        impl $(<$($lt,)* $($gen: $bound),*>)? std::fmt::Debug for $ty $(<$($lt,)* $($gen),*>)? {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty)).field("token", &self.token).finish_non_exhaustive()
            }
        }
        impl $(<$($lt,)* $($gen: $bound),*>)? $ty $(<$($lt,)* $($gen),*>)? {
            /// This handle's ledger token (its id, kind and ledger; declare it shared with
            /// [`crate::Ledger::declare_shared`]).
            pub fn token(&self) -> &crate::ledger::Token {
                &self.token
            }
        }
    };
}
pub(crate) use deref_and_token;
