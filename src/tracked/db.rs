//! Tracked databases, column families and column family descriptors.

use std::collections::BTreeMap;
use std::panic::Location;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rocksdb::{
    AsColumnFamilyRef, BoundColumnFamily, ColumnFamilyDescriptor, DBWithThreadMode, IteratorMode, MultiThreaded,
    SingleThreaded, ThreadMode, DEFAULT_COLUMN_FAMILY_NAME,
};

use super::iter::{TrackedIterator, TrackedRawIterator, TrackedSnapshot};
use super::options::OptionHolds;
use super::{TrackedOptions, TrackedReadOptions, TrackedWriteBatch};
use crate::ledger::lock;
use crate::{CloseResult, HandleKind, Hold, Ledger, Token};

/// A tracked column family descriptor: a name and the options it owns.
pub struct TrackedCfDescriptor {
    name: String,
    options: TrackedOptions,
    token: Token,
}

impl TrackedCfDescriptor {
    /// `ColumnFamilyDescriptor::new`, registered in the options' ledger.
    #[track_caller]
    pub fn new(name: impl Into<String>, options: TrackedOptions) -> Self {
        let token = options.token.ledger().register_at(HandleKind::ColumnFamilyDescriptor, Location::caller());
        TrackedCfDescriptor { name: name.into(), options, token }
    }

    /// The column family's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The descriptor's token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

/// A native column family handle owned by a DB, with what its options keep alive.
struct CfSlot {
    token: Token,
    _holds: OptionHolds,
}

/// A tracked DB, in single-threaded (default) or multi-threaded column-family mode.
///
/// Registers a `DB` handle and one `ColumnFamily` handle per native column family handle the DB
/// owns; keeps the objects its options keep alive (caches, env, write buffer manager) until the
/// DB drops, as rust-rocksdb's DB does. Shadows the rust-rocksdb methods that create native
/// handles (iterators, snapshots, column families) with tracked versions of the same name.
pub struct TrackedDb<T: ThreadMode = SingleThreaded> {
    inner: DBWithThreadMode<T>,
    cfs: Mutex<BTreeMap<String, CfSlot>>,
    _holds: Vec<OptionHolds>,
    /// Opened read-only: nothing to sync at close (RocksDB refuses `FlushWAL` then).
    read_only: bool,
    token: Token,
}

impl<T: ThreadMode> std::ops::Deref for TrackedDb<T> {
    type Target = DBWithThreadMode<T>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

type Db<T> = DBWithThreadMode<T>;

impl<T: ThreadMode> TrackedDb<T> {
    /// Opens (or creates, per the options) a DB with only the default column family.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open(opts: &TrackedOptions, path: impl AsRef<Path>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Db::<T>::open(&opts.inner, path)?;
        Ok(Self::wrap(inner, opts, Vec::new(), false, site))
    }

    /// Opens a DB read-only with only the default column family; it has no WAL to sync at close.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened.
    #[track_caller]
    pub fn open_for_read_only(
        opts: &TrackedOptions,
        path: impl AsRef<Path>,
        error_if_log_file_exist: bool,
    ) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Db::<T>::open_for_read_only(&opts.inner, path, error_if_log_file_exist)?;
        Ok(Self::wrap(inner, opts, Vec::new(), true, site))
    }

