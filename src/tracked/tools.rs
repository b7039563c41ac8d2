//! Tracked checkpoints and SST file writers.

use std::ops::{Deref, DerefMut};
use std::panic::Location;

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{SstFileWriter, ThreadMode};

use super::{TrackedDb, TrackedOptions};
use crate::{HandleKind, Token};

/// A tracked checkpoint object.
pub struct TrackedCheckpoint<'db> {
    inner: Checkpoint<'db>,
    token: Token,
}

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

    /// This checkpoint's token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl<'db> Deref for TrackedCheckpoint<'db> {
    type Target = Checkpoint<'db>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

/// A tracked SST file writer.
pub struct TrackedSstFileWriter<'a> {
    inner: SstFileWriter<'a>,
    token: Token,
}

impl<'a> TrackedSstFileWriter<'a> {
    /// `SstFileWriter::create` with tracked options.
    #[track_caller]
    pub fn create(opts: &'a TrackedOptions) -> Self {
        let token = opts.token.ledger().register_at(HandleKind::SstFileWriter, Location::caller());
        TrackedSstFileWriter { inner: SstFileWriter::create(&opts.inner), token }
    }

    /// This writer's token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl<'a> Deref for TrackedSstFileWriter<'a> {
    type Target = SstFileWriter<'a>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl DerefMut for TrackedSstFileWriter<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl std::fmt::Debug for TrackedCheckpoint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedCheckpoint").field("token", &self.token).finish_non_exhaustive()
    }
}

impl std::fmt::Debug for TrackedSstFileWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedSstFileWriter").field("token", &self.token).finish_non_exhaustive()
    }
}
