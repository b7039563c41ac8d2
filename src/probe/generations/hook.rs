//! jemalloc's allocation hooks (`experimental.hooks.install`) and the live counts per generation
//! they keep.
//!
//! jemalloc calls the hooks from its public entry points (malloc, calloc, posix_memalign,
//! aligned_alloc, realloc, free, the `*allocx` family, sized frees), on the allocating thread,
//! before a freed pointer is given back (so no other thread can have been handed the same
//! address yet), and never from inside a hook (its per-thread `in_hook` flag). Installing one
//! puts every thread on jemalloc's slow path, which is where the hooks are called; that path is
//! the cost (docs/generations.md has the figures).
//!
//! What each hook does, in this order, with no allocation and one shard lock at a time:
//! - alloc: nothing for a failed call (a null result, or `posix_memalign`'s error code, with
//!   which jemalloc passes the caller's `*memptr` unset); usable size (`malloc_usable_size`, a
//!   radix-tree lookup); when that size is watched and the allocation is a cycle's, its stack
//!   (`capture`, before any lock); record (address -> size, generation, stacked, chained) and
//!   add to the generation's counts under the same shard lock ([`TABLE`]'s shards keep what they
//!   owe the newest generation, so a cycle's allocations write no cache line every thread shares);
//! - dalloc: remove the record, subtract from the generation that made it, and note the age at
//!   which a block was given back, for its size class and, when its stack was taken, for its stack
//!   (the turnover windows the rule judges by), unless the run stopped judging (while the store
//!   lets go at its end: teardown says nothing of how a stack turns over); an address never
//!   recorded (allocated before the hooks) is subtracted from [`BEFORE`] by its usable size;
//! - expand (a realloc that stayed in place, growing or shrinking): treated like a realloc that
//!   moved, which jemalloc reports as an alloc of the new block and a dalloc of the old: the
//!   old size leaves its generation and the new size is charged to the current one. In place or
//!   moved is jemalloc's choice, so the record must not depend on it. An expand that did not
//!   resize (an `xallocx` that could not, a realloc within its size class) changes nothing: the
//!   block keeps its generation.
//! - a realloc (either way) that grows a block an earlier generation of the run made starts or
//!   continues its chain ([`super::table::Chain`]: its last rise above its peak, the rise before),
//!   and takes the stack of such a growth in a judged cycle whatever its size. A realloc's free of
//!   the old block is not a free: the block moved, it was not given back.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use super::table::{add_counts, Chain, Entry, CHAIN_OF, LARGE_BLOCK, LARGE_OF, STACK_OF, TABLE};
use super::{capture, sites};

/// Allocations that existed before the hooks were installed (counted, not recorded: their
/// count starts at what jemalloc reported then and only goes down).
pub(crate) const BEFORE: u32 = 0;
/// leakcheck's own bookkeeping: samples, the ledger's records, verdicts, reports.
pub(crate) const RUNNER: u32 = 1;
/// The first generation [`advance`] hands out; everything after installation and before it
/// belongs to it.
pub(crate) const FIRST: u32 = super::table::FIRST;

/// The generation new allocations are charged to.
static CURRENT: AtomicU32 = AtomicU32::new(FIRST);
/// The first generation whose growths of older blocks take their stacks (the run's first judged
/// cycle); none until a run sets it.
static GROWTHS_FROM: AtomicU32 = AtomicU32::new(u32::MAX);
/// The run's first generation (its set-up): chains start from blocks it or a later one made, and
/// a block made before it is aged from it. Before any run: the first generation.
static RUN_FROM: AtomicU32 = AtomicU32::new(FIRST);
/// Whether frees are noted as turnover (on while a run's cycles go, off while the store lets go).
static JUDGING: AtomicBool = AtomicBool::new(false);

/// Takes the stacks of growths of blocks kept across cycles from generation `from` on.
pub(crate) fn count_growths_from(from: u32) {
    GROWTHS_FROM.store(from, Ordering::Relaxed);
}

/// Starts a run at generation `setup`: ages and chains count from it, frees are noted.
pub(crate) fn start_run(setup: u32) {
    RUN_FROM.store(setup, Ordering::Relaxed);
    capture::reset_run();
    JUDGING.store(true, Ordering::Relaxed);
}

/// Stops noting frees as turnover (the store lets go of what it keeps: teardown).
pub(crate) fn stop_judging() {
    JUDGING.store(false, Ordering::Relaxed);
}

