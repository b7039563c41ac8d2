//! Allocating call stacks, taken inside the allocation hook for the sizes being watched, and kept
//! once each (interned) in memory from `mmap`.
//!
//! A stack for every allocation is heaptrack's cost: the reference store makes ~170,000
//! allocations per cycle, and an unwind of 32 frames costs microseconds. What stays is rarer:
//! the runner watches the usable sizes that cycles left behind ([`watch`]), and only allocations
//! of those sizes have their stack taken. A size is a jemalloc size class, so a watched size also
//! catches its neighbours in the class: the stacks then tell them apart. A watched class so
//! common that every stack would cost too much is sampled ([`adapt`]: about a budget of stacks
//! per cycle), unless the runner focuses on it ([`focus`]: a size left behind again and again).
//!
//! The unwinder ([`super::unwind`]) walks from a cache of frame sizes where it can and with
//! libgcc's `_Unwind_Backtrace` (the one Rust's panics use, linked in every Rust program on
//! Linux) where it cannot. With glibc >= 2.35 libgcc finds each frame's unwind table through
//! `_dl_find_object`, without locks or allocation; the walk runs before the hook takes any lock
//! of the record, so a thread in the loader holding its lock while it allocates never waits on
//! us.
//!
//! Interning: a stack's frames are hashed; an open-addressing index of 2^17 slots holds the ids
//! of up to [`MAX_STACKS`] stacks, whose frames are stored one after another (memory grows with
//! the stacks seen, not with the index). One spin lock: stacks are taken rarely. A full table
//! hands out [`OVERFLOW`] ("a stack not kept").

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use super::unwind::Frames;
pub(crate) use super::unwind::MAX_FRAMES;

/// Distinct stacks kept; later ones share [`OVERFLOW`].
pub(crate) const MAX_STACKS: u32 = 1 << 16;
/// The id of every stack that did not fit.
pub(crate) const OVERFLOW: u32 = MAX_STACKS + 1;
const INDEX_SLOTS: usize = 1 << 17;

/// Usable sizes below this are watched one by one (at jemalloc's 16-byte quantum); larger ones by
/// their power of two.
const FINE_LIMIT: u64 = 64 << 10;
const FINE_CLASSES: usize = (FINE_LIMIT / 16) as usize;
pub(crate) const CLASSES: usize = FINE_CLASSES + 64;

/// Per watch class: 0 not watched; 1 every allocation's stack taken; `k` one in about `k` (a
/// class so common that every stack would cost too much: see [`adapt`]). A focused class stays
/// at 1.
static PERIOD: [AtomicU32; CLASSES] = [const { AtomicU32::new(0) }; CLASSES];
/// Allocations of each watched class since the last [`adapt`].
static SEEN: [AtomicU32; CLASSES] = [const { AtomicU32::new(0) }; CLASSES];
/// Classes focused on: every allocation's stack, whatever it costs.
static FOCUSED: [AtomicU64; CLASSES / 64] = [const { AtomicU64::new(0) }; CLASSES / 64];
/// Per class, the generation until which it is boosted: sampled at a larger budget (see
/// [`boost`]); 0 never.
static BOOSTED_UNTIL: [AtomicU32; CLASSES] = [const { AtomicU32::new(0) }; CLASSES];
/// The most classes boosted at once: the boost's cost is bounded by this many budgets a cycle.
pub(crate) const MAX_BOOSTED: u32 = 4;
/// Whether any class is watched (the hook's fast path).
static WATCHING: AtomicBool = AtomicBool::new(false);

pub(crate) fn class(size: u64) -> usize {
    if size < FINE_LIMIT {
        (size / 16) as usize
    } else {
        FINE_CLASSES + (63 - size.leading_zeros() as usize)
    }
}

/// Per class, the generation that was current when it began to be watched (when [`PERIOD`] is
/// not 0).
static WATCHED_AT: [AtomicU32; CLASSES] = [const { AtomicU32::new(0) }; CLASSES];

/// Takes the stacks of later allocations of `size`'s watch class (all of them until [`adapt`]
/// says the class is too common), from generation `now` on.
pub(crate) fn watch(size: u64, now: u32) {
    let c = class(size);
    if PERIOD[c].compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
        WATCHED_AT[c].store(now, Ordering::Relaxed);
    }
    WATCHING.store(true, Ordering::Release);
}

/// The sampling period of `size`'s class now (1: every stack taken; 0: not watched).
pub(crate) fn period_of(size: u64) -> u32 {
    PERIOD[class(size)].load(Ordering::Relaxed)
}

