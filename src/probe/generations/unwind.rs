//! The allocating stack's return addresses, walked from a cache of each return address's frame
//! size, with libgcc's unwinder (`_Unwind_Backtrace`) where the cache cannot answer.
//!
//! libgcc reads each frame's DWARF unwind rules afresh: about 10 µs for a stack of 32 frames,
//! the largest part of what the stacks cost a run (docs/generations.md). On x86-64 a frame's
//! canonical frame address (CFA) is, at a given return address, the stack pointer plus a
//! constant (the frame's size) in every function that does not size its frame at run time, and
//! the caller's return address is the word below the CFA. So each walk libgcc makes teaches the
//! frame size at each return address it passed (`CFA - SP`, where SP is the callee's CFA), and a
//! later stack whose every return address is known is walked with one load per frame.
//!
//! What keeps it exact and safe:
//! - **Learned twice.** A size is used once two of libgcc's walks saw the same one at that
//!   return address; a return address seen with two sizes (a frame sized at run time: `alloca`,
//!   stack realignment, a signal frame) is never used, and stacks through it go to libgcc.
//! - **Only where libgcc went.** A thread walks fast only once libgcc walked one of its stacks to
//!   its end (its outermost frame bounds every read above), and stops where libgcc stopped (the
//!   outermost frame; a return address of 0).
//! - **Anything unknown goes to libgcc**, which also teaches the cache: a return address not
//!   learned, a CFA out of the thread's stack or not aligned.
//! - **Checked against libgcc** ([`verify`]): every stack walked both ways, the walks compared.
//!
//! A stack starts at the return address into the caller of `capture` (the hook's `record`):
//! libgcc's first two frames (its caller here and `capture`) are not kept, so that both walks
//! start from `capture`'s frame, whose size is learned as the others are.
//!
//! Elsewhere than x86-64 Linux every stack is libgcc's.

use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// Frames kept per stack, innermost first (the hook's and jemalloc's own frames included: they
/// are left out when the stack is named).
pub(crate) const MAX_FRAMES: usize = 32;

/// Return addresses of a stack, innermost first, and how many.
pub(crate) struct Frames {
    pub(crate) len: usize,
    pub(crate) ips: [usize; MAX_FRAMES],
}

impl Frames {
    pub(crate) const fn new() -> Self {
        Frames { len: 0, ips: [0; MAX_FRAMES] }
    }
}

/// Slots of the cache: return address (48 bits) << 16 | state (16 bits); 0 is empty. 512 KiB of
/// address space, touched as return addresses are learned.
const SLOTS: usize = 1 << 16;
/// The longest probe sequence looked at: past it, a return address is not cached.
const MAX_PROBES: usize = 16;
/// State bits: the frame size (in 8-byte words) is confirmed by a second walk; the return
/// address was seen with two sizes (never used); libgcc's walk ended at this frame (the
/// outermost).
const CONFIRMED: u64 = 1 << 15;
const DYNAMIC: u64 = 1 << 14;
const OUTERMOST: u64 = 1 << 13;
const WORDS: u64 = OUTERMOST - 1;

static CACHE: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];

/// `capture`'s frame size: its CFA's offset from its stack pointer, learned from libgcc's walks;
/// 0 not yet.
static CAPTURE_FRAME: AtomicUsize = AtomicUsize::new(0);
/// libgcc's frames before the stack kept: `slow` (which called it) and `capture`.
const SKIPPED: usize = 2;
/// Set for good when two walks disagreed on `capture`'s frame size, or libgcc's stack pointer for
/// `capture` was not the one read in it (then every stack is libgcc's).
static BROKEN: AtomicBool = AtomicBool::new(false);
/// Walk every stack both ways and count the differences ([`verify`]).
static VERIFY: AtomicBool = AtomicBool::new(false);
/// Stacks walked from the cache, by libgcc, and (verifying) walked differently.
static FAST: AtomicU64 = AtomicU64::new(0);
static SLOW: AtomicU64 = AtomicU64::new(0);
static MISMATCHED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The stack pointer of this thread's outermost frame, from a walk of libgcc's to the end of
    /// the stack; 0 until one. `const` without a destructor: readable in any hook.
    static STACK_END: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Walks every later stack both ways and counts those that differ (`counts().2`): the check
/// that the cache walks as libgcc does.
pub(crate) fn verify(on: bool) {
    VERIFY.store(on, Ordering::Relaxed);
}

/// Resident bytes of the cache (a static array whose pages are touched as return addresses are
/// learned): the measuring's own memory, outside jemalloc.
pub(crate) fn resident_bytes() -> u64 {
    super::mapped::resident_of_static(&CACHE)
}

/// Stacks walked from the cache, by libgcc, and walked differently while verifying.
pub(crate) fn counts() -> (u64, u64, u64) {
    (FAST.load(Ordering::Relaxed), SLOW.load(Ordering::Relaxed), MISMATCHED.load(Ordering::Relaxed))
}

