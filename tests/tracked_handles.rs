//! Every tracked RocksDB handle kind: created, live 1; dropped, live 0; forgotten, reported with
//! this file's line and the owner path. Also: deferred release of a cache held by a DB, declared
//! shared handles, swallowed close errors, column families in both thread modes. Each test has its
//! own ledger, so they run in parallel without seeing each other's handles.
#![cfg(feature = "rocksdb")]

use leakcheck::tracked::*;
use leakcheck::{assert_no_leaks, owner_scope, HandleKind, Ledger, Settle};
use rocksdb::{IteratorMode, MultiThreaded, SingleThreaded};

fn opts(ledger: &Ledger) -> TrackedOptions {
    let mut o = TrackedOptions::new(ledger);
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

/// Asserts that `make` registers exactly one handle of `kind` that is released when it drops,
/// and that a forgotten one is reported at the line that made it, with the owner path.
fn check_kind<T>(ledger: &Ledger, kind: HandleKind, make: impl Fn() -> (T, u32)) {
    let before = ledger.live(kind);
    let (handle, _) = make();
    assert_eq!(ledger.live(kind), before + 1, "{kind} after create");
    drop(handle);
    assert_eq!(ledger.live(kind), before, "{kind} after drop");

    let (handle, line) = {
        let _scope = owner_scope("task 0_1");
        let _seg = owner_scope("segment 7");
        make()
    };
    std::mem::forget(handle);
    let report = ledger.report();
    let site = format!("tests/tracked_handles.rs:{line}:");
    let group = report
        .retained
        .iter()
        .find(|g| g.kind == kind && g.site.as_deref().is_some_and(|s| s.starts_with(&site)))
        .unwrap_or_else(|| panic!("forgotten {kind} not reported at {site}:\n{report}"));
    assert_eq!(group.count, 1, "{kind}\n{report}");
    assert_eq!(group.owner.as_deref(), Some("task 0_1 / segment 7"), "{kind}");
}

#[test]
fn options_like_kinds() {
    let ledger = Ledger::new();
    check_kind(&ledger, HandleKind::Options, || (TrackedOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::BlockBasedOptions, || (TrackedBlockBasedOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::Cache, || (TrackedCache::new_lru(&ledger, 1 << 20), line!()));
    check_kind(&ledger, HandleKind::Cache, || (TrackedCache::new_hyper_clock(&ledger, 1 << 20, 4096), line!()));
    check_kind(&ledger, HandleKind::WriteBufferManager, || {
        (TrackedWriteBufferManager::new(&ledger, 1 << 20, false), line!())
    });
    check_kind(&ledger, HandleKind::Env, || (TrackedEnv::mem_env(&ledger).expect("env"), line!()));
    check_kind(&ledger, HandleKind::ReadOptions, || (TrackedReadOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::WriteOptions, || (TrackedWriteOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::WriteBatch, || (TrackedWriteBatch::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::ColumnFamilyDescriptor, || {
        (TrackedCfDescriptor::new("cf", TrackedOptions::new(&ledger)), line!())
    });
    check_kind(&ledger, HandleKind::TransactionDbOptions, || (TrackedTransactionDbOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::TransactionOptions, || (TrackedTransactionOptions::new(&ledger), line!()));
    check_kind(&ledger, HandleKind::RestoreOptions, || (TrackedRestoreOptions::new(&ledger), line!()));
    let dir = tempfile::tempdir().expect("tempdir");
    check_kind(&ledger, HandleKind::BackupEngineOptions, || {
        (TrackedBackupEngineOptions::new(&ledger, dir.path()).expect("backup options"), line!())
    });
}

#[test]
fn transaction_db_and_transaction_borrowing_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let txn_opts = TrackedTransactionDbOptions::new(&ledger);
    check_kind(&ledger, HandleKind::TransactionDb, || {
        let n = ledger.report().kinds.get("TransactionDB").map_or(0, |c| c.created);
        let path = dir.path().join(format!("txn{n}"));
        (TrackedTransactionDb::<SingleThreaded>::open(&o, &txn_opts, path).expect("open"), line!())
    });
    let db = TrackedTransactionDb::<SingleThreaded>::open(&o, &txn_opts, dir.path().join("main")).expect("open");
    db.put(b"k", b"v").expect("put");
    check_kind(&ledger, HandleKind::Transaction, || (db.transaction(), line!()));
    let (w, t) = (TrackedWriteOptions::new(&ledger), TrackedTransactionOptions::new(&ledger));
    check_kind(&ledger, HandleKind::Transaction, || (db.transaction_opt(&w, &t), line!()));
    check_kind(&ledger, HandleKind::Iterator, || (db.iterator(IteratorMode::Start), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || (db.raw_iterator(), line!()));
    check_kind(&ledger, HandleKind::Snapshot, || (db.snapshot(), line!()));
    check_kind(&ledger, HandleKind::Checkpoint, || {
        (TrackedTransactionDbCheckpoint::new(&db).expect("checkpoint"), line!())
    });
    let txn = db.transaction();
    txn.put(b"t", b"1").expect("put in transaction");
    check_kind(&ledger, HandleKind::Iterator, || (txn.iterator(IteratorMode::Start), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || (txn.raw_iterator(), line!()));
    check_kind(&ledger, HandleKind::Snapshot, || (txn.snapshot(), line!()));
    // A transaction sees its own write; the DB sees it once committed.
    let seen: Vec<_> = txn.iterator(IteratorMode::Start).collect::<Result<_, _>>().expect("iterate");
    assert_eq!(seen.len(), 2);
    assert_eq!(db.get(b"t").expect("get"), None);
    txn.commit().expect("commit");
    assert_eq!(db.get(b"t").expect("get").as_deref(), Some(&b"1"[..]));
    // A multi-threaded transaction DB's column family references are handles of their own.
    let cfs = vec![TrackedCfDescriptor::new("offsets", opts(&ledger))];
    let mt = TrackedTransactionDb::<MultiThreaded>::open_cf_descriptors(&o, &txn_opts, dir.path().join("mt"), cfs)
        .expect("open");
    check_kind(&ledger, HandleKind::BoundColumnFamily, || (mt.cf_handle("offsets").expect("cf"), line!()));
    assert!(mt.cf_handle("missing").is_none());
}

#[test]
fn a_transaction_db_its_transactions_and_a_backup_release_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    {
        let o = opts(&ledger);
        let txn_opts = TrackedTransactionDbOptions::new(&ledger);
        let cfs = vec![TrackedCfDescriptor::new("offsets", opts(&ledger))];
        let db = TrackedTransactionDb::<SingleThreaded>::open_cf_descriptors(&o, &txn_opts, dir.path().join("t"), cfs)
            .expect("open");
        // offsets and the implicit default.
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 2);
        let txn = db.transaction();
        assert_eq!(ledger.live(HandleKind::Transaction), 1);
        // The transaction holds its DB.
        let report = ledger.report();
        let group = report.retained.iter().find(|g| g.kind == HandleKind::Transaction).expect("live transaction");
        assert!(group.holds.iter().any(|h| h.starts_with("TransactionDB")), "{report}");
        txn.put(b"a", b"1").expect("put");
        drop(txn); // rolled back, released
        assert_eq!(ledger.live(HandleKind::Transaction), 0);
        assert_eq!(db.get(b"a").expect("get"), None);
        db.close().into_result().expect("close");

        let plain = TrackedDb::<SingleThreaded>::open(&o, dir.path().join("plain")).expect("open");
        plain.put(b"b", b"2").expect("put");
        let env = TrackedEnv::new(&ledger).expect("env");
        let backup_opts = TrackedBackupEngineOptions::new(&ledger, dir.path().join("backups")).expect("options");
        let mut engine = TrackedBackupEngine::open(&backup_opts, &env).expect("engine");
        drop(env); // the engine keeps it
        assert_eq!(ledger.live(HandleKind::Env), 1);
        engine.create_new_backup_flush(&*plain, true).expect("backup");
        plain.close().into_result().expect("close");
        let restore = TrackedRestoreOptions::new(&ledger);
        let to = dir.path().join("restored");
        engine.restore_from_latest_backup(&to, &to, &restore).expect("restore");
        drop(engine);
        let back = TrackedDb::<SingleThreaded>::open(&o, &to).expect("open restored");
        assert_eq!(back.get(b"b").expect("get").as_deref(), Some(&b"2"[..]));
        back.close().into_result().expect("close");
    }
    assert_no_leaks!(ledger);
}

#[test]
fn db_and_db_borrowing_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    check_kind(&ledger, HandleKind::Db, || {
        let path = dir.path().join(format!("db{}", ledger.report().kinds.get("DB").map_or(0, |c| c.created)));
        (TrackedDb::<SingleThreaded>::open(&o, path).expect("open"), line!())
    });
    let db = TrackedDb::<SingleThreaded>::open(&o, dir.path().join("main")).expect("open");
    db.put(b"k", b"v").expect("put");
    check_kind(&ledger, HandleKind::Iterator, || (db.iterator(IteratorMode::Start), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || (db.raw_iterator(), line!()));
    check_kind(&ledger, HandleKind::Snapshot, || (db.snapshot(), line!()));
    check_kind(&ledger, HandleKind::Checkpoint, || (TrackedCheckpoint::new(&db).expect("checkpoint"), line!()));
    check_kind(&ledger, HandleKind::SstFileWriter, || (TrackedSstFileWriter::create(&o), line!()));
    // Iterators really iterate.
    let items: Vec<_> = db.iterator(IteratorMode::Start).collect::<Result<_, _>>().expect("iterate");
    assert_eq!(items.len(), 1);
}

#[test]
fn column_families_single_threaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let cfs = vec![TrackedCfDescriptor::new("data", opts(&ledger)), TrackedCfDescriptor::new("offsets", opts(&ledger))];
    let mut db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&o, dir.path(), cfs).expect("open");
    // data, offsets and the implicit default.
    assert_eq!(ledger.live(HandleKind::ColumnFamily), 3);
    assert_eq!(ledger.live(HandleKind::ColumnFamilyDescriptor), 0, "descriptors are consumed");
    assert_eq!(ledger.live(HandleKind::Options), 1, "only the DB options are still held by the test");
    db.create_cf("extra", &o).expect("create cf");
    assert_eq!(ledger.live(HandleKind::ColumnFamily), 4);
    db.drop_cf("extra").expect("drop cf");
    assert_eq!(ledger.live(HandleKind::ColumnFamily), 3);
    assert!(db.drop_cf("missing").is_err());
    let cf = db.cf_handle("data").expect("cf");
    db.put_cf(cf, b"k", b"v").expect("put");
    drop(db);
    drop(o);
    assert_no_leaks!(ledger);
}

#[test]
fn column_families_multi_threaded_bound_references() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let db = TrackedDb::<MultiThreaded>::open_cf_descriptors(
        &o,
        dir.path(),
        vec![TrackedCfDescriptor::new("data", opts(&ledger))],
    )
    .expect("open");
    db.create_cf("extra", &o).expect("create cf");
    let bound = db.cf_handle("extra").expect("cf");
    let again = bound.clone();
    assert_eq!(ledger.live(HandleKind::BoundColumnFamily), 1, "clones share one reference");
    db.put_cf(&bound, b"k", b"v").expect("put");
    // Dropping the column family while a bound reference lives defers the native release.
    db.drop_cf("extra").expect("drop cf");
    assert_eq!(ledger.live(HandleKind::ColumnFamily), 3);
    let report = ledger.report();
    let cf =
        report.retained.iter().find(|g| g.kind == HandleKind::ColumnFamily && g.wrapper_dropped).expect("deferred cf");
    assert!(cf.held_by[0].starts_with("BoundColumnFamily"), "{report}");
    drop((bound, again));
    assert_eq!(ledger.live(HandleKind::ColumnFamily), 2);
    assert!(db.cf_handle("missing").is_none());
    drop(db);
    drop(o);
    assert_no_leaks!(ledger);
}

#[test]
fn a_cache_dropped_while_its_db_lives_is_held_by_that_db_and_released_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let cache = TrackedCache::new_lru(&ledger, 8 << 20);
    let mut table = TrackedBlockBasedOptions::new(&ledger);
    table.set_block_cache(&cache);
    let mut o = opts(&ledger);
    o.set_block_based_table_factory(&table);
    let db = TrackedDb::<SingleThreaded>::open(&o, dir.path()).expect("open");
    drop((cache, table, o));

    assert_eq!(ledger.live(HandleKind::Cache), 1, "the DB still holds the native cache");
    let report = ledger.report();
    let group = report.retained.iter().find(|g| g.kind == HandleKind::Cache).expect("cache");
    assert!(group.wrapper_dropped);
    assert_eq!(group.held_by.len(), 1, "{report}");
    assert!(group.held_by[0].starts_with(&format!("DB #{}", db.token().id())), "{report}");
    let db_group = report.retained.iter().find(|g| g.kind == HandleKind::Db).expect("db");
    assert!(db_group.holds.iter().any(|h| h.starts_with("Cache #")), "{report}");

    drop(db);
    assert_eq!(ledger.live(HandleKind::Cache), 0);
    assert_no_leaks!(ledger);
}

#[test]
fn declared_shared_cache_and_write_buffer_manager_pass_one_extra_cache_fails_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let shared_cache = TrackedCache::new_lru(&ledger, 8 << 20);
    let wbm = TrackedWriteBufferManager::new_with_cache(&ledger, 4 << 20, false, &shared_cache);
    ledger.declare_shared(shared_cache.token());
    ledger.declare_shared(wbm.token());
    {
        let mut table = TrackedBlockBasedOptions::new(&ledger);
        table.set_block_cache(&shared_cache);
        let mut o = opts(&ledger);
        o.set_block_based_table_factory(&table);
        o.set_write_buffer_manager(&wbm);
        let db = TrackedDb::<SingleThreaded>::open(&o, dir.path()).expect("open");
        db.put(b"k", b"v").expect("put");
    }
    ledger.verify_with(Settle::NONE).expect("only declared handles live");

    let line = line!() + 1;
    let extra = TrackedCache::new_lru(&ledger, 8 << 20);
    let err = ledger.verify_with(Settle::NONE).expect_err("undeclared cache");
    let msg = err.to_string();
    assert!(msg.contains("Cache") && msg.contains(&format!("tracked_handles.rs:{line}:")), "{msg}");
    assert_eq!(err.report.retained_of(HandleKind::Cache), 1);
    drop(extra);
    drop((wbm, shared_cache));
    assert_eq!(ledger.live_total(), 0);
}

#[test]
fn a_close_error_dropped_unobserved_shows_as_swallowed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let db = TrackedDb::<SingleThreaded>::open(&o, dir.path()).expect("open");
    // A real RocksDB error: a synced write with the WAL disabled is rejected.
    let mut w = TrackedWriteOptions::new(&ledger);
    w.set_sync(true);
    w.disable_wal(true);
    let marker = db.put_opt(b"closed", b"1", &w);
    assert!(marker.is_err());
    let _ = leakcheck::CloseResult::new(&ledger, "segment store", marker);
    let _ = db.close(); // succeeds: nothing swallowed from it
    drop((w, o));
    let report = ledger.report();
    assert_eq!(report.retained_count(), 0, "{report}");
    assert_eq!(report.swallowed_close_errors.len(), 1, "{report}");
    assert!(report.swallowed_close_errors[0].error.contains("Invalid argument"), "{report}");
}

