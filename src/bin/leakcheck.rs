//! The `leakcheck` command line. Thin: parses arguments, calls the library, maps outcomes to exit
//! codes (0 clean, 1 leak found, 2 usage or environment error).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use leakcheck::probe::{self, Probe};

// The Rust side allocates through jemalloc too (with rocksdb's `jemalloc` feature, `malloc` is
// jemalloc anyway; this also covers builds without it).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "leakcheck", version, about = "Proves that code built on RocksDB releases every native resource it creates")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print one memory and OS-resource sample of this process.
    Sample {
        /// Also count open files and memory maps under this directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Purge jemalloc's arenas and flush the thread cache before reading.
        #[arg(long)]
        purge: bool,
        /// Print the sample as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Prove that native (C and C++) allocations are visible to jemalloc's counters.
    Coverage,
    /// Sensitivity table: planted native leaks of several sizes against cycles to a leak
    /// verdict, and false positives over clean runs, for the fresh-DB loop and the reference store.
    Sensitivity {
        /// Clean runs per scenario for the false-positive rate.
        #[arg(long, default_value_t = 20)]
        runs: u32,
        /// Cycles per run (the limit for detection, the length of clean runs).
        #[arg(long, default_value_t = 500)]
        cycles: u64,
        /// Leak sizes in bytes per cycle.
        #[arg(long, value_delimiter = ',', default_values_t = [64usize, 128, 256, 1024, 16384])]
        sizes: Vec<usize>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("leakcheck: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Sample { dir, purge, json } => {
            let mut probe = Probe::new().purge(purge);
            if let Some(dir) = &dir {
                probe = probe.watch_dir(dir).with_context(|| format!("--dir {}", dir.display()))?;
            }
            let sample = probe.sample();
            if json {
                println!("{}", serde_json::to_string_pretty(&sample)?);
            } else {
                print_sample(&sample, dir.is_some());
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Coverage => {
            let malloc = probe::check_malloc_coverage().context("allocator coverage")?;
            println!(
                "C malloc:        {} B requested, jemalloc allocated +{} B",
                malloc.requested_bytes, malloc.allocated_delta_bytes
            );
            #[cfg(feature = "rocksdb")]
            {
                let rocks = probe::check_rocksdb_coverage().context("allocator coverage")?;
                println!(
                    "RocksDB memtable: {} B written, jemalloc allocated +{} B",
                    rocks.written_bytes, rocks.allocated_delta_bytes
                );
            }
            println!("native allocations are visible to jemalloc");
            Ok(ExitCode::SUCCESS)
        }
        Command::Sensitivity { runs, cycles, sizes, json } => sensitivity(runs, cycles, &sizes, json),
    }
}

fn sensitivity(runs: u32, cycles: u64, sizes: &[usize], json: bool) -> Result<ExitCode> {
    use leakcheck::harness::sensitivity::{detect, false_positives, Scenario};
    let dir = tempfile::Builder::new().prefix("leakcheck-sensitivity").tempdir()?;
    let mut detections = Vec::new();
    let mut fps = Vec::new();
    for scenario in [Scenario::FreshDb, Scenario::Reference] {
        for &size in sizes {
            let d = detect(scenario, &dir.path().join(format!("{}-{size}", scenario.name())), size, cycles)?;
            if !json {
                println!(
                    "{:<10} leak {:>6} B/cycle: {:>14}  slope {:>9.1} B/cycle  ({:.1} s)",
                    scenario.name(),
                    size,
                    d.cycles_to_verdict.map_or("not flagged".to_string(), |c| format!("flagged at {c}")),
                    d.slope_per_cycle.unwrap_or(f64::NAN),
                    d.seconds
                );
            }
            detections.push(d);
        }
        let fp = false_positives(scenario, &dir.path().join(format!("{}-clean", scenario.name())), runs, cycles)?;
        if !json {
            println!(
                "{:<10} clean: {} false positives, {} inconclusive in {} runs of {} cycles",
                scenario.name(),
                fp.false_positives,
                fp.inconclusive,
                fp.runs,
                fp.cycles
            );
        }
        fps.push(fp);
    }
    if json {
        println!("{}", serde_json::json!({ "detections": detections, "false_positives": fps }));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_sample(sample: &leakcheck::Sample, watched: bool) {
    let opt = |v: Option<u64>| v.map_or_else(|| "unavailable".to_string(), |v| v.to_string());
    match &sample.jemalloc {
        Some(j) => {
            println!("jemalloc allocated  {:>14} B", j.allocated_bytes);
            println!("jemalloc active     {:>14} B", j.active_bytes);
            println!("jemalloc resident   {:>14} B", j.resident_bytes);
            println!("jemalloc mapped     {:>14} B", j.mapped_bytes);
            println!("jemalloc retained   {:>14} B", j.retained_bytes);
            println!("jemalloc metadata   {:>14} B", j.metadata_bytes);
            println!("purged before read  {:>14}", j.purged);
        }
        None => println!("jemalloc            unavailable"),
    }
    let p = &sample.process;
    println!("rss                 {:>14} B", opt(p.rss_bytes));
    println!("threads             {:>14}", opt(p.threads));
    println!("open fds            {:>14}", opt(p.open_fds));
    println!("memory maps         {:>14}", opt(p.maps));
    if watched {
        println!("open fds under dir  {:>14}", opt(p.open_fds_under_dir));
        println!("maps under dir      {:>14}", opt(p.maps_under_dir));
    }
}
