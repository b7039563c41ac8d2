//! The allocator coverage check passes in the normal build: C malloc and RocksDB's C++ heap are
//! both visible to jemalloc's counters. Process-wide measurement: one test in this file.

#[test]
fn native_allocations_are_visible_to_jemalloc() {
    let malloc = leakcheck::probe::check_malloc_coverage().unwrap_or_else(|e| panic!("{e}"));
    assert!(malloc.allocated_delta_bytes as u64 >= malloc.native_bytes * 9 / 10, "{malloc:?}");
    #[cfg(feature = "rocksdb")]
    {
        let rocks = leakcheck::probe::check_rocksdb_coverage().unwrap_or_else(|e| panic!("{e}"));
        assert!(rocks.allocated_delta_bytes >= 8_000_000, "{rocks:?}");
        eprintln!(
            "RocksDB memtable: {} bytes written, allocated +{} bytes",
            rocks.native_bytes, rocks.allocated_delta_bytes
        );
    }
}
