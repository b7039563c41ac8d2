//! The catalog: rust-rocksdb API paths, each a fixture made at the start of a cycle and one call
//! repeated many times within it. A path that provokes an error checks that the error came: a
//! call that should fail and did not is the path's failure, not a pass.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    Cache, ColumnFamilyDescriptor, CompactionDecision, DBCompressionType, Env, IteratorMode, OptimisticTransactionDB,
    Options, SingleThreaded, SliceTransform, TransactionDB, TransactionDBOptions, WriteBatch, WriteBufferManager, DB,
};

use crate::fuzz::ops::concat;
use crate::SweepError;

/// What one cycle holds while its calls run: a DB (or a transaction DB) when the path needs one.
pub struct Fixture {
    dir: PathBuf,
    db: Option<DB>,
    txn_db: Option<TransactionDB<SingleThreaded>>,
    optimistic: Option<OptimisticTransactionDB<SingleThreaded>>,
}

impl std::fmt::Debug for Fixture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fixture").field("dir", &self.dir).field("db", &self.db.is_some()).finish_non_exhaustive()
    }
}

impl Fixture {
    fn bare(dir: &Path) -> Fixture {
        Fixture { dir: dir.to_path_buf(), db: None, txn_db: None, optimistic: None }
    }

    fn db(&mut self) -> Result<&mut DB, SweepError> {
        self.db.as_mut().ok_or(SweepError::Fixture("no DB in this fixture"))
    }
}

/// One API path of the binding.
#[derive(Clone, Copy)]
pub struct SweepPath {
    /// Name on the command line and in the table.
    pub name: &'static str,
    /// What one call does.
    pub what: &'static str,
    /// Calls per cycle: enough that a leak of a few bytes per call is many bytes per cycle.
    pub calls_per_cycle: u32,
    setup: fn(&Path) -> Result<Fixture, SweepError>,
    call: fn(&mut Fixture, u64) -> Result<(), SweepError>,
}

impl std::fmt::Debug for SweepPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SweepPath")
            .field("name", &self.name)
            .field("calls_per_cycle", &self.calls_per_cycle)
            .finish_non_exhaustive()
    }
}

impl SweepPath {
    pub(crate) fn setup(&self, dir: &Path) -> Result<Fixture, SweepError> {
        (self.setup)(dir)
    }

    pub(crate) fn call(&self, fixture: &mut Fixture, i: u64) -> Result<(), SweepError> {
        (self.call)(fixture, i)
    }
}

fn rocks(what: &'static str) -> impl Fn(rocksdb::Error) -> SweepError {
    move |source| SweepError::RocksDb { what, source }
}

/// An error that must come: `Ok` when it did, the path's failure when the call succeeded.
fn must_fail<T>(what: &'static str, r: Result<T, rocksdb::Error>) -> Result<(), SweepError> {
    match r {
        Err(_) => Ok(()),
        Ok(_) => Err(SweepError::ExpectedFailure(what)),
    }
}

fn created() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

/// An empty directory for the cycle; nothing open.
fn nothing(dir: &Path) -> Result<Fixture, SweepError> {
    Ok(Fixture::bare(dir))
}

/// A DB with 100 keys and a column family `cf`, open for the cycle.
fn open_db(dir: &Path) -> Result<Fixture, SweepError> {
    let mut db = DB::open_cf(&created(), dir.join("db"), ["cf"]).map_err(rocks("open"))?;
    for k in 0..100u32 {
        db.put(format!("key{k:04}"), [7u8; 64]).map_err(rocks("put"))?;
    }
    if db.cf_handle("scratch").is_some() {
        db.drop_cf("scratch").map_err(rocks("drop_cf"))?;
    }
    Ok(Fixture { db: Some(db), ..Fixture::bare(dir) })
}

/// A closed DB on disk, with `cf` (for the open paths).
fn closed_db(dir: &Path) -> Result<Fixture, SweepError> {
    drop(open_db(dir)?);
    Ok(Fixture::bare(dir))
}

