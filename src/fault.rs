//! Fault injection at named points, scoped to one run.
//!
//! A plan says, per point, when to fail and how:
//!
//! ```text
//! close.marker=always            every call fails with an error
//! open.db=nth:2                  only the 2nd call fails
//! work.write=every:5             every 5th call fails
//! close.marker=10%               each call fails with probability 0.1 (seeded, reproducible)
//! work.scan=nth:1:panic          the 1st call panics instead of returning an error
//! close.marker=off               never
//! ```
//!
//! Points are separated by commas: `close.marker=10%,open.db=nth:2`. The same spelling serves
//! code ([`FaultPlan::parse`]), the environment ([`FAULTS_ENV`]) and the CLI (`--faults`), in the
//! spirit of the fail crate's `20%3*return`. Unlike the fail crate's global registry, a plan lives
//! in a [`Faults`] value handed to the code under test, so parallel tests never trigger each
//! other's faults. With no plan, a check is a single branch.
//!
//! Probabilities are reproducible from the seed even when several threads check the same point.
//! A check made inside an owner scope ([`crate::owner_scope`]) draws from the seed, the point,
//! the cycle (`Faults::set_cycle`), the scope's path and how many times that point was checked
//! under that path before in the cycle (so a retry that re-enters its scope draws anew): where it
//! happens, not when, so the order in which threads reach their checks changes nothing.
//! Outside any scope, draws follow call order (deterministic in a single thread). `nth` and
//! `every` count the calls of the whole plan, in the order they arrive.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::ledger::lock;
use crate::ledger::owner::{current_owner_hash, fnv1a};

/// The environment variable holding a fault plan.
pub const FAULTS_ENV: &str = "LEAKCHECK_FAULTS";

/// When a point fails.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Trigger {
    /// Never.
    Off,
    /// Every call.
    Always,
    /// Only the n-th call (1-based).
    Nth(u64),
    /// Every n-th call.
    Every(u64),
    /// Each call with this probability, drawn from the seed (see the module docs).
    Probability(f64),
}

/// What a failing point does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FaultAction {
    /// Return an error (a real RocksDB error where the code under test can provoke one).
    Error,
    /// Panic.
    Panic,
}

/// One point's rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FaultSpec {
    /// When.
    pub(crate) trigger: Trigger,
    /// How.
    pub(crate) action: FaultAction,
}

/// A plan could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FaultPlanError {
    /// An entry is not `point=spec`.
    #[error("fault plan entry `{entry}` is not point=spec (for example close.marker=10%)")]
    NotAnAssignment {
        /// The entry.
        entry: String,
    },
    /// The spec cannot be parsed.
    #[error("fault spec `{spec}` for `{point}`: {reason}")]
    BadSpec {
        /// The point.
        point: String,
        /// The spec.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A point appears twice.
    #[error("fault point `{point}` is given twice")]
    Duplicate {
        /// The point.
        point: String,
    },
    /// A point the code under test does not have.
    #[error("unknown fault point `{point}`; known points: {known}")]
    UnknownPoint {
        /// The point.
        point: String,
        /// The points the code under test declares, comma-separated.
        known: String,
    },
}

