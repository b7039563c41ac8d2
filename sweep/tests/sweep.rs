//! `rocksdb-sweep` on the locked rust-rocksdb: every path of the binding comes out clean (or as a
//! known, written-up finding), each in a process of its own; and the sweep can fail: planted
//! leaks of an options object and of 16 bytes per call come out as leaks, at their size, with
//! exit 1.

use std::process::Command;

use leakcheck::Verdict;
use leakcheck_sweep::{all_paths, PathOutcome};

fn sweep(args: &[&str]) -> (i32, Vec<PathOutcome>) {
    let out = Command::new(env!("CARGO_BIN_EXE_rocksdb-sweep"))
        .arg("--json")
        .args(args)
        .output()
        .expect("spawn rocksdb-sweep");
    let code = out.status.code().unwrap_or(-1);
    let outcomes = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("exit {code}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (code, outcomes)
}

#[test]
fn every_path_of_the_locked_binding_is_clean_or_a_known_finding() {
    let (code, outcomes) = sweep(&[]);
    print!("{}", leakcheck_sweep::table(&outcomes));
    assert_eq!(outcomes.len(), all_paths().count());
    for o in &outcomes {
        assert_eq!(o.failed_cycles, 0, "{}: its calls failed: {:?}", o.path, o.first_error);
        assert!(o.verdict == Verdict::Clean || o.known.is_some(), "{}: {:?}", o.path, o);
    }
    assert_eq!(code, 0);
}

#[test]
fn planted_leaks_fail_the_sweep_at_their_size() {
    let (code, outcomes) = sweep(&["planted-forget-options", "planted-16-bytes"]);
    print!("{}", leakcheck_sweep::table(&outcomes));
    assert_eq!(code, 1, "a leak that is not a known finding fails the sweep");
    for o in &outcomes {
        assert_eq!(o.verdict, Verdict::Leak, "{o:?}");
        assert!(o.known.is_none() && o.fails());
    }
    let bytes =
        |name: &str| outcomes.iter().find(|o| o.path == name).and_then(|o| o.bytes_per_call).expect("bytes per call");
    // 16 bytes requested: jemalloc's 16-byte size class (the path's own list of what it kept
    // grows too, by well under a byte a call).
    let [b, lo, hi] = bytes("planted-16-bytes");
    assert!((15.0..=17.0).contains(&b) && lo <= 17.0 && hi >= 15.0, "{b} [{lo}, {hi}]");
    // An options object is kilobytes of C++ (its table factory, its maps).
    assert!(bytes("planted-forget-options")[1] > 1000.0, "{:?}", bytes("planted-forget-options"));
}
