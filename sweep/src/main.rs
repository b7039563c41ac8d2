//! `rocksdb-sweep`: the leak sweep of the rust-rocksdb release this crate is built on
//! (`leakcheck sweep` runs the same for the locked release). See the crate's documentation.

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let rest: Vec<String> = std::env::args().skip(1).collect();
    std::process::ExitCode::from(leakcheck_sweep::cli(&[], &rest))
}
