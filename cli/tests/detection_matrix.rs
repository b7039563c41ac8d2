//! The detection matrix, sensitivity and specificity side by side, one test per case so that
//! nextest runs them side by side and a failure names its case:
//!
//! - `variant::NAME`: every planted variant of the reference store, in its own process, is
//!   flagged by its expected signals (and not by the ones it is invisible to), and the report
//!   names the planted line (recorded by `planted!`, not read from the source) where the signal
//!   has one; `variant::reference`, nothing planted, is not flagged under the same fault plan.
//! - `clean::STORE::seed_S`: every store of the clean catalog, unlike the reference store and not
//!   used to tune the detector, comes out `Clean` (not merely "not a leak") as `leakcheck check`
//!   runs it, for each seed.
//! - `profile::NAME`: the heap profile names where each leak only the bytes see was allocated:
//!   `leakcheck check --plant NAME --profile`, one of the top three stacks of the growth through
//!   the catalog's function, its growth proven above the byte tolerance by the samples; the
//!   reference store's stacks prove no growth above it.
//! - `catalog::*`: what the catalog itself must hold.
//!
//! A harness of its own (libtest-mimic) makes the cases from the catalogs, so a new entry is a new
//! test. Each case runs its store in a child process of `leakcheck` (process-wide signals need
//! one run per process).

use std::path::Path;
use std::process::Command;

use leak_tests::catalogs::{self, CatalogRun};
use leak_tests::clean::{CleanOutcome, CLEAN_CATALOG};
use leak_tests::mutants::{Mutant, RunAs, CATALOG, PLAN};
use leakcheck::report::RunReport;
use leakcheck::verdict::Tolerances;
use leakcheck::{Class, Signal, SignalId, Verdict};
use libtest_mimic::{Arguments, Trial};

/// Seeds of each clean store's fault plan run here. `leakcheck mutants --clean-seeds 20` runs
/// 20 (docs/figures.md quotes its table).
const CLEAN_SEEDS: [u64; 2] = [0, 1];

/// Cycles of a variant run for fixed cycles (at least the entry's `min_cycles`).
const CYCLES: u64 = 100;
/// The reference store's source files (sites are `file:line:column`, relative to the workspace).
const STORE_PATH: &str = "leak-tests/src/reference/";

/// Heap profiles: one sample per 2^12 bytes over 60 cycles, so that a leak of a few KiB per
/// cycle is sampled tens of times (the default 2^19 needs hundreds of cycles: docs/guide.md). Sampling
/// this fine moves the byte signals, so these runs are asked for stacks, not verdicts.
const PROFILE_LG: &str = "12";
const PROFILE_CYCLES: &str = "60";

const LEAKCHECK: &str = env!("CARGO_BIN_EXE_leakcheck");

