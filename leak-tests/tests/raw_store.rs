//! A store written against rust-rocksdb's own types, with no tracked wrapper at all: the handle
//! ledger sees nothing of it, and the allocation generations judge its bytes all the same. The
//! planted bug is the seed's (KAFKA-20616): the options made for the offsets column family at
//! close are not released when the close-time flush fails. `retained_bytes` finds it, at the stack
//! that made the options, in a 30-cycle check; the correct store is clean in the same check.
//! Process-wide signals: this file is its own process, its two checks run one after the other.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use leakcheck::fault::{FaultAction, InjectedPanic};
use leakcheck::harness::{CycleCtx, Lifecycle};
use leakcheck::{Ledger, Signal, Verdict};

#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Debug)]
struct Failed(String);

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failed {}

impl From<rocksdb::Error> for Failed {
    fn from(e: rocksdb::Error) -> Self {
        Failed(e.to_string())
    }
}

fn fault(ctx: &CycleCtx<'_>, point: &str) -> Result<(), Failed> {
    match ctx.faults.check(point) {
        None => Ok(()),
        Some(FaultAction::Error) => Err(Failed(format!("injected error at {point}"))),
        Some(FaultAction::Panic) => InjectedPanic::raise(point),
    }
}

/// A DB with an `offsets` column family, opened, written and closed each cycle.
struct RawStore {
    dir: PathBuf,
    /// The seed's bug: the offsets options are forgotten when the close-time flush fails.
    leaks: bool,
}

impl RawStore {
    fn options() -> rocksdb::Options {
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts
    }
}

impl Lifecycle for RawStore {
    type Store = rocksdb::DB;
    type Error = Failed;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.write", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<rocksdb::DB, Failed> {
        fault(ctx, "open.db")?;
        let cfs = [rocksdb::ColumnFamilyDescriptor::new("offsets", rocksdb::Options::default())];
        Ok(rocksdb::DB::open_cf_descriptors(&Self::options(), &self.dir, cfs)?)
    }

    fn work(&mut self, db: &mut rocksdb::DB, ctx: &CycleCtx<'_>) -> Result<(), Failed> {
        fault(ctx, "work.write")?;
        let offsets = db.cf_handle("offsets").ok_or_else(|| Failed("no offsets column family".into()))?;
        for i in 0..32u64 {
            let key = (ctx.cycle * 32 + i).to_be_bytes();
            db.put(key, [7u8; 100])?;
            db.put_cf(&offsets, key, ctx.cycle.to_be_bytes())?;
        }
        Ok(())
    }

    fn close(&mut self, db: rocksdb::DB, ctx: &CycleCtx<'_>) -> Result<(), Failed> {
        // Options made for the offsets column family's last write at close.
        let offsets_options = std::hint::black_box(rocksdb::Options::default());
        let flushed = fault(ctx, "close.flush").and_then(|()| Ok(db.flush()?));
        if flushed.is_err() && self.leaks {
            // The error path returns before the options are released.
            std::mem::forget(offsets_options);
        }
        drop(db);
        flushed
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}

fn check(dir: &Path, leaks: bool) -> leakcheck::runner::RunOutcome {
    let ledger = Ledger::new();
    let mut store = RawStore { dir: dir.join(if leaks { "leaky" } else { "correct" }), leaks };
    std::fs::create_dir_all(&store.dir).expect("the store's directory");
    // A leak in every other cycle is found with 99% power by cycle 55 (docs/verdict.md, the power
    // table); check stops at the look that finds it.
    leakcheck::check(&mut store, &ledger)
        .cycles(60)
        .max_cycles(60)
        .faults("close.flush=every:2")
        .run()
        .expect("the check runs")
}

#[test]
fn a_store_on_raw_types_gets_the_exact_bytes_verdict_and_the_leaking_stack() {
    let dir = tempfile::tempdir().expect("tempdir");

    let leaky = check(dir.path(), true);
    let retained = leaky.report.signal(Signal::RetainedBytes).expect("retained_bytes");
    assert_eq!((leaky.verdict(), retained.verdict, retained.informational), (Verdict::Leak, Verdict::Leak, false));
    let record = retained.retained.as_ref().expect("the record");
    let site = record.sites.iter().find(|s| s.recurs()).expect("a recurring site");
    // Every other cycle's flush fails: about half the judged cycles keep an Options each.
    assert!(site.cycles_holding >= 2, "{site:?}");
    assert!(
        site.frames.iter().any(|f| f.contains("rocksdb_options_create") || f.contains("Options")),
        "the stack that made the options: {site:#?}"
    );
    assert!(
        site.frames.iter().any(|f| f.contains("raw_store") && f.contains("close")),
        "the store's own close, where the options were made: {site:#?}"
    );
    // Nothing tracked: the ledger saw no handle of it.
    assert!(leaky.report.ledger.retained.is_empty(), "{:?}", leaky.report.ledger.retained);

    let correct = check(dir.path(), false);
    let retained = correct.report.signal(Signal::RetainedBytes).expect("retained_bytes");
    assert_eq!((retained.verdict, retained.informational), (Verdict::Clean, false), "{}", correct.table());
    assert_eq!(correct.verdict(), Verdict::Clean, "{}", correct.table());
}
