//! The rule that judges one allocating site's residue by its age (docs/verdict.md has it on one
//! page, with its constants).
//!
//! A leak is memory a cycle allocated that never comes back. State is memory the store gives back
//! as it turns over (a cache's entries, a queue's blocks) or stops taking (a pool filled once, a
//! registry at its high-water mark, a container at its bound). So a site is judged by how its
//! residue ages, at every look:
//!
//! - **the window**: the oldest age at which the site was seen to give a block back
//!   ([`History::turnover`]). Residue younger than twice that may still be turning over; what is
//!   older is *old*. A site that never gave anything back has no window: all its residue is old.
//!   Until a site has been watched for longer than twice its size class's window (the oldest age
//!   at which any block of its sizes was given back since the run began:
//!   [`History::class_turnover`]), it cannot have shown its own, and takes the class's: a cache
//!   turning over since before the run has given back blocks of its sizes, stacked or not, long
//!   before its first stacked block dies. Twice: the class's window is still growing early in a
//!   run (what was made before the run is given back at ages no older than the run).
//! - **a leak** keeps adding old residue: [`LATE_HOLDS`] or more cycles of the later half of the
//!   old cycles hold residue at the site. Whatever else the site gives back: a leak on an error
//!   path of a function whose normal path feeds a cache still accumulates below the cache's
//!   window.
//! - **kept**: old residue that does not accumulate (a lazy initialisation reached late, a pool
//!   filled once, a registry grown to the most entries ever alive at once) holds from few cycles,
//!   early, and no more: fewer than [`LATE_HOLDS`] in the later half.
//! - **a container** (a block grown by reallocs, [`History::growth`]) is judged by its schedule:
//!   a steady leak into a container whose capacity grows by a factor `f` grows again `f` times
//!   the interval of its last growth later. Past that, with [`SCHEDULE_SLACK`], it stopped (a
//!   container at its bound); before, the question is open.
//! - **bounds a store reports**: a reported RocksDB consumer accounts for a share of what the
//!   sites that fill it hold ([`History::explained_share`]: its usage over their residue, at most
//!   1); only what is beyond it is judged, cycle by cycle, so that a leak at the consumer's own
//!   frames beyond what it reports still recurs in every cycle it took from. Residue at a RocksDB consumer's frames that no report covers
//!   ([`History::unreported_consumer`]) is never called a leak by its age: the question stays open
//!   until the store lets go of it or reports it.
//!
//! There is one statistic, made once per site and look: a count of later-half cycles. Its power
//! ([`rate_ruled_out`]) is what a clean verdict states.

use serde::{Deserialize, Serialize};

/// Cycles of the later half of a site's old cycles that must hold residue for a leak. A
/// high-water mark raised at random (a registry sized by the most objects ever alive at once,
/// records of a quantity drawn afresh each cycle) holds from about ln 2 = 0.69 cycles of a later
/// half: 4 or more in 0.6% of later halves (3 or more in 3.4%: the simulator's false leaks fell
/// from 0.74% of clean histories to 0.09% from 3 to 4, leak-tests `simulated`); a leak recurring
/// in a fraction `p` of cycles holds from `p` of them.
pub const LATE_HOLDS: u64 = 4;

/// How much later than a steady leak's schedule a container may grow again before it is judged
/// to have stopped: its next growth is due `f` times its last interval after its last growth (`f`
/// the last growth's factor), and it stopped once that interval times `1 + SCHEDULE_SLACK` has
/// passed.
pub const SCHEDULE_SLACK: f64 = 0.5;

/// The power a clean verdict states: a leak recurring at the rate it rules out is found by a look
/// with at least this probability.
pub const POWER: f64 = 0.99;

/// A container's growths in judged cycles: the last time its capacity rose above the most it had
/// been, the time before that, and the factor of the last rise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContainerGrowth {
    /// The cycle of its last rise.
    pub last: u64,
    /// The cycle of the rise before it, or of the block's making when it rose once.
    pub before: u64,
    /// Its capacity after the last rise over its capacity before it (at least 1).
    pub factor: f64,
}

