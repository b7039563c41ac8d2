//! What each allocating stack holds now, kept by the hooks as blocks come and go, so that a run
//! reads every site's live bytes at each sample for the cost of one load per stack, whatever the
//! run's length.
//!
//! A stack is taken for every allocation of a rare watched size and for one in `period` of a
//! common one (`capture`). The growth rule judges a site by its **stacked** blocks' bytes: an
//! exact record of blocks each kept independently of the others (a common class's one in
//! `period`), whose growth is the site's growth thinned by the draw and whose ups and downs are
//! its own. Judging that series needs no allowance for the draw's error (there is none: every
//! stacked block is a real block the site made and holds); sampling costs power (a leak recurs
//! at its stack in the share of its firings that were stacked), not false leaks. A stacked block
//! also stands for `period` blocks of its site (its weight, boosts included), so the site's live
//! bytes are estimated as the sum of its stacked blocks' sizes times their weights: the figure a
//! report gives.
//!
//! Blocks a site gives back turn over: each given back adds its size squared times its age in
//! cycles to its stack's turnover ([`SiteNow::turned`]); over a span of cycles that sum grows by
//! the rate of turnover times the lives of what turns over, the spread of a level that comes and
//! goes. Blocks it keeps add nothing.
//!
//! The bytes a class held before it was watched carry no stack: as they are given back and a
//! site's stacked blocks replace them, the site's stacked bytes rise while nothing grows. The
//! hooks count, per watch class, the bytes of such blocks given back since the watch began, each
//! thinned by the class's sampling period then (what the stacked blocks replacing them add, on
//! average), and how they turned over ([`drained`]).
//!
//! Everything here is atomics in static arrays (no allocation, no lock), written only for
//! stacked blocks and for blocks older than their class's watch.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::capture::{class, CLASSES, OVERFLOW};

const SLOTS: usize = OVERFLOW as usize + 1;

/// Per stack id: the bytes of its live stacked blocks.
static STACKED: [AtomicI64; SLOTS] = [const { AtomicI64::new(0) }; SLOTS];
/// Per stack id: the same, each block weighted by its sampling period (the estimate).
static LIVE: [AtomicI64; SLOTS] = [const { AtomicI64::new(0) }; SLOTS];
/// Per stack id: the sum over its stacked blocks given back of their size squared times their age
/// in cycles (`f64` bits, cumulative).
static TURNED: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Per stack id: the same with the age squared: what the lives of what it turned over weigh
/// against a run's length (blocks that turn over quickly are seen to come and go many times in a
/// run, and spread nothing the run has not shown).
static TURNED2: [AtomicU64; SLOTS] = [const { AtomicU64::new(0) }; SLOTS];
/// Per stack id: 1 + the watch class of its first stacked block; 0 none yet.
static CLASS_OF: [AtomicU32; SLOTS] = [const { AtomicU32::new(0) }; SLOTS];
/// Per watch class: bytes of blocks made before the class was watched (without a stack) given
/// back since, each over the class's sampling period then (`f64` bits, cumulative).
static DRAINED: [AtomicU64; CLASSES] = [const { AtomicU64::new(0) }; CLASSES];
/// Per watch class: the same blocks' size squared times their age when given back, over the
/// period (`f64` bits, cumulative): how they turned over, which the sites replacing them turn
/// over as.
static DRAINED_TURNED: [AtomicU64; CLASSES] = [const { AtomicU64::new(0) }; CLASSES];
/// Per watch class: the same with the age squared.
static DRAINED_TURNED2: [AtomicU64; CLASSES] = [const { AtomicU64::new(0) }; CLASSES];

/// A stacked block's entry in the table of stacks: its stack id and its weight.
pub(crate) fn pack(id: u32, weight: u32) -> u64 {
    u64::from(id) | (u64::from(weight.max(1)) << 32)
}

/// The stack id and weight of a packed entry ([`pack`]).
pub(crate) fn unpack(value: u64) -> (u32, u32) {
    (value as u32, ((value >> 32) as u32).max(1))
}

/// Adds `add` to the `f64` whose bits `slot` holds.
fn add_f64(slot: &AtomicU64, add: f64) {
    let mut old = slot.load(Ordering::Relaxed);
    loop {
        let new = (f64::from_bits(old) + add).to_bits();
        match slot.compare_exchange_weak(old, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return,
            Err(seen) => old = seen,
        }
    }
}

