//! The catalog: every clean store with its fault plan, and one run of a store as `check` runs it.

#[allow(clippy::wildcard_imports)]
use super::*;

/// One correct store of the catalog.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CleanStore {
    /// Name on the command line and in reports.
    pub name: &'static str,
    /// What it does that the reference store does not.
    pub description: &'static str,
    /// The fault plan it runs under.
    pub plan: &'static str,
    run: fn(&Path, &Ledger, &HarnessConfig) -> std::result::Result<HarnessReport, HarnessError>,
}

fn setup<T>(r: Result<T>) -> std::result::Result<T, HarnessError> {
    r.map_err(|e| HarnessError::Setup(e.0.into()))
}

/// The catalog.
pub const CLEAN_CATALOG: [CleanStore; 13] = [
    CleanStore {
        name: "long-lived-db",
        description: "one DB open for the whole run (declared shared), flushing and compacting in the background",
        plan: "open.batch=3%,work.write=5%,work.scan=5%:panic,close.flush=5%",
        run: |dir, ledger, cfg| checked(&mut setup(LongLivedDb::new(dir, ledger))?, ledger, cfg),
    },
    CleanStore {
        name: "growing-db",
        description: "one DB open for the whole run, never overwriting a key: its data, files and table readers grow",
        plan: "open.batch=3%,work.write=5%,work.scan=5%:panic,close.flush=5%",
        run: |dir, ledger, cfg| checked(&mut setup(LongLivedDb::growing(dir, ledger))?, ledger, cfg),
    },
    CleanStore {
        name: "growing-reopened",
        description: "one directory reopened every cycle, its data growing, flushes and compactions in every cycle",
        plan: "open.db=3%,work.write=5%,work.scan=5%:panic,close.marker=10%",
        run: |dir, ledger, cfg| {
            let dir = dir.join("db");
            crate::create_store_dir(&dir)?;
            checked(&mut GrowingReopened { dir }, ledger, cfg)
        },
    },
    CleanStore {
        name: "async-close",
        description: "close finishes on another thread about 50 ms after close returns",
        plan: "work.write=5%,close.marker=10%",
        run: |dir, ledger, cfg| {
            let mut store = AsyncClose { dir: dir.to_path_buf(), closing: Vec::new(), errors: mpsc::channel() };
            checked(&mut store, ledger, cfg)
        },
    },
    CleanStore {
        name: "shared-cache-wbm",
        description: "three DBs per cycle sharing a declared block cache and write buffer manager",
        plan: "open.db=3%,work.write=5%,close.marker=10%",
        run: |dir, ledger, cfg| checked(&mut SharedCacheWbm::new(dir, ledger), ledger, cfg),
    },
    CleanStore {
        name: "cf-churn",
        description: "column families created and dropped every cycle, a checkpoint opened read-only, iterators",
        plan: "work.create_cf=3%,work.write=5%,work.checkpoint=5%,work.scan=5%:panic,close.drop_cf=3%",
        run: |dir, ledger, cfg| checked(&mut CfChurn { dir: dir.to_path_buf(), cfs: BTreeSet::new() }, ledger, cfg),
    },
    CleanStore {
        name: "multi-threaded-cf",
        description: "multi-threaded column-family mode, two threads writing and scanning at once",
        plan: "work.write=5%,work.scan=5%",
        run: |dir, ledger, cfg| {
            checked(&mut MultiThreadedCf { dir: dir.to_path_buf(), leftover: BTreeSet::new() }, ledger, cfg)
        },
    },
    CleanStore {
        name: "read-only-beside-writer",
        description: "a read-only open of the directory beside its open writer, every cycle",
        plan: "work.write=5%,open.read_only=5%",
        run: |dir, ledger, cfg| checked(&mut ReadOnlyBesideWriter { dir: dir.to_path_buf() }, ledger, cfg),
    },
    CleanStore {
        name: "turning-cache",
        description: "rust-rocksdb's own types: a 512 KiB cache shared by every open, turning over, never let go of",
        plan: "open.db=3%,work.read=5%,work.write=5%,close.flush=5%",
        run: |dir, ledger, cfg| checked(&mut setup(TurningCache::new(dir))?, ledger, cfg),
    },
    CleanStore {
        name: "kept-cache",
        description:
            "a 64 MiB block cache shared by every cycle's DB, filling 14 KB a cycle, reported, never let go of",
        plan: "open.db=3%,work.read=5%,close.flush=5%",
        run: |dir, ledger, cfg| checked(&mut setup(KeptCache::new(dir, ledger))?, ledger, cfg),
    },
    CleanStore {
        name: "kept-db",
        description:
            "a DB kept open and reported, its memtable filling 40 KB a cycle, a segment DB opened and closed beside it",
        plan: "open.segment=3%,work.write=5%,close.flush=5%",
        run: |dir, ledger, cfg| checked(&mut setup(KeptDb::new(dir, ledger))?, ledger, cfg),
    },
    CleanStore {
        name: "bounded-log",
        description: "a VecDeque of the last 2,048 events that doubles until it holds them, then drops its oldest",
        plan: "open.db=3%,work.write=5%",
        run: |dir, ledger, cfg| checked(&mut BoundedLog::new(dir), ledger, cfg),
    },
    CleanStore {
        name: "reference-4x8",
        description: "the reference store at 4 tasks x 8 segments (32 instances per cycle)",
        plan: DEFAULT_CHECK_PLAN,
        run: |dir, ledger, cfg| {
            let mut config = ReferenceConfig::new(dir.join("store"));
            config.tasks = 4;
            config.segments = 8;
            let mut store = ReferenceStore::new(config, ledger).map_err(|e| HarnessError::Setup(e.into()))?;
            checked(&mut store, ledger, cfg)
        },
    },
];