impl ContainerGrowth {
    /// A container's growth history.
    pub fn new(last: u64, before: u64, factor: f64) -> ContainerGrowth {
        ContainerGrowth { last, before: before.min(last), factor: factor.max(1.0) }
    }

    /// The cycle by which a steady leak into it would have grown it again, with the slack: `last +
    /// f x (last - before) x (1 + slack)`, at least one cycle after `last`.
    pub(crate) fn due(&self) -> u64 {
        let interval = (self.last - self.before).max(1) as f64;
        self.last + (self.factor * interval * (1.0 + SCHEDULE_SLACK)).ceil() as u64
    }
}

/// One site's record at a look (see the module docs).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[non_exhaustive]
pub struct History<'a> {
    /// The cycles whose allocations it still holds, ascending, with the bytes of each; cycles
    /// outside the look's [`Span`] are not judged.
    pub holds: &'a [(u64, u64)],
    /// The oldest age (cycles from its making to its free) at which it gave a block back while
    /// the run went on, if it ever did.
    pub turnover: Option<u64>,
    /// The oldest age at which a block of its sizes (any site's, stacked or not, made since the
    /// run began) was given back, if one was.
    pub class_turnover: Option<u64>,
    /// Cycles since its stack was first taken.
    pub watched_for: u64,
    /// The share of its residue (0 to 1) that a reported RocksDB consumer accounts for (a cache's
    /// usage, memtables, table readers): the consumer's usage over what all the sites that fill it
    /// hold, at most 1.
    pub explained_share: f64,
    /// Its frames are a RocksDB consumer's (a block cache's entries, a memtable's arena, a table
    /// reader) and no report covers what it holds.
    pub unreported_consumer: bool,
    /// It holds a block grown by reallocs after its making, in judged cycles.
    pub growth: Option<ContainerGrowth>,
}

/// The judged cycles at a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The first judged cycle (after the warm-up).
    pub first: u64,
    /// The last judged cycle: the last cycle run less the youngest, whose memory the store may
    /// still carry to the next cycle.
    pub last: u64,
}

impl Span {
    /// The last cycle run.
    fn now(&self) -> u64 {
        self.last + 1
    }
}

/// Why a site's question is still open.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "open", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Open {
    /// One later-half cycle short of a leak.
    OneShort {
        /// The look at which the older of its later-half cycles leaves the later half, if no
        /// third one comes (the last cycle run then).
        settles_by: u64,
    },
    /// A container still on a steady leak's schedule.
    OnSchedule {
        /// Its growth history.
        growth: ContainerGrowth,
    },
    /// Residue at a RocksDB consumer's frames that accumulates, with no report of the consumer
    /// (`Lifecycle::rocksdb_memory`) to bound it.
    UnreportedConsumer,
}

/// What the rule says of one site at a look.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "judged", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Aged {
    /// Old residue that keeps accumulating: a leak.
    Leak,
    /// Not decided yet.
    Open(Open),
    /// Old residue from few cycles, not accumulating (memory kept once, a high-water mark).
    Kept,
    /// Residue only younger than its window: state it turns over.
    State,
    /// A container whose growth stopped: it missed a steady leak's schedule.
    Stopped,
    /// All of its residue is what a reported consumer accounts for.
    Explained,
    /// It holds nothing of the judged cycles.
    Empty,
}

/// The facts the judgement reads, kept for the report.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AgeFacts {
    /// The oldest age at which residue may still be turning over: twice its window (0 when it
    /// never gave anything back at an age above 0).
    pub window: u64,
    /// The last old cycle (at least `window` + 1 cycles before the last cycle run); `None` when
    /// no judged cycle is that old.
    pub old_to: Option<u64>,
    /// The first cycle of the later half of the old cycles.
    pub late_from: u64,
    /// Old cycles holding residue beyond what a consumer explains.
    pub old_holds: u64,
    /// Of them, in the later half.
    pub late_holds: u64,
    /// Their bytes (all old ones).
    pub old_bytes: u64,
    /// The oldest cycle holding unexplained residue.
    pub oldest: Option<u64>,
}