#[test]
fn write_batches_are_consumed_by_write_and_iterators_own_their_read_options() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let db = TrackedDb::<SingleThreaded>::open(&o, dir.path()).expect("open");
    let mut batch = TrackedWriteBatch::new(&ledger);
    batch.put(b"a", b"1");
    db.write(batch).expect("write");
    assert_eq!(ledger.live(HandleKind::WriteBatch), 0);
    let ro = TrackedReadOptions::new(&ledger);
    let it = db.iterator_opt(IteratorMode::Start, ro);
    assert_eq!(ledger.live(HandleKind::ReadOptions), 1, "owned by the iterator");
    assert_eq!(it.count(), 1);
    assert_eq!(ledger.live(HandleKind::ReadOptions), 0);
    let snap = db.snapshot();
    assert_eq!(snap.iterator(IteratorMode::Start).count(), 1);
    drop(snap);
    drop(db);
    drop(o);
    assert_no_leaks!(ledger);
}

/// `clone()` on a wrapper whose rust-rocksdb type is `Clone` is the wrapper's own: the copy is a
/// handle of its own, reported where it was cloned when forgotten. (Before, method resolution went
/// through `Deref` to rust-rocksdb's `clone` and returned an untracked object: a cloned cache kept
/// the native cache alive after the ledger counted it released.)
#[test]
fn clones_are_tracked_handles_of_their_own() {
    let ledger = Ledger::new();
    let cache = TrackedCache::new_lru(&ledger, 1 << 20);
    check_kind(&ledger, HandleKind::Cache, || (cache.clone(), line!()));
    let options = TrackedOptions::new(&ledger);
    check_kind(&ledger, HandleKind::Options, || (options.clone(), line!()));
    let manager = TrackedWriteBufferManager::new_with_cache(&ledger, 1 << 20, false, &cache);
    check_kind(&ledger, HandleKind::WriteBufferManager, || (manager.clone(), line!()));
    let env = TrackedEnv::mem_env(&ledger).expect("env");
    check_kind(&ledger, HandleKind::Env, || (env.clone(), line!()));

    // A clone outliving its original keeps the native cache counted live.
    let solo = TrackedCache::new_lru(&ledger, 1 << 20);
    let with_solo = ledger.live(HandleKind::Cache);
    let clone = solo.clone();
    drop(solo);
    assert_eq!(ledger.live(HandleKind::Cache), with_solo, "the clone is live in place of the original");
    drop(clone);
    assert_eq!(ledger.live(HandleKind::Cache), with_solo - 1);
    drop((cache, options, manager, env));
}

