//! A planted native leak of 1 KiB per cycle around a RocksDB open/write/close loop is flagged by
//! the bytes signal, at about the planted rate. Process-wide measurement: one test in this file.
#![cfg(feature = "rocksdb")]

mod common;

#[test]
fn a_1kib_per_cycle_malloc_leak_is_flagged() {
    let v = common::run(200, 1024, &Default::default());
    common::print(&v);
    let alloc = v.signal("allocated_bytes").expect("allocated signal");
    assert_eq!(alloc.verdict, leakcheck::Verdict::Leak);
    let slope = alloc.slope_per_cycle.expect("slope");
    assert!((900.0..1300.0).contains(&slope), "slope {slope} B/cycle for a 1024 B/cycle leak");
    assert_eq!(v.verdict, leakcheck::Verdict::Leak);
}
