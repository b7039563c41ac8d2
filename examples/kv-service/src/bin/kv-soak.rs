//! `kv-soak check | soak | compare`: leakcheck's runner for the kv service, with the service's
//! own flag. `kv-soak soak --duration 8h --report DIR` is the nightly soak.
use kv_service::KvService;

#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// jemalloc's heap profiler ready but inactive from start-up, so that `--profile` can sample.
leakcheck::heap_profiling_ready!();

#[derive(clap::Args, Debug, Clone)]
struct KvArgs {
    /// Bytes of the block cache shared by every open.
    #[arg(long, default_value_t = 8 << 20)]
    cache_bytes: usize,
}

fn main() -> std::process::ExitCode {
    leakcheck_cli::main(|args: &KvArgs, env| KvService::new(env.dir, env.ledger, args.cache_bytes))
}
