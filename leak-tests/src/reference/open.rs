//! Opening: a task's segments, their options, restoring committed offsets.

#[allow(clippy::wildcard_imports)]
use super::*;

impl ReferenceStore {
    pub(super) fn segment_dir(&self, task: u32, segment: u64) -> PathBuf {
        self.config.dir.join(format!("task_0_{task}")).join(format!("segment_{segment}"))
    }

    pub(super) fn segment_of(&self, offset: u64) -> u64 {
        offset / self.config.segment_interval
    }

    /// Options of one segment: DB options (with the shared write buffer manager) and the column
    /// family descriptors (data with the shared block cache; offsets with light options of its
    /// own and no block cache).
    pub(super) fn segment_options(
        &self,
        ledger: &Ledger,
        task: u32,
        state: &TaskShared,
    ) -> (TrackedOptions, Vec<TrackedCfDescriptor>) {
        let mut db = TrackedOptions::new(ledger);
        db.create_if_missing(true);
        db.create_missing_column_families(true);
        db.set_keep_log_file_num(1);
        db.set_allow_mmap_reads(true);
        db.set_write_buffer_manager(&state.write_buffers);

        let data_cf = |ledger: &Ledger| {
            let mut table = TrackedBlockBasedOptions::new(ledger);
            if self.config.variant == Variant::PrivateCachePerSegment {
                // Planted: a private cache per segment instead of the declared shared one.
                let private = planted!("private-cache-per-segment", TrackedCache::new_lru(ledger, 8 << 20));
                table.set_block_cache(&private);
            } else {
                table.set_block_cache(&state.cache);
            }
            let mut o = TrackedOptions::new(ledger);
            o.set_block_based_table_factory(&table);
            if self.config.variant == Variant::ComparatorKeepsKeys {
                o.set_comparator("leak-tests.keeping-keys", Box::new(variants::compare_keeping_keys));
            }
            o
        };
        let mut cfs = Vec::new();
        if self.config.is_migrating(task) {
            cfs.push(TrackedCfDescriptor::new(DATA_OLD, data_cf(ledger)));
        }
        cfs.push(TrackedCfDescriptor::new(DATA, data_cf(ledger)));
        cfs.push(TrackedCfDescriptor::new(OFFSETS, self.offsets_options(ledger)));
        (db, cfs)
    }

    /// The offsets column family's own light options: small memtable, no block cache.
    pub(super) fn offsets_options(&self, ledger: &Ledger) -> TrackedOptions {
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.disable_cache();
        let mut o = TrackedOptions::new(ledger);
        o.set_write_buffer_size(256 << 10);
        o.set_block_based_table_factory(&table);
        match self.config.variant {
            Variant::OffsetsOptionsUnownedTracked => {
                // Planted (KAFKA-20616): options made for the offsets CF, handed to nobody.
                std::mem::forget(planted!("offsets-options-tracked", TrackedOptions::new(ledger)));
            }
            Variant::OffsetsOptionsUnownedRaw => {
                // Planted: the same through raw librocksdb-sys, with no wrapper to see it.
                planted!("offsets-options-raw", ());
                // SAFETY: creates a native options object that is deliberately never destroyed.
                let raw = unsafe { librocksdb_sys::rocksdb_options_create() };
                lock(&self.planted).raw_options.push(raw as usize);
            }
            _ => {}
        }
        o
    }

