//! How many cycles a leak needs before `--profile` names it, at the default sample rate.
//!
//! jemalloc samples one allocation per `2^N` bytes on average (N = 19 by default: 512 KiB), so a
//! small leak is sampled rarely: 256 B per cycle is seen about once per 2,000 cycles. This bench
//! plants a C allocation of each size per cycle into the fresh-DB loop and runs `check` with
//! `.profile(N)` at growing cycle counts, several runs each, and prints in how many runs the
//! planted stack was among the top three, its growth proven above the byte tolerance (its 95%
//! lower bound, the property the detection matrix asserts). docs/guide.md quotes its table.
//!
//! `cargo bench -p leak-tests --bench profile_sampling [-- LG [FROM]]`: LG defaults to 19;
//! FROM skips the rungs of the cycle ladder below it.

use std::time::Instant;

use leak_tests::fresh::FreshDbLoop;
use leak_tests::planted::PlantedMalloc;
use leakcheck::verdict::Tolerances;
use leakcheck::Ledger;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

leakcheck::heap_profiling_ready!();

const SIZES: [usize; 2] = [256, 4096];
const LADDER: [u64; 7] = [250, 500, 1000, 2000, 4000, 8000, 16000];
const RUNS: usize = 3;

/// How many cycles a leak needs before `--profile` names it
/// (`cargo bench -p leak-tests --bench profile_sampling -- [LG [FROM]]`).
#[derive(clap::Parser)]
#[command(name = "profile_sampling")]
struct Args {
    /// One sample per 2^LG bytes.
    #[arg(default_value_t = 19, value_parser = clap::value_parser!(u32).range(0..=40))]
    lg: u32,
    /// Skip the rungs of the cycle ladder below this many cycles.
    #[arg(default_value_t = 0)]
    from: u64,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let Args { lg, from, .. } = clap::Parser::parse();
    let tolerance = Tolerances::default().allocated_bytes_per_cycle;
    println!("planted C allocation per cycle, fresh-DB loop, one sample per 2^{lg} bytes, {RUNS} runs per row");
    println!(
        "{:>8} {:>7} {:>7} {:>14} {:>14} {:>9}",
        "leak", "cycles", "named", "est. B/cycle", "lower B/cycle", "s/run"
    );
    for size in SIZES {
        for cycles in LADDER.into_iter().filter(|c| *c >= from) {
            let mut named = 0;
            let (mut est, mut lower) = (Vec::new(), Vec::new());
            let start = Instant::now();
            for _ in 0..RUNS {
                let (hit, e, l) = run(size, cycles, lg, tolerance);
                named += usize::from(hit);
                est.push(e);
                lower.push(l);
            }
            let fmt = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join("/");
            println!(
                "{:>8} {:>7} {:>5}/{RUNS} {:>14} {:>14} {:>9.1}",
                format!("{size} B"),
                cycles,
                named,
                fmt(&est),
                fmt(&lower),
                start.elapsed().as_secs_f64() / RUNS as f64
            );
            if named == RUNS {
                break; // the smallest count that named it every time
            }
        }
    }
}

/// One profiled check: whether a top-three stack names the planting function with a lower bound
/// above the tolerance, and that stack's estimate and bound (0 when no stack names it).
fn run(size: usize, cycles: u64, lg: u32, tolerance: f64) -> (bool, f64, f64) {
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("profile_sampling: temporary directory: {e}");
            std::process::exit(2);
        }
    };
    let ledger = Ledger::new();
    let mut store = PlantedMalloc::new(FreshDbLoop::new(dir.path(), 10), size, cycles);
    let outcome = match leakcheck::check(&mut store, &ledger)
        .cycles(cycles)
        .max_cycles(cycles)
        .faults("none")
        .profile(lg)
        .run()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("profile_sampling: {e}");
            std::process::exit(2);
        }
    };
    let stack = outcome.report.heap_stack_naming("PlantedMalloc", 3);
    match stack {
        Some(g) => (
            g.unexplained_lower_bytes_per_cycle() > tolerance,
            g.unexplained_bytes_per_cycle(),
            g.unexplained_lower_bytes_per_cycle(),
        ),
        None => (false, 0.0, 0.0),
    }
}