/// A read-only DB has no WAL to sync: `close()` succeeds and releases everything (it used to
/// fail with "Not supported operation in read only mode").
#[test]
fn a_read_only_db_closes_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let writer = TrackedDb::<SingleThreaded>::open(&o, dir.path()).expect("open");
    writer.put(b"k", b"v").expect("put");
    writer.close().into_result().expect("close the writer");
    let reader = TrackedDb::<SingleThreaded>::open_for_read_only(&o, dir.path(), false).expect("open read-only");
    assert_eq!(reader.get(b"k").expect("get").as_deref(), Some(&b"v"[..]));
    reader.close().into_result().expect("close a read-only DB");
    let cfs = TrackedCfDescriptor::new("default", TrackedOptions::new(&ledger));
    let reader = TrackedDb::<SingleThreaded>::open_cf_descriptors_read_only(&o, dir.path(), [cfs], false)
        .expect("open read-only");
    reader.close().into_result().expect("close a read-only DB with column families");
    drop(o);
    assert_no_leaks!(ledger);
}

/// `DB::list_cf` without naming rust-rocksdb's DB type, which clippy.toml forbids.
#[test]
fn column_families_are_listed_through_the_wrapper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let cfs = [TrackedCfDescriptor::new("offsets", TrackedOptions::new(&ledger))];
    TrackedDb::<SingleThreaded>::open_cf_descriptors(&o, dir.path(), cfs)
        .expect("open")
        .close()
        .into_result()
        .expect("close");
    let mut names = TrackedDb::<SingleThreaded>::list_cf(&o, dir.path()).expect("list");
    names.sort();
    assert_eq!(names, ["default", "offsets"]);
    assert!(TrackedDb::<SingleThreaded>::list_cf(&o, dir.path().join("missing")).is_err());
}

