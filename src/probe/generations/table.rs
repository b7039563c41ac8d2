//! The record of every live allocation: address -> (usable size, generation, whether its stack
//! was taken), kept in memory that comes from `mmap`, never from `malloc`; and, in a second table
//! of the same kind, address -> stack for the few allocations whose stack was taken.
//!
//! Why it looks like this (a deadlock or a crash in `malloc` is the worst bug a test tool can
//! have, so every choice here is about what the allocation hooks may do):
//! - **No allocation.** The hooks run inside `malloc` and `free`; a table that allocated through
//!   them would recurse. Its memory is mapped with `mmap` and given back with `munmap`.
//! - **No lock that can be re-entered.** 64 shards, each an open-addressing table behind its own
//!   spin lock. A hook holds one shard's lock for one probe sequence and calls nothing that can
//!   allocate while it does (jemalloc's own re-entrancy flag would skip a nested hook anyway).
//!   A spinning thread yields after a few hundred tries, so a holder that was preempted runs.
//! - **Constant cost per allocation.** Linear probing at a load of at most 3/4, deletion by
//!   backward shift (no tombstones that would slow later probes). A shard doubles past 3/4: the
//!   rehash is paid once per doubling, amortised constant.
//! - **Bounded memory.** A slot is 16 bytes and a shard doubles from 3/4 to 3/8 full, so the table
//!   costs at most 43 bytes per allocation at the peak of live allocations, plus 64 x 16 KiB. It
//!   does not shrink: a store that allocates a lot in each cycle and frees it at close would
//!   otherwise map and unmap its tables every cycle, and each unmap is a TLB shootdown on every
//!   core (measured: the largest kernel cost of the first version, which halved below 1/4).
//! - **Safe at fork and exit.** `fork` takes every shard's lock first (`pthread_atfork`), so a
//!   child never inherits a lock held by a thread that does not exist there. Nothing is ever
//!   unmapped at exit: hooks that run in atexit handlers or thread destructors find the table.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use super::mapped::{map_zeroed, resident_of, spin_lock};

/// Shards: independent tables, so threads on different shards never wait for each other.
const SHARD_BITS: u32 = 6;
const SHARDS: usize = 1 << SHARD_BITS;
/// Slots a shard starts with (and never shrinks below): 16 KiB of address space each.
const MIN_SLOTS_LOG2: u32 = 10;

/// A generation number is the low 24 bits of a slot's value, then one bit says whether the
/// allocation's stack was taken, one whether it has a chain (a block grown across cycles: its
/// record is in [`CHAIN_OF`]), one is unused, and the usable size is the high 37.
pub(crate) const GENERATION_BITS: u32 = 24;
/// The largest generation a slot can hold.
pub(crate) const MAX_GENERATION: u32 = (1 << GENERATION_BITS) - 1;
const STACKED_BIT: u64 = 1 << GENERATION_BITS;
const CHAINED_BIT: u64 = 1 << (GENERATION_BITS + 1);
const SIZE_SHIFT: u32 = GENERATION_BITS + 3;
/// The largest size a slot can hold exactly (128 GiB); larger ones are clamped (none exist on a
/// machine this tool runs on).
const MAX_SIZE: u64 = (1 << (64 - SIZE_SHIFT)) - 1;

/// One live allocation. `key == 0` marks an empty slot (no allocation lives at address 0).
#[derive(Clone, Copy)]
#[repr(C)]
struct Slot {
    key: usize,
    value: u64,
}

/// What the table knows of one allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// jemalloc's usable size of the allocation, in bytes.
    pub size: u64,
    /// The generation that made it.
    pub generation: u32,
    /// Whether its allocating stack was taken (it is then in [`STACK_OF`]).
    pub stacked: bool,
    /// Whether it is a block grown by reallocs after an earlier generation made it (a container
    /// kept across cycles): its growth history is in [`CHAIN_OF`].
    pub chained: bool,
}

impl Entry {
    pub(crate) fn pack(self) -> u64 {
        (self.size.min(MAX_SIZE) << SIZE_SHIFT)
            | if self.chained { CHAINED_BIT } else { 0 }
            | if self.stacked { STACKED_BIT } else { 0 }
            | u64::from(self.generation.min(MAX_GENERATION))
    }