/// The stack of `capture`'s caller into `out`. Inlined into `capture`, whose stack pointer it
/// reads: `capture` must not be inlined itself.
#[inline(always)]
pub(crate) fn walk(out: &mut Frames) {
    let sp = stack_pointer();
    if !VERIFY.load(Ordering::Relaxed) {
        if fast(sp, out) {
            FAST.fetch_add(1, Ordering::Relaxed);
        } else {
            slow(sp, out);
            SLOW.fetch_add(1, Ordering::Relaxed);
        }
        return;
    }
    let mut quick = Frames::new();
    let walked = fast(sp, &mut quick);
    slow(sp, out);
    if walked {
        FAST.fetch_add(1, Ordering::Relaxed);
        if quick.ips[..quick.len] != out.ips[..out.len] {
            MISMATCHED.fetch_add(1, Ordering::Relaxed);
        }
    } else {
        SLOW.fetch_add(1, Ordering::Relaxed);
    }
}

/// The stack pointer where this is inlined (0 where the cache is not used).
#[inline(always)]
fn stack_pointer() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    {
        let sp: usize;
        // SAFETY: reads a register; touches no memory, stack or flags.
        unsafe { std::arch::asm!("mov {}, rsp", out(reg) sp, options(nomem, nostack, preserves_flags)) };
        sp
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
    {
        0
    }
}

