//! A planted native leak of 1 KiB per iteration through C malloc shows in jemalloc's allocated
//! bytes; the same loop that frees its block shows no growth. Process-wide measurement: one test
//! in this file.

const ITERATIONS: usize = 100;
const LEAK: usize = 1024;

/// Runs ITERATIONS iterations that malloc LEAK bytes each, freeing them unless `leak`, and returns
/// the growth of `stats.allocated` (after purging) over the loop.
fn growth(leak: bool, kept: &mut Vec<*mut libc::c_void>) -> i64 {
    leakcheck::workspace::purge_all().expect("purge");
    let before = leakcheck::workspace::allocated_bytes().expect("allocated");
    for _ in 0..ITERATIONS {
        // SAFETY: plain C malloc, checked for null.
        let p = unsafe { libc::malloc(LEAK) };
        assert!(!p.is_null());
        // Touch it so it is a real allocation, and hide it from the optimiser.
        unsafe { p.cast::<u8>().write_bytes(0xa5, LEAK) };
        let p = std::hint::black_box(p);
        if leak {
            kept.push(p); // reserved capacity: no Rust allocation inside the loop
        } else {
            unsafe { libc::free(p) };
        }
    }
    leakcheck::workspace::purge_all().expect("purge");
    leakcheck::workspace::allocated_bytes().expect("allocated") as i64 - before as i64
}

#[test]
fn planted_malloc_leak_shows_and_clean_loop_does_not() {
    let mut kept = Vec::with_capacity(ITERATIONS);
    // Warm up jemalloc's size class so the first slab is not charged to the measured loop.
    let _ = growth(false, &mut kept);

    let clean = growth(false, &mut kept);
    let leaking = growth(true, &mut kept);
    eprintln!("clean loop: {clean} B; leaking loop: {leaking} B over {ITERATIONS} iterations");

    assert!(
        leaking >= (ITERATIONS * LEAK) as i64,
        "a 1 KiB/iteration leak moved allocated by only {leaking} B over {ITERATIONS} iterations"
    );
    assert!(
        clean.abs() < (ITERATIONS * LEAK / 8) as i64,
        "a loop that frees what it mallocs moved allocated by {clean} B over {ITERATIONS} iterations"
    );
    for p in kept {
        unsafe { libc::free(p) };
    }
}
