//! Close errors that cannot be lost.
//!
//! KAFKA-20616 stayed quiet because the store's close caught and discarded the error of the
//! failed close-time write. A [`CloseResult`] is `#[must_use]`; if it is dropped holding an error
//! that nobody took out, the error is recorded in the ledger and shows in every report as a
//! swallowed close error.

use std::fmt;
use std::panic::Location;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{current_owner, lock, Ledger};

/// A close error that was dropped without being looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SwallowedCloseError {
    /// What was being closed.
    pub what: String,
    /// Where the close was called (`file:line:column`).
    pub site: String,
    /// The owner path at the time of the close.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The error, as it displays itself.
    pub error: String,
}

/// The outcome of a close that can fail. Take the result out with [`CloseResult::into_result`]
/// (or [`CloseResult::err`]); dropping an unobserved error records it in the ledger.
///
/// ```
/// use leakcheck::{CloseResult, Ledger};
///
/// let ledger = Ledger::new();
/// let closed: CloseResult<String> = CloseResult::new(&ledger, "store", Err("disk full".into()));
/// drop(closed); // nobody looked
/// assert_eq!(ledger.report().swallowed_close_errors.len(), 1);
/// ```
#[must_use = "a close error nobody looks at hides a leak: handle it, or call .into_result()"]
pub struct CloseResult<E: fmt::Display> {
    result: Option<Result<(), E>>,
    ledger: Ledger,
    what: &'static str,
    site: &'static Location<'static>,
    owner: Option<Arc<str>>,
}

impl<E: fmt::Display> fmt::Debug for CloseResult<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.result {
            Some(Ok(())) => "ok".to_string(),
            Some(Err(e)) => format!("error: {e}"),
            None => "taken".to_string(),
        };
        write!(f, "CloseResult({} at {}: {state})", self.what, self.site)
    }
}

impl<E: fmt::Display> CloseResult<E> {
    /// Wraps the result of closing `what`, called at the caller's location.
    #[track_caller]
    pub fn new(ledger: &Ledger, what: &'static str, result: Result<(), E>) -> Self {
        ledger.inner.close_results.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        CloseResult {
            result: Some(result),
            ledger: ledger.clone(),
            what,
            site: Location::caller(),
            owner: current_owner(),
        }
    }

    /// Whether the close failed. Looking does not count as handling: the error is still recorded
    /// as swallowed unless it is taken out.
    pub fn is_err(&self) -> bool {
        matches!(self.result, Some(Err(_)))
    }

    /// Takes the result out: the caller now owns the error.
    pub fn into_result(mut self) -> Result<(), E> {
        self.result.take().unwrap_or(Ok(()))
    }

    /// Takes the error out, if any.
    pub fn err(self) -> Option<E> {
        self.into_result().err()
    }
}

impl<E: fmt::Display> Drop for CloseResult<E> {
    fn drop(&mut self) {
        if let Some(Err(e)) = self.result.take() {
            // The ledger's record, leakcheck's own bookkeeping.
            crate::bookkeeping::bookkeeping(|| {
                lock(&self.ledger.inner.swallowed).push(SwallowedCloseError {
                    what: self.what.to_string(),
                    site: self.site.to_string(),
                    owner: self.owner.as_deref().map(str::to_string),
                    error: e.to_string(),
                })
            });
        }
    }
}

impl Ledger {
    /// How many swallowed close errors were recorded so far (cheap: no report is built).
    pub(crate) fn swallowed_count(&self) -> usize {
        lock(&self.inner.swallowed).len()
    }
}