/// The catalog entry by name.
pub fn clean_store(name: &str) -> Option<&'static CleanStore> {
    CLEAN_CATALOG.iter().find(|s| s.name == name)
}

fn checked<L: Lifecycle>(
    store: &mut L,
    ledger: &Ledger,
    cfg: &HarnessConfig,
) -> std::result::Result<HarnessReport, HarnessError> {
    let cfg = HarnessConfig { decide_after: Some(CHECK_CYCLES), early_look: Some(EARLY_LOOK_CYCLES), ..cfg.clone() };
    Harness::new(cfg).run(store, ledger)
}

/// What one run of a catalog store showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CleanOutcome {
    /// The store's name.
    pub store: String,
    /// The seed of its fault plan.
    pub seed: u64,
    /// The run's verdict: must be clean.
    pub verdict: Verdict,
    /// Judged signals that said leak.
    pub leaking: Vec<String>,
    /// Judged signals that said inconclusive (and held the run there).
    pub inconclusive: Vec<String>,
    /// Judged signals that are clean with growth below the tolerance (warnings).
    pub warnings: Vec<String>,
    /// Cycles run.
    pub cycles: u64,
    /// Cycles in which a fault fired.
    pub faulted_cycles: u64,
    /// Seconds the run took.
    pub seconds: f64,
    /// The unexplained bytes' slope per cycle and its interval, when judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_cycle: Option<[f64; 3]>,
    /// What the judged cycles' allocations still held at the end (allocation generations).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retained: Option<leakcheck::verdict::Retained>,
    /// Leaks the counter's growth rule found that the record contradicted (the cycles they grew
    /// over held less than they would have left): shown, not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shown_leaks: Vec<String>,
}

/// Runs one catalog store in `dir` with `seed`, as `leakcheck check` would (its default cycles,
/// going on while inconclusive up to four times as many), and judges it.
///
/// # Errors
/// When the store cannot be set up or its directory watched.
pub fn run_clean(store: &CleanStore, dir: &Path, seed: u64) -> std::result::Result<CleanOutcome, HarnessError> {
    run_clean_report(store, dir, seed).map(|(o, _)| o)
}

/// [`run_clean`], with the harness's whole report (samples, records, verdicts) for a closer look.
///
/// # Errors
/// When the store cannot be set up or its directory watched.
pub fn run_clean_report(
    store: &CleanStore,
    dir: &Path,
    seed: u64,
) -> std::result::Result<(CleanOutcome, HarnessReport), HarnessError> {
    let ledger = Ledger::new();
    let cfg = HarnessConfig {
        cycles: CHECK_MAX_CYCLES,
        plan: FaultPlan::parse(store.plan)?,
        seed,
        ..HarnessConfig::default()
    };
    let started = Instant::now();
    let report = (store.run)(dir, &ledger, &cfg)?;
    let judged = report.verdict.signals.iter().filter(|s| !s.informational);
    let names = |f: &dyn Fn(&leakcheck::SignalVerdict) -> bool| {
        judged.clone().filter(|s| f(s)).map(|s| s.signal.to_string()).collect()
    };
    let bytes = report
        .verdict
        .signal(leakcheck::Signal::UnexplainedBytes)
        .and_then(|s| s.estimate)
        .map(|e| [e.value, e.lower, e.upper]);
    let outcome = CleanOutcome {
        store: store.name.to_string(),
        seed,
        verdict: report.verdict.verdict,
        leaking: names(&|s| s.verdict == Verdict::Leak),
        inconclusive: names(&|s| s.verdict == Verdict::Inconclusive && !s.corroborating()),
        warnings: names(&|s| s.growth_below_budget),
        cycles: report.cycles_run,
        faulted_cycles: report.records.iter().filter(|r| !r.faults_fired.is_empty()).count() as u64,
        seconds: started.elapsed().as_secs_f64(),
        bytes_per_cycle: bytes,
        retained: report.verdict.signal(leakcheck::Signal::RetainedBytes).and_then(|s| s.retained.clone()),
        shown_leaks: report
            .verdict
            .signals
            .iter()
            .filter(|s| {
                s.informational && s.verdict == Verdict::Leak && s.record_holds.is_some_and(|h| h.contradicts())
            })
            .map(|s| s.signal.to_string())
            .collect(),
    };
    Ok((outcome, report))
}

crate::opaque_debug!(
    LongLivedDb,
    LongLivedCycle,
    GrowingReopened,
    AsyncClose,
    SharedCacheWbm,
    CfChurn,
    MultiThreadedCf,
    ReadOnlyBesideWriter,
    TurningCache,
    KeptCache,
    KeptDb,
    BoundedLog
);
