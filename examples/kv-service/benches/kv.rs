//! Per cycle of the kv service (open, 50 writes and a scan, close): wall time, and with
//! leakcheck's criterion measurement, the bytes a cycle leaves allocated. Those include the shared
//! block cache filling (it keeps the blocks of flushed files until it is full, bounded by its
//! capacity): a bench measures allocation, the check in tests/clean.rs judges what is a leak.
//! Then the handles retained by all the cycles run, which must be none.
use std::time::Duration;

use criterion::measurement::Measurement;
use criterion::Criterion;
use kv_service::KvService;
use leakcheck::bench::RetainedBytes;
use leakcheck::fault::Faults;
use leakcheck::{CycleCtx, Ledger, Lifecycle};

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn cycles<M: Measurement>(c: &mut Criterion<M>, what: &str, ledger: &Ledger) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut service = KvService::new(dir.path().join("kv"), ledger, 8 << 20).expect("service");
    let faults = Faults::none();
    let mut cycle = 0;
    let mut g = c.benchmark_group("kv_cycle");
    g.sample_size(10).warm_up_time(Duration::from_millis(300)).measurement_time(Duration::from_secs(2));
    g.bench_function(what, |b| {
        b.iter(|| {
            let ctx = CycleCtx { cycle, ledger, faults: &faults };
            cycle += 1;
            let mut open = service.open(&ctx).expect("open");
            service.work(&mut open, &ctx).expect("work");
            service.close(open, &ctx).expect("close");
        })
    });
    g.finish();
}

fn main() {
    let ledger = Ledger::new();
    cycles(&mut Criterion::default().configure_from_args(), "time", &ledger);
    cycles(
        &mut Criterion::default().with_measurement(RetainedBytes::default()).configure_from_args(),
        "retained_bytes",
        &ledger,
    );
    Criterion::default().configure_from_args().final_summary();
    // Criterion rejects a measurement that is always 0, which a clean store's retained handles
    // are: count them once, over every cycle the benches ran.
    let retained = ledger.retained_counts();
    println!("kv_cycle/retained_handles after every cycle above: {retained:?}");
    assert!(retained.is_empty(), "the kv service retained handles: {}", ledger.report());
}
