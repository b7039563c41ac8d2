//! A cycle's work: records written to the segment their time falls in, offsets committed after the data, a window scanned across segments.

#[allow(clippy::wildcard_imports)]
use super::*;

impl ReferenceStore {
    pub(super) fn work_task(&self, ctx: &CycleCtx<'_>, store: &mut TaskStore) -> Result<(), StoreError> {
        let task = store.task;
        let _owner = owner_scope(format!("task 0_{task}"));
        let book = &self.tasks[task as usize].book;
        let sync_without_wal = || {
            // A real write error: RocksDB rejects a synced write with the WAL disabled.
            let mut w = TrackedWriteOptions::new(ctx.ledger);
            w.set_sync(true);
            w.disable_wal(true);
            w
        };
        let normal = TrackedWriteOptions::new(ctx.ledger);
        for p in 0..self.config.partitions {
            let start = store.restored.get(&p).copied().unwrap_or(0);
            let end = start + u64::from(self.config.records_per_cycle);
            // Group the partition's records by the segment their timestamp falls in.
            let mut by_segment: BTreeMap<u64, TrackedWriteBatch> = BTreeMap::new();
            for offset in start..end {
                let id = self.segment_of(offset);
                if id < self.retained_from(task) {
                    // A late record: its segment has expired (stream time is past its
                    // retention). Dropped, as a window store drops late records, even while the
                    // expired segment is still open because an error cut work short before the
                    // retention step.
                    lock(book).late_dropped += 1;
                    continue;
                }
                if let std::collections::btree_map::Entry::Vacant(slot) = store.segments.entry(id) {
                    if ctx.faults.check_error("work.roll") {
                        // A real error: opening a fresh segment that must already exist.
                        let path = self.segment_dir(task, id);
                        let existed = path.exists();
                        let mut o = TrackedOptions::new(ctx.ledger);
                        o.create_if_missing(false);
                        let err = match Db::open(&o, &path) {
                            Err(source) => StoreError::RocksDb { task, segment: id, what: "roll", source },
                            Ok(_) => StoreError::Injected { task, point: "work.roll" },
                        };
                        remove_if_made(existed, &path);
                        return Err(err);
                    }
                    slot.insert(self.open_segment(ctx, task, id)?);
                    lock(book).made(id);
                }
                let seg = &store.segments[&id];
                let batch = by_segment.entry(id).or_insert_with(|| TrackedWriteBatch::new(ctx.ledger));
                batch.put_cf(&seg.cf(task, DATA)?, data_key(p, offset), [0x5a; 100]);
            }
            let latest = *store.segments.keys().next_back().unwrap_or(&self.segment_of(start));
            let commit = |store: &TaskStore| -> Result<(), StoreError> {
                let seg = &store.segments[&latest];
                let cf = seg.cf(task, OFFSETS)?;
                let w = if ctx.faults.check_error("work.commit") {
                    sync_without_wal()
                } else {
                    TrackedWriteOptions::new(ctx.ledger)
                };
                seg.db.put_cf_opt(&cf, offset_key(p), end.to_be_bytes(), &w).map_err(|source| StoreError::RocksDb {
                    task,
                    segment: latest,
                    what: "commit",
                    source,
                })
            };
            if self.config.variant == Variant::CommitBeforeWrite {
                // Planted (KAFKA-19479): progress claimed before the output is written.
                planted!("commit-before-write", ());
                commit(store)?;
                lock(book).committed.insert(p, end);
            }
            for (id, batch) in by_segment {
                let w = if ctx.faults.check_error("work.write") {
                    sync_without_wal()
                } else {
                    TrackedWriteOptions::new(ctx.ledger)
                };
                let keeps_key = self.config.variant == Variant::ComparatorKeepsKeys;
                if keeps_key {
                    planted!("comparator-keeps-keys", variants::arm_kept_key(true));
                }
                let written = store.segments[&id].db.write_opt(batch, &w);
                if keeps_key {
                    variants::arm_kept_key(false);
                }
                written.map_err(|source| StoreError::RocksDb { task, segment: id, what: "write", source })?;
            }
            if self.config.variant != Variant::CommitBeforeWrite {
                commit(store)?;
                lock(book).committed.insert(p, end);
            }
            store.restored.insert(p, end);
        }
        if ctx.faults.check_error("work.malformed") {
            // Injected corruption: a malformed entry in the middle of restore's batch.
            let latest = *store.segments.keys().next_back().unwrap_or(&0);
            if let Some(seg) = store.segments.get(&latest) {
                seg.db
                    .put_cf_opt(&seg.cf(task, OFFSETS)?, MALFORMED_KEY, [1, 2, 3], &normal)
                    .map_err(|source| StoreError::RocksDb { task, segment: latest, what: "malformed", source })?;
            }
        }
        self.scan(ctx, store)?;
        // Retention: segments that fell out of the window are closed and destroyed.
        let keep_from = self.retained_from(task);
        let expired: Vec<u64> = store.segments.keys().copied().filter(|&id| id < keep_from).collect();
        for id in expired {
            if let Some(seg) = store.segments.remove(&id) {
                let path = self.segment_dir(task, id);
                let opts = TrackedOptions::new(ctx.ledger);
                if self.config.variant == Variant::UnprunedRegistry {
                    // Planted: the expired segment stays in a registry that is never pruned.
                    planted!("unpruned-registry", ());
                    lock(&self.planted).registry.push(seg);
                } else {
                    seg.db.close().into_result().map_err(|source| StoreError::RocksDb {
                        task,
                        segment: id,
                        what: "close expired",
                        source,
                    })?;
                    drop(seg._db_options);
                }
                let _ = Db::destroy(&opts, &path);
                lock(book).live.remove(&id);
                std::fs::remove_dir_all(&path)
                    .or_else(|e| if e.kind() == std::io::ErrorKind::NotFound { Ok(()) } else { Err(e) })
                    .map_err(io(&path))?;
            }
        }
        Ok(())
    }