    /// Opens a DB with a time-to-live compaction filter (`DB::open_with_ttl`), only the default
    /// column family.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open_with_ttl(opts: &TrackedOptions, path: impl AsRef<Path>, ttl: Duration) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Db::<T>::open_with_ttl(&opts.inner, path, ttl)?;
        Ok(Self::wrap(inner, opts, Vec::new(), false, site))
    }

    /// Opens a DB with a time-to-live compaction filter and the given column families
    /// (`DB::open_cf_descriptors_with_ttl`; each descriptor's TTL is the DB's).
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors_with_ttl(
        opts: &TrackedOptions,
        path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
        ttl: Duration,
    ) -> Result<Self, rocksdb::Error> {
        Self::with_descriptors(opts, cfs, false, Location::caller(), |raw| {
            Db::<T>::open_cf_descriptors_with_ttl(&opts.inner, path, raw, ttl)
        })
    }

    /// Opens a secondary instance of the DB at `primary_path` (`DB::open_as_secondary`), keeping
    /// its own files in `secondary_path`. Like a read-only DB, it has no WAL to sync at close.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open_as_secondary(
        opts: &TrackedOptions,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
    ) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Db::<T>::open_as_secondary(&opts.inner, primary_path.as_ref(), secondary_path.as_ref())?;
        Ok(Self::wrap(inner, opts, Vec::new(), true, site))
    }

    /// A secondary instance with the given column families
    /// (`DB::open_cf_descriptors_as_secondary`).
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors_as_secondary(
        opts: &TrackedOptions,
        primary_path: impl AsRef<Path>,
        secondary_path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
    ) -> Result<Self, rocksdb::Error> {
        Self::with_descriptors(opts, cfs, true, Location::caller(), |raw| {
            Db::<T>::open_cf_descriptors_as_secondary(&opts.inner, primary_path.as_ref(), secondary_path.as_ref(), raw)
        })
    }

    /// Opens a DB with the given column families (the default one is added when missing).
    /// The descriptors are consumed, as in rust-rocksdb.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors(
        opts: &TrackedOptions,
        path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
    ) -> Result<Self, rocksdb::Error> {
        Self::with_descriptors(opts, cfs, false, Location::caller(), |raw| {
            Db::<T>::open_cf_descriptors(&opts.inner, path, raw)
        })
    }

    /// Opens a DB read-only with the given column families.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors_read_only(
        opts: &TrackedOptions,
        path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
        error_if_log_file_exist: bool,
    ) -> Result<Self, rocksdb::Error> {
        Self::with_descriptors(opts, cfs, true, Location::caller(), |raw| {
            Db::<T>::open_cf_descriptors_read_only(&opts.inner, path, raw, error_if_log_file_exist)
        })
    }

    /// Opens through `open` with the descriptors' native halves; the tracked halves are kept by
    /// the DB (or released when the open fails).
    fn with_descriptors(
        opts: &TrackedOptions,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
        read_only: bool,
        site: &'static Location<'static>,
        open: impl FnOnce(Vec<ColumnFamilyDescriptor>) -> Result<Db<T>, rocksdb::Error>,
    ) -> Result<Self, rocksdb::Error> {
        let (raw, kept) = split_descriptors(cfs);
        let inner = open(raw)?;
        Ok(Self::wrap(inner, opts, kept, read_only, site))
    }

    fn wrap(
        inner: Db<T>,
        opts: &TrackedOptions,
        kept: Vec<Consumed>,
        read_only: bool,
        site: &'static Location<'static>,
    ) -> Self {
        let ledger = opts.token.ledger();
        let token = ledger.register_at(HandleKind::Db, site);
        let mut holds = vec![opts.holds.rehold(&token)];
        let mut cfs = BTreeMap::new();
        let with_cfs = !kept.is_empty();
        for consumed in kept {
            // rust-rocksdb's DB keeps every descriptor's `outlive` bundle until it drops.
            holds.push(consumed.holds.rehold(&token));
            let cf = ledger.register_at(HandleKind::ColumnFamily, site);
            cfs.insert(consumed.name, CfSlot { token: cf, _holds: OptionHolds::default() });
        }
        if with_cfs && !cfs.contains_key(DEFAULT_COLUMN_FAMILY_NAME) {
            // rust-rocksdb adds the default column family, with default options, when missing.
            let cf = ledger.register_at(HandleKind::ColumnFamily, site);
            cfs.insert(DEFAULT_COLUMN_FAMILY_NAME.to_string(), CfSlot { token: cf, _holds: OptionHolds::default() });
        }
        TrackedDb { inner, cfs: Mutex::new(cfs), _holds: holds, read_only, token }
    }

    /// Destroys the database files at `path` (`DB::destroy`). The DB must be closed.
    ///
    /// # Errors
    /// RocksDB's error.
    pub fn destroy(opts: &TrackedOptions, path: impl AsRef<Path>) -> Result<(), rocksdb::Error> {
        Db::<T>::destroy(&opts.inner, path)
    }

    /// The column families of the DB at `path` (`DB::list_cf`), without opening it and without
    /// naming rust-rocksdb's DB type (which clippy.toml forbids outside the wrappers).
    ///
    /// # Errors
    /// RocksDB's error (no DB at `path`, for one).
    pub fn list_cf(opts: &TrackedOptions, path: impl AsRef<Path>) -> Result<Vec<String>, rocksdb::Error> {
        Db::<T>::list_cf(&opts.inner, path)
    }

    /// This DB's token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The ledger this DB registers in.
    pub fn ledger(&self) -> &Ledger {
        self.token.ledger()
    }

    /// Names of the column families whose native handles this DB owns.
    pub fn cf_names(&self) -> Vec<String> {
        lock(&self.cfs).keys().cloned().collect()
    }

    /// Closes the DB: syncs the WAL (a DB opened read-only has none to sync), then releases
    /// every native handle whether or not that failed, and returns the error in a
    /// [`CloseResult`] that cannot be silently dropped.
    #[track_caller]
    pub fn close(self) -> CloseResult<rocksdb::Error> {
        let ledger = self.token.ledger().clone();
        let synced = if self.read_only { Ok(()) } else { self.inner.flush_wal(true) };
        drop(self);
        CloseResult::new(&ledger, "DB", synced)
    }

    fn add_cf(&self, name: &str, opts: &TrackedOptions, site: &'static Location<'static>) {
        let token = self.ledger().register_at(HandleKind::ColumnFamily, site);
        let holds = opts.holds.rehold(&token);
        lock(&self.cfs).insert(name.to_string(), CfSlot { token, _holds: holds });
    }

    fn remove_cf(&self, name: &str) {
        lock(&self.cfs).remove(name);
    }

    #[track_caller]
    fn iter_token(&self, kind: HandleKind) -> Token {
        self.ledger().register_at(kind, Location::caller())
    }

    /// A tracked iterator over the default column family.
    #[track_caller]
    pub fn iterator<'a: 'b, 'b>(&'a self, mode: IteratorMode) -> TrackedIterator<'b, Db<T>> {
        TrackedIterator::new(self.inner.iterator(mode), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked iterator with read options; the iterator owns them.
    #[track_caller]
    pub fn iterator_opt<'a: 'b, 'b>(
        &'a self,
        mode: IteratorMode,
        readopts: TrackedReadOptions,
    ) -> TrackedIterator<'b, Db<T>> {
        let token = self.iter_token(HandleKind::Iterator);
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedIterator::new(self.inner.iterator_opt(mode, inner), Some(ro), token)
    }

    /// A tracked iterator over a column family.
    #[track_caller]
    pub fn iterator_cf<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode,
    ) -> TrackedIterator<'b, Db<T>> {
        TrackedIterator::new(self.inner.iterator_cf(cf, mode), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked iterator over a column family with read options; the iterator owns them.
    #[track_caller]
    pub fn iterator_cf_opt<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        readopts: TrackedReadOptions,
        mode: IteratorMode,
    ) -> TrackedIterator<'b, Db<T>> {
        let token = self.iter_token(HandleKind::Iterator);
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedIterator::new(self.inner.iterator_cf_opt(cf, inner, mode), Some(ro), token)
    }

    /// A tracked total-order iterator.
    #[track_caller]
    pub fn full_iterator<'a: 'b, 'b>(&'a self, mode: IteratorMode) -> TrackedIterator<'b, Db<T>> {
        TrackedIterator::new(self.inner.full_iterator(mode), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked iterator over a whole column family (total order seek, whatever the prefix
    /// extractor).
    #[track_caller]
    pub fn full_iterator_cf<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        mode: IteratorMode,
    ) -> TrackedIterator<'b, Db<T>> {
        TrackedIterator::new(self.inner.full_iterator_cf(cf, mode), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked prefix iterator.
    #[track_caller]
    pub fn prefix_iterator<'a: 'b, 'b, P: AsRef<[u8]>>(&'a self, prefix: P) -> TrackedIterator<'b, Db<T>> {
        TrackedIterator::new(self.inner.prefix_iterator(prefix), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked prefix iterator over a column family.
    #[track_caller]
    pub fn prefix_iterator_cf<'a, P: AsRef<[u8]>>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        prefix: P,
    ) -> TrackedIterator<'a, Db<T>> {
        TrackedIterator::new(self.inner.prefix_iterator_cf(cf, prefix), None, self.iter_token(HandleKind::Iterator))
    }

    /// A tracked raw iterator.
    #[track_caller]
    pub fn raw_iterator<'a: 'b, 'b>(&'a self) -> TrackedRawIterator<'b, Db<T>> {
        TrackedRawIterator::new(self.inner.raw_iterator(), None, self.iter_token(HandleKind::RawIterator))
    }

    /// A tracked raw iterator over a column family.
    #[track_caller]
    pub fn raw_iterator_cf<'a: 'b, 'b>(&'a self, cf: &impl AsColumnFamilyRef) -> TrackedRawIterator<'b, Db<T>> {
        TrackedRawIterator::new(self.inner.raw_iterator_cf(cf), None, self.iter_token(HandleKind::RawIterator))
    }

    /// A tracked raw iterator with read options; the iterator owns them.
    #[track_caller]
    pub fn raw_iterator_opt<'a: 'b, 'b>(&'a self, readopts: TrackedReadOptions) -> TrackedRawIterator<'b, Db<T>> {
        let token = self.iter_token(HandleKind::RawIterator);
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedRawIterator::new(self.inner.raw_iterator_opt(inner), Some(ro), token)
    }

    /// A tracked raw iterator over a column family with read options; the iterator owns them.
    #[track_caller]
    pub fn raw_iterator_cf_opt<'a: 'b, 'b>(
        &'a self,
        cf: &impl AsColumnFamilyRef,
        readopts: TrackedReadOptions,
    ) -> TrackedRawIterator<'b, Db<T>> {
        let token = self.iter_token(HandleKind::RawIterator);
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedRawIterator::new(self.inner.raw_iterator_cf_opt(cf, inner), Some(ro), token)
    }

    /// A tracked snapshot.
    #[track_caller]
    pub fn snapshot(&self) -> TrackedSnapshot<'_, Db<T>> {
        TrackedSnapshot::new(self.inner.snapshot(), self.iter_token(HandleKind::Snapshot))
    }

    /// Writes a batch, consuming it.
    ///
    /// # Errors
    /// RocksDB's write error; the batch is released either way.
    pub fn write(&self, batch: TrackedWriteBatch) -> Result<(), rocksdb::Error> {
        let TrackedWriteBatch { inner, token } = batch;
        let result = self.inner.write(inner);
        drop(token);
        result
    }

    /// Writes a batch with write options, consuming it.
    ///
    /// # Errors
    /// RocksDB's write error; the batch is released either way.
    pub fn write_opt(&self, batch: TrackedWriteBatch, writeopts: &rocksdb::WriteOptions) -> Result<(), rocksdb::Error> {
        let TrackedWriteBatch { inner, token } = batch;
        let result = self.inner.write_opt(inner, writeopts);
        drop(token);
        result
    }
}

