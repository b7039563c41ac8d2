//! Run reports: a versioned JSON schema, a CSV of samples, crash-safe writing, reading back with
//! a schema check, comparison of two runs, and plots.
//!
//! Files are rewritten atomically (write a temporary file in the same directory, sync it, rename
//! it over the old one), so a run killed at any moment, even with SIGKILL, leaves the last
//! complete report behind, never a torn one.

mod axis;
mod html;
mod plot;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use html::HTML_FILE;
pub(crate) use plot::{plot_svgs, Plot};

use crate::harness::{CycleRecord, HarnessReport, Phase};
use crate::verdict::{CycleSample, RunVerdict, SignalVerdict};
use crate::{LeakReport, Verdict};

/// The report schema's version. Readers reject other versions.
pub const SCHEMA_VERSION: u32 = 1;

/// The report file's name in a report directory.
pub const REPORT_FILE: &str = "report.json";
/// The samples file's name in a report directory.
pub const SAMPLES_FILE: &str = "samples.csv";
/// The heap growth's flame graph in a report directory (`--profile`).
pub const FLAME_FILE: &str = "heap-growth.svg";

/// What the run was asked to do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The command (`check`, `soak`).
    pub command: String,
    /// The store under test ([`crate::harness::StoreInfo::name`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub store: String,
    /// The store's own settings ([`crate::harness::StoreInfo::settings`]), written beside the
    /// run's (the reference store's `tasks` and `segments`).
    #[serde(flatten)]
    pub store_settings: BTreeMap<String, serde_json::Value>,
    /// Cycles asked for.
    pub cycles: u64,
    /// `check` only: how far the run may go on while the verdict is inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cycles: Option<u64>,
    /// Time limit in seconds, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    /// The fault plan.
    pub plan: String,
    /// The seed.
    pub seed: u64,
    /// The ledger's tracking depth.
    pub tracking: String,
    /// A settled memory sample was taken every this many cycles (slopes are per cycle whatever
    /// it is).
    #[serde(default = "one")]
    pub sample_every: u64,
    /// The handle check's quiet period in milliseconds ([`crate::HarnessConfig::handle_quiet`]);
    /// absent from reports written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handle_quiet_ms: Option<u64>,
    /// `--profile N`: heap profiling sampled one allocation per `2^N` bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_lg_sample: Option<u32>,
}

impl RunSettings {
    /// The store's name and settings as one value (`reference store (tasks 2, segments 3)`).
    pub fn store_info(&self) -> crate::harness::StoreInfo {
        let mut info = crate::harness::StoreInfo::new(if self.store.is_empty() { "store" } else { &self.store });
        info.settings = self.store_settings.clone();
        info
    }
}

fn one() -> u64 {
    1
}

/// How the cycles ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CycleSummary {
    /// Cycles whose open returned an error.
    pub open_errors: u64,
    /// Cycles whose work returned an error.
    pub work_errors: u64,
    /// Cycles whose close returned an error.
    pub close_errors: u64,
    /// Cycles in which some phase panicked.
    pub panics: u64,
    /// Fault points fired, with counts.
    pub faults_fired: BTreeMap<String, u64>,
    /// Records checked by the integrity check.
    pub records_checked: u64,
    /// The first integrity problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity_problems: Vec<String>,
    /// The store's integrity counts ([`Integrity::count`](crate::Integrity::count)) summed over
    /// the cycles: one key each (a window store's `late_records_dropped`).
    #[serde(flatten)]
    pub counts: BTreeMap<String, u64>,
}

impl CycleSummary {
    /// Adds one cycle.
    pub fn add(&mut self, r: &CycleRecord) {
        let err = |p: &Phase| matches!(p, Phase::Error(_)) as u64;
        self.open_errors += err(&r.open);
        self.work_errors += err(&r.work);
        self.close_errors += err(&r.close);
        self.panics += [&r.open, &r.work, &r.close].iter().any(|p| matches!(p, Phase::Panic(_))) as u64;
        for (k, v) in &r.faults_fired {
            *self.faults_fired.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &r.integrity.counts {
            *self.counts.entry(k.clone()).or_default() += v;
        }
        self.records_checked += r.integrity.records_checked;
        for p in &r.integrity.problems {
            if self.integrity_problems.len() < 10 {
                self.integrity_problems.push(format!("cycle {}: {p}", r.cycle));
            }
        }
    }
}

/// A call stack of the heap's growth (from jemalloc's sampling profiler).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapStack {
    /// Estimated live bytes added per cycle by allocations from this stack.
    pub bytes_per_cycle: f64,
    /// Sampled live objects added over the profiled cycles.
    pub objects: i64,
    /// A one-sided 95% lower confidence bound on `bytes_per_cycle` from the number of samples
    /// (a stack sampled once or twice proves little growth).
    #[serde(default)]
    pub lower_bytes_per_cycle: f64,
    /// The part of `bytes_per_cycle` that a block cache filling accounts for: a stack that stores
    /// blocks in a cache ([`crate::probe::stacks::fills_a_block_cache`]) is explained up to the
    /// growth of the caches' usage within capacity (with the allocator's rounding, as the verdict
    /// counts it) over the same cycles, shared out largest stack first. 0 for any other stack.
    #[serde(default)]
    pub explained_bytes_per_cycle: f64,
    /// The stack's functions, innermost first, allocator frames left out (`file:line` after a
    /// name where debug info has it).
    pub frames: Vec<String>,
}