fn merge_db(dir: &Path) -> Result<Fixture, SweepError> {
    let mut o = created();
    o.set_merge_operator_associative("concat", concat);
    let db = DB::open(&o, dir.join("merge")).map_err(rocks("open with merge operator"))?;
    Ok(Fixture { db: Some(db), ..Fixture::bare(dir) })
}

fn transaction_db(dir: &Path) -> Result<Fixture, SweepError> {
    let db = TransactionDB::<SingleThreaded>::open(&created(), &TransactionDBOptions::default(), dir.join("txn"))
        .map_err(rocks("open transaction db"))?;
    Ok(Fixture { txn_db: Some(db), ..Fixture::bare(dir) })
}

fn optimistic_db(dir: &Path) -> Result<Fixture, SweepError> {
    let db = OptimisticTransactionDB::<SingleThreaded>::open(&created(), dir.join("otxn"))
        .map_err(rocks("open optimistic db"))?;
    Ok(Fixture { optimistic: Some(db), ..Fixture::bare(dir) })
}

/// A read-only DB over the closed DB.
fn read_only_db(dir: &Path) -> Result<Fixture, SweepError> {
    let mut f = closed_db(dir)?;
    f.db = Some(DB::open_for_read_only(&Options::default(), dir.join("db"), false).map_err(rocks("open read-only"))?);
    Ok(f)
}

macro_rules! path {
    ($name:literal, $what:literal, $calls:expr, $setup:expr, $call:expr) => {
        SweepPath { name: $name, what: $what, calls_per_cycle: $calls, setup: $setup, call: $call }
    };
}

/// Every path the sweep runs on this build's release: [`PATHS`], then those of functions newer
/// releases added.
pub fn all_paths() -> impl Iterator<Item = &'static SweepPath> {
    PATHS.iter().chain(PATHS_SINCE_0_24)
}

/// Paths of functions rust-rocksdb 0.24 added (built on 0.24 and later only: build.rs sets
/// `rocksdb_0_24`).
#[cfg(rocksdb_0_24)]
pub const PATHS_SINCE_0_24: &[SweepPath] =
    &[path!("approximate-sizes", "get_approximate_sizes of one range", 200, open_db, |f, _| {
        drop(f.db()?.get_approximate_sizes(&[rocksdb::Range::new(b"key0000", b"key0099")]));
        Ok(())
    })];

/// Paths of functions rust-rocksdb 0.24 added (none on an older release).
#[cfg(not(rocksdb_0_24))]
pub const PATHS_SINCE_0_24: &[SweepPath] = &[];

