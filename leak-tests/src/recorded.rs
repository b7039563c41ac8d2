//! Recorded clean runs, and runs simulated from them: the calibration of the false-positive rate
//! (`leak-tests/tests/verdict_calibration.rs`) and the power curve (`leakcheck power`) judge simulated runs
//! exactly as `check` and `soak` judge real ones, fast enough for thousands of runs.
//!
//! The recorded runs are samples.csv files of the reference store and the clean-store catalog
//! (`leak-tests/data/clean-runs/`, re-recorded with `scripts/record-clean-runs`). A simulated run is a
//! moving-block bootstrap of residuals: it starts as the recorded one did (its first `prefix`
//! cycles as recorded: the warm-up and the slow settling after it are how a store starts, not
//! noise to scatter over a run); past them each quantity of the recorded run is split into its
//! level and its residuals around a least-squares line, and the simulated run lays blocks of 20
//! consecutive residual rows (all quantities of a row together, so signals keep their
//! correlation and each its autocorrelation within a block) onto the level, with no trend: a
//! clean store by construction, noisy as real ones are. Added to it, as asked: noise the recorded
//! runs do not show, and a planted leak.

use leakcheck::report::{parse_samples_csv, ReportError, SAMPLES_COLUMNS};
use leakcheck::verdict::CycleSample;

/// Rows of residuals laid down together.
const BLOCK: usize = 20;

/// The recorded clean runs, embedded: (name, samples.csv).
const CLEAN_RUNS: [(&str, &str); 9] = [
    ("async-close", include_str!("../data/clean-runs/async-close.csv")),
    ("cf-churn", include_str!("../data/clean-runs/cf-churn.csv")),
    ("growing-reopened", include_str!("../data/clean-runs/growing-reopened.csv")),
    ("long-lived-db", include_str!("../data/clean-runs/long-lived-db.csv")),
    ("multi-threaded-cf", include_str!("../data/clean-runs/multi-threaded-cf.csv")),
    ("read-only-beside-writer", include_str!("../data/clean-runs/read-only-beside-writer.csv")),
    ("reference-4x8", include_str!("../data/clean-runs/reference-4x8.csv")),
    ("reference-check", include_str!("../data/clean-runs/reference-check.csv")),
    ("shared-cache-wbm", include_str!("../data/clean-runs/shared-cache-wbm.csv")),
];

/// The quantities a simulated run resamples as one row: unexplained bytes, RocksDB's unbounded
/// part and its caches, bookkeeping, thread caches, resident, RSS outside jemalloc, RSS, then the
/// OS counts. (Resampling allocated and explained bytes apart would give their difference a trend
/// of its own where their fitted lines differ.)
const QUANTITIES: [&str; 15] = [
    "unexplained",
    "rocksdb_unbounded",
    "rocksdb_cache",
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

/// A recorded run: its quantities at each cycle.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The store it was recorded on.
    pub name: String,
    /// Per quantity ([`QUANTITIES`]), its value at each cycle (None where not read).
    columns: Vec<Vec<Option<f64>>>,
    /// Per quantity, its level and residuals past the prefix (None where not read throughout).
    parts: Vec<Option<(f64, Vec<f64>)>>,
    prefix: usize,
}

/// The recorded clean runs.
///
/// # Panics
/// If an embedded run does not read back (a build of a broken repository).
pub fn clean_runs(prefix: usize) -> Vec<Recorded> {
    CLEAN_RUNS
        .iter()
        .map(|(name, text)| {
            Recorded::parse(name, text, prefix).unwrap_or_else(|e| panic!("leak-tests/data/clean-runs/{name}.csv: {e}"))
        })
        .collect()
}

/// The recorded clean run of `name`.
pub fn clean_run(name: &str, prefix: usize) -> Option<Recorded> {
    CLEAN_RUNS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(n, text)| Recorded::parse(n, text, prefix).unwrap_or_else(|e| panic!("{n}: {e}")))
}

/// splitmix64 and Box-Muller: a small seeded generator.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A uniform draw in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal draw.
    pub fn normal(&mut self) -> f64 {
        let u = ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Noise added to a simulated run's unexplained bytes: dependence the recorded runs do not show
/// but a store could.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Noise {
    /// None.
    None,
    /// AR(1) with coefficient `rho` and innovations of `sd` bytes.
    Ar {
        /// The coefficient.
        rho: f64,
        /// The innovations' standard deviation.
        sd: f64,
    },
    /// A random walk with steps of `sd` bytes: memory that wanders with no level to return to.
    Walk {
        /// The steps' standard deviation.
        sd: f64,
    },
}

