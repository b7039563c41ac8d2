//! The planted-leak catalog: every known leak class planted, one at a time, into the reference
//! store ([`Variant`]), run under one fault plan, and judged. The detector's own test: every
//! variant must be flagged, by the right signals, and the correct store must come out clean
//! under the same plan.
//!
//! Process-wide signals need one variant per process: `leakcheck mutants` and the detection
//! matrix in `leak-tests/` spawn a process per variant, each calling [`run_mutant`].

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::check_settings::{CHECK_CYCLES, DEFAULT_CHECK_PLAN, EARLY_LOOK_CYCLES};
use crate::reference::{ReferenceConfig, ReferenceStore, Variant};
use leakcheck::fault::FaultPlan;
use leakcheck::harness::{Harness, HarnessConfig, HarnessError};
use leakcheck::verdict::{Look, RuleKind, RunVerdict, SignalVerdict};
use leakcheck::{Class, Ledger, SignalId, Verdict};

/// The fault plan every variant and the reference store run under: it reaches the failing
/// close-time marker write, a failed data write, a malformed offset entry and a failure during
/// open after the options were made.
pub const PLAN: &str = "close.marker=every:3,work.write=every:4,work.malformed=every:5,open.options=nth:2";

/// One entry of the catalog.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Mutant {
    /// Name on the command line and in reports (the `planted!("name", ..)` site in the store's
    /// code).
    pub name: &'static str,
    /// The planted bug.
    pub variant: Variant,
    /// What is planted.
    pub description: &'static str,
    /// Signal classes that must fire (empty for the reference store, which must stay clean).
    pub expected: &'static [Class],
    /// Signal classes that must not fire (the ones a variant is invisible to).
    pub invisible_to: &'static [Class],
    /// The fault plan it runs under ([`PLAN`] unless it needs faults at a realistic rate).
    pub plan: &'static str,
    /// The fewest cycles it runs (a leak only at a realistic fault rate runs as long as `check`
    /// does: at 100 cycles its bytes are decided in some runs and not in others).
    pub min_cycles: u64,
    /// How it runs: for the fixed cycles asked (at least `min_cycles`), or as `check` or a soak
    /// run it at their defaults.
    pub run_as: RunAs,
    /// For a leak only the bytes can see: a function that one of the top three call stacks of the
    /// heap's growth (`check --profile`) must name. The planting function, or for memory pinned
    /// by a leaked object the function whose calls allocated it (a leaked iterator keeps the
    /// memtables the task's writes filled; its own few KiB rank lower).
    pub heap_stack: Option<&'static str>,
    /// What catching it means.
    pub expect: Expect,
}

/// What a catalog entry must show to be caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The verdict `Leak`.
    Leak,
    /// A container still on a steady leak's schedule at the run's end, which no run can tell from
    /// a container whose bound lies beyond it (docs/verdict.md, the rule's point 5): the verdict
    /// `Inconclusive`, the record naming the planted line's container as on schedule. Never
    /// `Clean`.
    OnSchedule,
}

/// How a catalog entry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunAs {
    /// The cycles asked for (at least `min_cycles`), judged once at the end; a leak only exact
    /// signals are expected to see ends the run once each of them has seen it.
    Fixed,
    /// As `check` runs: the cycles asked for (at least 200), then on while the verdict is
    /// inconclusive, up to four times as many, stopping once it decides or an exact signal or the
    /// record of allocations finds a leak.
    Check,
    /// As a soak runs: a sample every 5th cycle, looked at as the cycles double, `cycles` in all,
    /// on a reference store of `tasks` x `segments` (a small one keeps a long soak short).
    Soak {
        /// Cycles of the soak.
        cycles: u64,
        /// Tasks of the reference store.
        tasks: u32,
        /// Live segments per task.
        segments: u32,
    },
}