/// The heap's growth summed over the stacks that one function of the user's code is the innermost
/// of ([`crate::probe::stacks::own_function`]): a leak made of several native objects (an options
/// object and its table factory, cache and maps) is one entry here, several stacks above.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeapFunction {
    /// The function, without `file:line`.
    pub function: String,
    /// Estimated live bytes added per cycle by its stacks.
    pub bytes_per_cycle: f64,
    /// Of which a block cache's fill explains ([`HeapStack::explained_bytes_per_cycle`]).
    pub explained_bytes_per_cycle: f64,
    /// A one-sided 95% lower bound on the unexplained growth, from the stacks' samples together
    /// (each sample taken to stand for the function's mean bytes per sample).
    pub unexplained_lower_bytes_per_cycle: f64,
    /// Sampled live objects added.
    pub objects: i64,
    /// How many stacks it sums.
    pub stacks: usize,
}

impl HeapFunction {
    /// The growth no cache filling accounts for: what functions are ranked by.
    pub fn unexplained_bytes_per_cycle(&self) -> f64 {
        (self.bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }
}

impl HeapStack {
    /// The growth no cache filling accounts for: what the stacks are ranked by.
    pub fn unexplained_bytes_per_cycle(&self) -> f64 {
        (self.bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }

    /// The 95% lower bound on the unexplained growth (the sampled bound less the explained part,
    /// which is measured, not sampled).
    pub fn unexplained_lower_bytes_per_cycle(&self) -> f64 {
        (self.lower_bytes_per_cycle - self.explained_bytes_per_cycle).max(0.0)
    }
}

/// A run's report (schema version [`SCHEMA_VERSION`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RunReport {
    /// The schema version.
    pub schema_version: u32,
    /// The tool and its version.
    pub tool: String,
    /// The verdict: clean, leak or inconclusive (`verdict`), every signal's (`signals`), the leak
    /// rate, what a clean verdict rules out, the return to baseline, and why the byte signals
    /// could not be trusted when so. Its fields sit at the top level of the JSON.
    #[serde(flatten)]
    pub verdict: RunVerdict,
    /// False while a run is still going (a report rewritten mid-run).
    pub complete: bool,
    /// The run was stopped early by SIGINT or SIGTERM (the report covers the cycles run).
    #[serde(default)]
    pub interrupted: bool,
    /// What was asked.
    pub settings: RunSettings,
    /// Cycles run.
    pub cycles_run: u64,
    /// Wall time so far.
    pub elapsed_seconds: f64,
    /// Mean wall time per cycle, in milliseconds: the overhead figure `compare` watches.
    pub ms_per_cycle: f64,
    /// How the cycles ended.
    pub cycles_summary: CycleSummary,
    /// The ledger after the last cycle.
    pub ledger: LeakReport,
    /// Why the run ended before the cycles asked, when it did (check stops once an exact
    /// signal's residue makes the verdict a leak whatever later cycles do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<crate::harness::Stopped>,
    /// The first cycle (0-based) the run's verdict was a leak (a soak runs on past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_leak_cycle: Option<u64>,
    /// With `--profile`: the call stacks whose live bytes grew most between the end of the
    /// warm-up and the end of the run (jemalloc's heap profile), the most unexplained growth
    /// first ([`HeapStack::unexplained_bytes_per_cycle`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_growth: Vec<HeapStack>,
    /// With `--profile`: the heap's growth summed per function of the user's code (every stack
    /// with a frame of it, not only those in `heap_growth`), the most unexplained first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub heap_growth_by_function: Vec<HeapFunction>,
    /// Allocation generations: whether they were recorded, how, and per generation
    /// `[cycle, live_bytes, live_allocations]` at the end of the run.
    #[serde(default)]
    pub generations: crate::harness::GenerationsReport,
}

impl RunReport {
    /// Builds a report from a verdict and what surrounds it.
    pub fn new(
        settings: RunSettings,
        verdict: RunVerdict,
        summary: CycleSummary,
        ledger: LeakReport,
        cycles_run: u64,
        elapsed_seconds: f64,
        complete: bool,
    ) -> Self {
        RunReport {
            schema_version: SCHEMA_VERSION,
            tool: format!("leakcheck {}", env!("CARGO_PKG_VERSION")),
            verdict,
            complete,
            interrupted: false,
            settings,
            cycles_run,
            elapsed_seconds,
            ms_per_cycle: if cycles_run > 0 { elapsed_seconds * 1e3 / cycles_run as f64 } else { 0.0 },
            cycles_summary: summary,
            ledger,
            stopped: None,
            first_leak_cycle: None,
            heap_growth: Vec::new(),
            heap_growth_by_function: Vec::new(),
            generations: crate::harness::GenerationsReport::default(),
        }
    }

    /// A report of a finished harness run.
    pub fn from_harness(settings: RunSettings, h: &HarnessReport, elapsed_seconds: f64) -> Self {
        let mut summary = CycleSummary::default();
        for r in &h.records {
            summary.add(r);
        }
        let mut r =
            Self::new(settings, h.verdict.clone(), summary, h.ledger.clone(), h.cycles_run, elapsed_seconds, true);
        r.stopped = h.stopped.clone();
        r.first_leak_cycle = h.first_leak_cycle;
        r.generations = h.generations.clone();
        r
    }

    /// The entry of a signal by its name in reports (`live_handles.Options`).
    pub fn signal_named(&self, name: &str) -> Option<&SignalVerdict> {
        self.verdict.signal_named(name)
    }

