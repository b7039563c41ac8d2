//! Growth decides, on ordinary tests: the shapes of live memory that keeps growing which the age
//! rule once called clean (a collection shedding its oldest entry while it grows, a structure
//! rebuilt bigger every run, many small collections each grown once and kept, a leak in a size
//! a cache of the same size turns over), each a test that must not pass; and bounded shapes that once were called leaks before their bound
//! showed (a queue of the last 64 in a run of 200, an interner that learns a name in each of its
//! first runs), each a test that must pass. The body's state is a `static`, kept across the
//! test's cycles as a long-lived service keeps it across requests. (An unbounded memo table fed 8
//! keys a run is not here: it doubles at runs 2, 4, 7, 14 and 28, gaps that lengthen as a
//! high-water mark's do, and is clean after 26 cycles: docs/verdict.md.)

#[global_allocator]
static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

static SHEDDING: Mutex<VecDeque<Box<[u8; 96]>>> = Mutex::new(VecDeque::new());

/// Two entries in each run, the oldest dropped every other run: it grows by one a run while
/// nothing it holds grows old at a fixed age.
#[leakcheck::test]
#[should_panic(expected = "is not clean")]
fn a_collection_shedding_its_oldest_while_it_grows() {
    let mut q = lock(&SHEDDING);
    q.push_back(Box::new([1; 96]));
    q.push_back(Box::new([2; 96]));
    if q.len().is_multiple_of(4) {
        q.pop_front();
    }
}

static REBUILT: Mutex<Vec<u64>> = Mutex::new(Vec::new());

/// Copy-on-write: each run builds a copy 16 entries longer and drops the old one, so its one
/// block always belongs to the youngest run.
#[leakcheck::test]
#[should_panic(expected = "is not clean")]
fn a_structure_rebuilt_bigger_every_run() {
    let mut v = lock(&REBUILT);
    let mut next = Vec::with_capacity(v.len() + 16);
    next.extend_from_slice(&v);
    next.extend(0..16);
    *v = next;
}

static SMALL: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());

/// A small collection grown once in each run and kept: each one stops growing, all of them stay.
#[leakcheck::test]
#[should_panic(expected = "is not clean")]
fn many_small_collections_each_grown_once_and_kept() {
    let mut one = Vec::new();
    for i in 0..12u32 {
        one.push(i);
    }
    lock(&SMALL).push(one);
}

static TURNING: Mutex<VecDeque<Box<[u8; 48]>>> = Mutex::new(VecDeque::new());

/// A cache of 64 blocks of 48 bytes that turns over 8 of them each run, and one block of the
/// same size lost each run beside it.
#[leakcheck::test]
#[should_panic(expected = "is not clean")]
fn a_leak_in_the_size_a_cache_turns_over() {
    let mut cache = lock(&TURNING);
    for i in 0..8u8 {
        if cache.len() == 64 {
            cache.pop_front();
        }
        cache.push_back(Box::new([i; 48]));
    }
    let lost: &'static mut [u8; 48] = Box::leak(Box::new([7; 48]));
    std::hint::black_box(lost);
}

static LAST_64: Mutex<VecDeque<Box<[u8; 200]>>> = Mutex::new(VecDeque::new());

/// The last 64 entries, fed one a run: its bound shows after 64 runs, within the 200 the test
/// asks for.
#[leakcheck::test(cycles = 200)]
fn a_queue_of_the_last_64_in_a_run_of_200() {
    let mut q = lock(&LAST_64);
    if q.len() == 64 {
        q.pop_front();
    }
    q.push_back(Box::new([3; 200]));
}

static NAMES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static RUNS: Mutex<u64> = Mutex::new(0);

/// An interner that learns one name in each of its first 10 runs, then knows them all.
#[leakcheck::test]
fn an_interner_that_learns_its_names_in_its_first_runs() {
    let mut runs = lock(&RUNS);
    let name = format!("name-{}", (*runs).min(9));
    *runs += 1;
    let mut names = lock(&NAMES);
    if !names.contains(&name) {
        names.push(name);
    }
}
