//! Tracked write batches.

use std::panic::Location;

use rocksdb::WriteBatchWithTransaction;

use crate::{ledger::HandleKind, ledger::Ledger, ledger::Token};

/// A tracked write batch: `WriteBatch` by default, or the batch of an optimistic transaction DB
/// (`TrackedWriteBatch<true>`, rust-rocksdb's `WriteBatchWithTransaction<true>`). Writing it
/// through [`super::TrackedDb::write`] or [`super::TrackedOptimisticTransactionDb::write`]
/// consumes it.
pub struct TrackedWriteBatch<const TRANSACTION: bool = false> {
    pub(crate) inner: WriteBatchWithTransaction<TRANSACTION>,
    pub(crate) token: Token,
}

impl TrackedWriteBatch<false> {
    /// `WriteBatch::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        Self::at(ledger, Location::caller())
    }
}

impl TrackedWriteBatch<true> {
    /// `WriteBatchWithTransaction::<true>::default()`, the batch an optimistic transaction DB
    /// writes, registered in `ledger`.
    #[track_caller]
    pub fn for_transactions(ledger: &Ledger) -> Self {
        Self::at(ledger, Location::caller())
    }
}

impl<const TRANSACTION: bool> TrackedWriteBatch<TRANSACTION> {
    fn at(ledger: &Ledger, site: &'static Location<'static>) -> Self {
        TrackedWriteBatch {
            inner: WriteBatchWithTransaction::default(),
            token: ledger.register_at(HandleKind::WriteBatch, site),
        }
    }

    /// This batch's ledger token.
    pub fn token(&self) -> &Token {
        &self.token
    }
}

impl<const TRANSACTION: bool> std::ops::Deref for TrackedWriteBatch<TRANSACTION> {
    type Target = WriteBatchWithTransaction<TRANSACTION>;
    fn deref(&self) -> &Self::Target {
        &self.inner
    }
}

impl<const TRANSACTION: bool> std::ops::DerefMut for TrackedWriteBatch<TRANSACTION> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.inner
    }
}

impl<const TRANSACTION: bool> std::fmt::Debug for TrackedWriteBatch<TRANSACTION> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TrackedWriteBatch").field("token", &self.token).finish_non_exhaustive()
    }
}