/// jemalloc's hook kinds (hook.h: `hook_alloc_posix_memalign`, `hook_alloc_realloc`,
/// `hook_alloc_rallocx`, `hook_dalloc_realloc`, `hook_dalloc_rallocx`).
const ALLOC_POSIX_MEMALIGN: libc::c_int = 1;
const ALLOC_REALLOC: libc::c_int = 8;
const ALLOC_RALLOCX: libc::c_int = 9;
const DALLOC_REALLOC: libc::c_int = 3;
const DALLOC_RALLOCX: libc::c_int = 4;

/// The generation an allocation made now, on this thread, belongs to.
fn charged_to() -> u32 {
    if crate::bookkeeping::in_bookkeeping() {
        RUNNER
    } else {
        CURRENT.load(Ordering::Relaxed)
    }
}

fn usable_size(p: *mut c_void) -> u64 {
    // SAFETY: `p` is a live allocation of this jemalloc (the hooks are called before it is
    // freed); malloc_usable_size reads jemalloc's metadata and does not allocate.
    unsafe { tikv_jemalloc_sys::malloc_usable_size(p) as u64 }
}

/// The chain of a block that a realloc makes `size` bytes from `old` (its record) at `from`, in
/// `generation`; and whether this realloc is a rise a judged cycle made (whose stack is taken).
/// `None`: no chain (not a growth of an earlier generation's block, nor of a chained one).
fn chain_of(old: Option<Entry>, from: usize, size: u64, generation: u32) -> (Option<Chain>, bool) {
    let Some(old) = old else { return (None, false) };
    let class = Chain::class_of(size);
    let mut chain = if old.chained { CHAIN_OF.remove(from).map(Chain::unpack) } else { None };
    let run_from = RUN_FROM.load(Ordering::Relaxed);
    if chain.is_none() && size > old.size && old.generation < generation && old.generation >= FIRST.max(run_from) {
        let peak_class = Chain::class_of(old.size);
        chain = Some(Chain { last: old.generation, before: old.generation, peak_class, rise: 0 });
    }
    let Some(mut c) = chain else { return (None, false) };
    let rose = class > c.peak_class;
    if rose {
        let added = class - c.peak_class;
        if generation == c.last {
            // Another growth in the same generation: one rise, larger.
            c.rise = c.rise.saturating_add(added);
        } else {
            c.before = c.last;
            c.last = generation;
            c.rise = added;
        }
        c.peak_class = class;
    }
    (Some(c), rose && generation >= GROWTHS_FROM.load(Ordering::Relaxed))
}

/// Records the block at `p` of usable `size`; `old` is the record of the block a realloc made it
/// from, at address `from`. A realloc that did not resize keeps the old block's generation and
/// stack. A stacked block is added to its stack's live bytes, weighted by its sampling period
/// (`sites`).
fn record(p: *mut c_void, size: u64, old: Option<Entry>, from: usize) {
    let same = old.filter(|o| o.size == size);
    let generation = same.map_or_else(charged_to, |o| o.generation);
    let (chain, rose) = if generation >= FIRST { chain_of(old, from, size, generation) } else { (None, false) };
    let kept = same.filter(|o| o.stacked).and_then(|_| STACK_OF.get(from));
    let entry = match kept {
        Some(packed) => Some(packed),
        None if generation >= FIRST => {
            // A growth of a kept block is stacked whatever its class's sampling: weight 1.
            let weight = if rose { 1 } else { capture::watched(size) };
            (weight > 0).then(|| sites::pack(capture::capture(generation), weight))
        }
        None => None,
    };
    let key = p as usize;
    // The stack entry this address had, when its free was never seen.
    let mut stale = None;
    let stacked = match entry.map(|packed| (packed, STACK_OF.insert(key, packed))) {
        Some((packed, Ok(previous))) => {
            stale = previous;
            let (id, weight) = sites::unpack(packed);
            sites::made(id, weight, size);
            true
        }
        _ => false,
    };
    let chained = chain.is_some_and(|c| CHAIN_OF.insert(key, c.pack()).is_ok());
    match TABLE.insert_counted(key, Entry { size, generation, stacked, chained }) {
        Ok(None) => {}
        // An address already recorded: its free was never seen. Its old entry is gone now, and
        // off its generation's counts and its stack's bytes.
        Ok(Some(old)) => {
            if old.stacked && !stacked {
                stale = STACK_OF.remove(key);
            }
            if let Some((id, weight)) = stale.filter(|_| old.stacked).map(sites::unpack) {
                sites::gone(id, weight, old.size, None);
            }
            if old.chained && !chained {
                CHAIN_OF.remove(key);
            }
            if old.size >= LARGE_BLOCK && size < LARGE_BLOCK {
                LARGE_OF.remove(key);
            }
        }
        // The table could not grow: the record is marked broken and stops being exact.
        Err(()) => return,
    }
    // A table that could not grow marks itself broken: the untouched pages go unmeasured.
    if size >= LARGE_BLOCK {
        let _ = LARGE_OF.insert(key, size);
    }
}

