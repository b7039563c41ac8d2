//! Growth decides, on ordinary tests: the shapes of live memory that keeps growing which the age
//! rule once called clean (a collection shedding its oldest entry while it grows, a structure
//! rebuilt bigger every run, many small collections each grown once and kept, a leak in a size
//! a cache of the same size turns over, a leak whose stack differs from run to run), each a test
//! that must not pass; and bounded shapes that once were called leaks before their bound
//! showed (a queue of the last 64 in a run of 200, an interner that learns a name in each of its
//! first runs; two lifetimes at one allocating function; a table filled lazily at a falling
//! rate; a janitor that backs off), each a test that must pass. The body's state is a `static`, kept across the
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
#[should_panic(expected = "is not clean. leak: retained_bytes: still growing")]
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
/// block always belongs to the youngest run. Its block takes a new size every run, so no site
/// holds it across runs: the exact total and the byte counter see it grow, 128 B a run, which
/// 30 runs cannot tell from the small steps a process's total takes (4 KiB); 60 can.
#[leakcheck::test(cycles = 60)]
#[should_panic(expected = "is not clean. leak:")]
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
#[should_panic(expected = "is not clean. leak: retained_bytes: still growing")]
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
#[should_panic(expected = "is not clean. leak: retained_bytes: still growing")]
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

static DEPTHS: Mutex<u32> = Mutex::new(0);

/// Keeps 64 bytes `depth` calls down: each depth is an allocating stack of its own.
#[inline(never)]
fn keep_at_depth(depth: u32) -> usize {
    if depth == 0 {
        let kept: &'static mut [u8; 64] = Box::leak(Box::new([9; 64]));
        return std::hint::black_box(kept).len();
    }
    // Not a tail call: each depth keeps its frame.
    std::hint::black_box(keep_at_depth(depth - 1)) + 1
}

/// 64 bytes lost each run at a depth of a recursion that differs from run to run (0 to 6): one
/// function of the test's, seven stacks, each rising one run in seven.
#[leakcheck::test]
#[should_panic(expected = "is not clean. leak: retained_bytes: still growing")]
fn a_leak_whose_stack_differs_from_run_to_run() {
    let mut runs = lock(&DEPTHS);
    *runs += 1;
    std::hint::black_box(keep_at_depth(*runs % 7));
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

/// A loader's blocks: the run that loaded each, and the block.
type Loaded = VecDeque<(u64, Box<[u8; 128]>)>;

static BUSY: Mutex<Loaded> = Mutex::new(VecDeque::new());
static QUIET: Mutex<Loaded> = Mutex::new(VecDeque::new());
static LOADER_RUNS: Mutex<u64> = Mutex::new(0);

/// The one function both partitions load through: one allocating stack, two lifetimes.
#[inline(never)]
fn load(run: u64) -> (u64, Box<[u8; 128]>) {
    (run, Box::new([run as u8; 128]))
}

/// Keeps what `partition` loaded in the last `life` runs.
fn keep_for(partition: &mut Loaded, run: u64, life: u64) {
    while partition.front().is_some_and(|(made, _)| run - made >= life) {
        partition.pop_front();
    }
}

/// One loader serving a busy partition (4 blocks a run, kept 2 runs) and a quiet one (1 a run,
/// kept 30 runs): bounded from run 30, within the 150 the test asks for.
#[leakcheck::test(cycles = 150)]
fn two_lifetimes_at_one_allocating_function() {
    let mut runs = lock(&LOADER_RUNS);
    let run = *runs;
    *runs += 1;
    let mut busy = lock(&BUSY);
    for _ in 0..4 {
        busy.push_back(load(run));
    }
    keep_for(&mut busy, run, 2);
    let mut quiet = lock(&QUIET);
    quiet.push_back(load(run));
    keep_for(&mut quiet, run, 30);
}

/// Slots of the lazily filled table.
const SLOTS: usize = 48;

static TABLE: Mutex<Vec<Option<Box<[u8; 64]>>>> = Mutex::new(Vec::new());
static TABLE_RUNS: Mutex<u64> = Mutex::new(0);

/// A hash of `x` (splitmix64's finaliser).
fn mix(x: u64) -> u64 {
    let x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let x = (x ^ (x >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^ (x >> 29)
}

/// A table of 48 slots, each run looking up one key of 48 and filling its slot on a miss: it
/// fills at a falling rate (its last slots at runs 111 and 149) and then holds its bound, within
/// the 200 runs the test asks for.
#[leakcheck::test(cycles = 200)]
fn a_table_filled_lazily_at_a_falling_rate() {
    let mut runs = lock(&TABLE_RUNS);
    *runs += 1;
    let mut table = lock(&TABLE);
    if table.is_empty() {
        table.resize_with(SLOTS, || None);
    }
    let slot = (mix(*runs) % SLOTS as u64) as usize;
    if table[slot].is_none() {
        table[slot] = Some(Box::new([slot as u8; 64]));
    }
}

/// What the janitor has yet to free, and when it next sweeps.
#[allow(clippy::vec_box)] // each piece of garbage a block of its own, as a service's requests are
struct Janitor {
    pending: Vec<Box<[u8; 256]>>,
    run: u64,
    next_sweep: u64,
    interval: u64,
}

static JANITOR: Mutex<Janitor> = Mutex::new(Janitor { pending: Vec::new(), run: 0, next_sweep: 2, interval: 2 });

/// A deferred free whose interval doubles after each sweep, up to 32 runs: one block of garbage a
/// run, freed in sweeps at runs 2, 6, 14, 30, 62, then every 32 runs: bounded by 32 blocks.
#[leakcheck::test(cycles = 200)]
fn a_janitor_backing_off_to_a_longest_interval() {
    let mut j = lock(&JANITOR);
    j.run += 1;
    j.pending.push(Box::new([7; 256]));
    if j.run >= j.next_sweep {
        j.pending.clear();
        j.interval = (j.interval * 2).min(32);
        j.next_sweep = j.run + j.interval;
    }
}
