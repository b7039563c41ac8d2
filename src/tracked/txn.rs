//! Tracked transaction databases, transactions and their options, checkpoints of a transaction
//! database, and backup engines.
//!
//! A transaction pins a snapshot and holds the locks of the keys it wrote until it commits or
//! rolls back; one that is never dropped keeps them for the life of the DB. Each transaction is a
//! handle in the ledger at the line that began it, held by nothing and holding its DB.

use std::panic::Location;
use std::path::Path;

use rocksdb::backup::{BackupEngine, BackupEngineOptions, RestoreOptions};
use rocksdb::checkpoint::TransactionDBCheckpoint;
use rocksdb::{SingleThreaded, ThreadMode, Transaction, TransactionDB, TransactionDBOptions, TransactionOptions};

use super::db::{register_cfs, split_descriptors, tracked_cfs, CfSet, Consumed};
use super::options::OptionHolds;
use super::{deref_and_token, TrackedCfDescriptor, TrackedEnv, TrackedOptions, TrackedWriteOptions};
use crate::{ledger::CloseResult, ledger::HandleKind, ledger::Hold, ledger::Ledger, ledger::Token};

/// Tracked `TransactionDBOptions` (lock timeouts, stripes), for [`TrackedTransactionDb::open`].
pub struct TrackedTransactionDbOptions {
    inner: TransactionDBOptions,
    token: Token,
}
deref_and_token!(TrackedTransactionDbOptions, TransactionDBOptions);

impl TrackedTransactionDbOptions {
    /// `TransactionDBOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedTransactionDbOptions {
            inner: TransactionDBOptions::default(),
            token: ledger.register_at(HandleKind::TransactionDbOptions, Location::caller()),
        }
    }
}

/// Tracked `TransactionOptions`, for [`TrackedTransactionDb::transaction_opt`].
pub struct TrackedTransactionOptions {
    inner: TransactionOptions,
    token: Token,
}
deref_and_token!(TrackedTransactionOptions, TransactionOptions);

impl TrackedTransactionOptions {
    /// `TransactionOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedTransactionOptions {
            inner: TransactionOptions::default(),
            token: ledger.register_at(HandleKind::TransactionOptions, Location::caller()),
        }
    }
}

/// A tracked pessimistic `TransactionDB`.
///
/// Registers a `TransactionDB` handle and a `ColumnFamily` handle per column family it was
/// opened with; keeps what its options keep alive until it drops. Shadows the methods that create
/// native handles (transactions, iterators, snapshots) with tracked versions of the same name.
pub struct TrackedTransactionDb<T: ThreadMode = SingleThreaded> {
    inner: TransactionDB<T>,
    cfs: CfSet,
    _holds: Vec<OptionHolds>,
    token: Token,
}

impl<T: ThreadMode> std::ops::Deref for TrackedTransactionDb<T> {
    type Target = TransactionDB<T>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<T: ThreadMode> TrackedTransactionDb<T> {
    /// Opens (or creates, per the options) a transaction DB with only the default column family.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open(
        opts: &TrackedOptions,
        txn_db_opts: &TrackedTransactionDbOptions,
        path: impl AsRef<Path>,
    ) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = TransactionDB::<T>::open(&opts.inner, &txn_db_opts.inner, path)?;
        Ok(Self::wrap(inner, opts, Vec::new(), site))
    }

    /// Opens a transaction DB with the given column families (the default one is added when
    /// missing). The descriptors are consumed, as in rust-rocksdb.
    ///
    /// # Errors
    /// RocksDB's error when the DB cannot be opened; the descriptors are released then.
    #[track_caller]
    pub fn open_cf_descriptors(
        opts: &TrackedOptions,
        txn_db_opts: &TrackedTransactionDbOptions,
        path: impl AsRef<Path>,
        cfs: impl IntoIterator<Item = TrackedCfDescriptor>,
    ) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let (raw, kept) = split_descriptors(cfs);
        let inner = TransactionDB::<T>::open_cf_descriptors(&opts.inner, &txn_db_opts.inner, path, raw)?;
        Ok(Self::wrap(inner, opts, kept, site))
    }

    fn wrap(
        inner: TransactionDB<T>,
        opts: &TrackedOptions,
        kept: Vec<Consumed>,
        site: &'static Location<'static>,
    ) -> Self {
        let token = opts.token.ledger().register_at(HandleKind::TransactionDb, site);
        let (holds, cfs) = register_cfs(opts, &token, kept, site);
        TrackedTransactionDb { inner, cfs, _holds: holds, token }
    }

    /// This DB's token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The ledger this DB registers in.
    pub fn ledger(&self) -> &Ledger {
        self.token.ledger()
    }

    #[track_caller]
    fn iter_token(&self, kind: HandleKind) -> Token {
        self.ledger().register_at(kind, Location::caller())
    }

    /// Begins a tracked transaction with default options.
    #[track_caller]
    pub fn transaction(&self) -> TrackedTransaction<'_, TransactionDB<T>> {
        TrackedTransaction::new(self.inner.transaction(), &self.token, Location::caller())
    }

    /// Begins a tracked transaction with write and transaction options.
    #[track_caller]
    pub fn transaction_opt(
        &self,
        write_opts: &TrackedWriteOptions,
        txn_opts: &TrackedTransactionOptions,
    ) -> TrackedTransaction<'_, TransactionDB<T>> {
        let inner = self.inner.transaction_opt(write_opts, &txn_opts.inner);
        TrackedTransaction::new(inner, &self.token, Location::caller())
    }

    /// The prepared (two-phase) transactions recovered at open, each tracked at the caller's line.
    #[track_caller]
    pub fn prepared_transactions(&self) -> Vec<TrackedTransaction<'_, TransactionDB<T>>> {
        let site = Location::caller();
        self.inner.prepared_transactions().into_iter().map(|t| TrackedTransaction::new(t, &self.token, site)).collect()
    }

    super::iter::tracked_reads!(TransactionDB<T>);

    /// Closes the DB: syncs the WAL, then releases every native handle whether or not that
    /// failed, and returns the error in a [`CloseResult`] that cannot be silently dropped.
    #[track_caller]
    pub fn close(self) -> CloseResult<rocksdb::Error> {
        let ledger = self.token.ledger().clone();
        let synced = self.inner.flush_wal(true);
        drop(self);
        CloseResult::new(&ledger, "TransactionDB", synced)
    }
}