/// The generation since which `size`'s class is watched, if it is.
pub(crate) fn watched_since(size: u64) -> Option<u32> {
    let c = class(size);
    (PERIOD[c].load(Ordering::Relaxed) > 0).then(|| WATCHED_AT[c].load(Ordering::Relaxed))
}

/// Takes the stack of every later allocation of `size`'s class, however common.
pub(crate) fn focus(size: u64, now: u32) {
    let c = class(size);
    FOCUSED[c / 64].fetch_or(1 << (c % 64), Ordering::Relaxed);
    if PERIOD[c].swap(1, Ordering::Relaxed) == 0 {
        WATCHED_AT[c].store(now, Ordering::Relaxed);
    }
    WATCHING.store(true, Ordering::Release);
}

fn focused(c: usize) -> bool {
    FOCUSED[c / 64].load(Ordering::Relaxed) & (1 << (c % 64)) != 0
}

fn boosted(c: usize, now: u32) -> bool {
    BOOSTED_UNTIL[c].load(Ordering::Relaxed) > now
}

fn boosted_count(now: u32) -> u32 {
    (0..CLASSES).filter(|&c| boosted(c, now)).count() as u32
}

/// Samples `size`'s class at the boost budget of [`adapt`] from its next call on until
/// generation `until` (`now` is the current one): a sampled class left something behind without
/// a stack, and a leak among its many allocations would take that many more cycles to show at
/// its stack. A boost lapses unless renewed, so its cost follows the need. At most
/// [`MAX_BOOSTED`] classes at once; false when that many are boosted already (the class stays
/// as it was).
pub(crate) fn boost(size: u64, now: u32, until: u32) -> bool {
    let c = class(size);
    if !boosted(c, now) && boosted_count(now) >= MAX_BOOSTED {
        return false;
    }
    BOOSTED_UNTIL[c].fetch_max(until, Ordering::Relaxed);
    true
}

/// Sets each watched class's sampling period from its allocations since the last call, so that a
/// class not focused on costs about `budget` stacks per call (a cycle), a boosted one about
/// `boost_budget`: every allocation of a rare size, one in `seen / budget` of a common one.
pub(crate) fn adapt(budget: u32, boost_budget: u32, now: u32) {
    for c in 0..CLASSES {
        let period = PERIOD[c].load(Ordering::Relaxed);
        let seen = SEEN[c].swap(0, Ordering::Relaxed);
        if period == 0 || focused(c) {
            continue;
        }
        let budget = if boosted(c, now) { boost_budget } else { budget };
        PERIOD[c].store(seen.div_ceil(budget.max(1)).max(1), Ordering::Relaxed);
    }
}

/// Stops watching every size.
pub(crate) fn unwatch_all() {
    WATCHING.store(false, Ordering::Release);
    for c in 0..CLASSES {
        PERIOD[c].store(0, Ordering::Relaxed);
        SEEN[c].store(0, Ordering::Relaxed);
    }
    for w in &FOCUSED {
        w.store(0, Ordering::Relaxed);
    }
    for b in &BOOSTED_UNTIL {
        b.store(0, Ordering::Relaxed);
    }
}

/// Classes watched now, of them those focused on, those boosted at generation `now`, and those
/// sampled (fewer than every allocation's stack taken: more allocations a cycle than the budget).
pub(crate) fn watched_classes(now: u32) -> (u32, u32, u32, u32) {
    let watched = PERIOD.iter().filter(|p| p.load(Ordering::Relaxed) > 0).count() as u32;
    let sampled = PERIOD.iter().filter(|p| p.load(Ordering::Relaxed) > 1).count() as u32;
    let focused = FOCUSED.iter().map(|w| w.load(Ordering::Relaxed).count_ones()).sum();
    (watched, focused, boosted_count(now), sampled)
}