/// A fault plan: a rule per named point.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultPlan {
    specs: BTreeMap<String, FaultSpec>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses `point=spec,point=spec`. Whitespace around entries is ignored; an empty string is
    /// the empty plan.
    ///
    /// # Errors
    /// [`FaultPlanError`] naming the entry that is wrong.
    pub fn parse(text: &str) -> Result<Self, FaultPlanError> {
        let mut specs = BTreeMap::new();
        for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (point, spec) =
                entry.split_once('=').ok_or_else(|| FaultPlanError::NotAnAssignment { entry: entry.to_string() })?;
            let point = point.trim();
            if point.is_empty() || !point.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
                return Err(FaultPlanError::NotAnAssignment { entry: entry.to_string() });
            }
            let spec = parse_spec(point, spec.trim())?;
            if specs.insert(point.to_string(), spec).is_some() {
                return Err(FaultPlanError::Duplicate { point: point.to_string() });
            }
        }
        Ok(FaultPlan { specs })
    }

    /// Adds (or replaces) one point's rule.
    pub(crate) fn with(mut self, point: &str, trigger: Trigger, action: FaultAction) -> Self {
        self.specs.insert(point.to_string(), FaultSpec { trigger, action });
        self
    }

    /// Checks every point against the ones the code under test declares.
    ///
    /// # Errors
    /// [`FaultPlanError::UnknownPoint`] for the first point not in `known`.
    pub(crate) fn validate(&self, known: &[&str]) -> Result<(), FaultPlanError> {
        for point in self.specs.keys() {
            if !known.contains(&point.as_str()) {
                return Err(FaultPlanError::UnknownPoint { point: point.clone(), known: known.join(", ") });
            }
        }
        Ok(())
    }

    /// The points the plan names, in order.
    pub(crate) fn points(&self) -> impl Iterator<Item = &str> {
        self.specs.keys().map(String::as_str)
    }

    /// Whether the plan has no active rule.
    pub(crate) fn is_empty(&self) -> bool {
        self.specs.values().all(|s| s.trigger == Trigger::Off)
    }
}

fn parse_spec(point: &str, spec: &str) -> Result<FaultSpec, FaultPlanError> {
    let bad = |reason: &str| FaultPlanError::BadSpec {
        point: point.to_string(),
        spec: spec.to_string(),
        reason: reason.to_string(),
    };
    let (when, action) = match spec.rsplit_once(':') {
        Some((w, "panic")) => (w, FaultAction::Panic),
        Some((w, "error")) => (w, FaultAction::Error),
        _ => (spec, FaultAction::Error),
    };
    let count = |n: &str| -> Result<u64, FaultPlanError> {
        match n.parse::<u64>() {
            Ok(0) | Err(_) => Err(bad("expected a count of 1 or more")),
            Ok(v) => Ok(v),
        }
    };
    let trigger = match when {
        "off" => Trigger::Off,
        "always" => Trigger::Always,
        w if w.ends_with('%') => {
            let p: f64 = w[..w.len() - 1].parse().map_err(|_| bad("expected a percentage such as 10%"))?;
            if !(0.0..=100.0).contains(&p) {
                return Err(bad("a percentage must be between 0 and 100"));
            }
            Trigger::Probability(p / 100.0)
        }
        w => match w.split_once(':') {
            Some(("nth", n)) => Trigger::Nth(count(n)?),
            Some(("every", n)) => Trigger::Every(count(n)?),
            _ => {
                return Err(bad("expected off, always, nth:N, every:N or P%, optionally followed by :error or :panic"))
            }
        },
    };
    Ok(FaultSpec { trigger, action })
}

impl FromStr for FaultPlan {
    type Err = FaultPlanError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for (point, spec) in &self.specs {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{point}=")?;
            match spec.trigger {
                Trigger::Off => f.write_str("off")?,
                Trigger::Always => f.write_str("always")?,
                Trigger::Nth(n) => write!(f, "nth:{n}")?,
                Trigger::Every(n) => write!(f, "every:{n}")?,
                Trigger::Probability(p) => write!(f, "{}%", p * 100.0)?,
            }
            if spec.action == FaultAction::Panic {
                f.write_str(":panic")?;
            }
        }
        Ok(())
    }
}

