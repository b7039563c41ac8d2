//! Calibration of the false-positive rate: exactly the judgement `check` and `soak` make, on
//! simulated clean runs whose noise is drawn from recorded clean runs (`tests/data/clean-runs/`,
//! samples.csv files of the reference store and the clean-store catalog, re-recorded with
//! `scripts/record-clean-runs`).
//!
//! The simulation is a moving-block bootstrap of residuals. A simulated run starts as the
//! recorded one did (its first 100 cycles as recorded: the warm-up and the slow settling after
//! it, a long-lived DB's memory still rising for 40 cycles past the warm-up, are how a store
//! starts, not noise to scatter over a run). Past them, each column of the recorded run is split
//! into its level and its residuals around a Theil-Sen line, and the simulated run lays blocks of
//! 20 consecutive residual rows (all columns of a row together, so signals keep their correlation
//! and each its autocorrelation within a block) onto the level, with no trend: a clean store by
//! construction, noisy as real ones are.
//!
//! `check`: judged at 200 cycles, then every 10 while inconclusive, up to 800, each look at its
//! share of the run's false-positive rate. `soak`: a sample every 5th cycle, judged once.
//! Asserted: the share of simulated runs called "leak" is within the configured rate (at most
//! twice it over 1,000 runs, which a true rate at the bound exceeds with probability below 0.1%).
//!
//! Pure computation (no process-wide signal is read): safe beside other tests.

use leakcheck::report::parse_samples_csv;
use leakcheck::verdict::{Analysis, AnalysisConfig, Look, Verdict};

/// Cycles of a simulated run taken as recorded.
const PREFIX: usize = 100;
const CHECK_CYCLES: usize = 200;
const MAX_CYCLES: usize = 800;
const BLOCK: usize = 20;
const RUNS: usize = 1000;

/// A recorded run as the quantities the verdict judges, one row per cycle: each is resampled
/// as a unit (resampling allocated and explained bytes apart would give their difference a
/// trend of its own where their fitted lines differ, as a bookkeeping series growing in steps
/// and allocated bytes growing with it do).
struct Recorded {
    name: String,
    /// Per quantity ([`QUANTITIES`]), its value at each cycle (None where not read).
    columns: Vec<Vec<Option<f64>>>,
}

/// unexplained bytes, RocksDB's explained part, bookkeeping, thread caches, resident, RSS outside
/// jemalloc, RSS, then the OS counts.
const QUANTITIES: [&str; 14] = [
    "unexplained",
    "rocksdb",
    "bookkeeping",
    "tcache",
    "resident",
    "rss_outside",
    "rss",
    "open_fds",
    "open_fds_under_dir",
    "maps",
    "maps_under_dir",
    "threads",
    "file_maps",
    "retained_handles",
];

fn recorded() -> Vec<Recorded> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/clean-runs");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("tests/data/clean-runs").flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths.into_iter().filter(|p| p.extension().is_some_and(|e| e == "csv")) {
        let text = std::fs::read_to_string(&path).expect("read");
        let samples = parse_samples_csv(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(samples.len() >= PREFIX + 5 * BLOCK, "{}: {} samples", path.display(), samples.len());
        assert!(samples.iter().enumerate().all(|(i, s)| s.cycle == i as u64), "{}: a sample every cycle", path.display());
        let f = |v: Option<u64>| v.map(|v| v as f64);
        let columns = QUANTITIES
            .iter()
            .map(|q| {
                samples
                    .iter()
                    .map(|c| {
                        let s = &c.sample;
                        let p = &s.process;
                        let resident = s.jemalloc.filter(|j| j.purged).map(|j| j.resident_bytes as f64);
                        match *q {
                            "unexplained" => s.unexplained_bytes().map(|v| v as f64),
                            "rocksdb" => s.rocksdb.map(|r| r.explained_bytes() as f64),
                            "bookkeeping" => s.bookkeeping_bytes.map(|v| v as f64),
                            "tcache" => s.jemalloc.map(|j| j.tcache_bytes as f64),
                            "resident" => resident,
                            "rss_outside" => Some(f(p.rss_anon_bytes)? - resident?),
                            "rss" => f(p.rss_bytes),
                            "open_fds" => f(p.open_fds),
                            "open_fds_under_dir" => f(p.open_fds_under_dir),
                            "maps" => f(p.maps),
                            "maps_under_dir" => f(p.maps_under_dir),
                            "threads" => f(p.threads),
                            "file_maps" => f(p.file_maps),
                            _ => Some(c.retained_handles.values().sum::<u64>() as f64),
                        }
                    })
                    .collect()
            })
            .collect();
        out.push(Recorded { name: path.file_stem().unwrap_or_default().to_string_lossy().into_owned(), columns });
    }
    assert!(out.len() >= 5, "too few recorded clean runs: {}", out.len());
    out
}

