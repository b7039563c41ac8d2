//! A planted native leak of 1 KiB per cycle around a RocksDB open/write/close loop is flagged by
//! the bytes signal, at about the planted rate. Process-wide measurement: one test in this file.

mod common;

#[test]
fn a_1kib_per_cycle_malloc_leak_is_flagged() {
    let v = common::assert_flagged(200, 1024, 900.0..1300.0);
    assert_eq!(v.verdict, leakcheck::Verdict::Leak);
}
