//! `check`, `soak` and `compare`.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use leakcheck::fault::{FaultPlan, FAULTS_ENV};
use leakcheck::harness::reference::{ReferenceConfig, ReferenceStore, FAULT_POINTS};
use leakcheck::report::{self, CompareLimits, CycleSummary, RunReport, RunSettings};
use leakcheck::verdict::analyze;
use leakcheck::harness::Continuation;
use leakcheck::{Depth, Harness, HarnessConfig, Ledger, Verdict};

use crate::{verdict_code, RunArgs};

/// The default plan of `check` and `soak`: every close path is reached (the marker write and the
/// flush failing, with errors and with a panic), plus failing writes, scans, opens and malformed
/// offset entries.
pub const DEFAULT_PLAN: &str = leakcheck::harness::mutants::DEFAULT_CHECK_PLAN;

const DEFAULT_CHECK_CYCLES: u64 = 200;

fn plan_of(args: &RunArgs) -> Result<FaultPlan> {
    let text = match (&args.faults, std::env::var(FAULTS_ENV)) {
        (Some(t), _) => t.clone(),
        (None, Ok(t)) => t,
        (None, Err(_)) => DEFAULT_PLAN.to_string(),
    };
    let plan = if text.trim() == "none" { FaultPlan::none() } else { FaultPlan::parse(&text)? };
    plan.validate(&FAULT_POINTS)?;
    Ok(plan)
}

/// Renders the SVG to PNG with the system's fonts (text is left out where none are installed).
fn png_of(svg: &str) -> Result<Vec<u8>> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).context("plot SVG")?;
    let size = tree.size().to_int_size();
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).context("plot size")?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().context("PNG encoding")
}

fn write_report(dir: &Path, r: &RunReport, samples: &[leakcheck::verdict::CycleSample], png: bool) -> Result<()> {
    report::write_dir(dir, r, samples)?;
    for plot in report::plot_svgs(r, samples) {
        report::write_atomic(&dir.join(&plot.file_name), plot.svg.as_bytes())?;
        if png {
            let png_name = plot.file_name.replace(".svg", ".png");
            report::write_atomic(&dir.join(png_name), &png_of(&plot.svg)?)?;
        }
    }
    Ok(())
}

struct Progress {
    bar: Option<ProgressBar>,
    last_line: Instant,
    every: Duration,
}

