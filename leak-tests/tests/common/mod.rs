//! Shared by the process-per-test integration tests: a RocksDB open/write/close loop, optionally
//! with a planted native leak, judged by the verdict module.
#![allow(dead_code)]

use std::collections::BTreeMap;

use leakcheck::verdict::{analyze, AnalysisConfig, CycleSample, RunVerdict};
use leakcheck::{Ledger, Probe, Settle, Signal};

/// One cycle: a 2-column-family DB in a fresh directory, 100 writes per column family, close,
/// destroy the directory.
pub fn cycle(ledger: &Ledger, dir: &std::path::Path) {
    leak_tests::fresh::cycle_once(ledger, dir, 100).expect("cycle");
}

/// Runs `cycles` cycles, planting a native leak of `leak_bytes` per cycle through C malloc (0 for
/// none), and judges the run.
pub fn run(cycles: u64, leak_bytes: usize, cfg: &AnalysisConfig) -> RunVerdict {
    let base = tempfile::tempdir().expect("tempdir");
    let probe = Probe::new().watch_dir(base.path()).expect("watch");
    let ledger = Ledger::new();
    let mut kept: Vec<*mut libc::c_void> = Vec::with_capacity(cycles as usize);
    let mut samples = Vec::with_capacity(cycles as usize);
    let (baseline, _) = probe.settled_sample(Settle::SAMPLES);
    for c in 0..cycles {
        cycle(&ledger, &base.path().join(format!("cycle-{c}")));
        if leak_bytes > 0 {
            // SAFETY: plain C malloc; the block is kept (and freed at the end) on purpose.
            let p = unsafe { libc::malloc(leak_bytes) };
            assert!(!p.is_null());
            unsafe { p.cast::<u8>().write_bytes(0xa5, leak_bytes) };
            kept.push(std::hint::black_box(p));
        }
        let (sample, settled) = probe.settled_sample(Settle::SAMPLES);
        let retained: BTreeMap<String, u64> = ledger.report().retained.iter().fold(BTreeMap::new(), |mut m, g| {
            *m.entry(g.kind.to_string()).or_default() += g.count;
            m
        });
        samples.push(CycleSample::new(c, sample, retained, settled));
    }
    let (last, _) = probe.settled_sample(Settle::SAMPLES);
    let verdict = analyze(&samples, Some(&baseline), Some(&last), cfg);
    for p in kept {
        unsafe { libc::free(p) };
    }
    verdict
}

/// Prints a verdict compactly for the test log.
pub fn print(v: &RunVerdict) {
    eprintln!("run verdict: {}", v.verdict);
    for s in &v.signals {
        eprintln!(
            "  {:<28} {:<12} per cycle {:>10.1} [{:>10.1}, {:>10.1}] residue {:?} retention {:?} more {:?}",
            s.signal.to_string(),
            s.verdict.name(),
            s.estimate.map_or(f64::NAN, |e| e.value),
            s.estimate.map_or(f64::NAN, |e| e.lower),
            s.estimate.map_or(f64::NAN, |e| e.upper),
            s.residue.map(|r| r.max),
            s.retention,
            s.more_cycles_needed
        );
    }
    eprintln!("  leak rate {:?}", v.leak_rate);
    eprintln!("  baseline {:?}", v.baseline_return);
}

/// Runs `cycles` cycles with a planted native leak of `leak_bytes` per cycle and asserts that the
/// bytes signal calls it a leak at a slope within `expected` (bytes per cycle).
pub fn assert_flagged(cycles: u64, leak_bytes: usize, expected: std::ops::Range<f64>) -> RunVerdict {
    let v = run(cycles, leak_bytes, &AnalysisConfig::default());
    print(&v);
    let alloc = v.signal(Signal::AllocatedBytes).expect("allocated signal");
    assert_eq!(alloc.verdict, leakcheck::Verdict::Leak);
    let slope = alloc.estimate.expect("estimate").value;
    assert!(expected.contains(&slope), "slope {slope} B/cycle for a {leak_bytes} B/cycle leak");
    v
}