/// Handles leaked at one line are one row of the report, however many holders they have: 50
/// caches each held by its own write buffer manager, all forgotten at one line, are one Cache
/// group of 50 whose holders are summarized (they were 50 groups of one).
#[test]
fn one_leaking_line_is_one_row_with_its_holders_summarized() {
    let ledger = Ledger::new();
    let _owner = owner_scope("task 0_1");
    for _ in 0..50 {
        let cache = TrackedCache::new_lru(&ledger, 1 << 16);
        let manager = TrackedWriteBufferManager::new_with_cache(&ledger, 1 << 16, false, &cache);
        std::mem::forget((cache, manager));
    }
    let report = ledger.report();
    let caches: Vec<_> = report.retained.iter().filter(|g| g.kind == HandleKind::Cache).collect();
    assert_eq!(caches.len(), 1, "{report}");
    assert_eq!(caches[0].count, 50);
    assert_eq!(caches[0].held_by.len(), 1, "{report}");
    assert!(
        caches[0].held_by[0].starts_with("50 x WriteBufferManager created at tests/tracked_handles.rs:"),
        "{report}"
    );
    let managers: Vec<_> = report.retained.iter().filter(|g| g.kind == HandleKind::WriteBufferManager).collect();
    assert_eq!((managers.len(), managers[0].count), (1, 50), "{report}");
    assert!(report.to_string().lines().count() < 20, "{report}");
}

