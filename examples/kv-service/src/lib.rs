//! A small key-value service on RocksDB, checked with leakcheck: the store a reader can hold in
//! their head.
//!
//! - One DB with two column families: `users` (records, read through a block cache shared by
//!   every open of the service) and `audit` (one entry per write, with light options of its own
//!   and no cache).
//! - Each cycle opens the DB, writes records (each record and its audit entry in one write
//!   batch), trims the audit trail, scans the records, flushes and closes.
//! - Four fault points: `open.db`, `work.put`, `work.scan`, `close.flush`.
//! - After close, [`Lifecycle::check`] reopens the DB and reads back the last acknowledged record:
//!   an acknowledged write must survive a failed flush.
//!
//! Its `Lifecycle` impl is all leakcheck needs: `tests/` run it with `leakcheck::check`,
//! `src/bin/kv-soak.rs` gives it `check`, `soak` and `compare`, `benches/kv.rs` measures bytes
//! retained per cycle with `leakcheck::bench`.
//!
//! [`Bug`] plants one mistake on purpose, so that the tests show leakcheck catching it.

use std::fmt;
use std::path::PathBuf;

use leakcheck::tracked::{
    SingleThreaded, TrackedBlockBasedOptions, TrackedCache, TrackedCfDescriptor, TrackedDb, TrackedOptions,
    TrackedWriteBatch,
};
use leakcheck::{CycleCtx, Integrity, Ledger, Lifecycle, StoreInfo};

const USERS: &str = "users";
const AUDIT: &str = "audit";
/// Records written per cycle; keys cycle through a fixed key space, and the audit trail keeps
/// the last `AUDIT_KEPT` entries, so the DB does not grow without bound in a long soak.
const WRITES_PER_CYCLE: u64 = 50;
const KEY_SPACE: u64 = 500;
const AUDIT_KEPT: u64 = 5_000;

/// A mistake to plant (the tests show leakcheck catching it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bug {
    /// When the flush at close fails, return before the DB's options are released (the
    /// KAFKA-20616 shape: a failed close-time step skips a release).
    SkipReleaseOnFlushError,
}

/// The service's errors.
#[derive(Debug)]
pub enum KvError {
    /// A fault point fired (an injected failure).
    Injected(&'static str),
    /// RocksDB failed.
    RocksDb(&'static str, rocksdb::Error),
    /// A column family is missing.
    MissingCf(&'static str),
}

impl fmt::Display for KvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KvError::Injected(point) => write!(f, "injected failure at {point}"),
            KvError::RocksDb(what, e) => write!(f, "{what}: {e}"),
            KvError::MissingCf(name) => write!(f, "column family {name} missing"),
        }
    }
}

impl std::error::Error for KvError {}

fn fault(ctx: &CycleCtx<'_>, point: &'static str) -> Result<(), KvError> {
    if ctx.faults.check_error(point) {
        Err(KvError::Injected(point))
    } else {
        Ok(())
    }
}

/// The service: where its data lives, the cache shared by every open, what was acknowledged.
#[derive(Debug)]
pub struct KvService {
    dir: PathBuf,
    /// Shared by every open; let go of when the run is over ([`Lifecycle::let_go`]), made again
    /// if the service is opened after that.
    cache: Option<TrackedCache>,
    cache_bytes: usize,
    written: u64,
    /// The last record acknowledged to a client: (key, value).
    acknowledged: Option<(Vec<u8>, Vec<u8>)>,
    bug: Option<Bug>,
}

/// The open service: the DB and the options it was opened with.
#[derive(Debug)]
pub struct Open {
    db: TrackedDb<SingleThreaded>,
    _options: TrackedOptions,
}

impl KvService {
    /// A service keeping its data in `dir` (created), its handles registered in `ledger`, with
    /// a shared block cache of `cache_bytes`.
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(dir: impl Into<PathBuf>, ledger: &Ledger, cache_bytes: usize) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        let mut service = KvService { dir, cache: None, cache_bytes, written: 0, acknowledged: None, bug: None };
        service.cache(ledger);
        Ok(service)
    }

    /// The cache shared by every open, made when there is none.
    fn cache(&mut self, ledger: &Ledger) -> &TrackedCache {
        self.cache.get_or_insert_with(|| {
            let cache = TrackedCache::new_lru(ledger, self.cache_bytes);
            // One cache for the service's lifetime, shared by every open: not a leak.
            ledger.declare_shared(cache.token());
            cache
        })
    }

    /// The same service with a planted mistake.
    pub fn with_bug(mut self, bug: Bug) -> Self {
        self.bug = Some(bug);
        self
    }

    fn options(&mut self, ledger: &Ledger) -> (TrackedOptions, [TrackedCfDescriptor; 2]) {
        let mut db = TrackedOptions::new(ledger);
        db.create_if_missing(true);
        db.create_missing_column_families(true);
        db.set_keep_log_file_num(1);
        let mut table = TrackedBlockBasedOptions::new(ledger);
        table.set_block_cache(self.cache(ledger));
        let mut users = TrackedOptions::new(ledger);
        users.set_block_based_table_factory(&table);
        let mut light = TrackedBlockBasedOptions::new(ledger);
        light.disable_cache();
        let mut audit = TrackedOptions::new(ledger);
        audit.set_write_buffer_size(256 << 10);
        audit.set_block_based_table_factory(&light);
        (db, [TrackedCfDescriptor::new(USERS, users), TrackedCfDescriptor::new(AUDIT, audit)])
    }

    fn open_db(&mut self, ledger: &Ledger) -> Result<Open, KvError> {
        let (options, cfs) = self.options(ledger);
        let db = TrackedDb::open_cf_descriptors(&options, &self.dir, cfs).map_err(|e| KvError::RocksDb("open", e))?;
        Ok(Open { db, _options: options })
    }
}

