//! `mutants`: the planted-leak catalog, one process per variant.

use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use leakcheck::harness::clean::{clean_store, run_clean_report, CleanOutcome, CLEAN_CATALOG};
use leakcheck::harness::mutants::{mutant, run_mutant, MutantOutcome, CATALOG};
use leakcheck::Verdict;

/// Runs one variant in this process and prints its outcome as one JSON line.
pub fn one(name: &str, cycles: u64) -> Result<ExitCode> {
    let m = mutant(name).ok_or_else(|| {
        anyhow!("unknown variant `{name}`; known: {}", CATALOG.iter().map(|m| m.name).collect::<Vec<_>>().join(", "))
    })?;
    let dir = tempfile::Builder::new().prefix("leakcheck-mutant-").tempdir().context("temporary directory")?;
    let outcome = run_mutant(m, dir.path(), cycles)?;
    println!("{}", serde_json::to_string(&outcome)?);
    Ok(ExitCode::SUCCESS)
}

/// Runs one store of the clean catalog in this process with `seed` and prints its outcome as one
/// JSON line.
pub fn one_clean(name: &str, seed: u64, report_dir: Option<&std::path::Path>) -> Result<ExitCode> {
    let store = clean_store(name).ok_or_else(|| {
        anyhow!("unknown clean store `{name}`; known: {}", CLEAN_CATALOG.iter().map(|s| s.name).collect::<Vec<_>>().join(", "))
    })?;
    let dir = tempfile::Builder::new().prefix("leakcheck-clean-").tempdir().context("temporary directory")?;
    let started = std::time::Instant::now();
    let (outcome, report) = run_clean_report(store, dir.path(), seed)?;
    if let Some(rd) = report_dir {
        let settings = leakcheck::report::RunSettings {
            command: format!("clean-store {name}"),
            cycles: leakcheck::harness::clean::CHECK_CYCLES,
            max_cycles: Some(leakcheck::harness::clean::CHECK_MAX_CYCLES),
            plan: store.plan.to_string(),
            seed,
            tracking: "sites".to_string(),
            sample_every: 1,
            ..Default::default()
        };
        let r = leakcheck::report::RunReport::from_harness(settings, &report, started.elapsed().as_secs_f64());
        leakcheck::report::prepare_dir(rd).with_context(|| format!("--report {}", rd.display()))?;
        leakcheck::report::write_dir(rd, &r, &report.samples).context("writing the report")?;
    }
    println!("{}", serde_json::to_string(&outcome)?);
    Ok(ExitCode::SUCCESS)
}

/// Runs one clean-store process and reads its outcome.
fn clean_run(exe: &std::path::Path, name: &str, seed: u64) -> Result<CleanOutcome> {
    let out = Command::new(exe)
        .args(["clean-store", name, "--seed", &seed.to_string()])
        .output()
        .with_context(|| format!("running clean store {name}"))?;
    if !out.status.success() {
        return Err(anyhow!("clean store {name} failed: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("output of clean store {name}"))
}

/// The clean catalog's outcomes, `seeds` runs per store, each in a child process, two at a time
/// (each process's signals are its own; two keep both cores busy).
fn clean_runs(exe: &std::path::Path, seeds: u64, json: bool) -> Result<Vec<CleanOutcome>> {
    let jobs: Vec<(&str, u64)> = CLEAN_CATALOG.iter().flat_map(|s| (0..seeds).map(move |seed| (s.name, seed))).collect();
    let queue = std::sync::Mutex::new(jobs.into_iter().rev().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                while let Some((name, seed)) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    let r = clean_run(exe, name, seed);
                    if let Ok(mut all) = results.lock() {
                        all.push(r);
                    }
                }
            });
        }
    });
    let mut outcomes =
        results.into_inner().map_err(|_| anyhow!("a clean-store worker panicked"))?.into_iter().collect::<Result<Vec<_>>>()?;
    outcomes.sort_by(|a, b| (&a.store, a.seed).cmp(&(&b.store, b.seed)));
    if !json && seeds > 0 {
        println!("\n{:<26} {:>7} {:>8} {:>8}  not clean (seed: signals)", "clean store", "clean", "seconds", "cycles");
        for store in &CLEAN_CATALOG {
            let mine: Vec<&CleanOutcome> = outcomes.iter().filter(|o| o.store == store.name).collect();
            let clean = mine.iter().filter(|o| o.verdict == Verdict::Clean).count();
            let failures: Vec<String> = mine
                .iter()
                .filter(|o| o.verdict != Verdict::Clean)
                .map(|o| format!("{}: {} {}", o.seed, o.verdict, o.leaking.iter().chain(&o.inconclusive).cloned().collect::<Vec<_>>().join(",")))
                .collect();
            let n = mine.len().max(1) as f64;
            println!(
                "{:<26} {:>7} {:>8.1} {:>8.0}  {}",
                store.name,
                format!("{clean}/{}", mine.len()),
                mine.iter().map(|o| o.seconds).sum::<f64>() / n,
                mine.iter().map(|o| o.cycles as f64).sum::<f64>() / n,
                failures.join("; ")
            );
        }
    }
    Ok(outcomes)
}

