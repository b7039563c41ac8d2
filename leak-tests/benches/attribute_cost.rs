//! What `#[leakcheck::test]` costs: an annotated test of a body of about 10 ms against one run of
//! the same body, each in a fresh process (a test binary starts cold: RocksDB's process-wide state
//! is made by its first open in both).
//!
//! Target (issue 57): the annotated test within 30x a single run. Run it with
//! `cargo bench -p leak-tests --bench attribute_cost` (the build's release profile); it prints
//! both times and their ratio, over 5 fresh processes each (medians).
#![allow(clippy::disallowed_types)]

use std::process::Command;
use std::time::{Duration, Instant};

use leakcheck::runner::attribute::{run, TestSpec};

/// An ordinary test's body of about 10 ms: a DB opened, 2,000 keys written, flushed and read
/// back, closed.
fn body() -> Result<(), rocksdb::Error> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    let db = rocksdb::DB::open(&opts, dir.path())?;
    for i in 0u32..2_000 {
        db.put(i.to_be_bytes(), [7u8; 100])?;
    }
    db.flush()?;
    for i in 0u32..2_000 {
        assert!(db.get(i.to_be_bytes())?.is_some());
    }
    Ok(())
}

const SPEC: TestSpec = TestSpec {
    path: "attribute_cost::ten_ms_body",
    file: file!(),
    line: line!(),
    cycles: None,
    max_cycles: None,
    faults: None,
    seed: None,
    suppressions: None,
    generations: true,
};

/// Times one of the two in this process, printing the seconds.
fn timed(which: &str) {
    let started = Instant::now();
    match which {
        "single" => body().expect("the body"),
        // In place, as under cargo nextest (under cargo test a child process adds its start).
        _ => run(&SPEC, body),
    }
    println!("{}", started.elapsed().as_secs_f64());
}

/// The median of 5 fresh processes' times for `which`.
fn median_of_processes(which: &str) -> Duration {
    let exe = std::env::current_exe().expect("this bench");
    let mut times: Vec<f64> = (0..5)
        .map(|_| {
            let out = Command::new(&exe).arg(which).env("NEXTEST", "1").output().expect("a fresh process");
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{which}: {text}{}", String::from_utf8_lossy(&out.stderr));
            text.lines().last().and_then(|l| l.trim().parse().ok()).expect("the seconds")
        })
        .collect();
    times.sort_by(f64::total_cmp);
    Duration::from_secs_f64(times[2])
}

fn main() {
    let which = std::env::args().nth(1).unwrap_or_default();
    if which == "single" || which == "annotated" {
        return timed(&which);
    }
    // `cargo bench` passes `--bench`: the measurement itself.
    let single = median_of_processes("single");
    let annotated = median_of_processes("annotated");
    println!(
        "attribute_cost: one run of the body {:.1} ms, the annotated test {:.1} ms: {:.1}x (target: at most 30x)",
        single.as_secs_f64() * 1e3,
        annotated.as_secs_f64() * 1e3,
        annotated.as_secs_f64() / single.as_secs_f64()
    );
}