impl<'a> History<'a> {
    /// A site holding `holds` (ascending cycles with their bytes), which never gave anything back,
    /// with no consumer and no container: set the other fields as the record says.
    pub fn of(holds: &'a [(u64, u64)]) -> History<'a> {
        History { holds, ..History::default() }
    }
}

/// Judges one site at a look (see the module docs): its facts and its verdict.
pub fn judge(h: &History<'_>, at: Span) -> (Aged, AgeFacts) {
    let facts = facts(h, at);
    let judged = h.holds.iter().any(|&(c, b)| c >= at.first && c <= at.last && b > 0);
    let aged = if !judged {
        Aged::Empty
    } else if let Some(g) = h.growth {
        // A container: its blocks move to the cycle that grew them, so its residue never ages;
        // its schedule says whether it still grows as a leak would.
        if at.now() > g.due() {
            Aged::Stopped
        } else {
            Aged::Open(Open::OnSchedule { growth: g })
        }
    } else if facts.oldest.is_none() {
        Aged::Explained
    } else if facts.late_holds >= LATE_HOLDS {
        if h.unreported_consumer {
            Aged::Open(Open::UnreportedConsumer)
        } else {
            Aged::Leak
        }
    } else if facts.late_holds + 1 == LATE_HOLDS {
        Aged::Open(Open::OneShort { settles_by: settles_by(h, at, &facts) })
    } else if facts.old_holds > 0 {
        Aged::Kept
    } else {
        Aged::State
    };
    (aged, facts)
}

/// Less than this of a cycle's residue left unexplained is no residue: the smallest allocation
/// jemalloc makes.
const SMALLEST_BLOCK: f64 = 8.0;

/// The judged holds left once `share` of each is explained (those with at least a block left).
fn unexplained<'a>(h: &'a History<'_>, at: Span) -> impl Iterator<Item = (u64, u64)> + 'a {
    let left = (1.0 - h.explained_share.clamp(0.0, 1.0)).max(0.0);
    h.holds
        .iter()
        .filter(move |&&(c, _)| c >= at.first && c <= at.last)
        .map(move |&(cycle, bytes)| (cycle, (bytes as f64 * left).floor() as u64))
        .filter(|&(_, bytes)| bytes as f64 >= SMALLEST_BLOCK)
}

/// The site's window: its own, or its class's until it has been watched for longer than twice
/// that.
fn window(h: &History<'_>) -> u64 {
    let own = h.turnover.unwrap_or(0);
    let class = h.class_turnover.unwrap_or(0);
    if h.watched_for > 2 * class {
        own
    } else {
        own.max(class)
    }
}

fn facts(h: &History<'_>, at: Span) -> AgeFacts {
    let window = 2 * window(h);
    // Old: older than twice the window (the last cycle run, `now`, has age 0).
    let old_to = at.now().checked_sub(window + 1).filter(|&b| b >= at.first);
    let late_from = old_to.map_or(at.first, |b| at.first + (b - at.first).div_ceil(2));
    let mut f = AgeFacts { window, old_to, late_from, old_holds: 0, late_holds: 0, old_bytes: 0, oldest: None };
    for (cycle, bytes) in unexplained(h, at) {
        f.oldest = f.oldest.or(Some(cycle));
        if old_to.is_some_and(|b| cycle <= b) {
            f.old_holds += 1;
            f.old_bytes += bytes;
            f.late_holds += u64::from(cycle >= late_from);
        }
    }
    f
}

/// The last cycle run at which a site one later-half cycle short of a leak stops being so if no
/// third one comes: when the later half begins after the older of its two.
fn settles_by(h: &History<'_>, at: Span, f: &AgeFacts) -> u64 {
    let older = unexplained(h, at)
        .map(|(c, _)| c)
        .filter(|&c| c >= f.late_from && f.old_to.is_some_and(|b| c <= b))
        .min()
        .unwrap_or(f.late_from);
    // late_from = first + (old_to - first + 1) / 2 > older once old_to >= first + 2 (older + 1 -
    // first) - 1.
    let old_to = at.first + 2 * (older + 1 - at.first) - 1;
    old_to + f.window + 1
}

/// The cycles of the later half of a look's old cycles, at a site with no window: how many of
/// them a leak recurring since the first judged cycle can have held.
pub(crate) fn late_cycles(at: Span) -> u64 {
    let old_to = at.now() - 1;
    if old_to < at.first {
        return 0;
    }
    let late_from = at.first + (old_to - at.first).div_ceil(2);
    old_to + 1 - late_from
}

/// The lowest recurrence rate (the fraction of cycles a leak fires in) that a look whose later
/// half has `late_cycles` old cycles finds with probability [`POWER`]: a leak firing at random in
/// that fraction of cycles holds from at least [`LATE_HOLDS`] of them. `None` (nothing ruled out)
/// when fewer than [`LATE_HOLDS`] cycles are late.
pub fn rate_ruled_out(late_cycles: u64) -> Option<f64> {
    if late_cycles < LATE_HOLDS {
        return None;
    }
    // P(Binomial(n, p) >= k) grows with p: bisected for the p where it reaches POWER.
    Some(rate_firing_in(late_cycles, LATE_HOLDS))
}

/// The lowest rate (the fraction of cycles a leak fires in) at which a leak fires in at least
/// `holds` of `cycles` cycles with probability [`POWER`].
pub(crate) fn rate_firing_in(cycles: u64, holds: u64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if binomial_at_least(cycles, mid, holds) >= POWER {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// P(Binomial(n, p) >= k).
pub(crate) fn binomial_at_least(n: u64, p: f64, k: u64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if n >= k { 1.0 } else { 0.0 };
    }
    // 1 - sum_{i<k} C(n,i) p^i (1-p)^(n-i), with the terms built by ratio.
    let q = 1.0 - p;
    let mut term = q.powf(n as f64);
    let mut below = 0.0;
    for i in 0..k.min(n + 1) {
        below += term;
        term *= (n - i) as f64 / (i + 1) as f64 * p / q;
    }
    (1.0 - below).clamp(0.0, 1.0)
}

/// The cycles a look must have run, after a leak recurring at rate `p` began (at or before the
/// first judged cycle), for the rule to find it with probability [`POWER`] at a site that never
/// gives anything back: its later half must hold `n` cycles with P(Binomial(n, p) >= LATE_HOLDS)
/// >= POWER. For the power table (docs/verdict.md).
pub fn cycles_to_find(p: f64) -> u64 {
    let mut n = LATE_HOLDS;
    while binomial_at_least(n, p, LATE_HOLDS) < POWER {
        n += 1;
    }
    // Old cycles first..=now-1, of which the later half is n: 2n old cycles (or 2n - 1), and the
    // last cycle run after them.
    2 * n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(first: u64, last: u64) -> Span {
        Span { first, last }
    }

    fn holds(cycles: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
        cycles.into_iter().map(|c| (c, 8)).collect()
    }

    #[test]
    fn a_leak_in_every_cycle_is_found_within_eight_judged_cycles() {
        let h = holds(20..=27);
        assert_eq!(judge(&History::of(&h), at(20, 27)).0, Aged::Leak);
        // Six judged cycles: the later half of the old ones holds 3 of the 4 a leak needs.
        let h = holds(20..=25);
        let h = History::of(&h);
        assert!(matches!(judge(&h, at(20, 25)).0, Aged::Open(Open::OneShort { .. })));
    }

    #[test]
    fn residue_younger_than_its_window_is_state_whatever_its_amount() {
        // A cache evicting at age 30: what the last 60 cycles allocated is young.
        let h = holds(141..=198);
        let h = History { turnover: Some(30), ..History::of(&h) };
        let (aged, f) = judge(&h, at(20, 198));
        assert_eq!((aged, f.window, f.old_holds), (Aged::State, 60, 0));
    }

    #[test]
    fn a_site_watched_for_less_than_its_class_window_takes_the_class_window() {
        // Every cycle since 21, but blocks of its size were given back at age 40: a cache turning
        // over since before the run, whose stacked blocks have not died yet.
        let h = holds(21..=48);
        let young = History { class_turnover: Some(40), watched_for: 28, ..History::of(&h) };
        assert_eq!(judge(&young, at(20, 48)).0, Aged::State);
        // Watched for longer than 40 cycles without giving any back: its own window, none.
        let h = holds(21..=100);
        let old = History { class_turnover: Some(40), watched_for: 81, ..History::of(&h) };
        assert_eq!(judge(&old, at(20, 100)).0, Aged::Leak);
    }

    #[test]
    fn a_leak_beside_a_cache_at_one_site_is_found_below_the_caches_window() {
        // The cache holds cycles 180-198 and gives back at age 10; an error path kept every
        // fourth cycle's buffer since cycle 20.
        let mut h: Vec<u64> = (20..180).step_by(4).collect();
        h.extend(180..=198);
        let h = holds(h);
        let h = History { turnover: Some(10), ..History::of(&h) };
        let (aged, f) = judge(&h, at(20, 198));
        assert_eq!(aged, Aged::Leak);
        assert!(f.late_holds >= 20, "{f:?}");
    }

    #[test]
    fn early_high_water_marks_are_kept_and_a_late_pair_keeps_the_question_open() {
        let h = holds([21, 35]);
        assert_eq!(judge(&History::of(&h), at(20, 198)).0, Aged::Kept);
        let h = holds([24, 139, 150, 160]);
        let h = History::of(&h);
        let (aged, f) = judge(&h, at(20, 198));
        let Aged::Open(Open::OneShort { settles_by }) = aged else { panic!("{aged:?} {f:?}") };
        // Later: both leave the later half, and it is kept.
        assert_eq!(judge(&h, at(20, settles_by - 1)).0, Aged::Kept);
        assert!(matches!(judge(&h, at(20, settles_by - 2)).0, Aged::Open(_)));
    }

    #[test]
    fn what_a_reported_consumer_accounts_for_is_the_youngest_residue() {
        // A cache filling since cycle 20 at 4 KiB a cycle, all of it reported: explained.
        let filling: Vec<(u64, u64)> = (20..=198).map(|c| (c, 4096)).collect();
        let h = History { explained_share: 1.0, ..History::of(&filling) };
        assert_eq!(judge(&h, at(20, 198)).0, Aged::Explained);
        // 8 B a cycle at its frames beyond the report: left in every cycle, and accumulating.
        let leaking: Vec<(u64, u64)> = filling.iter().map(|&(c, b)| (c, b + 8)).collect();
        let h = History { explained_share: 4096.0 / 4104.0, ..History::of(&leaking) };
        assert_eq!(judge(&h, at(20, 198)).0, Aged::Leak);
        // Unreported: never called a leak by its age.
        let h = History { unreported_consumer: true, ..History::of(&filling) };
        assert_eq!(judge(&h, at(20, 198)).0, Aged::Open(Open::UnreportedConsumer));
    }

    #[test]
    fn a_container_is_judged_by_its_schedule() {
        // Doubled at 51 and 102: a steady leak grows it again by 204 (255 with the slack).
        let g = ContainerGrowth::new(102, 51, 2.0);
        assert_eq!(g.due(), 255);
        let h = holds([102]);
        let h = History { growth: Some(g), ..History::of(&h) };
        assert!(matches!(judge(&h, at(20, 254)).0, Aged::Open(Open::OnSchedule { .. })));
        assert_eq!(judge(&h, at(20, 255)).0, Aged::Stopped);
    }

    #[test]
    fn the_power_table_is_a_binomial_tail() {
        assert!((binomial_at_least(3, 1.0, 3) - 1.0).abs() < 1e-12);
        assert!((binomial_at_least(4, 0.5, 3) - 5.0 / 16.0).abs() < 1e-12);
        assert_eq!(cycles_to_find(1.0), 8);
        let p = rate_ruled_out(90).expect("90 late cycles rule something out");
        assert!(binomial_at_least(90, p, LATE_HOLDS) >= POWER && binomial_at_least(90, p * 0.99, LATE_HOLDS) < POWER);
        assert_eq!(rate_ruled_out(3), None);
    }
}