    /// The entry of one signal (of a family: its first member).
    pub fn signal(&self, signal: crate::Signal) -> Option<&SignalVerdict> {
        self.verdict.signal(signal)
    }

    /// Among the `within` first stacks of the heap's growth (`--profile`; the most unexplained
    /// first), the first with a frame naming `function` (a part of the frame's text, such as
    /// `KvService::options`).
    pub fn heap_stack_naming(&self, function: &str, within: usize) -> Option<&HeapStack> {
        self.heap_growth.iter().take(within).find(|g| g.frames.iter().any(|f| f.contains(function)))
    }

    /// Among the `within` first functions of the heap's growth by function, the first whose name
    /// contains `function`.
    pub fn heap_function_naming(&self, function: &str, within: usize) -> Option<&HeapFunction> {
        self.heap_growth_by_function.iter().take(within).find(|g| g.function.contains(function))
    }

    /// The bytes signal that the run's leak rate comes from.
    pub fn bytes_signal(&self) -> Option<&SignalVerdict> {
        let v = &self.verdict;
        v.leak_rate.as_ref().and_then(|r| v.signals.iter().find(|s| s.signal == r.signal))
    }
}

/// Reading or writing a report failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a report.
    #[error("{}: not a leakcheck report: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The JSON error.
        source: serde_json::Error,
    },
    /// The report has another schema version.
    #[error("{}: report schema version {found}, this leakcheck reads version {expected}", path.display())]
    SchemaVersion {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        expected: u32,
    },
    /// A samples CSV that does not read back.
    #[error("samples CSV, line {line}: {problem}")]
    Samples {
        /// The line (1-based).
        line: usize,
        /// What is wrong there.
        problem: String,
    },
    /// The samples CSV beside a report does not read back.
    #[error("{}: {source}", path.display())]
    SamplesFile {
        /// The CSV.
        path: PathBuf,
        /// What is wrong with it ([`ReportError::Samples`]).
        #[source]
        source: Box<ReportError>,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ReportError + '_ {
    move |source| ReportError::Io { path: path.to_path_buf(), source }
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, synced, renamed
/// over `path`.
///
/// # Errors
/// The I/O error, naming the file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut tmp =
        tempfile::Builder::new().prefix(".leakcheck-").suffix(".tmp").tempfile_in(dir).map_err(io_err(dir))?;
    tmp.write_all(bytes).map_err(io_err(path))?;
    tmp.as_file().sync_all().map_err(io_err(path))?;
    tmp.persist(path).map_err(|e| ReportError::Io { path: path.to_path_buf(), source: e.error })?;
    Ok(())
}

/// Checks that `dir` exists (creating it) and is writable, before any work, so a run never
/// starts only to fail at its first report.
///
/// # Errors
/// When the directory cannot be created or written.
#[doc(hidden)]
pub fn prepare_dir(dir: &Path) -> Result<(), ReportError> {
    let existed = dir.exists();
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    match tempfile::Builder::new().prefix(".leakcheck-probe-").tempfile_in(dir) {
        Ok(probe) => {
            drop(probe);
            Ok(())
        }
        Err(source) => {
            if !existed {
                let _ = fs::remove_dir(dir);
            }
            Err(ReportError::Io { path: dir.to_path_buf(), source })
        }
    }
}

/// A cell of samples.csv: a count, a signed figure (empty when unknown) or a flag.
enum Cell {
    Count(Option<u64>),
    Signed(Option<i64>),
    Flag(bool),
}

/// How a column reads its cell from a sample.
type CellOf = fn(&CycleSample) -> Cell;

