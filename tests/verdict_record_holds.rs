//! Growth decides: a working set rebuilt every cycle, one larger each time (copy-on-write: its one
//! block always the youngest cycle's, so no judged cycle keeps anything), is live memory that
//! keeps growing, and a leak: the counter's leak stands whatever the record held where it would
//! be, and the record's own total calls it too. The same working set grown to a bound and rebuilt
//! at it is clean. Process-wide measurement (jemalloc, the generations): one test in this file.
// Rust's allocations reach jemalloc through its `malloc` override, which comes with rocksdb's
// `jemalloc` feature or with `unprefixed-malloc`.
#![cfg(any(feature = "rocksdb", feature = "unprefixed-malloc"))]

use leakcheck::{CycleCtx, Ledger, Lifecycle, Signal, Verdict};

/// Bytes a cycle allocates per cycle number: the working set of cycle `c` is `c * GROWTH` bytes.
const GROWTH: usize = 512;

/// A store with no native parts: each cycle builds a working set as large as the cycle number
/// times [`GROWTH`] (up to `bound` cycles' worth, when bounded), kept until the next cycle replaces
/// it.
struct Growing {
    bound: Option<usize>,
    working: Vec<u8>,
}

impl Lifecycle for Growing {
    type Store = ();
    type Error = String;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn work(&mut self, _store: &mut (), ctx: &CycleCtx<'_>) -> Result<(), String> {
        let len = (ctx.cycle as usize + 1).min(self.bound.unwrap_or(usize::MAX)) * GROWTH;
        // The previous cycle's working set is given back as this one's is made.
        self.working = std::hint::black_box(vec![1u8; len]);
        Ok(())
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn let_go(&mut self) {
        self.working = Vec::new();
    }
}

fn check(bound: Option<usize>) -> leakcheck::runner::RunOutcome {
    let ledger = Ledger::new();
    let mut store = Growing { bound, working: Vec::new() };
    // As `leakcheck check` runs: 200 cycles, more while a signal is undecided.
    leakcheck::check(&mut store, &ledger).cycles(200).run().expect("the check runs")
}

#[test]
fn a_working_set_rebuilt_bigger_every_cycle_is_a_leak_and_one_rebuilt_at_its_bound_is_clean() {
    let growing = check(None);
    let counter = growing.report.signal(Signal::UnexplainedBytes).expect("unexplained_bytes");
    assert_eq!(counter.verdict, Verdict::Leak, "the counter grows with the working set: {}", growing.table());
    assert!(!counter.informational, "a measured growth is never set aside: {}", growing.table());
    let retained = growing.report.signal(Signal::RetainedBytes).expect("retained_bytes");
    let total = retained.retained.as_ref().and_then(|r| r.total).expect("the record's total judged");
    // Its one block replaced every cycle looks, to the total's spread, like a 100 KB block that
    // may come and go: growing past it takes longer than 200 cycles, and until then it is open.
    assert!((total.leaks() || total.open()) && total.bytes_per_cycle > 256.0, "{total:?}");
    assert_ne!(retained.verdict, Verdict::Clean, "{}", growing.table());
    assert_eq!(growing.verdict(), Verdict::Leak, "{}", growing.table());

    let bounded = check(Some(40));
    assert_eq!(bounded.verdict(), Verdict::Clean, "{}", bounded.table());
}