struct PointState {
    spec: FaultSpec,
    calls: AtomicU64,
    /// Times this point fired. Counters, not a list: a check allocates nothing that grows with
    /// the run (only `scoped` below, up to the number of paths one cycle uses), so the code under
    /// test's memory is not disturbed by the bookkeeping of its faults.
    fired: AtomicU64,
    /// `fired` at the last `take_fired`.
    taken: AtomicU64,
    /// The seed mixed with the point's name: keyed draws start from here.
    base: u64,
    /// Call-order draws (outside any owner scope): a splitmix64 state.
    rng: Mutex<u64>,
    /// Scoped draws: checks made so far in this cycle, per owner path hash. Cleared (keeping its
    /// capacity) when the cycle changes, so it stops allocating after the first cycles.
    scoped: Mutex<HashMap<u64, u64>>,
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// splitmix64's finalizer: a bijection that spreads every input bit over the output.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The next of a splitmix64 stream as a uniform draw in [0, 1): reproducible randomness for tests.
#[cfg(test)]
pub(crate) fn unit_random(state: &mut u64) -> f64 {
    let mut r = SplitMix64(*state);
    let draw = (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    *state = r.0;
    draw
}

/// The seeded generator, reached by the workspace (`leakcheck::workspace::SplitMix64`).
pub(crate) mod rng {
    use super::{mix64, GOLDEN};

    /// splitmix64: the small seeded generator fault plans draw from, for reproducible inputs
    /// elsewhere too (the binding fuzz's programs): the same seed gives the same stream on every
    /// platform and release of this crate.
    #[derive(Debug, Clone)]
    pub struct SplitMix64(pub(crate) u64);

    impl SplitMix64 {
        /// A stream starting from `seed`.
        pub fn new(seed: u64) -> SplitMix64 {
            SplitMix64(seed)
        }

        /// The next 64 bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(GOLDEN);
            mix64(self.0)
        }

        /// A number below `n` (0 when `n` is 0).
        pub fn below(&mut self, n: u64) -> u64 {
            self.next_u64().checked_rem(n).unwrap_or(0)
        }
    }
}
pub(crate) use rng::SplitMix64;

struct FaultsInner {
    points: BTreeMap<String, PointState>,
    /// The cycle the code under test is in (keys scoped draws).
    cycle: AtomicU64,
    /// Points passed (when recording), with their call counts.
    passed: Option<Mutex<BTreeMap<String, u64>>>,
}

/// A fault plan in force: hand it to the code under test, which calls [`Faults::check`] at each
/// named point. Cheap to clone (shared state: call counts are per plan, not per clone).
#[derive(Clone, Default)]
pub struct Faults {
    inner: Option<Arc<FaultsInner>>,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.inner {
            None => f.write_str("Faults(none)"),
            Some(i) => write!(f, "Faults({} points)", i.points.len()),
        }
    }
}

impl Faults {
    /// No faults, no recording: every check is one branch.
    pub fn none() -> Self {
        Faults { inner: None }
    }

    /// A plan in force, with probabilities drawn from `seed`.
    pub(crate) fn new(plan: &FaultPlan, seed: u64) -> Self {
        Self::build(plan, seed, false)
    }

    /// Like [`Faults::new`], and records every point passed (for the fault matrix).
    pub(crate) fn recording(plan: &FaultPlan, seed: u64) -> Self {
        Self::build(plan, seed, true)
    }

    fn build(plan: &FaultPlan, seed: u64, record: bool) -> Self {
        if plan.is_empty() && !record {
            return Self::none();
        }
        let points = plan
            .specs
            .iter()
            .map(|(name, spec)| {
                let base = seed ^ fnv1a(name.as_bytes());
                let state = PointState {
                    spec: *spec,
                    calls: AtomicU64::new(0),
                    fired: AtomicU64::new(0),
                    taken: AtomicU64::new(0),
                    base,
                    rng: Mutex::new(base),
                    scoped: Mutex::new(HashMap::new()),
                };
                (name.clone(), state)
            })
            .collect();
        Faults {
            inner: Some(Arc::new(FaultsInner {
                points,
                cycle: AtomicU64::new(0),
                passed: record.then(|| Mutex::new(BTreeMap::new())),
            })),
        }
    }