/// The stack from the cache; false where it cannot answer (`out` is then to be filled again).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[inline(always)]
fn fast(sp: usize, out: &mut Frames) -> bool {
    let end = STACK_END.try_with(std::cell::Cell::get).unwrap_or(0);
    let frame = CAPTURE_FRAME.load(Ordering::Relaxed);
    if end == 0 || frame == 0 || sp == 0 || BROKEN.load(Ordering::Relaxed) {
        return false;
    }
    out.len = 0;
    let mut cfa = sp.wrapping_add(frame);
    loop {
        if cfa <= sp || cfa > end || !cfa.is_multiple_of(8) {
            return false;
        }
        // SAFETY: `sp < cfa <= end`: in this thread's stack, between the live stack pointer and
        // the outermost frame libgcc reached (mapped for the thread's life); aligned.
        let ip = unsafe { std::ptr::read((cfa - 8) as *const usize) };
        if ip == 0 {
            return true;
        }
        out.ips[out.len] = ip;
        out.len += 1;
        if out.len == MAX_FRAMES {
            // As many as libgcc's walk keeps: the last one's frame size is not needed.
            return true;
        }
        let state = lookup(ip);
        if state & CONFIRMED == 0 || state & DYNAMIC != 0 {
            return false;
        }
        if state & OUTERMOST != 0 {
            return true;
        }
        cfa = cfa.wrapping_add(((state & WORDS) as usize) * 8);
    }
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn fast(_: usize, _: &mut Frames) -> bool {
    false
}

fn hash(ip: usize) -> usize {
    ((ip as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize
}

/// The state of `ip`'s slot; 0 where it has none.
fn lookup(ip: usize) -> u64 {
    let key = (ip as u64) << 16;
    let mut i = hash(ip);
    for _ in 0..MAX_PROBES {
        let v = CACHE[i].load(Ordering::Relaxed);
        if v == 0 {
            return 0;
        }
        if v & !0xFFFF == key {
            return v & 0xFFFF;
        }
        i = (i + 1) % SLOTS;
    }
    0
}

/// Teaches the cache that a walk passed `ip` with a frame of `size` bytes (`None`: the walk
/// ended at this frame).
fn learn(ip: usize, size: Option<usize>) {
    if ip == 0 || ip >> 48 != 0 {
        return;
    }
    let key = (ip as u64) << 16;
    let seen = match size {
        Some(s) if s.is_multiple_of(8) && (s / 8) as u64 <= WORDS => (s / 8) as u64,
        Some(_) => DYNAMIC,
        None => OUTERMOST,
    };
    let mut i = hash(ip);
    for _ in 0..MAX_PROBES {
        let v = CACHE[i].load(Ordering::Relaxed);
        if v == 0 {
            match CACHE[i].compare_exchange(0, key | seen, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                // Another thread took the slot: look at what it wrote.
                Err(_) => continue,
            }
        }
        if v & !0xFFFF == key {
            let state = v & 0xFFFF;
            let next = if state & DYNAMIC != 0 {
                return;
            } else if state & (WORDS | OUTERMOST) == seen & (WORDS | OUTERMOST) && seen & DYNAMIC == 0 {
                state | CONFIRMED
            } else {
                DYNAMIC
            };
            if next != state {
                // A lost race is another walk's word: the next walk through it updates it.
                let _ = CACHE[i].compare_exchange(v, key | next, Ordering::Relaxed, Ordering::Relaxed);
            }
            return;
        }
        i = (i + 1) % SLOTS;
    }
}

type Trace = extern "C" fn(ctx: *mut c_void, arg: *mut c_void) -> libc::c_int;

extern "C" {
    // libgcc's unwinder (libgcc_s), which Rust's standard library links on Linux.
    fn _Unwind_Backtrace(trace: Trace, arg: *mut c_void) -> libc::c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
    fn _Unwind_GetCFA(ctx: *mut c_void) -> usize;
}

/// `_URC_NO_REASON` (go on), `_URC_NORMAL_STOP` (enough frames), `_URC_END_OF_STACK`.
const GO_ON: libc::c_int = 0;
const STOP: libc::c_int = 4;
const END_OF_STACK: libc::c_int = 5;

/// A libgcc walk: the frames kept (at most [`MAX_FRAMES`] after the [`SKIPPED`] ones), the stack
/// pointer of each (the CFA libgcc reports with a frame is that of the frame it called), and the
/// outermost one (walking on to the end of the stack on a thread whose end is not known yet).
struct Walk {
    len: usize,
    ips: [usize; MAX_FRAMES + SKIPPED],
    cfas: [usize; MAX_FRAMES + SKIPPED],
    to_the_end: bool,
    deepest_cfa: usize,
    /// Where a return address of 0 ended the walk (the outermost frame's caller, as glibc's
    /// thread start ends the stack): the stack pointer libgcc reported with it.
    zero: Option<usize>,
}

extern "C" fn one_frame(ctx: *mut c_void, arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the `Walk` that `slow` passed, alive for the whole unwind.
    let w = unsafe { &mut *arg.cast::<Walk>() };
    // SAFETY: `ctx` is the unwinder's context for this frame.
    let (ip, cfa) = unsafe { (_Unwind_GetIP(ctx), _Unwind_GetCFA(ctx)) };
    w.deepest_cfa = w.deepest_cfa.max(cfa);
    if ip == 0 {
        w.zero = Some(cfa);
        return STOP;
    }
    if w.len < w.ips.len() {
        w.ips[w.len] = ip;
        w.cfas[w.len] = cfa;
        w.len += 1;
        GO_ON
    } else if w.to_the_end {
        GO_ON
    } else {
        STOP
    }
}

/// The stack by libgcc's walk, teaching the cache what it passed. Never inlined: its frame and
/// `capture`'s are the two skipped.
#[inline(never)]
fn slow(sp: usize, out: &mut Frames) {
    let end = STACK_END.try_with(std::cell::Cell::get).unwrap_or(0);
    let mut w = Walk {
        len: 0,
        ips: [0; MAX_FRAMES + SKIPPED],
        cfas: [0; MAX_FRAMES + SKIPPED],
        to_the_end: end == 0,
        deepest_cfa: 0,
        zero: None,
    };
    // SAFETY: `one_frame` only writes into `w`, which outlives the call.
    let code = unsafe { _Unwind_Backtrace(one_frame, (&mut w as *mut Walk).cast()) };
    let kept = w.len.saturating_sub(SKIPPED);
    out.len = kept;
    out.ips[..kept].copy_from_slice(&w.ips[SKIPPED..w.len.max(SKIPPED)]);
    // The end of the stack: libgcc's, or a return address of 0.
    let ended = code == END_OF_STACK || w.zero.is_some();
    if end == 0 && ended {
        let _ = STACK_END.try_with(|e| e.set(w.deepest_cfa));
    }
    if w.len <= SKIPPED || sp == 0 {
        return;
    }
    // libgcc reports with each frame its stack pointer (the CFA of the frame it called): frame
    // i's size is the next one's minus its own. `capture`'s stack pointer is the one read in it;
    // its size is the same at every walk, or no stack is walked from the cache.
    let frame = w.cfas[SKIPPED].wrapping_sub(sp);
    let agreed = w.cfas[SKIPPED - 1] == sp
        && match CAPTURE_FRAME.compare_exchange(0, frame, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => true,
            Err(known) => known == frame,
        };
    if !agreed {
        BROKEN.store(true, Ordering::Relaxed);
        return;
    }
    for i in SKIPPED..w.len - 1 {
        learn(w.ips[i], Some(w.cfas[i + 1].wrapping_sub(w.cfas[i])));
    }
    // The last frame kept: its caller's return address was 0 (its size is known), or libgcc's
    // walk ended there (the outermost), or the frames' limit cut the walk (nothing learned).
    let last = w.len - 1;
    if w.len < w.ips.len() {
        match (w.zero, code == END_OF_STACK) {
            (Some(zero_sp), _) => learn(w.ips[last], Some(zero_sp.wrapping_sub(w.cfas[last]))),
            (None, true) => learn(w.ips[last], None),
            (None, false) => {}
        }
    }
}