/// A leak planted into a simulated run's unexplained bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Leak {
    /// None: a clean run.
    None,
    /// This many bytes more every cycle, from cycle 0.
    Steady(f64),
    /// `bytes` kept in a cycle with probability `rate`.
    Bursts {
        /// Bytes of a burst.
        bytes: f64,
        /// The share of cycles with one.
        rate: f64,
    },
}

/// What to simulate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Simulation {
    /// Cycles of the run.
    pub cycles: usize,
    /// Take the recorded prefix as recorded (else the whole run is drawn from residual blocks).
    pub with_prefix: bool,
    /// Noise added.
    pub noise: Noise,
    /// A leak added.
    pub leak: Leak,
}

impl Recorded {
    /// A recorded run from its samples.csv, split past `prefix` cycles.
    ///
    /// # Errors
    /// The CSV's problem; or a run with too few samples, or not one every cycle.
    pub fn parse(name: &str, text: &str, prefix: usize) -> Result<Recorded, ReportError> {
        let samples = parse_samples_csv(text)?;
        let problem = |p: String| ReportError::Samples { line: 0, problem: p };
        if samples.len() < prefix + 5 * BLOCK {
            return Err(problem(format!("{} samples, fewer than {} past the prefix", samples.len(), 5 * BLOCK)));
        }
        if !samples.iter().enumerate().all(|(i, s)| s.cycle == i as u64) {
            return Err(problem("not a sample every cycle".to_string()));
        }
        let columns: Vec<Vec<Option<f64>>> =
            QUANTITIES.iter().map(|q| samples.iter().map(|c| quantity(q, c)).collect()).collect();
        let parts = columns.iter().map(|c| split(&c[prefix..])).collect();
        Ok(Recorded { name: name.to_string(), columns, parts, prefix })
    }