/// The iterators a snapshot makes, and a column family's full iterator, are tracked: before, the
/// snapshot's `iterator_opt` and `raw_iterator*` and the DB's `full_iterator_cf` went through
/// `Deref` to rust-rocksdb and returned iterators the ledger never saw (an iterator pins memtables
/// and blocks for as long as it lives).
#[test]
fn snapshot_iterators_and_full_column_family_iterators_are_tracked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let cfs = [TrackedCfDescriptor::new("data", opts(&ledger))];
    let db = TrackedDb::<SingleThreaded>::open_cf_descriptors(&o, dir.path(), cfs).expect("open");
    let cf = db.cf_handle("data").expect("data cf");
    db.put(b"k", b"v").expect("put");
    db.put_cf(cf, b"k", b"v").expect("put");
    let snapshot = db.snapshot();
    check_kind(&ledger, HandleKind::Iterator, || {
        (snapshot.iterator_opt(IteratorMode::Start, TrackedReadOptions::new(&ledger)), line!())
    });
    check_kind(&ledger, HandleKind::RawIterator, || (snapshot.raw_iterator(), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || {
        (snapshot.raw_iterator_opt(TrackedReadOptions::new(&ledger)), line!())
    });
    check_kind(&ledger, HandleKind::Iterator, || {
        (snapshot.iterator_cf_opt(cf, TrackedReadOptions::new(&ledger), IteratorMode::Start), line!())
    });
    check_kind(&ledger, HandleKind::RawIterator, || (snapshot.raw_iterator_cf(cf), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || {
        (snapshot.raw_iterator_cf_opt(cf, TrackedReadOptions::new(&ledger)), line!())
    });
    check_kind(&ledger, HandleKind::Iterator, || (db.full_iterator_cf(cf, IteratorMode::Start), line!()));
    // They read at the snapshot.
    db.put(b"k2", b"v2").expect("put after the snapshot");
    db.put_cf(cf, b"k2", b"v2").expect("put after the snapshot");
    let mut raw = snapshot.raw_iterator();
    raw.seek_to_first();
    let mut keys = Vec::new();
    while raw.valid() {
        keys.push(raw.key().map(<[u8]>::to_vec));
        raw.next();
    }
    assert_eq!(keys, [Some(b"k".to_vec())]);
    let full: Vec<_> = db.full_iterator_cf(cf, IteratorMode::Start).collect::<Result<_, _>>().expect("iterate");
    assert_eq!(full.len(), 2);
}

/// Time-to-live and secondary opens are tracked DBs: registered at the opening line, released at
/// close (a secondary has no WAL to sync, like a read-only DB), reported when forgotten.
#[test]
fn ttl_and_secondary_opens_are_tracked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    let ttl = std::time::Duration::from_secs(3600);
    check_kind(&ledger, HandleKind::Db, || {
        let path = dir.path().join(format!("ttl{}", ledger.report().kinds.get("DB").map_or(0, |c| c.created)));
        (TrackedDb::<SingleThreaded>::open_with_ttl(&o, path, ttl).expect("open with ttl"), line!())
    });
    let cfs = [TrackedCfDescriptor::new("data", opts(&ledger))];
    let primary = TrackedDb::<SingleThreaded>::open_cf_descriptors_with_ttl(&o, dir.path().join("primary"), cfs, ttl)
        .expect("open");
    primary.put(b"k", b"v").expect("put");
    primary.flush().expect("flush");
    check_kind(&ledger, HandleKind::Db, || {
        let n = ledger.report().kinds.get("DB").map_or(0, |c| c.created);
        let (primary, secondary) = (dir.path().join("primary"), dir.path().join(format!("secondary{n}")));
        // The call and `line!()` on one line: the ledger's site is the call's.
        (TrackedDb::<SingleThreaded>::open_as_secondary(&o, primary, secondary).expect("secondary"), line!())
    });
    let cfs = [TrackedCfDescriptor::new("data", opts(&ledger))];
    let secondary = TrackedDb::<SingleThreaded>::open_cf_descriptors_as_secondary(
        &o,
        dir.path().join("primary"),
        dir.path().join("s"),
        cfs,
    )
    .expect("open as secondary");
    secondary.try_catch_up_with_primary().expect("catch up");
    // A TTL DB stores a 4-byte timestamp after each value; a secondary reads it raw.
    assert!(secondary.get(b"k").expect("get").is_some_and(|v| v.starts_with(b"v")));
    let before = ledger.live(HandleKind::ColumnFamily);
    secondary.close().into_result().expect("a secondary closes without error");
    assert_eq!(ledger.live(HandleKind::ColumnFamily), before - 2, "data and default released");
    primary.close().into_result().expect("close the primary");
}

