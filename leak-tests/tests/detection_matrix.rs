//! The detection matrix: every planted variant of the reference store, each in its own process,
//! is flagged by its expected signals (and not by the ones it is invisible to), the report names
//! the planted line where the signal has one, and the reference store comes out clean under the
//! same fault plan.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Mutex;

use leakcheck::harness::mutants::{MutantOutcome, CATALOG};

const CYCLES: &str = "100";
const STORE_SOURCE: &str = include_str!("../../src/harness/reference.rs");
const STORE_PATH: &str = "src/harness/reference.rs";

/// The line after `// PLANTED(name)` in the store's source: the planted statement.
fn planted_line(name: &str) -> usize {
    let marker = format!("// PLANTED({name})");
    let i = STORE_SOURCE.lines().position(|l| l.trim() == marker).unwrap_or_else(|| panic!("no marker {marker}"));
    i + 2 // 1-based line of the next line
}

fn run(name: &str) -> MutantOutcome {
    let out = Command::new(env!("CARGO_BIN_EXE_leak-variant")).args([name, CYCLES]).output().expect("spawn leak-variant");
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn every_variant_is_caught_by_its_signals_and_the_reference_store_is_clean() {
    // Two at a time: each is its own process, so their process-wide signals do not mix.
    let queue = Mutex::new(CATALOG.iter().collect::<Vec<_>>());
    let results = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(m) = queue.lock().expect("queue").pop() else { break };
                let outcome = run(m.name);
                results.lock().expect("results").insert(m.name, outcome);
            });
        }
    });
    let results = results.into_inner().expect("results");

    println!("{:<32} {:<9} {:>8} {:>7}  signals", "variant", "detected", "seconds", "cycles");
    for m in &CATALOG {
        let o = &results[m.name];
        println!(
            "{:<32} {:<9} {:>8.2} {:>7}  {}",
            m.name,
            o.detected,
            o.seconds,
            o.cycles_to_verdict.map_or("-".to_string(), |c| c.to_string()),
            o.signals.join(",")
        );
    }

    for m in &CATALOG {
        let o = &results[m.name];
        if m.expected.is_empty() {
            assert!(!o.detected && o.signals.is_empty(), "the reference store must be clean: {o:?}");
            continue;
        }
        assert!(o.detected, "{} not detected: {o:?}", m.name);
        for class in m.expected {
            assert!(o.signals.iter().any(|s| s == class), "{}: expected signal {class}, got {:?}", m.name, o.signals);
        }
        for class in m.invisible_to {
            assert!(!o.signals.iter().any(|s| s == class), "{}: {class} should not see it, got {:?}", m.name, o.signals);
        }
        if m.expected.contains(&"handles") {
            assert!(!o.sites.is_empty(), "{}: the ledger must name where the leaked handles were made", m.name);
            assert!(o.sites.iter().all(|s| s.starts_with(STORE_PATH)), "{}: {:?}", m.name, o.sites);
        }
    }
    // Where the planted line itself creates the leaked handle, the report names that line.
    for name in ["offsets-options-tracked", "private-cache-per-segment"] {
        let line = format!("{STORE_PATH}:{}:", planted_line(name));
        assert!(results[name].sites.iter().any(|s| s.starts_with(&line)), "{name}: {line} not in {:?}", results[name].sites);
    }
    // Owner paths name the task and segment the leaked handles belonged to.
    for name in ["marker-failure-skips-release", "segment-never-closed", "open-failure-leaks-options"] {
        assert!(results[name].owners.iter().any(|o| o.starts_with("task 0_") && o.contains("segment")), "{name}: {:?}", results[name].owners);
    }
}
