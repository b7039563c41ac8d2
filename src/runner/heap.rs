//! `--profile`: jemalloc heap profiles around the measured cycles, and the stacks that grew.

use std::path::Path;
#[cfg(feature = "profiling")]
use std::path::PathBuf;

use super::RunError;
use crate::report::{HeapFunction, HeapStack};

/// Stacks kept in the report.
#[cfg(feature = "profiling")]
const TOP: usize = 10;

/// Without the heap profiler, `--profile` is refused: no run is ever profiled.
#[cfg(not(feature = "profiling"))]
#[derive(Debug)]
pub(super) struct HeapRun(std::convert::Infallible);

/// A profiled run: sampling from the end of the first cycle, a first dump after the warm-up, a
/// last one at the end. Dumps go to the report directory, else to a temporary one.
#[cfg(feature = "profiling")]
#[derive(Debug)]
pub(super) struct HeapRun {
    dir: PathBuf,
    keep_files: bool,
    _scratch: Option<tempfile::TempDir>,
    lg: u32,
    warmup: u64,
    first_after: Option<u64>,
    /// The caches' explained fill ([`cache_fill`]) when the first dump was taken.
    first_cache_fill: Option<u64>,
}

/// The block caches' usage that the verdict explains, at the last sample: their usage within
/// capacity plus the allocator's rounding of it (0 without RocksDB's figures).
pub(super) fn cache_fill(samples: &[crate::verdict::CycleSample]) -> Option<u64> {
    samples.last().map(|s| s.sample.rocksdb.map_or(0, |m| m.cache_bytes() + m.cache_rounding_bytes()))
}

#[cfg(not(feature = "profiling"))]
impl HeapRun {
    pub(super) fn start(_lg: u32, _report: Option<&Path>, _warmup: u64) -> Result<Self, RunError> {
        Err(super::outcome::invalid("--profile", "this build has no heap profiler (leakcheck's feature `profiling`)"))
    }

    pub(super) fn after_cycle(&mut self, _cycle: u64, _cache_fill: Option<u64>) -> Result<(), RunError> {
        match self.0 {}
    }

    pub(super) fn finish(self, _cycles_run: u64, _cache_fill: Option<u64>) -> Result<Growth, RunError> {
        match self.0 {}
    }
}

#[cfg(feature = "profiling")]
impl HeapRun {
    pub(super) fn start(lg: u32, report: Option<&Path>, warmup: u64) -> Result<Self, RunError> {
        if lg > 40 {
            return Err(super::outcome::invalid(
                "--profile",
                format!("{lg}: the sample interval is 2^N bytes, N at most 40"),
            ));
        }
        let (dir, keep_files, scratch) = match report {
            Some(d) => (d.to_path_buf(), true, None),
            None => {
                let t = tempfile::Builder::new().prefix("leakcheck-heap").tempdir().map_err(|source| {
                    RunError::Dir { option: "temporary directory", path: std::env::temp_dir(), source }
                })?;
                (t.path().to_path_buf(), false, Some(t))
            }
        };
        crate::probe::heap::require_available().map_err(RunError::Profile)?;
        Ok(HeapRun {
            dir,
            keep_files,
            _scratch: scratch,
            lg,
            warmup: warmup.max(2),
            first_after: None,
            first_cache_fill: None,
        })
    }

    /// After `cycles` cycles: sampling starts after the first cycle (the run's check that native
    /// allocations are visible to jemalloc comes before it, undisturbed by sampling), and the
    /// first dump is taken once the warm-up is over. Only the file is written now; it is read at
    /// the end, so that nothing the profile holds stays in memory during the measured cycles.
    /// `cache_fill` is [`cache_fill`] of the samples so far.
    pub(super) fn after_cycle(&mut self, cycles: u64, cache_fill: Option<u64>) -> Result<(), RunError> {
        if cycles == 1 {
            crate::probe::heap::start(self.lg).map_err(RunError::Profile)?;
        }
        if self.first_after.is_none() && cycles >= self.warmup {
            crate::probe::heap::dump(&self.dir.join("heap-first.prof")).map_err(RunError::Profile)?;
            self.first_after = Some(cycles);
            self.first_cache_fill = cache_fill;
        }
        Ok(())
    }

