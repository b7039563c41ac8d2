//! The operations a fuzz program is made of: each a call (or a short run of calls) of the
//! binding, written once as Rust that both runs here and is printed in a snippet (the macro keeps
//! the body's tokens as text), with what it needs (an open DB, a closed one, nothing), what its
//! name argument means, which argument classes make sense for it and which binding functions it
//! reaches.
//!
//! A body sees `db` (`&mut DB` when the op needs an open DB; `&mut Option<DB>` for the ops that
//! close and reopen it), `dir` (the cycle's directory: the fixture's DB is `dir/db`) and the
//! arguments `name: &str`, `key: &[u8]`, `value: &[u8]` and `n: u64`, and evaluates to
//! `Result<(), rocksdb::Error>`: an error is the error path the class asked for, not a failure.
//!
//! One entry per op, declared compactly: its header (`[slot] name, needs, effect, role, [args],
//! [classes], [reached functions]`) on one line, its body under it (`fuzz_op! { .. }` with braces,
//! which rustfmt leaves as written).

// Each op's body runs in a closure called where it is made, so that `?` in it returns the op's
// error (the snippet writes it the same way).
#![allow(clippy::redundant_closure_call)]
// Deprecated functions are still the binding's, and still called.
#![allow(deprecated)]

use rocksdb::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, CompactOptions, CompactionDecision, Direction, Env, FlushOptions,
    IteratorMode, MergeOperands, OptimisticTransactionDB, Options, ReadOptions, SingleThreaded, SliceTransform,
    SstFileWriter, TransactionDB, TransactionDBOptions, WriteBatch, WriteBufferManager, WriteOptions, DB,
};

use super::prelude::{created, reopen};

use super::op::{fuzz_op, Arg, ArgClass, Effect, Needs, Op, Ran, Role};

/// An associative merge operator: the operands appended, cut at 256 bytes (the list sweep's too).
pub(crate) fn concat(_key: &[u8], existing: Option<&[u8]>, operands: &MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    out.truncate(256);
    Some(out)
}

/// The source of `concat` (a merge operator some ops use), for snippets.
pub const CONCAT: &str =
    "fn concat(_key: &[u8], existing: Option<&[u8]>, operands: &rocksdb::MergeOperands) -> Option<Vec<u8>> {
    let mut out = existing.map(<[u8]>::to_vec).unwrap_or_default();
    for op in operands {
        out.extend_from_slice(op);
    }
    out.truncate(256);
    Some(out)
}";

