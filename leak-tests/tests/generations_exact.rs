//! Allocation generations are exact: over 200 cycles of the reference store under its fault
//! plan, plus every allocation API between cycles (malloc, calloc, posix_memalign,
//! aligned_alloc, realloc in place and moved, growing and shrinking, jemalloc's mallocx /
//! rallocx / xallocx / sdallocx, Rust's global allocator) and threads that start, allocate,
//! hand memory to other threads and exit, the live bytes summed over generations move with
//! jemalloc's allocated counter to the byte.
//!
//! For a hundred of the cycles every allocation's stack is taken too (the unwinder runs inside
//! the hook).
//!
//! jemalloc's counter is exact only without thread caches (a cache keeps freed blocks counted as
//! allocated), so this binary starts jemalloc with `tcache:false`. Process-wide: one test here.
#![allow(unsafe_code)]

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::fault::FaultPlan;
use leakcheck::workspace::generations::{self, Generations};
use leakcheck::{Harness, HarnessConfig, Ledger};

/// jemalloc's start-up options, read before `main`: no thread caches.
#[allow(non_upper_case_globals)]
#[no_mangle]
pub static malloc_conf: Option<&'static u8> = Some(&b"tcache:false\0"[0]);

/// Rust's heap through jemalloc's sized API (mallocx, rallocx, sdallocx).
#[global_allocator]
static A: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// `stats.allocated` less jemalloc's internal allocations, after advancing the epoch.
fn jemalloc_allocated() -> i64 {
    tikv_jemalloc_ctl::epoch::advance().expect("epoch");
    let allocated = tikv_jemalloc_ctl::stats::allocated::read().expect("stats.allocated") as i64;
    // SAFETY: a size_t statistic read by its name.
    let internal = unsafe { tikv_jemalloc_ctl::raw::read::<usize>(b"stats.arenas.4096.internal\0") }.expect("internal");
    allocated - internal as i64
}