/// A block of `size` was made at stack `id` with `weight`.
pub(crate) fn made(id: u32, weight: u32, size: u64) {
    let i = id as usize;
    let Some(stacked) = STACKED.get(i) else { return };
    stacked.fetch_add(size as i64, Ordering::Relaxed);
    LIVE[i].fetch_add(i64::from(weight.max(1)) * size as i64, Ordering::Relaxed);
    let slot = &CLASS_OF[i];
    if slot.load(Ordering::Relaxed) == 0 {
        let _ = slot.compare_exchange(0, class(size) as u32 + 1, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// A block of `size` made at stack `id` with `weight` is gone: given back at `age` cycles, or
/// moved by a realloc (`None`).
pub(crate) fn gone(id: u32, weight: u32, size: u64, age: Option<u32>) {
    let i = id as usize;
    let Some(stacked) = STACKED.get(i) else { return };
    stacked.fetch_sub(size as i64, Ordering::Relaxed);
    LIVE[i].fetch_sub(i64::from(weight.max(1)) * size as i64, Ordering::Relaxed);
    if let Some(age) = age.filter(|&a| a > 0) {
        let turned = (size as f64) * (size as f64) * f64::from(age);
        add_f64(&TURNED[i], turned);
        add_f64(&TURNED2[i], turned * f64::from(age));
    }
}

/// A block of `size` without a stack, made before its class was watched, is gone: given back at
/// `age` cycles, or moved by a realloc (`None`), while the class is sampled at `period`.
pub(crate) fn drained(size: u64, age: Option<u32>, period: u32) {
    let c = class(size);
    let p = f64::from(period.max(1));
    add_f64(&DRAINED[c], size as f64 / p);
    if let Some(age) = age.filter(|&a| a > 0) {
        let turned = (size as f64) * (size as f64) * f64::from(age) / p;
        add_f64(&DRAINED_TURNED[c], turned);
        add_f64(&DRAINED_TURNED2[c], turned * f64::from(age));
    }
}

/// What a stack holds now ([`read`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct SiteNow {
    /// The bytes of its live stacked blocks: what the growth rule judges.
    pub(crate) stacked: i64,
    /// Its live bytes, each stacked block weighted by its sampling period: the estimate reported.
    pub(crate) live: i64,
    /// The sum over its stacked blocks given back of their size squared times their age, and
    /// times their age squared (cumulative).
    pub(crate) turned: (f64, f64),
    /// The watch class of its first stacked block.
    pub(crate) class: Option<u32>,
}

/// What stack `id` holds now.
pub(crate) fn read(id: u32) -> SiteNow {
    let i = id as usize;
    if i >= SLOTS {
        return SiteNow { stacked: 0, live: 0, turned: (0.0, 0.0), class: None };
    }
    SiteNow {
        stacked: STACKED[i].load(Ordering::Relaxed),
        live: LIVE[i].load(Ordering::Relaxed),
        turned: (f64::from_bits(TURNED[i].load(Ordering::Relaxed)), f64::from_bits(TURNED2[i].load(Ordering::Relaxed))),
        class: CLASS_OF[i].load(Ordering::Relaxed).checked_sub(1),
    }
}

/// What watch class `class` drained so far ([`drained`]), thinned, and how it turned over (its
/// two moments).
pub(crate) fn drained_of(class: u32) -> (f64, (f64, f64)) {
    let c = class as usize;
    let read = |a: &[AtomicU64; CLASSES]| a.get(c).map_or(0.0, |v| f64::from_bits(v.load(Ordering::Relaxed)));
    (read(&DRAINED), (read(&DRAINED_TURNED), read(&DRAINED_TURNED2)))
}

/// Resident bytes of the per-stack counters (pages touched).
pub(crate) fn resident_bytes() -> u64 {
    super::mapped::resident_of_static(&STACKED)
        + super::mapped::resident_of_static(&LIVE)
        + super::mapped::resident_of_static(&TURNED)
        + super::mapped::resident_of_static(&TURNED2)
        + super::mapped::resident_of_static(&CLASS_OF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_packs_its_stack_and_weight_and_an_old_entry_weighs_one() {
        assert_eq!(unpack(pack(OVERFLOW, 4096)), (OVERFLOW, 4096));
        assert_eq!(unpack(pack(7, 0)), (7, 1));
        assert_eq!(unpack(7), (7, 1));
    }

    #[test]
    fn a_stack_holds_its_stacked_bytes_their_estimate_and_what_it_turned_over() {
        // Stack ids of their own (the counters are the process's).
        let id = OVERFLOW - 3;
        let before = read(id);
        made(id, 4, 100);
        made(id, 1, 48);
        let now = read(id);
        assert_eq!((now.stacked - before.stacked, now.live - before.live), (148, 448));
        gone(id, 4, 100, Some(3));
        gone(id, 1, 48, None);
        let after = read(id);
        assert_eq!((after.stacked - before.stacked, after.live - before.live), (0, 0));
        // Given back at age 3; moved by a realloc: no turnover.
        assert!((after.turned.0 - before.turned.0 - 10_000.0 * 3.0).abs() < 1e-6);
        assert!((after.turned.1 - before.turned.1 - 10_000.0 * 9.0).abs() < 1e-6);
        assert_eq!(after.class, Some(super::class(100) as u32));
        // Older blocks of a class sampled one in 4: what a stacked replacement adds, on average.
        let c = super::class(4000) as u32;
        let (d0, t0) = drained_of(c);
        drained(4000, Some(2), 4);
        let (d1, t1) = drained_of(c);
        assert!((d1 - d0 - 1000.0).abs() < 1e-9 && (t1.0 - t0.0 - 4000.0 * 4000.0 * 2.0 / 4.0).abs() < 1e-6);
    }
}
