//! The detector's own test, kept out of leakcheck's core: the reference store (a segmented store
//! modelled on Kafka Streams' window stores, with its planted-leak variants), the two catalogs
//! (planted leaks that must be caught, correct stores unlike ours that must come out clean), the
//! sensitivity runs. The `leakcheck` binary (crate `leakcheck-cli`, `cli/`) runs them all from the
//! command line.
//!
//! Process-wide signals stay clean because every catalog entry runs in a process of its own:
//! `leakcheck mutant NAME` runs one planted leak, `leakcheck clean-store NAME` one clean store
//! ([`catalogs::variant_in_child`], [`catalogs::clean_store_in_child`]); `leakcheck mutants` and
//! `cli/tests/detection_matrix.rs` spawn them for the whole catalog.

// The planted leaks are deliberate `unsafe` (C allocations and native objects never freed); they
// live in `planted` and `reference` only.
#![deny(unsafe_code)]
#![deny(missing_debug_implementations)]

use std::sync::{Mutex, MutexGuard};

/// `Debug` that names the type and nothing more, for stores whose fields are open handles
/// (already in the ledger).
macro_rules! opaque_debug {
    ($($ty:ident),* $(,)?) => {
        $(impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty)).finish_non_exhaustive()
            }
        })*
    };
}
pub(crate) use opaque_debug;

pub mod catalogs;
pub mod check_settings;
pub mod clean;
pub mod fresh;
pub mod mutants;
#[allow(unsafe_code)]
pub mod planted;
pub mod power;
pub mod recorded;
#[allow(unsafe_code)]
pub mod reference;
pub mod sensitivity;
pub mod simulate;

/// Creates a store's directory, or says which one could not be made (the I/O error kept as the
/// source, under the directory's name).
pub(crate) fn create_store_dir(dir: &std::path::Path) -> Result<(), leakcheck::harness::HarnessError> {
    std::fs::create_dir_all(dir).map_err(|e| {
        let named = std::io::Error::new(e.kind(), format!("{}: {e}", dir.display()));
        leakcheck::harness::HarnessError::Setup(Box::new(named))
    })
}

/// Locks a mutex, recovering from poisoning (a catalog run must report, not cascade panics).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