/// samples.csv's columns, in order, each with the cell it writes for a sample: the one list the
/// header, the rows and [`SAMPLES_COLUMNS`] come from. Columns are only ever added at the end
/// (a reader finds them by name: [`parse_samples_csv`]).
const COLUMNS: [(&str, CellOf); 26] = [
    ("cycle", |c| Cell::Count(Some(c.cycle))),
    ("monotonic_ns", |c| Cell::Count(Some(c.sample.monotonic_ns))),
    ("allocated_bytes", |c| Cell::Count(c.sample.allocated_bytes())),
    ("resident_bytes", |c| Cell::Count(c.sample.jemalloc.map(|j| j.resident_bytes))),
    ("explained_bytes", |c| Cell::Signed(Some(c.sample.explained_bytes()))),
    ("unexplained_bytes", |c| Cell::Signed(c.sample.unexplained_bytes())),
    ("bookkeeping_bytes", |c| Cell::Signed(c.sample.bookkeeping_bytes)),
    ("rocksdb_mem_table_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.mem_table_total_bytes))),
    ("rocksdb_table_readers_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.table_readers_total_bytes))),
    ("rocksdb_cache_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.cache_total_bytes))),
    ("rss_bytes", |c| Cell::Count(c.sample.process.rss_bytes)),
    ("rss_anon_bytes", |c| Cell::Count(c.sample.process.rss_anon_bytes)),
    ("open_fds", |c| Cell::Count(c.sample.process.open_fds)),
    ("open_fds_under_dir", |c| Cell::Count(c.sample.process.open_fds_under_dir)),
    ("maps", |c| Cell::Count(c.sample.process.maps)),
    ("maps_under_dir", |c| Cell::Count(c.sample.process.maps_under_dir)),
    ("threads", |c| Cell::Count(c.sample.process.threads)),
    ("retained_handles", |c| Cell::Count(Some(c.retained_handles.values().sum()))),
    ("settled", |c| Cell::Flag(c.settled)),
    ("file_maps", |c| Cell::Count(c.sample.process.file_maps)),
    ("tcache_bytes", |c| Cell::Count(c.sample.jemalloc.map(|j| j.tcache_bytes))),
    ("rocksdb_cache_reserved_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.cache_reserved_bytes))),
    ("rocksdb_cache_over_capacity_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.cache_over_capacity_bytes))),
    ("allocator_internal_bytes", |c| Cell::Count(c.sample.jemalloc.map(|j| j.internal_bytes))),
    ("rocksdb_live_sst_files", |c| Cell::Count(c.sample.rocksdb.map(|r| r.live_sst_files))),
    ("rocksdb_live_sst_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.live_sst_bytes))),
];

/// The columns of the samples CSV, in order. Columns are only ever added at the end.
pub const SAMPLES_COLUMNS: [&str; COLUMNS.len()] = {
    let mut names = [""; COLUMNS.len()];
    let mut i = 0;
    while i < COLUMNS.len() {
        names[i] = COLUMNS[i].0;
        i += 1;
    }
    names
};

/// The CSV of samples: one row per sampled cycle.
pub fn samples_csv(samples: &[CycleSample]) -> String {
    let mut out = SAMPLES_COLUMNS.join(",");
    out.push('\n');
    for c in samples {
        push_row(&mut out, c);
    }
    out
}

/// One sample's row of the samples CSV, with its newline. Numbers and flags only: no cell ever
/// needs quoting, which is why this is written here rather than by a CSV crate (one more crate in
/// every user's dependency tree for a writer of numbers).
fn push_row(out: &mut String, c: &CycleSample) {
    use std::fmt::Write as _;
    for (i, (_, cell)) in COLUMNS.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = match cell(c) {
            Cell::Count(Some(v)) => write!(out, "{v}"),
            Cell::Signed(Some(v)) => write!(out, "{v}"),
            Cell::Flag(v) => write!(out, "{v}"),
            Cell::Count(None) | Cell::Signed(None) => Ok(()),
        };
    }
    out.push('\n');
}

/// samples.csv of a running report: rows are appended as samples come and written at each
/// [`SamplesFile::flush`] in one write, then synced, so the file grows with the run instead of
/// being rewritten, and a run killed at any moment leaves whole rows (a row torn by a full disk
/// is skipped when read back: [`parse_samples_csv`]).
#[derive(Debug)]
pub(crate) struct SamplesFile {
    path: PathBuf,
    pending: String,
}

impl SamplesFile {
    /// Creates (or empties) the file and writes the header.
    ///
    /// # Errors
    /// The I/O error, naming the file.
    pub fn create(path: &Path) -> Result<Self, ReportError> {
        let mut header = SAMPLES_COLUMNS.join(",");
        header.push('\n');
        write_atomic(path, header.as_bytes())?;
        Ok(SamplesFile { path: path.to_path_buf(), pending: String::new() })
    }

    /// Adds a sample's row (written at the next flush).
    pub fn push(&mut self, c: &CycleSample) {
        push_row(&mut self.pending, c);
    }

    /// Appends the pending rows and syncs the file.
    ///
    /// # Errors
    /// The I/O error, naming the file.
    pub fn flush(&mut self) -> Result<(), ReportError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut f = fs::OpenOptions::new().append(true).open(&self.path).map_err(io_err(&self.path))?;
        f.write_all(self.pending.as_bytes()).map_err(io_err(&self.path))?;
        f.sync_data().map_err(io_err(&self.path))?;
        self.pending.clear();
        Ok(())
    }
}

/// Reads a samples CSV back into samples, to judge a recorded run again (or to simulate runs
/// from it). What the CSV does not carry is zero or absent: jemalloc's counters other than
/// allocated, resident and thread-cache bytes, and retained handles by kind (their sum is kept
/// under the kind `all`). A CSV from before the thread-cache column gets the thread caches back
/// as explained bytes less RocksDB's part and the bookkeeping.
///
/// # Errors
/// [`ReportError::Samples`] naming the line and the problem: no header, a column missing from
/// the header, a row of the wrong width, a value that is not a number.
pub fn parse_samples_csv(text: &str) -> Result<Vec<CycleSample>, ReportError> {
    let bad = |line: usize, problem: String| ReportError::Samples { line, problem };
    // A last row without its newline and too short was cut off while it was written (a full
    // disk): it is left out.
    let torn = (!text.ends_with('\n')).then(|| text.lines().count());
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    let (_, header) = lines.next().ok_or_else(|| bad(1, "empty: no header".to_string()))?;
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    for required in ["cycle", "allocated_bytes", "explained_bytes"] {
        if !names.contains(&required) {
            return Err(bad(1, format!("no column {required} in the header")));
        }
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let n = i + 1;
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if fields.len() < names.len() && torn == Some(n) {
            break;
        }
        if fields.len() != names.len() {
            return Err(bad(n, format!("{} fields, the header has {}", fields.len(), names.len())));
        }
        out.push(Row { names: &names, fields, line: n }.sample()?);
    }
    Ok(out)
}

/// One row of a samples CSV, read by column name.
struct Row<'a> {
    names: &'a [&'a str],
    fields: Vec<&'a str>,
    line: usize,
}

impl Row<'_> {
    fn bad(&self, problem: String) -> ReportError {
        ReportError::Samples { line: self.line, problem }
    }

    /// The cell of column `name` (one of [`SAMPLES_COLUMNS`]), `None` when this CSV (an older
    /// one) has no such column.
    fn text(&self, name: &str) -> Option<&str> {
        debug_assert!(SAMPLES_COLUMNS.contains(&name), "{name} is not a samples.csv column");
        self.names.iter().position(|n| *n == name).map(|k| self.fields[k])
    }

    /// An integer cell; empty or absent is `None`.
    fn int(&self, name: &str) -> Result<Option<i64>, ReportError> {
        match self.text(name) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| self.bad(format!("{name}: {v:?} is not an integer"))),
        }
    }

    /// A cell that cannot be negative.
    fn count(&self, name: &str) -> Result<Option<u64>, ReportError> {
        self.int(name)?.map(|v| u64::try_from(v).map_err(|_| self.bad(format!("{name}: {v} is negative")))).transpose()
    }

    fn sample(&self) -> Result<CycleSample, ReportError> {
        let cycle = self.count("cycle")?.ok_or_else(|| self.bad("cycle: empty".to_string()))?;
        let rocksdb = self.rocksdb()?;
        let bookkeeping_bytes = self.int("bookkeeping_bytes")?;
        let sample = crate::probe::Sample {
            monotonic_ns: self.count("monotonic_ns")?.unwrap_or(0),
            jemalloc: self.jemalloc(rocksdb, bookkeeping_bytes)?,
            process: self.process()?,
            rocksdb,
            bookkeeping_bytes,
        };
        let retained: BTreeMap<String, u64> =
            self.count("retained_handles")?.filter(|&r| r > 0).map(|r| ("all".to_string(), r)).into_iter().collect();
        let settled = match self.text("settled") {
            None | Some("true") => true,
            Some("false") => false,
            Some(v) => return Err(self.bad(format!("settled: {v:?} is not true or false"))),
        };
        Ok(CycleSample::new(cycle, sample, retained, settled))
    }

    fn rocksdb(&self) -> Result<Option<crate::probe::RocksDbMemory>, ReportError> {
        let Some(mem) = self.count("rocksdb_mem_table_bytes")? else {
            return Ok(None);
        };
        let u = |name: &str| self.count(name).map(|v| v.unwrap_or(0));
        Ok(Some(crate::probe::RocksDbMemory {
            mem_table_total_bytes: mem,
            mem_table_unflushed_bytes: 0,
            table_readers_total_bytes: u("rocksdb_table_readers_bytes")?,
            cache_total_bytes: u("rocksdb_cache_bytes")?,
            cache_reserved_bytes: u("rocksdb_cache_reserved_bytes")?,
            cache_over_capacity_bytes: u("rocksdb_cache_over_capacity_bytes")?,
            live_sst_files: u("rocksdb_live_sst_files")?,
            live_sst_bytes: u("rocksdb_live_sst_bytes")?,
        }))
    }

    /// jemalloc's figures. A CSV from before the thread-cache column gets the thread caches back
    /// as explained bytes less RocksDB's part and the bookkeeping.
    fn jemalloc(
        &self,
        rocksdb: Option<crate::probe::RocksDbMemory>,
        bookkeeping: Option<i64>,
    ) -> Result<Option<crate::probe::JemallocStats>, ReportError> {
        let Some(allocated) = self.count("allocated_bytes")? else {
            return Ok(None);
        };
        let tcache = match self.count("tcache_bytes")? {
            Some(t) => t,
            None => {
                let explained = self.int("explained_bytes")?.unwrap_or(0);
                let rest = rocksdb.map_or(0, |r| r.explained_bytes() as i64) + bookkeeping.unwrap_or(0);
                (explained - rest).max(0) as u64
            }
        };
        let resident = self.count("resident_bytes")?;
        Ok(Some(crate::probe::JemallocStats {
            allocated_bytes: allocated,
            active_bytes: 0,
            resident_bytes: resident.unwrap_or(0),
            mapped_bytes: 0,
            retained_bytes: 0,
            metadata_bytes: 0,
            purged: resident.is_some(),
            tcache_bytes: tcache,
            internal_bytes: self.count("allocator_internal_bytes")?.unwrap_or(0),
        }))
    }

    fn process(&self) -> Result<crate::probe::ProcessStats, ReportError> {
        Ok(crate::probe::ProcessStats {
            rss_bytes: self.count("rss_bytes")?,
            rss_anon_bytes: self.count("rss_anon_bytes")?,
            threads: self.count("threads")?,
            open_fds: self.count("open_fds")?,
            open_fds_under_dir: self.count("open_fds_under_dir")?,
            maps: self.count("maps")?,
            maps_under_dir: self.count("maps_under_dir")?,
            file_maps: self.count("file_maps")?,
        })
    }
}

