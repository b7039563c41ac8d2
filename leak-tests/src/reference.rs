//! The reference segmented store: the built-in store `leakcheck check` runs, modelled on Kafka
//! Streams' segmented window stores.
//!
//! - T tasks, each owning a store of S live time segments. A segment is one RocksDB instance in its
//!   own directory with a `data` column family (block cache and write buffer manager shared per
//!   task, declared shared in the ledger) and an `offsets` column family with its own light
//!   options (no block cache: the Kafka 4.3.1 fix). Migrating tasks hold `data_old`, `data` and
//!   `offsets` (the dual accessor).
//! - Each cycle a task restores its committed offsets, processes records, writes them to the
//!   segment their timestamp falls in (rolling to new segments as stream time advances, closing
//!   and destroying segments past the retention), commits offsets only after the data is written
//!   (at-least-once), and scans a recent window across segments with iterators.
//! - Close writes a closed-state marker into every segment's offsets column family, then releases
//!   every handle whether or not that write failed, and returns the error.
//! - Tasks move between worker threads from cycle to cycle (a rebalance).
//! - After each cycle, [`Lifecycle::check`] reopens every live segment: no LOCK may still be held,
//!   committed offsets must not be ahead of the data, restore must return every valid offset
//!   entry (skipping a malformed one), and destroyed segments must be gone.
//!
//! The planted-leak catalog (`leak-tests/`) plants one bug at a time into this store through
//! [`Variant`]; [`Variant::Correct`] is the store itself.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rocksdb::{IteratorMode, MultiThreaded, SingleThreaded};

use crate::lock;
use crate::planted::planted;
use leakcheck::harness::{CycleCtx, Integrity, Lifecycle, StoreInfo};
use leakcheck::probe::RocksDbMemory;
use leakcheck::tracked::{
    TrackedBlockBasedOptions, TrackedCache, TrackedCfDescriptor, TrackedDb, TrackedOptions, TrackedTransactionDb,
    TrackedTransactionDbOptions, TrackedWriteBatch, TrackedWriteBufferManager, TrackedWriteOptions,
};
use leakcheck::{owner_scope, Ledger};

type Db = TrackedDb<MultiThreaded>;

/// Column family names.
const DATA: &str = "data";
const DATA_OLD: &str = "data_old";
const OFFSETS: &str = "offsets";
/// The closed-state marker's key in the offsets column family.
const CLOSED_MARKER: &[u8] = b"closed";
/// Offset entries are `offset/<partition>` -> next offset (8 bytes, big-endian).
const OFFSET_PREFIX: &[u8] = b"offset/";
/// A malformed entry sorts before every valid one (`!` < `0`), in the middle of restore's batch.
const MALFORMED_KEY: &[u8] = b"offset/!bad";

/// Bytes of the raw-malloc-per-cycle variant's leak.
const RAW_LEAK_BYTES: usize = 4096;
/// What the marker-failure variant leaks per failed marker write.
const MARKER_LEAK_BYTES: usize = 1024;
/// What the marker-failure-leaks-sometimes variant leaks on the firings it leaks on.
const SOMETIMES_LEAK_BYTES: usize = 4096;
/// The snapshot-bursts variant's burst.
const BURST_BYTES: usize = 32 << 10;
/// What the leak-beside-give-back, leak-begins-late and doubling-container variants keep per
/// cycle.
const KIB_LEAK_BYTES: usize = 1024;
/// The leak-beside-give-back variant's pool: buffers of this size, made before the first cycle,
/// one given back per cycle.
const POOL_BUFFER_BYTES: usize = 1280;
/// Buffers in that pool (more than `check` runs cycles).
const POOL_BUFFERS: usize = 4096;
/// The first cycle that the leak-begins-late variant leaks in.
pub const LATE_LEAK_FROM: u64 = 150;

/// splitmix64: the planted variants' deterministic choices of cycles.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The reference store's default fault plan (`leakcheck check` without `--faults`): every close
/// path reached (the marker write and the flush failing), failing writes, scans that panic,
/// failing opens and malformed offset entries, at the rates a real run meets them.
/// The reference store's integrity violations ([`Integrity::violation`]): a record below a
/// committed offset missing (at-least-once broken), a valid offset restore did not return, a
/// LOCK still held at reopen, any other reopen or scan failure, a destroyed segment directory
/// still on disk, a store owned by no live task.
pub const VIOLATIONS: [&str; 6] =
    ["lost_records", "offsets_dropped_by_restore", "locks_held", "reopen_failures", "stale_dirs", "ownership_errors"];
/// Malformed offset entries skipped by restore (KAFKA-15800's input): counted, not a failure.
pub const MALFORMED_SKIPPED: &str = "malformed_offsets_skipped";
/// Records dropped as late (their segment past the retention), as a window store drops them.
pub const LATE_DROPPED: &str = "late_records_dropped";

pub const DEFAULT_PLAN: &str =
    "close.marker=10%,close.flush=5%,work.write=5%,work.scan=3%:panic,open.db=3%,open.options=2%,work.malformed=5%";

/// Every fault point the reference store checks.
pub const FAULT_POINTS: [&str; 10] = [
    "open.options",
    "open.db",
    "open.restore",
    "work.roll",
    "work.write",
    "work.commit",
    "work.malformed",
    "work.scan",
    "close.marker",
    "close.flush",
];

