//! Tracked databases, column families and column family descriptors.

use std::collections::BTreeMap;
use std::panic::Location;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rocksdb::{
    AsColumnFamilyRef, BoundColumnFamily, ColumnFamilyDescriptor, DBWithThreadMode, SingleThreaded, ThreadMode,
    DEFAULT_COLUMN_FAMILY_NAME,
};

use super::options::OptionHolds;
use super::{TrackedOptions, TrackedWriteBatch};
use crate::ledger::lock;
use crate::{ledger::CloseResult, ledger::HandleKind, ledger::Hold, ledger::Ledger, ledger::Token};

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
pub(super) struct CfSlot {
    token: Token,
    _holds: OptionHolds,
}

/// The native column family handles a tracked DB owns, by name. Behind a lock: a multi-threaded
/// DB creates and drops column families through `&self`.
#[derive(Default)]
pub(super) struct CfSet(Mutex<BTreeMap<String, CfSlot>>);

impl CfSet {
    /// After `create_cf(name, opts)` at `site`: registers the new column family's handle, which
    /// keeps what those options keep alive, when the create succeeded; passes its result on.
    pub(super) fn created(
        &self,
        created: Result<(), rocksdb::Error>,
        ledger: &Ledger,
        name: &str,
        opts: &TrackedOptions,
        site: &'static Location<'static>,
    ) -> Result<(), rocksdb::Error> {
        created?;
        let token = ledger.register_at(HandleKind::ColumnFamily, site);
        let holds = opts.holds.rehold(&token);
        lock(&self.0).insert(name.to_string(), CfSlot { token, _holds: holds });
        Ok(())
    }

    /// Releases the handle of a dropped column family (a [`TrackedBoundCf`] still holding it
    /// keeps it in the ledger, as its `Arc` keeps the native handle).
    pub(super) fn remove(&self, name: &str) {
        lock(&self.0).remove(name);
    }

    pub(super) fn names(&self) -> Vec<String> {
        lock(&self.0).keys().cloned().collect()
    }

    /// A tracked reference to the column family `name` registered at `site`.
    pub(super) fn bound<'a>(
        &self,
        bound: Arc<BoundColumnFamily<'a>>,
        name: &str,
        ledger: &Ledger,
        site: &'static Location<'static>,
    ) -> TrackedBoundCf<'a> {
        TrackedBoundCf::new(bound, lock(&self.0).get(name), ledger, site)
    }
}

/// `create_cf`, `drop_cf` (single- and multi-threaded) and `cf_handle` (multi-threaded) for a
/// wrapper `$wrapper<T>` whose field `inner` is a rust-rocksdb DB with those methods, whose field
/// `cfs` is a [`CfSet`], and which has `fn ledger(&self) -> &Ledger`. rust-rocksdb gives the
/// plain, the pessimistic and the optimistic transaction DB the same five methods.
macro_rules! tracked_cfs {
    ($wrapper:ident) => {
        impl $wrapper<rocksdb::SingleThreaded> {
            /// Creates a column family, registering its native handle.
            ///
            /// # Errors
            /// RocksDB's error; nothing is registered then.
            #[track_caller]
            pub fn create_cf(
                &mut self,
                name: impl AsRef<str>,
                opts: &$crate::tracked::TrackedOptions,
            ) -> Result<(), rocksdb::Error> {
                let site = std::panic::Location::caller();
                let created = self.inner.create_cf(name.as_ref(), &opts.inner);
                self.cfs.created(created, self.token.ledger(), name.as_ref(), opts, site)
            }

            /// Drops a column family, releasing its native handle.
            ///
            /// # Errors
            /// RocksDB's error (an unknown name, or the drop failed).
            pub fn drop_cf(&mut self, name: &str) -> Result<(), rocksdb::Error> {
                let result = self.inner.drop_cf(name);
                // rust-rocksdb removes (and destroys) the handle even when the drop itself fails.
                self.cfs.remove(name);
                result
            }
        }

        impl $wrapper<rocksdb::MultiThreaded> {
            /// Creates a column family, registering its native handle.
            ///
            /// # Errors
            /// RocksDB's error; nothing is registered then.
            #[track_caller]
            pub fn create_cf(
                &self,
                name: impl AsRef<str>,
                opts: &$crate::tracked::TrackedOptions,
            ) -> Result<(), rocksdb::Error> {
                let site = std::panic::Location::caller();
                let created = self.inner.create_cf(name.as_ref(), &opts.inner);
                self.cfs.created(created, self.token.ledger(), name.as_ref(), opts, site)
            }

            /// Drops a column family. Its native handle is destroyed once no
            /// [`TrackedBoundCf`](crate::tracked::TrackedBoundCf) refers to it any more.
            ///
            /// # Errors
            /// RocksDB's error (an unknown name, or the drop failed).
            pub fn drop_cf(&self, name: &str) -> Result<(), rocksdb::Error> {
                let result = self.inner.drop_cf(name);
                self.cfs.remove(name);
                result
            }

            /// A tracked shared reference to a column family, or `None` for an unknown name. Each
            /// call registers a `BoundColumnFamily` handle that keeps the native column family
            /// handle alive.
            #[track_caller]
            pub fn cf_handle(&self, name: &str) -> Option<$crate::tracked::TrackedBoundCf<'_>> {
                let bound = self.inner.cf_handle(name)?;
                Some(self.cfs.bound(bound, name, self.token.ledger(), std::panic::Location::caller()))
            }
        }
    };
}
pub(super) use tracked_cfs;

