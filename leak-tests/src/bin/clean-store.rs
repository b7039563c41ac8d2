//! Runs one store of the clean catalog in this process with a seed and prints its outcome as one
//! line of JSON. One store per process: jemalloc, RSS and fd counts are process-wide.
//!
//! Usage: clean-store NAME [SEED]

use std::process::ExitCode;

use leak_tests::clean::{clean_store, run_clean, CLEAN_CATALOG};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        eprintln!("usage: clean-store NAME [SEED]; names: {}", names());
        return ExitCode::from(2);
    };
    let Some(store) = clean_store(name) else {
        eprintln!("clean-store: unknown store `{name}`; names: {}", names());
        return ExitCode::from(2);
    };
    let seed = match args.get(1).map(|s| s.parse::<u64>()) {
        None => 0,
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            eprintln!("clean-store: SEED must be a non-negative integer: {e}");
            return ExitCode::from(2);
        }
    };
    leak_tests::run_in_scratch("clean-store", |dir| {
        let outcome = run_clean(store, dir, seed).map_err(|e| format!("{name}: {e}"))?;
        serde_json::to_string(&outcome).map_err(|e| e.to_string())
    })
}

fn names() -> String {
    CLEAN_CATALOG.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}
