//! The detection matrix, sensitivity and specificity side by side: every planted variant of the
//! reference store, each in its own process, is flagged by its expected signals (and not by the
//! ones it is invisible to), the report names the planted line (recorded by `planted!`, not read
//! from the source) where the signal has one, and the
//! reference store is not flagged under the same fault plan; every store of the clean catalog,
//! unlike the reference store and not used to tune the detector, comes out `Clean` (not merely
//! "not a leak") as `leakcheck check` runs it, for each seed. And the heap profile names where
//! each leak only the bytes see was allocated: `leakcheck check --plant NAME --profile`, one of
//! the top three stacks of the growth through the catalog's function, its growth proven above the
//! byte tolerance by the samples; the reference store's stacks prove no growth above it.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use leak_tests::catalogs::{self, CatalogPlan, CatalogRun};
use leak_tests::clean::{CleanOutcome, CLEAN_CATALOG};
use leak_tests::mutants::{Mutant, MutantOutcome, RunAs, CATALOG, PLAN};
use leakcheck::report::RunReport;
use leakcheck::verdict::Tolerances;
use leakcheck::{Class, Signal, Verdict};

/// Seeds of each clean store's fault plan run here. `leakcheck mutants --clean-seeds 20` runs
/// 20 (docs/figures.md quotes its table).
const CLEAN_SEEDS: [u64; 2] = [0, 1];

const CYCLES: u64 = 100;
/// The reference store's source files (sites are `file:line:column`, relative to the workspace).
const STORE_PATH: &str = "leak-tests/src/reference/";

/// Heap profiles: one sample per 2^12 bytes over 60 cycles, so that a leak of a few KiB per
/// cycle is sampled tens of times (the default 2^19 needs hundreds of cycles: docs/guide.md). Sampling
/// this fine moves the byte signals, so these runs are asked for stacks, not verdicts.
const PROFILE_LG: &str = "12";
const PROFILE_CYCLES: &str = "60";

/// Whether a ledger site (`file:line:column`) is the line a planted leak recorded (`file:line`,
/// `planted!` in the store's code), so no source text is read.
fn at_planted_line(site: &str, planted_at: &str) -> bool {
    site.strip_prefix(planted_at).is_some_and(|rest| rest.starts_with(':'))
}

const LEAKCHECK: &str = env!("CARGO_BIN_EXE_leakcheck");