#[test]
fn optimistic_transaction_db_and_its_transactions_kinds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    let o = opts(&ledger);
    check_kind(&ledger, HandleKind::OptimisticTransactionOptions, || {
        (TrackedOptimisticTransactionOptions::new(&ledger), line!())
    });
    check_kind(&ledger, HandleKind::OptimisticTransactionDb, || {
        let n = ledger.report().kinds.get("OptimisticTransactionDB").map_or(0, |c| c.created);
        let path = dir.path().join(format!("o{n}"));
        (TrackedOptimisticTransactionDb::<SingleThreaded>::open(&o, path).expect("open"), line!())
    });
    let db = TrackedOptimisticTransactionDb::<SingleThreaded>::open(&o, dir.path().join("main")).expect("open");
    db.put(b"k", b"v").expect("put");
    check_kind(&ledger, HandleKind::Transaction, || (db.transaction(), line!()));
    let (w, t) = (TrackedWriteOptions::new(&ledger), TrackedOptimisticTransactionOptions::new(&ledger));
    check_kind(&ledger, HandleKind::Transaction, || (db.transaction_opt(&w, &t), line!()));
    check_kind(&ledger, HandleKind::Iterator, || (db.iterator(IteratorMode::Start), line!()));
    check_kind(&ledger, HandleKind::RawIterator, || (db.raw_iterator(), line!()));
    check_kind(&ledger, HandleKind::Snapshot, || (db.snapshot(), line!()));
    check_kind(&ledger, HandleKind::WriteBatch, || (TrackedWriteBatch::for_transactions(&ledger), line!()));
    check_kind(&ledger, HandleKind::Checkpoint, || {
        (TrackedCheckpoint::of_optimistic(&db).expect("checkpoint"), line!())
    });
    let target = dir.path().join("checkpoint");
    TrackedCheckpoint::of_optimistic(&db).expect("checkpoint").create_checkpoint(&target).expect("create");
    assert!(target.join("CURRENT").exists(), "a checkpoint of the optimistic DB's base DB");
    // A transaction's reads are tracked too, and it holds its DB.
    let txn = db.transaction();
    check_kind(&ledger, HandleKind::Iterator, || (txn.iterator(IteratorMode::Start), line!()));
    let report = ledger.report();
    let group =
        report.retained.iter().find(|g| g.kind == HandleKind::Transaction && g.count == 1 && !g.wrapper_dropped);
    assert!(
        group.is_some_and(|g| g.holds.iter().any(|h| h.starts_with("OptimisticTransactionDB"))),
        "a live optimistic transaction holds its DB:\n{report}"
    );
    drop(txn);
}

