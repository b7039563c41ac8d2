//! Ledger overhead: raw rust-rocksdb against tracked wrappers at each tracking depth, side by side
//! in one group per operation.
//!
//! Targets (ledger issue): counts-only at most 3% slower than raw on the open/close cycle of a
//! 2-column-family DB; with sites at most 10%; register plus release under 100 ns at counts level.
// Raw rust-rocksdb on purpose: it is the baseline.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use leakcheck::tracked::{TrackedCfDescriptor, TrackedDb, TrackedOptions};
use leakcheck::{Depth, HandleKind, Ledger};
use rocksdb::{ColumnFamilyDescriptor, Options, SingleThreaded, DB};

const DEPTHS: [Depth; 3] = [Depth::Counts, Depth::Sites, Depth::Backtraces];

fn register_release(c: &mut Criterion) {
    let mut group = c.benchmark_group("register_release");
    for depth in DEPTHS {
        let ledger = Ledger::with_depth(depth);
        group.bench_function(depth.name(), |b| b.iter(|| drop(ledger.register(HandleKind::Options))));
    }
    group.finish();
}

fn options_create_drop(c: &mut Criterion) {
    let mut group = c.benchmark_group("options_create_drop");
    group.bench_function("raw", |b| b.iter(|| drop(std::hint::black_box(Options::default()))));
    for depth in DEPTHS {
        let ledger = Ledger::with_depth(depth);
        group.bench_function(depth.name(), |b| b.iter(|| drop(std::hint::black_box(TrackedOptions::new(&ledger)))));
    }
    group.finish();
}

fn raw_open_close(path: &std::path::Path) {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|name| ColumnFamilyDescriptor::new(name, Options::default()));
    let db = DB::open_cf_descriptors(&opts, path, cfs).expect("open");
    drop(std::hint::black_box(db));
}

fn tracked_open_close(ledger: &Ledger, path: &std::path::Path) {
    let mut opts = TrackedOptions::new(ledger);
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|name| TrackedCfDescriptor::new(name, TrackedOptions::new(ledger)));
    let db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&opts, path, cfs).expect("open");
    drop(std::hint::black_box(db));
}

fn open_close(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("open_close_2cf");
    group.sample_size(30);
    let path = dir.path().join("db");
    raw_open_close(&path);
    group.bench_function("raw", |b| b.iter_batched(|| (), |()| raw_open_close(&path), BatchSize::PerIteration));
    for depth in DEPTHS {
        let ledger = Ledger::with_depth(depth);
        group.bench_function(depth.name(), |b| {
            b.iter_batched(|| (), |()| tracked_open_close(&ledger, &path), BatchSize::PerIteration)
        });
        assert_eq!(ledger.live_total(), 0, "the benchmark itself leaked");
    }
    group.finish();
}

criterion_group!(benches, register_release, options_create_drop, open_close);
criterion_main!(benches);
