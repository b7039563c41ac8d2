//! The suppression file shipped for the locked rust-rocksdb (`rust-rocksdb-0.25.toml`) accepts
//! exactly the release's two known leaks: each path that reaches one is clean with the file, the
//! suppression that names it used at about 8 bytes per call (at most), the other listed unused. Without
//! the file both paths leak (the sweep's own test, `sweep.rs`). One check per test: each runs in
//! a process of its own under nextest (process-wide byte counters).

use std::path::Path;

use leakcheck::Verdict;
use leakcheck_sweep::{all_paths, run_path_suppressed};

fn known_leak_is_suppressed(name: &str, function: &str) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("rust-rocksdb-0.25.toml");
    let path = all_paths().find(|p| p.name == name).expect("the path is in the sweep's list");
    let outcome = run_path_suppressed(path, Some(&file)).expect("the path runs");
    assert_eq!(outcome.verdict, Verdict::Clean, "{name} with its suppression: {outcome:?}");
    let suppressions = outcome.suppressions.as_slice();
    let used = suppressions.iter().find(|u| u.applies()).expect("one suppression applies");
    assert!(used.suppression.describe().contains(function), "{used:?}");
    // What its stacks hold: 8 B a call, less where the size is common enough to be sampled (some
    // blocks held without a stack; docs/generations.md).
    let per_call = used.per_cycle / f64::from(path.calls_per_cycle);
    assert!((4.0..=8.5).contains(&per_call), "about 8 B per call: {per_call}");
    assert_eq!(suppressions.iter().filter(|u| u.unused()).count(), 1, "the other is unused: {suppressions:?}");
}

#[test]
fn a_failed_list_cf_is_suppressed() {
    known_leak_is_suppressed("list-cf-missing-fails", "rocksdb_list_column_families");
}

#[test]
fn key_may_exist_of_an_absent_key_is_suppressed() {
    known_leak_is_suppressed("key-may-exist-value-absent", "rocksdb_key_may_exist_cf");
}
