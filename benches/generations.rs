//! What the allocation generations cost per allocation (issue 58): one allocation and one free
//! of a block in a working set of 4,096 live blocks, with the hooks off (jemalloc's fast path),
//! on, and on with the block's size watched (its allocating stack taken every time), on 1 thread
//! and on 8. A figure is the wall time per allocation (with its free): with 8 threads, the
//! process's time over all their allocations.
//!
//! The hooks are the process's and cannot be taken out once in, so the `off` figures are measured
//! first. `cargo bench --bench generations`; docs/generations.md has the figures.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use leakcheck::workspace::generations;

/// Sizes the blocks cycle through: jemalloc size classes, so that each is its block's usable
/// size (the size a watch names).
const SIZES: [usize; 4] = [32, 96, 448, 3072];
/// Live blocks each thread keeps: every allocation replaces the oldest.
const WORKING_SET: usize = 4096;

/// `n` allocations, each freeing the block it replaces, on one thread.
fn churn(n: u64) {
    let mut live: Vec<Vec<u8>> = (0..WORKING_SET).map(|_| Vec::new()).collect();
    for i in 0..n as usize {
        let block = Vec::<u8>::with_capacity(SIZES[i % SIZES.len()]);
        live[i % WORKING_SET] = std::hint::black_box(block);
    }
    drop(std::hint::black_box(live));
}

/// Wall time of `iters` allocations shared among `threads` threads.
fn timed(iters: u64, threads: u64) -> Duration {
    let each = iters.div_ceil(threads);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || churn(each));
        }
    });
    start.elapsed()
}

fn per_allocation(c: &mut Criterion, mode: &str) {
    let mut group = c.benchmark_group("per_allocation");
    for threads in [1u64, 8] {
        group.bench_function(BenchmarkId::new(mode, format!("{threads} threads")), |b| {
            b.iter_custom(|iters| timed(iters, threads))
        });
    }
    group.finish();
}

fn generations_cost(c: &mut Criterion) {
    per_allocation(c, "off");
    let g = match generations::install() {
        Ok(g) => g,
        Err(e) => {
            eprintln!("generations bench: the hooks could not be installed ({e}); only `off` was measured");
            return;
        }
    };
    // A generation of its own, as a cycle's allocations have.
    g.advance();
    per_allocation(c, "on");
    for size in SIZES {
        g.watch(size as u64);
    }
    per_allocation(c, "on, every stack taken");
    g.unwatch_all();
}

criterion_group!(benches, generations_cost);
criterion_main!(benches);