/// The reference store and the twelve leak classes (the first split in two: through the tracked
/// wrappers, and through raw librocksdb-sys where only the bytes can tell), then the leaks the
/// growth rule finds that a per-cycle tolerance let through (small steady leaks, bursts, a leak
/// on some of a fault point's firings, a descriptor now and then, RocksDB-accounted memory that
/// never levels off), a transaction forgotten on an error path; then the leaks a counter of the
/// process's bytes misjudges (the binding's own 8 B a cycle, a leak beside memory given back
/// faster, a leak that begins late, a container that doubles).
pub const CATALOG: [Mutant; 30] = [
    Mutant {
        name: "reference",
        variant: Variant::Correct,
        description: "the reference store, nothing planted",
        expected: &[],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "offsets-options-tracked",
        variant: Variant::OffsetsOptionsUnownedTracked,
        description: "offsets CF options created (tracked) and never owned (KAFKA-20616)",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "offsets-options-raw",
        variant: Variant::OffsetsOptionsUnownedRaw,
        description: "offsets CF options created through raw librocksdb-sys and never destroyed",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        expect: Expect::Leak,
        heap_stack: Some("ReferenceStore::offsets_options"),
    },
    Mutant {
        name: "marker-failure-skips-release",
        variant: Variant::MarkerFailureSkipsRelease,
        description: "a failed close-time marker write skips the release of the handles (KAFKA-20616)",
        expected: &[Class::Handles, Class::Fds, Class::Integrity],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "migrating-releases-first-only",
        variant: Variant::MigratingReleasesFirstOnly,
        description: "the migrating store releases only the first of its three CF handles on marker failure",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "open-failure-leaks-options",
        variant: Variant::OpenFailureLeaksOptions,
        description: "a failure during open, after the options were made, leaks them",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "scan-iterator-leak",
        variant: Variant::ScanIteratorLeak,
        description: "a range-scan iterator is never released (KAFKA-19748)",
        expected: &[Class::Handles, Class::Fds],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "segment-never-closed",
        variant: Variant::SegmentNeverClosed,
        description: "a segment DB is never closed: LOCK held, SST files open and mapped",
        expected: &[Class::Handles, Class::Fds, Class::Maps, Class::Integrity],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "private-cache-per-segment",
        variant: Variant::PrivateCachePerSegment,
        description: "each segment makes a private 8 MiB cache instead of the declared shared one",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "shared-cache-declared-per-open",
        variant: Variant::SharedCacheDeclaredPerOpen,
        description: "one more cache declared shared at every open, parked in a registry never pruned",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "unpruned-registry",
        variant: Variant::UnprunedRegistry,
        description: "expired segments kept in a registry never pruned: reachable, never freed",
        expected: &[Class::Handles, Class::Fds],
        invisible_to: &[],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "swallowed-close-error",
        variant: Variant::SwallowedCloseError,
        description: "a close error dropped without being looked at",
        expected: &[Class::Swallowed],
        invisible_to: &[Class::Handles],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "commit-before-write",
        variant: Variant::CommitBeforeWrite,
        description: "offsets committed before the output write succeeded (KAFKA-19479)",
        expected: &[Class::Integrity],
        invisible_to: &[Class::Handles, Class::Bytes],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "restore-drops-batch",
        variant: Variant::RestoreDropsBatch,
        description: "restore drops the rest of a batch after one malformed offset key (KAFKA-15800)",
        expected: &[Class::Integrity],
        invisible_to: &[Class::Handles, Class::Bytes],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "raw-malloc-per-cycle",
        variant: Variant::RawMallocPerCycle,
        description: "a raw C allocation of 4 KiB per cycle, no handle at all",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        expect: Expect::Leak,
        heap_stack: Some("ReferenceStore::leak_native"),
    },
    Mutant {
        name: "marker-failure-leaks-bytes",
        variant: Variant::MarkerFailureLeaksBytes,
        description: "a failed close-time marker write leaks 1 KiB of native memory, at check's default 10%",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: CHECK_CYCLES,
        run_as: RunAs::Fixed,
        expect: Expect::Leak,
        heap_stack: Some("ReferenceStore::leak_native"),
    },
    Mutant {
        name: "cache-charged-db-never-closed",
        variant: Variant::CacheChargedDbNeverClosed,
        description: "an untracked side DB, its memtable charged to the shared cache, is never closed",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        expect: Expect::Leak,
        heap_stack: Some("ReferenceStore::open_side_db"),
    },
    Mutant {
        name: "cache-pinning-iterator-leak",
        variant: Variant::CachePinningIteratorLeak,
        description: "an untracked iterator pinning blocks of the shared cache is never released",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: PLAN,
        min_cycles: 0,
        run_as: RunAs::Fixed,
        expect: Expect::Leak,
        heap_stack: Some("ReferenceStore::work_task"),
    },
    Mutant {
        name: "steady-bytes-16",
        variant: Variant::SteadyBytes16,
        description: "16 B of native memory per cycle: a quarter of the per-cycle tolerance",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "steady-bytes-4",
        variant: Variant::SteadyBytes4,
        description: "4 B of native memory per cycle (8 B every other cycle), for a soak to find",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        // The record names it at the soak's first look (200); the counter's growth rule alone
        // needed 3,200 cycles (`leakcheck soak --generations off` finds it there).
        run_as: RunAs::Soak { cycles: 400, tasks: 1, segments: 1 },
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "snapshot-bursts",
        variant: Variant::SnapshotBursts,
        description: "a 32 KiB snapshot buffer kept in about 1% of cycles, flat between the bursts",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        // `check --cycles 200`: its first burst is at cycle 182, after check's early look, which
        // rules out only leaks recurring in 1 of 9 cycles or more often.
        min_cycles: CHECK_CYCLES,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "marker-failure-leaks-sometimes",
        variant: Variant::MarkerFailureLeaksSometimes,
        description: "a failed close-time marker write leaks 4 KiB on 40% of its firings, at check's default 10%",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Soak { cycles: 1_000, tasks: 1, segments: 2 },
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "fd-outside-dir",
        variant: Variant::FdOutsideDir,
        description: "a descriptor outside the store's directory opened every 50 cycles and kept",
        expected: &[Class::Fds],
        invisible_to: &[Class::Handles, Class::Bytes],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "transaction-leak-on-error",
        variant: Variant::TransactionLeakOnError,
        description: "a transaction whose commit is to fail is forgotten on the error path, not rolled back",
        expected: &[Class::Handles],
        invisible_to: &[],
        plan: "close.marker=every:3,work.write=every:4,work.malformed=every:5,open.options=nth:2,work.commit=every:5",
        min_cycles: 0,
        run_as: RunAs::Fixed,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "list-cf-failure",
        variant: Variant::ListCfFailure,
        description: "one failed DB::list_cf a cycle: rust-rocksdb 0.25's own leak, 8 B a cycle",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "leak-beside-give-back",
        variant: Variant::LeakBesideGiveBack,
        description: "1 KiB kept a cycle while a pool filled at start gives back 1,280 B a cycle",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "leak-begins-late",
        variant: Variant::LeakBeginsLate,
        description: "1 KiB kept a cycle from cycle 75 on, the last quarter of check's early look (100 cycles)",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "error-path-beside-cache",
        variant: Variant::ErrorPathBesideCache,
        description: "a function that keeps its buffer in a small cache evicting its oldest, and forgets it on an error path (1 cycle in 4)",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
    Mutant {
        name: "doubling-container",
        variant: Variant::DoublingContainer,
        description: "a list kept for the life of the store, 1 KiB appended a cycle: its buffer doubles",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::OnSchedule,
    },
    Mutant {
        name: "comparator-keeps-keys",
        variant: Variant::ComparatorKeepsKeys,
        description: "the store's own key comparator keeps 256 B of a key it compares in each data write, called from RocksDB's memtable insert",
        expected: &[Class::Bytes],
        invisible_to: &[Class::Handles],
        plan: DEFAULT_CHECK_PLAN,
        min_cycles: 0,
        run_as: RunAs::Check,
        heap_stack: None,
        expect: Expect::Leak,
    },
];

/// The catalog entry by name.
pub fn mutant(name: &str) -> Option<&'static Mutant> {
    CATALOG.iter().find(|m| m.name == name)
}