    /// The last dump, the growth per stack, and the files: `heap-first.pb.gz`, `heap-last.pb.gz`
    /// (pprof; `pprof -base heap-first.pb.gz heap-last.pb.gz`), `heap-growth.folded` and the flame
    /// graph `heap-growth.svg` (when some stack grew). The stacks are ranked by the growth that the caches' fill from
    /// the first dump to the end (`cache_fill`, as [`cache_fill`]) does not explain.
    pub(super) fn finish(self, cycles_run: u64, cache_fill: Option<u64>) -> Result<Growth, RunError> {
        use crate::probe::heap::{self, HeapProfile};
        let Some(first_after) = self.first_after else {
            heap::stop();
            return Ok(Growth::default()); // the run ended within the warm-up
        };
        let last_path = self.dir.join("heap-last.prof");
        heap::dump(&last_path).map_err(RunError::Profile)?;
        heap::stop();
        let read = |p: &Path| -> Result<HeapProfile, RunError> {
            let text = std::fs::read_to_string(p).map_err(|source| RunError::Dir {
                option: "--profile",
                path: p.to_path_buf(),
                source,
            })?;
            HeapProfile::parse(&text).map_err(RunError::Profile)
        };
        let first = read(&self.dir.join("heap-first.prof"))?;
        let last = read(&last_path)?;
        let cycles = cycles_run.saturating_sub(first_after).max(1);
        let changes = last.changes_since(&first, cycles);
        let growth = heap::growing(&changes);
        let resolve = heap::resolve;
        if self.keep_files {
            let write = |name: &str, data: &[u8]| {
                std::fs::write(self.dir.join(name), data).map_err(|source| RunError::Dir {
                    option: "--report",
                    path: self.dir.join(name),
                    source,
                })
            };
            write("heap-first.pb.gz", &first.to_pprof(&resolve).map_err(RunError::Profile)?)?;
            write("heap-last.pb.gz", &last.to_pprof(&resolve).map_err(RunError::Profile)?)?;
            write("heap-growth.folded", heap::folded(&growth, &resolve).as_bytes())?;
            let title =
                format!("heap growth, cycles {first_after} to {cycles_run} (all stacks, leakcheck's own included)");
            match heap::flame_svg(&growth, &resolve, &title).map_err(RunError::Profile)? {
                Some(svg) => write(crate::report::FLAME_FILE, svg.as_bytes())?,
                // Nothing grew: no picture, and none left from an earlier run in this directory.
                None => match std::fs::remove_file(self.dir.join(crate::report::FLAME_FILE)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(RunError::Dir {
                            option: "--report",
                            path: self.dir.join(crate::report::FLAME_FILE),
                            source: e,
                        })
                    }
                    _ => {}
                },
            }
        }
        let named = |g: &heap::StackGrowth| HeapStack {
            bytes_per_cycle: g.bytes_per_cycle,
            objects: g.objects,
            lower_bytes_per_cycle: g.lower_bytes_per_cycle,
            explained_bytes_per_cycle: 0.0,
            frames: heap::named_frames(&g.stack, &resolve),
        };
        let not_bookkeeping = |s: &HeapStack| !crate::probe::stacks::is_leakcheck_bookkeeping(&s.frames);
        let stacks: Vec<HeapStack> = growth.iter().map(named).filter(not_bookkeeping).collect();
        let filled = match (self.first_cache_fill, cache_fill) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / cycles as f64,
            _ => 0.0,
        };
        let stacks = explain_cache_fill(stacks, filled);
        // A function's sum is its net change: the stacks through it that shrank count too.
        let shrank: Vec<HeapStack> =
            changes.iter().filter(|g| g.bytes < 0.0).map(named).filter(not_bookkeeping).collect();
        let mut functions = by_function(stacks.iter().chain(&shrank));
        functions.truncate(TOP);
        Ok(Growth { stacks: stacks.into_iter().take(TOP).collect(), functions })
    }
}

/// The heap's growth of a profiled run: its largest stacks and functions, most unexplained first.
#[derive(Debug, Default)]
pub(super) struct Growth {
    pub(super) stacks: Vec<HeapStack>,
    pub(super) functions: Vec<HeapFunction>,
}

/// The stacks summed per function of the user's code ([`crate::probe::stacks::own_function`];
/// stacks without one are left out), the most unexplained first. Given shrinking stacks too, a
/// function's bytes and objects are its net change (noise that grew in one stack and shrank in
/// another cancels out); a function that did not grow on net has a lower bound of 0.
#[cfg(feature = "profiling")]
fn by_function<'a>(stacks: impl IntoIterator<Item = &'a HeapStack>) -> Vec<HeapFunction> {
    let mut sums: std::collections::BTreeMap<&str, HeapFunction> = std::collections::BTreeMap::new();
    for s in stacks {
        let Some(function) = crate::probe::stacks::own_function(&s.frames) else { continue };
        let f = sums.entry(function).or_insert_with(|| HeapFunction {
            function: function.to_string(),
            bytes_per_cycle: 0.0,
            explained_bytes_per_cycle: 0.0,
            unexplained_lower_bytes_per_cycle: 0.0,
            objects: 0,
            stacks: 0,
        });
        f.bytes_per_cycle += s.bytes_per_cycle;
        f.explained_bytes_per_cycle += s.explained_bytes_per_cycle;
        f.objects += s.objects;
        f.stacks += 1;
    }
    let mut out: Vec<HeapFunction> = sums
        .into_values()
        .map(|mut f| {
            let lower = if f.objects > 0 && f.bytes_per_cycle > 0.0 {
                f.bytes_per_cycle
                    * crate::probe::heap::poisson_lower_bound(f.objects, crate::probe::heap::GROWTH_CONFIDENCE)
                    / f.objects as f64
            } else {
                0.0
            };
            f.unexplained_lower_bytes_per_cycle = (lower - f.explained_bytes_per_cycle).max(0.0);
            f
        })
        .collect();
    out.sort_by(|a, b| b.unexplained_bytes_per_cycle().total_cmp(&a.unexplained_bytes_per_cycle()));
    out
}