fn main() {
    let args = Arguments::from_args();
    let mut trials =
        vec![Trial::test("catalog::a_leak_only_the_bytes_see_names_its_heap_stack", bytes_only_name_stacks)];
    trials.extend(CATALOG.iter().map(|m| {
        Trial::test(format!("variant::{}", m.name), move || {
            variant(m);
            Ok(())
        })
    }));
    trials.extend(CATALOG.iter().filter(|m| m.heap_stack.is_some() || m.expected.is_empty()).map(|m| {
        Trial::test(format!("profile::{}", m.name), move || {
            profile(m);
            Ok(())
        })
    }));
    for store in &CLEAN_CATALOG {
        for seed in CLEAN_SEEDS {
            trials.push(Trial::test(format!("clean::{}::seed_{seed}", store.name), move || {
                clean(store.name, seed);
                Ok(())
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit();
}

/// Whether a ledger site (`file:line:column`) is the line a planted leak recorded (`file:line`,
/// `planted!` in the store's code), so no source text is read.
fn at_planted_line(site: &str, planted_at: &str) -> bool {
    site.strip_prefix(planted_at).is_some_and(|rest| rest.starts_with(':'))
}

/// A leak of bytes per cycle the heap profile resolves in 60 cycles names its stack in the
/// catalog (the growth rule's small and rare leaks are below that resolution).
fn bytes_only_name_stacks() -> Result<(), libtest_mimic::Failed> {
    let missing: Vec<&str> = CATALOG
        .iter()
        .filter(|m| m.expected == [Class::Bytes] && m.run_as == RunAs::Fixed && m.heap_stack.is_none())
        .map(|m| m.name)
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("leaks only the bytes see, with no heap stack named in the catalog: {missing:?}").into())
    }
}

/// A variant run as `leakcheck mutants` runs it, and what it must show.
fn variant(m: &Mutant) {
    let o = catalogs::variant_in_child(Path::new(LEAKCHECK), m.name, CYCLES).unwrap_or_else(|e| panic!("{e}"));
    let row = format!("{}\n{}", CatalogRun::variants_header(), CatalogRun::variant_row(m, &o));
    if m.expected.is_empty() {
        assert!(!o.detected && o.signals.is_empty(), "the reference store must be clean:\n{row}\n{o:#?}");
        return;
    }
    assert!(o.detected, "{} not detected:\n{row}\n{o:#?}", m.name);
    for class in m.expected {
        assert!(o.signals.contains(class), "{}: expected signal {class}:\n{row}", m.name);
    }
    for class in m.invisible_to {
        assert!(!o.signals.contains(class), "{}: {class} should not see it:\n{row}", m.name);
    }
    if m.expected.contains(&Class::Handles) {
        assert!(!o.sites.is_empty(), "{}: the ledger must name where the leaked handles were made", m.name);
        assert!(o.sites.iter().all(|s| s.starts_with(STORE_PATH)), "{}: {:?}", m.name, o.sites);
    }
    // Every planted leak ran where the catalog put it.
    let at = o.planted_at.as_deref().unwrap_or_else(|| panic!("{}: the planted code did not run", m.name));
    assert!(at.starts_with(STORE_PATH), "{}: planted at {at}", m.name);
    for signal in signals_that_must_call(m.name) {
        assert!(o.signal_names.contains(&signal.to_string()), "{}: {signal} did not call it:\n{row}\n{o:#?}", m.name);
    }
    // Where the planted line itself creates the leaked handle, the report names that line.
    if ["offsets-options-tracked", "private-cache-per-segment", "shared-cache-declared-per-open"].contains(&m.name) {
        assert!(o.sites.iter().any(|s| at_planted_line(s, at)), "{}: {at} not in {:?}", m.name, o.sites);
    }
    // The comparator's copies are made in the store's code called from the memtable's insert:
    // the growth is the store's, at its function, no consumer's.
    if m.name == "comparator-keeps-keys" {
        let retained = o.retained.as_ref().expect("the record's verdict");
        assert!(
            retained.sites.iter().any(|s| s.live.as_ref().is_some_and(|l| l.leaks())
                && s.consumer.is_none()
                && s.frames.iter().any(|f| f.contains("keep_key"))
                && s.frames.iter().any(|f| f.contains("rocksdb::MemTable::"))),
            "{}: no leaking site of the store's own under the memtable's insert:\n{row}\n{:#?}",
            m.name,
            retained.sites
        );
    }
    // A transaction forgotten on an error path is a live Transaction, at the line that began it.
    if m.name == "transaction-leak-on-error" {
        assert!(o.sites.iter().any(|s| s.starts_with(STORE_PATH)), "{:?}", o.sites);
    }
    // Owner paths name the task and segment the leaked handles belonged to.
    if ["marker-failure-skips-release", "segment-never-closed", "open-failure-leaks-options"].contains(&m.name) {
        assert!(
            o.owners.iter().any(|w| w.starts_with("task 0_") && w.contains("segment")),
            "{}: {:?}",
            m.name,
            o.owners
        );
    }
}

/// The signals that must call a variant by name, beyond its classes.
fn signals_that_must_call(name: &str) -> Vec<SignalId> {
    match name {
        // A leak only on an error path is attributed to its fault point, per firing.
        "marker-failure-leaks-bytes" | "marker-failure-leaks-sometimes" => {
            vec![SignalId::member(Signal::BytesPerFiring, "close.marker")]
        }
        // A 32 KiB burst in 1% of cycles: losses repeating at a stack that gives nothing back,
        // whose live bytes the record sees grow (the counter's rule saw it before the record's
        // growth did).
        "snapshot-bursts" => vec![Signal::RetainedBytes.into()],
        "fd-outside-dir" => vec![Signal::OpenFdsOutsideDir.into()],
        // The leaks of every cycle, however small, and those a counter of the process's bytes
        // misjudges, by the allocations' generations at the line that made them (the doubling
        // container: named on its schedule, the run undecided).
        "steady-bytes-16"
        | "steady-bytes-4"
        | "list-cf-failure"
        | "leak-beside-give-back"
        | "leak-begins-late"
        | "doubling-container"
        | "comparator-keeps-keys" => vec![Signal::RetainedBytes.into()],
        "transaction-leak-on-error" => vec![SignalId::member(Signal::LiveHandlesOf, "Transaction")],
        _ => Vec::new(),
    }
}

/// A clean store with one seed, as `leakcheck check` runs it: `Clean`, with its plan fired.
fn clean(store: &str, seed: u64) {
    let o: CleanOutcome =
        catalogs::clean_store_in_child(Path::new(LEAKCHECK), store, seed).unwrap_or_else(|e| panic!("{e}"));
    assert!(o.faulted_cycles > 0, "{store} seed {seed}: the fault plan never fired");
    assert_eq!(o.verdict, Verdict::Clean, "{store} seed {seed} is a correct store: {o:#?}");
}

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

/// The top stacks and functions of a profiled run's growth, as a table for a failure's message.
fn growth_table(r: &RunReport) -> String {
    let mut out = format!(
        "{:>12} {:>12} {:>12} {:>7}  top stacks of the heap's growth (2^{PROFILE_LG} sampling, {PROFILE_CYCLES} cycles)\n",
        "bytes/cycle", "cache fill", "unexpl. >=", "samples"
    );
    for g in r.heap_growth.iter().take(3) {
        out.push_str(&format!(
            "{:>12.0} {:>12.0} {:>12.0} {:>7}  {}\n",
            g.bytes_per_cycle,
            g.explained_bytes_per_cycle,
            g.unexplained_lower_bytes_per_cycle(),
            g.objects,
            leakcheck::workspace::stacks::headline(&g.frames, 60)
        ));
    }
    for f in r.heap_growth_by_function.iter().take(3) {
        out.push_str(&format!(
            "{:>12.0} {:>12.0} {:>12.0} {:>7}  {} ({} stacks)\n",
            f.bytes_per_cycle,
            f.explained_bytes_per_cycle,
            f.unexplained_lower_bytes_per_cycle,
            f.objects,
            f.function,
            f.stacks
        ));
    }
    out
}

/// Where only the bytes see a leak, the heap profile names it: a top-three stack of the growth
/// through the catalog's function, proven above the byte tolerance by its samples, and that
/// function the first of the growth summed over its stacks; the reference store proves no stack
/// or function above it.
fn profile(m: &Mutant) {
    let r = run_profiled(m);
    let tolerance = Tolerances::default().allocated_bytes_per_cycle;
    let table = growth_table(&r);
    match m.heap_stack {
        Some(function) => {
            let named = r.heap_stack_naming(function, 3);
            let named = named.unwrap_or_else(|| panic!("{}: no top-3 stack names {function}:\n{table}", m.name));
            assert!(
                named.unexplained_lower_bytes_per_cycle() > tolerance,
                "{}: {function} not proven above {tolerance} B/cycle:\n{table}",
                m.name
            );
            let first = r.heap_function_naming(function, 1);
            let first = first.unwrap_or_else(|| panic!("{}: {function} is not the first function:\n{table}", m.name));
            assert!(
                first.unexplained_lower_bytes_per_cycle > tolerance,
                "{}: {function} not proven above {tolerance} B/cycle:\n{table}",
                m.name
            );
        }
        None => {
            let stacks = r.heap_growth.iter().filter(|g| g.unexplained_lower_bytes_per_cycle() > tolerance).count();
            let functions =
                r.heap_growth_by_function.iter().filter(|f| f.unexplained_lower_bytes_per_cycle > tolerance).count();
            assert!(
                stacks == 0 && functions == 0,
                "the reference store's heap grew above {tolerance} B/cycle ({stacks} stacks, {functions} functions):\n{table}"
            );
        }
    }
}
