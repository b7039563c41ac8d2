//! A RocksDB open/write/close loop with nothing planted is not flagged by any signal.
//! Process-wide measurement: one test in this file.
#![cfg(feature = "rocksdb")]

mod common;

#[test]
fn a_clean_rocksdb_loop_is_clean() {
    let v = common::run(300, 0, &Default::default());
    common::print(&v);
    assert_eq!(v.leaking_signals(), Vec::<&str>::new());
    assert_eq!(v.signal("allocated_bytes").map(|s| s.verdict), Some(leakcheck::Verdict::Clean));
}