    pub(super) fn open_segment(&self, ctx: &CycleCtx<'_>, task: u32, id: u64) -> Result<Segment, StoreError> {
        let _owner = owner_scope(format!("segment {id}"));
        let (mut db_options, cfs) = self.segment_options(ctx.ledger, task, self.shared(task)?);
        if ctx.faults.check_error("open.options") {
            if self.config.variant == Variant::OpenFailureLeaksOptions {
                // Planted: the error path forgets what it made so far.
                planted!("open-failure-leaks-options", ());
                std::mem::forget(db_options);
                std::mem::forget(cfs);
            }
            return Err(StoreError::Injected { task, point: "open.options" });
        }
        let path = self.segment_dir(task, id);
        if ctx.faults.check_error("open.db") {
            // A real open error: demand the opposite of what is on disk.
            if path.join("CURRENT").exists() {
                db_options.set_error_if_exists(true);
            } else {
                db_options.create_if_missing(false);
            }
        }
        let existed = path.exists();
        let db = Db::open_cf_descriptors(&db_options, &path, cfs).map_err(|source| {
            // RocksDB makes the directory before it fails: a segment that never opened must not
            // leave one behind (the integrity check calls any directory that is not a live
            // segment stale).
            remove_if_made(existed, &path);
            StoreError::RocksDb { task, segment: id, what: "open", source }
        })?;
        Ok(Segment { id, db, _db_options: db_options })
    }

    /// Reads a segment's offset entries: valid ones into `out` (keeping the highest per
    /// partition), malformed ones skipped and counted.
    pub(super) fn restore_segment(
        &self,
        task: u32,
        seg: &Segment,
        out: &mut BTreeMap<u32, u64>,
    ) -> Result<u64, StoreError> {
        let cf = seg.cf(task, OFFSETS)?;
        let mut malformed = 0;
        for item in seg.db.iterator_cf(&cf, IteratorMode::Start) {
            let (key, value) =
                item.map_err(|source| StoreError::RocksDb { task, segment: seg.id, what: "restore", source })?;
            if &*key == CLOSED_MARKER {
                continue;
            }
            match parse_offset(&key, &value) {
                Some((p, next)) => {
                    let e = out.entry(p).or_insert(0);
                    *e = (*e).max(next);
                }
                None => {
                    malformed += 1;
                    if self.config.variant == Variant::RestoreDropsBatch {
                        // Planted (KAFKA-15800): the exception aborts the rest of the batch.
                        planted!("restore-drops-batch", ());
                        break;
                    }
                }
            }
        }
        Ok(malformed)
    }

    pub(super) fn open_task(&self, ctx: &CycleCtx<'_>, task: u32, worker: u32) -> Result<TaskStore, StoreError> {
        let _owner = owner_scope(format!("task 0_{task}"));
        let state = &self.tasks[task as usize];
        if let Some(other) = lock(&self.owners).insert(task, worker) {
            return Err(StoreError::Ownership { task, other });
        }
        if self.config.variant == Variant::SharedCacheDeclaredPerOpen {
            // Planted: one more "shared" cache per open, declared and never pruned.
            let cache = planted!("shared-cache-declared-per-open", TrackedCache::new_lru(ctx.ledger, 1 << 20));
            ctx.ledger.declare_shared(cache.token());
            lock(&self.planted).shared_caches.push(cache);
        }
        let claim = OwnerClaim { owners: self.owners.clone(), task };
        let mut store = TaskStore {
            _claim: claim,
            task,
            segments: BTreeMap::new(),
            restored: BTreeMap::new(),
            malformed_skipped: 0,
        };
        let live = lock(&state.book).live.clone();
        for id in live {
            let seg = self.open_segment(ctx, task, id)?;
            store.segments.insert(id, seg);
        }
        if ctx.faults.check_error("open.restore") {
            return Err(StoreError::Injected { task, point: "open.restore" });
        }
        for seg in store.segments.values() {
            store.malformed_skipped += self.restore_segment(task, seg, &mut store.restored)?;
        }
        if self.config.variant == Variant::CacheChargedDbNeverClosed && task == 0 {
            // Planted: a side DB charged to the shared cache, parked, never closed.
            planted!("cache-charged-db-never-closed", ());
            let side = self.open_side_db(ctx, self.shared(task)?)?;
            lock(&self.planted).side_dbs.push(side);
        }
        Ok(store)
    }
}
