//! Tracked write batches.

use std::panic::Location;

use rocksdb::WriteBatch;

use super::deref_and_token;
use crate::{HandleKind, Ledger, Token};

/// A tracked `WriteBatch`. Writing it through [`super::TrackedDb::write`] consumes it.
pub struct TrackedWriteBatch {
    pub(crate) inner: WriteBatch,
    pub(crate) token: Token,
}
deref_and_token!(TrackedWriteBatch, WriteBatch);

impl TrackedWriteBatch {
    /// `WriteBatch::default()`, registered in `ledger`.
    #[track_caller]
    pub fn new(ledger: &Ledger) -> Self {
        TrackedWriteBatch {
            inner: WriteBatch::default(),
            token: ledger.register_at(HandleKind::WriteBatch, Location::caller()),
        }
    }
}
