//! The `leakcheck` command line. Parses arguments, calls the library, maps outcomes to exit
//! codes: 0 clean, 1 leak found (or a regression, for `compare`), 2 usage or environment error,
//! 3 inconclusive (not enough cycles to decide either way, even after `check` went on to --max-cycles).

mod mutants;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

// jemalloc's heap profiler compiled in and ready, inactive until `--profile` turns it on.
leakcheck::heap_profiling_ready!();
use clap::{Args, Parser, Subcommand};
use leak_tests::catalogs;
use leak_tests::reference::{ReferenceConfig, ReferenceStore};
use leakcheck::probe::{self, Probe};
use leakcheck::runner::StoreEnv;
use leakcheck::Verdict;
use leakcheck_cli::{self as cli, StoreCommand};

// The Rust side allocates through jemalloc too (with rocksdb's `jemalloc` feature, `malloc` is
// jemalloc anyway; this also covers builds without it).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "leakcheck",
    version,
    about = "Proves that code built on RocksDB releases every native resource it creates"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The reference store's flags on `check` and `soak`.
#[derive(Args, Debug, Clone)]
pub struct ReferenceArgs {
    /// Tasks of the reference store.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub tasks: u32,
    /// Live segments per task.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub segments: u32,
    /// Plant one leak of the catalog into the reference store, to see the detector fire (names:
    /// `leakcheck mutants` lists them).
    #[arg(long)]
    pub plant: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// `check`, `soak` and `compare`, of the built-in reference store.
    #[command(flatten)]
    Store(StoreCommand<ReferenceArgs>),
    /// Run the planted-leak catalog (one process per variant) and print the detection matrix:
    /// exit 0 only when every variant is detected and the reference store is clean.
    Mutants {
        /// Cycles per variant.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(30..))]
        cycles: u64,
        /// Seeded runs per store of the clean catalog (each as `check` runs: clean at 100 cycles
        /// when nothing is in question, else 200, more while inconclusive); 0 skips the clean
        /// catalog.
        #[arg(long, default_value_t = 3)]
        clean_seeds: u64,
        /// Print JSON: one object per variant.
        #[arg(long)]
        json: bool,
    },
    /// Run one store of the clean catalog in this process and print its outcome as JSON (used by
    /// `mutants`).
    #[command(hide = true)]
    CleanStore {
        /// The store's name.
        name: String,
        /// Seed of its fault plan.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Also write the run's report (report.json, samples.csv) here.
        #[arg(long)]
        report: Option<PathBuf>,
    },
    /// Run one catalog variant in this process and print its outcome as JSON (used by `mutants`).
    #[command(hide = true)]
    Mutant {
        /// The variant's name.
        name: String,
        /// Cycles.
        #[arg(long, default_value_t = 100)]
        cycles: u64,
    },
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
    /// The growth rule's power curve: cycles to a leak verdict for steady leaks of 4 B to 1 KiB a
    /// cycle and for 32 KiB bursts in 1% of cycles, on a quiet and a noisy store of the clean
    /// catalog (runs simulated from their recorded samples, judged as check judges).
    Power {
        /// Simulated runs per store and leak.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
        runs: u64,
        /// How far check may go on while inconclusive (its default is 800).
        #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(200..=1_000_000))]
        max_cycles: u64,
        /// Seed of the simulations.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Time to a decided verdict on the fresh-DB loop with one planted leak per cycle (or none):
    /// complete runs of ever more cycles, each judged at its end as `check` judges one, until one
    /// decides; then exit 1 on a leak, 0 clean, 3 undecided: the figure scripts/compare-memcheck
    /// compares with valgrind's and heaptrack's.
    TimeToVerdict {
        /// `forget-options` (a tracked Options forgotten), `malloc-1k` (1 KiB of C malloc),
        /// `park-options` (a tracked Options parked in a registry, reachable at exit) or `none`.
        #[arg(long)]
        leak: String,
        /// The longest run to try: give up after it.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
        max_cycles: u64,
        /// Print the figures as one JSON object instead of a line.
        #[arg(long)]
        json: bool,
    },
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
    /// Leak sweep of the rust-rocksdb binding itself (the release this binary is built on): each
    /// API path in a process of its own, bytes per call and a verdict per path; exit 1 on a leak
    /// that is not a known, written-up finding. `sweep --list` names the paths.
    Sweep(leakcheck_sweep::SweepArgs),
}

fn main() -> ExitCode {
    let name = cli::tool_name();
    let parsed = match Cli::try_parse() {
        Ok(parsed) => parsed,
        Err(e) => return cli::parse_error(&name, e),
    };
    match dispatch(parsed.command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{name}: {}", cli::one_line(&*e));
            ExitCode::from(2)
        }
    }
}