/// One planted bug (for the leak-test catalog), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[non_exhaustive]
pub enum Variant {
    /// The store as it should be.
    #[default]
    Correct,
    /// The offsets column family's options are created through the tracked wrappers and never
    /// owned by anyone (KAFKA-20616's first leak).
    OffsetsOptionsUnownedTracked,
    /// The same, through raw librocksdb-sys calls with no wrapper: only the bytes signal sees it.
    OffsetsOptionsUnownedRaw,
    /// A failed close-time marker write skips the release of the segment (KAFKA-20616's second).
    MarkerFailureSkipsRelease,
    /// A migrating segment releases only the first of its three column-family references when the
    /// marker write fails.
    MigratingReleasesFirstOnly,
    /// A failure during open, after the options were made, leaks them.
    OpenFailureLeaksOptions,
    /// A range-scan iterator is never released (KAFKA-19748's class).
    ScanIteratorLeak,
    /// A segment DB is never closed: LOCK held, SST files open and mapped.
    SegmentNeverClosed,
    /// Each segment makes a private 8 MiB cache instead of using the declared shared one.
    PrivateCachePerSegment,
    /// A registry of segments that is never pruned: everything reachable, nothing freed.
    UnprunedRegistry,
    /// A close error swallowed.
    SwallowedCloseError,
    /// Offsets committed before the data write succeeded (KAFKA-19479).
    CommitBeforeWrite,
    /// Restore drops the rest of a batch after one malformed offset entry (KAFKA-15800).
    RestoreDropsBatch,
    /// A raw C allocation of 4 KiB per cycle with no handle at all (the catalog asks for at least
    /// 1 KiB; 4 KiB is decided within the detection matrix's 100 cycles on the noisier
    /// reference store, where 1 KiB takes 60 to 100).
    RawMallocPerCycle,
    /// A failed close-time marker write leaks 1 KiB of native memory (an error path that skips a
    /// free, as KAFKA-20616's skipped release): only at the firing rate, diluted in a per-cycle
    /// slope.
    MarkerFailureLeaksBytes,
    /// A side DB opened through rust-rocksdb directly, its memtable charged to the task's shared
    /// cache by the write buffer manager, is never closed: the cache's usage grows with it, and
    /// only a reservation counted once leaves its memory unexplained.
    CacheChargedDbNeverClosed,
    /// A range-scan iterator made through rust-rocksdb directly is never released: it pins a data
    /// block in the task's shared cache and the memtable charged to it, past the segment's close.
    CachePinningIteratorLeak,
    /// Every open of a task makes one more cache, declares it shared and parks it in a registry
    /// never pruned: a leak behind the declaration, invisible to `retained = live - shared`.
    SharedCacheDeclaredPerOpen,
    /// 16 B of native memory per cycle (one `malloc(16)`, a size class of its own): a quarter of
    /// the byte tolerance per cycle, found by check's growth rule.
    SteadyBytes16,
    /// 4 B of native memory per cycle on average (8 B, jemalloc's smallest size class, every
    /// other cycle): found by a soak.
    SteadyBytes4,
    /// A 32 KiB snapshot buffer kept in about 1% of cycles (a hash of the cycle picks them):
    /// bursts, flat between them.
    SnapshotBursts,
    /// A failed close-time marker write leaks 4 KiB on 40% of its firings (a hash of the cycle
    /// and the segment picks them): a median per firing would say 0.
    MarkerFailureLeaksSometimes,
    /// A file outside the store's directory (`/dev/null`) opened every 50 cycles and kept.
    FdOutsideDir,
    /// A DB kept open for the run (declared shared, accounted for) whose memtable grows by 1 KiB
    /// a cycle and is never flushed: what RocksDB accounts for never levels off.
    AccountedGrowth,
    /// Each cycle writes a marker in a transaction of a transaction DB kept open (declared
    /// shared); when its commit is to fail (an injected error at `work.commit`), the error path
    /// forgets the transaction (a retry that never comes) instead of rolling it back.
    TransactionLeakOnError,
    /// One failed `DB::list_cf` a cycle (of a directory with no DB): the binding's own leak
    /// (rust-rocksdb 0.25 returns the error before freeing the C array of names, 8 B for none),
    /// 8 B a cycle in a size class RocksDB allocates thousands of times a cycle.
    ListCfFailure,
    /// 1 KiB kept per cycle beside a pool filled before the first cycle that gives one 1,280 B
    /// buffer back per cycle: the process's allocated bytes fall by 256 B a cycle while the leak
    /// goes on.
    LeakBesideGiveBack,
    /// 1 KiB kept per cycle from cycle [`LATE_LEAK_FROM`] on: a leak that begins in the last
    /// quarter of a 200-cycle check.
    LeakBeginsLate,
    /// A list of records kept for the life of the store, 1 KiB appended each cycle: a container
    /// whose buffer doubles now and then (a realloc to twice the size, the old buffer freed).
    DoublingContainer,
}

/// The reference store's settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ReferenceConfig {
    /// Where the tasks' segment directories live.
    pub dir: PathBuf,
    /// Tasks (T).
    pub tasks: u32,
    /// Live segments per task (S): the retention, in segments.
    pub segments: u32,
    /// Input partitions per task.
    pub partitions: u32,
    /// Records per partition per cycle.
    pub records_per_cycle: u32,
    /// Stream time per segment. With one time unit per record, a new segment starts every
    /// `segment_interval / records_per_cycle` cycles.
    pub segment_interval: u64,
    /// Odd-numbered tasks use the migrating (dual column family) layout.
    pub migrating: bool,
    /// Worker threads the tasks are spread over (rotated every cycle).
    pub workers: u32,
    /// Shared block cache per task.
    pub cache_bytes: usize,
    /// Shared write buffer manager per task.
    pub write_buffer_bytes: usize,
    /// The planted bug, if any.
    pub variant: Variant,
}