impl Lifecycle for KvService {
    type Store = Open;
    type Error = KvError;

    fn fault_points(&self) -> Vec<&'static str> {
        vec!["open.db", "work.put", "work.scan", "close.flush"]
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<Open, KvError> {
        fault(ctx, "open.db")?;
        self.open_db(ctx.ledger)
    }

    fn work(&mut self, open: &mut Open, ctx: &CycleCtx<'_>) -> Result<(), KvError> {
        let db = &open.db;
        let users = db.cf_handle(USERS).ok_or(KvError::MissingCf(USERS))?;
        let audit = db.cf_handle(AUDIT).ok_or(KvError::MissingCf(AUDIT))?;
        for _ in 0..WRITES_PER_CYCLE {
            fault(ctx, "work.put")?;
            let n = self.written;
            let key = format!("user/{:05}", n % KEY_SPACE).into_bytes();
            let value = format!("{{\"seq\": {n}, \"cycle\": {}}}", ctx.cycle).into_bytes();
            let mut batch = TrackedWriteBatch::new(ctx.ledger);
            batch.put_cf(users, &key, &value);
            batch.put_cf(audit, format!("audit/{n:012}"), &key);
            db.write(batch).map_err(|e| KvError::RocksDb("write", e))?;
            self.written += 1;
            self.acknowledged = Some((key, value));
        }
        // Trim the audit trail to its last entries.
        let mut trim = TrackedWriteBatch::new(ctx.ledger);
        trim.delete_range_cf(
            audit,
            format!("audit/{:012}", 0),
            format!("audit/{:012}", self.written.saturating_sub(AUDIT_KEPT)),
        );
        db.write(trim).map_err(|e| KvError::RocksDb("trim", e))?;
        // Read back the records, in key order.
        let mut seen = 0;
        for item in db.iterator_cf(users, rocksdb::IteratorMode::Start) {
            item.map_err(|e| KvError::RocksDb("scan", e))?;
            seen += 1;
            if seen == WRITES_PER_CYCLE / 2 {
                fault(ctx, "work.scan")?;
            }
        }
        Ok(())
    }

    fn close(&mut self, open: Open, ctx: &CycleCtx<'_>) -> Result<(), KvError> {
        let flushed =
            fault(ctx, "close.flush").and_then(|()| open.db.flush().map_err(|e| KvError::RocksDb("flush", e)));
        if flushed.is_err() && self.bug == Some(Bug::SkipReleaseOnFlushError) {
            // Planted: the early return skips the release of the options the DB was opened with.
            let Open { db, _options } = open;
            std::mem::forget(_options);
            let _ = db.close().into_result();
            return flushed;
        }
        let closed = open.db.close().into_result().map_err(|e| KvError::RocksDb("close", e));
        flushed.and(closed)
    }

    fn check(&mut self, ctx: &CycleCtx<'_>) -> Integrity {
        let mut report = Integrity::default();
        let Some((key, value)) = self.acknowledged.clone() else { return report };
        report.records_checked = 1;
        let open = match self.open_db(ctx.ledger) {
            Ok(open) => open,
            Err(e) => {
                report.violation("reopen_failures", 1);
                report.problem(format!("reopen after close: {e}"));
                return report;
            }
        };
        let found = open.db.cf_handle(USERS).map(|users| open.db.get_cf(users, &key));
        if !matches!(&found, Some(Ok(Some(v))) if *v == value) {
            report.violation("lost_records", 1);
            report.problem(format!("acknowledged record {} not read back: {found:?}", String::from_utf8_lossy(&key)));
        }
        if let Err(e) = open.db.close().into_result() {
            report.problem(format!("close after the check: {e}"));
        }
        report
    }

    /// The shared cache outlives every cycle: once the run is over, the service lets go of it,
    /// so that what the cycles still hold after that is theirs (a leak) and not the cache's.
    fn let_go(&mut self) {
        self.cache = None;
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }

    /// Rates are per call: `work.put` is checked 50 times a cycle, so 0.2% fails about one cycle
    /// in ten (at the default 5% it would fail nine in ten, and the scan would rarely run).
    fn default_faults(&self) -> String {
        "open.db=5%,work.put=0.2%,work.scan=5%,close.flush=10%".to_string()
    }

    fn describe(&self) -> StoreInfo {
        StoreInfo::new("kv service").setting("cache_bytes", self.cache_bytes)
    }

    fn rocksdb_memory(&self) -> Option<leakcheck::probe::RocksDbMemory> {
        // Between cycles only the shared cache is alive: what it holds is RocksDB's, not a leak.
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        if let Some(cache) = &self.cache {
            consumers.cache(cache);
        }
        consumers.read().ok()
    }
}