/// Writes the samples CSV, report.json, the plots and report.html into `dir`, each atomically.
///
/// # Errors
/// The I/O error, naming the file.
#[doc(hidden)]
pub fn write_dir(dir: &Path, report: &RunReport, samples: &[CycleSample]) -> Result<(), ReportError> {
    write_atomic(&dir.join(SAMPLES_FILE), samples_csv(samples).as_bytes())?;
    write_views(dir, report, samples).map(drop)
}

/// Writes report.json, the plots' SVG and report.html into `dir`, each atomically and in that
/// order, so the page never shows a verdict the JSON does not have. The page shows the heap
/// growth's flame graph (`heap-growth.svg`, written before the final report) when the run was
/// profiled. Returns the plots (for plot.png).
///
/// # Errors
/// The I/O error, naming the file.
pub(crate) fn write_views(dir: &Path, report: &RunReport, samples: &[CycleSample]) -> Result<Vec<Plot>, ReportError> {
    let json = serde_json::to_vec_pretty(report)
        .map_err(|source| ReportError::Parse { path: dir.join(REPORT_FILE), source })?;
    write_atomic(&dir.join(REPORT_FILE), &json)?;
    let plots = plot_svgs(report, samples);
    for plot in &plots {
        write_atomic(&dir.join(&plot.file_name), plot.svg.as_bytes())?;
    }
    let flame_path = dir.join(FLAME_FILE);
    let flame = match (report.complete && report.settings.profile_lg_sample.is_some())
        .then(|| fs::read_to_string(&flame_path))
    {
        Some(Ok(svg)) => Some(svg),
        // The run ended within the warm-up, or the files were not kept.
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Some(Err(source)) => return Err(ReportError::Io { path: flame_path, source }),
        None => None,
    };
    write_atomic(&dir.join(HTML_FILE), html::report_html(report, &plots, flame.as_deref()).as_bytes())?;
    Ok(plots)
}

