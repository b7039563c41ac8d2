//! A planted native leak of 256 B per cycle around a RocksDB open/write/close loop is flagged by
//! the bytes signal. Process-wide measurement: one test in this file.
#![cfg(feature = "rocksdb")]

mod common;

#[test]
fn a_256b_per_cycle_malloc_leak_is_flagged() {
    let v = common::run(300, 256, &Default::default());
    common::print(&v);
    let alloc = v.signal("allocated_bytes").expect("allocated signal");
    assert_eq!(alloc.verdict, leakcheck::Verdict::Leak);
    let slope = alloc.slope_per_cycle.expect("slope");
    assert!((200.0..400.0).contains(&slope), "slope {slope} B/cycle for a 256 B/cycle leak");
}
