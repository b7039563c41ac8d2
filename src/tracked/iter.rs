//! Tracked iterators and snapshots: handles that borrow a DB and pin its files while they live.

use std::ops::{Deref, DerefMut};
use std::panic::Location;

use rocksdb::{
    AsColumnFamilyRef, DBAccess, DBIteratorWithThreadMode, DBRawIteratorWithThreadMode, IteratorMode,
    SnapshotWithThreadMode,
};

use super::TrackedReadOptions;
use crate::{ledger::HandleKind, ledger::Token};

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

/// The tracked versions of a readable handle's iterator and snapshot methods, for the `impl` of a
/// wrapper whose field `inner` is a rust-rocksdb `$access` (a DB, a transaction DB, a
/// transaction) and which has `fn iter_token(&self, HandleKind) -> Token` (`#[track_caller]`).
/// rust-rocksdb gives each of these types the same thirteen methods, each creating a native
/// handle; the wrapper shadows every one.
macro_rules! tracked_reads {
    ($access:ty) => {
        /// A tracked iterator over the default column family.
        #[track_caller]
        pub fn iterator<'a: 'b, 'b>(
            &'a self,
            mode: rocksdb::IteratorMode,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.iterator(mode),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked iterator with read options; the iterator owns them.
        #[track_caller]
        pub fn iterator_opt<'a: 'b, 'b>(
            &'a self,
            mode: rocksdb::IteratorMode,
            readopts: $crate::tracked::TrackedReadOptions,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            let token = self.iter_token($crate::ledger::HandleKind::Iterator);
            let $crate::tracked::TrackedReadOptions { inner, token: ro } = readopts;
            $crate::tracked::TrackedIterator::new(self.inner.iterator_opt(mode, inner), Some(ro), token)
        }

        /// A tracked iterator over a column family.
        #[track_caller]
        pub fn iterator_cf<'a: 'b, 'b>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
            mode: rocksdb::IteratorMode,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.iterator_cf(cf, mode),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked iterator over a column family with read options; the iterator owns them.
        #[track_caller]
        pub fn iterator_cf_opt<'a: 'b, 'b>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
            readopts: $crate::tracked::TrackedReadOptions,
            mode: rocksdb::IteratorMode,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            let token = self.iter_token($crate::ledger::HandleKind::Iterator);
            let $crate::tracked::TrackedReadOptions { inner, token: ro } = readopts;
            $crate::tracked::TrackedIterator::new(self.inner.iterator_cf_opt(cf, inner, mode), Some(ro), token)
        }

        /// A tracked total-order iterator.
        #[track_caller]
        pub fn full_iterator<'a: 'b, 'b>(
            &'a self,
            mode: rocksdb::IteratorMode,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.full_iterator(mode),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked iterator over a whole column family (total order seek, whatever the prefix
        /// extractor).
        #[track_caller]
        pub fn full_iterator_cf<'a: 'b, 'b>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
            mode: rocksdb::IteratorMode,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.full_iterator_cf(cf, mode),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked prefix iterator.
        #[track_caller]
        pub fn prefix_iterator<'a: 'b, 'b, P: AsRef<[u8]>>(
            &'a self,
            prefix: P,
        ) -> $crate::tracked::TrackedIterator<'b, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.prefix_iterator(prefix),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked prefix iterator over a column family.
        #[track_caller]
        pub fn prefix_iterator_cf<'a, P: AsRef<[u8]>>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
            prefix: P,
        ) -> $crate::tracked::TrackedIterator<'a, $access> {
            $crate::tracked::TrackedIterator::new(
                self.inner.prefix_iterator_cf(cf, prefix),
                None,
                self.iter_token($crate::ledger::HandleKind::Iterator),
            )
        }

        /// A tracked raw iterator.
        #[track_caller]
        pub fn raw_iterator<'a: 'b, 'b>(&'a self) -> $crate::tracked::TrackedRawIterator<'b, $access> {
            $crate::tracked::TrackedRawIterator::new(
                self.inner.raw_iterator(),
                None,
                self.iter_token($crate::ledger::HandleKind::RawIterator),
            )
        }

        /// A tracked raw iterator over a column family.
        #[track_caller]
        pub fn raw_iterator_cf<'a: 'b, 'b>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
        ) -> $crate::tracked::TrackedRawIterator<'b, $access> {
            $crate::tracked::TrackedRawIterator::new(
                self.inner.raw_iterator_cf(cf),
                None,
                self.iter_token($crate::ledger::HandleKind::RawIterator),
            )
        }

        /// A tracked raw iterator with read options; the iterator owns them.
        #[track_caller]
        pub fn raw_iterator_opt<'a: 'b, 'b>(
            &'a self,
            readopts: $crate::tracked::TrackedReadOptions,
        ) -> $crate::tracked::TrackedRawIterator<'b, $access> {
            let token = self.iter_token($crate::ledger::HandleKind::RawIterator);
            let $crate::tracked::TrackedReadOptions { inner, token: ro } = readopts;
            $crate::tracked::TrackedRawIterator::new(self.inner.raw_iterator_opt(inner), Some(ro), token)
        }

        /// A tracked raw iterator over a column family with read options; the iterator owns them.
        #[track_caller]
        pub fn raw_iterator_cf_opt<'a: 'b, 'b>(
            &'a self,
            cf: &impl rocksdb::AsColumnFamilyRef,
            readopts: $crate::tracked::TrackedReadOptions,
        ) -> $crate::tracked::TrackedRawIterator<'b, $access> {
            let token = self.iter_token($crate::ledger::HandleKind::RawIterator);
            let $crate::tracked::TrackedReadOptions { inner, token: ro } = readopts;
            $crate::tracked::TrackedRawIterator::new(self.inner.raw_iterator_cf_opt(cf, inner), Some(ro), token)
        }

        /// A tracked snapshot.
        #[track_caller]
        pub fn snapshot(&self) -> $crate::tracked::TrackedSnapshot<'_, $access> {
            $crate::tracked::TrackedSnapshot::new(
                self.inner.snapshot(),
                self.iter_token($crate::ledger::HandleKind::Snapshot),
            )
        }
    };
}
pub(crate) use tracked_reads;
