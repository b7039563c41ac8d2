//! What a probe sample costs: with and without purging jemalloc's arenas first.
//! Target (foundation issue): a sample without purge well under a millisecond.

use criterion::{criterion_group, criterion_main, Criterion};
use leakcheck::Probe;

fn probe(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("probe");
    let plain = Probe::new();
    group.bench_function("sample", |b| b.iter(|| plain.sample()));
    let watching = Probe::new().watch_dir(dir.path()).expect("watch dir");
    group.bench_function("sample_watch_dir", |b| b.iter(|| watching.sample()));
    let purging = Probe::new().purge(true).watch_dir(dir.path()).expect("watch dir");
    group.bench_function("sample_purge_watch_dir", |b| b.iter(|| purging.sample()));
    group.bench_function("jemalloc_allocated_only", |b| b.iter(leakcheck::workspace::allocated_bytes));
    group.finish();
}

criterion_group!(benches, probe);
criterion_main!(benches);