    pub(crate) fn unpack(value: u64) -> Entry {
        Entry {
            size: value >> SIZE_SHIFT,
            generation: (value & u64::from(MAX_GENERATION)) as u32,
            stacked: value & STACKED_BIT != 0,
            chained: value & CHAINED_BIT != 0,
        }
    }
}

/// A block's growth history across generations (see [`Entry::chained`]): the generation of its
/// last rise above the most it had been, of the rise before (or of its making), the size class of
/// its peak and the classes its last rise added (classes are quarter-doublings, `4 log2(size)`,
/// the granularity of jemalloc's size classes: 151 at 128 GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Chain {
    pub last: u32,
    pub before: u32,
    pub peak_class: u8,
    pub rise: u8,
}

impl Chain {
    pub(crate) fn pack(self) -> u64 {
        u64::from(self.last.min(MAX_GENERATION))
            | (u64::from(self.before.min(MAX_GENERATION)) << GENERATION_BITS)
            | (u64::from(self.peak_class) << (2 * GENERATION_BITS))
            | (u64::from(self.rise) << (2 * GENERATION_BITS + 8))
    }

    pub(crate) fn unpack(value: u64) -> Chain {
        Chain {
            last: (value & u64::from(MAX_GENERATION)) as u32,
            before: ((value >> GENERATION_BITS) & u64::from(MAX_GENERATION)) as u32,
            peak_class: (value >> (2 * GENERATION_BITS)) as u8,
            rise: (value >> (2 * GENERATION_BITS + 8)) as u8,
        }
    }

    /// The size class of `size` as a chain counts it: `floor(4 log2(size))`, so that a growth by
    /// less than a quarter-doubling (19%) within a class is no rise.
    pub(crate) fn class_of(size: u64) -> u8 {
        if size == 0 {
            return 0;
        }
        let log2 = 63 - size.leading_zeros();
        // The two bits below the leading one give the quarter.
        let quarter = if log2 >= 2 { (size >> (log2 - 2)) & 3 } else { (size << (2 - log2)) & 3 };
        (4 * log2 + quarter as u32) as u8
    }

    /// The factor of its last rise (its capacity after over its capacity before).
    pub(crate) fn factor(&self) -> f64 {
        2f64.powf(f64::from(self.rise) / 4.0)
    }
}

/// One shard's table: `1 << log2` slots at `slots` (null until the first insert), and what its
/// records' changes owe the newest generation it has seen ([`Table::insert_counted`]).
struct Inner {
    slots: *mut Slot,
    log2: u32,
    len: usize,
    pending: Pending,
    /// The live bytes this shard's changes added to the run's generations ([`RUN_FROM`] on):
    /// summed over the shards, what the run's set-up and cycles hold now ([`Table::run_live`]).
    run_bytes: i64,
}

/// Bytes and allocations a shard owes `generation`'s live counts: kept under the shard's lock,
/// which every record's change takes anyway, instead of two atomic additions to one cache line
/// that every allocating thread writes.
#[derive(Clone, Copy)]
struct Pending {
    generation: u32,
    bytes: i64,
    allocations: i64,
}

/// A cache line each, so that threads on two shards do not contend for one line.
#[repr(align(64))]
struct Shard {
    locked: AtomicBool,
    inner: UnsafeCell<Inner>,
}

// SAFETY: `inner` is only touched while `locked` is held (see `Shard::with`).
unsafe impl Sync for Shard {}

/// The process's table. Statics with no destructor: usable from any hook, at any time.
pub(crate) struct Table {
    shards: [Shard; SHARDS],
    /// Set when `mmap` failed: the record is no longer complete and must not be trusted.
    broken: AtomicBool,
    /// Bytes mapped for slots, all shards together.
    mapped_bytes: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)] // the array initialiser of a static, one copy per shard
const EMPTY_SHARD: Shard = Shard {
    locked: AtomicBool::new(false),
    inner: UnsafeCell::new(Inner { slots: std::ptr::null_mut(), log2: 0, len: 0, pending: NO_PENDING, run_bytes: 0 }),
};