    /// The oldest segment id within the retention: stream time is the newest segment ever made
    /// (every open segment was recorded in the book when it was made).
    pub(super) fn retained_from(&self, task: u32) -> u64 {
        self.retention_floor(lock(&self.tasks[task as usize].book).newest.unwrap_or(0))
    }

    /// The oldest segment within the retention when `newest` is the newest segment.
    pub(super) fn retention_floor(&self, newest: u64) -> u64 {
        newest.saturating_sub(u64::from(self.config.segments.max(1)) - 1)
    }

    /// A range scan over the most recent records, across every live segment.
    pub(super) fn scan(&self, ctx: &CycleCtx<'_>, store: &TaskStore) -> Result<u64, StoreError> {
        let task = store.task;
        let mut iterators = Vec::new();
        for seg in store.segments.values().rev().take(2) {
            iterators.push((seg.id, seg.db.iterator_cf(&seg.cf(task, DATA)?, IteratorMode::End)));
        }
        if ctx.faults.check_error("work.scan") {
            // The scan fails after its iterators were made: they must still be released.
            return Err(StoreError::Injected { task, point: "work.scan" });
        }
        let mut seen = 0;
        for (id, it) in iterators.iter_mut() {
            for item in it.by_ref().take(8) {
                item.map_err(|source| StoreError::RocksDb { task, segment: *id, what: "scan", source })?;
                seen += 1;
            }
        }
        if self.config.variant == Variant::CachePinningIteratorLeak {
            if let Some(seg) = store.segments.values().next_back() {
                // Planted: an iterator made past the wrappers, positioned (pinning a block of the
                // shared cache and the memtables of its version), never released.
                let cf = seg.cf(task, DATA)?;
                #[allow(clippy::disallowed_types)]
                let db: &rocksdb::DBWithThreadMode<MultiThreaded> = &seg.db;
                planted!("cache-pinning-iterator-leak", ());
                #[allow(clippy::disallowed_methods)]
                let mut it = db.raw_iterator_cf(&cf);
                it.seek_to_first();
                std::mem::forget(it);
            }
        }
        if self.config.variant == Variant::ScanIteratorLeak {
            // Planted (KAFKA-19748's class): one iterator of the scan is never released.
            planted!("scan-iterator-leak", ());
            if let Some((_, it)) = iterators.pop() {
                std::mem::forget(it);
            }
        }
        Ok(seen)
    }
}