/// What one variant's run showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MutantOutcome {
    /// The variant's name.
    pub variant: String,
    /// Whether any signal said "leak".
    pub detected: bool,
    /// Classes of the signals that said "leak".
    pub signals: Vec<Class>,
    /// The signals that said "leak", by name.
    pub signal_names: Vec<String>,
    /// Seconds from the start of the run to the first leak verdict (the run's length when none).
    pub seconds: f64,
    /// Cycles to the first leak verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cycles_to_verdict: Option<u64>,
    /// Cycles run.
    pub cycles: u64,
    /// Creation sites (`file:line:column`) of the retained handles the ledger names.
    pub sites: Vec<String>,
    /// Owner paths of the retained handles.
    pub owners: Vec<String>,
    /// The first integrity problems.
    pub integrity_problems: Vec<String>,
    /// Expected classes (from the catalog).
    pub expected: Vec<Class>,
    /// Where the planted leak ran (`file:line`, recorded by `planted!`), if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planted_at: Option<String>,
    /// What the judged cycles' allocations still held at the end (allocation generations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained: Option<leakcheck::verdict::Retained>,
}

/// Whether the run's record names a container still on a leak's schedule, allocated under the
/// planted line `site` (`file:line`).
fn on_schedule_at(report: &leakcheck::HarnessReport, site: Option<String>) -> bool {
    let Some(site) = site else { return false };
    // The file's last two components (`reference/mod.rs:586`): frames name whole paths.
    let (file, line) = site.rsplit_once(':').unwrap_or((&site, ""));
    let parts: Vec<&str> = file.rsplit('/').take(2).collect();
    let wanted = format!("{}:{line}", parts.into_iter().rev().collect::<Vec<_>>().join("/"));
    report.verdict.signal(leakcheck::Signal::RetainedBytes).and_then(|s| s.retained.as_ref()).is_some_and(|r| {
        r.sites.iter().any(|s| {
            matches!(s.judged, Some(leakcheck::verdict::Aged::Open(leakcheck::verdict::Open::OnSchedule { .. })))
                && s.frames.iter().any(|f| f.contains(&wanted))
        })
    })
}