/// Removes the record of the block at `p`, and returns it. `moved`: a realloc moved the block
/// (it was not given back).
fn forget(p: *mut c_void, moved: bool, size_if_unknown: impl FnOnce() -> u64) -> Option<Entry> {
    match TABLE.remove_counted(p as usize) {
        Some(old) => {
            let stack = if old.stacked { STACK_OF.remove(p as usize).map(sites::unpack) } else { None };
            // Given back (not moved) in a judged run: its age, from its making or the run's start.
            let given_back = !moved && old.generation >= FIRST && JUDGING.load(Ordering::Relaxed);
            let age = given_back.then(|| {
                let made = old.generation.max(RUN_FROM.load(Ordering::Relaxed));
                CURRENT.load(Ordering::Relaxed).saturating_sub(made)
            });
            match stack {
                Some((id, weight)) => sites::gone(id, weight, old.size, age),
                // A block its class's watch began after: what a site's stacked blocks replace.
                None if old.generation >= FIRST
                    && capture::watched_since(old.size).is_some_and(|since| old.generation < since) =>
                {
                    sites::drained(old.size, age, capture::period_of(old.size))
                }
                None => {}
            }
            let stack = stack.map(|(id, _)| id);
            if old.chained && !moved {
                CHAIN_OF.remove(p as usize);
            }
            if old.size >= LARGE_BLOCK {
                LARGE_OF.remove(p as usize);
            }
            if let Some(age) = age {
                // For the windows.
                capture::note_free(old.size, stack, age);
            }
            Some(old)
        }
        None => {
            add_counts(BEFORE, -(size_if_unknown() as i64), -1);
            None
        }
    }
}

extern "C" fn on_alloc(_extra: *mut c_void, kind: libc::c_int, result: *mut c_void, raw: usize, args: *mut usize) {
    // A failed call: no block. posix_memalign reports its error code in `raw` and passes the
    // caller's `*memptr`, which it did not set.
    if result.is_null() || (kind == ALLOC_POSIX_MEMALIGN && raw != 0) {
        return;
    }
    // A realloc that moved: the old block is still recorded (jemalloc calls this hook before the
    // dalloc hook of the old block), at `args[0]` (0 for a realloc of NULL).
    let (old, from) = if (kind == ALLOC_REALLOC || kind == ALLOC_RALLOCX) && !args.is_null() {
        // SAFETY: jemalloc passes the call's arguments, `args_raw[3]`, the pointer first.
        let from = unsafe { *args };
        (if from == 0 { None } else { TABLE.get(from).map(Entry::unpack) }, from)
    } else {
        (None, 0)
    };
    record(result, usable_size(result), old, from);
}

extern "C" fn on_dalloc(_extra: *mut c_void, kind: libc::c_int, address: *mut c_void, args: *mut usize) {
    if address.is_null() {
        return;
    }
    // The free half of a realloc that moved (a realloc to size 0 that frees has size 0).
    let moved = (kind == DALLOC_REALLOC || kind == DALLOC_RALLOCX)
        && !args.is_null()
        // SAFETY: jemalloc passes the call's arguments, `args_raw[3]`: pointer, size, flags.
        && unsafe { *args.add(1) } != 0;
    forget(address, moved, || usable_size(address));
}

#[allow(clippy::too_many_arguments)] // jemalloc's signature
extern "C" fn on_expand(
    _extra: *mut c_void,
    _kind: libc::c_int,
    address: *mut c_void,
    old_usize: usize,
    new_usize: usize,
    _raw: usize,
    _args: *mut usize,
) {
    // Not resized (an xallocx that could not, a realloc within its class): the block is as it
    // was, and keeps its generation.
    if address.is_null() || old_usize == new_usize {
        return;
    }
    let old = forget(address, true, || old_usize as u64);
    record(address, new_usize as u64, old, address as usize);
}

/// jemalloc's `hooks_t`, field for field.
#[repr(C)]
struct Hooks {
    alloc: extern "C" fn(*mut c_void, libc::c_int, *mut c_void, usize, *mut usize),
    dalloc: extern "C" fn(*mut c_void, libc::c_int, *mut c_void, *mut usize),
    expand: extern "C" fn(*mut c_void, libc::c_int, *mut c_void, usize, usize, usize, *mut usize),
    extra: *mut c_void,
}

/// Why the hooks could not be installed.
#[derive(Debug)]
pub(crate) enum InstallError {
    /// The counts' mapping failed (errno).
    Map(i32),
    /// jemalloc refused the hook (its code: ENOENT when the control does not exist, EAGAIN when
    /// its hook slots are full).
    Mallctl(i32),
}