/// The record's total minus jemalloc's counter, read until two reads in a row agree (RocksDB's
/// background threads may allocate between the two halves of one read).
fn drift(g: &Generations) -> i64 {
    let mut last = None;
    for _ in 0..200 {
        let d = g.total().bytes - jemalloc_allocated();
        if last == Some(d) {
            return d;
        }
        last = Some(d);
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the record and jemalloc's counter never read the same twice in a row: last drift {last:?}");
}

/// Counts of what the exerciser did, to show every path was taken.
#[derive(Default, Debug)]
struct Did {
    realloc_in_place: u64,
    realloc_moved: u64,
    xallocx_grew: u64,
    threads: u64,
}

/// A block from one of the C or jemalloc APIs, kept across cycles.
struct Block {
    p: *mut c_void,
    size: usize,
}

// SAFETY: a raw heap block, owned by whoever holds the Block.
unsafe impl Send for Block {}

struct Exerciser {
    kept: VecDeque<Block>,
    rust: VecDeque<Vec<u8>>,
    rng: u64,
    did: Did,
}

impl Exerciser {
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }

    fn exercise(&mut self) {
        use tikv_jemalloc_sys as je;
        for _ in 0..20 {
            let size = 1 + (self.next() % 70_000) as usize;
            // SAFETY: each call is a plain allocation of `size` bytes; results are kept and freed
            // below with a matching call.
            let p = unsafe {
                match self.next() % 6 {
                    0 => libc::malloc(size),
                    1 => libc::calloc(1 + size / 16, 16),
                    2 => {
                        let mut p = std::ptr::null_mut();
                        libc::posix_memalign(&mut p, 64 << (self.next() % 4), size);
                        p
                    }
                    3 => libc::aligned_alloc(4096, size.next_multiple_of(4096)),
                    4 => je::mallocx(size, je::MALLOCX_ALIGN(256)),
                    _ => libc::memalign(128, size),
                }
            };
            assert!(!p.is_null());
            self.kept.push_back(Block { p, size });
        }
        // Resize some kept blocks: realloc grows and shrinks (in place or moved), xallocx grows
        // in place only.
        for _ in 0..10 {
            let Some(mut b) = self.kept.pop_front() else { break };
            let new = match self.next() % 3 {
                0 => b.size * 2 + 1,
                1 => (b.size / 3).max(1),
                _ => b.size + 4096,
            };
            if self.next().is_multiple_of(4) {
                // SAFETY: `b.p` is live; xallocx resizes in place or not at all.
                let usable = unsafe { je::xallocx(b.p, new, 0, 0) };
                if usable >= new {
                    self.did.xallocx_grew += 1;
                    b.size = new;
                }
            } else {
                // SAFETY: `b.p` is live and came from a malloc-family call.
                let q = unsafe { libc::realloc(b.p, new) };
                assert!(!q.is_null());
                if q == b.p {
                    self.did.realloc_in_place += 1;
                } else {
                    self.did.realloc_moved += 1;
                }
                b = Block { p: q, size: new };
            }
            self.kept.push_back(b);
        }
        // Free the oldest, some with a sized free.
        while self.kept.len() > 200 {
            let b = self.kept.pop_front().expect("kept");
            // SAFETY: `b.p` is live; sdallocx needs a size within its usable size's class,
            // which `malloc_usable_size` gives.
            unsafe {
                if self.next().is_multiple_of(2) {
                    libc::free(b.p);
                } else {
                    let usable = je::malloc_usable_size(b.p);
                    je::sdallocx(b.p, usable, 0);
                }
            }
        }
        // Rust's heap: vectors that grow by realloc, kept across cycles.
        let mut v = Vec::with_capacity(1);
        for i in 0..(self.next() % 5000) {
            v.push(i as u8);
        }
        self.rust.push_back(v);
        if self.rust.len() > 30 {
            self.rust.pop_front();
        }
        // Thread churn: threads that allocate, free, leave blocks for this thread to free later,
        // and exit.
        let handed: Vec<Vec<Block>> = std::thread::scope(|s| {
            let threads: Vec<_> = (0..3)
                .map(|t| {
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for i in 0..50usize {
                            let mut local = vec![0u8; 100 + i * t];
                            local.extend_from_slice(&[1; 1000]);
                            // SAFETY: a plain allocation handed to the caller, which frees it.
                            let p = unsafe { libc::malloc(64 + i) };
                            if i % 2 == 0 {
                                out.push(Block { p, size: 64 + i });
                            } else {
                                // SAFETY: `p` came from malloc just above.
                                unsafe { libc::free(p) };
                            }
                        }
                        out
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().expect("thread")).collect()
        });
        self.did.threads += 3;
        self.kept.extend(handed.into_iter().flatten());
    }
}

impl Drop for Exerciser {
    fn drop(&mut self) {
        for b in self.kept.drain(..) {
            // SAFETY: every kept block is live and came from a malloc-family call.
            unsafe { libc::free(b.p) };
        }
    }
}

/// Cycles of the reference store: enough for every fault point to fire ten times or more (the
/// plan fires in about a third of them) and a hundred cycles with every stack taken in the middle.
const CYCLES: u64 = 200;

#[test]
fn generations_follow_jemallocs_counter_to_the_byte() {
    let g = generations::install().expect("generations");
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    // Both layouts (task 1 migrates), one live segment per task: the store's every path at a
    // third of the default's cost per cycle.
    let mut config = ReferenceConfig::new(dir.path());
    config.segments = 1;
    let mut store = ReferenceStore::new(config, &ledger).expect("store");
    let cfg = HarnessConfig {
        cycles: CYCLES,
        plan: FaultPlan::parse(
            "close.marker=10%,close.flush=5%,work.write=5%,work.scan=3%:panic,open.db=3%,open.options=2%,work.malformed=5%",
        )
        .expect("plan"),
        seed: 11,
        ..HarnessConfig::default()
    };
    let start = drift(g);
    let mut ex =
        Exerciser { kept: VecDeque::new(), rust: VecDeque::new(), rng: 0x9E37_79B9_7F4A_7C15, did: Did::default() };
    let checked = AtomicU64::new(0);
    let report = Harness::new(cfg)
        .run_observed(&mut store, &ledger, |_| {
            // A hundred cycles with the stack of every allocation taken: the unwinder inside the
            // hook must leave the record exact.
            match checked.load(Ordering::Relaxed) {
                50 => {
                    for size in std::iter::once(8).chain((16..1 << 16).step_by(16)).chain((16..40).map(|p| 1u64 << p)) {
                        g.focus(size);
                    }
                }
                150 => g.unwatch_all(),
                _ => {}
            }
            ex.exercise();
            let d = drift(g);
            assert_eq!(
                d,
                start,
                "record minus jemalloc's counter moved after {} checks",
                checked.load(Ordering::Relaxed)
            );
            checked.fetch_add(1, Ordering::Relaxed);
            std::ops::ControlFlow::Continue(())
        })
        .expect("run");
    assert_eq!(report.cycles_run, CYCLES);
    let faulted = report.records.iter().filter(|r| !r.faults_fired.is_empty()).count();
    assert!(faulted as u64 > CYCLES / 10, "the plan must fire: {faulted} faulted cycles");
    let did = std::mem::take(&mut ex.did);
    eprintln!("{did:?}");
    assert!(did.realloc_in_place > 0 && did.realloc_moved > 0 && did.xallocx_grew > 0, "{did:?}");
    drop(ex);
    drop(store);
    assert_eq!(drift(g), start, "after the store and the exerciser's blocks were freed");
    assert!(g.exact(), "the record never missed an allocation");
    let (taken, kept) = g.stacks_taken();
    eprintln!("{taken} stacks taken, {kept} distinct");
    assert!(taken > 100_000, "every allocation's stack for a hundred cycles: {taken}");
    let (allocations, table_bytes) = g.record_size();
    eprintln!("{} checks; record: {allocations} allocations in {table_bytes} bytes", checked.load(Ordering::Relaxed));
    assert_eq!(checked.load(Ordering::Relaxed), CYCLES);
}