impl Progress {
    fn new(total: Option<u64>, quiet: bool) -> Self {
        let bar = (!quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).then(|| {
            let bar = match total {
                Some(n) => ProgressBar::new(n),
                None => ProgressBar::new_spinner(),
            };
            let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cycles  ETA {eta}  {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        Progress { bar, last_line: Instant::now(), every: Duration::from_secs(10) }
    }

    fn tick(&mut self, cycle: u64, line: impl FnOnce() -> String) {
        if let Some(bar) = &self.bar {
            if bar.length().is_some_and(|len| cycle > len) {
                // `check` going on past --cycles while the verdict is inconclusive.
                bar.set_length(cycle);
            }
            bar.set_position(cycle);
            bar.set_message(line());
        } else if self.last_line.elapsed() >= self.every {
            self.last_line = Instant::now();
            eprintln!("cycle {cycle}: {}", line());
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

fn human_bytes(v: f64) -> String {
    let a = v.abs();
    if a >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", v / (1024.0 * 1024.0))
    } else if a >= 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else {
        format!("{v:.0} B")
    }
}

/// `check` and `soak`.
pub fn run(command: &str, args: RunArgs) -> Result<ExitCode> {
    let soak = command == "soak";
    // Everything that can be wrong with the input is found before any file is made.
    let depth = match &args.tracking {
        Some(t) => t.parse::<Depth>().context("--tracking")?,
        None => Depth::from_env()?.unwrap_or_default(),
    };
    let plan = plan_of(&args)?;
    let variant = match &args.plant {
        None => None,
        Some(name) => Some(
            leakcheck::harness::mutants::mutant(name)
                .ok_or_else(|| {
                    let names: Vec<&str> = leakcheck::harness::mutants::CATALOG.iter().map(|m| m.name).collect();
                    anyhow::anyhow!("--plant {name}: unknown leak; known: {}", names.join(", "))
                })?
                .variant,
        ),
    };
    if soak && args.report.is_none() {
        bail!("soak needs --report DIR (where the report is kept up to date)");
    }
    if soak && args.duration.is_none() && args.cycles.is_none() {
        bail!("soak needs --duration or --cycles");
    }
    let cycles = match (args.cycles, args.duration) {
        (Some(c), _) => c,
        (None, Some(_)) => u64::MAX,
        (None, None) => DEFAULT_CHECK_CYCLES,
    };
    if cycles < 30 {
        bail!("--cycles {cycles}: at least 30 cycles are needed for a verdict on memory");
    }
    // How far `check` may go on while the verdict is inconclusive: the verdict says how many more
    // cycles would decide, and the main job should give a verdict, not a shrug.
    let max_cycles = match (args.max_cycles, soak || args.duration.is_some()) {
        (Some(_), true) => bail!("--max-cycles applies to check with --cycles, not to soak or --duration"),
        (None, true) => None,
        (Some(m), false) if m < cycles => bail!("--max-cycles {m}: less than --cycles {cycles}"),
        (Some(m), false) => Some(m),
        (None, false) => Some(cycles.saturating_mul(4)),
    };
    if let Some(dir) = &args.report {
        report::prepare_dir(dir).with_context(|| format!("--report {}", dir.display()))?;
    }
    let scratch;
    let data = match &args.dir {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("--dir {}", d.display()))?;
            d.join("leakcheck-store")
        }
        None => {
            scratch = tempfile::Builder::new().prefix("leakcheck-").tempdir().context("temporary directory")?;
            scratch.path().join("store")
        }
    };

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, stop.clone()).context("signal handler")?;
    }

    let ledger = Ledger::with_depth(depth);
    let mut config = ReferenceConfig::new(&data);
    config.tasks = args.tasks;
    config.segments = args.segments;
    if let Some(v) = variant {
        config.variant = v;
    }
    let mut store = ReferenceStore::new(config, &ledger).context("reference store")?;
    let settings = RunSettings {
        command: command.to_string(),
        tasks: args.tasks,
        segments: args.segments,
        cycles,
        max_cycles,
        duration_seconds: args.duration.map(|d| d.as_secs_f64()),
        plan: plan.to_string(),
        seed: args.seed,
        tracking: depth.name().to_string(),
        sample_every: args.sample_every.unwrap_or(if soak { 5 } else { 1 }),
    };
    let mut hc = HarnessConfig::default();
    hc.cycles = max_cycles.unwrap_or(cycles);
    hc.plan = plan;
    hc.seed = args.seed;
    hc.sample_every = settings.sample_every;
    hc.keep_records = !soak;
    if args.simulate_invisible_allocations {
        hc.allocator_check = || Err("simulated (--simulate-invisible-allocations): C malloc is not routed to jemalloc".to_string());
    }
    let continuation = Continuation::new(cycles, &mut hc);
    let analysis = hc.analysis;
    let harness = Harness::new(hc);

    let total = (cycles != u64::MAX).then_some(cycles);
    let mut progress = Progress::new(total, args.json && !soak);
    let started = Instant::now();
    let mut summary = CycleSummary::default();
    let mut slope: Option<f64> = None;
    let mut write_error = None;
    let mut interrupted = false;
    let report_dir = args.report.clone();
    let result = harness.run_observed(&mut store, &ledger, |p| {
        summary.add(p.record);
        let cycle = p.record.cycle + 1;
        if cycle % args.report_every == 0 || cycle == 1 {
            let interim = analyze(p.samples, None, None, &analysis);
            slope = interim.leak_rate.as_ref().map(|r| r.bytes_per_cycle);
            if let Some(dir) = &report_dir {
                let r = RunReport::new(
                    settings.clone(),
                    &interim,
                    summary.clone(),
                    ledger.report(),
                    cycle,
                    started.elapsed().as_secs_f64(),
                    false,
                );
                if let Err(e) = write_report(dir, &r, p.samples, false) {
                    write_error = Some(e);
                    return ControlFlow::Break(());
                }
            }
        }
        progress.tick(cycle, || {
            let allocated = p.samples.last().and_then(|s| s.sample.unexplained_bytes()).unwrap_or(0) as f64;
            format!(
                "retained handles {}  unexplained {}  slope {}",
                ledger.retained_counts().values().sum::<u64>(),
                human_bytes(allocated),
                slope.map_or("-".to_string(), |s| format!("{s:+.1} B/cycle"))
            )
        });
        if stop.load(Ordering::Relaxed) {
            interrupted = true;
            return ControlFlow::Break(());
        }
        if args.duration.is_some_and(|d| started.elapsed() >= d) {
            return ControlFlow::Break(());
        }
        // Past the cycles asked for, stop as soon as the memory signals decide.
        if continuation.decided(p) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    progress.finish();
    if let Some(e) = write_error {
        return Err(e).context("writing the report");
    }
    let h = result?;
    let elapsed = started.elapsed().as_secs_f64();
    let mut final_summary = CycleSummary::default();
    if soak {
        final_summary = summary;
    } else {
        for r in &h.records {
            final_summary.add(r);
        }
    }
    let mut r = RunReport::new(settings, &h.verdict, final_summary, h.ledger.clone(), h.cycles_run, elapsed, true);
    r.interrupted = interrupted;
    if let Some(dir) = &args.report {
        write_report(dir, &r, &h.samples, true).context("writing the report")?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print_table(&r);
        if let Some(dir) = &args.report {
            println!("report: {}", dir.display());
        }
    }
    Ok(verdict_code(r.verdict))
}

fn fmt_num(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if unit == "B" => human_bytes(v),
        Some(v) => format!("{v:.2}"),
    }
}

fn print_table(r: &RunReport) {
    let s = &r.settings;
    println!(
        "leakcheck {}: reference store, {} tasks x {} segments, {} cycles in {:.1} s{}{}",
        s.command,
        s.tasks,
        s.segments,
        r.cycles_run,
        r.elapsed_seconds,
        if r.cycles_run > s.cycles {
            format!(" ({} asked; went on while the verdict was inconclusive)", s.cycles)
        } else {
            String::new()
        },
        if r.interrupted { " (interrupted)" } else { "" }
    );
    println!("fault plan: {} (seed {}), tracking: {}", if s.plan.is_empty() { "none" } else { &s.plan }, s.seed, s.tracking);
    let c = &r.cycles_summary;
    println!(
        "cycles with errors: open {}, work {}, close {}; panics {}; malformed offsets skipped {}; late records dropped {}",
        c.open_errors, c.work_errors, c.close_errors, c.panics, c.malformed_offsets_skipped, c.late_records_dropped
    );
    println!();
    println!("{:<32} {:<10} {:<14} {:>12} {:>26}", "signal", "class", "verdict", "per cycle", "interval / residue");
    for e in &r.signals {
        let verdict = match (e.informational, e.growth_below_tolerance) {
            (true, _) => format!("({})", e.verdict),
            (false, true) => format!("{} (grows)", e.verdict),
            (false, false) => e.verdict.to_string(),
        };
        let (per_cycle, detail) = if e.kind == "exact" {
            ("-".to_string(), format!("residue {}", fmt_num(e.max_residue, &e.unit)))
        } else {
            (
                fmt_num(e.slope_per_cycle, &e.unit),
                format!("[{}, {}]", fmt_num(e.lower, &e.unit), fmt_num(e.upper, &e.unit)),
            )
        };
        println!("{:<32} {:<10} {:<14} {:>12} {:>26}", e.name, e.class, verdict, per_cycle, detail);
    }
    println!("(verdicts in parentheses are raw signals shown for reference; the run is judged on the net ones, after\n what RocksDB accounts for and the harness's own records)");
    if r.signals.iter().any(|e| e.growth_below_tolerance && !e.informational) {
        println!("warning: \"clean (grows)\": growth below the tolerance, yet growth (the interval lies above zero)");
    }
    for e in r.signals.iter().filter(|e| !e.informational) {
        if let (Some(at), Some(size)) = (e.step_at_cycle, e.step_size) {
            println!(
                "retention: {} shifted once by {} at cycle {at}, left out of the slope (memory kept once: a pool or cache \
                 filling, or a leak that happened once)",
                e.name,
                fmt_num(Some(size), &e.unit)
            );
        }
    }
    for e in r.signals.iter().filter(|e| e.verdict == Verdict::Inconclusive && !e.informational) {
        if let Some(n) = e.more_cycles_needed {
            println!("{}: inconclusive, about {n} more cycles needed", e.name);
        }
    }
    if let Some(rate) = &r.leak_rate {
        println!(
            "\nleak rate ({}): {} per cycle, {} per store instance ({} instances per cycle)",
            rate.signal,
            human_bytes(rate.bytes_per_cycle),
            human_bytes(rate.bytes_per_instance),
            rate.instances_per_cycle
        );
    }
    if let Some(b) = &r.baseline_return {
        println!(
            "return to baseline: {} ({}, fds under dir {:+}, maps under dir {:+})",
            b.verdict,
            match (b.unexplained_delta_bytes, b.allocated_delta_bytes) {
                (Some(u), Some(a)) => format!("unexplained {u:+}, allocated {a:+}"),
                (None, Some(a)) => format!("allocated {a:+}"),
                _ => "bytes unreadable".to_string(),
            },
            b.fds_under_dir_delta.unwrap_or(0),
            b.maps_under_dir_delta.unwrap_or(0)
        );
    }
    if let Some(why) = &r.bytes_unavailable {
        println!("\nbyte signals unavailable, so the run cannot be called clean: {why}");
    }
    if !r.ledger.is_clean() {
        println!("\n{}", r.ledger);
    }
    for p in &r.cycles_summary.integrity_problems {
        println!("integrity: {p}");
    }
    println!("\nverdict: {}{}", r.verdict, if r.verdict == Verdict::Inconclusive { " (run more cycles)" } else { "" });
}

/// `compare OLD NEW`.
pub fn compare(old: &Path, new: &Path, max_rate: f64, max_overhead_pct: f64, json: bool) -> Result<ExitCode> {
    if !(max_rate.is_finite() && max_rate >= 0.0 && max_overhead_pct.is_finite() && max_overhead_pct >= 0.0) {
        bail!("--max-rate-increase and --max-overhead-increase must be non-negative numbers");
    }
    let a = report::read(old)?;
    let b = report::read(new)?;
    let limits = CompareLimits { max_rate_increase_bytes: max_rate, max_overhead_increase: max_overhead_pct / 100.0 };
    let c = report::compare(&a, &b, limits);
    if json {
        println!("{}", serde_json::to_string_pretty(&c)?);
    } else {
        let rate = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1} B/cycle"));
        println!("verdict       {} -> {}", c.verdicts.0, c.verdicts.1);
        println!("leak rate     {} -> {}", rate(c.rates.0), rate(c.rates.1));
        println!("time/cycle    {:.2} ms -> {:.2} ms", c.ms_per_cycle.0, c.ms_per_cycle.1);
        if c.regressions.is_empty() {
            println!("no regression");
        }
        for r in &c.regressions {
            println!("regression: {r}");
        }
    }
    Ok(if c.regressions.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
