//! `rocksdb-sweep`: the leak sweep of the rust-rocksdb release this crate is built on
//! (`leakcheck sweep` runs the same for the locked release). See the crate's documentation.

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// Leak sweep of the rust-rocksdb release this binary is built on: each path in a process of
/// its own; exit 0 clean, 1 a leak that is not a known finding (or a failing path), 3
/// inconclusive, 2 error.
#[derive(clap::Parser, Debug)]
#[command(name = "rocksdb-sweep")]
struct Cli {
    #[command(flatten)]
    args: leakcheck_sweep::SweepArgs,
}

fn main() -> std::process::ExitCode {
    let cli = <Cli as clap::Parser>::parse();
    std::process::ExitCode::from(leakcheck_sweep::cli(&[], &cli.args))
}