/// Runs every variant and every clean store, each in a child process of this binary, and prints
/// the matrix: sensitivity (planted leaks caught) and specificity (clean stores called clean).
pub fn all(cycles: u64, clean_seeds: u64, json: bool) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the leakcheck binary")?;
    let started = Instant::now();
    let mut outcomes: Vec<MutantOutcome> = Vec::new();
    if !json {
        println!("{:<32} {:<9} {:>8} {:>7}  {:<34} expected", "variant", "detected", "seconds", "cycles", "signals");
    }
    for m in &CATALOG {
        let out = Command::new(&exe)
            .args(["mutant", m.name, "--cycles", &cycles.to_string()])
            .output()
            .with_context(|| format!("running variant {}", m.name))?;
        if !out.status.success() {
            return Err(anyhow!("variant {} failed: {}", m.name, String::from_utf8_lossy(&out.stderr).trim()));
        }
        let o: MutantOutcome = serde_json::from_slice(&out.stdout).with_context(|| format!("output of variant {}", m.name))?;
        if !json {
            println!(
                "{:<32} {:<9} {:>8.2} {:>7}  {:<34} {}",
                o.variant,
                o.detected,
                o.seconds,
                o.cycles_to_verdict.map_or("-".to_string(), |c| c.to_string()),
                o.signals.join(","),
                if m.expected.is_empty() { "clean".to_string() } else { m.expected.join(",") }
            );
        }
        outcomes.push(o);
    }
    let caught = CATALOG
        .iter()
        .zip(&outcomes)
        .filter(|(m, _)| !m.expected.is_empty())
        .filter(|(m, o)| o.detected && m.expected.iter().all(|e| o.signals.iter().any(|s| s == e)))
        .count();
    let planted = CATALOG.iter().filter(|m| !m.expected.is_empty()).count();
    let reference_clean = CATALOG.iter().zip(&outcomes).filter(|(m, _)| m.expected.is_empty()).all(|(_, o)| !o.detected);
    let clean = clean_runs(&exe, clean_seeds, json)?;
    let called_clean = clean.iter().filter(|o| o.verdict == Verdict::Clean).count();
    // Every planted leak caught, the reference store not flagged, and every clean store clean in
    // at least 19 of 20 runs (95%).
    let specific = CLEAN_CATALOG.iter().all(|s| {
        let runs: Vec<&CleanOutcome> = clean.iter().filter(|o| o.store == s.name).collect();
        let ok = runs.iter().filter(|o| o.verdict == Verdict::Clean).count();
        runs.is_empty() || ok * 20 >= runs.len() * 19
    });
    let ok = caught == planted && reference_clean && specific;
    if json {
        // One array: the variants' objects as before, then one object per clean-store run (those
        // carry `store` and `seed` instead of `variant`).
        let mut all: Vec<serde_json::Value> = outcomes.iter().map(serde_json::to_value).collect::<Result<_, _>>()?;
        all.extend(clean.iter().map(serde_json::to_value).collect::<Result<Vec<_>, _>>()?);
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        println!(
            "\nsensitivity: {caught}/{planted} planted leaks caught; specificity: {called_clean}/{} clean-store runs called clean ({:.0} s): {}",
            clean.len(),
            started.elapsed().as_secs_f64(),
            if ok { "ok" } else { "DETECTION GAPS, see the tables" }
        );
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
