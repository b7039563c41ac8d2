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

mod check;
mod close;
mod open;
mod variants;
mod work;

// What the files of this store share (they take it with `use super::*`): these imports, the
// types and the helpers below.
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
/// Entries of the error-path-beside-cache variant's small cache.
const SMALL_CACHE_ENTRIES: usize = 8;
/// What the leak-beside-give-back, leak-begins-late and doubling-container variants keep per
/// cycle.
const KIB_LEAK_BYTES: usize = 1024;
/// What the comparator-keeps-keys variant keeps of a key, a cycle and a task.
const KEPT_KEY_BYTES: usize = 256;
/// The leak-beside-give-back variant's pool: buffers of this size, made before the first cycle,
/// one given back per cycle.
const POOL_BUFFER_BYTES: usize = 1280;
/// Buffers in that pool (more than `check` runs cycles).
const POOL_BUFFERS: usize = 4096;
/// The first cycle that the leak-begins-late variant leaks in: the last quarter of the cycles
/// before `check`'s early look.
pub const LATE_LEAK_FROM: u64 = leakcheck::runner::EARLY_LOOK_CYCLES * 3 / 4;

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
    /// quarter of the cycles before check's early look.
    LeakBeginsLate,
    /// A list of records kept for the life of the store, 1 KiB appended each cycle: a container
    /// whose buffer doubles now and then (a realloc to twice the size, the old buffer freed).
    DoublingContainer,
    /// One function makes a 384 B buffer each cycle: its normal path puts it in a small cache that
    /// evicts its oldest (8 entries), its error path (a hash of the cycle picks 1 cycle in 4)
    /// forgets it. The function gives memory back every cycle, and leaks.
    ErrorPathBesideCache,
    /// The data column families order their keys with a comparator of the store's own that keeps
    /// a copy of a key it compares while the store writes (a debugging aid left in): 256 B a
    /// cycle, allocated in the user's code called from RocksDB's memtable insert, so the memtable's
    /// frames below it must not explain it.
    ComparatorKeepsKeys,
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
    /// The error-path-beside-cache variant's cache (at most [`SMALL_CACHE_ENTRIES`], oldest first).
    small_cache: std::collections::VecDeque<Vec<u8>>,
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
            Variant::ErrorPathBesideCache => self.load_value(ctx.cycle),
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

    /// The tasks' shared caches and write buffer managers: what the store keeps across cycles,
    /// let go of once the run is over. (What the planted bugs park stays parked: they lost track
    /// of it.)
    fn let_go(&mut self) {
        for state in &mut self.tasks {
            state.shared = None;
        }
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
        let mut consumers = leakcheck::probe::MemoryConsumers::new().ok()?;
        for shared in self.tasks.iter().filter_map(|t| t.shared.as_ref()) {
            consumers.cache(&shared.cache).write_buffer_manager(&shared.write_buffers);
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
        drop(planted.small_cache);
        variants::let_go_of_kept_keys();
    }
}

crate::opaque_debug!(TaskStore, OpenStores);