/// The paths every supported release (0.22 and later) has.
pub const PATHS: &[SweepPath] = &[
    // Open and close, in every mode.
    path!("open-default", "DB::open_default on a new directory, dropped", 10, nothing, |f, i| {
        drop(DB::open_default(f.dir.join(format!("d{}", i % 4))).map_err(rocks("open_default"))?);
        Ok(())
    }),
    path!(
        "open-cf-descriptors",
        "DB::open_cf_descriptors with the column family cf, dropped",
        10,
        closed_db,
        |f, _| {
            let cfs = vec![ColumnFamilyDescriptor::new("cf", Options::default())];
            drop(DB::open_cf_descriptors(&created(), f.dir.join("db"), cfs).map_err(rocks("open_cf_descriptors"))?);
            Ok(())
        }
    ),
    path!("open-read-only", "DB::open_for_read_only, dropped", 10, closed_db, |f, _| {
        drop(
            DB::open_for_read_only(&Options::default(), f.dir.join("db"), false)
                .map_err(rocks("open_for_read_only"))?,
        );
        Ok(())
    }),
    path!("open-as-secondary", "DB::open_as_secondary beside the closed primary, dropped", 10, closed_db, |f, _| {
        let mut o = Options::default();
        o.set_max_open_files(-1);
        drop(DB::open_as_secondary(&o, f.dir.join("db"), f.dir.join("secondary")).map_err(rocks("open_as_secondary"))?);
        Ok(())
    }),
    path!("open-with-ttl", "DB::open_with_ttl, dropped", 10, nothing, |f, _| {
        drop(
            DB::open_with_ttl(&created(), f.dir.join("ttl"), Duration::from_secs(3600))
                .map_err(rocks("open_with_ttl"))?,
        );
        Ok(())
    }),
    path!(
        "open-missing-fails",
        "DB::open of a missing directory without create_if_missing (error)",
        50,
        nothing,
        |f, _| { must_fail("open of a missing directory", DB::open(&Options::default(), f.dir.join("missing"))) }
    ),
    path!("open-locked-fails", "DB::open of a directory another DB holds (lock error)", 50, open_db, |f, _| {
        must_fail("open of a locked directory", DB::open_default(f.dir.join("db")))
    }),
    path!(
        "open-bad-options-fails",
        "DB::open with a compression that is not compiled in (error)",
        50,
        nothing,
        |f, _| {
            let mut o = created();
            o.set_compression_type(DBCompressionType::Zstd);
            must_fail("open with zstd, not compiled in", DB::open(&o, f.dir.join("zstd")))
        }
    ),
    path!("destroy", "DB::destroy of a closed DB", 10, nothing, |f, i| {
        let dir = f.dir.join(format!("doomed{}", i % 4));
        drop(DB::open_default(&dir).map_err(rocks("open_default"))?);
        DB::destroy(&Options::default(), &dir).map_err(rocks("destroy"))
    }),
    // Column families.
    path!("create-drop-cf", "create_cf of a new name, then drop_cf", 20, open_db, |f, _| {
        let db = f.db()?;
        db.create_cf("scratch", &Options::default()).map_err(rocks("create_cf"))?;
        db.drop_cf("scratch").map_err(rocks("drop_cf"))
    }),
    path!("create-cf-existing-fails", "create_cf of a name that exists (error)", 200, open_db, |f, _| {
        must_fail("create_cf of an existing name", f.db()?.create_cf("cf", &Options::default()))
    }),
    path!("drop-cf-missing-fails", "drop_cf of a name that does not exist (error)", 200, open_db, |f, _| {
        must_fail("drop_cf of a missing name", f.db()?.drop_cf("no-such-cf"))
    }),
    path!("list-cf-missing-fails", "DB::list_cf of a directory with no DB (error)", 200, nothing, |f, _| {
        must_fail("list_cf of a missing DB", DB::list_cf(&Options::default(), f.dir.join("missing")))
    }),
    path!(
        "key-may-exist-value-absent",
        "key_may_exist_cf_opt_value of a key the column family does not have",
        200,
        open_db,
        |f, i| {
            let db = f.db()?;
            let cf = db.cf_handle("cf").ok_or(SweepError::Fixture("cf missing"))?;
            drop(db.key_may_exist_cf_opt_value(cf, format!("absent{}", i % 100), &rocksdb::ReadOptions::default()));
            Ok(())
        }
    ),
    path!("cf-handle", "cf_handle lookup and a get through it", 200, open_db, |f, _| {
        let db = f.db()?;
        let cf = db.cf_handle("cf").ok_or(SweepError::Fixture("cf missing"))?;
        db.get_cf(cf, b"key0001").map_err(rocks("get_cf"))?;
        Ok(())
    }),
    // Options and their callbacks.
    path!("options-comparator", "Options with a comparator set, dropped", 200, nothing, |_, _| {
        let mut o = Options::default();
        o.set_comparator("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        drop(o);
        Ok(())
    }),
    path!("options-merge-operator", "Options with an associative merge operator, dropped", 200, nothing, |_, _| {
        let mut o = Options::default();
        o.set_merge_operator_associative("concat", concat);
        drop(o);
        Ok(())
    }),
    path!("options-compaction-filter", "Options with a compaction filter, dropped", 200, nothing, |_, _| {
        let mut o = Options::default();
        o.set_compaction_filter("keep", |_level: u32, _key: &[u8], _value: &[u8]| CompactionDecision::Keep);
        drop(o);
        Ok(())
    }),
    path!("options-ratelimiter", "Options with a rate limiter of 1 MiB/s, dropped", 200, nothing, |_, _| {
        let mut o = Options::default();
        o.set_ratelimiter(1 << 20, 100_000, 10);
        drop(o);
        Ok(())
    }),
    path!("options-prefix-extractor", "Options with a fixed-prefix slice transform, dropped", 200, nothing, |_, _| {
        let mut o = Options::default();
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(4));
        drop(o);
        Ok(())
    }),
    path!("open-with-comparator", "DB::open with a comparator, a put, dropped", 10, nothing, |f, i| {
        let mut o = created();
        o.set_comparator("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        let db = DB::open(&o, f.dir.join(format!("cmp{}", i % 4))).map_err(rocks("open with comparator"))?;
        db.put(b"k", b"v").map_err(rocks("put"))
    }),
    path!("merge", "merge of an operand and a get that runs the merge operator", 200, merge_db, |f, i| {
        let db = f.db()?;
        db.merge(format!("m{}", i % 16), b"x").map_err(rocks("merge"))?;
        db.get(format!("m{}", i % 16)).map_err(rocks("get"))?;
        Ok(())
    }),
    path!("cache-create", "an LRU cache made and dropped", 200, nothing, |_, _| {
        drop(Cache::new_lru_cache(1 << 20));
        Ok(())
    }),
    path!("write-buffer-manager-create", "a write buffer manager made and dropped", 200, nothing, |_, _| {
        drop(WriteBufferManager::new_write_buffer_manager(1 << 20, false));
        Ok(())
    }),
    path!("env-create", "an Env made and dropped", 200, nothing, |_, _| {
        drop(Env::new().map_err(rocks("Env::new"))?);
        Ok(())
    }),
    path!("load-latest-options", "Options::load_latest of a closed DB's options file", 20, closed_db, |f, _| {
        let env = Env::new().map_err(rocks("Env::new"))?;
        drop(
            Options::load_latest(f.dir.join("db"), env, false, Cache::new_lru_cache(1 << 20))
                .map_err(rocks("load_latest"))?,
        );
        Ok(())
    }),
    path!(
        "load-latest-missing-fails",
        "Options::load_latest of a directory with no DB (error)",
        200,
        nothing,
        |f, _| {
            let env = Env::new().map_err(rocks("Env::new"))?;
            must_fail(
                "load_latest of a missing DB",
                Options::load_latest(f.dir.join("missing"), env, false, Cache::new_lru_cache(1 << 20)),
            )
        }
    ),
    // Metadata of a live DB.
    path!("cf-metadata", "get_column_family_metadata", 200, open_db, |f, _| {
        drop(f.db()?.get_column_family_metadata());
        Ok(())
    }),
    path!("live-files", "live_files", 200, open_db, |f, _| {
        f.db()?.live_files().map_err(rocks("live_files"))?;
        Ok(())
    }),
    path!("property-int-value", "property_int_value of rocksdb.estimate-num-keys", 200, open_db, |f, _| {
        f.db()?.property_int_value("rocksdb.estimate-num-keys").map_err(rocks("property_int_value"))?;
        Ok(())
    }),
    // Reads and writes.
    path!("put-get", "put and get of one key", 200, open_db, |f, i| {
        let db = f.db()?;
        db.put(format!("key{:04}", i % 100), [9u8; 64]).map_err(rocks("put"))?;
        db.get(format!("key{:04}", i % 100)).map_err(rocks("get"))?;
        Ok(())
    }),
    path!("write-batch", "a WriteBatch of a put and a delete, written", 200, open_db, |f, i| {
        let mut batch = WriteBatch::default();
        batch.put(format!("b{}", i % 32), [1u8; 32]);
        batch.delete(format!("b{}", (i + 1) % 32));
        f.db()?.write(batch).map_err(rocks("write"))
    }),
    path!("iterator", "an iterator over the 100 keys", 50, open_db, |f, _| {
        for item in f.db()?.iterator(IteratorMode::Start) {
            item.map_err(rocks("iterate"))?;
        }
        Ok(())
    }),
    path!("raw-iterator-seek", "a raw iterator, seek and ten steps", 200, open_db, |f, i| {
        let db = f.db()?;
        let mut it = db.raw_iterator();
        it.seek(format!("key{:04}", i % 90));
        for _ in 0..10 {
            if !it.valid() {
                break;
            }
            it.next();
        }
        it.status().map_err(rocks("raw iterator"))
    }),
    path!("snapshot-get", "a snapshot, a get through it, dropped", 200, open_db, |f, i| {
        let db = f.db()?;
        let snapshot = db.snapshot();
        snapshot.get(format!("key{:04}", i % 100)).map_err(rocks("snapshot get"))?;
        Ok(())
    }),
    path!("get-pinned", "get_pinned of one key", 200, open_db, |f, i| {
        f.db()?.get_pinned(format!("key{:04}", i % 100)).map_err(rocks("get_pinned"))?;
        Ok(())
    }),
    path!("property-value", "property_value of rocksdb.estimate-num-keys", 200, open_db, |f, _| {
        f.db()?.property_value("rocksdb.estimate-num-keys").map_err(rocks("property_value"))?;
        Ok(())
    }),
    path!("read-only-write-fails", "put into a read-only DB (error)", 200, read_only_db, |f, _| {
        must_fail("put into a read-only DB", f.db()?.put(b"k", b"v"))
    }),
    path!("checkpoint", "a checkpoint into a new directory, removed", 5, open_db, |f, i| {
        let target = f.dir.join(format!("checkpoint{i}"));
        Checkpoint::new(f.db()?)
            .map_err(rocks("checkpoint"))?
            .create_checkpoint(&target)
            .map_err(rocks("create_checkpoint"))?;
        std::fs::remove_dir_all(&target).map_err(|source| SweepError::Io { what: "remove checkpoint", source })
    }),
    // Transactions.
    path!("transaction-commit", "a TransactionDB transaction: put, get, commit", 200, transaction_db, |f, i| {
        let db = f.txn_db.as_ref().ok_or(SweepError::Fixture("no transaction DB"))?;
        let txn = db.transaction();
        txn.put(format!("t{}", i % 32), b"v").map_err(rocks("transaction put"))?;
        txn.get(format!("t{}", i % 32)).map_err(rocks("transaction get"))?;
        txn.commit().map_err(rocks("commit"))
    }),
    path!("optimistic-commit", "an OptimisticTransactionDB transaction: put, commit", 200, optimistic_db, |f, i| {
        let db = f.optimistic.as_ref().ok_or(SweepError::Fixture("no optimistic DB"))?;
        let txn = db.transaction();
        txn.put(format!("o{}", i % 32), b"v").map_err(rocks("transaction put"))?;
        txn.commit().map_err(rocks("commit"))
    }),
];

/// Leaks planted on purpose, run only when named: the sweep's own proof that it can fail. One
/// leaks a native options object per call (the KAFKA-20616 class), one 16 bytes per call (the
/// size of the column-family handle 0.24 leaks per failed `create_cf`).
pub const PLANTED: &[SweepPath] = &[
    path!("planted-forget-options", "an Options made and forgotten (planted leak)", 20, nothing, |_, _| {
        std::mem::forget(Options::default());
        Ok(())
    }),
    path!("planted-16-bytes", "16 bytes allocated and forgotten (planted leak)", 200, nothing, |_, _| {
        std::mem::forget(std::hint::black_box(vec![0u8; 16]));
        Ok(())
    }),
];

/// The path of that name, the planted ones included.
pub fn path(name: &str) -> Option<&'static SweepPath> {
    all_paths().chain(PLANTED).find(|p| p.name == name)
}