/// A tracked DB, in single-threaded (default) or multi-threaded column-family mode.
///
/// Registers a `DB` handle and one `ColumnFamily` handle per native column family handle the DB
/// owns; keeps the objects its options keep alive (caches, env, write buffer manager) until the
/// DB drops, as rust-rocksdb's DB does. Shadows the rust-rocksdb methods that create native
/// handles (iterators, snapshots, column families) with tracked versions of the same name.
pub struct TrackedDb<T: ThreadMode = SingleThreaded> {
    inner: DBWithThreadMode<T>,
    cfs: CfSet,
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
        let token = opts.token.ledger().register_at(HandleKind::Db, site);
        let (holds, cfs) = register_cfs(opts, &token, kept, site);
        TrackedDb { inner, cfs, _holds: holds, read_only, token }
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
        self.cfs.names()
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

    #[track_caller]
    fn iter_token(&self, kind: HandleKind) -> Token {
        self.ledger().register_at(kind, Location::caller())
    }

    super::iter::tracked_reads!(Db<T>);

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
pub(super) struct Consumed {
    name: String,
    holds: OptionHolds,
    _tokens: (Token, Token),
}

/// What a DB just opened with `opts` and the consumed descriptors `kept` (registered as `owner`)
/// keeps: the holds its options and every descriptor's options had (rust-rocksdb's DB keeps each
/// `outlive` bundle until it drops), and a column family handle per descriptor, the default one
/// added when missing (rust-rocksdb adds it, with default options). The descriptors' own tokens
/// are released here: the open is over.
pub(super) fn register_cfs(
    opts: &TrackedOptions,
    owner: &Token,
    kept: Vec<Consumed>,
    site: &'static Location<'static>,
) -> (Vec<OptionHolds>, CfSet) {
    let ledger = owner.ledger();
    let mut holds = vec![opts.holds.rehold(owner)];
    let mut cfs = BTreeMap::new();
    let with_cfs = !kept.is_empty();
    for consumed in kept {
        holds.push(consumed.holds.rehold(owner));
        let cf = ledger.register_at(HandleKind::ColumnFamily, site);
        cfs.insert(consumed.name, CfSlot { token: cf, _holds: OptionHolds::default() });
    }
    if with_cfs && !cfs.contains_key(DEFAULT_COLUMN_FAMILY_NAME) {
        let cf = ledger.register_at(HandleKind::ColumnFamily, site);
        cfs.insert(DEFAULT_COLUMN_FAMILY_NAME.to_string(), CfSlot { token: cf, _holds: OptionHolds::default() });
    }
    (holds, CfSet(Mutex::new(cfs)))
}

pub(super) fn split_descriptors(
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

tracked_cfs!(TrackedDb);

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
    /// A tracked reference registered at `site`, holding the column family handle of `slot`.
    pub(super) fn new(
        bound: Arc<BoundColumnFamily<'a>>,
        slot: Option<&CfSlot>,
        ledger: &Ledger,
        site: &'static Location<'static>,
    ) -> Self {
        let token = ledger.register_at(HandleKind::BoundColumnFamily, site);
        let hold = slot.map(|slot| slot.token.held_by(&token));
        TrackedBoundCf(Arc::new(BoundInner { bound, _hold: hold, token }))
    }

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
