//! The runner's own cost at soak scale: a store whose cycle does nothing, soaked with the
//! runner's soak defaults (a sample every 5th cycle, looks as the cycles double, the report
//! rewritten every 25 cycles, samples.csv appended), and the time per cycle over the first and
//! the last tenth of the run, read from the samples' clock, with the peak RSS.
//!
//! `cargo bench --bench soak_cost -- [CYCLES] [--generations on|off]` (default 100,000, on). Target (issue 23): the last
//! tenth within 2x of the first; the peak RSS printed.

use std::convert::Infallible;
use std::path::Path;
use std::time::Instant;

use leakcheck::runner::{self, Mode, RunOptions};
use leakcheck::{CycleCtx, Lifecycle};

/// Opens nothing, works at nothing, closes nothing.
struct Nothing;

impl Lifecycle for Nothing {
    type Store = ();
    type Error = Infallible;

    fn fault_points(&self) -> Vec<&'static str> {
        Vec::new()
    }

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<(), Infallible> {
        Ok(())
    }

    fn work(&mut self, _store: &mut (), _ctx: &CycleCtx<'_>) -> Result<(), Infallible> {
        Ok(())
    }

    fn close(&mut self, _store: (), _ctx: &CycleCtx<'_>) -> Result<(), Infallible> {
        Ok(())
    }
}

/// Milliseconds per cycle between the samples of the first and the last tenth of the run, from
/// samples.csv's `cycle` and `monotonic_ns` columns.
fn tenths(samples: &Path) -> Result<(f64, f64), String> {
    let text = std::fs::read_to_string(samples).map_err(|e| format!("{}: {e}", samples.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().ok_or("samples.csv is empty")?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or(format!("samples.csv has no {name} column"));
    let (c, t) = (col("cycle")?, col("monotonic_ns")?);
    let rows: Vec<(f64, f64)> = lines
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            Some((f.get(c)?.parse().ok()?, f.get(t)?.parse().ok()?))
        })
        .collect();
    let n = rows.len();
    if n < 20 {
        return Err(format!("{n} samples: too few for tenths"));
    }
    let rate = |a: (f64, f64), b: (f64, f64)| (b.1 - a.1) / 1e6 / (b.0 - a.0);
    let each: Vec<String> =
        (0..10).map(|k| format!("{:.3}", rate(rows[k * (n - 1) / 10], rows[(k + 1) * (n - 1) / 10]))).collect();
    println!("soak_cost: ms/cycle by tenth: {}", each.join(" "));
    Ok((rate(rows[0], rows[n / 10]), rate(rows[n - 1 - n / 10], rows[n - 1])))
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The runner's own cost at soak scale (`cargo bench --bench soak_cost -- [CYCLES]`).
#[derive(clap::Parser)]
#[command(name = "soak_cost")]
struct Args {
    /// Cycles to soak.
    #[arg(default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(runner::MIN_CYCLES..))]
    cycles: u64,
    /// Record allocation generations (on, the soak default) or not (off), to compare the two.
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    generations: String,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> Result<(), String> {
    let Args { cycles, generations, .. } = clap::Parser::parse();
    let report = tempfile::tempdir().map_err(|e| e.to_string())?;
    let mut opts = RunOptions::new(Mode::Soak);
    opts.cycles = Some(cycles);
    opts.report = Some(report.path().to_path_buf());
    opts.generations = generations == "on";
    let start = Instant::now();
    let outcome = runner::run(&opts, |_| Ok::<_, Infallible>(Nothing)).map_err(|e| e.to_string())?;
    let elapsed = start.elapsed().as_secs_f64();
    let (first, last) = tenths(&report.path().join("samples.csv"))?;
    let json = std::fs::metadata(report.path().join("report.json")).map_err(|e| e.to_string())?.len();
    println!("soak_cost: a no-op store, {cycles} cycles in {elapsed:.1} s, verdict {}", outcome.verdict());
    println!(
        "soak_cost: first tenth {first:.4} ms/cycle, last tenth {last:.4} ms/cycle, ratio {:.2} (target at most 2)",
        last / first
    );
    let g = &outcome.report.generations;
    let how = match (g.available, &g.mechanism, &g.notice) {
        (true, Some(m), _) => format!("recorded by {m}"),
        (true, None, _) => "recorded".to_string(),
        (false, _, Some(n)) => n.clone(),
        (false, _, None) => "not recorded".to_string(),
    };
    println!("soak_cost: {how}; {} stacks taken, {} generations listed", g.stacks_taken, g.generations.len());
    println!(
        "soak_cost: peak RSS {} KiB, report.json {json} B",
        peak_rss_kib().map_or_else(|| "unknown".to_string(), |k| k.to_string())
    );
    Ok(())
}
