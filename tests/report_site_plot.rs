//! The report plots the record's top sites, sample by sample: a leak's site rising, a cache's
//! plateau; and a clean verdict names the growth it rules out at its largest site. A store that
//! keeps one more 200-byte block each cycle beside a cache of the last 16 kilobyte entries, and the
//! same cache alone. Process-wide measurement (jemalloc, the generations): one test in this file.
// Rust's allocations reach jemalloc through its `malloc` override, which comes with rocksdb's
// `jemalloc` feature or with `unprefixed-malloc`.
#![cfg(any(feature = "rocksdb", feature = "unprefixed-malloc"))]

use std::collections::VecDeque;

use leakcheck::{CycleCtx, Ledger, Lifecycle, Signal, Verdict};

/// Entries the cache keeps.
const CACHED: usize = 16;

/// A store with no native parts: a cache of the last [`CACHED`] entries, and, when `leaks`, one
/// block kept for good each cycle.
struct Cached {
    leaks: bool,
    cache: VecDeque<Box<[u8; 1000]>>,
    /// One allocation per cycle, each its own block at one stack: boxed on purpose.
    #[allow(clippy::vec_box)]
    kept: Vec<Box<[u8; 200]>>,
}

impl Cached {
    #[inline(never)]
    fn cache_entry(&mut self, cycle: u64) {
        if self.cache.len() == CACHED {
            self.cache.pop_front();
        }
        self.cache.push_back(std::hint::black_box(Box::new([cycle as u8; 1000])));
    }

    #[inline(never)]
    fn keep_forever(&mut self, cycle: u64) {
        self.kept.push(std::hint::black_box(Box::new([cycle as u8; 200])));
    }
}

impl Lifecycle for Cached {
    type Store = ();
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn work(&mut self, _store: &mut (), ctx: &CycleCtx<'_>) -> Result<(), String> {
        self.cache_entry(ctx.cycle);
        if self.leaks {
            self.keep_forever(ctx.cycle);
        }
        Ok(())
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn let_go(&mut self) {
        self.cache.clear();
    }
}

fn check(leaks: bool, report: &std::path::Path) -> leakcheck::runner::RunOutcome {
    let ledger = Ledger::new();
    let mut store = Cached { leaks, cache: VecDeque::with_capacity(CACHED), kept: Vec::with_capacity(1024) };
    leakcheck::check(&mut store, &ledger).cycles(100).report(report).run().expect("the check runs")
}

#[test]
fn the_report_plots_a_leaks_site_rising_beside_a_caches_plateau_and_a_clean_line_names_its_largest_site() {
    let dir = tempfile::tempdir().expect("tempdir");
    let leaking = check(true, &dir.path().join("leaking"));
    assert_eq!(leaking.verdict(), Verdict::Leak, "{}", leaking.table());
    let retained = leaking.report.signal(Signal::RetainedBytes).and_then(|s| s.retained.clone()).expect("the record");
    let leak = &retained.plotted.first().expect("sites plotted");
    assert!(leak.growth.leaks() && leak.function.contains("keep_forever"), "the leak first: {:?}", retained.plotted);
    let (first, last) = (leak.points[0].1, leak.points[leak.points.len() - 1].1);
    assert!(last - first > 100.0 * 150.0, "it rises by its 200 B a cycle: {:?}", leak.points);
    let cache = retained.plotted.iter().find(|s| s.function.contains("cache_entry")).expect("the cache plotted");
    assert!(!cache.growth.leaks(), "{cache:?}");
    let late: Vec<f64> = cache.points.iter().filter(|p| p.0 >= 60).map(|p| p.1).collect();
    let spread = late.iter().copied().fold(f64::MIN, f64::max) - late.iter().copied().fold(f64::MAX, f64::min);
    assert!(!late.is_empty() && spread <= 1000.0, "the cache's plateau: {:?}", cache.points);
    let page = std::fs::read_to_string(dir.path().join("leaking/report.html")).expect("report.html");
    assert!(page.contains("live bytes per allocating site") && page.contains("Cached::keep_forever"), "the panel");

    let clean = check(false, &dir.path().join("clean"));
    assert_eq!(clean.verdict(), Verdict::Clean, "{}", clean.table());
    let retained = clean.report.signal(Signal::RetainedBytes).and_then(|s| s.retained.clone()).expect("the record");
    let largest = retained.largest_plotted().expect("the largest site");
    assert!(largest.function.contains("cache_entry") && largest.peak() >= 15_000.0, "{largest:?}");
    let line = clean.table().lines().find(|l| l.starts_with("retained_bytes clean: rules out")).map(str::to_owned);
    let line = line.unwrap_or_else(|| panic!("no clean line: {}", clean.table()));
    assert!(
        line.contains("its largest site, ") && line.contains("cache_entry") && line.contains("/cycle would"),
        "{line}"
    );
}