/// Before the first [`Table::flush_to`], a shard keeps counts for the first generation and later
/// ones only, so that no shard ever keeps any of a generation older than the current one (the
/// hooks' own two: what was there before them, the runner's bookkeeping).
const NO_PENDING: Pending = Pending { generation: FIRST, bytes: 0, allocations: 0 };

/// The first generation the hooks hand out (the current one when they go in).
pub(crate) const FIRST: u32 = 2;

/// The first generation of the run going on (its set-up): what it and later generations hold is
/// summed by the shards as it changes ([`Table::run_live`]). None before a run.
pub(crate) static RUN_FROM: AtomicU32 = AtomicU32::new(u32::MAX);

/// Every live allocation: address -> [`Entry::pack`].
pub(crate) static TABLE: Table = Table::new();
/// The allocations whose stack was taken: address -> stack id (see `capture`).
pub(crate) static STACK_OF: Table = Table::new();
/// The blocks grown across generations: address -> [`Chain::pack`].
pub(crate) static CHAIN_OF: Table = Table::new();
/// The live blocks of at least [`LARGE_BLOCK`]: address -> usable size. A sample reads which of
/// their pages were written (`super::untouched_bytes`) without walking every allocation.
pub(crate) static LARGE_OF: Table = Table::new();

/// Blocks at least this large are jemalloc's large extents (16 KiB with 4 KiB pages): pages of
/// their own, counted resident by jemalloc from the moment they are handed out.
pub(crate) const LARGE_BLOCK: u64 = 16 << 10;

/// Fibonacci hashing of the address without its low 4 bits (jemalloc aligns every allocation to
/// at least 16 bytes on x86-64 and aarch64, so they carry no information).
fn hash(key: usize) -> u64 {
    ((key as u64) >> 4).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn shard_of(h: u64) -> usize {
    (h >> (64 - SHARD_BITS)) as usize
}

/// The home slot of hash `h` in a table of `1 << log2` slots: the bits below the shard's.
fn home(h: u64, log2: u32) -> usize {
    ((h << SHARD_BITS) >> (64 - log2)) as usize
}

impl Shard {
    /// Runs `f` with the shard's table, under its lock.
    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        spin_lock(&self.locked);
        // SAFETY: the lock is held, so no other thread touches `inner` until it is released.
        let out = f(unsafe { &mut *self.inner.get() });
        self.locked.store(false, Ordering::Release);
        out
    }
}

impl Inner {
    fn mask(&self) -> usize {
        (1usize << self.log2) - 1
    }

    /// The slot at `i` (`slots` is mapped; `i` is masked by every caller).
    fn get(&self, i: usize) -> Slot {
        debug_assert!(!self.slots.is_null() && i <= self.mask());
        // SAFETY: the table is mapped with `mask + 1` slots and `i <= mask`.
        unsafe { *self.slots.add(i) }
    }

    /// Writes the slot at `i` (as [`Inner::get`]).
    fn set(&mut self, i: usize, slot: Slot) {
        debug_assert!(!self.slots.is_null() && i <= self.mask());
        // SAFETY: as in `get`; `&mut self` means the shard's lock is held.
        unsafe { *self.slots.add(i) = slot }
    }