impl ReferenceConfig {
    /// Defaults for a store under `dir`: 2 tasks x 3 segments, 2 partitions, 10 records per
    /// partition per cycle, a new segment every 5 cycles, migrating odd tasks, 2 workers.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        ReferenceConfig {
            dir: dir.into(),
            tasks: 2,
            segments: 3,
            partitions: 2,
            records_per_cycle: 10,
            segment_interval: 50,
            migrating: true,
            workers: 2,
            cache_bytes: 8 << 20,
            write_buffer_bytes: 4 << 20,
            variant: Variant::Correct,
        }
    }

    fn is_migrating(&self, task: u32) -> bool {
        self.migrating && task % 2 == 1
    }
}

/// The reference store's errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A RocksDB call failed.
    #[error("task {task} segment {segment}: {what}: {source}")]
    RocksDb {
        /// The task.
        task: u32,
        /// The segment.
        segment: u64,
        /// What was being done.
        what: &'static str,
        /// RocksDB's error.
        source: rocksdb::Error,
    },
    /// A fault was injected where no real RocksDB error can be provoked.
    #[error("task {task}: injected failure at {point}")]
    Injected {
        /// The task.
        task: u32,
        /// The fault point.
        point: &'static str,
    },
    /// A file system operation failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A task's store is already open on another worker.
    #[error("task {task}: store already owned by worker {other}")]
    Ownership {
        /// The task.
        task: u32,
        /// The worker that owns it.
        other: u32,
    },
    /// A segment lacks a column family it must have.
    #[error("task {task} segment {segment}: column family {name} missing")]
    MissingCf {
        /// The task.
        task: u32,
        /// The segment.
        segment: u64,
        /// The column family.
        name: &'static str,
    },
    /// The task's shared cache was let go of ([`Lifecycle::let_go`]) and not made again.
    #[error("task {task}: its shared cache and write buffer manager were let go of")]
    LetGo {
        /// The task.
        task: u32,
    },
}

/// A segment: one RocksDB instance.
struct Segment {
    id: u64,
    db: Db,
    /// The DB options, owned by the segment until it closes (as Kafka's store owns its options).
    _db_options: TrackedOptions,
}

/// A task's claim on its store: exactly one live claim per open task store. Dropping the store
/// (closing it, or unwinding past it) drops the claim; a claim left after close is an orphan.
struct OwnerClaim {
    owners: Arc<Mutex<BTreeMap<u32, u32>>>,
    task: u32,
}

impl Drop for OwnerClaim {
    fn drop(&mut self) {
        lock(&self.owners).remove(&self.task);
    }
}

/// One task's open store.
pub struct TaskStore {
    _claim: OwnerClaim,
    task: u32,
    segments: BTreeMap<u64, Segment>,
    restored: BTreeMap<u32, u64>,
    malformed_skipped: u64,
}

/// The open stores of every task, one cycle long.
pub struct OpenStores {
    tasks: Vec<TaskStore>,
}

/// What a task knows about its data, updated the moment something happens (a segment made or
/// destroyed, an offset committed), so that an error or a panic later in the cycle cannot make
/// it forget.
#[derive(Debug, Clone, Default)]
struct Book {
    /// Offsets known to be committed durably, per partition: the truth restore must return.
    committed: BTreeMap<u32, u64>,
    /// Segments alive on disk; no other segment directory may exist.
    live: BTreeSet<u64>,
    /// The newest segment ever made: stream time, in segments. (Not the set of destroyed
    /// segments: that would grow by a few bytes per cycle for the life of the store, a slow
    /// logical leak in the reference store itself, measured on a 25-minute soak.)
    newest: Option<u64>,
    /// Records dropped since the last check because their segment had expired.
    late_dropped: u64,
}

impl Book {
    /// Records a segment made on disk.
    fn made(&mut self, id: u64) {
        self.live.insert(id);
        self.newest = self.newest.max(Some(id));
    }
}

/// Per-task state that outlives a cycle.
struct TaskState {
    book: Mutex<Book>,
    /// What the task's segments share; let go of after the run ([`Lifecycle::let_go`]), made
    /// again if the store is opened after that.
    shared: Option<TaskShared>,
}

/// A task's resources shared by its segments, declared shared in the ledger.
struct TaskShared {
    /// The block cache of the segments' data column families.
    cache: TrackedCache,
    /// The write buffer manager of the segments, charging their memtables to the cache.
    write_buffers: TrackedWriteBufferManager,
}

impl TaskShared {
    fn new(ledger: &Ledger, config: &ReferenceConfig, task: u32) -> Self {
        let _owner = owner_scope(format!("task 0_{task}"));
        let cache = TrackedCache::new_lru(ledger, config.cache_bytes);
        let write_buffers = TrackedWriteBufferManager::new_with_cache(ledger, config.write_buffer_bytes, false, &cache);
        ledger.declare_shared(cache.token());
        ledger.declare_shared(write_buffers.token());
        TaskShared { cache, write_buffers }
    }
}

