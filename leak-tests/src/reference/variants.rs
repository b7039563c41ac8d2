//! What the planted variants do beside the correct store: native allocations kept, a pool, a cache beside a leak, transactions and a side DB.

#[allow(clippy::wildcard_imports)]
use super::*;

impl ReferenceStore {
    /// Planted: `bytes` of native memory, no handle, no wrapper, kept until the store drops.
    pub(super) fn leak_native(&self, bytes: usize) {
        // SAFETY: a plain C allocation, deliberately never freed before the store drops.
        let p = unsafe { libc::malloc(bytes) };
        if !p.is_null() {
            // SAFETY: `p` points to `bytes` writable bytes.
            unsafe { p.cast::<u8>().write_bytes(0xa5, bytes) };
        }
        lock(&self.planted).raw_mallocs.push(std::hint::black_box(p) as usize);
    }

    /// The leak-beside-give-back variant's pool, filled before the first cycle.
    pub(super) fn fill_pool(&self) {
        let mut planted = lock(&self.planted);
        planted.pool.reserve_exact(POOL_BUFFERS);
        for _ in 0..POOL_BUFFERS {
            // SAFETY: a plain C allocation, freed by `give_back` or when the store drops.
            let p = unsafe { libc::malloc(POOL_BUFFER_BYTES) };
            if !p.is_null() {
                planted.pool.push(p as usize);
            }
        }
    }

    /// Gives one buffer of the pool back (none once it is empty).
    pub(super) fn give_back(&self) {
        if let Some(p) = lock(&self.planted).pool.pop() {
            // SAFETY: allocated by libc::malloc in `fill_pool` and not freed since.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
    }

    /// Planted: a failed `DB::list_cf` of a directory with no DB; the binding keeps 8 B of it.
    #[allow(clippy::disallowed_types, clippy::disallowed_methods)] // the binding's own call, on purpose
    pub(super) fn list_missing_cf(&self) {
        let missing = self.config.dir.join("no-db-here");
        drop(std::hint::black_box(rocksdb::DB::list_cf(&rocksdb::Options::default(), missing)));
    }

    /// Planted: one more record of 1 KiB in a list kept for the life of the store.
    pub(super) fn keep_record(&self, cycle: u64) {
        let mut planted = lock(&self.planted);
        let fill = cycle.to_le_bytes();
        planted.records.extend((0..KIB_LEAK_BYTES).map(|i| fill[i % 8]));
    }

    /// The error-path-beside-cache variant's function: a buffer made each cycle, kept in a small
    /// cache that evicts its oldest on the normal path, forgotten on the error path (1 cycle in 4).
    pub(super) fn load_value(&self, cycle: u64) {
        let buffer = planted!("error-path-beside-cache", vec![(cycle as u8) ^ 0x5a; 384]);
        if mix(cycle ^ 0xe440).is_multiple_of(4) {
            // The error path: a retry that never comes was to have used it.
            std::mem::forget(std::hint::black_box(buffer));
            return;
        }
        let mut planted = lock(&self.planted);
        planted.small_cache.push_back(buffer);
        if planted.small_cache.len() > SMALL_CACHE_ENTRIES {
            planted.small_cache.pop_front();
        }
    }

    /// The transaction DB [`Variant::TransactionLeakOnError`] keeps for the run (declared shared,
    /// with its options).
    pub(super) fn open_transactions(&self, ledger: &Ledger) -> Result<(), StoreError> {
        let fail = |source| StoreError::RocksDb { task: 0, segment: 0, what: "transaction db", source };
        let _owner = owner_scope("transaction db");
        let mut opts = TrackedOptions::new(ledger);
        opts.create_if_missing(true);
        let txn_opts = TrackedTransactionDbOptions::new(ledger);
        let db = TrackedTransactionDb::<SingleThreaded>::open(&opts, &txn_opts, self.config.dir.join("transactions"))
            .map_err(fail)?;
        for token in [db.token(), opts.token(), txn_opts.token()] {
            token.declare_shared();
        }
        lock(&self.planted).transactions = Some((db, opts, txn_opts));
        Ok(())
    }

    /// The cycle's marker, written in a transaction of the kept transaction DB and committed;
    /// planted: when the commit is to fail, the transaction is forgotten on the error path.
    pub(super) fn commit_in_transaction(&self, ctx: &CycleCtx<'_>) -> Result<(), StoreError> {
        let fail = |source| StoreError::RocksDb { task: 0, segment: ctx.cycle, what: "transaction db", source };
        let planted = lock(&self.planted);
        let Some((db, ..)) = &planted.transactions else { return Ok(()) };
        let _owner = owner_scope(format!("cycle {}", ctx.cycle));
        let txn = db.transaction();
        txn.put(ctx.cycle.to_be_bytes(), b"marker").map_err(fail)?;
        if ctx.faults.check_error("work.commit") {
            planted!("transaction-leak-on-error", std::mem::forget(txn));
            return Err(StoreError::Injected { task: 0, point: "work.commit" });
        }
        txn.commit().map_err(fail)
    }

    /// An untracked DB beside the segments, its memtable (about 64 KiB written) charged to the
    /// task's shared cache through the task's write buffer manager.
    #[allow(clippy::disallowed_types)]
    pub(super) fn open_side_db(&self, ctx: &CycleCtx<'_>, state: &TaskShared) -> Result<rocksdb::DB, StoreError> {
        let path = self.config.dir.join("side").join(format!("cycle_{}", ctx.cycle));
        let fail = |source| StoreError::RocksDb { task: 0, segment: ctx.cycle, what: "side db", source };
        let mut o = rocksdb::Options::default();
        o.create_if_missing(true);
        o.set_write_buffer_size(1 << 20);
        o.set_write_buffer_manager(&state.write_buffers);
        let db = rocksdb::DB::open(&o, &path).map_err(fail)?;
        for i in 0u32..64 {
            db.put(i.to_be_bytes(), [0x5a; 1024]).map_err(fail)?;
        }
        Ok(db)
    }
}

thread_local! {
    /// Whether the comparator-keeps-keys variant's comparator keeps the next key it compares on
    /// this thread (armed around a data write, so the copy is made inside the memtable's insert).
    static KEEP_NEXT_KEY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The keys the comparator-keeps-keys variant's comparator kept: never pruned, as the debugging
/// aid it models never was.
static KEPT_KEYS: Mutex<Vec<Box<[u8]>>> = Mutex::new(Vec::new());

/// The comparator-keeps-keys variant's key order: bytewise, keeping a copy of the first key it
/// compares after [`arm_kept_key`].
pub(super) fn compare_keeping_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    if KEEP_NEXT_KEY.with(|k| k.replace(false)) {
        keep_key(a);
    }
    a.cmp(b)
}

/// Keeps a copy of `key`, padded to [`KEPT_KEY_BYTES`].
#[inline(never)]
fn keep_key(key: &[u8]) {
    let mut copy = vec![0u8; KEPT_KEY_BYTES.max(key.len())];
    copy[..key.len()].copy_from_slice(key);
    lock(&KEPT_KEYS).push(copy.into_boxed_slice());
}

/// Lets go of what the comparator-keeps-keys variant's comparator kept (when the store drops).
pub(super) fn let_go_of_kept_keys() {
    std::mem::take(&mut *lock(&KEPT_KEYS));
}

/// Arms the comparator-keeps-keys variant's comparator for the next comparison on this thread
/// (`false`: disarms it).
pub(super) fn arm_kept_key(armed: bool) {
    KEEP_NEXT_KEY.with(|k| k.set(armed));
}