    /// The index of `key`'s slot, if present.
    fn find(&self, key: usize, h: u64) -> Option<usize> {
        if self.slots.is_null() {
            return None;
        }
        let mask = self.mask();
        let mut i = home(h, self.log2);
        loop {
            let slot = self.get(i);
            if slot.key == key {
                return Some(i);
            }
            if slot.key == 0 {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Removes `key` (hash `h`) and returns its value, if present.
    fn take(&mut self, key: usize, h: u64) -> Option<u64> {
        let i = self.find(key, h)?;
        let old = self.get(i).value;
        self.remove_at(i);
        Some(old)
    }

    /// Puts `key` in the first free slot of its probe sequence (the key is known to be absent
    /// and the table to have room).
    fn place(&mut self, key: usize, value: u64) {
        let mask = self.mask();
        let mut i = home(hash(key), self.log2);
        loop {
            if self.get(i).key == 0 {
                self.set(i, Slot { key, value });
                return;
            }
            i = (i + 1) & mask;
        }
    }

    /// Empties slot `i` and shifts later members of its cluster back into the gap, so that every
    /// key stays reachable from its home slot without tombstones (Knuth's algorithm R).
    fn remove_at(&mut self, mut i: usize) {
        let mask = self.mask();
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let moved = self.get(j);
            if moved.key == 0 {
                break;
            }
            let k = home(hash(moved.key), self.log2);
            // The entry at j may stay when its home k lies cyclically in (i, j].
            let stays = if i <= j { i < k && k <= j } else { i < k || k <= j };
            if !stays {
                self.set(i, moved);
                i = j;
            }
        }
        self.set(i, Slot { key: 0, value: 0 });
        self.len -= 1;
    }

    /// Adds to `generation`'s live counts: kept in the shard when it is the newest generation the
    /// shard has seen (a cycle's own allocations and frees), else added to the process's counts
    /// (a free of an older block, the runner's bookkeeping). A newer generation first moves what
    /// the shard kept for the one before into the process's counts.
    fn charge(&mut self, generation: u32, bytes: i64, allocations: i64) {
        if generation >= RUN_FROM.load(Ordering::Relaxed) {
            self.run_bytes += bytes;
        }
        let p = &mut self.pending;
        if generation == p.generation {
            p.bytes += bytes;
            p.allocations += allocations;
            return;
        }
        if generation < p.generation {
            add_counts(generation, bytes, allocations);
            return;
        }
        if p.bytes != 0 || p.allocations != 0 {
            // Before the counts move: a reader that summed this shard's share and then reads the
            // process's counts with the share in them sees the flush and reads again.
            FLUSHES.fetch_add(1, Ordering::SeqCst);
            add_counts(p.generation, p.bytes, p.allocations);
        }
        *p = Pending { generation, bytes, allocations };
    }

    /// Rebuilds the table with `1 << log2` slots. False when `mmap` failed (the old table is kept).
    fn resize(&mut self, log2: u32, mapped: &AtomicU64) -> bool {
        let bytes = (1usize << log2) * std::mem::size_of::<Slot>();
        let Ok(fresh) = map_zeroed(bytes) else {
            return false;
        };
        let (pending, run_bytes) = (self.pending, self.run_bytes);
        let old = std::mem::replace(self, Inner { slots: fresh.cast::<Slot>(), log2, len: 0, pending, run_bytes });
        mapped.fetch_add(bytes as u64, Ordering::Relaxed);
        if !old.slots.is_null() {
            for i in 0..=old.mask() {
                let slot = old.get(i);
                if slot.key != 0 {
                    self.place(slot.key, slot.value);
                    self.len += 1;
                }
            }
            let old_bytes = (1usize << old.log2) * std::mem::size_of::<Slot>();
            // SAFETY: `old.slots` was mapped by this function with exactly `old_bytes`, and no
            // reference into it survives (the lock is held; every entry was copied above).
            unsafe { libc::munmap(old.slots.cast(), old_bytes) };
            mapped.fetch_sub(old_bytes as u64, Ordering::Relaxed);
        }
        true
    }
}

/// Live bytes and allocations per generation, less what the shards keep for their newest
/// ([`Pending`]): `[bytes, allocations]` at index `generation`, in an anonymous mapping of
/// address space for every possible generation (256 MiB reserved, 16 B per generation touched).
static COUNTS: AtomicPtr<[AtomicI64; 2]> = AtomicPtr::new(std::ptr::null_mut());
const COUNTS_LEN: usize = MAX_GENERATION as usize + 1;
/// Moves of a shard's share into [`COUNTS`], so far: a reader that saw none while it read has
/// counted every share once.
static FLUSHES: AtomicU64 = AtomicU64::new(0);

fn counts() -> Option<&'static [[AtomicI64; 2]]> {
    let p = COUNTS.load(Ordering::Acquire);
    // SAFETY: when non-null, `p` is a mapping of COUNTS_LEN zero-initialised pairs that is never
    // unmapped (see `map_counts`); atomics make shared access sound.
    (!p.is_null()).then(|| unsafe { std::slice::from_raw_parts(p, COUNTS_LEN) })
}

/// Maps the counts (once; before the hooks go in). The error is the OS's errno.
pub(crate) fn map_counts() -> Result<(), i32> {
    if !COUNTS.load(Ordering::Acquire).is_null() {
        return Ok(());
    }
    let bytes = COUNTS_LEN * std::mem::size_of::<[AtomicI64; 2]>();
    // Zeroed pages are valid atomics.
    let p = map_zeroed(bytes)?;
    COUNTS.store(p.cast(), Ordering::Release);
    Ok(())
}

/// Adds to `generation`'s counts in the process's array (what no shard keeps).
pub(crate) fn add_counts(generation: u32, bytes: i64, allocations: i64) {
    if let Some(c) = counts() {
        let pair = &c[generation.min(MAX_GENERATION) as usize];
        // Release: a reader that sees a flush's counts here sees the flush counted first.
        pair[0].fetch_add(bytes, Ordering::Release);
        pair[1].fetch_add(allocations, Ordering::Release);
    }
}

/// Live `(bytes, allocations)` of a generation older than the one every shard was last flushed
/// to ([`Table::flush_to`]): no shard keeps any of it.
pub(crate) fn live_before(generation: u32) -> (i64, i64) {
    counts().map_or((0, 0), |c| {
        let pair = &c[generation.min(MAX_GENERATION) as usize];
        (pair[0].load(Ordering::Acquire), pair[1].load(Ordering::Acquire))
    })
}

impl Table {
    #[allow(clippy::declare_interior_mutable_const)] // copied into each static's initialiser
    const fn new() -> Table {
        Table { shards: [EMPTY_SHARD; SHARDS], broken: AtomicBool::new(false), mapped_bytes: AtomicU64::new(0) }
    }

