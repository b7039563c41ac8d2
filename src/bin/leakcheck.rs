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
    }
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