/// The judged signals that said "leak".
fn leaking(v: &RunVerdict) -> impl Iterator<Item = &SignalVerdict> {
    v.signals.iter().filter(|s| s.verdict == Verdict::Leak && !s.informational)
}

/// Runs one catalog entry for `cycles` cycles (at least its `min_cycles`) in `dir` under its plan and judges it.
///
/// # Errors
/// When the store cannot be set up or its directory watched.
pub fn run_mutant(m: &Mutant, dir: &Path, cycles: u64) -> Result<MutantOutcome, HarnessError> {
    let cycles = cycles.max(m.min_cycles);
    let ledger = Ledger::new();
    let mut config = ReferenceConfig::new(dir);
    config.variant = m.variant;
    if let RunAs::Soak { tasks, segments, .. } = m.run_as {
        (config.tasks, config.segments) = (tasks, segments);
    }
    let mut store = ReferenceStore::new(config, &ledger).map_err(|e| HarnessError::Setup(e.into()))?;
    let plan = FaultPlan::parse(m.plan).map_err(HarnessError::Plan)?;
    let cfg = match m.run_as {
        RunAs::Fixed => HarnessConfig { cycles, plan, ..HarnessConfig::default() },
        // As check runs: a leak an exact signal or the record of allocations found stops the run
        // at the cycle that found it.
        RunAs::Check => {
            let first = cycles.max(CHECK_CYCLES);
            HarnessConfig {
                cycles: 4 * first,
                decide_after: Some(first),
                // At check's default cycles, its early look; an entry asking for its cycles runs
                // as `check --cycles N`, which looks first at them.
                early_look: (m.min_cycles == 0 && first == CHECK_CYCLES).then_some(EARLY_LOOK_CYCLES),
                stop_on_exact_leak: true,
                plan,
                ..HarnessConfig::default()
            }
        }
        RunAs::Soak { cycles, .. } => {
            let mut cfg =
                HarnessConfig { cycles, sample_every: 5, keep_records: false, plan, ..HarnessConfig::default() };
            cfg.analysis.looks = leakcheck::verdict::Looks::Doubling { first: CHECK_CYCLES };
            cfg
        }
    };
    let harness = Harness::new(cfg);
    let analysis = harness.config.analysis;
    let start = Instant::now();
    // Elapsed seconds at the end of each cycle, and the first checkpoint at which each
    // statistical signal said "leak": the time to verdict counts only signals that still say so
    // at the end, not a passing alarm.
    let mut times: Vec<f64> = Vec::with_capacity(cycles as usize);
    let mut first_statistical: BTreeMap<SignalId, u64> = BTreeMap::new();
    let mut looks = 0;
    // Only the cycles that decide it: a fixed run whose every expected class is an exact signal's
    // stops once each has seen the leak (exact residue stays: the end's verdict has it too); one
    // the bytes must see runs all its cycles (an exact signal that sees it too, a DB never closed
    // holding its files open, must not end it before the bytes are judged). A soak runs all its
    // cycles: its per-firing attribution needs them.
    let stop_once_seen = m.run_as == RunAs::Fixed && !m.expected.is_empty() && !m.expected.contains(&Class::Bytes);
    let mut seen: BTreeSet<Class> = BTreeSet::new();
    let report = harness.run_observed(&mut store, &ledger, |p| {
        times.push(start.elapsed().as_secs_f64());
        let n = p.samples.len();
        // Each of these looks, every 10 cycles, gets its part of the false-positive rate, as
        // check's do.
        let look = (n > analysis.warmup_cycles + 10 && n % 10 == 0).then(|| {
            looks += 1;
            p.analysis.judge(Look::interim(looks))
        });
        for s in look.iter().flat_map(leaking) {
            first_statistical.entry(s.signal.clone()).or_insert(p.record.cycle);
        }
        if stop_once_seen {
            // The look just taken, else one now (judged as the latest look).
            let now = look.unwrap_or_else(|| p.analysis.judge(Look::interim(looks.max(1))));
            seen.extend(leaking(&now).filter(|s| s.kind() == RuleKind::Exact).map(|s| s.class()));
            if m.expected.iter().all(|c| seen.contains(c)) {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    })?;
    // A run as check runs has its statistical verdict from check's looks: the cycles it was
    // judged after (the observer's looks above come every 10 cycles from the start).
    let judged_after = (m.run_as == RunAs::Check).then_some(report.verdict.judged_at_cycles).flatten();
    let first_cycle = leaking(&report.verdict)
        .filter_map(|s| {
            let statistical =
                || judged_after.map(|c| c.saturating_sub(1)).or_else(|| first_statistical.get(&s.signal).copied());
            s.residue.and_then(|r| r.first_cycle).map(|c| c as u64).or_else(statistical)
        })
        .min();
    let mut names: BTreeSet<String> = leaking(&report.verdict).map(|s| s.signal.to_string()).collect();
    let mut classes: BTreeSet<Class> = leaking(&report.verdict).map(|s| s.class()).collect();
    let detected = match m.expect {
        Expect::Leak => report.verdict.verdict == Verdict::Leak,
        Expect::OnSchedule => {
            let named = report.verdict.verdict == Verdict::Inconclusive
                && on_schedule_at(&report, crate::planted::site_of(m.name));
            // The signal that named it, undecided: retained_bytes, of the bytes.
            if named {
                names.insert(SignalId::from(leakcheck::Signal::RetainedBytes).to_string());
                classes.insert(Class::Bytes);
            }
            named
        }
    };
    let mut sites = BTreeSet::new();
    let mut owners = BTreeSet::new();
    for g in &report.ledger.retained {
        sites.extend(g.site.clone());
        owners.extend(g.owner.clone());
    }
    for r in &report.records {
        sites.extend(r.unshared_cache_sites.iter().cloned());
        // `file:line:column (xN)`: the site of handles declared shared after the first cycle.
        sites.extend(r.declared_shared_growth_sites.iter().map(|s| s.split(" (x").next().unwrap_or(s).to_string()));
    }
    let integrity_problems = report.records.iter().flat_map(|r| r.integrity.problems.iter().cloned()).take(5).collect();
    Ok(MutantOutcome {
        variant: m.name.to_string(),
        detected,
        signals: classes.into_iter().collect(),
        signal_names: names.into_iter().collect(),
        seconds: first_cycle
            .and_then(|c| times.get(c as usize).copied())
            .unwrap_or_else(|| start.elapsed().as_secs_f64()),
        cycles_to_verdict: first_cycle.map(|c| c + 1),
        cycles: report.cycles_run,
        sites: sites.into_iter().collect(),
        owners: owners.into_iter().collect(),
        integrity_problems,
        expected: m.expected.to_vec(),
        planted_at: crate::planted::site_of(m.name),
        retained: report.verdict.signal(leakcheck::Signal::RetainedBytes).and_then(|s| s.retained.clone()),
    })
}
