//! A planted native leak of 256 B per cycle around a RocksDB open/write/close loop is flagged by
//! the bytes signal. Process-wide measurement: one test in this file.

mod common;

#[test]
fn a_256b_per_cycle_malloc_leak_is_flagged() {
    common::assert_flagged(300, 256, 200.0..400.0);
}
