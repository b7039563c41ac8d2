//! Suppressions, end to end: a store that forgets a handle and a 48-byte block every cycle
//! fails a check; with both leaks suppressed (by handle kind and site, and by the allocating
//! function) it is clean and the report lists each with its size per cycle, and a suppression
//! that matched nothing as unused; a bound the leak exceeds suppresses nothing; a malformed file
//! stops the run before it starts, naming the line. Process-wide measurement (jemalloc, the
//! generations): one test in this file, its checks one after another.
// Rust's allocations reach jemalloc through its `malloc` override, which comes with rocksdb's
// `jemalloc` feature or with `unprefixed-malloc`.
#![cfg(any(feature = "rocksdb", feature = "unprefixed-malloc"))]

use std::path::Path;

use leakcheck::runner::{RunError, RunOutcome};
use leakcheck::suppress::SuppressionError;
use leakcheck::{CycleCtx, HandleKind, Ledger, Lifecycle, Signal, Verdict};

/// The bytes the store forgets each cycle.
const BLOCK: usize = 48;

/// Forgets a handle of a kind of its own and a [`BLOCK`]-byte block every cycle.
struct Forgetful;

/// Where the store forgets its block: the function a suppression names.
#[inline(never)]
fn forget_a_block_of_the_store() {
    std::mem::forget(std::hint::black_box(vec![7u8; BLOCK]));
}

/// The line that registers the forgotten handle.
const HANDLE_LINE: u32 = line!() + 3;
/// Registers a handle and forgets it.
fn forget_a_handle(ledger: &Ledger) {
    std::mem::forget(ledger.register(HandleKind::Other("socket")));
}

impl Lifecycle for Forgetful {
    type Store = ();
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<(), String> {
        forget_a_handle(ctx.ledger);
        Ok(())
    }

    fn work(&mut self, _store: &mut (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        forget_a_block_of_the_store();
        Ok(())
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }
}

fn check(suppressions: Option<&Path>) -> Result<RunOutcome, RunError> {
    let ledger = Ledger::new();
    let mut store = Forgetful;
    // As `leakcheck check` runs: 200 cycles, more while a signal is undecided (the process's
    // anonymous memory outside jemalloc needs more than 60 cycles of a store this fast).
    let mut c = leakcheck::check(&mut store, &ledger).cycles(200);
    if let Some(file) = suppressions {
        c = c.suppressions(file);
    }
    c.run()
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write the suppression file");
    path
}

#[test]
fn suppressed_leaks_are_listed_with_their_size_and_only_unsuppressed_ones_fail() {
    let dir = tempfile::tempdir().expect("tempdir");

    // Unsuppressed: the handle is the first finding, at its line.
    let bare = check(None).expect("runs");
    assert_eq!(bare.verdict(), Verdict::Leak, "{bare}");
    let first = &bare.report.findings()[0];
    assert_eq!(first.signal, "live_handles.socket", "{bare}");
    let place = first.place.as_ref().expect("the creating line");
    assert_eq!((place.file.as_str(), place.line), ("tests/suppressions.rs", HANDLE_LINE), "{bare}");

    // Both suppressed, and a third that matches nothing.
    let file = write(
        dir.path(),
        "leakcheck.toml",
        &format!(
            "[[suppress]]\nhandle = \"socket\"\nsite = \"tests/suppressions.rs:{HANDLE_LINE}\"\nreason = \"kept by the OS \
             until exit\"\nmax_handles_per_cycle = 1\n\n[[suppress]]\nfunction = \"forget_a_block_of_the_store\"\nreason = \
             \"upstream bug 1\"\n\n[[suppress]]\nfunction = \"a_function_nothing_calls\"\nreason = \"fixed long ago\"\n"
        ),
    );
    let quiet = check(Some(&file)).expect("runs");
    assert_eq!(quiet.verdict(), Verdict::Clean, "{quiet}");
    let uses = &quiet.report.suppressions;
    assert_eq!(uses.len(), 3);
    let (handle, block, stale) = (&uses[0], &uses[1], &uses[2]);
    assert!(handle.applies() && (handle.per_cycle - 1.0).abs() < 0.05, "one handle per cycle: {handle:?}");
    assert!(block.applies(), "{block:?}");
    // Every judged cycle's block is held at the stack, all but the first (allocated before its
    // size was watched, without a stack): about 48 B per cycle.
    assert!((BLOCK as f64 * 0.9..=BLOCK as f64).contains(&block.per_cycle), "{block:?}");
    assert!(stale.unused() && !stale.applies(), "{stale:?}");
    assert_eq!(stale.suppression.origin, format!("{}:11", file.display()));
    let retained = quiet.report.signal(Signal::RetainedBytes).expect("retained_bytes");
    assert_eq!(retained.verdict, Verdict::Clean, "{quiet}");
    assert!(
        retained.retained.as_ref().is_some_and(|r| r.sites.iter().any(|s| s.suppressed.is_some())),
        "the suppressed stack is listed: {quiet}"
    );
    assert!(quiet.report.findings().iter().all(|f| f.verdict != Verdict::Leak), "{quiet}");

    // A bound the bytes exceed: that suppression suppresses nothing, the leak is judged.
    let file = write(
        dir.path(),
        "tight.toml",
        "[[suppress]]\nhandle = \"socket\"\nreason = \"r\"\n\n[[suppress]]\nfunction = \
         \"forget_a_block_of_the_store\"\nreason = \"r\"\nmax_bytes_per_cycle = 8\n",
    );
    let tight = check(Some(&file)).expect("runs");
    assert_eq!(tight.verdict(), Verdict::Leak, "{tight}");
    assert!(tight.report.suppressions[1].exceeded, "{:?}", tight.report.suppressions);
    assert!(tight.report.findings().iter().any(|f| f.signal == "retained_bytes" && f.verdict == Verdict::Leak));

    // A malformed file: no run, the line named.
    let file = write(dir.path(), "bad.toml", "[[suppress]]\nfunction = \"f\"\n\n[[suppress]]\nhandle = \"DB\"\n");
    match check(Some(&file)) {
        Err(RunError::Suppressions(SuppressionError::Invalid { line, problem, .. })) => {
            assert_eq!(line, 1, "{problem}");
            assert!(problem.contains("reason"), "{problem}");
        }
        other => panic!("a malformed file must stop the run: {:?}", other.map(|o| o.verdict())),
    }
}