/// The samples of the report at `report` (samples.csv beside it), `None` when there is no such
/// file (a report copied without it).
///
/// # Errors
/// A CSV that cannot be read or does not parse, naming the file.
pub fn read_samples_beside(report: &Path) -> Result<Option<Vec<CycleSample>>, ReportError> {
    let path = report.with_file_name(SAMPLES_FILE);
    match fs::read_to_string(&path) {
        Ok(text) => {
            parse_samples_csv(&text).map(Some).map_err(|e| ReportError::SamplesFile { path, source: Box::new(e) })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ReportError::Io { path, source }),
    }
}

/// Writes the page of a comparison to `out` atomically: the verdicts, rates and times side by
/// side, what regressed, and both runs' series on one plot (from the samples.csv beside each
/// report; the page says so when one has none).
///
/// # Errors
/// A samples CSV that does not read, or the page that cannot be written.
pub fn write_compare_html(
    out: &Path,
    (old_path, old): (&Path, &RunReport),
    (new_path, new): (&Path, &RunReport),
    comparison: &Comparison,
) -> Result<(), ReportError> {
    let mut notes = Vec::new();
    let mut series = |path: &Path| -> Result<Vec<CycleSample>, ReportError> {
        Ok(read_samples_beside(path)?.unwrap_or_else(|| {
            notes.push(format!("no {SAMPLES_FILE} beside {}: its series are not drawn", path.display()));
            Vec::new()
        }))
    };
    let (a, b) = (series(old_path)?, series(new_path)?);
    let title = format!(
        "old {} ({} cycles), new {} ({} cycles)",
        old.verdict.verdict, old.cycles_run, new.verdict.verdict, new.cycles_run
    );
    let plots = plot::compare_svgs(&title, &a, &b);
    let page = html::compare_html(
        (&old_path.display().to_string(), old),
        (&new_path.display().to_string(), new),
        comparison,
        &plots,
        &notes,
    );
    write_atomic(out, page.as_bytes())
}

/// Reads a report, checking its schema version first.
///
/// # Errors
/// When the file cannot be read, is not JSON, is not a report, or has another schema version.
pub fn read(path: &Path) -> Result<RunReport, ReportError> {
    let text = fs::read(path).map_err(io_err(path))?;
    let value: serde_json::Value =
        serde_json::from_slice(&text).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })?;
    let found = value.get("schema_version").and_then(serde_json::Value::as_u64);
    match found {
        Some(v) if v == u64::from(SCHEMA_VERSION) => {}
        Some(v) => {
            return Err(ReportError::SchemaVersion { path: path.to_path_buf(), found: v, expected: SCHEMA_VERSION })
        }
        None => {
            return Err(ReportError::Parse {
                path: path.to_path_buf(),
                source: serde::de::Error::custom("missing schema_version"),
            })
        }
    }
    serde_json::from_value(value).map_err(|source| ReportError::Parse { path: path.to_path_buf(), source })
}

/// Limits for [`compare`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompareLimits {
    /// The leak rate (bytes per cycle of the bytes signal) may grow by at most this much.
    pub max_rate_increase_bytes: f64,
    /// Time per cycle may grow by at most this fraction (0.2: 20%).
    pub max_overhead_increase: f64,
}

impl Default for CompareLimits {
    fn default() -> Self {
        CompareLimits { max_rate_increase_bytes: 64.0, max_overhead_increase: 0.25 }
    }
}

/// Two runs side by side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Comparison {
    /// Old and new verdicts.
    pub verdicts: (Verdict, Verdict),
    /// Old and new leak rates (bytes per cycle).
    pub rates: (Option<f64>, Option<f64>),
    /// Old and new `retained_bytes` per cycle (what allocating sites that recur across judged
    /// cycles hold), where the record was judged.
    #[serde(default)]
    pub retained: (Option<f64>, Option<f64>),
    /// Old and new milliseconds per cycle.
    pub ms_per_cycle: (f64, f64),
    /// What got worse.
    pub regressions: Vec<String>,
}

