//! Raw rust-rocksdb against the tracked wrappers (counts-only ledger), side by side in one group
//! per operation: open/close of a 2-column-family DB, put/get, an iterator scan, Options
//! create/drop. Then the same pairs interleaved, with the ratio of medians printed: criterion runs
//! variants one after another, and drift of the machine would otherwise land on one of them.
//!
//! Target (bench issue): tracked, counts only, at most 3% slower on the open/close cycle.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::Path;
use std::time::Instant;

use criterion::{criterion_group, BatchSize, Criterion};
use leakcheck::tracked::{TrackedCfDescriptor, TrackedDb, TrackedOptions, TrackedReadOptions, TrackedWriteOptions};
use leakcheck::{Depth, Ledger};
use rocksdb::{IteratorMode, SingleThreaded};

fn raw_db(path: &Path) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|n| rocksdb::ColumnFamilyDescriptor::new(n, rocksdb::Options::default()));
    rocksdb::DB::open_cf_descriptors(&opts, path, cfs).expect("open")
}

fn tracked_db(ledger: &Ledger, path: &Path) -> TrackedDb<SingleThreaded> {
    let mut opts = TrackedOptions::new(ledger);
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    let cfs = ["data", "offsets"].map(|n| TrackedCfDescriptor::new(n, TrackedOptions::new(ledger)));
    TrackedDb::open_cf_descriptors(&opts, path, cfs).expect("open")
}

fn fill(db: &rocksdb::DB) {
    for i in 0..1000u32 {
        db.put(i.to_be_bytes(), [7u8; 64]).expect("put");
    }
}

type Op<'a> = Box<dyn FnMut() + 'a>;

/// The operations, raw and tracked, on DBs kept open for the whole run (but open/close).
fn ops<'a>(
    ledger: &'a Ledger,
    dir: &'a Path,
    raw: &'a rocksdb::DB,
    tracked: &'a TrackedDb<SingleThreaded>,
) -> Vec<(&'static str, Op<'a>, Op<'a>)> {
    let mut n = 0u64;
    let mut m = 0u64;
    let wo = TrackedWriteOptions::new(ledger);
    vec![
        (
            "open_close_2cf",
            Box::new(move || {
                n += 1;
                let p = dir.join(format!("raw-{n}"));
                drop(raw_db(&p));
                let _ = std::fs::remove_dir_all(p);
            }),
            Box::new(move || {
                m += 1;
                let p = dir.join(format!("tracked-{m}"));
                drop(tracked_db(ledger, &p));
                let _ = std::fs::remove_dir_all(p);
            }),
        ),
        (
            "put_get",
            Box::new(move || {
                raw.put(b"k", b"v").expect("put");
                std::hint::black_box(raw.get(b"k").expect("get"));
            }),
            Box::new(move || {
                tracked.put_opt(b"k", b"v", &wo).expect("put");
                std::hint::black_box(tracked.get(b"k").expect("get"));
            }),
        ),
        (
            "iterator_scan_100",
            Box::new(move || {
                std::hint::black_box(raw.iterator(IteratorMode::Start).take(100).count());
            }),
            Box::new(move || {
                std::hint::black_box(
                    tracked.iterator_opt(IteratorMode::Start, TrackedReadOptions::new(ledger)).take(100).count(),
                );
            }),
        ),
        (
            "options_create_drop",
            Box::new(|| drop(std::hint::black_box(rocksdb::Options::default()))),
            Box::new(move || drop(std::hint::black_box(TrackedOptions::new(ledger)))),
        ),
    ]
}

/// A scratch directory, a counts-only ledger, and a raw and a tracked DB filled alike. Fields in
/// drop order: the DBs close before their directory is removed.
struct Fixture {
    raw: rocksdb::DB,
    tracked: TrackedDb<SingleThreaded>,
    ledger: Ledger,
    dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::with_depth(Depth::Counts);
    let raw = raw_db(&dir.path().join("raw-main"));
    let tracked = tracked_db(&ledger, &dir.path().join("tracked-main"));
    fill(&raw);
    fill(&tracked);
    Fixture { raw, tracked, ledger, dir }
}

fn side_by_side(c: &mut Criterion) {
    let f = fixture();
    for (name, mut r, mut t) in ops(&f.ledger, f.dir.path(), &f.raw, &f.tracked) {
        let mut g = c.benchmark_group(name);
        if name == "open_close_2cf" {
            g.sample_size(20);
        }
        g.bench_function("raw", |b| b.iter_batched(|| (), |()| r(), BatchSize::SmallInput));
        g.bench_function("tracked_counts", |b| b.iter_batched(|| (), |()| t(), BatchSize::SmallInput));
        g.finish();
    }
}

fn interleaved() {
    let f = fixture();
    println!("\nraw vs tracked (counts), interleaved, median per operation:");
    for (name, mut r, mut t) in ops(&f.ledger, f.dir.path(), &f.raw, &f.tracked) {
        let (rounds, batch) = if name == "open_close_2cf" { (200, 1) } else { (400, 200) };
        let (mut rt, mut tt) = (Vec::new(), Vec::new());
        for i in 0..rounds {
            let time = |f: &mut Op<'_>| {
                let s = Instant::now();
                for _ in 0..batch {
                    f();
                }
                s.elapsed().as_secs_f64() / f64::from(batch)
            };
            if i % 2 == 0 {
                rt.push(time(&mut r));
                tt.push(time(&mut t));
            } else {
                tt.push(time(&mut t));
                rt.push(time(&mut r));
            }
        }
        rt.sort_by(f64::total_cmp);
        tt.sort_by(f64::total_cmp);
        let (a, b) = (rt[rt.len() / 2], tt[tt.len() / 2]);
        println!("  {name:<22} raw {:>10.3} µs  tracked {:>10.3} µs  ratio {:.4}", a * 1e6, b * 1e6, b / a);
    }
}

criterion_group!(benches, side_by_side);

fn main() {
    benches();
    if std::env::args().any(|a| a == "--bench") {
        interleaved();
    }
    Criterion::default().configure_from_args().final_summary();
}