/// A handle jemalloc returned for an installed hook (for `experimental.hooks.remove`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Installed(usize);

/// Installs the hooks. The caller makes sure this happens once per process.
pub(crate) fn install() -> Result<Installed, InstallError> {
    super::table::map_counts().map_err(InstallError::Map)?;
    guard_fork();
    let mut hooks = Hooks { alloc: on_alloc, dalloc: on_dalloc, expand: on_expand, extra: std::ptr::null_mut() };
    let mut handle: *mut c_void = std::ptr::null_mut();
    let mut len = std::mem::size_of::<*mut c_void>();
    // SAFETY: the control reads a `hooks_t` (our `Hooks` has its layout: three function pointers
    // and a void pointer) and writes a `void *` handle into `handle`, whose size `len` gives.
    let code = unsafe {
        tikv_jemalloc_sys::mallctl(
            c"experimental.hooks.install".as_ptr(),
            (&mut handle as *mut *mut c_void).cast(),
            &mut len,
            (&mut hooks as *mut Hooks).cast(),
            std::mem::size_of::<Hooks>(),
        )
    };
    if code != 0 {
        return Err(InstallError::Mallctl(code));
    }
    Ok(Installed(handle as usize))
}

extern "C" fn before_fork() {
    TABLE.lock_all();
    STACK_OF.lock_all();
    CHAIN_OF.lock_all();
    LARGE_OF.lock_all();
    capture::lock_for_fork();
}

extern "C" fn after_fork() {
    capture::unlock_after_fork();
    LARGE_OF.unlock_all();
    CHAIN_OF.unlock_all();
    STACK_OF.unlock_all();
    TABLE.unlock_all();
}

/// Takes every shard's lock across `fork` (in the parent and released in both), once.
fn guard_fork() {
    static DONE: std::sync::Once = std::sync::Once::new();
    DONE.call_once(|| {
        // SAFETY: the handlers are plain functions that only touch the static tables' atomics.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
    });
}

/// Removes installed hooks (used when they turn out to see nothing of C `malloc`).
pub(crate) fn remove(installed: Installed) {
    let mut handle = installed.0 as *mut c_void;
    // SAFETY: the control reads the `void *` handle that `install` got from jemalloc.
    unsafe {
        tikv_jemalloc_sys::mallctl(
            c"experimental.hooks.remove".as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            (&mut handle as *mut *mut c_void).cast(),
            std::mem::size_of::<*mut c_void>(),
        );
    }
}

/// Whether a block from C `malloc` reaches the record (it does not when C `malloc` is another
/// allocator than the jemalloc whose hooks were installed).
pub(crate) fn c_malloc_is_recorded() -> bool {
    // SAFETY: plain C malloc and free of the same block.
    let p = unsafe { libc::malloc(4096) };
    let seen = !p.is_null() && TABLE.contains(p as usize);
    // SAFETY: `p` came from malloc above (or is null, which free accepts).
    unsafe { libc::free(p) };
    seen
}

/// Starts a new generation; returns its number (saturating at the largest a record can hold).
/// The record's shards first move what they keep for the generations before it into the
/// process's counts, so that an older generation's counts are read without their locks
/// ([`live`]). Called between cycles, never by a hook.
pub(crate) fn advance() -> u32 {
    loop {
        let now = CURRENT.load(Ordering::Acquire);
        let next = (now + 1).min(super::table::MAX_GENERATION);
        TABLE.flush_to(next);
        // Release: a reader that sees `next` sees the flushed counts.
        if CURRENT.compare_exchange(now, next, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            return next;
        }
    }
}

/// Starts a run's first generation (its set-up) with the run's live bytes counted from it
/// ([`TABLE`]'s `run_live`); returns its number.
pub(crate) fn begin_run() -> u32 {
    let next = (CURRENT.load(Ordering::Acquire) + 1).min(super::table::MAX_GENERATION);
    TABLE.start_run_bytes(next);
    advance()
}

/// The generation new allocations are charged to now.
pub(crate) fn current() -> u32 {
    CURRENT.load(Ordering::Relaxed)
}

/// Live `(bytes, allocations)` of `generation`.
pub(crate) fn live(generation: u32) -> (i64, i64) {
    if generation < CURRENT.load(Ordering::Acquire) {
        super::table::live_before(generation)
    } else {
        TABLE.live(generation)
    }
}

/// Adds to [`BEFORE`]'s counts (what existed when the hooks went in).
pub(crate) fn add_before(bytes: i64, allocations: i64) {
    add_counts(BEFORE, bytes, allocations);
}