/// What a consumed descriptor leaves behind until the open is over: its name, what its options
/// kept alive, and the tokens of the descriptor and its options (the native options are destroyed
/// by rust-rocksdb after the open, successful or not).
struct Consumed {
    name: String,
    holds: OptionHolds,
    _tokens: (Token, Token),
}

fn split_descriptors(
    cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
) -> (Vec<ColumnFamilyDescriptor>, Vec<Consumed>) {
    cfs.into_iter()
        .map(|d| {
            let TrackedCfDescriptor { name, options, token } = d;
            let TrackedOptions { inner, holds, token: options_token } = options;
            let raw = ColumnFamilyDescriptor::new(name.clone(), inner);
            (raw, Consumed { name, holds, _tokens: (token, options_token) })
        })
        .unzip()
}

impl TrackedDb<SingleThreaded> {
    /// Creates a column family, registering its native handle.
    ///
    /// # Errors
    /// RocksDB's error; nothing is registered then.
    #[track_caller]
    pub fn create_cf(&mut self, name: impl AsRef<str>, opts: &TrackedOptions) -> Result<(), rocksdb::Error> {
        let site = Location::caller();
        self.inner.create_cf(name.as_ref(), &opts.inner)?;
        self.add_cf(name.as_ref(), opts, site);
        Ok(())
    }

