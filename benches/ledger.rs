//! Ledger overhead: raw rust-rocksdb against tracked wrappers at each tracking depth, side by side
//! in one group per operation.
//!
//! Targets (ledger issue): counts-only at most 3% slower than raw on the open/close cycle of a
//! 2-column-family DB; with sites at most 10%; register plus release under 100 ns at counts level.
// Raw rust-rocksdb on purpose: it is the baseline.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::time::Instant;

use criterion::{criterion_group, BatchSize, Criterion};
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

/// A fresh DB directory per iteration (made and removed outside the timed part): reopening one
/// directory would make later variants slower, as RocksDB's info-log and OPTIONS files pile up.
fn fresh_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

fn open_close(c: &mut Criterion) {
    let mut group = c.benchmark_group("open_close_2cf");
    group.sample_size(40);
    group.bench_function("raw", |b| {
        b.iter_batched(
            fresh_dir,
            |dir| {
                raw_open_close(dir.path());
                dir
            },
            BatchSize::PerIteration,
        )
    });
    for depth in DEPTHS {
        let ledger = Ledger::with_depth(depth);
        group.bench_function(depth.name(), |b| {
            b.iter_batched(
                fresh_dir,
                |dir| {
                    tracked_open_close(&ledger, dir.path());
                    dir
                },
                BatchSize::PerIteration,
            )
        });
        assert_eq!(ledger.live_total(), 0, "the benchmark itself leaked");
    }
    group.finish();
}

/// Criterion runs variants one after another, so slow drift of the machine (page cache, file
/// system) lands on whichever runs later; on the open/close cycle that drift is larger than the
/// ledger's cost. This alternates raw and tracked cycles, pair by pair, and prints the ratio of
/// median times: the figure the overhead targets are checked against.
fn interleaved_open_close() {
    const PAIRS: usize = 200;
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("\nopen_close_2cf interleaved, {PAIRS} pairs per depth (median of each, ratio tracked/raw):");
    for depth in DEPTHS {
        let ledger = Ledger::with_depth(depth);
        let (mut raw, mut tracked) = (Vec::with_capacity(PAIRS), Vec::with_capacity(PAIRS));
        for i in 0..PAIRS {
            let (a, b) = (fresh_dir(), fresh_dir());
            let time = |f: &dyn Fn()| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            };
            // Alternate which goes first, so neither always gets the warmer cache.
            if i % 2 == 0 {
                raw.push(time(&|| raw_open_close(a.path())));
                tracked.push(time(&|| tracked_open_close(&ledger, b.path())));
            } else {
                tracked.push(time(&|| tracked_open_close(&ledger, b.path())));
                raw.push(time(&|| raw_open_close(a.path())));
            }
        }
        assert_eq!(ledger.live_total(), 0, "the benchmark itself leaked");
        let (r, t) = (median(&mut raw), median(&mut tracked));
        println!("  {:<10} raw {:>8.3} ms  tracked {:>8.3} ms  ratio {:.4}", depth.name(), r * 1e3, t * 1e3, t / r);
    }
}

criterion_group!(benches, register_release, options_create_drop, open_close);

fn main() {
    benches();
    // Only when benchmarking (not under `cargo test --benches`, which passes no --bench flag).
    if std::env::args().any(|a| a == "--bench") {
        interleaved_open_close();
    }
    Criterion::default().configure_from_args().final_summary();
}
