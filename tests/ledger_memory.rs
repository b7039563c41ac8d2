//! The ledger's own memory is proportional to live handles: a million register/release pairs at
//! sites depth, with a steady 1000 handles live, leave jemalloc's allocated bytes where they were.
//! Process-wide measurement: one test in this file.

use leakcheck::{owner_scope, Depth, HandleKind, Ledger};

#[test]
fn a_million_register_release_pairs_leave_memory_flat() {
    let ledger = Ledger::with_depth(Depth::Sites);
    let _owner = owner_scope("task 0_0 / segment 1");
    let mut live: Vec<_> = (0..1000).map(|_| ledger.register(HandleKind::Iterator)).collect();
    // Warm up: let the entry table reach its steady size.
    for i in 0..100_000usize {
        live[i % 1000] = ledger.register(HandleKind::Iterator);
    }
    leakcheck::workspace::purge_all().expect("purge");
    let before = leakcheck::workspace::allocated_bytes().expect("allocated");
    for i in 0..1_000_000usize {
        live[i % 1000] = ledger.register(HandleKind::Iterator);
    }
    leakcheck::workspace::purge_all().expect("purge");
    let after = leakcheck::workspace::allocated_bytes().expect("allocated");
    let growth = after as i64 - before as i64;
    eprintln!("1,000,000 register/release pairs with 1000 live: allocated {before} -> {after} ({growth:+} B)");
    assert_eq!(ledger.live(HandleKind::Iterator), 1000);
    assert!(growth.abs() < 64 * 1024, "ledger memory moved by {growth} B over 1,000,000 pairs");

    drop(live);
    leakcheck::workspace::purge_all().expect("purge");
    let empty = leakcheck::workspace::allocated_bytes().expect("allocated");
    eprintln!("after releasing all: {empty} B");
    assert!(empty <= after, "releasing handles freed nothing ({after} -> {empty})");
}
