//! The allocation hooks' edge cases (issue 56, item 5): a failed call records nothing; a realloc
//! that did not resize keeps its block's generation; frees while the store lets go say nothing of
//! how a stack turns over; a large block not yet written is counted untouched; a record that
//! missed allocations is never judged. Process-wide (the
//! hooks and the record are the process's): one test here, the incomplete record last.
#![allow(unsafe_code)]

use leakcheck::harness::{CycleCtx, Harness, HarnessConfig, Lifecycle};
use leakcheck::verdict::{Unmeasured, Verdict};
use leakcheck::workspace::generations::{self, Generations};
use leakcheck::{Ledger, Signal};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The generation of the live block of `size` made from generation `from` on.
fn generation_of(g: &Generations, from: u32, size: u64) -> Option<u32> {
    g.survivors(from, g.current()).into_iter().find(|s| s.size == size).map(|s| s.generation)
}

/// A 4,000 B block (jemalloc's 4,096 B class), from one stack whoever asks.
#[inline(never)]
fn block(fill: u8) -> Vec<u8> {
    std::hint::black_box(vec![fill; 4000])
}

/// A large block handed out but not yet written is resident to jemalloc, not to the kernel: the
/// sample counts it untouched until its pages are written or it is freed.
#[inline(never)]
fn untouched_until_written() {
    let probe = leakcheck::Probe::new().purge(true);
    const BLOCK: usize = 4 << 20;
    let untouched = |v: &Vec<u8>| {
        let n = probe.sample().untouched_bytes.expect("measured with the hooks in");
        std::hint::black_box(v.as_ptr());
        n
    };
    let mut big: Vec<u8> = Vec::with_capacity(BLOCK);
    let fresh = untouched(&big);
    big.resize(BLOCK, 1);
    let written = untouched(&big);
    assert!(fresh >= written + BLOCK as u64 - (64 << 10), "written {written} of fresh {fresh}");
    drop(big);
    // Freed unwritten, it is no longer counted (the written block's pages given back first, so
    // that the next is not made of them).
    untouched(&Vec::new());
    let unwritten: Vec<u8> = Vec::with_capacity(BLOCK);
    let held = untouched(&unwritten);
    drop(unwritten);
    let freed = untouched(&Vec::new());
    assert!(held >= freed + BLOCK as u64 - (64 << 10), "freed {freed} of held {held}");
}

/// A store whose cycle allocates 1 KiB and frees it.
struct Quiet;

impl Lifecycle for Quiet {
    type Store = Vec<u8>;
    type Error = String;
    fn open(&mut self, _: &CycleCtx<'_>) -> Result<Vec<u8>, String> {
        Ok(vec![1; 1024])
    }
    fn work(&mut self, v: &mut Vec<u8>, _: &CycleCtx<'_>) -> Result<(), String> {
        v.push(2);
        Ok(())
    }
    fn close(&mut self, v: Vec<u8>, _: &CycleCtx<'_>) -> Result<(), String> {
        drop(v);
        Ok(())
    }
}

#[test]
fn the_hooks_edge_cases() {
    let g = generations::install().expect("generations");
    let setup = g.advance();
    g.start_run(setup);

    // A failed posix_memalign: jemalloc passes the caller's unset `*memptr` to the hook. Set it to
    // a live block's address: the block's record must not change.
    let made = g.advance();
    let live = vec![7u8; 3000];
    let live_at = live.as_ptr() as usize;
    let before = g.total();
    let mut memptr: *mut libc::c_void = live_at as *mut libc::c_void;
    // SAFETY: a request too large to satisfy; jemalloc returns ENOMEM and writes nothing.
    let code = unsafe { libc::posix_memalign(&mut memptr, 64, usize::MAX / 2) };
    assert_ne!(code, 0, "the call must fail");
    assert_eq!(g.total(), before, "a failed call records nothing");
    assert_eq!(generation_of(g, made, 3072), Some(made), "the live block keeps its record");

    // A realloc that did not resize keeps its block's generation: an xallocx that could not grow
    // in place, and a realloc within the block's size class.
    let later = g.advance();
    // SAFETY: `p` comes from mallocx; xallocx and rallocx take it, and sdallocx frees it.
    unsafe {
        let p = tikv_jemalloc_sys::mallocx(100, 0);
        assert!(!p.is_null());
        let kept = g.advance();
        let usable = tikv_jemalloc_sys::xallocx(p, 100, 0, 0);
        assert_eq!(usable, 112, "100 B is jemalloc's 112 B class");
        let same = tikv_jemalloc_sys::rallocx(p, 110, 0);
        assert_eq!(same, p, "within its class a realloc stays in place");
        let found = g.survivors(later, g.current()).into_iter().find(|s| s.size == 112 && s.generation < kept);
        assert_eq!(found.map(|s| s.generation), Some(later), "not moved into generation {kept}");
        tikv_jemalloc_sys::sdallocx(same, 110, 0);
    }

    // Frees while the store lets go (the run stopped judging) are no turnover; frees before are.
    g.watch(4096);
    let first = g.advance();
    // One call site for both (a loop of a count the compiler cannot see is not unrolled).
    let mut made: Vec<Vec<u8>> = Vec::with_capacity(2);
    for fill in 3..std::hint::black_box(5u8) {
        made.push(block(fill));
    }
    let (b, a) = (made.pop().expect("two"), made.pop().expect("two"));
    let stacked: Vec<_> =
        g.survivors(first, first).into_iter().filter(|s| s.size == 4096 && s.stack.is_some()).collect();
    assert_eq!(stacked.len(), 2, "{stacked:?}");
    let stack = stacked[0].stack.expect("stacked");
    assert_eq!(stacked[1].stack, Some(stack), "one stack: {stacked:?}");
    for _ in 0..5 {
        g.advance();
    }
    drop(a);
    assert_eq!(g.turnover(stack), Some(5), "a block given back at age 5");
    assert_eq!(g.first_seen(stack), Some(first));
    for _ in 0..5 {
        g.advance();
    }
    g.stop_judging();
    drop(b);
    assert_eq!(g.turnover(stack), Some(5), "teardown says nothing of how the stack turns over");
    g.unwatch_all();
    drop(live);

    untouched_until_written();

    // A record that missed allocations is never judged: the run says so in one line and its
    // retained_bytes row is not measured.
    g.mark_incomplete();
    let ledger = Ledger::new();
    let report =
        Harness::new(HarnessConfig { cycles: 40, ..HarnessConfig::default() }).run(&mut Quiet, &ledger).expect("a run");
    let row = report.verdict.signal(Signal::RetainedBytes).expect("a retained_bytes row");
    assert_eq!(row.verdict, Verdict::NotMeasured, "{row:?}");
    assert_eq!(row.not_measured, Some(Unmeasured::RecordIncomplete));
    assert!(row.retained.is_none());
    let notice = report.generations.notice.as_deref().unwrap_or_default();
    assert!(notice.contains("missed allocations") && notice.contains("not judged"), "{notice}");
    assert!(!report.generations.exact);
}