/// Every op of the model (the planted ones are in `planted::PLANTED_OPS`).
pub const OPS: &[Op] = &[
    // The fixture's lifecycle.
    fuzz_op! { slot "close", Open, Close, None, [], [Valid], ["DB::drop"],
    |db, dir, name, key, value, n| {
        drop(db.take());
        Ok(())
    } },
    fuzz_op! { slot "reopen", Closed, Reopen, None, [], [Valid], ["DB::list_cf", "DB::open_cf"],
    |db, dir, name, key, value, n| {
        *db = Some(reopen(dir)?);
        Ok(())
    } },
    fuzz_op! { slot "open", Any, None, NewDir, [Name], [Valid, Empty, Conflicting, Invalid, Large], ["DB::open"],
    |db, dir, name, key, value, n| { DB::open(&created(), dir.join(name)).map(drop) } },
    fuzz_op! { slot "open-cf-descriptors", Any, None, NewDir, [Name], [Valid, Conflicting, Invalid, Large], ["DB::open_cf_descriptors", "ColumnFamilyDescriptor::new"],
    |db, dir, name, key, value, n| {
        let cfs = vec![ColumnFamilyDescriptor::new("cf", Options::default())];
        DB::open_cf_descriptors(&created(), dir.join(name), cfs).map(drop)
    } },
    fuzz_op! { slot "open-read-only", Any, None, DbDir, [Name], [Valid, Empty, Conflicting, Invalid, Large], ["DB::open_for_read_only"],
    |db, dir, name, key, value, n| {
        DB::open_for_read_only(&Options::default(), dir.join(name), false).map(drop)
    } },
    fuzz_op! { slot "open-as-secondary", Any, None, DbDir, [Name], [Valid, Conflicting, Invalid], ["DB::open_as_secondary", "DB::try_catch_up_with_primary"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_max_open_files(-1);
        let secondary = DB::open_as_secondary(&o, dir.join(name), dir.join("secondary"))?;
        secondary.try_catch_up_with_primary()
    } },
    fuzz_op! { slot "open-with-ttl", Any, None, NewDir, [Name, N], [Valid, Empty, Conflicting, Large], ["DB::open_with_ttl"],
    |db, dir, name, key, value, n| {
        DB::open_with_ttl(&created(), dir.join(name), std::time::Duration::from_secs(n.min(1 << 31))).map(drop)
    } },
    fuzz_op! { slot "open-with-comparator", Any, None, NewDir, [Name], [Valid, Conflicting, Invalid], ["Options::set_comparator", "DB::open"],
    |db, dir, name, key, value, n| {
        let mut o = created();
        o.set_comparator("reverse", Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        let db = DB::open(&o, dir.join(name))?;
        db.put(b"k", b"v")
    } },
    fuzz_op! { slot "open-with-merge-operator", Any, None, NewDir, [Name, Key], [Valid, Empty, Large], ["Options::set_merge_operator_associative", "DB::merge", "DB::get"],
    |db, dir, name, key, value, n| {
        let mut o = created();
        o.set_merge_operator_associative("concat", concat);
        let db = DB::open(&o, dir.join(name))?;
        db.merge(key, b"x")?;
        db.get(key).map(drop)
    } },
    fuzz_op! { slot "list-cf", Any, None, DbDir, [Name], [Valid, Empty, Conflicting, Invalid], ["DB::list_cf"],
    |db, dir, name, key, value, n| { DB::list_cf(&Options::default(), dir.join(name)).map(drop) } },
    fuzz_op! { slot "destroy", Any, None, NewDir, [Name], [Valid, Conflicting, Invalid], ["DB::destroy"],
    |db, dir, name, key, value, n| { DB::destroy(&Options::default(), dir.join(name)) } },
    fuzz_op! { slot "repair", Any, None, DbDir, [Name], [Valid, Conflicting, Invalid], ["DB::repair"],
    |db, dir, name, key, value, n| { DB::repair(&Options::default(), dir.join(name)) } },
    fuzz_op! { slot "load-latest-options", Any, None, DbDir, [Name], [Valid, Empty, Conflicting, Invalid], ["Options::load_latest", "Env::new", "Cache::new_lru_cache"],
    |db, dir, name, key, value, n| {
        Options::load_latest(dir.join(name), Env::new()?, false, Cache::new_lru_cache(1 << 20)).map(drop)
    } },
    // Column families.
    fuzz_op! { "create-cf", Open, CreateCf, NewCf, [Name], [Valid, Empty, Repeated, Conflicting, Invalid, Large], ["DB::create_cf"],
    |db, dir, name, key, value, n| { db.create_cf(name, &Options::default()) } },
    fuzz_op! { "drop-cf", Open, DropCf, Cf, [Name], [Valid, Empty, Repeated, Conflicting, Invalid], ["DB::drop_cf", "ColumnFamily::drop"],
    |db, dir, name, key, value, n| { db.drop_cf(name) } },
    fuzz_op! { "cf-get", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting, Large], ["DB::cf_handle", "DB::get_cf"],
    |db, dir, name, key, value, n| {
        match db.cf_handle(name) {
            Some(cf) => db.get_cf(cf, key).map(drop),
            None => Ok(()),
        }
    } },
    fuzz_op! { "cf-put", Open, None, Cf, [Name, Key, Value], [Valid, Empty, Repeated, Large], ["DB::cf_handle", "DB::put_cf"],
    |db, dir, name, key, value, n| {
        match db.cf_handle(name) {
            Some(cf) => db.put_cf(cf, key, value),
            None => Ok(()),
        }
    } },
    fuzz_op! { "cf-flush", Open, None, Cf, [Name], [Valid, Conflicting], ["DB::cf_handle", "DB::flush_cf"],
    |db, dir, name, key, value, n| {
        match db.cf_handle(name) {
            Some(cf) => db.flush_cf(cf),
            None => Ok(()),
        }
    } },
    fuzz_op! { "cf-metadata-cf", Open, None, Cf, [Name], [Valid, Conflicting], ["DB::cf_handle", "DB::get_column_family_metadata_cf"],
    |db, dir, name, key, value, n| {
        if let Some(cf) = db.cf_handle(name) {
            drop(db.get_column_family_metadata_cf(cf));
        }
        Ok(())
    } },
    fuzz_op! { "cf-set-options", Open, None, Cf, [Name], [Valid, Conflicting], ["DB::cf_handle", "DB::set_options_cf"],
    |db, dir, name, key, value, n| {
        match db.cf_handle(name) {
            Some(cf) => db.set_options_cf(cf, &[("disable_auto_compactions", "false")]),
            None => Ok(()),
        }
    } },
    // Reads and writes.
    fuzz_op! { "put", Open, None, None, [Key, Value], [Valid, Empty, Repeated, Large], ["DB::put"],
    |db, dir, name, key, value, n| { db.put(key, value) } },
    fuzz_op! { "get", Open, None, None, [Key], [Valid, Empty, Conflicting, Large], ["DB::get"],
    |db, dir, name, key, value, n| { db.get(key).map(drop) } },
    fuzz_op! { "get-pinned", Open, None, None, [Key], [Valid, Empty, Conflicting, Large], ["DB::get_pinned", "DBPinnableSlice::deref"],
    |db, dir, name, key, value, n| {
        let pinned = db.get_pinned(key)?;
        let _ = pinned.as_deref().map(<[u8]>::len);
        Ok(())
    } },
    fuzz_op! { "multi-get", Open, None, None, [Key], [Valid, Empty, Conflicting, Large], ["DB::multi_get"],
    |db, dir, name, key, value, n| { db.multi_get([key, key]).into_iter().try_for_each(|r| r.map(drop)) } },
    fuzz_op! { "key-may-exist", Open, None, None, [Key], [Valid, Empty, Conflicting], ["DB::key_may_exist"],
    |db, dir, name, key, value, n| {
        db.key_may_exist(key);
        Ok(())
    } },
    fuzz_op! { "delete", Open, None, None, [Key], [Valid, Empty, Conflicting, Large], ["DB::delete"],
    |db, dir, name, key, value, n| { db.delete(key) } },
    fuzz_op! { "delete-range-cf", Open, None, None, [Key, Value], [Valid, Empty, Invalid], ["DB::cf_handle", "DB::delete_range_cf"],
    |db, dir, name, key, value, n| {
        match db.cf_handle("cf") {
            Some(cf) => db.delete_range_cf(cf, key, value),
            None => Ok(()),
        }
    } },
    fuzz_op! { "merge-without-operator", Open, None, None, [Key, Value], [Valid, Empty, Large], ["DB::merge"],
    |db, dir, name, key, value, n| { db.merge(key, value) } },
    fuzz_op! { "write-batch", Open, None, None, [Key, Value, N], [Valid, Empty, Repeated, Large], ["WriteBatch::default", "WriteBatch::put", "WriteBatch::delete", "DB::write"],
    |db, dir, name, key, value, n| {
        let mut batch = WriteBatch::default();
        for _ in 0..n.min(8) {
            batch.put(key, value);
        }
        batch.delete(key);
        db.write(batch)
    } },
    fuzz_op! { "iterator-from", Open, None, None, [Key, N], [Valid, Empty, Conflicting, Large], ["DB::iterator", "DBIterator::next"],
    |db, dir, name, key, value, n| {
        for item in db.iterator(IteratorMode::From(key, Direction::Forward)).take(n.min(1000) as usize) {
            item?;
        }
        Ok(())
    } },
    fuzz_op! { "raw-iterator", Open, None, None, [Key, N], [Valid, Empty, Conflicting, Large], ["DB::raw_iterator", "DBRawIterator::seek", "DBRawIterator::next", "DBRawIterator::status"],
    |db, dir, name, key, value, n| {
        let mut it = db.raw_iterator();
        it.seek(key);
        for _ in 0..n.min(1000) {
            if !it.valid() {
                break;
            }
            it.next();
        }
        it.status()
    } },
    fuzz_op! { "snapshot-get", Open, None, None, [Key], [Valid, Empty, Conflicting], ["DB::snapshot", "Snapshot::get"],
    |db, dir, name, key, value, n| { db.snapshot().get(key).map(drop) } },
    fuzz_op! { "flush", Open, None, None, [], [Valid], ["DB::flush"],
    |db, dir, name, key, value, n| { db.flush() } },
    fuzz_op! { "compact-range", Open, None, None, [Key, Value], [Valid, Empty, Invalid], ["DB::compact_range"],
    |db, dir, name, key, value, n| {
        db.compact_range(Some(key), Some(value));
        Ok(())
    } },
    fuzz_op! { "property-value", Open, None, Property, [Name], [Valid, Empty, Conflicting, Invalid, Large], ["DB::property_value"],
    |db, dir, name, key, value, n| { db.property_value(name).map(drop) } },
    fuzz_op! { "property-int-value", Open, None, Property, [Name], [Valid, Empty, Conflicting, Invalid], ["DB::property_int_value"],
    |db, dir, name, key, value, n| { db.property_int_value(name).map(drop) } },
    fuzz_op! { "cf-metadata", Open, None, None, [], [Valid], ["DB::get_column_family_metadata"],
    |db, dir, name, key, value, n| {
        drop(db.get_column_family_metadata());
        Ok(())
    } },
    fuzz_op! { "live-files", Open, None, None, [], [Valid], ["DB::live_files"],
    |db, dir, name, key, value, n| { db.live_files().map(drop) } },
    fuzz_op! { "sequence-number", Open, None, None, [], [Valid], ["DB::latest_sequence_number"],
    |db, dir, name, key, value, n| {
        db.latest_sequence_number();
        Ok(())
    } },
    fuzz_op! { "updates-since", Open, None, None, [N], [Valid, Empty, Large], ["DB::get_updates_since", "DBWALIterator::next", "DBWALIterator::valid", "DBWALIterator::status"],
    |db, dir, name, key, value, n| {
        let mut updates = db.get_updates_since(n)?;
        let _ = updates.valid();
        for item in updates.by_ref().take(16) {
            item?;
        }
        updates.status()
    } },
    fuzz_op! { "set-options", Open, None, OptionName, [Name, Value], [Valid, Empty, Conflicting, Invalid], ["DB::set_options"],
    |db, dir, name, key, value, n| { db.set_options(&[(name, String::from_utf8_lossy(value).as_ref())]) } },
    fuzz_op! { "checkpoint", Open, None, NewDir, [Name], [Valid, Empty, Conflicting, Invalid, Large], ["Checkpoint::new", "Checkpoint::create_checkpoint"],
    |db, dir, name, key, value, n| {
        let target = dir.join(name);
        Checkpoint::new(db)?.create_checkpoint(&target)?;
        let _ = std::fs::remove_dir_all(&target);
        Ok(())
    } },
    fuzz_op! { "ingest-sst", Open, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting, Invalid], [ "SstFileWriter::create", "SstFileWriter::open", "SstFileWriter::put", "SstFileWriter::finish", "DB::ingest_external_file" ],
    |db, dir, name, key, value, n| {
        let opts = Options::default();
        let mut writer = SstFileWriter::create(&opts);
        let file = dir.join(name).with_extension("sst");
        writer.open(&file)?;
        writer.put(key, value)?;
        writer.finish()?;
        db.ingest_external_file(vec![file])
    } },
    fuzz_op! { "backup", Open, None, NewDir, [Name, N], [Valid, Empty, Invalid, Large], [ "BackupEngineOptions::new", "BackupEngine::open", "BackupEngine::create_new_backup", "BackupEngine::purge_old_backups", "BackupEngine::get_backup_info" ],
    |db, dir, name, key, value, n| {
        let mut engine = BackupEngine::open(&BackupEngineOptions::new(dir.join(name))?, &Env::new()?)?;
        engine.create_new_backup(db)?;
        drop(engine.get_backup_info());
        engine.purge_old_backups(n.min(8) as usize)
    } },
    fuzz_op! { slot "restore", Any, None, NewDir, [Name, N], [Valid, Empty, Conflicting, Large], ["BackupEngine::open", "BackupEngine::verify_backup", "BackupEngine::restore_from_backup", "RestoreOptions::default"],
    |db, dir, name, key, value, n| {
        let mut engine = BackupEngine::open(&BackupEngineOptions::new(dir.join("backup"))?, &Env::new()?)?;
        engine.verify_backup(n as u32)?;
        let target = dir.join(name);
        engine.restore_from_backup(&target, &target, &RestoreOptions::default(), n as u32)
    } },
    // Transactions.
    // Column-family and `_opt` variants, several calls a step (the snippet shows them all).
    fuzz_op! { "cf-point-reads", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting, Large], ["DB::cf_handle", "DB::get_cf_opt", "DB::get_pinned_cf", "DB::get_pinned_cf_opt", "ReadOptions::default"],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        db.get_cf_opt(cf, key, &ReadOptions::default())?;
        db.get_pinned_cf(cf, key)?;
        db.get_pinned_cf_opt(cf, key, &ReadOptions::default()).map(drop)
    } },
    fuzz_op! { "cf-key-may-exist", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting, Large], ["DB::cf_handle", "DB::key_may_exist_cf"],
    |db, dir, name, key, value, n| {
        if let Some(cf) = db.cf_handle(name) {
            db.key_may_exist_cf(cf, key);
        }
        Ok(())
    } },
    fuzz_op! { "cf-key-may-exist-opt", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting], ["DB::cf_handle", "DB::key_may_exist_cf_opt", "ReadOptions::default"],
    |db, dir, name, key, value, n| {
        if let Some(cf) = db.cf_handle(name) {
            db.key_may_exist_cf_opt(cf, key, &ReadOptions::default());
        }
        Ok(())
    } },
    fuzz_op! { "cf-key-may-exist-value", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting], ["DB::cf_handle", "DB::key_may_exist_cf_opt_value", "ReadOptions::default"],
    |db, dir, name, key, value, n| {
        if let Some(cf) = db.cf_handle(name) {
            drop(db.key_may_exist_cf_opt_value(cf, key, &ReadOptions::default()));
        }
        Ok(())
    } },
    fuzz_op! { "cf-multi-get", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting, Large], ["DB::cf_handle", "DB::multi_get_cf", "DB::multi_get_cf_opt", "DB::batched_multi_get_cf"],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        for r in db.multi_get_cf([(cf, key), (cf, key)]) {
            r?;
        }
        for r in db.multi_get_cf_opt([(cf, key)], &ReadOptions::default()) {
            r?;
        }
        for r in db.batched_multi_get_cf(cf, [key], false) {
            r?;
        }
        Ok(())
    } },
    fuzz_op! { "cf-properties", Open, None, Cf, [Name], [Valid, Empty, Conflicting], ["DB::cf_handle", "DB::property_value_cf", "DB::property_int_value_cf"],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        db.property_value_cf(cf, "rocksdb.estimate-num-keys")?;
        db.property_int_value_cf(cf, "rocksdb.estimate-num-keys")?;
        Ok(())
    } },
    fuzz_op! { "cf-iterators", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting, Large], [ "DB::cf_handle", "DB::full_iterator_cf", "DB::prefix_iterator_cf", "DB::iterator_cf", "DB::iterator_cf_opt", "DB::raw_iterator_cf", "DB::raw_iterator_cf_opt", "DBRawIterator::seek_to_first", "DBRawIterator::seek_to_last", "DBRawIterator::seek_for_prev", "DBRawIterator::prev", "DBRawIterator::key", "DBRawIterator::value", "DBRawIterator::item", "DBRawIterator::valid" ],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        for item in db.full_iterator_cf(cf, IteratorMode::Start).take(8) {
            item?;
        }
        for item in db.prefix_iterator_cf(cf, key).take(8) {
            item?;
        }
        for item in db.iterator_cf(cf, IteratorMode::End).take(8) {
            item?;
        }
        for item in db.iterator_cf_opt(cf, ReadOptions::default(), IteratorMode::Start).take(8) {
            item?;
        }
        drop(db.raw_iterator_cf_opt(cf, ReadOptions::default()));
        let mut it = db.raw_iterator_cf(cf);
        it.seek_to_first();
        it.seek_to_last();
        it.seek_for_prev(key);
        if it.valid() {
            let _ = (it.key(), it.value(), it.item());
            it.prev();
        }
        it.status()
    } },
    fuzz_op! { "cf-writes", Open, None, Cf, [Name, Key, Value], [Valid, Empty, Conflicting, Large], [ "DB::cf_handle", "DB::put_cf_opt", "DB::put_opt", "DB::delete_cf", "DB::delete_cf_opt", "DB::delete_opt", "DB::merge_cf", "DB::merge_opt", "DB::delete_range_cf_opt", "DB::compact_range_cf", "DB::compact_range_cf_opt", "DB::compact_range_opt", "DB::flush_cf_opt", "DB::flush_opt", "DB::flush_cfs_opt", "DB::flush_wal", "DB::write_opt", "DB::write_without_wal", "DB::delete_file_in_range", "DB::delete_file_in_range_cf", "DB::cancel_all_background_work", "WriteOptions::default", "WriteOptions::disable_wal", "FlushOptions::default", "CompactOptions::default" ],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        let mut wo = WriteOptions::default();
        wo.disable_wal(false);
        db.put_cf_opt(cf, key, value, &wo)?;
        db.put_opt(key, value, &wo)?;
        db.delete_cf(cf, key)?;
        db.delete_cf_opt(cf, key, &wo)?;
        db.delete_opt(key, &wo)?;
        let _ = db.merge_cf(cf, key, value); // no merge operator: an error
        let _ = db.merge_opt(key, value, &wo);
        db.delete_range_cf_opt(cf, b"a", b"b", &wo)?;
        db.compact_range_cf(cf, Some(b"a"), Some(b"z"));
        db.compact_range_cf_opt(cf, Some(b"a"), Some(b"z"), &CompactOptions::default());
        db.compact_range_opt(None::<&[u8]>, None::<&[u8]>, &CompactOptions::default());
        db.flush_cf_opt(cf, &FlushOptions::default())?;
        db.flush_opt(&FlushOptions::default())?;
        db.flush_cfs_opt(&[cf], &FlushOptions::default())?;
        db.flush_wal(false)?;
        let mut batch = WriteBatch::default();
        batch.put_cf(cf, key, value);
        db.write_opt(batch, &wo)?;
        let mut batch = WriteBatch::default();
        batch.delete_cf(cf, key);
        db.write_without_wal(batch)?;
        db.delete_file_in_range(b"x", b"y")?;
        db.delete_file_in_range_cf(cf, b"x", b"y")
    } },
    fuzz_op! { "read-options", Open, None, None, [Key, Value], [Valid, Empty, Invalid, Large], [ "ReadOptions::default", "ReadOptions::set_iterate_lower_bound", "ReadOptions::set_iterate_upper_bound", "ReadOptions::fill_cache", "ReadOptions::set_snapshot", "DB::get_opt", "DB::get_pinned_opt", "DB::multi_get_opt", "DB::iterator_opt", "DB::snapshot" ],
    |db, dir, name, key, value, n| {
        let snapshot = db.snapshot();
        let mut ro = ReadOptions::default();
        ro.set_iterate_lower_bound(key.to_vec());
        ro.set_iterate_upper_bound(value.to_vec());
        ro.fill_cache(false);
        ro.set_snapshot(&snapshot);
        db.get_opt(key, &ro)?;
        db.get_pinned_opt(key, &ro)?;
        for r in db.multi_get_opt([key], &ro) {
            r?;
        }
        for item in db.iterator_opt(IteratorMode::Start, ro).take(16) {
            item?;
        }
        Ok(())
    } },
    fuzz_op! { "snapshot-reads", Open, None, Cf, [Name, Key], [Valid, Empty, Conflicting], [ "DB::snapshot", "Snapshot::get_cf", "Snapshot::get_pinned", "Snapshot::get_pinned_cf", "Snapshot::multi_get", "Snapshot::multi_get_cf", "Snapshot::iterator_cf", "Snapshot::iterator_cf_opt", "Snapshot::raw_iterator_cf", "Snapshot::raw_iterator_cf_opt" ],
    |db, dir, name, key, value, n| {
        let snapshot = db.snapshot();
        snapshot.get_pinned(key)?;
        for r in snapshot.multi_get([key]) {
            r?;
        }
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        snapshot.get_cf(cf, key)?;
        snapshot.get_pinned_cf(cf, key)?;
        for r in snapshot.multi_get_cf([(cf, key)]) {
            r?;
        }
        for item in snapshot.iterator_cf(cf, IteratorMode::Start).take(8) {
            item?;
        }
        for item in snapshot.iterator_cf_opt(cf, ReadOptions::default(), IteratorMode::End).take(8) {
            item?;
        }
        drop(snapshot.raw_iterator_cf_opt(cf, ReadOptions::default()));
        let it = snapshot.raw_iterator_cf(cf);
        it.status()
    } },
    fuzz_op! { "write-batch-full", Open, None, None, [Key, Value], [Valid, Empty, Repeated, Large], [ "WriteBatch::put_cf", "WriteBatch::delete_cf", "WriteBatch::delete_range", "WriteBatch::delete_range_cf", "WriteBatch::merge", "WriteBatch::merge_cf", "WriteBatch::len", "WriteBatch::size_in_bytes", "WriteBatch::data", "WriteBatch::from_data", "WriteBatch::clear", "DB::write" ],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle("cf") else { return Ok(()) };
        let mut batch = WriteBatch::default();
        batch.put_cf(cf, key, value);
        batch.delete_cf(cf, key);
        batch.delete_range(key, value);
        batch.delete_range_cf(cf, key, value);
        batch.merge(key, value);
        batch.merge_cf(cf, key, value);
        let copy = WriteBatch::from_data(batch.data());
        let _ = (batch.len(), batch.size_in_bytes());
        batch.clear();
        drop(batch);
        let _ = db.write(copy); // merges without a merge operator: an error
        Ok(())
    } },
    fuzz_op! { "memory-usage", Open, None, None, [N], [Valid, Empty, Large], [ "MemoryUsageBuilder::new", "MemoryUsageBuilder::add_db", "MemoryUsageBuilder::add_cache", "MemoryUsageBuilder::build", "MemoryUsage::approximate_mem_table_total", "MemoryUsage::approximate_mem_table_unflushed", "MemoryUsage::approximate_mem_table_readers_total", "MemoryUsage::approximate_cache_total", "Cache::new_lru_cache" ],
    |db, dir, name, key, value, n| {
        let cache = Cache::new_lru_cache(n as usize);
        let mut builder = rocksdb::perf::MemoryUsageBuilder::new()?;
        builder.add_db(db);
        builder.add_cache(&cache);
        let usage = builder.build()?;
        let _ = (
            usage.approximate_mem_table_total(),
            usage.approximate_mem_table_unflushed(),
            usage.approximate_mem_table_readers_total(),
            usage.approximate_cache_total(),
        );
        Ok(())
    } },
    fuzz_op! { slot "cache-and-buffer-manager", Any, None, None, [N], [Valid, Empty, Large], ["Cache::new_lru_cache", "Cache::set_capacity", "Cache::get_usage", "Cache::get_pinned_usage", "WriteBufferManager::new_write_buffer_manager_with_cache", "WriteBufferManager::enabled", "WriteBufferManager::get_usage", "WriteBufferManager::get_buffer_size", "WriteBufferManager::set_buffer_size", "WriteBufferManager::set_allow_stall"],
    |db, dir, name, key, value, n| {
        let mut cache = Cache::new_lru_cache(n as usize);
        cache.set_capacity(n as usize);
        let _ = (cache.get_usage(), cache.get_pinned_usage());
        let wbm = WriteBufferManager::new_write_buffer_manager_with_cache(n as usize, false, cache);
        let _ = (wbm.enabled(), wbm.get_usage(), wbm.get_buffer_size());
        wbm.set_buffer_size(n as usize);
        wbm.set_allow_stall(true);
        Ok(())
    } },
    fuzz_op! { slot "perf-context", Any, None, None, [], [Valid], ["PerfContext::default", "PerfContext::reset", "PerfContext::metric", "PerfContext::report"],
    |db, dir, name, key, value, n| {
        let mut ctx = rocksdb::perf::PerfContext::default();
        ctx.reset();
        let _ = ctx.metric(rocksdb::PerfMetric::BlockReadCount);
        drop(ctx.report(true));
        Ok(())
    } },
    fuzz_op! { slot "options-misc", Any, None, NewDir, [Name, N], [Valid, Empty, Invalid, Large], ["Options::default", "Options::clone", "Options::optimize_for_point_lookup", "Options::optimize_level_style_compaction", "Options::optimize_universal_style_compaction", "Options::prepare_for_bulk_load", "Options::create_if_missing", "Options::create_missing_column_families", "Options::set_db_log_dir", "Options::set_wal_dir", "Options::set_compression_type", "Options::set_compaction_style", "Options::set_log_level", "Options::get_histogram_data", "Options::get_ticker_count", "HistogramData::count", "HistogramData::median", "HistogramData::p99", "HistogramData::p95", "HistogramData::average", "HistogramData::max", "HistogramData::min", "HistogramData::sum", "HistogramData::std_dev", "HistogramData::default", "SliceTransform::create_noop"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.optimize_for_point_lookup(n % 1024);
        o.optimize_level_style_compaction((n % (1 << 30)) as usize);
        o.optimize_universal_style_compaction((n % (1 << 30)) as usize);
        o.prepare_for_bulk_load();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        o.set_db_log_dir(dir.join(name));
        o.set_wal_dir(dir.join(name));
        o.set_compression_type(rocksdb::DBCompressionType::None);
        o.set_compaction_style(rocksdb::DBCompactionStyle::Universal);
        o.set_log_level(rocksdb::LogLevel::Warn);
        o.set_prefix_extractor(SliceTransform::create_noop());
        o.enable_statistics();
        let h = o.get_histogram_data(rocksdb::statistics::Histogram::DbGet);
        let _ = (h.count(), h.median(), h.p99(), h.p95(), h.average(), h.max(), h.min(), h.sum(), h.std_dev());
        let _ = o.get_ticker_count(rocksdb::statistics::Ticker::BlockCacheMiss);
        drop(rocksdb::statistics::HistogramData::default());
        let copy = o.clone();
        drop((o, copy));
        Ok(())
    } },
    fuzz_op! { slot "transaction-db-full", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting, Large], ["TransactionDB::open_cf", "TransactionDB::put", "TransactionDB::put_cf", "TransactionDB::put_opt", "TransactionDB::get", "TransactionDB::get_cf", "TransactionDB::get_pinned", "TransactionDB::multi_get", "TransactionDB::delete", "TransactionDB::delete_cf", "TransactionDB::merge", "TransactionDB::create_cf", "TransactionDB::drop_cf", "TransactionDB::iterator_cf", "TransactionDB::raw_iterator_cf", "TransactionDB::prefix_iterator_cf", "TransactionDB::write", "TransactionDB::transaction_opt", "TransactionDB::list_cf", "TransactionOptions::default", "WriteOptions::default", "Transaction::set_name", "Transaction::get_name", "Transaction::set_savepoint", "Transaction::rollback_to_savepoint", "Transaction::put_cf", "Transaction::get_cf", "Transaction::get_for_update_cf", "Transaction::get_pinned", "Transaction::delete", "Transaction::delete_cf", "Transaction::merge", "Transaction::multi_get", "Transaction::iterator_cf", "Transaction::raw_iterator_cf", "Transaction::get_writebatch", "Transaction::rebuild_from_writebatch", "Transaction::prepare", "Transaction::rollback"],
    |db, dir, name, key, value, n| {
        let path = dir.join(name);
        let mut txn_db = TransactionDB::<SingleThreaded>::open_cf(&created(), &TransactionDBOptions::default(), &path, ["cf"])?;
        drop(TransactionDB::<SingleThreaded>::list_cf(&Options::default(), &path)?);
        let _ = txn_db.create_cf("extra", &Options::default());
        let _ = txn_db.drop_cf("extra");
        let Some(cf) = txn_db.cf_handle("cf") else { return Ok(()) };
        txn_db.put(key, value)?;
        txn_db.put_cf(cf, key, value)?;
        txn_db.put_opt(key, value, &WriteOptions::default())?;
        txn_db.get(key)?;
        txn_db.get_cf(cf, key)?;
        txn_db.get_pinned(key)?;
        for r in txn_db.multi_get([key]) {
            r?;
        }
        for item in txn_db.iterator_cf(cf, IteratorMode::Start).take(8) {
            item?;
        }
        for item in txn_db.prefix_iterator_cf(cf, key).take(8) {
            item?;
        }
        txn_db.raw_iterator_cf(cf).status()?;
        let mut batch = rocksdb::WriteBatchWithTransaction::<true>::default();
        batch.put(key, value);
        txn_db.write(batch)?;
        let txn = txn_db.transaction_opt(&WriteOptions::default(), &rocksdb::TransactionOptions::default());
        txn.set_name(b"t1")?;
        drop(txn.get_name());
        txn.set_savepoint();
        txn.put_cf(cf, key, value)?;
        txn.rollback_to_savepoint()?;
        txn.get_cf(cf, key)?;
        txn.get_for_update_cf(cf, key, true)?;
        txn.get_pinned(key)?;
        for r in txn.multi_get([key]) {
            r?;
        }
        txn.delete(key)?;
        txn.delete_cf(cf, key)?;
        for item in txn.iterator_cf(cf, IteratorMode::Start).take(8) {
            item?;
        }
        txn.raw_iterator_cf(cf).status()?;
        let wb = txn.get_writebatch();
        let _ = txn.rebuild_from_writebatch(&wb); // RocksDB refuses a batch with a no-op marker: an error path
        txn.prepare()?;
        txn.rollback()?;
        drop(txn);
        let merging = txn_db.transaction(); // a failed merge fails its transaction: one of its own
        let _ = merging.merge(key, value);
        drop(merging);
        txn_db.delete(key)?;
        txn_db.delete_cf(cf, key)?;
        let _ = txn_db.merge(key, value); // no merge operator: reads of the key fail after it, so last
        Ok(())
    } },
    fuzz_op! { slot "open-variants", Any, None, DbDir, [Name], [Valid, Empty, Conflicting, Invalid], ["DB::open_default", "DB::open_cf_for_read_only", "DB::open_cf_descriptors_read_only", "DB::open_cf_with_opts_for_read_only", "DB::open_cf_as_secondary", "DB::open_cf_descriptors_as_secondary", "DB::open_cf_with_ttl", "DB::open_cf_descriptors_with_ttl", "DB::open_cf_with_opts"],
    |db, dir, name, key, value, n| {
        let path = dir.join(name);
        let cfs = ["default", "cf"];
        let descriptors = || cfs.map(|c| ColumnFamilyDescriptor::new(c, Options::default()));
        let with_opts = || cfs.map(|c| (c, Options::default()));
        let mut secondary = Options::default();
        secondary.set_max_open_files(-1);
        let _ = DB::open_cf_for_read_only(&Options::default(), &path, cfs, false).map(drop);
        let _ = DB::open_cf_descriptors_read_only(&Options::default(), &path, descriptors(), false).map(drop);
        let _ = DB::open_cf_with_opts_for_read_only(&Options::default(), &path, with_opts(), false).map(drop);
        let _ = DB::open_cf_as_secondary(&secondary, &path, &dir.join("secondary"), cfs).map(drop);
        let _ = DB::open_cf_descriptors_as_secondary(&secondary, &path, &dir.join("secondary"), descriptors()).map(drop);
        let ttl = std::time::Duration::from_secs(3600);
        let _ = DB::open_cf_with_ttl(&created(), &path, cfs, ttl).map(drop);
        let _ = DB::open_cf_descriptors_with_ttl(&created(), &path, descriptors(), ttl).map(drop);
        let _ = DB::open_cf_with_opts(&created(), &path, with_opts()).map(drop);
        DB::open_default(&path).map(drop)
    } },
    fuzz_op! { slot "transaction-opt", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting, Large], ["TransactionDB::open_cf_descriptors", "TransactionDB::open_default", "TransactionDB::get_opt", "TransactionDB::get_cf_opt", "TransactionDB::get_pinned_opt", "TransactionDB::get_pinned_cf", "TransactionDB::get_pinned_cf_opt", "TransactionDB::multi_get_opt", "TransactionDB::multi_get_cf", "TransactionDB::multi_get_cf_opt", "TransactionDB::put_cf_opt", "TransactionDB::delete_opt", "TransactionDB::delete_cf_opt", "TransactionDB::merge_cf", "TransactionDB::merge_opt", "TransactionDB::merge_cf_opt", "TransactionDB::iterator_cf_opt", "TransactionDB::raw_iterator_cf_opt", "TransactionDB::full_iterator_cf", "TransactionDB::write_opt", "TransactionDB::destroy", "TransactionDB::repair", "Transaction::get_opt", "Transaction::get_cf_opt", "Transaction::get_pinned_opt", "Transaction::get_pinned_cf", "Transaction::get_pinned_cf_opt", "Transaction::get_for_update_opt", "Transaction::get_for_update_cf_opt", "Transaction::get_pinned_for_update", "Transaction::get_pinned_for_update_cf", "Transaction::get_pinned_for_update_opt", "Transaction::get_pinned_for_update_cf_opt", "Transaction::multi_get_opt", "Transaction::multi_get_cf", "Transaction::multi_get_cf_opt", "Transaction::iterator_cf_opt", "Transaction::raw_iterator_cf_opt", "Transaction::full_iterator_cf", "Transaction::prefix_iterator_cf", "Transaction::merge_cf", "Transaction::commit"],
    |db, dir, name, key, value, n| {
        let path = dir.join(name);
        let descriptors = ["cf"].map(|c| ColumnFamilyDescriptor::new(c, Options::default()));
        let txn_db = TransactionDB::<SingleThreaded>::open_cf_descriptors(&created(), &TransactionDBOptions::default(), &path, descriptors)?;
        let Some(cf) = txn_db.cf_handle("cf") else { return Ok(()) };
        let (ro, wo) = (ReadOptions::default(), WriteOptions::default());
        txn_db.put_cf_opt(cf, key, value, &wo)?;
        txn_db.get_opt(key, &ro)?;
        txn_db.get_cf_opt(cf, key, &ro)?;
        txn_db.get_pinned_opt(key, &ro)?;
        txn_db.get_pinned_cf(cf, key)?;
        txn_db.get_pinned_cf_opt(cf, key, &ro)?;
        for r in txn_db.multi_get_opt([key], &ro).into_iter().chain(txn_db.multi_get_cf([(cf, key)])).chain(txn_db.multi_get_cf_opt([(cf, key)], &ro)) {
            r?;
        }
        for item in txn_db.iterator_cf_opt(cf, ReadOptions::default(), IteratorMode::Start).take(8) {
            item?;
        }
        for item in txn_db.full_iterator_cf(cf, IteratorMode::End).take(8) {
            item?;
        }
        drop(txn_db.raw_iterator_cf_opt(cf, ReadOptions::default()));
        let mut batch = rocksdb::WriteBatchWithTransaction::<true>::default();
        batch.delete(key);
        txn_db.write_opt(batch, &wo)?;
        let txn = txn_db.transaction();
        txn.get_opt(key, &ro)?;
        txn.get_cf_opt(cf, key, &ro)?;
        txn.get_pinned_opt(key, &ro)?;
        txn.get_pinned_cf(cf, key)?;
        txn.get_pinned_cf_opt(cf, key, &ro)?;
        txn.get_for_update_opt(key, true, &ro)?;
        txn.get_for_update_cf_opt(cf, key, true, &ro)?;
        txn.get_pinned_for_update(key, true)?;
        txn.get_pinned_for_update_cf(cf, key, true)?;
        txn.get_pinned_for_update_opt(key, true, &ro)?;
        txn.get_pinned_for_update_cf_opt(cf, key, true, &ro)?;
        for r in txn.multi_get_opt([key], &ro).into_iter().chain(txn.multi_get_cf([(cf, key)])).chain(txn.multi_get_cf_opt([(cf, key)], &ro)) {
            r?;
        }
        for item in txn.iterator_cf_opt(cf, ReadOptions::default(), IteratorMode::Start).take(8) {
            item?;
        }
        for item in txn.full_iterator_cf(cf, IteratorMode::Start).take(8) {
            item?;
        }
        for item in txn.prefix_iterator_cf(cf, key).take(8) {
            item?;
        }
        drop(txn.raw_iterator_cf_opt(cf, ReadOptions::default()));
        txn.commit()?;
        let merging = txn_db.transaction(); // a failed merge fails its transaction: one of its own
        let _ = merging.merge_cf(cf, key, value);
        drop(merging);
        txn_db.delete_opt(key, &wo)?;
        txn_db.delete_cf_opt(cf, key, &wo)?;
        let _ = txn_db.merge_cf(cf, key, value); // no merge operator: reads of the key fail after it, so last
        let _ = txn_db.merge_opt(key, value, &wo);
        let _ = txn_db.merge_cf_opt(cf, key, value, &wo);
        drop(txn_db);
        drop(TransactionDB::<SingleThreaded>::open_default(dir.join(name).with_extension("default"))?);
        TransactionDB::<SingleThreaded>::repair(&Options::default(), &path)?;
        TransactionDB::<SingleThreaded>::destroy(&Options::default(), &path)
    } },
    fuzz_op! { "backup-restore-latest", Open, None, NewDir, [Name], [Valid, Empty, Invalid], [ "BackupEngineOptions::new", "BackupEngineOptions::set_max_background_operations", "BackupEngine::open", "BackupEngine::create_new_backup_flush", "BackupEngine::restore_from_latest_backup", "RestoreOptions::default", "RestoreOptions::set_keep_log_files" ],
    |db, dir, name, key, value, n| {
        let mut opts = BackupEngineOptions::new(dir.join(name))?;
        opts.set_max_background_operations(2);
        let mut engine = BackupEngine::open(&opts, &Env::new()?)?;
        engine.create_new_backup_flush(db, true)?;
        let mut restore = RestoreOptions::default();
        restore.set_keep_log_files(true);
        let target = dir.join(name).with_extension("restored");
        engine.restore_from_latest_backup(&target, &target, &restore)?;
        let _ = std::fs::remove_dir_all(&target);
        Ok(())
    } },
    fuzz_op! { "ingest-variants", Open, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting, Invalid], [ "SstFileWriter::create", "SstFileWriter::open", "SstFileWriter::put", "SstFileWriter::merge", "SstFileWriter::file_size", "SstFileWriter::finish", "IngestExternalFileOptions::default", "DB::ingest_external_file_opts", "DB::ingest_external_file_cf", "DB::ingest_external_file_cf_opts", "DB::wait_for_compact", "WaitForCompactOptions::default", "DB::batched_multi_get_cf_opt", "DB::key_may_exist_opt", "DB::merge_cf_opt" ],
    |db, dir, name, key, value, n| {
        let opts = Options::default();
        let file = |i: u32| dir.join(name).with_extension(format!("{i}.sst"));
        for i in 0..3 {
            let mut writer = SstFileWriter::create(&opts);
            writer.open(file(i))?;
            writer.put(key, value)?;
            let _ = writer.merge(b"zz", value); // no merge operator in the writer's options: an error
            let _ = writer.file_size();
            writer.finish()?;
        }
        let ingest = rocksdb::IngestExternalFileOptions::default();
        db.ingest_external_file_opts(&ingest, vec![file(0)])?;
        let Some(cf) = db.cf_handle("cf") else { return Ok(()) };
        db.ingest_external_file_cf(cf, vec![file(1)])?;
        db.ingest_external_file_cf_opts(cf, &ingest, vec![file(2)])?;
        for r in db.batched_multi_get_cf_opt(cf, [key], false, &ReadOptions::default()) {
            r?;
        }
        db.key_may_exist_opt(key, &ReadOptions::default());
        let _ = db.merge_cf_opt(cf, key, value, &WriteOptions::default());
        db.wait_for_compact(&rocksdb::WaitForCompactOptions::default())
    } },
    fuzz_op! { slot "transaction-db", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting, Invalid, Large], ["TransactionDB::open", "TransactionDB::transaction", "Transaction::put", "Transaction::get", "Transaction::commit"],
    |db, dir, name, key, value, n| {
        let txn_db = TransactionDB::<SingleThreaded>::open(&created(), &TransactionDBOptions::default(), dir.join(name))?;
        let txn = txn_db.transaction();
        txn.put(key, value)?;
        txn.get(key)?;
        txn.commit()
    } },
    fuzz_op! { slot "optimistic-conflict", Any, None, NewDir, [Name, Key], [Valid, Empty, Large], ["OptimisticTransactionDB::open", "OptimisticTransactionDB::transaction", "OptimisticTransactionDB::transaction_opt", "Transaction::get_for_update", "Transaction::commit"],
    |db, dir, name, key, value, n| {
        let otxn = OptimisticTransactionDB::<SingleThreaded>::open(&created(), dir.join(name))?;
        drop(otxn.transaction());
        let txn = otxn.transaction_opt(&WriteOptions::default(), &rocksdb::OptimisticTransactionOptions::default());
        txn.get_for_update(key, true)?;
        otxn.put(key, b"outside")?;
        txn.put(key, b"inside")?;
        txn.commit()
    } },
    // Options and the objects they hold.
    fuzz_op! { slot "options-comparator", Any, None, Label, [Name], [Valid, Empty, Invalid, Large], ["Options::set_comparator"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_comparator(name, Box::new(|a: &[u8], b: &[u8]| b.cmp(a)));
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-compaction-filter", Any, None, Label, [Name], [Valid, Empty, Invalid, Large], ["Options::set_compaction_filter"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_compaction_filter(name, |_level: u32, _key: &[u8], _value: &[u8]| CompactionDecision::Keep);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-merge-operator", Any, None, Label, [Name], [Valid, Empty, Invalid, Large], ["Options::set_merge_operator_associative"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_merge_operator_associative(name, concat);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-prefix-extractor", Any, None, None, [N], [Valid, Empty, Large], ["Options::set_prefix_extractor", "SliceTransform::create_fixed_prefix"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_prefix_extractor(SliceTransform::create_fixed_prefix(n as usize));
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-block-based", Any, None, None, [N], [Valid, Empty, Large], ["BlockBasedOptions::default", "BlockBasedOptions::set_bloom_filter", "BlockBasedOptions::set_block_cache", "Options::set_block_based_table_factory", "Cache::new_lru_cache"],
    |db, dir, name, key, value, n| {
        let mut b = BlockBasedOptions::default();
        b.set_bloom_filter((n % 64) as f64, false);
        b.set_block_cache(&Cache::new_lru_cache(n as usize));
        let mut o = Options::default();
        o.set_block_based_table_factory(&b);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-statistics", Any, None, None, [], [Valid], ["Options::enable_statistics", "Options::get_statistics"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.enable_statistics();
        drop(o.get_statistics());
        Ok(())
    } },
    fuzz_op! { slot "options-row-cache-env", Any, None, None, [N], [Valid, Empty, Large], ["Options::set_row_cache", "Options::set_env", "Env::new", "Cache::new_hyper_clock_cache"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_row_cache(&Cache::new_hyper_clock_cache(n as usize, 0));
        o.set_env(&Env::new()?);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "options-setters", Any, None, SetterType, [Name, Key, N], [Valid, Empty, Invalid, Large], [],
    |db, dir, name, key, value, n| {
        super::setters::call_range(super::setters::parse_range(key), n);
        Ok(())
    } },
    fuzz_op! { slot "options-structured", Any, None, NewDir, [Name, N], [Valid, Empty, Invalid, Large], ["BlockBasedOptions::default", "BlockBasedOptions::disable_cache", "BlockBasedOptions::set_checksum_type", "BlockBasedOptions::set_data_block_index_type", "BlockBasedOptions::set_hybrid_ribbon_filter", "BlockBasedOptions::set_index_type", "CompactOptions::set_bottommost_level_compaction", "CuckooTableOptions::default", "Options::set_cuckoo_table_factory", "FifoCompactOptions::default", "Options::set_fifo_compaction_options", "UniversalCompactOptions::default", "UniversalCompactOptions::set_stop_style", "Options::set_universal_compaction_options", "Options::add_compact_on_deletion_collector_factory", "Options::add_merge_operator", "Options::set_merge_operator", "Options::set_blob_compression_type", "Options::set_bottommost_compression_options", "Options::set_bottommost_compression_type", "Options::set_bottommost_zstd_max_train_bytes", "Options::set_compression_options", "Options::set_compression_per_level", "Options::set_db_paths", "DBPath::new", "Options::set_max_bytes_for_level_multiplier_additional", "Options::set_memtable_factory", "Options::set_statistics_level", "Options::set_wal_compression_type", "Options::set_wal_recovery_mode", "Options::set_write_buffer_manager", "ReadOptions::set_read_tier", "ReadOptions::set_iterate_range", "TransactionDBOptions::default", "OptimisticTransactionOptions::default", "Env::mem_env"],
    |db, dir, name, key, value, n| {
        let small = (n % 1024) as i32;
        let mut b = BlockBasedOptions::default();
        b.disable_cache();
        b.set_checksum_type(rocksdb::ChecksumType::XXH3);
        b.set_data_block_index_type(rocksdb::DataBlockIndexType::BinaryAndHash);
        b.set_hybrid_ribbon_filter(f64::from(small % 64), small);
        b.set_index_type(rocksdb::BlockBasedIndexType::TwoLevelIndexSearch);
        let mut o = Options::default();
        o.set_block_based_table_factory(&b);
        o.set_cuckoo_table_factory(&rocksdb::CuckooTableOptions::default());
        o.set_fifo_compaction_options(&rocksdb::FifoCompactOptions::default());
        let mut universal = rocksdb::UniversalCompactOptions::default();
        universal.set_stop_style(rocksdb::UniversalCompactionStopStyle::Total);
        o.set_universal_compaction_options(&universal);
        o.add_compact_on_deletion_collector_factory(n as usize, n as usize, 0.5);
        o.add_merge_operator("concat", concat);
        o.set_merge_operator("concat2", concat, concat);
        o.set_blob_compression_type(rocksdb::DBCompressionType::None);
        o.set_bottommost_compression_options(-14, small, 0, small, true);
        o.set_bottommost_compression_type(rocksdb::DBCompressionType::None);
        o.set_bottommost_zstd_max_train_bytes(small, true);
        o.set_compression_options(-14, small, 0, small);
        o.set_compression_per_level(&[rocksdb::DBCompressionType::None; 3]);
        o.set_db_paths(&[rocksdb::DBPath::new(dir.join(name), n)?]);
        o.set_max_bytes_for_level_multiplier_additional(&[small; 4]);
        o.set_memtable_factory(rocksdb::MemtableFactory::Vector);
        o.set_statistics_level(rocksdb::statistics::StatsLevel::All);
        o.set_wal_compression_type(rocksdb::DBCompressionType::None);
        o.set_wal_recovery_mode(rocksdb::DBRecoveryMode::PointInTime);
        o.set_write_buffer_manager(&WriteBufferManager::new_write_buffer_manager(n as usize, false));
        let mut compact = CompactOptions::default();
        compact.set_bottommost_level_compaction(rocksdb::BottommostLevelCompaction::Force);
        let mut ro = ReadOptions::default();
        ro.set_read_tier(rocksdb::ReadTier::BlockCache);
        ro.set_iterate_range(b"a".to_vec()..b"z".to_vec());
        drop((o, b, compact, ro));
        drop((TransactionDBOptions::default(), rocksdb::OptimisticTransactionOptions::default()));
        drop(Env::mem_env()?);
        Ok(())
    } },
    fuzz_op! { slot "ratelimiter", Any, None, None, [N], [Valid, Empty, Invalid, Large], ["Options::set_ratelimiter"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_ratelimiter(n as i64, 100_000, 10);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "write-buffer-manager", Any, None, None, [N], [Valid, Empty, Large], ["WriteBufferManager::new_write_buffer_manager"],
    |db, dir, name, key, value, n| {
        drop(WriteBufferManager::new_write_buffer_manager(n as usize, false));
        Ok(())
    } },
    fuzz_op! { slot "sst-writer", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Repeated, Invalid, Large], ["SstFileWriter::create", "SstFileWriter::open", "SstFileWriter::put", "SstFileWriter::delete", "SstFileWriter::finish"],
    |db, dir, name, key, value, n| {
        let opts = Options::default();
        let mut writer = SstFileWriter::create(&opts);
        writer.open(dir.join(name).with_extension("sst"))?;
        writer.put(key, value)?;
        writer.delete(key)?;
        writer.finish()
    } },
];

/// Ops of functions rust-rocksdb 0.23 added (built on 0.23 and later only: build.rs sets
/// `rocksdb_0_23`).
#[cfg(rocksdb_0_23)]
pub const OPS_SINCE_0_23: &[Op] = &[
    fuzz_op! { "db-identity", Open, None, None, [], [Valid], ["DB::get_db_identity"],
    |db, dir, name, key, value, n| { db.get_db_identity().map(drop) } },
    fuzz_op! { "batch-with-capacity", Open, None, None, [Key, Value, N], [Valid, Empty, Large], ["WriteBatch::with_capacity_bytes", "WriteBatch::new"],
    |db, dir, name, key, value, n| {
        let mut batch = WriteBatch::with_capacity_bytes(n as usize);
        batch.put(key, value);
        db.write(batch)?;
        let mut batch = WriteBatch::new();
        batch.delete(key);
        db.write(batch)
    } },
    fuzz_op! { slot "lru-cache-options", Any, None, None, [N], [Valid, Empty, Large], ["LruCacheOptions::default", "LruCacheOptions::set_capacity", "Cache::new_lru_cache_opts"],
    |db, dir, name, key, value, n| {
        let mut lru = rocksdb::LruCacheOptions::default();
        lru.set_capacity(n as usize);
        drop(Cache::new_lru_cache_opts(&lru));
        Ok(())
    } },
    fuzz_op! { slot "transaction-db-memory-usage", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Large], ["TransactionDB::open", "MemoryUsageBuilder::add_tx_db", "MemoryUsageBuilder::build"],
    |db, dir, name, key, value, n| {
        let txn_db = TransactionDB::<SingleThreaded>::open(&created(), &TransactionDBOptions::default(), dir.join(name))?;
        txn_db.put(key, value)?;
        let mut usage = rocksdb::perf::MemoryUsageBuilder::new()?;
        usage.add_tx_db(&txn_db);
        usage.build().map(drop)
    } },
    fuzz_op! { slot "auto-tuned-ratelimiter", Any, None, None, [N], [Valid, Empty, Invalid, Large], ["Options::set_auto_tuned_ratelimiter"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        o.set_auto_tuned_ratelimiter(n as i64, 100_000, 10);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "since-0.23-options", Any, None, None, [N], [Valid, Empty, Large], ["Options::get_track_and_verify_wals_in_manifest", "Options::get_write_dbid_to_manifest", "Options::set_blob_cache", "Options::set_compaction_pri"],
    |db, dir, name, key, value, n| {
        let mut o = Options::default();
        let _ = (o.get_track_and_verify_wals_in_manifest(), o.get_write_dbid_to_manifest());
        o.set_blob_cache(&Cache::new_lru_cache(n as usize));
        o.set_compaction_pri(rocksdb::CompactionPri::MinOverlappingRatio);
        drop(o);
        Ok(())
    } },
];

/// Ops of functions rust-rocksdb 0.23 added (none on an older release).
#[cfg(not(rocksdb_0_23))]
pub const OPS_SINCE_0_23: &[Op] = &[];

/// Ops of functions rust-rocksdb 0.24 added (built on 0.24 and later only: build.rs sets
/// `rocksdb_0_24`).
#[cfg(rocksdb_0_24)]
pub const OPS_SINCE_0_24: &[Op] = &[
    fuzz_op! { "approximate-sizes", Open, None, None, [Key, Value], [Valid, Empty, Invalid], ["DB::get_approximate_sizes", "Range::new"],
    |db, dir, name, key, value, n| {
        drop(db.get_approximate_sizes(&[rocksdb::Range::new(key, value)]));
        Ok(())
    } },
    fuzz_op! { "cf-approximate-sizes", Open, None, Cf, [Name, Key, Value], [Valid, Empty, Conflicting, Invalid], ["DB::cf_handle", "DB::get_approximate_sizes_cf", "Range::new"],
    |db, dir, name, key, value, n| {
        let Some(cf) = db.cf_handle(name) else { return Ok(()) };
        drop(db.get_approximate_sizes_cf(cf, &[rocksdb::Range::new(key, value)]));
        Ok(())
    } },
    fuzz_op! { "batch-log-data", Open, None, None, [Value], [Valid, Empty, Large], ["WriteBatch::put_log_data"],
    |db, dir, name, key, value, n| {
        let mut batch = WriteBatch::default();
        batch.put_log_data(value);
        db.write(batch)
    } },
    fuzz_op! { slot "since-0.24-options", Any, None, NewDir, [Name, N], [Valid, Empty, Large], ["Options::get_use_fsync", "BlockBasedOptions::set_partition_pinning_tier", "BlockBasedOptions::set_top_level_index_pinning_tier", "BlockBasedOptions::set_unpartitioned_pinning_tier", "BackupEngineOptions::set_sync", "BackupEngineOptions::get_sync"],
    |db, dir, name, key, value, n| {
        let mut b = BlockBasedOptions::default();
        b.set_partition_pinning_tier(rocksdb::BlockBasedTablePinningTier::All);
        b.set_top_level_index_pinning_tier(rocksdb::BlockBasedTablePinningTier::FlushAndSimilar);
        b.set_unpartitioned_pinning_tier(rocksdb::BlockBasedTablePinningTier::None);
        let mut o = Options::default();
        o.set_block_based_table_factory(&b);
        let _ = o.get_use_fsync();
        let mut backup = BackupEngineOptions::new(dir.join(name))?;
        backup.set_sync(n % 2 == 0);
        let _ = backup.get_sync();
        drop((b, o, backup));
        Ok(())
    } },
];

/// Ops of functions rust-rocksdb 0.24 added (none on an older release).
#[cfg(not(rocksdb_0_24))]
pub const OPS_SINCE_0_24: &[Op] = &[];

/// Ops of functions rust-rocksdb 0.25 added (built on 0.25 and later only: build.rs sets
/// `rocksdb_0_25`).
#[cfg(rocksdb_0_25)]
pub const OPS_SINCE_0_25: &[Op] = &[
    fuzz_op! { "since-0.25-db", Open, None, None, [Key, Value], [Valid, Empty, Large], [ "DBRawIterator::refresh", "WriteBatch::single_delete", "WriteBatch::single_delete_cf", "DB::disable_file_deletions", "DB::enable_file_deletions", "Checkpoint::new", "Checkpoint::create_checkpoint_with_log_size", "Snapshot::sequence_number", "Options::get_options_from_string", "InfoLogger::new_stderr_logger", "InfoLogger::new_callback_logger", "Options::set_info_logger", "Options::get_info_logger", "Options::set_cf_paths", "DBPath::new" ],
    |db, dir, name, key, value, n| {
        let mut it = db.raw_iterator();
        it.seek_to_first();
        it.refresh()?;
        it.status()?;
        drop(it);
        let mut batch = WriteBatch::default();
        batch.put(key, value);
        batch.single_delete(key);
        if let Some(cf) = db.cf_handle("cf") {
            batch.single_delete_cf(cf, key);
        }
        db.write(batch)?;
        db.disable_file_deletions()?;
        db.enable_file_deletions()?;
        let target = dir.join("checkpoint-with-log-size");
        Checkpoint::new(db)?.create_checkpoint_with_log_size(&target, 0)?;
        let _ = std::fs::remove_dir_all(&target);
        let _ = db.snapshot().sequence_number();
        let _ = Options::default().get_options_from_string(format!("max_open_files={}", value.len()))?;
        let mut o = Options::default();
        o.set_info_logger(rocksdb::InfoLogger::new_stderr_logger(rocksdb::LogLevel::Fatal, Some("fuzz")));
        drop(o.get_info_logger());
        o.set_info_logger(rocksdb::InfoLogger::new_callback_logger(rocksdb::LogLevel::Fatal, |_, _| {}));
        o.set_cf_paths(&[rocksdb::DBPath::new(dir.join("cf-path"), value.len() as u64)?]);
        drop(o);
        Ok(())
    } },
    fuzz_op! { slot "since-0.25-transaction-db", Any, None, NewDir, [Name, Key, Value], [Valid, Empty, Conflicting], ["TransactionDB::flush", "TransactionDB::flush_wal", "TransactionDB::flush_opt", "TransactionDB::flush_cf", "TransactionDB::flush_cf_opt", "TransactionDB::flush_cfs_opt", "SstFileWriter::delete_range", "TransactionDBCheckpoint::new", "TransactionDBCheckpoint::create_checkpoint", "TransactionDBCheckpoint::create_checkpoint_with_log_size"],
    |db, dir, name, key, value, n| {
        let txn_db = TransactionDB::<SingleThreaded>::open_cf(&created(), &TransactionDBOptions::default(), dir.join(name), ["cf"])?;
        txn_db.put(key, value)?;
        txn_db.flush()?;
        txn_db.flush_wal(false)?;
        txn_db.flush_opt(&FlushOptions::default())?;
        if let Some(cf) = txn_db.cf_handle("cf") {
            txn_db.flush_cf(cf)?;
            txn_db.flush_cf_opt(cf, &FlushOptions::default())?;
            txn_db.flush_cfs_opt(&[cf], &FlushOptions::default())?;
        }
        let checkpoint = rocksdb::checkpoint::TransactionDBCheckpoint::new(&txn_db)?;
        let target = dir.join(name).with_extension("checkpoint");
        checkpoint.create_checkpoint(&target)?;
        let _ = std::fs::remove_dir_all(&target);
        checkpoint.create_checkpoint_with_log_size(&target, 0)?;
        let _ = std::fs::remove_dir_all(&target);
        let opts = Options::default();
        let mut writer = SstFileWriter::create(&opts);
        writer.open(dir.join(name).with_extension("range.sst"))?;
        writer.delete_range(key, value)?;
        writer.finish()
    } },
];

/// Ops of functions rust-rocksdb 0.25 added (none on an older release).
#[cfg(not(rocksdb_0_25))]
pub const OPS_SINCE_0_25: &[Op] = &[];