    /// One simulated run as samples.csv text.
    pub fn simulate_csv(&self, sim: &Simulation, rng: &mut Rng) -> String {
        let post = self.columns[0].len() - self.prefix;
        let prefix = if sim.with_prefix { self.prefix.min(sim.cycles) } else { 0 };
        let mut rows: Vec<Vec<Option<f64>>> =
            (0..prefix).map(|t| self.columns.iter().map(|c| c[t]).collect()).collect();
        while rows.len() < sim.cycles {
            let start = rng.below(post - BLOCK + 1);
            for k in start..start + BLOCK {
                rows.push(self.parts.iter().map(|p| p.as_ref().map(|(level, res)| level + res[k])).collect());
            }
        }
        rows.truncate(sim.cycles);
        let added = added(sim, rng);
        let q = |name: &str| QUANTITIES.iter().position(|n| *n == name).unwrap_or(0);
        let mut out = SAMPLES_COLUMNS.join(",");
        out.push('\n');
        for (cycle, v) in rows.iter().enumerate() {
            let get = |name: &str| v[q(name)];
            let unexplained = get("unexplained").map(|u| u + added[cycle]);
            let cells: Vec<String> = SAMPLES_COLUMNS.iter().map(|c| cell(c, cycle, &get, unexplained)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }

    /// One simulated run's samples.
    ///
    /// # Panics
    /// Never for a run made by [`Recorded::parse`] (the simulated CSV reads back).
    pub fn simulate(&self, sim: &Simulation, rng: &mut Rng) -> Vec<CycleSample> {
        parse_samples_csv(&self.simulate_csv(sim, rng)).unwrap_or_else(|e| panic!("a simulated run reads back: {e}"))
    }
}

/// A quantity of a recorded sample.
fn quantity(q: &str, c: &CycleSample) -> Option<f64> {
    let s = &c.sample;
    let p = &s.process;
    let f = |v: Option<u64>| v.map(|v| v as f64);
    let resident = s.jemalloc.filter(|j| j.purged).map(|j| j.resident_bytes as f64);
    match q {
        "unexplained" => s.unexplained_bytes().map(|v| v as f64),
        "rocksdb_unbounded" => s.rocksdb.map(|r| r.unbounded_bytes() as f64),
        "rocksdb_cache" => s.rocksdb.map(|r| r.cache_bytes() as f64),
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
}

/// One cell of a simulated samples.csv row. RocksDB's part is written as its unbounded part and
/// its caches (no reservations, nothing over capacity), so reading it back explains what the
/// recorded run explained; allocated bytes are the unexplained ones plus all that is explained.
fn cell(column: &str, cycle: usize, get: &dyn Fn(&str) -> Option<f64>, unexplained: Option<f64>) -> String {
    let rocksdb = get("rocksdb_unbounded").zip(get("rocksdb_cache"));
    let rounding = rocksdb.map_or(0.0, |(_, c)| (c * leakcheck::probe::CACHE_ROUNDING).floor());
    let explained = rocksdb.map_or(0.0, |(u, c)| u + c)
        + rounding
        + get("bookkeeping").unwrap_or(0.0)
        + get("tcache").unwrap_or(0.0);
    let value = match column {
        "cycle" => Some(cycle as f64),
        "monotonic_ns" => Some(cycle as f64 * 1e6),
        "allocated_bytes" => unexplained.map(|u| u + explained),
        "resident_bytes" => get("resident"),
        "explained_bytes" => Some(explained),
        "unexplained_bytes" => unexplained,
        "bookkeeping_bytes" => get("bookkeeping"),
        "rocksdb_mem_table_bytes" => rocksdb.map(|(u, _)| u),
        "rocksdb_cache_bytes" => rocksdb.map(|(_, c)| c),
        "rocksdb_table_readers_bytes"
        | "rocksdb_cache_reserved_bytes"
        | "rocksdb_cache_over_capacity_bytes"
        | "rocksdb_live_sst_files"
        | "rocksdb_live_sst_bytes" => rocksdb.map(|_| 0.0),
        "rss_bytes" => get("rss"),
        "rss_anon_bytes" => get("resident").zip(get("rss_outside")).map(|(a, b)| a + b),
        "tcache_bytes" => get("tcache"),
        // Not in the recorded runs (flat without profiling); empty reads as 0.
        "allocator_internal_bytes" => None,
        "settled" => return "true".to_string(),
        other => get(match other {
            "open_fds" | "open_fds_under_dir" | "maps" | "maps_under_dir" | "threads" | "file_maps" => other,
            _ => "retained_handles",
        })
        .map(|x| x.max(0.0)),
    };
    value.map(|x| format!("{}", x.round().max(0.0) as i64)).unwrap_or_default()
}

/// The noise and leak added to each cycle's unexplained bytes.
fn added(sim: &Simulation, rng: &mut Rng) -> Vec<f64> {
    let mut out = Vec::with_capacity(sim.cycles);
    let (mut x, mut kept) = (0.0, 0.0);
    for i in 0..sim.cycles {
        x = match sim.noise {
            Noise::None => 0.0,
            Noise::Ar { rho, sd } if i == 0 => sd * rng.normal() / (1.0 - rho * rho).sqrt(),
            Noise::Ar { rho, sd } => rho * x + sd * rng.normal(),
            Noise::Walk { sd } => x + sd * rng.normal(),
        };
        kept += match sim.leak {
            Leak::None => 0.0,
            Leak::Steady(b) if i > 0 => b,
            Leak::Bursts { bytes, rate } if rng.uniform() < rate => bytes,
            _ => 0.0,
        };
        out.push(x + kept);
    }
    out
}

/// Level (a least-squares line's intercept at the first point, moved to the residuals' median)
/// and residuals of one quantity; None where it was not read throughout.
fn split(column: &[Option<f64>]) -> Option<(f64, Vec<f64>)> {
    let ys: Vec<f64> = column.iter().copied().collect::<Option<_>>()?;
    let n = ys.len() as f64;
    let mx = (n - 1.0) / 2.0;
    let my = ys.iter().sum::<f64>() / n;
    let sxx: f64 = (0..ys.len()).map(|i| (i as f64 - mx).powi(2)).sum();
    let slope = ys.iter().enumerate().map(|(i, y)| (i as f64 - mx) * (y - my)).sum::<f64>() / sxx;
    let detrended: Vec<f64> = ys.iter().enumerate().map(|(i, y)| y - slope * i as f64).collect();
    let mut sorted = detrended.clone();
    sorted.sort_by(f64::total_cmp);
    let level = sorted[sorted.len() / 2];
    Some((level, detrended.iter().map(|v| v - level).collect()))
}