/// Things the planted bugs keep alive on purpose: they model a process that lost track of them.
#[derive(Default)]
#[allow(clippy::disallowed_types)] // side_dbs: untracked on purpose
struct Planted {
    raw_options: Vec<usize>,
    raw_mallocs: Vec<usize>,
    registry: Vec<Segment>,
    side_dbs: Vec<rocksdb::DB>,
    shared_caches: Vec<TrackedCache>,
    files: Vec<std::fs::File>,
    /// The leak-beside-give-back variant's pool (raw buffers of [`POOL_BUFFER_BYTES`]).
    pool: Vec<usize>,
    /// The doubling-container variant's records.
    records: Vec<u8>,
    accounted: Option<(TrackedDb<SingleThreaded>, TrackedOptions)>,
    transactions: Option<(TrackedTransactionDb<SingleThreaded>, TrackedOptions, TrackedTransactionDbOptions)>,
}

impl Planted {
    /// Room for the raw allocations of a 100,000-cycle soak, taken up front: the list of what
    /// a small steady leak keeps must not grow by doublings of its own beside it.
    fn with_room() -> Self {
        Planted { raw_mallocs: Vec::with_capacity(RAW_MALLOC_ROOM), ..Planted::default() }
    }
}

/// Raw allocations [`Planted`] has room for without growing.
const RAW_MALLOC_ROOM: usize = 1 << 17;

/// The reference segmented store.
pub struct ReferenceStore {
    config: ReferenceConfig,
    tasks: Vec<TaskState>,
    /// Which worker owns which task's open store.
    owners: Arc<Mutex<BTreeMap<u32, u32>>>,
    planted: Mutex<Planted>,
}

impl fmt::Debug for ReferenceStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReferenceStore").field("config", &self.config).finish_non_exhaustive()
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io { path: path.to_path_buf(), source }
}

impl ReferenceStore {
    /// A store in `config.dir` (created if missing). Makes each task's shared block cache and
    /// write buffer manager now and declares them shared in `ledger`: they live as long as the
    /// store value.
    ///
    /// # Errors
    /// When the directory cannot be created.
    pub fn new(config: ReferenceConfig, ledger: &Ledger) -> Result<Self, StoreError> {
        std::fs::create_dir_all(&config.dir).map_err(io(&config.dir))?;
        let tasks = (0..config.tasks)
            .map(|t| TaskState { book: Mutex::new(Book::default()), shared: Some(TaskShared::new(ledger, &config, t)) })
            .collect();
        let store = ReferenceStore { config, tasks, owners: Arc::default(), planted: Mutex::new(Planted::with_room()) };
        match store.config.variant {
            Variant::LeakBesideGiveBack => store.fill_pool(),
            // Opened before the run, as a DB kept for the life of the store is.
            Variant::AccountedGrowth => store.open_accounted(ledger)?,
            Variant::TransactionLeakOnError => store.open_transactions(ledger)?,
            _ => {}
        }
        Ok(store)
    }

    /// Makes again what [`Lifecycle::let_go`] let go of, before the store is used after it.
    fn make_shared(&mut self, ledger: &Ledger) -> Result<(), StoreError> {
        for (t, state) in (0u32..).zip(&mut self.tasks) {
            if state.shared.is_none() {
                state.shared = Some(TaskShared::new(ledger, &self.config, t));
            }
        }
        if self.config.variant == Variant::AccountedGrowth && lock(&self.planted).accounted.is_none() {
            self.open_accounted(ledger)?;
        }
        Ok(())
    }

    /// What `task`'s segments share.
    fn shared(&self, task: u32) -> Result<&TaskShared, StoreError> {
        self.tasks[task as usize].shared.as_ref().ok_or(StoreError::LetGo { task })
    }

    /// The settings.
    pub fn config(&self) -> &ReferenceConfig {
        &self.config
    }

    fn segment_dir(&self, task: u32, segment: u64) -> PathBuf {
        self.config.dir.join(format!("task_0_{task}")).join(format!("segment_{segment}"))
    }

    fn segment_of(&self, offset: u64) -> u64 {
        offset / self.config.segment_interval
    }

