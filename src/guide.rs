//! The user guide: checking your own store, from a first test to a nightly soak.
//!
//! Every example here is a doc test: the ones that open RocksDB for a few cycles run under
//! `cargo test --doc`; the ones that need a process of their own (a check judging process-wide
//! signals, a soak binary) are compiled. How the verdict is reached and the figures measured on
//! it are in the repository's `docs/verdict.md` and `docs/figures.md`; `examples/kv-service` is
//! a complete user's crate doing everything below.
//!
//! # 1. Depend on it
//!
//! ```toml
//! [dependencies]
//! # default features for tests; `criterion` for leakcheck::bench, `profiling` for heap profiles
//! leakcheck = { path = "../leakcheck", features = ["criterion"] }
//! # a soak binary with leakcheck's command line (section 4)
//! leakcheck-cli = { path = "../leakcheck/cli", default-features = false }
//! rocksdb = { version = "0.25", default-features = false, features = ["jemalloc", "bindgen-runtime"] }
//! tikv-jemallocator = "0.7"
//! ```
//!
//! rocksdb's `jemalloc` feature makes jemalloc replace `malloc` for the whole process, so
//! RocksDB's C++ heap shows in jemalloc's counters: that is what the byte signals read. Without
//! it a check still runs, but ends inconclusive, never clean (the report's `bytes_unavailable`
//! says why and what to add). For rust-rocksdb 0.22 to 0.24, see [Older rust-rocksdb
//! releases](#older-rust-rocksdb-releases-022-to-024).
//!
//! # 2. Describe a cycle: `Lifecycle`
//!
//! A [`Lifecycle`](crate::Lifecycle) is what one cycle of your store does: `open` makes what a
//! cycle uses, through the tracked wrappers ([`crate::tracked`]) registered in `ctx.ledger`;
//! `work` uses it; `close` releases everything, whatever fails; `check` (optional) proves no
//! acknowledged data was lost. Faults are injected where your code asks for them
//! (`ctx.faults.check_error("close.flush")`), so the error paths run as often as the plan says.
//! The store below keeps one offset per cycle in an `offsets` column family, and the harness
//! drives it through 30 cycles with the flush at close failing in a fifth of them (a store on
//! rust-rocksdb's own types, with no wrapper, is checked as it is: [Your store as it
//! is](#your-store-as-it-is-rust-rocksdbs-own-types)):
//!
//! ```
//! use std::path::PathBuf;
//!
//! use leakcheck::fault::FaultPlan;
//! use leakcheck::tracked::{SingleThreaded, TrackedCfDescriptor, TrackedDb, TrackedOptions};
//! use leakcheck::{CycleCtx, Harness, HarnessConfig, Integrity, Ledger, Lifecycle};
//!
//! /// Long-lived state: where the data lives and what was acknowledged.
//! struct Offsets {
//!     dir: PathBuf,
//!     committed: Option<u64>,
//! }
//!
//! impl Lifecycle for Offsets {
//!     type Store = TrackedDb<SingleThreaded>;
//!     type Error = String;
//!
//!     fn fault_points(&self) -> Vec<&'static str> {
//!         vec!["close.flush"]
//!     }
//!
//!     fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Self::Store, String> {
//!         let mut opts = TrackedOptions::new(ctx.ledger);
//!         opts.create_if_missing(true);
//!         opts.create_missing_column_families(true);
//!         let offsets = TrackedCfDescriptor::new("offsets", TrackedOptions::new(ctx.ledger));
//!         TrackedDb::open_cf_descriptors(&opts, &self.dir, [offsets]).map_err(|e| e.to_string())
//!     }
//!
//!     fn work(&mut self, db: &mut Self::Store, ctx: &CycleCtx<'_>) -> Result<(), String> {
//!         let cf = db.cf_handle("offsets").ok_or("no offsets column family")?;
//!         db.put_cf(cf, b"offset", ctx.cycle.to_be_bytes()).map_err(|e| e.to_string())?;
//!         self.committed = Some(ctx.cycle); // acknowledged once the write returned
//!         Ok(())
//!     }
//!
//!     fn close(&mut self, db: Self::Store, ctx: &CycleCtx<'_>) -> Result<(), String> {
//!         let flushed = if ctx.faults.check_error("close.flush") {
//!             Err("injected flush failure".to_string())
//!         } else {
//!             db.flush().map_err(|e| e.to_string())
//!         };
//!         // Closed whatever the flush did: an early return here is the KAFKA-20616 leak.
//!         let closed = db.close().into_result().map_err(|e| e.to_string());
//!         flushed.and(closed)
//!     }
//!
//!     fn check(&mut self, ctx: &CycleCtx<'_>) -> Integrity {
//!         let mut integrity = Integrity::default();
//!         let Some(expected) = self.committed else { return integrity };
//!         let db = self.open(ctx).expect("reopen");
//!         let cf = db.cf_handle("offsets").expect("offsets");
//!         let read = db.get_cf(cf, b"offset").ok().flatten();
//!         integrity.records_checked = 1;
//!         integrity.violation("lost_offsets", u64::from(read.as_deref() != Some(&expected.to_be_bytes()[..])));
//!         drop(db.close());
//!         integrity
//!     }
//!
//!     fn data_dir(&self) -> Option<PathBuf> {
//!         Some(self.dir.clone())
//!     }
//! }
//!
//! let dir = tempfile::tempdir()?;
//! let ledger = Ledger::new();
//! // The harness makes the directory before the first cycle, and watches the files under it.
//! let mut store = Offsets { dir: dir.path().join("offsets"), committed: None };
//! let config =
//!     HarnessConfig { cycles: 30, plan: FaultPlan::parse("close.flush=20%")?, seed: 7, ..HarnessConfig::default() };
//! let report = Harness::new(config).run(&mut store, &ledger)?;
//! assert!(report.records.iter().any(|r| !r.faults_fired.is_empty()), "the flush failed in some cycles");
//! assert!(report.ledger.is_clean(), "{}", report.ledger); // every handle released
//! assert!(report.records.iter().all(|r| r.integrity.violations_of("lost_offsets") == 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Harness`](crate::Harness) is the layer underneath everything here: it catches panics (a
//! panic is an outcome; the checks still run), injects the plan's faults, samples after every
//! cycle and judges the samples ([`crate::verdict`]). Use it directly for what the runner does
//! not do: your own observer ([`Harness::run_observed`](crate::Harness::run_observed)), or the
//! fault matrix ([`Harness::fault_matrix`](crate::Harness::fault_matrix)), which runs every
//! single fault and every pair and checks after each cycle that nothing is retained and the data
//! is intact.
//!
//! `check` returns an [`Integrity`](crate::Integrity) with counters named by the store:
//! `violation(name, n)` breaks a guarantee and fails the run's `integrity` signal (it must be
//! exactly zero); `count(name, n)` is reported, summed over the cycles, and never fails it.
//! Optional methods say more: `describe` names the store and its settings in reports,
//! `default_faults` the plan used when none is given (default: every point failing in 5% of its
//! calls), `instances_per_cycle` the store instances a cycle opens (for the leak rate per
//! instance), `rocksdb_memory` what RocksDB accounts for (block caches, memtables, a DB's files;
//! [`MemoryConsumers`](crate::probe::MemoryConsumers) reads it, for tracked or raw DBs and
//! caches): what a reported cache (within its capacity), memtable or file set holds is explained
//! at every look, so a store that keeps them open for its whole life is judged clean while they
//! fill, and a cache or DB kept open and not reported leaves the record's question open
//! (inconclusive, naming it); and `let_go` what the store keeps across cycles (a shared cache, a
//! write-buffer manager, a DB kept open): the harness calls it once after the last cycle, so that
//! the end's listing of what the cycles still hold is theirs alone.
//!
//! Configuration is plain structs with public fields and `Default` (`HarnessConfig`,
//! [`RunOptions`](crate::runner::RunOptions), `AnalysisConfig`, `Tolerances`,
//! [`Settle`](crate::Settle)); the only builder is [`check`](crate::check). Fault plans are text
//! (`"close.flush=10%,open.db=every:4"`), the same in code, on the command line and in
//! `LEAKCHECK_FAULTS`.
//!
//! # 3. One call in `cargo test`
//!
//! [`check`](crate::check) judges a store as `leakcheck check` does: the store's default fault
//! plan (or `.faults(..)`), 200 cycles (stopping clean at 100 when nothing is in question, unless
//! `.cycles(n)` is given), going on past `.cycles(n)` while the memory verdict is
//! inconclusive, up to `.max_cycles(m)` (four times the cycles by default). `assert_clean` fails
//! with the verdict table, and in it the ledger's table of retained handles (kind, count,
//! creating line, owner); `.report(dir)` also writes the report directory.
//!
//! ```no_run
//! // tests/clean.rs: one such check per integration-test file.
//! # use leakcheck::{CycleCtx, Ledger, Lifecycle};
//! # struct Offsets;
//! # impl Offsets { fn new(_: &std::path::Path, _: &Ledger) -> Self { Offsets } }
//! # impl Lifecycle for Offsets {
//! #     type Store = ();
//! #     type Error = String;
//! #     fn fault_points(&self) -> Vec<&'static str> { vec!["close.flush"] }
//! #     fn open(&mut self, _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #     fn work(&mut self, _: &mut (), _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #     fn close(&mut self, _: (), _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! # }
//! #[global_allocator]
//! static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
//!
//! #[test]
//! fn the_store_is_clean_under_faults() -> Result<(), Box<dyn std::error::Error>> {
//!     let dir = tempfile::tempdir()?;
//!     let ledger = Ledger::new();
//!     let mut store = Offsets::new(dir.path(), &ledger);
//!     leakcheck::check(&mut store, &ledger).faults("close.flush=10%").run()?.assert_clean();
//!     Ok(())
//! }
//! # fn main() {}
//! ```
//!
//! **One such check per integration-test file**: the byte and OS signals are process-wide (a
//! test running beside it adds its allocations to them), and each file is its own process
//! (`cargo nextest` runs every test in its own process anyway). The `#[global_allocator]` makes
//! Rust's allocations jemalloc's too. `examples/kv-service/tests/planted_bug.rs` shows a check
//! failing: the same service with a failed flush returning before the DB's options are released
//! comes out `leak`, with the retained `Options` named by the line that created them.
//!
//! # 4. A soak binary, and a bench
//!
//! `leakcheck_cli::main` (the `leakcheck-cli` crate, `cli/` in the repository, taken with
//! `default-features = false`) gives a binary of yours `check`,
//! `soak` and `compare` for your store, with leakcheck's flags, output, exit codes (0 clean, 1
//! leak or regression, 2 bad input, 3 inconclusive), crash-safe reports and plots, and flags of
//! your own flattened in; its crate docs have the example. Without the command line,
//! [`runner::run`](crate::runner::run) takes [`RunOptions`](crate::runner::RunOptions) and
//! returns the outcome (report, table, exit code). A nightly job soaks with `soak --duration 8h
//! --report DIR` and compares each night's `report.json` with the last (`compare OLD NEW`).
//!
//! `leakcheck::bench` (feature `criterion`) has criterion measurements of the bytes and handles
//! one cycle leaves behind, beside its wall time (`examples/kv-service/benches/kv.rs`). A bench
//! measures allocation; the check judges what is a leak.
//!
//! # 5. Handles: the ledger
//!
//! Build your store with the tracked wrappers ([`crate::tracked`]): DBs in every open mode,
//! pessimistic and optimistic transaction DBs and their transactions, backup engines,
//! checkpoints, options, caches, write buffer managers, batches, iterators and snapshots
//! (`clippy.toml` at the repository root forbids the untracked types, and says why of the few
//! small options objects not wrapped). Each wrapper derefs to the rust-rocksdb type, so the rest
//! of your code does not change; its `clone()` is a handle of its own, reported where it was
//! cloned. Give each test its own [`Ledger`](crate::Ledger):
//!
//! ```
//! use leakcheck::tracked::{SingleThreaded, TrackedCfDescriptor, TrackedDb, TrackedOptions};
//! use leakcheck::{assert_no_leaks, owner_scope, Ledger};
//!
//! let ledger = Ledger::new();
//! let dir = tempfile::tempdir()?;
//! {
//!     let _owner = owner_scope("task 0_1"); // the owner path reports show
//!     let mut opts = TrackedOptions::new(&ledger);
//!     opts.create_if_missing(true);
//!     opts.create_missing_column_families(true);
//!     let offsets = TrackedCfDescriptor::new("offsets", TrackedOptions::new(&ledger));
//!     let db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&opts, dir.path(), [offsets])?;
//!     db.put(b"k", b"v")?;
//!     db.close().into_result()?; // a close error cannot be dropped unseen
//! }
//! assert_no_leaks!(ledger);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A handle that is never released (`mem::forget`, `Box::leak`, an `Arc` cycle, a registry never
//! pruned, a close path that returns early) fails the assertion with a table naming its kind,
//! the line of your code that created it and its owner path:
//!
//! ```text
//! leakcheck: 1 native handle(s) retained, 0 close error(s) swallowed (tracking depth: sites)
//! retained (not declared shared):
//!   kind                   count  created at                               owner
//!   Options                    1  src/store.rs:88:23                       task 0_1 / segment 3 / offsets
//! ```
//!
//! - **Holds.** A DB keeps its options' caches, env and write buffer manager alive. Dropping a
//!   `TrackedCache` while a DB uses it is a deferred release, not a leak; a report made meanwhile
//!   says which DB holds it.
//! - **Declared shared handles.** A store-wide block cache may outlive the code under test:
//!   `ledger.declare_shared(cache.token())`. Sharing is not a licence to grow: a store that
//!   declares one more "shared" cache per open is a leak (`declared_shared_growth`).
//! - **One leaking line is one row.** Retained handles are grouped by kind, creation site and
//!   owner, their holders summarized in the row.
//! - **Swallowed close errors.** `TrackedDb::close` (and any close you wrap in
//!   [`CloseResult`](crate::CloseResult)) returns a `#[must_use]` result; an error dropped
//!   without being taken out shows in the report.
//! - **Tracking depth.** `counts`, `sites` (the default) or `backtraces`:
//!   [`Ledger::with_depth`](crate::Ledger::with_depth), or `LEAKCHECK_TRACKING`.
//! - **A guard.** `let _guard = ledger.guard();` verifies when it drops, retrying briefly while
//!   background work finishes.
//! - **Keep everyone on the wrappers.** The repository's `clippy.toml` forbids naming untracked
//!   rust-rocksdb types outside the wrapper module, and lists with a reason each what is not
//!   wrapped yet; copy its lists into your project's. Its `sweep/tests/binding_coverage.rs` fails on
//!   any public function of the locked rust-rocksdb that returns a native handle and is neither
//!   wrapped nor listed.
//! - **Another library's handles.** [`Ledger::register`](crate::Ledger::register) with
//!   [`HandleKind::Other`](crate::HandleKind::Other) tracks anything with an owner and a release.
//!
//! # 6. Bytes and OS resources: the probes
//!
//! [`Probe`](crate::Probe) samples jemalloc's counters, RSS, threads, and open files and memory
//! maps (under a directory too). Check once per test binary that native allocations are visible,
//! then measure:
//!
//! ```
//! use leakcheck::{probe, Probe};
//!
//! probe::check_malloc_coverage()?; // C and C++ allocations show in jemalloc's counters
//! let dir = tempfile::tempdir()?;
//! let probe = Probe::new().purge(true).watch_dir(dir.path())?;
//! let before = probe.sample();
//! std::fs::write(dir.path().join("data"), b"closed again at once")?;
//! let after = probe.sample();
//! assert_eq!(after.process.open_fds_under_dir, before.process.open_fds_under_dir);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The counters are process-wide: put each such test in an integration-test file of its own
//! with a single `#[test]`. Ledger tests have no such limit. Without default features
//! (`default-features = false`) the core (ledger, probes, verdict, harness, runner) builds with
//! no RocksDB at all.
//!
//! # 7. Where the bytes come from: heap profiles (feature `profiling`)
//!
//! When bytes leak and no tracked handle does (raw FFI, a leak in the binding or in RocksDB),
//! the call stacks of the growth say where. `check --profile [N]` (or
//! [`Check::profile`](crate::runner::Check::profile)) turns on jemalloc's sampling heap
//! profiler, one sample per `2^N` bytes (default N = 19), dumps the profile after the warm-up and
//! at the end, and reports the stacks whose live bytes grew, each with a 95% lower bound from its
//! samples, and the growth summed per function of your code; the report directory gets pprof
//! profiles (`heap-first.pb.gz`, `heap-last.pb.gz`), folded stacks and a flame graph.
//!
//! ```no_run
//! // tests/heap_profile.rs: a file of its own, since it sets jemalloc's start-up options.
//! leakcheck::heap_profiling_ready!();
//! # use leakcheck::{CycleCtx, Ledger, Lifecycle};
//! # struct Offsets;
//! # impl Lifecycle for Offsets {
//! #     type Store = ();
//! #     type Error = String;
//! #     fn fault_points(&self) -> Vec<&'static str> { vec![] }
//! #     fn open(&mut self, _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #     fn work(&mut self, _: &mut (), _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! #     fn close(&mut self, _: (), _: &CycleCtx<'_>) -> Result<(), String> { Ok(()) }
//! # }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ledger = Ledger::new();
//! let mut store = Offsets;
//! let outcome = leakcheck::check(&mut store, &ledger).cycles(300).profile(12).run()?;
//! if let Some(stack) = outcome.report.heap_stack_naming("Offsets::open", 3) {
//!     println!("{:.0} B/cycle from {:?}", stack.bytes_per_cycle, stack.frames);
//! }
//! # Ok(()) }
//! ```
//!
//! What must be set, and why: jemalloc reads whether profiling exists at all only at start-up.
//! So build with leakcheck's `profiling` feature (RocksDB and jemalloc are rebuilt once), start
//! the process with profiling ready but inactive (`heap_profiling_ready!()` once in the binary,
//! or `MALLOC_CONF=prof:true,prof_active:false`), and give your crate debug info
//! (`[profile.release] debug = "limited"`, with `debug = false` for `package."*"` so RocksDB's
//! build is unchanged) for names of your own functions. Sampling finer than the default moves
//! the byte signals themselves: use a fine rate to learn *where* bytes go on a run already called
//! a leak, not to decide *whether*. The figures (how many cycles a leak needs at each rate, the
//! cost) are in `docs/guide.md`.
//!
//! # Older rust-rocksdb releases (0.22 to 0.24)
//!
//! rocksdb's `jemalloc` feature there pulls tikv-jemalloc-sys 0.5 or 0.6 beside leakcheck's 0.7,
//! and both declare `links = "jemalloc"`, so cargo refuses the graph. Leave it off and turn on
//! leakcheck's `unprefixed-malloc`, which makes leakcheck's jemalloc replace `malloc` for the
//! whole process (Rust's allocations too, through the system allocator: no `#[global_allocator]`
//! is needed). The dependencies of the crate that runs the check, exactly:
//!
//! ```toml
//! [dependencies]
//! leakcheck = { path = "../leakcheck", default-features = false, features = ["unprefixed-malloc"] }
//! rocksdb = { version = "0.24", default-features = false, features = ["bindgen-runtime"] }
//! ```
//!
//! (On 0.23 write `"0.23"`; on 0.22 leave the `rocksdb` line out: its rocksdb has no
//! `bindgen-runtime` feature, and its build loads libclang when it runs already.) Your own
//! dependencies (the store's crate, `tempfile` for tests) come beside these.
//!
//! The `rocksdb` line is needed even when no code of the crate names rocksdb (the store is
//! another crate's, on rocksdb without `bindgen-runtime`): cargo unifies features, so the line
//! turns `bindgen-runtime` on for the store's rocksdb too, and bindgen then loads libclang when it
//! runs, under any versioned name (`libclang.so.1`, as Debian's clang packages install it).
//! Without it librocksdb-sys's build links libclang at build time, which needs the unversioned
//! `libclang.so` of a development package, and where that is missing the build stops before
//! compiling RocksDB:
//!
//! ```text
//! error: failed to run custom build command for `clang-sys v1.9.1`
//!   ...
//!   couldn't find any valid shared libraries matching: ['libclang.so', 'libclang-*.so'], set the
//!   `LIBCLANG_PATH` environment variable to a path where one of these files can be found (invalid: [])
//! ```
//!
//! The fix is the `rocksdb` line above (or libclang's development package, or `LIBCLANG_PATH`
//! naming a directory with an unversioned `libclang.so`). The repository's
//! `scripts/older-recipe VERSION` builds a check crate from exactly these lines, beside a store
//! crate on rocksdb without `bindgen-runtime`, checks that leaving the `rocksdb` line out gives
//! this error, and runs a check of the store with the recipe.
//!
//! Such a project gets the byte and OS signals, integrity, fault plans, the verdict, the runner,
//! heap profiles, and the ledger for handles it registers itself
//! ([`Ledger::register`](crate::Ledger::register), [`HandleKind::Other`](crate::HandleKind::Other));
//! not the tracked wrappers, which are built on 0.25 (a crate cannot hold two rust-rocksdb
//! releases: both declare `links = "rocksdb"`). A store on rust-rocksdb's own types is judged
//! as [the next section](#your-store-as-it-is-rust-rocksdbs-own-types) shows. Forget
//! `unprefixed-malloc` and a check ends inconclusive with the fix in its `bytes_unavailable`.
//!
//! # Your store as it is: rust-rocksdb's own types
//!
//! A store that uses `rocksdb::DB` and `rocksdb::Options` directly, with no tracked wrapper, is
//! checked as it is. The whole glue is a [`Lifecycle`](crate::Lifecycle):
//!
//! ```no_run
//! // tests/offsets.rs: one check per integration-test file.
//! use std::path::PathBuf;
//!
//! use leakcheck::{CycleCtx, Ledger, Lifecycle};
//!
//! /// Your store: whatever opens, uses and closes a DB.
//! struct Offsets {
//!     dir: PathBuf,
//! }
//!
//! impl Lifecycle for Offsets {
//!     type Store = rocksdb::DB;
//!     type Error = rocksdb::Error;
//!
//!     fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<rocksdb::DB, rocksdb::Error> {
//!         let mut opts = rocksdb::Options::default();
//!         opts.create_if_missing(true);
//!         rocksdb::DB::open(&opts, &self.dir)
//!     }
//!
//!     fn work(&mut self, db: &mut rocksdb::DB, ctx: &CycleCtx<'_>) -> Result<(), rocksdb::Error> {
//!         db.put(b"offset", ctx.cycle.to_be_bytes())
//!     }
//!
//!     fn close(&mut self, db: rocksdb::DB, _ctx: &CycleCtx<'_>) -> Result<(), rocksdb::Error> {
//!         db.flush() // the DB closes when it drops, on return, whatever the flush did
//!     }
//!
//!     fn data_dir(&self) -> Option<PathBuf> {
//!         Some(self.dir.clone()) // made before the first cycle if it does not exist yet
//!     }
//! }
//!
//! #[test]
//! fn offsets_release_what_they_allocate() -> Result<(), Box<dyn std::error::Error>> {
//!     let dir = tempfile::tempdir()?;
//!     let ledger = Ledger::new();
//!     let mut store = Offsets { dir: dir.path().join("offsets") };
//!     let outcome = leakcheck::check(&mut store, &ledger).run()?;
//!     println!("{}", outcome.summary()); // one line: the verdict, what leaked and where
//!     outcome.assert_clean();
//!     Ok(())
//! }
//! # fn main() {}
//! ```
//!
//! The byte signals judge it: what each cycle allocated and never gave back, by the stack that
//! allocated it, so a leak is named at the line of your code that made what was kept. The rows
//! whose source such a store never feeds read `not measured`, with the reason, neither clean nor
//! a leak: the handle rows (nothing registered in the ledger), `swallowed_close_errors` (no
//! [`CloseResult`](crate::CloseResult)), `integrity` (no `check`), `rocksdb_explained_bytes` (no
//! `rocksdb_memory`). Add what applies: `fault_points` and `ctx.faults.check_error(..)` to fail a
//! step (the default is none), `check` to read the data back after close. `examples/raw-store` in
//! the repository is such a store with a failing flush, and the same store parking an options
//! object on a failed flush, caught by its bytes at the line that made it.
