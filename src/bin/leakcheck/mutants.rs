//! `mutants`: the planted-leak catalog, one process per variant.

use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use leakcheck::harness::mutants::{mutant, run_mutant, MutantOutcome, CATALOG};

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

/// Runs every variant, each in a child process of this binary, and prints the matrix.
pub fn all(cycles: u64, json: bool) -> Result<ExitCode> {
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
    let ok = CATALOG.iter().zip(&outcomes).all(|(m, o)| {
        if m.expected.is_empty() {
            !o.detected
        } else {
            o.detected && m.expected.iter().all(|e| o.signals.iter().any(|s| s == e))
        }
    });
    if json {
        println!("{}", serde_json::to_string_pretty(&outcomes)?);
    } else {
        println!(
            "\n{} ({:.0} s): {}",
            if ok { "every variant detected, reference store clean" } else { "DETECTION GAPS" },
            started.elapsed().as_secs_f64(),
            if ok { "ok" } else { "see the table" }
        );
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