    /// Options of one segment: DB options (with the shared write buffer manager) and the column
    /// family descriptors (data with the shared block cache; offsets with light options of its
    /// own and no block cache).
    fn segment_options(
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
    fn offsets_options(&self, ledger: &Ledger) -> TrackedOptions {
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

    fn open_segment(&self, ctx: &CycleCtx<'_>, task: u32, id: u64) -> Result<Segment, StoreError> {
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
    fn restore_segment(&self, task: u32, seg: &Segment, out: &mut BTreeMap<u32, u64>) -> Result<u64, StoreError> {
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

    fn open_task(&self, ctx: &CycleCtx<'_>, task: u32, worker: u32) -> Result<TaskStore, StoreError> {
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

    /// Planted: `bytes` of native memory, no handle, no wrapper, kept until the store drops.
    fn leak_native(&self, bytes: usize) {
        // SAFETY: a plain C allocation, deliberately never freed before the store drops.
        let p = unsafe { libc::malloc(bytes) };
        if !p.is_null() {
            // SAFETY: `p` points to `bytes` writable bytes.
            unsafe { p.cast::<u8>().write_bytes(0xa5, bytes) };
        }
        lock(&self.planted).raw_mallocs.push(std::hint::black_box(p) as usize);
    }

    /// The leak-beside-give-back variant's pool, filled before the first cycle.
    fn fill_pool(&self) {
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
    fn give_back(&self) {
        if let Some(p) = lock(&self.planted).pool.pop() {
            // SAFETY: allocated by libc::malloc in `fill_pool` and not freed since.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
    }

    /// Planted: a failed `DB::list_cf` of a directory with no DB; the binding keeps 8 B of it.
    #[allow(clippy::disallowed_types, clippy::disallowed_methods)] // the binding's own call, on purpose
    fn list_missing_cf(&self) {
        let missing = self.config.dir.join("no-db-here");
        drop(std::hint::black_box(rocksdb::DB::list_cf(&rocksdb::Options::default(), missing)));
    }

    /// Planted: one more record of 1 KiB in a list kept for the life of the store.
    fn keep_record(&self, cycle: u64) {
        let mut planted = lock(&self.planted);
        let fill = cycle.to_le_bytes();
        planted.records.extend((0..KIB_LEAK_BYTES).map(|i| fill[i % 8]));
    }

    /// The accounted-growth variant's DB, kept for the life of the store (declared shared,
    /// reported to RocksDB's accounting), with a write buffer of 1 GiB: it never flushes.
    fn open_accounted(&self, ledger: &Ledger) -> Result<(), StoreError> {
        let fail = |source| StoreError::RocksDb { task: 0, segment: 0, what: "accounted db", source };
        let _owner = owner_scope("accounted db");
        let mut opts = TrackedOptions::new(ledger);
        opts.create_if_missing(true);
        opts.set_write_buffer_size(1 << 30);
        opts.set_arena_block_size(4 << 10);
        opts.set_disable_auto_compactions(true);
        let db = TrackedDb::<SingleThreaded>::open(&opts, self.config.dir.join("accounted")).map_err(fail)?;
        for token in [db.token(), opts.token()] {
            token.declare_shared();
        }
        lock(&self.planted).accounted = Some((db, opts));
        Ok(())
    }

    /// Planted: the kept DB's memtable takes 1 KiB more every cycle.
    fn grow_accounted(&self, ctx: &CycleCtx<'_>) -> Result<(), StoreError> {
        let fail = |source| StoreError::RocksDb { task: 0, segment: ctx.cycle, what: "accounted db", source };
        let planted = lock(&self.planted);
        if let Some((db, _)) = &planted.accounted {
            planted!("accounted-growth", db.put(ctx.cycle.to_be_bytes(), [0x5a; 1024]).map_err(fail)?);
        }
        Ok(())
    }

    /// The transaction DB [`Variant::TransactionLeakOnError`] keeps for the run (declared shared,
    /// with its options).
    fn open_transactions(&self, ledger: &Ledger) -> Result<(), StoreError> {
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
    fn commit_in_transaction(&self, ctx: &CycleCtx<'_>) -> Result<(), StoreError> {
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
    fn open_side_db(&self, ctx: &CycleCtx<'_>, state: &TaskShared) -> Result<rocksdb::DB, StoreError> {
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

    fn work_task(&self, ctx: &CycleCtx<'_>, store: &mut TaskStore) -> Result<(), StoreError> {
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
                store.segments[&id].db.write_opt(batch, &w).map_err(|source| StoreError::RocksDb {
                    task,
                    segment: id,
                    what: "write",
                    source,
                })?;
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
    fn retained_from(&self, task: u32) -> u64 {
        self.retention_floor(lock(&self.tasks[task as usize].book).newest.unwrap_or(0))
    }

    /// The oldest segment within the retention when `newest` is the newest segment.
    fn retention_floor(&self, newest: u64) -> u64 {
        newest.saturating_sub(u64::from(self.config.segments.max(1)) - 1)
    }

    /// A range scan over the most recent records, across every live segment.
    fn scan(&self, ctx: &CycleCtx<'_>, store: &TaskStore) -> Result<u64, StoreError> {
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

    /// Closes one segment: the closed-state marker, then the release, whatever the marker did.
    fn close_segment(&self, ctx: &CycleCtx<'_>, task: u32, seg: Segment) -> Result<(), StoreError> {
        let id = seg.id;
        let _owner = owner_scope(format!("segment {id}"));
        let marker = seg.cf(task, OFFSETS).and_then(|cf| {
            let mut w = TrackedWriteOptions::new(ctx.ledger);
            if ctx.faults.check_error("close.marker") {
                // A real RocksDB error: a synced write with the WAL disabled.
                w.set_sync(true);
                w.disable_wal(true);
            }
            seg.db.put_cf_opt(&cf, CLOSED_MARKER, [1], &w).map_err(|source| StoreError::RocksDb {
                task,
                segment: id,
                what: "closed marker",
                source,
            })
        });
        if marker.is_err() {
            match self.config.variant {
                Variant::MarkerFailureSkipsRelease => {
                    // Planted (KAFKA-20616): the exception skips the release that follows.
                    planted!("marker-failure-skips-release", ());
                    std::mem::forget(seg);
                    return marker;
                }
                Variant::MarkerFailureLeaksBytes => {
                    // Planted: the error path returns before freeing a 1 KiB native buffer.
                    planted!("marker-failure-leaks-bytes", self.leak_native(MARKER_LEAK_BYTES));
                }
                Variant::MarkerFailureLeaksSometimes if mix(ctx.cycle.wrapping_mul(1 << 20) ^ id) % 10 < 4 => {
                    // Planted: on 40% of the failures, the error path skips freeing 4 KiB.
                    planted!("marker-failure-leaks-sometimes", self.leak_native(SOMETIMES_LEAK_BYTES));
                }
                Variant::MigratingReleasesFirstOnly if self.config.is_migrating(task) => {
                    // Planted: of the dual accessor's three handles, only the first is released.
                    planted!("migrating-releases-first-only", ());
                    let refs = [DATA_OLD, DATA, OFFSETS].map(|n| seg.db.cf_handle(n));
                    let [first, rest @ ..] = refs;
                    drop(first);
                    std::mem::forget(rest);
                }
                _ => {}
            }
        }
        let flush = if ctx.faults.check_error("close.flush") {
            Err(StoreError::Injected { task, point: "close.flush" })
        } else {
            Ok(())
        };
        // Parked once it has been reopened, so it has SST files open and mapped.
        if self.config.variant == Variant::SegmentNeverClosed && id.is_multiple_of(2) && ctx.cycle >= 2 {
            // Planted: the segment DB is parked, never closed.
            planted!("segment-never-closed", ());
            lock(&self.planted).registry.push(seg);
            return marker.and(flush);
        }
        let closed = seg.db.close();
        let closed = if self.config.variant == Variant::SwallowedCloseError {
            // Planted: the close result is dropped on the floor; with it goes the marker's error.
            planted!("swallowed-close-error", ());
            drop(closed);
            let _ = leakcheck::CloseResult::new(ctx.ledger, "segment", marker);
            return flush;
        } else {
            closed.into_result().map_err(|source| StoreError::RocksDb { task, segment: id, what: "close", source })
        };
        marker.and(flush).and(closed)
    }

    fn close_task(&self, ctx: &CycleCtx<'_>, store: TaskStore) -> Result<(), StoreError> {
        let _owner = owner_scope(format!("task 0_{}", store.task));
        let mut first = Ok(());
        for (_, seg) in store.segments {
            let r = self.close_segment(ctx, store.task, seg);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Runs `f(task, worker)` for each task on the worker its cycle assigns: tasks move between
    /// workers from one cycle to the next (a rebalance).
    fn on_workers<T: Send>(
        &self,
        cycle: u64,
        tasks: Vec<u32>,
        f: impl Fn(u32, u32) -> T + Sync,
    ) -> Result<Vec<(u32, T)>, StoreError> {
        let workers = self.config.workers.max(1);
        let mut assignment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for t in tasks {
            assignment.entry(((u64::from(t) + cycle) % u64::from(workers)) as u32).or_default().push(t);
        }
        let f = &f;
        let results: Vec<std::thread::Result<Vec<(u32, T)>>> = std::thread::scope(|s| {
            let handles: Vec<_> = assignment
                .iter()
                .map(|(&w, ts)| s.spawn(move || ts.iter().map(|&t| (t, f(t, w))).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut out = Vec::new();
        let mut panicked = None;
        for r in results {
            match r {
                Ok(v) => out.extend(v),
                Err(p) => panicked = Some(p),
            }
        }
        if let Some(p) = panicked {
            // Every other worker finished; what they made drops (and is released) here.
            drop(out);
            std::panic::resume_unwind(p);
        }
        out.sort_by_key(|(t, _)| *t);
        Ok(out)
    }

    fn check_task(&self, ctx: &CycleCtx<'_>, task: u32) -> Integrity {
        let _owner = owner_scope(format!("check task 0_{task}"));
        // A snapshot of the book; the late drops are counted since the last check.
        let book = {
            let mut live = lock(&self.tasks[task as usize].book);
            let snapshot = live.clone();
            live.late_dropped = 0;
            snapshot
        };
        let mut report = Integrity::default();
        // Every counter is reported, zeros included: the report shows what was checked.
        for name in VIOLATIONS {
            report.violation(name, 0);
        }
        report.count(MALFORMED_SKIPPED, 0);
        report.count(LATE_DROPPED, book.late_dropped);
        // Every segment directory on disk must be a live segment: a destroyed one still there, or
        // one re-created after its destruction, is stale.
        let task_dir = self.config.dir.join(format!("task_0_{task}"));
        match std::fs::read_dir(&task_dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let id = name.to_str().and_then(|n| n.strip_prefix("segment_")).and_then(|n| n.parse::<u64>().ok());
                    if let Some(id) = id.filter(|id| !book.live.contains(id)) {
                        report.violation("stale_dirs", 1);
                        report.problem(format!(
                            "task {task}: segment {id} is on disk but not live (destroyed, or re-created)"
                        ));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                report.violation("reopen_failures", 1);
                report.problem(format!("task {task}: cannot list {}: {e}", task_dir.display()));
            }
        }
        let mut restored = BTreeMap::new();
        let mut present: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        for &id in &book.live {
            let shared = match self.shared(task) {
                Ok(shared) => shared,
                Err(e) => {
                    report.violation("reopen_failures", 1);
                    report.problem(e.to_string());
                    break;
                }
            };
            let (db_options, cfs) = self.segment_options(ctx.ledger, task, shared);
            let path = self.segment_dir(task, id);
            let seg = match Db::open_cf_descriptors(&db_options, &path, cfs) {
                Ok(db) => Segment { id, db, _db_options: db_options },
                Err(e) => {
                    let text = e.to_string();
                    if text.to_lowercase().contains("lock") {
                        report.violation("locks_held", 1);
                        report.problem(format!("task {task} segment {id}: LOCK still held: {text}"));
                    } else {
                        report.violation("reopen_failures", 1);
                        report.problem(format!("task {task} segment {id}: reopen failed: {text}"));
                    }
                    continue;
                }
            };
            match self.restore_segment(task, &seg, &mut restored) {
                Ok(skipped) => report.count(MALFORMED_SKIPPED, skipped),
                Err(e) => {
                    report.violation("reopen_failures", 1);
                    report.problem(format!("task {task} segment {id}: restore failed: {e}"));
                }
            }
            if let Some(cf) = seg.db.cf_handle(DATA) {
                for item in seg.db.iterator_cf(&cf, IteratorMode::Start) {
                    match item {
                        Ok((key, _)) => {
                            if let Some((p, o)) = parse_data_key(&key) {
                                present.entry(p).or_default().insert(o);
                            }
                        }
                        Err(e) => {
                            report.violation("reopen_failures", 1);
                            report.problem(format!("task {task} segment {id}: data scan failed: {e}"));
                            break;
                        }
                    }
                }
            }
            if let Err(e) = seg.db.close().into_result() {
                report.violation("reopen_failures", 1);
                report.problem(format!("task {task} segment {id}: close after check failed: {e}"));
            }
        }
        // Records are owed from the oldest segment that is both on disk and within the retention:
        // a segment past the retention may still be on disk (an error cut work short before the
        // retention step), but records for it were dropped as late, as a window store drops them.
        // Stream time only moves forward, so every segment at or above today's floor was within
        // the retention when its records were written.
        let floor = book.newest.map(|n| self.retention_floor(n));
        let oldest_owed = book.live.iter().copied().find(|&id| floor.is_none_or(|f| id >= f));
        for (&p, &truth) in &book.committed {
            let got = restored.get(&p).copied().unwrap_or(0);
            if got < truth {
                report.violation("offsets_dropped_by_restore", 1);
                report.problem(format!("task {task} partition {p}: restore returned offset {got}, committed {truth}"));
            }
            // Every record below the committed offset whose segment is still retained must exist.
            let from = oldest_owed.map_or(truth, |s| s * self.config.segment_interval);
            let have = present.get(&p);
            for o in from..truth {
                report.records_checked += 1;
                if !have.is_some_and(|h| h.contains(&o)) {
                    report.violation("lost_records", 1);
                    if report.violations_of("lost_records") <= 3 {
                        report.problem(format!(
                            "task {task} partition {p}: offset {o} committed (up to {truth}) but its record is missing from segment {} (live segments {:?}, stream time at segment {:?})",
                            self.segment_of(o),
                            book.live,
                            book.newest
                        ));
                    }
                }
            }
        }
        report
    }
}

impl Segment {
    /// A column family of this segment.
    fn cf(&self, task: u32, name: &'static str) -> Result<leakcheck::tracked::TrackedBoundCf<'_>, StoreError> {
        self.db.cf_handle(name).ok_or(StoreError::MissingCf { task, segment: self.id, name })
    }
}

/// Removes the directory a failed open made. A failure to remove it is not reported here: the
/// caller is already returning the open's error, and the integrity check reports the directory.
fn remove_if_made(existed: bool, path: &Path) {
    if !existed {
        let _ = std::fs::remove_dir_all(path);
    }
}

fn data_key(partition: u32, offset: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(12);
    k.extend_from_slice(&partition.to_be_bytes());
    k.extend_from_slice(&offset.to_be_bytes());
    k
}

fn parse_data_key(key: &[u8]) -> Option<(u32, u64)> {
    let p = u32::from_be_bytes(key.get(..4)?.try_into().ok()?);
    let o = u64::from_be_bytes(key.get(4..12)?.try_into().ok()?);
    Some((p, o))
}

fn offset_key(partition: u32) -> Vec<u8> {
    let mut k = OFFSET_PREFIX.to_vec();
    k.extend_from_slice(partition.to_string().as_bytes());
    k
}

/// `offset/<decimal partition>` -> 8-byte big-endian next offset; anything else is malformed.
fn parse_offset(key: &[u8], value: &[u8]) -> Option<(u32, u64)> {
    let p = std::str::from_utf8(key.strip_prefix(OFFSET_PREFIX)?).ok()?.parse().ok()?;
    let next = u64::from_be_bytes(value.try_into().ok()?);
    Some((p, next))
}

/// Task stores handed to worker threads, one cell per task, by task.
type Cells = BTreeMap<u32, Mutex<Option<TaskStore>>>;

fn into_cells(tasks: impl IntoIterator<Item = TaskStore>) -> Cells {
    tasks.into_iter().map(|t| (t.task, Mutex::new(Some(t)))).collect()
}

/// The per-task results' values, or the first error (the other values are dropped).
fn first_error<T>(results: Vec<(u32, Result<T, StoreError>)>) -> Result<Vec<T>, StoreError> {
    results.into_iter().map(|(_, r)| r).collect()
}

impl Lifecycle for ReferenceStore {
    type Store = OpenStores;
    type Error = StoreError;

    fn fault_points(&self) -> Vec<&'static str> {
        FAULT_POINTS.to_vec()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<OpenStores, StoreError> {
        self.make_shared(ctx.ledger)?;
        match self.config.variant {
            Variant::RawMallocPerCycle => {
                // Planted: 4 KiB of native memory per cycle, no handle, no wrapper.
                planted!("raw-malloc-per-cycle", self.leak_native(RAW_LEAK_BYTES));
            }
            Variant::SteadyBytes16 => {
                planted!("steady-bytes-16", self.leak_native(16));
            }
            Variant::SteadyBytes4 if ctx.cycle.is_multiple_of(2) => {
                planted!("steady-bytes-4", self.leak_native(8));
            }
            Variant::SnapshotBursts if mix(ctx.cycle ^ 0x5eed).is_multiple_of(100) => {
                // Planted: a snapshot buffer kept "for later" and never released.
                planted!("snapshot-bursts", self.leak_native(BURST_BYTES));
            }
            Variant::ListCfFailure => planted!("list-cf-failure", self.list_missing_cf()),
            Variant::LeakBesideGiveBack => {
                planted!("leak-beside-give-back", self.leak_native(KIB_LEAK_BYTES));
                self.give_back();
            }
            Variant::LeakBeginsLate if ctx.cycle >= LATE_LEAK_FROM => {
                planted!("leak-begins-late", self.leak_native(KIB_LEAK_BYTES));
            }
            Variant::DoublingContainer => planted!("doubling-container", self.keep_record(ctx.cycle)),
            Variant::FdOutsideDir if ctx.cycle % 50 == 49 => {
                // Planted: a descriptor outside the store's directory, opened and kept.
                let f = planted!("fd-outside-dir", std::fs::File::open("/dev/null"));
                lock(&self.planted).files.push(f.map_err(io(Path::new("/dev/null")))?);
            }
            Variant::AccountedGrowth => self.grow_accounted(ctx)?,
            Variant::TransactionLeakOnError => self.commit_in_transaction(ctx)?,
            _ => {}
        }
        let results = self.on_workers(ctx.cycle, (0..self.config.tasks).collect(), |t, w| self.open_task(ctx, t, w))?;
        // On an error, the tasks that did open are dropped here: everything they made is released.
        Ok(OpenStores { tasks: first_error(results)? })
    }

    fn work(&mut self, store: &mut OpenStores, ctx: &CycleCtx<'_>) -> Result<(), StoreError> {
        let cells = into_cells(store.tasks.drain(..));
        let this = &*self;
        // A worker may panic (an injected panic, a bug): catch it here so that every task's store,
        // with the segments it created this cycle, goes back to the caller and reaches close.
        let results = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            this.on_workers(ctx.cycle, cells.keys().copied().collect(), |t, _| match lock(&cells[&t]).as_mut() {
                Some(task_store) => this.work_task(ctx, task_store),
                None => Ok(()),
            })
        }));
        store.tasks = cells.into_values().filter_map(|c| c.into_inner().unwrap_or_else(|p| p.into_inner())).collect();
        let results = match results {
            Ok(r) => r,
            Err(payload) => std::panic::resume_unwind(payload),
        };
        first_error(results?).map(drop)
    }

    fn close(&mut self, store: OpenStores, ctx: &CycleCtx<'_>) -> Result<(), StoreError> {
        let cells = into_cells(store.tasks);
        let results = self.on_workers(ctx.cycle, cells.keys().copied().collect(), |t, _| {
            let taken = lock(&cells[&t]).take();
            match taken {
                Some(task_store) => self.close_task(ctx, task_store),
                None => Ok(()),
            }
        })?;
        first_error(results).map(drop)
    }

    fn check(&mut self, ctx: &CycleCtx<'_>) -> Integrity {
        let mut report = Integrity::default();
        if let Err(e) = self.make_shared(ctx.ledger) {
            report.violation("reopen_failures", 1);
            report.problem(e.to_string());
        }
        let orphans: Vec<u32> = lock(&self.owners).keys().copied().collect();
        if !orphans.is_empty() {
            report.violation("ownership_errors", orphans.len() as u64);
            report.problem(format!("tasks {orphans:?} still own a store after close (orphaned)"));
        }
        for t in 0..self.config.tasks {
            report.merge(self.check_task(ctx, t));
        }
        report
    }

    /// The tasks' shared caches and write buffer managers, and the DB the accounted-growth
    /// variant keeps: what the store keeps across cycles, let go of once the run is over. (What
    /// the planted bugs park stays parked: they lost track of it.)
    fn let_go(&mut self) {
        for state in &mut self.tasks {
            state.shared = None;
        }
        lock(&self.planted).accounted = None;
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.config.dir.clone())
    }

    fn instances_per_cycle(&self) -> u64 {
        u64::from(self.config.tasks) * u64::from(self.config.segments)
    }

    fn describe(&self) -> StoreInfo {
        StoreInfo::new("reference store").setting("tasks", self.config.tasks).setting("segments", self.config.segments)
    }

    fn default_faults(&self) -> String {
        DEFAULT_PLAN.to_string()
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        // Sampled between cycles, when every segment is closed: the caches and what the write
        // buffer managers reserved in them (memtables of DBs still open somewhere).
        let planted = lock(&self.planted);
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        for shared in self.tasks.iter().filter_map(|t| t.shared.as_ref()) {
            consumers.cache(&shared.cache).write_buffer_manager(&shared.write_buffers);
        }
        if let Some((db, _)) = &planted.accounted {
            consumers.db(db);
        }
        consumers.read().ok()
    }
}

impl Drop for ReferenceStore {
    fn drop(&mut self) {
        // What the planted bugs parked is released here, at the end of the process's use of the
        // store, so one leak-test run does not disturb the next. (Correct stores park nothing.)
        let planted = std::mem::take(&mut *lock(&self.planted));
        for raw in planted.raw_options {
            // SAFETY: created by rocksdb_options_create above and never destroyed before.
            unsafe { librocksdb_sys::rocksdb_options_destroy(raw as *mut librocksdb_sys::rocksdb_options_t) };
        }
        for p in planted.raw_mallocs.into_iter().chain(planted.pool) {
            // SAFETY: allocated by libc::malloc above and never freed before.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
        drop(planted.registry);
        drop(planted.side_dbs);
        drop(planted.files);
        drop(planted.accounted);
    }
}

crate::opaque_debug!(TaskStore, OpenStores);