    /// Drops a column family, releasing its native handle.
    ///
    /// # Errors
    /// RocksDB's error (an unknown name, or the drop failed).
    pub fn drop_cf(&mut self, name: &str) -> Result<(), rocksdb::Error> {
        let result = self.inner.drop_cf(name);
        // rust-rocksdb removes (and destroys) the handle even when the drop itself fails.
        self.remove_cf(name);
        result
    }
}

impl TrackedDb<MultiThreaded> {
    /// Creates a column family, registering its native handle.
    ///
    /// # Errors
    /// RocksDB's error; nothing is registered then.
    #[track_caller]
    pub fn create_cf(&self, name: impl AsRef<str>, opts: &TrackedOptions) -> Result<(), rocksdb::Error> {
        let site = Location::caller();
        self.inner.create_cf(name.as_ref(), &opts.inner)?;
        self.add_cf(name.as_ref(), opts, site);
        Ok(())
    }

    /// Drops a column family. Its native handle is destroyed once no [`TrackedBoundCf`] refers
    /// to it any more.
    ///
    /// # Errors
    /// RocksDB's error (an unknown name, or the drop failed).
    pub fn drop_cf(&self, name: &str) -> Result<(), rocksdb::Error> {
        let result = self.inner.drop_cf(name);
        self.remove_cf(name);
        result
    }

