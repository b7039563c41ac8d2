//! The stacks walked from the cache of frame sizes are libgcc's, frame for frame: every stack the
//! hooks take while the reference store runs under faults (RocksDB's C++, its background
//! threads, Rust's heap), and Rust stacks deeper than the frames kept, on threads of their own,
//! are walked both ways and compared. Process-wide (the hooks and the cache are the process's):
//! one test here.

use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::fault::FaultPlan;
use leakcheck::workspace::generations;
use leakcheck::{Harness, HarnessConfig, Ledger};

/// A block of `size` allocated `depth` calls down (each a frame of its own).
#[inline(never)]
fn allocates_at_depth(depth: u32, size: usize) -> Vec<u8> {
    if depth == 0 {
        return std::hint::black_box(vec![1u8; size]);
    }
    let v = allocates_at_depth(depth - 1, size);
    std::hint::black_box(v)
}

#[test]
fn the_cache_walks_every_stack_as_libgcc_does() {
    let g = generations::install().expect("generations");
    g.verify_unwinds(true);

    // Rust stacks of many depths (past the 32 frames kept) on four threads, twice each so that
    // the cache learns them, a size watched.
    g.watch(4096);
    let threads: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for round in 0..3 {
                    for depth in 0..48 {
                        drop(allocates_at_depth(depth + t, 4000 + round));
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let (rust_fast, _, rust_mismatched) = g.unwinds();
    assert!(rust_fast > 100, "the cache walked {rust_fast} of the Rust stacks");
    assert_eq!(rust_mismatched, 0, "stacks the cache walked differently from libgcc");

    // The reference store under faults: the harness watches what its cycles leave behind and
    // samples the common sizes, as a check does.
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let mut store = ReferenceStore::new(ReferenceConfig::new(dir.path()), &ledger).expect("store");
    let cfg = HarnessConfig {
        cycles: 40,
        plan: FaultPlan::parse("close.marker=10%,close.flush=5%,work.write=5%,work.scan=5%,open.db=3%").expect("plan"),
        seed: 3,
        ..HarnessConfig::default()
    };
    Harness::new(cfg).run(&mut store, &ledger).expect("run");
    let (fast, slow, mismatched) = g.unwinds();
    eprintln!("stacks walked from the cache {fast}, by libgcc {slow}, differently {mismatched}");
    assert!(fast - rust_fast > 1000, "the cache walked {} of the store's stacks", fast - rust_fast);
    assert_eq!(mismatched, 0, "stacks the cache walked differently from libgcc");
}