/// splitmix64: a small seeded generator, enough for drawing block starts.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A standard normal draw (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = ((self.next() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Level (a least-squares line's intercept at the first cycle past the prefix, moved to the
/// residuals' median) and residuals of one quantity past the prefix; None where it was not read.
fn split(column: &[Option<f64>]) -> Option<(f64, Vec<f64>)> {
    let ys: Vec<f64> = column[PREFIX..].iter().copied().collect::<Option<_>>()?;
    let xs: Vec<f64> = (0..ys.len()).map(|i| i as f64).collect();
    let n = ys.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let slope = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum::<f64>() / sxx;
    let detrended: Vec<f64> = ys.iter().zip(&xs).map(|(y, x)| y - slope * x).collect();
    let mut sorted = detrended.clone();
    sorted.sort_by(f64::total_cmp);
    let level = sorted[sorted.len() / 2];
    Some((level, detrended.iter().map(|v| v - level).collect()))
}

/// One simulated clean run of MAX_CYCLES cycles, as samples.csv text.
fn simulate(r: &Recorded, parts: &[Option<(f64, Vec<f64>)>], rng: &mut Rng, null: Null) -> String {
    let mut out = leakcheck::report::SAMPLES_COLUMNS.join(",");
    out.push('\n');
    let post_len = r.columns[0].len() - PREFIX;
    let mut rows: Vec<Vec<Option<f64>>> = (0..null.prefix).map(|t| r.columns.iter().map(|c| c[t]).collect()).collect();
    let added = null.noise.series(rng, MAX_CYCLES);
    while rows.len() < MAX_CYCLES {
        let start = rng.below(post_len - BLOCK + 1);
        for k in start..start + BLOCK {
            rows.push(parts.iter().map(|p| p.as_ref().map(|(level, res)| level + res[k])).collect());
        }
    }
    rows.truncate(MAX_CYCLES);
    let q = |name: &str| QUANTITIES.iter().position(|n| *n == name).expect("quantity");
    for (cycle, v) in rows.iter().enumerate() {
        let get = |name: &str| v[q(name)];
        let count = |name: &str| get(name).map(|x| x.round().max(0.0));
        let explained = get("rocksdb").unwrap_or(0.0) + get("bookkeeping").unwrap_or(0.0) + get("tcache").unwrap_or(0.0);
        let unexplained = get("unexplained").map(|u| u + null.drift * cycle as f64 + added[cycle]);
        let allocated = unexplained.map(|u| u + explained);
        let rss_anon = get("resident").zip(get("rss_outside")).map(|(a, b)| a + b);
        let value = |column: &str| -> Option<f64> {
            match column {
                "cycle" => Some(cycle as f64),
                "monotonic_ns" => Some(cycle as f64 * 1e6),
                "allocated_bytes" => allocated,
                "resident_bytes" => get("resident"),
                "explained_bytes" => Some(explained),
                "unexplained_bytes" => unexplained,
                "bookkeeping_bytes" => get("bookkeeping"),
                // RocksDB's part as one figure (the parser adds the components back up).
                "rocksdb_mem_table_bytes" => get("rocksdb"),
                "rocksdb_table_readers_bytes" | "rocksdb_cache_bytes" => get("rocksdb").map(|_| 0.0),
                "rocksdb_cache_reserved_bytes" | "rocksdb_cache_over_capacity_bytes" => get("rocksdb").map(|_| 0.0),
                "rss_bytes" => get("rss"),
                "rss_anon_bytes" => rss_anon,
                "tcache_bytes" => get("tcache"),
                // Not in the recorded runs (flat without profiling: 88,064 B on the reference
                // store); an empty cell reads as 0, so explained stays what it was recorded as.
                "allocator_internal_bytes" => None,
                "settled" => None,
                other => count(other),
            }
        };
        let cells: Vec<String> = leakcheck::report::SAMPLES_COLUMNS
            .iter()
            .map(|c| match (*c, value(c)) {
                ("settled", _) => "true".to_string(),
                (_, Some(x)) => format!("{}", x.round().max(0.0) as i64),
                (_, None) => String::new(),
            })
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

/// What the simulated runs of one recorded run came to.
#[derive(Default)]
struct Tally {
    runs: usize,
    check_leak: usize,
    check_clean: usize,
    soak_leak: usize,
    soak_clean: usize,
    looks: usize,
    named: std::collections::BTreeMap<String, usize>,
}

impl Tally {
    fn add(&mut self, t: &Tally) {
        self.runs += t.runs;
        self.check_leak += t.check_leak;
        self.check_clean += t.check_clean;
        self.soak_leak += t.soak_leak;
        self.soak_clean += t.soak_clean;
        self.looks += t.looks;
        for (k, v) in &t.named {
            *self.named.entry(k.clone()).or_default() += v;
        }
    }
}

fn simulate_runs(r: &Recorded, n: usize, seed: u64, null: Null) -> Tally {
    let cfg = AnalysisConfig::default();
    let check_cfg = cfg.looking_from(CHECK_CYCLES as u64);
    let parts: Vec<_> = r.columns.iter().map(|c| split(c)).collect();
    let mut rng = Rng(seed);
    let mut t = Tally { runs: n, ..Tally::default() };
    for _ in 0..n {
        let text = simulate(r, &parts, &mut rng, null);
        let samples = parse_samples_csv(&text).expect("simulated CSV reads back");
        assert_eq!(samples.len(), MAX_CYCLES);
        // check: look at 200, then every 10 while inconclusive (or only the first look), the
        // samples folded as the harness folds them.
        let last = if null.first_look_only { CHECK_CYCLES } else { MAX_CYCLES };
        let mut a = Analysis::new(check_cfg);
        let mut fed = 0;
        let mut end = CHECK_CYCLES;
        let v = loop {
            t.looks += 1;
            for s in &samples[fed..end] {
                a.sample(s);
            }
            fed = end;
            let v = a.look(Look { index: check_cfg.looks.index(end as u64, end >= last), last: end >= last });
            if v.verdict != Verdict::Inconclusive || end >= last {
                break v;
            }
            end += 10;
        };
        if std::env::var("CALIBRATION_DEBUG").is_ok() && v.verdict == Verdict::Inconclusive {
            for s in v.signals.iter().filter(|s| s.verdict == Verdict::Inconclusive && !s.informational) {
                eprintln!("DEBUG {} {}: {:?} {:?} more {:?}", r.name, s.signal, s.growth, s.retention, s.more_cycles_needed);
            }
        }
        if v.verdict == Verdict::Leak {
            t.check_leak += 1;
            for s in v.leaking_signals() {
                *t.named.entry(format!("check {}: {s} at cycle {end}", r.name)).or_default() += 1;
            }
        }
        t.check_clean += usize::from(v.verdict == Verdict::Clean);
        // soak: every 5th cycle, judged as the cycles double (200, 400) and at the end (800).
        let soak_cfg = AnalysisConfig { looks: leakcheck::verdict::Looks::Doubling { first: CHECK_CYCLES as u64 }, ..cfg };
        let mut a = Analysis::new(soak_cfg);
        let mut soak = None;
        for s in samples.iter().filter(|s| s.cycle % 5 == 0) {
            a.sample(s);
            let done = s.cycle + 5;
            let last = done as usize >= MAX_CYCLES;
            if soak_cfg.looks.due(done) || last {
                let v = a.look(Look { index: soak_cfg.looks.index(done, last), last });
                if v.verdict == Verdict::Leak && soak.is_none() {
                    soak = Some(v.clone());
                }
                if last {
                    soak.get_or_insert(v);
                }
            }
        }
        let v = soak.expect("a soak look");
        if v.verdict == Verdict::Leak {
            t.soak_leak += 1;
            for s in v.leaking_signals() {
                *t.named.entry(format!("soak {}: {s}", r.name)).or_default() += 1;
            }
        }
        t.soak_clean += usize::from(v.verdict == Verdict::Clean);
    }
    t
}

/// How simulated runs differ from the recorded ones.
#[derive(Debug, Clone, Copy)]
struct Null {
    /// Cycles taken as recorded before the residual blocks.
    prefix: usize,
    /// Unexplained bytes added per cycle (from cycle 0).
    drift: f64,
    /// Noise added to the unexplained bytes.
    noise: Noise,
    /// Judge `check` at its first look only.
    first_look_only: bool,
    /// Which judgements the bound is asserted on.
    judged: Judged,
}

/// Which of `check` and `soak` a null is for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Judged {
    Both,
    Check,
    Soak,
}

/// Noise added to the recorded runs' unexplained bytes: the dependence the recorded runs do not
/// show but a store could.
#[derive(Debug, Clone, Copy)]
enum Noise {
    None,
    /// AR(1) with this coefficient and innovations of this standard deviation (bytes).
    Ar { rho: f64, sd: f64 },
    /// A random walk with steps of this standard deviation (bytes): memory that wanders with no
    /// level to return to.
    Walk { sd: f64 },
}

impl Noise {
    fn series(self, rng: &mut Rng, n: usize) -> Vec<f64> {
        let mut out = Vec::with_capacity(n);
        let mut x = 0.0;
        for i in 0..n {
            x = match self {
                Noise::None => 0.0,
                Noise::Ar { rho, sd } if i == 0 => sd * rng.normal() / (1.0 - rho * rho).sqrt(),
                Noise::Ar { rho, sd } => rho * x + sd * rng.normal(),
                Noise::Walk { sd } => x + sd * rng.normal(),
            };
            out.push(x);
        }
        out
    }
}

/// Simulates RUNS runs from the recorded ones under `null`, prints the tallies and asserts that
/// `check` and `soak` called at most twice the configured rate of them leaks.
fn calibrate(null: Null) {
    let runs = recorded();
    let rate = AnalysisConfig::default().false_positive_rate;
    let share = |i: usize| RUNS / runs.len() + usize::from(i < RUNS % runs.len());
    // Two threads (the machines have two cores), each taking every other recorded run.
    let tallies: Vec<(usize, Tally)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|w| {
                let runs = &runs;
                scope.spawn(move || {
                    (0..runs.len())
                        .filter(|i| i % 2 == w)
                        .map(|i| (i, simulate_runs(&runs[i], share(i), 20_261_130 + i as u64, null)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("simulation thread")).collect()
    });
    let mut all = Tally::default();
    let mut tallies = tallies;
    tallies.sort_by_key(|(i, _)| *i);
    for (i, t) in &tallies {
        eprintln!(
            "{:<24} {:>4} simulated runs: check {} leak, {} clean; soak {} leak, {} clean",
            runs[*i].name, t.runs, t.check_leak, t.check_clean, t.soak_leak, t.soak_clean
        );
        all.add(t);
    }
    let total = all.runs;
    eprintln!("{null:?}");
    eprintln!(
        "check: {}/{total} leak, {}/{total} clean ({:.1} looks a run); soak: {}/{total} leak, {}/{total} clean; configured rate {rate}",
        all.check_leak,
        all.check_clean,
        all.looks as f64 / total as f64,
        all.soak_leak,
        all.soak_clean,
    );
    for (k, v) in &all.named {
        eprintln!("  {k}: {v}");
    }
    assert_eq!(total, RUNS);
    let bound = (2.0 * rate * total as f64).ceil() as usize;
    if null.judged != Judged::Soak {
        assert!(all.check_leak <= bound, "check called {} of {total} clean runs a leak (bound {bound})", all.check_leak);
    }
    if null.judged != Judged::Check {
        assert!(all.soak_leak <= bound, "soak called {} of {total} clean runs a leak (bound {bound})", all.soak_leak);
    }
}


/// No trend past a realistic start: what a clean store's runs look like. Exactly `check`'s
/// looks (200, then every 10 while inconclusive, up to 800) and `soak`'s (200, 400, 800).
#[test]
fn simulated_clean_runs_are_called_leaks_within_the_configured_rate() {
    calibrate(Null { prefix: PREFIX, drift: 0.0, noise: Noise::None, first_look_only: false, judged: Judged::Both });
}

/// The least favourable clean store: unexplained bytes growing by exactly the budget over the
/// later half of `check`'s first look (4 KiB over 90 cycles), the whole run drawn from residual
/// blocks: the interval's own error rate, under the autocorrelation of real runs, at the look
/// where a clean run at the boundary is decided or goes on (61% of the rate).
#[test]
fn at_the_budget_checks_first_look_stays_within_the_rate() {
    let cfg = AnalysisConfig::default();
    let later_half = (CHECK_CYCLES - 1 - cfg.warmup_cycles) as f64 / 2.0;
    let drift = cfg.budgets.bytes.expect("a byte budget") / later_half;
    calibrate(Null { prefix: 0, drift, noise: Noise::None, first_look_only: true, judged: Judged::Check });
}

/// The same at a soak's last look (4 KiB over the later 390 cycles of 800): a growth that is
/// within the budget at its earlier looks and exactly at it at the last.
#[test]
fn at_the_budget_a_soaks_last_look_stays_within_the_rate() {
    let cfg = AnalysisConfig::default();
    let later_half = (MAX_CYCLES - 5 - cfg.warmup_cycles) as f64 / 2.0;
    let drift = cfg.budgets.bytes.expect("a byte budget") / later_half;
    calibrate(Null { prefix: 0, drift, noise: Noise::None, first_look_only: true, judged: Judged::Soak });
}

/// Strongly autocorrelated noise (AR(1), rho 0.95, stationary deviation 3.2 KiB) on top of the
/// recorded runs: `check`'s every look and a soak's stay within the rate.
#[test]
fn autocorrelated_noise_stays_within_the_rate() {
    calibrate(Null { prefix: PREFIX, drift: 0.0, noise: Noise::Ar { rho: 0.95, sd: 1024.0 }, first_look_only: false, judged: Judged::Both });
}

/// Memory that wanders like a random walk (steps of 256 B, 5 KiB over a check's later half):
/// `check`'s every look and a soak's stay within the rate.
#[test]
fn random_walk_noise_stays_within_the_rate() {
    calibrate(Null { prefix: PREFIX, drift: 0.0, noise: Noise::Walk { sd: 256.0 }, first_look_only: false, judged: Judged::Both });
}