    /// A tracked shared reference to a column family, or `None` for an unknown name. Each call
    /// registers a `BoundColumnFamily` handle that keeps the native column family handle alive.
    #[track_caller]
    pub fn cf_handle(&self, name: &str) -> Option<TrackedBoundCf<'_>> {
        let site = Location::caller();
        let bound = self.inner.cf_handle(name)?;
        let token = self.ledger().register_at(HandleKind::BoundColumnFamily, site);
        let hold = lock(&self.cfs).get(name).map(|slot| slot.token.held_by(&token));
        Some(TrackedBoundCf(Arc::new(BoundInner { bound, _hold: hold, token })))
    }
}

struct BoundInner<'a> {
    bound: Arc<BoundColumnFamily<'a>>,
    _hold: Option<Hold>,
    token: Token,
}

/// A tracked `Arc<BoundColumnFamily>`: cloning shares it; the native column family handle lives
/// until the DB drops it and every clone is gone. Pass `&bound` wherever rust-rocksdb wants a
/// column family.
#[derive(Clone)]
pub struct TrackedBoundCf<'a>(Arc<BoundInner<'a>>);

impl<'a> TrackedBoundCf<'a> {
    /// The reference's token.
    pub fn token(&self) -> &Token {
        &self.0.token
    }

    /// The rust-rocksdb reference.
    pub fn bound(&self) -> &Arc<BoundColumnFamily<'a>> {
        &self.0.bound
    }
}

impl AsColumnFamilyRef for TrackedBoundCf<'_> {
    fn inner(&self) -> *mut librocksdb_sys::rocksdb_column_family_handle_t {
        self.0.bound.inner()
    }
}

impl std::fmt::Debug for TrackedCfDescriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedCfDescriptor")
            .field("name", &self.name)
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl<T: ThreadMode> std::fmt::Debug for TrackedDb<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedDb").field("token", &self.token).field("cfs", &self.cf_names()).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for TrackedBoundCf<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedBoundCf").field("token", &self.0.token).finish_non_exhaustive()
    }
}