tracked_cfs!(TrackedTransactionDb);

/// A tracked transaction of a pessimistic or an optimistic transaction DB. It holds its DB (the
/// DB cannot close before it is gone); committing consumes it, and dropping it uncommitted rolls
/// it back, as in rust-rocksdb.
pub struct TrackedTransaction<'db, DB> {
    inner: Transaction<'db, DB>,
    _db: Hold,
    token: Token,
}

impl<'db, DB> TrackedTransaction<'db, DB> {
    pub(super) fn new(inner: Transaction<'db, DB>, db: &Token, site: &'static Location<'static>) -> Self {
        let token = db.ledger().register_at(HandleKind::Transaction, site);
        TrackedTransaction { inner, _db: db.held_by(&token), token }
    }

    /// This transaction's token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    #[track_caller]
    fn iter_token(&self, kind: HandleKind) -> Token {
        self.token.ledger().register_at(kind, Location::caller())
    }

    /// Commits, consuming the transaction; its native handle is released either way.
    ///
    /// # Errors
    /// RocksDB's error (a conflict, a timeout, a closed DB).
    pub fn commit(self) -> Result<(), rocksdb::Error> {
        let TrackedTransaction { inner, _db, token } = self;
        let result = inner.commit();
        drop((_db, token));
        result
    }

    super::iter::tracked_reads!(Transaction<'db, DB>);
}

impl<'db, DB> std::ops::Deref for TrackedTransaction<'db, DB> {
    type Target = Transaction<'db, DB>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

/// A tracked checkpoint object of a transaction DB.
pub struct TrackedTransactionDbCheckpoint<'db> {
    inner: TransactionDBCheckpoint<'db>,
    token: Token,
}
deref_and_token!(TrackedTransactionDbCheckpoint<'db>, TransactionDBCheckpoint<'db>);

impl<'db> TrackedTransactionDbCheckpoint<'db> {
    /// `TransactionDBCheckpoint::new` for a tracked transaction DB.
    ///
    /// # Errors
    /// RocksDB's error when the checkpoint object cannot be created.
    #[track_caller]
    pub fn new<T: ThreadMode>(db: &'db TrackedTransactionDb<T>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = TransactionDBCheckpoint::new(&db.inner)?;
        Ok(TrackedTransactionDbCheckpoint { inner, token: db.ledger().register_at(HandleKind::Checkpoint, site) })
    }
}

/// Tracked `BackupEngineOptions`: where the backups go.
pub struct TrackedBackupEngineOptions {
    inner: BackupEngineOptions,
    token: Token,
}
deref_and_token!(TrackedBackupEngineOptions, BackupEngineOptions);

impl TrackedBackupEngineOptions {
    /// `BackupEngineOptions::new(backup_dir)`, registered in `ledger`.
    ///
    /// # Errors
    /// RocksDB's error (a path it cannot use).
    #[track_caller]
    pub fn new(ledger: &Ledger, backup_dir: impl AsRef<Path>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = BackupEngineOptions::new(backup_dir)?;
        Ok(TrackedBackupEngineOptions { inner, token: ledger.register_at(HandleKind::BackupEngineOptions, site) })
    }
}

/// Tracked `RestoreOptions`, for [`BackupEngine::restore_from_latest_backup`].
pub struct TrackedRestoreOptions {
    inner: RestoreOptions,
    token: Token,
}
deref_and_token!(TrackedRestoreOptions, RestoreOptions);

impl TrackedRestoreOptions {
    /// `RestoreOptions::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedRestoreOptions {
            inner: RestoreOptions::default(),
            token: ledger.register_at(HandleKind::RestoreOptions, Location::caller()),
        }
    }
}

/// A tracked backup engine. It keeps the environment it was opened with alive (rust-rocksdb
/// keeps a clone), which the ledger records as a hold.
pub struct TrackedBackupEngine {
    inner: BackupEngine,
    _env: Hold,
    token: Token,
}
deref_and_token!(TrackedBackupEngine, BackupEngine);

impl TrackedBackupEngine {
    /// `BackupEngine::open`, registered in the options' ledger.
    ///
    /// # Errors
    /// RocksDB's error when the engine cannot be opened; nothing is registered then.
    #[track_caller]
    pub fn open(opts: &TrackedBackupEngineOptions, env: &TrackedEnv) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = BackupEngine::open(&opts.inner, env)?;
        let token = opts.token.ledger().register_at(HandleKind::BackupEngine, site);
        Ok(TrackedBackupEngine { inner, _env: env.token().held_by(&token), token })
    }
}

impl<T: ThreadMode> std::fmt::Debug for TrackedTransactionDb<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedTransactionDb").field("token", &self.token).finish_non_exhaustive()
    }
}

impl<DB> std::fmt::Debug for TrackedTransaction<'_, DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedTransaction").field("token", &self.token).finish_non_exhaustive()
    }
}