/// Compares a new run against an old one: a regression is a verdict that got worse, a leak rate
/// that grew beyond the limit (by more than the new interval's half-width too, so noise is not a
/// regression), `retained_bytes` per cycle that grew beyond the same limit (a record: no noise
/// to allow for), or time per cycle that grew beyond the limit.
pub fn compare(old: &RunReport, new: &RunReport, limits: CompareLimits) -> Comparison {
    let rate = |r: &RunReport| r.verdict.leak_rate.as_ref().map(|l| l.bytes_per_cycle);
    let retained = |r: &RunReport| {
        r.signal(crate::Signal::RetainedBytes).filter(|s| !s.informational).and_then(|s| s.estimate).map(|e| e.value)
    };
    let mut regressions = Vec::new();
    if new.verdict.verdict > old.verdict.verdict {
        regressions.push(format!("verdict {} -> {}", old.verdict.verdict, new.verdict.verdict));
    }
    if let (Some(a), Some(b)) = (rate(old), rate(new)) {
        let half = new.bytes_signal().and_then(|s| s.estimate).map_or(0.0, |e| (e.upper - e.lower) / 2.0);
        if b - a > limits.max_rate_increase_bytes.max(half) {
            regressions.push(format!("leak rate {a:.1} -> {b:.1} B/cycle"));
        }
    }
    if let (Some(a), Some(b)) = (retained(old), retained(new)) {
        if b - a > limits.max_rate_increase_bytes {
            regressions.push(format!("retained bytes {a:.1} -> {b:.1} B/cycle"));
        }
    }
    if old.ms_per_cycle > 0.0 && new.ms_per_cycle > old.ms_per_cycle * (1.0 + limits.max_overhead_increase) {
        regressions.push(format!("time per cycle {:.2} -> {:.2} ms", old.ms_per_cycle, new.ms_per_cycle));
    }
    Comparison {
        verdicts: (old.verdict.verdict, new.verdict.verdict),
        rates: (rate(old), rate(new)),
        retained: (retained(old), retained(new)),
        ms_per_cycle: (old.ms_per_cycle, new.ms_per_cycle),
        regressions,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{JemallocStats, ProcessStats, RocksDbMemory, Sample};
    use crate::verdict::{analyze, AnalysisConfig};

    fn sample(c: u64) -> CycleSample {
        let jemalloc = JemallocStats {
            allocated_bytes: 10_000_000 + 300 * c + (c * 7919) % 2000,
            active_bytes: 0,
            resident_bytes: 20_000_000 + 4096 * (c % 3),
            mapped_bytes: 0,
            retained_bytes: 0,
            metadata_bytes: 0,
            purged: true,
            tcache_bytes: (c * 104_729) % 50_000,
            internal_bytes: 40_000 + (c * 7_919) % 9_000,
        };
        let rocksdb = RocksDbMemory {
            mem_table_total_bytes: 65_536 * (c % 4),
            mem_table_unflushed_bytes: 0,
            table_readers_total_bytes: 1000,
            cache_total_bytes: 600_000,
            cache_reserved_bytes: 262_144,
            cache_over_capacity_bytes: 3,
            live_sst_files: c % 7,
            live_sst_bytes: 110_000 * (c % 7),
        };
        let process = ProcessStats {
            rss_bytes: Some(40 << 20),
            rss_anon_bytes: Some(30 << 20),
            threads: Some(7),
            open_fds: Some(12 + c % 2),
            open_fds_under_dir: Some(0),
            maps: Some(80),
            maps_under_dir: Some(0),
            file_maps: Some(25),
        };
        let s = Sample {
            monotonic_ns: c * 1000,
            jemalloc: Some(jemalloc),
            process,
            rocksdb: Some(rocksdb),
            bookkeeping_bytes: Some(4096 + 64 * c as i64),
        };
        let handles = if c == 70 { [("Options".to_string(), 2)].into_iter().collect() } else { BTreeMap::new() };
        CycleSample::new(c, s, handles, c != 3)
    }

    #[test]
    fn the_verdict_sits_at_the_top_of_the_json_and_reads_back() {
        let samples: Vec<CycleSample> = (0..150).map(sample).collect();
        let verdict =
            analyze(&samples, Some(&samples[0].sample), Some(&samples[149].sample), &AnalysisConfig::default());
        let settings = RunSettings { command: "check".to_string(), cycles: 150, ..RunSettings::default() };
        let report = RunReport::new(
            settings,
            verdict.clone(),
            CycleSummary::default(),
            crate::Ledger::new().report(),
            150,
            3.0,
            true,
        );
        let json = serde_json::to_value(&report).expect("serialize");
        // The keys readers (`compare`, older reports' readers) look up, at the top level as before.
        for key in ["schema_version", "verdict", "signals", "baseline_return", "cycles_run", "ledger", "settings"] {
            assert!(json.get(key).is_some(), "{key} missing: {json}");
        }
        assert_eq!(json["verdict"], serde_json::to_value(verdict.verdict).expect("verdict"));
        assert!(json.get("judged").is_none() && json["verdict"].is_string());
        // Read back from the text as written, and from a map whose keys come in another order
        // (serde_json's map is sorted by key): objects are read by key, so a report written before
        // the verdict's fields were one struct, in another order, reads the same.
        let text = serde_json::to_string(&report).expect("text");
        assert_eq!(serde_json::from_str::<RunReport>(&text).expect("read back"), report);
        assert_eq!(serde_json::from_value::<RunReport>(json).expect("read back sorted"), report);
    }

    #[test]
    fn the_page_escapes_what_it_shows_and_loads_nothing() {
        let samples: Vec<CycleSample> = (0..150).map(sample).collect();
        let verdict = analyze(&samples, None, None, &AnalysisConfig::default());
        let settings = RunSettings {
            command: "check".to_string(),
            store: "<script>alert(1)</script> & \"co\"".to_string(),
            plan: "close.flush=5%".to_string(),
            cycles: 150,
            ..RunSettings::default()
        };
        let mut summary = CycleSummary::default();
        summary.integrity_problems.push("cycle 3: key <b>".to_string());
        let report = RunReport::new(settings, verdict, summary, crate::Ledger::new().report(), 150, 3.0, false);
        let dir = tempfile::tempdir().expect("tempdir");
        write_dir(dir.path(), &report, &samples).expect("write");
        let page = fs::read_to_string(dir.path().join(HTML_FILE)).expect("page");
        assert!(!page.contains("<script>alert") && !page.contains("<b>"), "unescaped text in the page");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;co&quot;"));
        assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
        let loads = ["src=", "href=", "url(", "@import"];
        assert!(loads.iter().all(|l| !page.contains(l)), "the page loads nothing from elsewhere");
        assert!(page.contains("150 cycles in 3.0 s") && page.contains("in progress"), "an interim page says so");
        // Every panel carries its values for the hover script, as JSON that reads back.
        let data: Vec<serde_json::Value> = page
            .split("data-plot=\"")
            .skip(1)
            .map(|rest| {
                let attr = &rest[..rest.find('"').expect("attribute end")];
                let json = attr.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
                serde_json::from_str(&json).expect("panel data is JSON")
            })
            .collect();
        assert_eq!(data.len(), 4);
        let points = data[0]["series"][0]["points"].as_array().expect("points");
        assert_eq!(points.len(), 150, "one point per cycle while cycles are fewer than pixel columns");
        assert_eq!(points[149][0], 149.0);
    }

    #[test]
    fn samples_read_back_from_their_csv_judge_as_before() {
        let samples: Vec<CycleSample> = (0..150).map(sample).collect();
        let back = parse_samples_csv(&samples_csv(&samples)).expect("parse");
        assert_eq!(back.len(), samples.len());
        for (a, b) in samples.iter().zip(&back) {
            assert_eq!((a.cycle, a.settled), (b.cycle, b.settled));
            assert_eq!(a.sample.unexplained_bytes(), b.sample.unexplained_bytes());
            assert_eq!(a.sample.explained_bytes(), b.sample.explained_bytes());
            assert_eq!(a.sample.process, b.sample.process);
            assert_eq!(a.retained_handles.values().sum::<u64>(), b.retained_handles.values().sum::<u64>());
        }
        let cfg = AnalysisConfig::default();
        let (v, w) = (analyze(&samples, None, None, &cfg), analyze(&back, None, None, &cfg));
        assert_eq!(v.verdict, w.verdict);
        for s in &v.signals {
            // Handles by kind come back as their sum, under the kind `all`.
            let name = s.signal.to_string().replace("live_handles.Options", "live_handles.all");
            let t = w.signal_named(&name).unwrap_or_else(|| panic!("{name} lost"));
            assert_eq!((s.verdict, s.estimate, s.residue), (t.verdict, t.estimate, t.residue), "{name}");
        }
    }

    #[test]
    fn every_column_written_is_read_back() {
        // Written, read and written again: the same text, so the reader reads every column the
        // one column list writes (a column it dropped or misread would change the second text).
        let samples: Vec<CycleSample> = (0..20).map(sample).collect();
        let text = samples_csv(&samples);
        let again = samples_csv(&parse_samples_csv(&text).expect("parse"));
        assert_eq!(again, text);
        assert_eq!(text.lines().next().map(|h| h.split(',').count()), Some(SAMPLES_COLUMNS.len()));
    }

    #[test]
    fn an_older_csv_gets_its_thread_caches_back_from_the_explained_bytes() {
        // Before these columns there were no reservations either.
        let samples: Vec<CycleSample> = (0..5)
            .map(|c| {
                let mut s = sample(c);
                s.sample.rocksdb = s.sample.rocksdb.map(|r| RocksDbMemory {
                    cache_reserved_bytes: 0,
                    cache_over_capacity_bytes: 0,
                    ..r
                });
                s
            })
            .collect();
        let text = samples_csv(&samples);
        let keep = SAMPLES_COLUMNS.iter().position(|c| *c == "file_maps").expect("column");
        let old: String = text.lines().map(|l| l.split(',').take(keep).collect::<Vec<_>>().join(",") + "\n").collect();
        let back = parse_samples_csv(&old).expect("parse");
        for (a, b) in samples.iter().zip(&back) {
            assert_eq!(
                a.sample.explained_bytes() - a.sample.rocksdb.map_or(0, |r| r.explained_bytes() as i64),
                b.sample.explained_bytes() - b.sample.rocksdb.map_or(0, |r| r.explained_bytes() as i64)
            );
            assert_eq!(b.sample.process.file_maps, None);
        }
    }

    #[test]
    fn a_bad_csv_names_its_line_and_problem() {
        let header = SAMPLES_COLUMNS.join(",");
        let row = samples_csv(&[sample(1)]).lines().nth(1).expect("row").to_string();
        let cases = [
            (String::new(), 1, "no header"),
            ("cycle,monotonic_ns\n1,2\n".to_string(), 1, "no column allocated_bytes"),
            (format!("{header}\n{row}\n1,2\n"), 3, "2 fields"),
            (format!("{header}\n{}\n", row.replacen("1,", "x,", 1)), 2, "cycle: \"x\" is not an integer"),
            (format!("{header}\n{}\n", row.replace(",true,", ",maybe,")), 2, "settled"),
        ];
        for (text, line, problem) in cases {
            match parse_samples_csv(&text) {
                Err(ReportError::Samples { line: l, problem: p }) => {
                    assert_eq!(l, line, "{p}");
                    assert!(p.contains(problem), "{p:?} should say {problem:?}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }
}
