//! Tracked checkpoints and SST file writers.

use std::panic::Location;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{SstFileWriter, ThreadMode};

use super::{deref_and_token, TrackedDb, TrackedOptimisticTransactionDb, TrackedOptions};
use crate::{ledger::HandleKind, ledger::Token};

/// A tracked checkpoint object.
pub struct TrackedCheckpoint<'db> {
    inner: Checkpoint<'db>,
    token: Token,
}
deref_and_token!(TrackedCheckpoint<'db>, Checkpoint<'db>);

impl<'db> TrackedCheckpoint<'db> {
    /// `Checkpoint::new` for a tracked DB.
    ///
    /// # Errors
    /// RocksDB's error when the checkpoint object cannot be created.
    #[track_caller]
    pub fn new<T: ThreadMode>(db: &'db TrackedDb<T>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Checkpoint::new(db)?;
        Ok(TrackedCheckpoint { inner, token: db.ledger().register_at(HandleKind::Checkpoint, site) })
    }

    /// `Checkpoint::new` for a tracked optimistic transaction DB (its base DB's checkpoint).
    ///
    /// # Errors
    /// RocksDB's error when the checkpoint object cannot be created.
    #[track_caller]
    pub fn of_optimistic<T: ThreadMode>(db: &'db TrackedOptimisticTransactionDb<T>) -> Result<Self, rocksdb::Error> {
        let site = Location::caller();
        let inner = Checkpoint::new(db)?;
        Ok(TrackedCheckpoint { inner, token: db.ledger().register_at(HandleKind::Checkpoint, site) })
    }
}

/// A tracked SST file writer.
pub struct TrackedSstFileWriter<'a> {
    inner: SstFileWriter<'a>,
    token: Token,
}
deref_and_token!(TrackedSstFileWriter<'a>, SstFileWriter<'a>);

impl<'a> TrackedSstFileWriter<'a> {
    /// `SstFileWriter::create` with tracked options.
    #[track_caller]
    pub fn create(opts: &'a TrackedOptions) -> Self {
        let token = opts.token.ledger().register_at(HandleKind::SstFileWriter, Location::caller());
        TrackedSstFileWriter { inner: SstFileWriter::create(&opts.inner), token }
    }
}