/// `leakcheck check --plant NAME --profile` (no `--plant` for the reference store), its report.
fn run_profiled(m: &Mutant) -> RunReport {
    let mut args = vec![
        "check",
        "--faults",
        PLAN,
        "--cycles",
        PROFILE_CYCLES,
        "--max-cycles",
        PROFILE_CYCLES,
        "--profile",
        PROFILE_LG,
        "--json",
    ];
    if m.name != "reference" {
        args.extend(["--plant", m.name]);
    }
    let out = Command::new(LEAKCHECK).args(&args).output().expect("spawn leakcheck");
    assert!(
        matches!(out.status.code(), Some(0 | 1 | 3)),
        "{}: {:?}: {}",
        m.name,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: {e}: {}", m.name, String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn every_variant_is_caught_and_every_clean_store_is_clean() {
    // Both catalogs as `leakcheck mutants` runs them, two children at a time; then the profiled
    // runs.
    let plan = CatalogPlan { cycles: CYCLES, clean_seeds: CLEAN_SEEDS.to_vec(), workers: 2 };
    let run = catalogs::run_catalogs(Path::new(LEAKCHECK), &plan, |_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    let profiled: Vec<&Mutant> = CATALOG.iter().filter(|m| m.heap_stack.is_some() || m.expected.is_empty()).collect();
    let profiles: BTreeMap<&str, RunReport> =
        leakcheck::workspace::in_parallel(profiled, 2, |m| (m.name, run_profiled(m))).into_iter().collect();
    let results: BTreeMap<&str, &MutantOutcome> = CATALOG.iter().map(|m| m.name).zip(&run.variants).collect();
    let clean = &run.clean;

    println!("{}", CatalogRun::variants_header());
    for (m, o) in CATALOG.iter().zip(&run.variants) {
        println!("{}", CatalogRun::variant_row(m, o));
    }
    print!("\n{}", run.clean_runs_table());
    let tolerance = Tolerances::default().allocated_bytes_per_cycle;
    println!(
        "\n{:<32} {:>12} {:>12} {:>12} {:>7}  top stacks of the heap's growth (2^{PROFILE_LG} sampling, {PROFILE_CYCLES} cycles)",
        "variant", "bytes/cycle", "cache fill", "unexpl. >=", "samples"
    );
    for (name, r) in &profiles {
        for g in r.heap_growth.iter().take(3) {
            let stack = leakcheck::workspace::stacks::headline(&g.frames, 60);
            println!(
                "{:<32} {:>12.0} {:>12.0} {:>12.0} {:>7}  {stack}",
                name,
                g.bytes_per_cycle,
                g.explained_bytes_per_cycle,
                g.unexplained_lower_bytes_per_cycle(),
                g.objects
            );
        }
    }
    println!(
        "\n{:<32} {:>12} {:>12} {:>12} {:>7} {:>6}  top functions of the heap's growth",
        "variant", "bytes/cycle", "cache fill", "unexpl. >=", "samples", "stacks"
    );
    for (name, r) in &profiles {
        for f in r.heap_growth_by_function.iter().take(3) {
            println!(
                "{:<32} {:>12.0} {:>12.0} {:>12.0} {:>7} {:>6}  {}",
                name,
                f.bytes_per_cycle,
                f.explained_bytes_per_cycle,
                f.unexplained_lower_bytes_per_cycle,
                f.objects,
                f.stacks,
                f.function
            );
        }
    }
    println!("\n{}", run.summary());

    // The bar is "clean in at least 19 of 20 runs" per store (`leakcheck mutants --clean-seeds 20`
    // measures it). Here: every store clean in every seed but at most one run in all, and never a
    // store unclean in both of its seeds; a detector that lost specificity fails either way.
    for o in clean {
        assert!(o.faulted_cycles > 0, "{} seed {}: the fault plan never fired", o.store, o.seed);
    }
    let unclean: Vec<&CleanOutcome> = clean.iter().filter(|o| o.verdict != Verdict::Clean).collect();
    assert!(unclean.len() <= 1, "correct stores not called clean: {unclean:#?}");
    for store in &CLEAN_CATALOG {
        assert!(
            clean.iter().any(|o| o.store == store.name && o.verdict == Verdict::Clean),
            "{} is a correct store and was clean in none of its seeds",
            store.name
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
            assert!(o.signals.contains(class), "{}: expected signal {class}, got {:?}", m.name, o.signals);
        }
        for class in m.invisible_to {
            assert!(!o.signals.contains(class), "{}: {class} should not see it, got {:?}", m.name, o.signals);
        }
        if m.expected.contains(&Class::Handles) {
            assert!(!o.sites.is_empty(), "{}: the ledger must name where the leaked handles were made", m.name);
            assert!(o.sites.iter().all(|s| s.starts_with(STORE_PATH)), "{}: {:?}", m.name, o.sites);
        }
    }
    // A leak only on an error path is attributed to its fault point, per firing.
    let marker = &results["marker-failure-leaks-bytes"];
    assert!(
        marker.signal_names.contains(&leakcheck::SignalId::member(Signal::BytesPerFiring, "close.marker").to_string()),
        "the 1 KiB per failed marker write must be attributed to close.marker: {marker:?}"
    );
    // The growth rule's leaks, each by the signal that must see it.
    let named = |variant: &str, signal: leakcheck::SignalId| {
        let o = &results[variant];
        assert!(o.signal_names.contains(&signal.to_string()), "{variant}: {signal} did not call it: {o:?}");
    };
    // A burst in 1% of cycles is too rare for the record's power in a check's cycles (it rules
    // out 1 in 9 or more often): the counter's growth rule sees its bytes.
    named("snapshot-bursts", Signal::UnexplainedBytes.into());
    named("marker-failure-leaks-sometimes", leakcheck::SignalId::member(Signal::BytesPerFiring, "close.marker"));
    named("fd-outside-dir", Signal::OpenFdsOutsideDir.into());
    // The leaks of every cycle, however small, and those a counter of the process's bytes
    // misjudges, by the allocations' generations at the line that made them (the doubling
    // container: named on its schedule, the run undecided).
    for variant in [
        "steady-bytes-16",
        "steady-bytes-4",
        "list-cf-failure",
        "leak-beside-give-back",
        "leak-begins-late",
        "doubling-container",
    ] {
        named(variant, Signal::RetainedBytes.into());
    }
    // Where the planted line itself creates the leaked handle, the report names that line.
    for name in ["offsets-options-tracked", "private-cache-per-segment", "shared-cache-declared-per-open"] {
        let o = &results[name];
        let at = o.planted_at.as_deref().unwrap_or_else(|| panic!("{name}: the planted code did not run"));
        assert!(at.starts_with(STORE_PATH), "{name}: planted at {at}");
        assert!(o.sites.iter().any(|s| at_planted_line(s, at)), "{name}: {at} not in {:?}", o.sites);
    }
    // A transaction forgotten on an error path is a live Transaction, at the line that began it.
    let txn = &results["transaction-leak-on-error"];
    let live = leakcheck::SignalId::member(Signal::LiveHandlesOf, "Transaction").to_string();
    assert!(txn.signal_names.contains(&live), "{live} did not call it: {txn:?}");
    assert!(txn.sites.iter().any(|s| s.starts_with(STORE_PATH)), "{:?}", txn.sites);
    // Every planted leak ran where the catalog put it.
    for m in CATALOG.iter().filter(|m| !m.expected.is_empty()) {
        assert!(
            results[m.name].planted_at.as_deref().is_some_and(|a| a.starts_with(STORE_PATH)),
            "{}: {:?}",
            m.name,
            results[m.name].planted_at
        );
    }
    // Owner paths name the task and segment the leaked handles belonged to.
    for name in ["marker-failure-skips-release", "segment-never-closed", "open-failure-leaks-options"] {
        assert!(
            results[name].owners.iter().any(|o| o.starts_with("task 0_") && o.contains("segment")),
            "{name}: {:?}",
            results[name].owners
        );
    }
    // Where only the bytes see a leak, the heap profile names it: a top-three stack of the growth
    // through the catalog's function, proven above the byte tolerance by its samples; and the
    // reference store proves no stack above it.
    for m in &CATALOG {
        // A leak of bytes per cycle the heap profile resolves in 60 cycles names its stack; the
        // growth rule's small and rare leaks are below that resolution.
        if m.expected == [Class::Bytes] && m.run_as == RunAs::Fixed {
            assert!(
                m.heap_stack.is_some(),
                "{}: a leak only the bytes see must name its heap stack in the catalog",
                m.name
            );
        }
        let Some(r) = profiles.get(m.name) else { continue };
        match m.heap_stack {
            Some(function) => {
                let named = r.heap_stack_naming(function, 3);
                let named = named
                    .unwrap_or_else(|| panic!("{}: no top-3 stack names {function}: {:#?}", m.name, r.heap_growth));
                assert!(
                    named.unexplained_lower_bytes_per_cycle() > tolerance,
                    "{}: {function} not proven above {tolerance} B/cycle: {named:?}",
                    m.name
                );
                // Summed over its stacks, the planting function is the first of the growth.
                let first = r.heap_function_naming(function, 1);
                let first = first.unwrap_or_else(|| {
                    panic!("{}: {function} is not the first function: {:#?}", m.name, r.heap_growth_by_function)
                });
                assert!(
                    first.unexplained_lower_bytes_per_cycle > tolerance,
                    "{}: {function} not proven above {tolerance} B/cycle: {first:?}",
                    m.name
                );
            }
            None => {
                let above: Vec<_> =
                    r.heap_growth.iter().filter(|g| g.unexplained_lower_bytes_per_cycle() > tolerance).collect();
                assert!(above.is_empty(), "the reference store's heap grew above {tolerance} B/cycle: {above:#?}");
                let above: Vec<_> = r
                    .heap_growth_by_function
                    .iter()
                    .filter(|f| f.unexplained_lower_bytes_per_cycle > tolerance)
                    .collect();
                assert!(
                    above.is_empty(),
                    "a function of the reference store grew above {tolerance} B/cycle: {above:#?}"
                );
            }
        }
    }
}
