//! Tracked optimistic transaction databases and their transaction options.
//!
//! An optimistic transaction takes no locks: it checks at commit that no key it wrote (or read
//! for update) changed since, and fails with `Busy` otherwise. It still pins its write batch and,
//! when asked, a snapshot; one never dropped keeps them for the life of the DB, exactly as a
//! pessimistic transaction does, so it is the same [`TrackedTransaction`] handle.

use std::panic::Location;
use std::path::Path;

use rocksdb::{OptimisticTransactionDB, OptimisticTransactionOptions, SingleThreaded, ThreadMode};

use super::db::{register_cfs, split_descriptors, tracked_cfs, CfSet, Consumed};
use super::options::OptionHolds;
use super::{deref_and_token, TrackedCfDescriptor, TrackedOptions, TrackedTransaction, TrackedWriteBatch};
use crate::{ledger::CloseResult, ledger::HandleKind, ledger::Ledger, ledger::Token};

/// Tracked `OptimisticTransactionOptions` (whether a transaction sets a snapshot), for
/// [`TrackedOptimisticTransactionDb::transaction_opt`].
pub struct TrackedOptimisticTransactionOptions {
    inner: OptimisticTransactionOptions,
    token: Token,
}
deref_and_token!(TrackedOptimisticTransactionOptions, OptimisticTransactionOptions);

impl TrackedOptimisticTransactionOptions {
    /// `OptimisticTransactionOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedOptimisticTransactionOptions {
            inner: OptimisticTransactionOptions::default(),
            token: ledger.register_at(HandleKind::OptimisticTransactionOptions, Location::caller()),
        }
    }
}

/// A tracked `OptimisticTransactionDB`.
///
/// Registers an `OptimisticTransactionDB` handle and a `ColumnFamily` handle per column family;
/// keeps what its options keep alive until it drops. Shadows the methods that create native
/// handles (transactions, iterators, snapshots, column families) with tracked versions of the
/// same name, and writes [`TrackedWriteBatch<true>`] batches.
pub struct TrackedOptimisticTransactionDb<T: ThreadMode = SingleThreaded> {
    inner: OptimisticTransactionDB<T>,
    cfs: CfSet,
    _holds: Vec<OptionHolds>,
    token: Token,
}

impl<T: ThreadMode> std::ops::Deref for TrackedOptimisticTransactionDb<T> {
    type Target = OptimisticTransactionDB<T>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<T: ThreadMode> TrackedOptimisticTransactionDb<T> {
    /// Opens (or creates, per the options) an optimistic transaction DB with only the default
    /// column family.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open(opts: &TrackedOptions, path: impl AsRef<Path>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = OptimisticTransactionDB::<T>::open(&opts.inner, path)?;
        Ok(Self::wrap(inner, opts, Vec::new(), site))
    }

    /// Opens an optimistic transaction DB with the given column families (the default one is
    /// added when missing). The descriptors are consumed, as in rust-rocksdb.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors(
        opts: &TrackedOptions,
        path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
    ) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let (raw, kept) = split_descriptors(cfs);
        let inner = OptimisticTransactionDB::<T>::open_cf_descriptors(&opts.inner, path, raw)?;
        Ok(Self::wrap(inner, opts, kept, site))
    }

    fn wrap(
        inner: OptimisticTransactionDB<T>,
        opts: &TrackedOptions,
        kept: Vec<Consumed>,
        site: &'static Location<'static>,
    ) -> Self {
        let token = opts.token.ledger().register_at(HandleKind::OptimisticTransactionDb, site);
        let (holds, cfs) = register_cfs(opts, &token, kept, site);
        TrackedOptimisticTransactionDb { inner, cfs, _holds: holds, token }
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

    #[track_caller]
    fn iter_token(&self, kind: HandleKind) -> Token {
        self.ledger().register_at(kind, Location::caller())
    }

    /// Begins a tracked optimistic transaction with default options.
    #[track_caller]
    pub fn transaction(&self) -> TrackedTransaction<'_, OptimisticTransactionDB<T>> {
        TrackedTransaction::new(self.inner.transaction(), &self.token, Location::caller())
    }

    /// Begins a tracked optimistic transaction with write and transaction options.
    #[track_caller]
    pub fn transaction_opt(
        &self,
        write_opts: &super::TrackedWriteOptions,
        txn_opts: &TrackedOptimisticTransactionOptions,
    ) -> TrackedTransaction<'_, OptimisticTransactionDB<T>> {
        let inner = self.inner.transaction_opt(write_opts, &txn_opts.inner);
        TrackedTransaction::new(inner, &self.token, Location::caller())
    }

    super::iter::tracked_reads!(OptimisticTransactionDB<T>);

    /// Writes a batch, consuming it.
    ///
    /// # Errors
    /// RocksDB's write error; the batch is released either way.
    pub fn write(&self, batch: TrackedWriteBatch<true>) -> Result<(), rocksdb::Error> {
        let TrackedWriteBatch { inner, token } = batch;
        let result = self.inner.write(inner);
        drop(token);
        result
    }

    /// Writes a batch with write options, consuming it.
    ///
    /// # Errors
    /// RocksDB's write error; the batch is released either way.
    pub fn write_opt(
        &self,
        batch: TrackedWriteBatch<true>,
        writeopts: &rocksdb::WriteOptions,
    ) -> Result<(), rocksdb::Error> {
        let TrackedWriteBatch { inner, token } = batch;
        let result = self.inner.write_opt(inner, writeopts);
        drop(token);
        result
    }

    /// Closes the DB: syncs the WAL, then releases every native handle whether or not that
    /// failed, and returns the error in a [`CloseResult`] that cannot be silently dropped.
    #[track_caller]
    pub fn close(self) -> CloseResult<rocksdb::Error> {
        let ledger = self.token.ledger().clone();
        let synced = self.inner.flush_wal(true);
        drop(self);
        CloseResult::new(&ledger, "OptimisticTransactionDB", synced)
    }
}

tracked_cfs!(TrackedOptimisticTransactionDb);

impl<T: ThreadMode> std::fmt::Debug for TrackedOptimisticTransactionDb<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedOptimisticTransactionDb")
            .field("token", &self.token)
            .field("cfs", &self.cfs.names())
            .finish_non_exhaustive()
    }
}
