//! Runs one planted-leak variant of the reference store (or the reference store itself) in this
//! process and prints its outcome as one line of JSON. One variant per process: jemalloc, RSS
//! and fd counts are process-wide.
//!
//! Usage: leak-variant NAME [CYCLES]

use std::process::ExitCode;

use leak_tests::mutants::{mutant, run_mutant, CATALOG};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: leak-variant NAME [CYCLES]; names: {}", names());
        return ExitCode::from(2);
    };
    let Some(m) = mutant(name) else {
        eprintln!("leak-variant: unknown variant `{name}`; names: {}", names());
        return ExitCode::from(2);
    };
    let cycles = match args.get(1).map(|c| c.parse::<u64>()) {
        None => 60,
        Some(Ok(c)) if c >= 30 => c,
        Some(_) => {
            eprintln!("leak-variant: CYCLES must be a number of at least 30");
            return ExitCode::from(2);
        }
    };
    leak_tests::run_in_scratch("leak-variant", |dir| {
        let outcome = run_mutant(m, dir, cycles).map_err(|e| format!("{name}: {e}"))?;
        serde_json::to_string(&outcome).map_err(|e| e.to_string())
    })
}

fn names() -> String {
    CATALOG.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}
