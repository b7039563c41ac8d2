//! Memory per iteration with leakcheck's criterion measurements: bytes retained (a planted
//! 4 KiB-per-iteration native leak must measure as about 4 KiB; a cycle of the tracked reference
//! store as about 0), handles retained, and bytes allocated by raw and tracked wrappers.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::measurement::Measurement;
use criterion::{BenchmarkGroup, Criterion};
use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::bench::{AllocatedBytes, RetainedBytes, RetainedHandles};
use leakcheck::fault::Faults;
use leakcheck::tracked::{TrackedCfDescriptor, TrackedDb, TrackedOptions};
use leakcheck::{CycleCtx, Depth, Ledger, Lifecycle};
use rocksdb::SingleThreaded;

const PLANTED: usize = 4096;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn fresh_path(base: &Path) -> PathBuf {
    base.join(format!("db-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// One fresh-directory cycle through the tracked wrappers: open 2 CFs, 100 writes each, close,
/// destroy.
fn tracked_cycle(ledger: &Ledger, path: &Path) {
    leak_tests::fresh::cycle_once(ledger, path, 100).expect("cycle");
}

fn raw_open_close(path: &Path) {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|n| rocksdb::ColumnFamilyDescriptor::new(n, rocksdb::Options::default()));
    drop(rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("open"));
}

fn tracked_open_close(ledger: &Ledger, path: &Path) {
    let mut opts = TrackedOptions::new(ledger);
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, TrackedOptions::new(ledger)));
    drop(TrackedDb::<SingleThreaded>::open_cf_descriptors(&opts, path, cfs).expect("open"));
}

/// A fresh-DB cycle plus a planted native leak of 4 KiB per iteration, measured with `m`.
fn planted<M: Measurement>(m: &M, ledger: &Ledger, base: &Path, iters: u64) -> M::Value {
    let mut kept: Vec<*mut libc::c_void> = Vec::with_capacity(iters as usize);
    let start = m.start();
    for _ in 0..iters {
        tracked_cycle(ledger, &fresh_path(base));
        // SAFETY: C malloc, kept until after the measurement, then freed.
        let p = unsafe { libc::malloc(PLANTED) };
        unsafe { p.cast::<u8>().write_bytes(0xa5, PLANTED) };
        kept.push(std::hint::black_box(p));
    }
    let value = m.end(start);
    for p in kept {
        unsafe { libc::free(p) };
    }
    value
}

fn reference_store(base: &Path, ledger: &Ledger) -> ReferenceStore {
    ReferenceStore::new(ReferenceConfig::new(base.join("reference")), ledger).expect("store")
}

fn reference_cycle(store: &mut ReferenceStore, ledger: &Ledger, cycle: u64) {
    let faults = Faults::none();
    let ctx = CycleCtx { cycle, ledger, faults: &faults };
    let mut s = store.open(&ctx).expect("open");
    store.work(&mut s, &ctx).expect("work");
    store.close(s, &ctx).expect("close");
}

fn configure<M: Measurement>(g: &mut BenchmarkGroup<'_, M>) {
    g.sample_size(10).warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(3));
}

fn retained_bytes(c: &mut Criterion<RetainedBytes>) {
    let base = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let mut g = c.benchmark_group("retained_bytes");
    configure(&mut g);
    g.bench_function("fresh_db_cycle", |b| b.iter(|| tracked_cycle(&ledger, &fresh_path(base.path()))));
    g.bench_function("fresh_db_cycle_planted_4KiB", |b| {
        b.iter_custom(|iters| planted(&RetainedBytes::default(), &ledger, base.path(), iters))
    });
    let mut store = reference_store(base.path(), &ledger);
    let cycle = AtomicU64::new(0);
    for _ in 0..10 {
        reference_cycle(&mut store, &ledger, cycle.fetch_add(1, Ordering::Relaxed));
    }
    g.bench_function("reference_cycle_2x3", |b| {
        b.iter(|| reference_cycle(&mut store, &ledger, cycle.fetch_add(1, Ordering::Relaxed)))
    });
    g.finish();
}

fn retained_handles(c: &mut Criterion<RetainedHandles>, ledger: &Ledger) {
    let base = tempfile::tempdir().expect("tempdir");
    let mut g = c.benchmark_group("retained_handles");
    configure(&mut g);
    g.bench_function("forgotten_tracked_options", |b| b.iter(|| std::mem::forget(TrackedOptions::new(ledger))));
    g.bench_function("fresh_db_cycle", |b| b.iter(|| tracked_cycle(ledger, &fresh_path(base.path()))));
    g.finish();
}

fn allocated_bytes(c: &mut Criterion<AllocatedBytes>) {
    let base = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let sites = Ledger::with_depth(Depth::Sites);
    let mut g = c.benchmark_group("allocated_bytes_options");
    configure(&mut g);
    g.bench_function("raw", |b| b.iter(|| drop(std::hint::black_box(rocksdb::Options::default()))));
    g.bench_function("tracked_counts", |b| b.iter(|| drop(std::hint::black_box(TrackedOptions::new(&ledger)))));
    g.bench_function("tracked_sites", |b| b.iter(|| drop(std::hint::black_box(TrackedOptions::new(&sites)))));
    g.finish();
    let mut g = c.benchmark_group("allocated_bytes_open_close_2cf");
    configure(&mut g);
    g.bench_function("raw", |b| b.iter(|| raw_open_close(&fresh_path(base.path()))));
    g.bench_function("tracked_counts", |b| b.iter(|| tracked_open_close(&ledger, &fresh_path(base.path()))));
    g.finish();
}

/// The planted leak and a clean reference cycle measured directly (no criterion statistics):
/// the figures the targets are checked against.
fn direct_figures() {
    let base = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let m = RetainedBytes::default();
    for _ in 0..5 {
        tracked_cycle(&ledger, &fresh_path(base.path()));
    }
    let iters = 200;
    let planted_total = planted(&m, &ledger, base.path(), iters);
    let per = planted_total / iters as f64;
    let mut store = reference_store(base.path(), &ledger);
    for c in 0..20 {
        reference_cycle(&mut store, &ledger, c);
    }
    let n = 100;
    let start = m.start();
    for c in 20..20 + n {
        reference_cycle(&mut store, &ledger, c);
    }
    let reference = m.end(start) / n as f64;
    println!(
        "\nretained per iteration, measured directly: planted {PLANTED} B leak -> {per:.0} B ({:+.1}%), \
         reference 2x3 cycle -> {reference:.0} B",
        (per / PLANTED as f64 - 1.0) * 100.0
    );
}

fn main() {
    let mut c = Criterion::default().with_measurement(RetainedBytes::default()).configure_from_args();
    retained_bytes(&mut c);
    let ledger = Ledger::with_depth(Depth::Counts);
    let mut c = Criterion::default().with_measurement(RetainedHandles::new(&ledger)).configure_from_args();
    retained_handles(&mut c, &ledger);
    let mut c = Criterion::default().with_measurement(AllocatedBytes).configure_from_args();
    allocated_bytes(&mut c);
    if std::env::args().any(|a| a == "--bench") {
        direct_figures();
    }
    Criterion::default().configure_from_args().final_summary();
}