thread_local! {
    /// This thread's sampling state (xorshift64); `const` without a destructor, like the hook's
    /// other thread-local.
    static DRAW: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One in about `period`, drawn per thread.
fn one_in(period: u32) -> bool {
    DRAW.try_with(|d| {
        let mut x = d.get();
        if x == 0 {
            // Seeded from the thread's own address: distinct per thread, never 0.
            x = (d as *const _ as u64) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        d.set(x);
        x % u64::from(period) == 0
    })
    .unwrap_or(false)
}

/// Whether an allocation of `size` has its stack taken: its weight (the sampling period it was
/// drawn at: it stands for that many allocations of its class), or 0 when it is not.
#[inline]
pub(crate) fn watched(size: u64) -> u32 {
    if !WATCHING.load(Ordering::Relaxed) {
        return 0;
    }
    let c = class(size);
    let period = PERIOD[c].load(Ordering::Relaxed);
    if period == 0 {
        return 0;
    }
    SEEN[c].fetch_add(1, Ordering::Relaxed);
    if period == 1 || one_in(period) {
        period
    } else {
        0
    }
}

#[repr(C)]
struct Stack {
    len: usize,
    frames: [usize; MAX_FRAMES],
}

/// The interned stacks: `index` (2^17 ids, 0 = empty) and `stacks` (id - 1 -> frames), both
/// mapped at first use and never unmapped.
struct Interned {
    index: *mut u32,
    stacks: *mut Stack,
    len: u32,
}

struct Store {
    locked: AtomicBool,
    inner: UnsafeCell<Interned>,
}

// SAFETY: `inner` is only touched while `locked` is held.
unsafe impl Sync for Store {}

static STORE: Store = Store {
    locked: AtomicBool::new(false),
    inner: UnsafeCell::new(Interned { index: std::ptr::null_mut(), stacks: std::ptr::null_mut(), len: 0 }),
};

/// Per stack id, 1 + the oldest age (generations from its making, or from the run's start for a
/// block made before it, to its free) at which one of its blocks was given back in this run; 0:
/// none was. What a stack keeps across cycles and turns over (a cache's entries, a queue's
/// blocks) it gives back at ages up to its window; a leak never gives back.
static TURNOVER: [AtomicU32; OVERFLOW as usize + 1] = [const { AtomicU32::new(0) }; OVERFLOW as usize + 1];
/// Per watch class, the same over every block of the class given back in this run, stacked or
/// not: a cache turning over since before the run shows its window here long before its first
/// stacked block dies.
static CLASS_TURNOVER: [AtomicU32; CLASSES] = [const { AtomicU32::new(0) }; CLASSES];
/// Per stack id, 1 + the generation of its first stacked block in this run; 0: none yet.
static FIRST_SEEN: [AtomicU32; OVERFLOW as usize + 1] = [const { AtomicU32::new(0) }; OVERFLOW as usize + 1];

/// Raises `slot` to hold `age` (as 1 + age): a relaxed read first, so that the common case (no
/// new oldest age) writes nothing to a line other threads read.
fn note_age(slot: &AtomicU32, age: u32) {
    let stored = age.saturating_add(1);
    if slot.load(Ordering::Relaxed) < stored {
        slot.fetch_max(stored, Ordering::Relaxed);
    }
}

/// Notes that a block of `size`, from stack `stack` if its stack was taken, was given back at
/// `age`.
pub(crate) fn note_free(size: u64, stack: Option<u32>, age: u32) {
    note_age(&CLASS_TURNOVER[class(size)], age);
    if let Some(slot) = stack.and_then(|id| TURNOVER.get(id as usize)) {
        note_age(slot, age);
    }
}

/// The oldest age at which stack `id` gave a block back in this run.
pub(crate) fn turnover(id: u32) -> Option<u32> {
    TURNOVER.get(id as usize).map(|t| t.load(Ordering::Relaxed)).filter(|&t| t > 0).map(|t| t - 1)
}

/// The oldest age at which a block of `size`'s watch class was given back in this run.
pub(crate) fn class_turnover(size: u64) -> Option<u32> {
    Some(CLASS_TURNOVER[class(size)].load(Ordering::Relaxed)).filter(|&t| t > 0).map(|t| t - 1)
}

/// The generation of stack `id`'s first stacked block in this run.
pub(crate) fn first_seen(id: u32) -> Option<u32> {
    FIRST_SEEN.get(id as usize).map(|t| t.load(Ordering::Relaxed)).filter(|&t| t > 0).map(|t| t - 1)
}

fn seen(id: u32, generation: u32) {
    if let Some(slot) = FIRST_SEEN.get(id as usize) {
        if slot.load(Ordering::Relaxed) == 0 {
            let _ = slot.compare_exchange(0, generation.saturating_add(1), Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

/// Forgets the ages and first sightings (a new run).
pub(crate) fn reset_run() {
    for slot in TURNOVER.iter().chain(&CLASS_TURNOVER).chain(&FIRST_SEEN) {
        slot.store(0, Ordering::Relaxed);
    }
}

/// Stacks taken (every capture, interned or not), for the cost figures.
static TAKEN: AtomicUsize = AtomicUsize::new(0);
/// Set when the interning memory could not be mapped.
static UNMAPPED: AtomicBool = AtomicBool::new(false);

impl Store {
    fn lock(&self) {
        super::mapped::spin_lock(&self.locked);
    }

    fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
    }

    fn with<T>(&self, f: impl FnOnce(&mut Interned) -> T) -> T {
        self.lock();
        // SAFETY: the lock is held.
        let out = f(unsafe { &mut *self.inner.get() });
        self.unlock();
        out
    }
}

/// Resident bytes of the interned stacks' mappings and of the per-stack ages (pages touched).
pub(crate) fn resident_bytes() -> u64 {
    let interned = STORE.with(|i| {
        if i.index.is_null() {
            return 0;
        }
        super::mapped::resident_of(i.index.cast(), INDEX_SLOTS * std::mem::size_of::<u32>())
            + super::mapped::resident_of(i.stacks.cast(), MAX_STACKS as usize * std::mem::size_of::<Stack>())
    });
    interned + super::mapped::resident_of_static(&TURNOVER) + super::mapped::resident_of_static(&FIRST_SEEN)
}

pub(crate) fn lock_for_fork() {
    STORE.lock();
}

pub(crate) fn unlock_after_fork() {
    STORE.unlock();
}

impl Interned {
    /// Maps the index and the stacks' memory (address space; pages are touched as used).
    fn ready(&mut self) -> bool {
        if !self.index.is_null() {
            return true;
        }
        if UNMAPPED.load(Ordering::Relaxed) {
            return false;
        }
        let index = super::mapped::map_zeroed(INDEX_SLOTS * std::mem::size_of::<u32>());
        let stacks = super::mapped::map_zeroed(MAX_STACKS as usize * std::mem::size_of::<Stack>());
        match (index, stacks) {
            (Ok(i), Ok(s)) => {
                self.index = i.cast();
                self.stacks = s.cast();
                true
            }
            _ => {
                UNMAPPED.store(true, Ordering::Relaxed);
                false
            }
        }
    }

    /// The frames of stack `id` (1..=len).
    fn frames(&self, id: u32) -> &[usize] {
        // SAFETY: ids 1..=len were written by `intern` into the mapped `stacks`.
        let s = unsafe { &*self.stacks.add(id as usize - 1) };
        &s.frames[..s.len.min(MAX_FRAMES)]
    }

    /// The id of `frames`, adding it when new.
    fn intern(&mut self, frames: &[usize]) -> u32 {
        if !self.ready() {
            return OVERFLOW;
        }
        let h = frames.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &f| (h ^ f as u64).wrapping_mul(0x100_0000_01b3));
        let mask = INDEX_SLOTS - 1;
        let mut i = (h.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 47) as usize & mask;
        loop {
            // SAFETY: `index` is mapped with INDEX_SLOTS entries and `i <= mask`.
            let slot = unsafe { &mut *self.index.add(i) };
            if *slot == 0 {
                if self.len >= MAX_STACKS {
                    return OVERFLOW;
                }
                let mut stack = Stack { len: frames.len(), frames: [0; MAX_FRAMES] };
                stack.frames[..frames.len()].copy_from_slice(frames);
                // SAFETY: `len < MAX_STACKS`, the mapping's capacity.
                unsafe { self.stacks.add(self.len as usize).write(stack) };
                self.len += 1;
                *slot = self.len;
                return self.len;
            }
            if self.frames(*slot) == frames {
                return *slot;
            }
            i = (i + 1) & mask;
        }
    }
}

/// Takes the calling stack and returns its id (1..=[`MAX_STACKS`], or [`OVERFLOW`]), noting
/// `generation` as its first sighting in this run if it is. Allocates nothing; called by the hook
/// before it takes any lock of the record.
#[inline(never)]
pub(crate) fn capture(generation: u32) -> u32 {
    let mut frames = Frames::new();
    super::unwind::walk(&mut frames);
    TAKEN.fetch_add(1, Ordering::Relaxed);
    if frames.len == 0 {
        return OVERFLOW;
    }
    let id = STORE.with(|s| s.intern(&frames.ips[..frames.len]));
    seen(id, generation);
    id
}

/// The return addresses of stack `id`, innermost first (empty for [`OVERFLOW`] or an unknown
/// id). Copies under the lock into a local array, and allocates only after releasing it (an
/// allocation of a watched size takes the lock too).
pub(crate) fn frames(id: u32) -> Vec<usize> {
    let mut copy = [0usize; MAX_FRAMES];
    let len = STORE.with(|s| {
        if id == 0 || id > s.len {
            return 0;
        }
        let f = s.frames(id);
        copy[..f.len()].copy_from_slice(f);
        f.len()
    });
    copy[..len].to_vec()
}

/// Stacks taken so far and distinct stacks kept.
pub(crate) fn counts() -> (usize, u32) {
    (TAKEN.load(Ordering::Relaxed), STORE.with(|s| s.len))
}