    /// Called by the code under test at point `name`: `Some(action)` when this call must fail;
    /// the caller injects the failure (an error, or a panic). See [`Faults::check_error`] for
    /// callers that only handle errors.
    pub fn check(&self, name: &str) -> Option<FaultAction> {
        let inner = self.inner.as_ref()?;
        if let Some(passed) = &inner.passed {
            *lock(passed).entry(name.to_string()).or_default() += 1;
        }
        let state = inner.points.get(name)?;
        let call = state.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let fire = match state.spec.trigger {
            Trigger::Off => false,
            Trigger::Always => true,
            Trigger::Nth(n) => call == n,
            Trigger::Every(n) => call % n == 0,
            Trigger::Probability(p) => {
                let z = match current_owner_hash() {
                    Some(path) => {
                        let n = {
                            let mut scoped = lock(&state.scoped);
                            let n = scoped.entry(path).or_insert(0);
                            *n += 1;
                            *n
                        };
                        let cycle = inner.cycle.load(Ordering::Relaxed);
                        mix64(
                            state.base
                                ^ mix64(path.wrapping_add(n.wrapping_mul(GOLDEN)))
                                ^ mix64(cycle.wrapping_add(GOLDEN)),
                        )
                    }
                    None => {
                        let mut s = lock(&state.rng);
                        let mut r = SplitMix64(*s);
                        let draw = r.next_u64();
                        *s = r.0;
                        draw
                    }
                };
                ((z >> 11) as f64 / (1u64 << 53) as f64) < p
            }
        };
        if !fire {
            return None;
        }
        state.fired.fetch_add(1, Ordering::Relaxed);
        Some(state.spec.action)
    }

    /// Like [`Faults::check`], but panics at once for a panic action: the caller only handles
    /// errors. The panic message names the point.
    pub fn check_error(&self, name: &str) -> bool {
        match self.check(name) {
            None => false,
            Some(FaultAction::Error) => true,
            Some(FaultAction::Panic) => InjectedPanic::raise(name),
        }
    }

    /// Tells the plan which cycle the code under test is in; the harness calls it before each
    /// cycle. Draws made inside owner scopes depend on it, so that a scope that comes back every
    /// cycle does not fail the same way every time.
    pub(crate) fn set_cycle(&self, cycle: u64) {
        if let Some(inner) = &self.inner {
            if inner.cycle.swap(cycle, Ordering::Relaxed) != cycle {
                for state in inner.points.values() {
                    lock(&state.scoped).clear();
                }
            }
        }
    }

    /// Points that fired since the last call, with how many times each.
    pub(crate) fn take_fired(&self) -> BTreeMap<String, u64> {
        let Some(inner) = &self.inner else { return BTreeMap::new() };
        inner
            .points
            .iter()
            .filter_map(|(name, s)| {
                let now = s.fired.load(Ordering::Relaxed);
                let before = s.taken.swap(now, Ordering::Relaxed);
                (now > before).then(|| (name.clone(), now - before))
            })
            .collect()
    }

    /// Points passed so far (when recording), with their call counts.
    pub(crate) fn passed(&self) -> BTreeMap<String, u64> {
        self.inner.as_ref().and_then(|i| i.passed.as_ref()).map(|p| lock(p).clone()).unwrap_or_default()
    }
}

/// The plan of the `#[leakcheck::test]` check running in this process, while its body runs.
static CURRENT: Mutex<Option<Faults>> = Mutex::new(None);
/// Every point a body checked with [`fault`] since the check began.
static CHECKED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
/// Points that fired since [`enter`].
static FIRED: AtomicU64 = AtomicU64::new(0);

/// Whether the plan of the `#[leakcheck::test]` check running in this process fails point
/// `name` now: a test's own fault point, so that an existing test gains a failure path with one
/// `if`. False outside such a check (an ordinary test run, a body between checks), and for a
/// point the plan does not name. A point whose plan says `:panic` panics here.
///
/// ```
/// fn flush() -> Result<(), String> {
///     if leakcheck::fault("flush") {
///         return Err("injected".into()); // the path an ordinary run never takes
///     }
///     Ok(())
/// }
/// assert_eq!(flush(), Ok(())); // outside a check, no point fires
/// ```
pub fn fault(name: &str) -> bool {
    let faults = {
        let current = lock(&CURRENT);
        let Some(faults) = current.as_ref() else { return false };
        faults.clone()
    };
    {
        let mut checked = lock(&CHECKED);
        if !checked.contains(name) {
            checked.insert(name.to_string());
        }
    }
    let Some(action) = faults.check(name) else { return false };
    FIRED.fetch_add(1, Ordering::Relaxed);
    match action {
        FaultAction::Error => true,
        FaultAction::Panic => InjectedPanic::raise(name),
    }
}