    /// Records `value` for `key`. Returns the value it replaced when `key` was already present
    /// (a free the hooks never saw), so the caller can correct its counts; `Err` when the table
    /// could not grow (it is then marked broken).
    pub(crate) fn insert(&self, key: usize, value: u64) -> Result<Option<u64>, ()> {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| self.put(t, key, h, value))
    }

    /// Forgets `key`; returns what was recorded for it, if anything.
    pub(crate) fn remove(&self, key: usize) -> Option<u64> {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| t.take(key, h))
    }

    /// [`Table::insert`] in shard `t`, its lock held (`h`: the key's hash).
    fn put(&self, t: &mut Inner, key: usize, h: u64, value: u64) -> Result<Option<u64>, ()> {
        if let Some(i) = t.find(key, h) {
            let old = t.get(i).value;
            t.set(i, Slot { key, value });
            return Ok(Some(old));
        }
        let needs = if t.slots.is_null() { Some(MIN_SLOTS_LOG2) } else { None }
            .or_else(|| (4 * (t.len + 1) > 3 << t.log2).then_some(t.log2 + 1));
        if let Some(log2) = needs {
            if !t.resize(log2, &self.mapped_bytes) {
                self.broken.store(true, Ordering::Relaxed);
                return Err(());
            }
        }
        t.place(key, value);
        t.len += 1;
        Ok(None)
    }

    /// Records `entry` for `key`, as [`Table::insert`] does, and charges its size to its
    /// generation's live counts (and takes the entry it replaced off its own), under the lock the
    /// insert takes anyway. For the record of live allocations ([`TABLE`]).
    pub(crate) fn insert_counted(&self, key: usize, entry: Entry) -> Result<Option<Entry>, ()> {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| {
            let old = self.put(t, key, h, entry.pack())?.map(Entry::unpack);
            if let Some(o) = old {
                t.charge(o.generation, -(o.size as i64), -1);
            }
            t.charge(entry.generation, entry.size as i64, 1);
            Ok(old)
        })
    }

    /// Forgets `key`, as [`Table::remove`] does, and takes its size off its generation's live
    /// counts, under the same lock.
    pub(crate) fn remove_counted(&self, key: usize) -> Option<Entry> {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| {
            let old = Entry::unpack(t.take(key, h)?);
            t.charge(old.generation, -(old.size as i64), -1);
            Some(old)
        })
    }

    /// Moves what every shard keeps into the process's counts and makes `generation` the newest
    /// each has seen: from then on a change to an older generation's counts goes straight to the
    /// process's counts ([`live_before`]: exact without a shard's lock).
    pub(crate) fn flush_to(&self, generation: u32) {
        for shard in &self.shards {
            shard.with(|t| {
                let p = t.pending;
                if p.generation < generation {
                    if p.bytes != 0 || p.allocations != 0 {
                        FLUSHES.fetch_add(1, Ordering::SeqCst);
                        add_counts(p.generation, p.bytes, p.allocations);
                    }
                    t.pending = Pending { generation, bytes: 0, allocations: 0 };
                }
            });
        }
    }

    /// Live `(bytes, allocations)` of `generation`: the process's counts and what each shard
    /// keeps for it, read again while a shard moved its share meanwhile (rare: once per shard
    /// and generation). A generation older than the one of the last [`Table::flush_to`] is in the
    /// process's counts alone: [`live_before`].
    pub(crate) fn live(&self, generation: u32) -> (i64, i64) {
        let generation = generation.min(MAX_GENERATION);
        loop {
            let flushes = FLUSHES.load(Ordering::SeqCst);
            let (mut bytes, mut allocations) = (0i64, 0i64);
            for shard in &self.shards {
                shard.with(|t| {
                    if t.pending.generation == generation {
                        bytes += t.pending.bytes;
                        allocations += t.pending.allocations;
                    }
                });
            }
            if let Some(c) = counts() {
                let pair = &c[generation as usize];
                bytes += pair[0].load(Ordering::Acquire);
                allocations += pair[1].load(Ordering::Acquire);
            }
            if FLUSHES.load(Ordering::SeqCst) == flushes {
                return (bytes, allocations);
            }
        }
    }

    /// Starts counting a run's live bytes from generation `from` (not yet current: nothing of it
    /// or later is live, so the count starts at zero and stays exact).
    pub(crate) fn start_run_bytes(&self, from: u32) {
        RUN_FROM.store(u32::MAX, Ordering::Relaxed);
        for shard in &self.shards {
            shard.with(|t| t.run_bytes = 0);
        }
        RUN_FROM.store(from, Ordering::Relaxed);
    }

    /// What the run's generations ([`RUN_FROM`] on) hold now, in bytes: each shard read under its
    /// lock, one after another.
    pub(crate) fn run_live(&self) -> i64 {
        self.shards.iter().map(|s| s.with(|t| t.run_bytes)).sum()
    }

    /// What is recorded for `key`.
    pub(crate) fn get(&self, key: usize) -> Option<u64> {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| t.find(key, h).map(|i| t.get(i).value))
    }

    /// Appends to `out` every `(key, value)` whose value `keep` accepts, one shard at a time under
    /// its lock, without allocating: it stops at `out`'s capacity and returns false when entries
    /// were left out (the caller reserves room first: [`Table::len`] plus what may be added
    /// meanwhile). `keep` must not allocate either.
    pub(crate) fn scan(&self, keep: impl Fn(u64) -> bool, out: &mut Vec<(usize, u64)>) -> bool {
        let mut complete = true;
        self.visit(keep, |key, value| {
            if out.len() == out.capacity() {
                complete = false;
            } else {
                out.push((key, value));
            }
        });
        complete
    }

    /// Calls `f` with every `(key, value)` whose value `keep` accepts, one shard at a time under
    /// its lock. Neither may allocate (an allocating thread may wait on the lock meanwhile).
    pub(crate) fn visit(&self, keep: impl Fn(u64) -> bool, mut f: impl FnMut(usize, u64)) {
        for shard in &self.shards {
            shard.with(|t| {
                if t.slots.is_null() {
                    return;
                }
                for i in 0..=t.mask() {
                    let slot = t.get(i);
                    if slot.key != 0 && keep(slot.value) {
                        f(slot.key, slot.value);
                    }
                }
            });
        }
    }

    /// Whether `key` is recorded.
    pub(crate) fn contains(&self, key: usize) -> bool {
        let h = hash(key);
        self.shards[shard_of(h)].with(|t| t.find(key, h).is_some())
    }

    /// Marks the table broken, as a failed `mmap` does.
    pub(crate) fn mark_broken(&self) {
        self.broken.store(true, Ordering::Relaxed);
    }

    /// Whether an `mmap` failed: the record missed allocations and is not exact any more.
    pub(crate) fn broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// Allocations recorded, over all shards (each read under its lock; not one instant).
    pub(crate) fn len(&self) -> usize {
        self.shards.iter().map(|s| s.with(|t| t.len)).sum()
    }

    /// Bytes of address space mapped for the slots.
    /// Bytes of its slots' mappings that are resident (pages touched), all shards together.
    pub(crate) fn resident_bytes(&self) -> u64 {
        self.shards
            .iter()
            .map(|shard| {
                shard.with(|inner| {
                    if inner.slots.is_null() {
                        0
                    } else {
                        resident_of(inner.slots.cast(), (1usize << inner.log2) * std::mem::size_of::<Slot>())
                    }
                })
            })
            .sum()
    }

    pub(crate) fn mapped_bytes(&self) -> u64 {
        self.mapped_bytes.load(Ordering::Relaxed)
    }

    /// Takes every shard's lock (before `fork`).
    pub(crate) fn lock_all(&self) {
        for shard in &self.shards {
            spin_lock(&shard.locked);
        }
    }

    /// Releases every shard's lock (after `fork`, in the parent and the child).
    pub(crate) fn unlock_all(&self) {
        for shard in &self.shards {
            shard.locked.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private table for a test (the static one is the process's).
    fn table() -> &'static Table {
        Box::leak(Box::new(Table::new()))
    }

    fn entry(size: u64, generation: u32) -> u64 {
        Entry { size, generation, stacked: false, chained: false }.pack()
    }

    #[test]
    fn entries_pack_size_generation_stacked_and_chained() {
        let e = Entry { size: 12_345_678, generation: 4_000_000, stacked: true, chained: true };
        assert_eq!(Entry::unpack(e.pack()), e);
        let f = Entry { size: 1 << 36, generation: 0, stacked: false, chained: false };
        assert_eq!(Entry::unpack(f.pack()), f);
        let g = Entry { size: 16, generation: MAX_GENERATION, stacked: false, chained: true };
        assert_eq!(Entry::unpack(g.pack()), g);
        let huge = Entry { size: u64::MAX, generation: u32::MAX, stacked: false, chained: false };
        assert_eq!(
            Entry::unpack(huge.pack()),
            Entry { size: MAX_SIZE, generation: MAX_GENERATION, stacked: false, chained: false }
        );
    }

    #[test]
    fn chains_pack_and_classes_are_quarter_doublings() {
        let c = Chain { last: 4_000_000, before: 17, peak_class: 151, rise: 4 };
        assert_eq!(Chain::unpack(c.pack()), c);
        assert_eq!(
            Chain::unpack(Chain { last: MAX_GENERATION, before: MAX_GENERATION, peak_class: 255, rise: 255 }.pack())
                .rise,
            255
        );
        assert_eq!(
            (Chain::class_of(1024), Chain::class_of(1280), Chain::class_of(1535), Chain::class_of(2048)),
            (40, 41, 41, 44)
        );
        assert_eq!((Chain::class_of(1), Chain::class_of(2), Chain::class_of(3)), (0, 4, 6));
        assert_eq!(Chain::class_of(1 << 37), 148);
        assert!((c.factor() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn insert_remove_through_growth_then_reuse() {
        let t = table();
        let keys: Vec<usize> = (1..=200_000usize).map(|i| i * 48).collect();
        for (n, &k) in keys.iter().enumerate() {
            assert_eq!(t.insert(k, entry(n as u64, 3)), Ok(None));
        }
        assert_eq!(t.len(), keys.len());
        // At most 43 bytes of slots per live entry at the peak, above the shards' minimum.
        assert!(t.mapped_bytes() <= 43 * keys.len() as u64 + (SHARDS << MIN_SLOTS_LOG2) as u64 * 16);
        assert!(t.contains(keys[7]) && !t.contains(1));
        assert_eq!(t.insert(keys[8], entry(5, 5)), Ok(Some(entry(8, 3))));
        let mut young = Vec::with_capacity(t.len());
        assert!(t.scan(|v| Entry::unpack(v).generation == 5, &mut young));
        assert_eq!(young, vec![(keys[8], entry(5, 5))]);
        let mut short = Vec::with_capacity(10);
        assert!(!t.scan(|_| true, &mut short), "a scan stops at the capacity it was given");
        assert_eq!(short.len(), 10);
        for (n, &k) in keys.iter().enumerate().skip(1000) {
            let expected = if n == 8 { 5 } else { n as u64 };
            assert_eq!(t.remove(k).map(|v| Entry::unpack(v).size), Some(expected), "key {k}");
            assert_eq!(t.remove(k), None);
        }
        assert_eq!(t.len(), 1000);
        assert!(keys[..1000].iter().all(|&k| t.contains(k)));
        // Kept at its peak (no shrinking), and reused by the next wave without growing.
        let peak = t.mapped_bytes();
        for &k in &keys[1000..] {
            t.insert(k, entry(1, 4)).unwrap();
        }
        assert_eq!(t.mapped_bytes(), peak);
        assert_eq!(t.len(), keys.len());
        assert!(!t.broken());
    }

    /// Counts kept in the shards and moved to the process's as generations advance: a reader
    /// never sees a share twice or not at all, and every generation ends at zero.
    #[test]
    fn counts_kept_in_the_shards_read_once_while_generations_advance() {
        map_counts().unwrap();
        let t = table();
        // Generations no other test of this process uses.
        const FROM: u32 = 1_000_000;
        let now = AtomicU64::new(u64::from(FROM));
        let done = AtomicBool::new(false);
        const THREADS: usize = 4;
        std::thread::scope(|s| {
            for thread in 0..THREADS {
                let (now, done) = (&now, &done);
                s.spawn(move || {
                    let mut i = 0usize;
                    while !done.load(Ordering::Relaxed) {
                        let generation = now.load(Ordering::Relaxed) as u32;
                        let key = ((i * THREADS + thread) + 1) * 16;
                        let e = Entry { size: 16, generation, stacked: false, chained: false };
                        assert_eq!(t.insert_counted(key, e), Ok(None));
                        assert_eq!(t.remove_counted(key), Some(e));
                        i += 1;
                    }
                });
            }
            for _ in 0..2_000 {
                let g = now.fetch_add(1, Ordering::Relaxed) as u32;
                for back in 0..3 {
                    let (bytes, allocations) = t.live(g.saturating_sub(back));
                    // Each thread holds at most one block of 16 B at a time.
                    assert!((0..=16 * THREADS as i64).contains(&bytes), "generation {g}: {bytes} B");
                    assert!((0..=THREADS as i64).contains(&allocations), "generation {g}: {allocations}");
                }
            }
            done.store(true, Ordering::Relaxed);
        });
        let last = now.load(Ordering::Relaxed) as u32;
        assert!((FROM..=last).all(|g| t.live(g) == (0, 0)));
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn threads_on_shared_shards_keep_every_entry() {
        let t = table();
        std::thread::scope(|s| {
            for thread in 0..4usize {
                s.spawn(move || {
                    for round in 0..20 {
                        let keys: Vec<usize> =
                            (0..5_000).map(|i| ((i * 4 + thread) + 1) * 16 + round * 1_000_000).collect();
                        for &k in &keys {
                            t.insert(k, entry(16, thread as u32)).unwrap();
                        }
                        for &k in &keys {
                            assert_eq!(t.remove(k), Some(entry(16, thread as u32)));
                        }
                    }
                });
            }
        });
        assert_eq!(t.len(), 0);
    }
}
