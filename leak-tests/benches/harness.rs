//! Harness overhead: one cycle of the reference store (4 tasks x 8 segments) driven by the
//! harness (counts-only ledger, a settled sample every cycle) against the same cycles called
//! directly, and the harness's cycles per second.
//!
//! Target (harness issue): overhead at most 10% of the cycle time.
#![allow(clippy::disallowed_types)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::{CycleCtx, Depth, Harness, HarnessConfig, Ledger, Lifecycle};

fn store(dir: &std::path::Path, ledger: &Ledger) -> ReferenceStore {
    let mut config = ReferenceConfig::new(dir);
    config.tasks = 4;
    config.segments = 8;
    // A new segment every cycle, so 8 live segments per task after warm-up.
    config.segment_interval = u64::from(config.records_per_cycle);
    ReferenceStore::new(config, ledger).expect("store")
}

fn bare(store: &mut ReferenceStore, ledger: &Ledger, cycles: u64, first: u64) {
    let faults = leakcheck::fault::Faults::none();
    for c in 0..cycles {
        let ctx = CycleCtx { cycle: first + c, ledger, faults: &faults };
        let mut s = store.open(&ctx).expect("open");
        store.work(&mut s, &ctx).expect("work");
        store.close(s, &ctx).expect("close");
        let _ = store.check(&ctx);
    }
}

fn harnessed(store: &mut ReferenceStore, ledger: &Ledger, cycles: u64) {
    let cfg = HarnessConfig { cycles, ..HarnessConfig::default() };
    let report = Harness::new(cfg).run(store, ledger).expect("run");
    assert!(report.records.iter().all(|r| r.retained_handles.is_empty()));
}

fn cycle_4x8(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let mut s = store(dir.path(), &ledger);
    bare(&mut s, &ledger, 10, 0); // warm up: segments exist
    let mut group = c.benchmark_group("reference_cycle_4x8");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    let mut next = 10;
    group.bench_function("bare", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            bare(&mut s, &ledger, iters, next);
            next += iters;
            t.elapsed()
        })
    });
    group.bench_function("harness", |b| {
        b.iter_custom(|iters| {
            let t = Instant::now();
            harnessed(&mut s, &ledger, iters);
            t.elapsed()
        })
    });
    group.finish();
}

/// Alternating blocks of bare and harnessed cycles on the same store, so drift hits both; prints
/// the ratio of total times and the harness's cycles per second.
fn interleaved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let mut s = store(dir.path(), &ledger);
    bare(&mut s, &ledger, 10, 0);
    let (mut bare_t, mut harness_t) = (Duration::ZERO, Duration::ZERO);
    const BLOCKS: u64 = 10;
    const CYCLES: u64 = 10;
    let mut next = 10;
    for _ in 0..BLOCKS {
        let t = Instant::now();
        bare(&mut s, &ledger, CYCLES, next);
        next += CYCLES;
        bare_t += t.elapsed();
        let t = Instant::now();
        harnessed(&mut s, &ledger, CYCLES);
        harness_t += t.elapsed();
    }
    let n = (BLOCKS * CYCLES) as f64;
    println!(
        "\nreference 4x8, {} cycles each, interleaved in blocks of {CYCLES}: bare {:.1} ms/cycle, harness {:.1} ms/cycle, \
         overhead {:+.2}%, harness {:.1} cycles/s",
        BLOCKS * CYCLES,
        bare_t.as_secs_f64() * 1e3 / n,
        harness_t.as_secs_f64() * 1e3 / n,
        (harness_t.as_secs_f64() / bare_t.as_secs_f64() - 1.0) * 100.0,
        n / harness_t.as_secs_f64()
    );
}

criterion_group!(benches, cycle_4x8);

fn main() {
    benches();
    if std::env::args().any(|a| a == "--bench") {
        interleaved();
    }
    Criterion::default().configure_from_args().final_summary();
}
