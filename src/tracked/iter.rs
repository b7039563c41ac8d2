//! Tracked iterators and snapshots: handles that borrow a DB and pin its files while they live.

use std::ops::{Deref, DerefMut};
use std::panic::Location;

use rocksdb::{
    AsColumnFamilyRef, DBAccess, DBIteratorWithThreadMode, DBRawIteratorWithThreadMode, IteratorMode,
    SnapshotWithThreadMode,
};

use super::TrackedReadOptions;
use crate::{HandleKind, Token};

/// A tracked `DBIterator`. An iterator that is never dropped keeps its SST files pinned: the
/// range-scan leak class (KAFKA-19748).
pub struct TrackedIterator<'a, D: DBAccess> {
    inner: DBIteratorWithThreadMode<'a, D>,
    _readopts: Option<Token>,
    token: Token,
}

impl<'a, D: DBAccess> TrackedIterator<'a, D> {
    pub(crate) fn new(inner: DBIteratorWithThreadMode<'a, D>, readopts: Option<Token>, token: Token) -> Self {
        TrackedIterator { inner, _readopts: readopts, token }
    }

    /// This iterator's token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl<'a, D: DBAccess> Deref for TrackedIterator<'a, D> {
    type Target = DBIteratorWithThreadMode<'a, D>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<D: DBAccess> DerefMut for TrackedIterator<'_, D> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl<D: DBAccess> Iterator for TrackedIterator<'_, D> {
    type Item = Result<(Box<[u8]>, Box<[u8]>), rocksdb::Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }
}

impl<D: DBAccess> std::iter::FusedIterator for TrackedIterator<'_, D> {}

/// A tracked `DBRawIterator`.
pub struct TrackedRawIterator<'a, D: DBAccess> {
    inner: DBRawIteratorWithThreadMode<'a, D>,
    _readopts: Option<Token>,
    token: Token,
}

impl<'a, D: DBAccess> TrackedRawIterator<'a, D> {
    pub(crate) fn new(inner: DBRawIteratorWithThreadMode<'a, D>, readopts: Option<Token>, token: Token) -> Self {
        TrackedRawIterator { inner, _readopts: readopts, token }
    }

    /// This iterator's token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl<'a, D: DBAccess> Deref for TrackedRawIterator<'a, D> {
    type Target = DBRawIteratorWithThreadMode<'a, D>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<D: DBAccess> DerefMut for TrackedRawIterator<'_, D> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

/// A tracked snapshot. Its `iterator` and `iterator_cf` return tracked iterators.
pub struct TrackedSnapshot<'a, D: DBAccess> {
    inner: SnapshotWithThreadMode<'a, D>,
    token: Token,
}

impl<'a, D: DBAccess> TrackedSnapshot<'a, D> {
    pub(crate) fn new(inner: SnapshotWithThreadMode<'a, D>, token: Token) -> Self {
        TrackedSnapshot { inner, token }
    }

    /// This snapshot's token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// A tracked iterator reading at this snapshot.
    #[track_caller]
    pub fn iterator(&self, mode: IteratorMode) -> TrackedIterator<'a, D> {
        let token = self.token.ledger().register_at(HandleKind::Iterator, Location::caller());
        TrackedIterator::new(self.inner.iterator(mode), None, token)
    }

    /// A tracked iterator over a column family, reading at this snapshot.
    #[track_caller]
    pub fn iterator_cf(&self, cf: &impl AsColumnFamilyRef, mode: IteratorMode) -> TrackedIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::Iterator, Location::caller());
        TrackedIterator::new(self.inner.iterator_cf(cf, mode), None, token)
    }

    /// A tracked iterator reading at this snapshot with read options; the iterator owns them.
    #[track_caller]
    pub fn iterator_opt(&self, mode: IteratorMode, readopts: TrackedReadOptions) -> TrackedIterator<'a, D> {
        let token = self.token.ledger().register_at(HandleKind::Iterator, Location::caller());
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedIterator::new(self.inner.iterator_opt(mode, inner), Some(ro), token)
    }

    /// A tracked iterator over a column family at this snapshot with read options.
    #[track_caller]
    pub fn iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        readopts: TrackedReadOptions,
        mode: IteratorMode,
    ) -> TrackedIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::Iterator, Location::caller());
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedIterator::new(self.inner.iterator_cf_opt(cf, inner, mode), Some(ro), token)
    }

    /// A tracked raw iterator reading at this snapshot.
    #[track_caller]
    pub fn raw_iterator(&self) -> TrackedRawIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::RawIterator, Location::caller());
        TrackedRawIterator::new(self.inner.raw_iterator(), None, token)
    }

    /// A tracked raw iterator over a column family, reading at this snapshot.
    #[track_caller]
    pub fn raw_iterator_cf(&self, cf: &impl AsColumnFamilyRef) -> TrackedRawIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::RawIterator, Location::caller());
        TrackedRawIterator::new(self.inner.raw_iterator_cf(cf), None, token)
    }

    /// A tracked raw iterator at this snapshot with read options; the iterator owns them.
    #[track_caller]
    pub fn raw_iterator_opt(&self, readopts: TrackedReadOptions) -> TrackedRawIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::RawIterator, Location::caller());
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedRawIterator::new(self.inner.raw_iterator_opt(inner), Some(ro), token)
    }

    /// A tracked raw iterator over a column family at this snapshot with read options.
    #[track_caller]
    pub fn raw_iterator_cf_opt(
        &self,
        cf: &impl AsColumnFamilyRef,
        readopts: TrackedReadOptions,
    ) -> TrackedRawIterator<'_, D> {
        let token = self.token.ledger().register_at(HandleKind::RawIterator, Location::caller());
        let TrackedReadOptions { inner, token: ro } = readopts;
        TrackedRawIterator::new(self.inner.raw_iterator_cf_opt(cf, inner), Some(ro), token)
    }
}

impl<'a, D: DBAccess> Deref for TrackedSnapshot<'a, D> {
    type Target = SnapshotWithThreadMode<'a, D>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<D: DBAccess> std::fmt::Debug for TrackedIterator<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedIterator").field("token", &self.token).finish_non_exhaustive()
    }
}

impl<D: DBAccess> std::fmt::Debug for TrackedRawIterator<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedRawIterator").field("token", &self.token).finish_non_exhaustive()
    }
}

impl<D: DBAccess> std::fmt::Debug for TrackedSnapshot<'_, D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedSnapshot").field("token", &self.token).finish_non_exhaustive()
    }
}
