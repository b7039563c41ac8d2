//! `mutants`, `mutant`, `clean-store`: both catalogs, one child process of this binary per run
//! (`leak_tests::catalogs`).

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use leak_tests::catalogs::{run_catalogs, run_clean_store, run_variant, CatalogPlan, CatalogRun};

/// `mutant NAME`: one variant in this process, its outcome as one JSON line.
pub fn one(name: &str, cycles: u64) -> Result<ExitCode> {
    println!("{}", serde_json::to_string(&run_variant(name, cycles)?)?);
    Ok(ExitCode::SUCCESS)
}

/// `clean-store NAME`: one clean-catalog run in this process, its outcome as one JSON line.
pub fn one_clean(name: &str, seed: u64, report_dir: Option<&Path>) -> Result<ExitCode> {
    println!("{}", serde_json::to_string(&run_clean_store(name, seed, report_dir)?)?);
    Ok(ExitCode::SUCCESS)
}

/// `mutants`: both catalogs and their tables; exit 0 only when every planted leak is caught, the
/// reference store is not flagged and every clean store is clean.
pub fn all(cycles: u64, clean_seeds: u64, json: bool) -> Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the leakcheck binary")?;
    if !json {
        println!("{}", CatalogRun::variants_header());
    }
    let plan = CatalogPlan { cycles, clean_seeds: (0..clean_seeds).collect(), workers: 2 };
    let run = run_catalogs(&exe, &plan, |m, o| {
        if !json {
            println!("{}", CatalogRun::variant_row(m, o));
        }
    })?;
    if json {
        println!("{}", serde_json::to_string_pretty(&run.json())?);
    } else {
        if clean_seeds > 0 {
            print!("\n{}", run.clean_table());
        }
        println!("\n{}", run.summary());
    }
    Ok(if run.ok() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
