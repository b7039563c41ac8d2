//! A RocksDB open/write/close loop with nothing planted is not flagged by any signal.
//! Process-wide measurement: one test in this file.

mod common;

#[test]
fn a_clean_rocksdb_loop_is_clean() {
    let v = common::run(300, 0, &Default::default());
    common::print(&v);
    assert!(v.leaking_signals().is_empty(), "{:?}", v.leaking_signals());
    assert_eq!(v.signal(leakcheck::Signal::AllocatedBytes).map(|s| s.verdict), Some(leakcheck::Verdict::Clean));
    let back = v.baseline_return.as_ref().expect("baseline return");
    assert_eq!(back.verdict, leakcheck::Verdict::Clean, "{back:?}");
    assert_eq!((back.fds_under_dir_delta, back.maps_under_dir_delta), (Some(0), Some(0)));
}