#[test]
fn an_optimistic_transaction_db_commits_conflicts_and_releases_everything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::new();
    {
        let o = opts(&ledger);
        let cfs = vec![TrackedCfDescriptor::new("offsets", opts(&ledger))];
        let mut db =
            TrackedOptimisticTransactionDb::<SingleThreaded>::open_cf_descriptors(&o, dir.path(), cfs).expect("open");
        // offsets and the implicit default; the DB holds what the options hold.
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 2);
        assert_eq!(ledger.live(HandleKind::OptimisticTransactionDb), 1);
        db.create_cf("extra", &o).expect("create cf");
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 3);
        assert!(db.create_cf("extra", &o).is_err(), "an existing name");
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 3, "a failed create registers nothing");
        db.drop_cf("extra").expect("drop cf");
        assert!(db.drop_cf("extra").is_err());
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 2);
        assert_eq!(db.cf_names(), ["default", "offsets"]);

        // A batch of the optimistic DB's own kind is consumed by write.
        let mut batch = TrackedWriteBatch::for_transactions(&ledger);
        batch.put(b"a", b"0");
        db.write(batch).expect("write");
        assert_eq!(ledger.live(HandleKind::WriteBatch), 0);

        // Commit: the write shows; conflict: the commit fails and the transaction is released.
        let txn = db.transaction();
        txn.put(b"a", b"1").expect("put");
        txn.commit().expect("commit");
        assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"1"[..]));
        let txn = db.transaction();
        txn.get_for_update(b"a", true).expect("read for update");
        txn.put(b"a", b"2").expect("put");
        db.put(b"a", b"outside").expect("a write outside the transaction");
        let conflict = txn.commit().expect_err("an optimistic commit after a conflicting write fails");
        assert_eq!(conflict.kind(), rocksdb::ErrorKind::Busy, "{conflict}");
        assert_eq!(ledger.live(HandleKind::Transaction), 0);
        assert_eq!(db.get(b"a").expect("get").as_deref(), Some(&b"outside"[..]));
        db.close().into_result().expect("close");

        // Multi-threaded: column family references are handles of their own.
        let mt = TrackedOptimisticTransactionDb::<MultiThreaded>::open(&o, dir.path().join("mt")).expect("open");
        mt.create_cf("extra", &o).expect("create cf");
        let bound = mt.cf_handle("extra").expect("cf");
        assert_eq!(ledger.live(HandleKind::BoundColumnFamily), 1);
        mt.put_cf(&bound, b"k", b"v").expect("put");
        drop(bound);
        mt.drop_cf("extra").expect("drop cf");
        mt.close().into_result().expect("close");

        // The pessimistic transaction DB creates and drops column families through the ledger too.
        let txn_opts = TrackedTransactionDbOptions::new(&ledger);
        let mut pessimistic =
            TrackedTransactionDb::<SingleThreaded>::open(&o, &txn_opts, dir.path().join("p")).expect("open");
        pessimistic.create_cf("extra", &o).expect("create cf");
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 1);
        pessimistic.drop_cf("extra").expect("drop cf");
        assert_eq!(ledger.live(HandleKind::ColumnFamily), 0);
        pessimistic.close().into_result().expect("close");
    }
    assert_no_leaks!(ledger);
}
