//! Open files and memory maps under a store's directory rise while a RocksDB DB is open there and
//! return to the baseline after it is dropped. Process-wide measurement: one test in this file.
#![cfg(feature = "rocksdb")]
// Raw rust-rocksdb on purpose: this test watches the OS, not the ledger.
#![allow(clippy::disallowed_types)]

use leakcheck::Probe;

#[test]
fn fds_and_maps_under_store_dir_follow_the_db_lifetime() {
    let dir = tempfile::tempdir().expect("tempdir");
    let probe = Probe::new().watch_dir(dir.path()).expect("watch dir");
    let baseline = probe.sample().process;
    assert_eq!(baseline.open_fds_under_dir, Some(0));
    assert_eq!(baseline.maps_under_dir, Some(0));

    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    // Reads through mmap, so an open SST file is also a mapping under the directory.
    opts.set_allow_mmap_reads(true);
    let db = rocksdb::DB::open(&opts, dir.path()).expect("open");
    for i in 0..1000u32 {
        db.put(i.to_be_bytes(), [7u8; 100]).expect("put");
    }
    db.flush().expect("flush");
    assert!(db.get(500u32.to_be_bytes()).expect("get").is_some());

    let open = probe.sample().process;
    eprintln!("baseline {baseline:?}\nopen {open:?}");
    let open_fds = open.open_fds_under_dir.expect("fds readable");
    let open_maps = open.maps_under_dir.expect("maps readable");
    assert!(open_fds >= 2, "expected LOCK, WAL, MANIFEST or SST open under the dir, saw {open_fds}");
    assert!(open_maps >= 1, "expected the flushed SST mapped under the dir, saw {open_maps}");

    drop(db);
    let closed = probe.sample().process;
    eprintln!("closed {closed:?}");
    assert_eq!(closed.open_fds_under_dir, baseline.open_fds_under_dir, "fds left open after drop");
    assert_eq!(closed.maps_under_dir, baseline.maps_under_dir, "maps left after drop");
}