/// The reference store for `check` and `soak`, with the leak `--plant` names, if any.
fn reference_store(args: &ReferenceArgs, env: &StoreEnv<'_>) -> Result<ReferenceStore> {
    let mut config = ReferenceConfig::new(env.dir);
    config.tasks = args.tasks;
    config.segments = args.segments;
    if let Some(name) = &args.plant {
        config.variant = catalogs::variant(name).context("--plant")?.variant;
    }
    Ok(ReferenceStore::new(config, env.ledger)?)
}

/// `leakcheck power`: the table (or JSON) of [`leak_tests::power::curve`].
fn power(runs: usize, max_cycles: u64, seed: u64, json: bool) -> Result<ExitCode> {
    let rows = leak_tests::power::curve(runs, max_cycles, seed);
    if json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!("cycles to a leak verdict, check's rule (looks at 200, then every 10), {runs} simulated runs each, up to {max_cycles} cycles");
    println!(
        "{:<18} {:<24} {:>8} {:>14} {:>8} {:>10} {:>10}",
        "store", "leak", "caught", "within 800", "clean", "median", "90th pct"
    );
    for r in &rows {
        let c = |v: Option<u64>| v.map_or("-".to_string(), |v| v.to_string());
        println!(
            "{:<18} {:<24} {:>8} {:>14} {:>8} {:>10} {:>10}",
            r.store,
            r.leak,
            format!("{}/{}", r.caught, r.runs),
            format!("{}/{}", r.caught_by_check, r.runs),
            r.called_clean,
            c(r.median_cycles),
            c(r.p90_cycles)
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn dispatch(command: Command) -> Result<ExitCode> {
    match command {
        Command::Store(command) => Ok(ExitCode::from(cli::execute(command, reference_store)?)),
        Command::Mutants { cycles, clean_seeds, json } => mutants::all(cycles, clean_seeds, json),
        Command::CleanStore { name, seed, report } => mutants::one_clean(&name, seed, report.as_deref()),
        Command::Mutant { name, cycles } => mutants::one(&name, cycles),
        Command::Sensitivity { runs, cycles, sizes, json } => sensitivity(runs, cycles, &sizes, json),
        Command::TimeToVerdict { leak, max_cycles, json } => time_to_verdict(&leak, max_cycles, json),
        Command::Power { runs, max_cycles, seed, json } => power(runs as usize, max_cycles, seed, json),
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
        Command::Sweep(args) => Ok(ExitCode::from(leakcheck_sweep::cli(&["sweep"], &args))),
        Command::Coverage => {
            let malloc = probe::check_malloc_coverage().context("allocator coverage")?;
            println!(
                "C malloc:        {} B requested, jemalloc allocated +{} B",
                malloc.native_bytes, malloc.allocated_delta_bytes
            );
            let rocks = probe::check_rocksdb_coverage().context("allocator coverage")?;
            println!(
                "RocksDB memtable: {} B written, jemalloc allocated +{} B",
                rocks.native_bytes, rocks.allocated_delta_bytes
            );
            println!("native allocations are visible to jemalloc");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn sensitivity(runs: u32, cycles: u64, sizes: &[usize], json: bool) -> Result<ExitCode> {
    use leak_tests::sensitivity::{detect, false_positives, Scenario};
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

fn time_to_verdict(leak: &str, max_cycles: u64, json: bool) -> Result<ExitCode> {
    use leak_tests::sensitivity::{time_to_verdict, Planted};
    let Some(planted) = Planted::named(leak) else {
        let names: Vec<_> = Planted::ALL.iter().map(|p| p.name()).collect();
        anyhow::bail!("--leak {leak}: expected one of {}", names.join(", "));
    };
    let dir = tempfile::Builder::new().prefix("leakcheck-ttv").tempdir()?;
    let d = time_to_verdict(planted, dir.path(), max_cycles)?;
    let (verdict, cycles) = match d.cycles_to_verdict {
        Some(c) => (d.verdict, c),
        None => (Verdict::Inconclusive, max_cycles),
    };
    if json {
        println!("{}", serde_json::to_string(&d)?);
        return Ok(ExitCode::from(leakcheck::runner::exit_code(verdict)));
    }
    let bound =
        d.rules_out_per_cycle.map_or(String::new(), |b| format!(", rules out a continuing leak above {b:.0} B/cycle"));
    let runs = match d.runs {
        1 => format!("1 run of {} cycles", d.cycles_in_all),
        n => format!("the shortest of {n} runs, {} cycles in all", d.cycles_in_all),
    };
    println!("leak {leak}: verdict {verdict} after {cycles} cycles ({runs}), {:.2} s{bound}", d.seconds);
    Ok(ExitCode::from(leakcheck::runner::exit_code(verdict)))
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
    println!("rss anonymous       {:>14} B", opt(p.rss_anon_bytes));
    println!("threads             {:>14}", opt(p.threads));
    println!("open fds            {:>14}", opt(p.open_fds));
    println!("memory maps         {:>14}", opt(p.maps));
    if watched {
        println!("open fds under dir  {:>14}", opt(p.open_fds_under_dir));
        println!("maps under dir      {:>14}", opt(p.maps_under_dir));
    }
}