/// A body is about to run under `faults`: [`fault`] answers from them until [`leave`].
pub(crate) fn enter(faults: &Faults) {
    FIRED.store(0, Ordering::Relaxed);
    *lock(&CURRENT) = Some(faults.clone());
}

/// The body ended; [`fault`] answers false again. Returns how many points fired while it ran.
pub(crate) fn leave() -> u64 {
    *lock(&CURRENT) = None;
    FIRED.load(Ordering::Relaxed)
}

/// The points bodies checked with [`fault`] in this process.
pub(crate) fn checked_points() -> BTreeSet<String> {
    lock(&CHECKED).clone()
}

/// The plans of the automatic fault matrix over `points`: each single point failing always, on
/// its 2nd call, and panicking; then each pair of points failing always.
pub(crate) fn matrix_plans(points: &BTreeSet<String>) -> Vec<FaultPlan> {
    let mut plans = Vec::new();
    for p in points {
        plans.push(FaultPlan::none().with(p, Trigger::Always, FaultAction::Error));
        plans.push(FaultPlan::none().with(p, Trigger::Nth(2), FaultAction::Error));
        plans.push(FaultPlan::none().with(p, Trigger::Always, FaultAction::Panic));
    }
    let list: Vec<&String> = points.iter().collect();
    for (i, a) in list.iter().enumerate() {
        for b in &list[i + 1..] {
            plans.push(FaultPlan::none().with(a, Trigger::Always, FaultAction::Error).with(
                b,
                Trigger::Always,
                FaultAction::Error,
            ));
        }
    }
    plans
}

/// The payload of a panic a fault plan injects (`:panic` in a plan). Raise it with
/// [`InjectedPanic::raise`] where a store acts on [`FaultAction::Panic`]: the harness's panic
/// hook recognises it by type and keeps it out of stderr (every other panic goes on to the hook
/// before it), and a cycle record shows its message.
///
/// ```
/// let caught = std::panic::catch_unwind(|| leakcheck::fault::InjectedPanic::raise("close.flush"));
/// let payload = caught.expect_err("it panics");
/// let injected = payload.downcast_ref::<leakcheck::fault::InjectedPanic>().expect("typed");
/// assert_eq!(injected.point, "close.flush");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct InjectedPanic {
    /// The fault point that fired.
    pub point: String,
}

impl InjectedPanic {
    /// Panics with an [`InjectedPanic`] for `point`.
    pub fn raise(point: &str) -> ! {
        std::panic::panic_any(InjectedPanic { point: point.to_string() })
    }
}

