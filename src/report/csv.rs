//! samples.csv: one row per settled sample, written as the run goes and read back.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::atomic::write_atomic;
use super::error::io_err;
use super::ReportError;
use crate::verdict::CycleSample;

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
const COLUMNS: [(&str, CellOf); 29] = [
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
    ("record_resident_bytes", |c| Cell::Count(c.sample.record_resident_bytes)),
    ("untouched_bytes", |c| Cell::Count(c.sample.untouched_bytes)),
    ("rocksdb_cache_capacity_bytes", |c| Cell::Count(c.sample.rocksdb.map(|r| r.cache_capacity_bytes))),
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
pub(crate) fn samples_csv(samples: &[CycleSample]) -> String {
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
    pub(crate) fn create(path: &Path) -> Result<Self, ReportError> {
        let mut header = SAMPLES_COLUMNS.join(",");
        header.push('\n');
        write_atomic(path, header.as_bytes())?;
        Ok(SamplesFile { path: path.to_path_buf(), pending: String::new() })
    }

    /// Adds a sample's row (written at the next flush).
    pub(crate) fn push(&mut self, c: &CycleSample) {
        push_row(&mut self.pending, c);
    }

    /// Appends the pending rows and syncs the file.
    ///
    /// # Errors
    /// The I/O error, naming the file.
    pub(crate) fn flush(&mut self) -> Result<(), ReportError> {
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
            record_resident_bytes: self.count("record_resident_bytes")?,
            untouched_bytes: self.count("untouched_bytes")?,
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
            cache_capacity_bytes: u("rocksdb_cache_capacity_bytes")?,
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