/// Explains the stacks that fill a block cache by `filled` bytes per cycle (the caches' growth),
/// largest stack first, each up to its own growth; then ranks all by what stays unexplained.
#[cfg(feature = "profiling")]
fn explain_cache_fill(mut stacks: Vec<HeapStack>, filled: f64) -> Vec<HeapStack> {
    let mut left = filled.max(0.0);
    for s in stacks.iter_mut().filter(|s| crate::probe::stacks::fills_a_block_cache(&s.frames)) {
        s.explained_bytes_per_cycle = s.bytes_per_cycle.min(left);
        left -= s.explained_bytes_per_cycle;
    }
    stacks.sort_by(|a, b| b.unexplained_bytes_per_cycle().total_cmp(&a.unexplained_bytes_per_cycle()));
    stacks
}

#[cfg(all(test, feature = "profiling"))]
mod tests {
    use super::*;

    fn stack(bytes: f64, frames: &[&str]) -> HeapStack {
        HeapStack {
            bytes_per_cycle: bytes,
            objects: 10,
            lower_bytes_per_cycle: bytes / 2.0,
            explained_bytes_per_cycle: 0.0,
            frames: frames.iter().map(|f| f.to_string()).collect(),
        }
    }

    /// A filling cache explains its own stacks up to its measured growth, and no other stack:
    /// a leak comes first, and blocks pinned beyond what the cache grew stay unexplained.
    #[test]
    fn cache_fill_explains_only_cache_stacks_and_only_as_much_as_the_cache_grew() {
        let fill = [
            "rocksdb::BlockFetcher::ReadBlock(bool)",
            "rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::Block_kData>()",
        ];
        let stacks =
            vec![stack(3000.0, &fill), stack(2000.0, &fill), stack(500.0, &["rocksdb_options_create", "kv::options"])];
        let ranked = explain_cache_fill(stacks.clone(), 4800.0);
        assert_eq!(ranked[0].frames[0], "rocksdb_options_create");
        assert_eq!(ranked[0].explained_bytes_per_cycle, 0.0);
        assert_eq!(ranked[1].unexplained_bytes_per_cycle(), 200.0);
        assert_eq!(ranked.iter().map(|s| s.explained_bytes_per_cycle).sum::<f64>(), 4800.0);
        let full = explain_cache_fill(stacks, 0.0);
        assert_eq!(full[0].bytes_per_cycle, 3000.0);
        assert!(full.iter().all(|s| s.explained_bytes_per_cycle == 0.0));
    }

    /// Stacks through one function of the user's code sum to one entry, whatever native objects
    /// they allocate; stacks without such a frame are not summed.
    #[test]
    fn stacks_sum_per_function_of_the_users_code() {
        let options = "kv::Service::options (/work/kv/src/lib.rs:112)";
        let stacks = vec![
            stack(500.0, &["rocksdb_options_create", options]),
            stack(
                300.0,
                &["rocksdb::BlockBasedTableFactory::BlockBasedTableFactory()", "rocksdb_options_create", options],
            ),
            stack(600.0, &["rocksdb::Arena::AllocateNewBlock", "kv::Service::work (/work/kv/src/lib.rs:170)"]),
            stack(900.0, &["a", "b"]),
        ];
        let functions = by_function(&stacks);
        assert_eq!(functions.len(), 2);
        let shrank =
            stack(-550.0, &["rocksdb::Arena::AllocateNewBlock", "kv::Service::work (/work/kv/src/lib.rs:171)"]);
        let net = by_function(stacks.iter().chain([&HeapStack { objects: -10, ..shrank }]));
        assert_eq!((net[1].function.as_str(), net[1].bytes_per_cycle, net[1].objects), ("kv::Service::work", 50.0, 0));
        assert_eq!(net[1].unexplained_lower_bytes_per_cycle, 0.0);
        assert_eq!(
            (functions[0].function.as_str(), functions[0].bytes_per_cycle, functions[0].stacks, functions[0].objects),
            ("kv::Service::options", 800.0, 2, 20)
        );
        assert!(
            functions[0].unexplained_lower_bytes_per_cycle > 0.0
                && functions[0].unexplained_lower_bytes_per_cycle < 800.0
        );
        assert_eq!(functions[1].function, "kv::Service::work");
    }
}