impl fmt::Display for InjectedPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leakcheck: injected panic at fault point {}", self.point)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_spelling_and_prints_it_back() {
        let plan = FaultPlan::parse(
            "close.marker=10%, open.db=nth:2 ,work.write=every:5,work.scan=nth:1:panic,x=off,y=always:error",
        )
        .expect("parse");
        let text = plan.to_string();
        assert_eq!(FaultPlan::parse(&text).expect("reparse"), plan);
        assert!(text.contains("work.scan=nth:1:panic") && text.contains("close.marker=10%"), "{text}");
    }

    #[test]
    fn rejects_bad_plans_with_a_message_naming_the_problem() {
        for (text, needle) in [
            ("close.marker", "point=spec"),
            ("close.marker=sometimes", "sometimes"),
            ("close.marker=nth:0", "count of 1"),
            ("close.marker=150%", "between 0 and 100"),
            ("a=always,a=off", "twice"),
            ("=always", "point=spec"),
        ] {
            let err = FaultPlan::parse(text).expect_err(text).to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
        let err =
            FaultPlan::parse("close.mraker=always").expect("parse").validate(&["close.marker"]).expect_err("unknown");
        assert!(err.to_string().contains("close.mraker") && err.to_string().contains("close.marker"));
    }

    #[test]
    fn triggers_fire_when_they_should() {
        let plan = FaultPlan::parse("a=nth:2,b=every:3,c=always,d=off").expect("parse");
        let f = Faults::new(&plan, 1);
        let fired = |p: &str| (0..6).map(|_| f.check(p).is_some()).collect::<Vec<_>>();
        assert_eq!(fired("a"), [false, true, false, false, false, false]);
        assert_eq!(fired("b"), [false, false, true, false, false, true]);
        assert_eq!(fired("c"), [true; 6]);
        assert_eq!(fired("d"), [false; 6]);
        assert_eq!(fired("unplanned"), [false; 6]);
    }

    #[test]
    fn probabilities_are_seeded_and_reproducible() {
        let plan = FaultPlan::parse("p=25%").expect("parse");
        let draw = |seed| {
            let f = Faults::new(&plan, seed);
            (0..4000).filter(|_| f.check("p").is_some()).count()
        };
        assert_eq!(draw(7), draw(7));
        let hits = draw(7);
        assert!((850..1150).contains(&hits), "25% of 4000 gave {hits}");
    }

    /// Draws inside owner scopes: the rate holds, a retry that re-enters its scope draws anew, the
    /// same path on another thread draws the same, and another cycle draws differently.
    #[test]
    fn scoped_draws_depend_on_where_and_when_not_on_the_thread() {
        let plan = FaultPlan::parse("p=25%").expect("parse");
        let attempts = |f: &Faults, task: &str| -> Vec<bool> {
            (0..400)
                .map(|_| {
                    let _scope = crate::ledger::owner_scope(task);
                    f.check("p").is_some()
                })
                .collect()
        };
        let f = Faults::new(&plan, 7);
        f.set_cycle(3);
        let here = attempts(&f, "task 0_0");
        let hits = here.iter().filter(|&&x| x).count();
        assert!((60..140).contains(&hits), "25% of 400 re-entered scopes gave {hits}");

        let g = Faults::new(&plan, 7);
        g.set_cycle(3);
        let g2 = g.clone();
        let (there, other_task) =
            std::thread::spawn(move || (attempts(&g2, "task 0_0"), attempts(&g2, "task 0_1"))).join().expect("thread");
        assert_eq!(here, there, "same seed, cycle and path on another thread");
        assert_ne!(here, other_task, "another path draws otherwise");

        f.set_cycle(4);
        assert_ne!(here, attempts(&f, "task 0_0"), "another cycle draws otherwise");
        f.set_cycle(3);
        assert_eq!(here, attempts(&f, "task 0_0"), "coming back to a cycle starts its count again");
    }

    #[test]
    fn separate_plans_do_not_share_state() {
        let plan = FaultPlan::parse("a=nth:1").expect("parse");
        let (x, y) = (Faults::new(&plan, 0), Faults::new(&plan, 0));
        assert!(x.check("a").is_some());
        assert!(y.check("a").is_some(), "another plan's count must not move");
    }

    #[test]
    fn recording_lists_points_passed() {
        let f = Faults::recording(&FaultPlan::none(), 0);
        f.check("open.db");
        f.check("open.db");
        f.check("close.marker");
        assert_eq!(
            f.passed().into_iter().collect::<Vec<_>>(),
            [("close.marker".to_string(), 1), ("open.db".to_string(), 2)]
        );
        assert!(Faults::none().check("x").is_none());
    }

    #[test]
    fn matrix_has_singles_panics_and_pairs() {
        let points: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let plans = matrix_plans(&points);
        assert_eq!(plans.len(), 3 * 3 + 3);
    }
}
