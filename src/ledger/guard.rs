//! Verification with settle-and-retry, a scope guard that checks on drop, and the assertion macro.

use std::fmt;
use std::time::{Duration, Instant};

use super::{LeakReport, Ledger};

/// How long to wait before calling something leaked, for handles and for memory samples alike.
/// Background work (a RocksDB compaction thread finishing, another thread dropping its iterator, a
/// closed DB's files being released) takes time: like goleak, retry with backoff before accusing.
///
/// Handles are settled when the check passes; memory samples when two consecutive ones agree
/// (allocated bytes within [`agree_within_bytes`](Settle::agree_within_bytes), the same fds,
/// maps and threads). The default is the handle check's; [`Settle::SAMPLES`] is the harness's
/// default for memory samples.
///
/// ```
/// use std::time::Duration;
/// let patient = leakcheck::Settle { timeout: Duration::from_secs(2), ..leakcheck::Settle::default() };
/// assert!(patient.timeout > leakcheck::Settle::SAMPLES.timeout);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settle {
    /// Give up after this long (a sample is then marked unsettled; handles are called retained).
    pub timeout: Duration,
    /// First wait between checks; doubles up to `max_backoff`.
    pub initial_backoff: Duration,
    /// Longest wait between checks.
    pub max_backoff: Duration,
    /// Samples only: allocated bytes of two consecutive samples may differ by at most this much.
    pub agree_within_bytes: u64,
    /// Samples only, with a target sample taken before anything was opened: keep sampling, up to
    /// this long in all, while more files or maps are open under the watched directory than in
    /// the target. Two agreeing samples 0.2 ms apart say nothing about a close still running on
    /// another thread; a count above the target does. A store whose files are all closed pays
    /// nothing for it.
    pub pending_timeout: Duration,
}

impl Default for Settle {
    fn default() -> Self {
        Settle {
            timeout: Duration::from_millis(500),
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(50),
            ..Settle::SAMPLES
        }
    }
}

impl Settle {
    /// Check once, no waiting.
    pub const NONE: Settle = Settle {
        timeout: Duration::ZERO,
        initial_backoff: Duration::ZERO,
        max_backoff: Duration::ZERO,
        agree_within_bytes: 0,
        pending_timeout: Duration::ZERO,
    };

    /// The harness's settling before each memory sample: quick successive samples (from 0.2 ms,
    /// doubling up to 20 ms), agreeing within 4 KiB, for up to half a second (two seconds while
    /// files under the data directory are still open).
    pub const SAMPLES: Settle = Settle {
        timeout: Duration::from_millis(500),
        initial_backoff: Duration::from_micros(200),
        max_backoff: Duration::from_millis(20),
        agree_within_bytes: 4096,
        pending_timeout: Duration::from_secs(2),
    };

    /// The wait after `backoff`: doubled, at most `max_backoff`, at least 0.1 ms.
    pub(crate) fn next_backoff(&self, backoff: Duration) -> Duration {
        (backoff * 2).min(self.max_backoff).max(Duration::from_micros(100))
    }

    /// Calls `check` until it returns `Ok` or the timeout passes; returns the last result.
    pub(crate) fn retry<T, E>(&self, mut check: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        let deadline = Instant::now() + self.timeout;
        let mut backoff = self.initial_backoff;
        loop {
            match check() {
                Ok(v) => return Ok(v),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    std::thread::sleep(backoff.min(left));
                    backoff = self.next_backoff(backoff);
                }
            }
        }
    }
}

/// Handles were retained, or close errors swallowed. Displays as the report's table.
#[derive(Debug, Clone)]
pub struct LeakError {
    /// The report that was not clean.
    pub report: LeakReport,
}

impl fmt::Display for LeakError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.report, f)
    }
}

impl std::error::Error for LeakError {}

impl Ledger {
    /// Waits (see [`Settle::default`]) until no undeclared handle is live and no close error was
    /// swallowed; returns the clean report, or the last report as an error.
    ///
    /// # Errors
    /// [`LeakError`] with the report when handles are still retained after settling.
    pub fn verify(&self) -> Result<LeakReport, LeakError> {
        self.verify_with(Settle::default())
    }

    /// [`Ledger::verify`] with an explicit settle policy.
    ///
    /// # Errors
    /// [`LeakError`] with the report when handles are still retained after settling.
    pub fn verify_with(&self, settle: Settle) -> Result<LeakReport, LeakError> {
        settle.retry(|| {
            let report = self.report();
            if report.is_clean() {
                Ok(report)
            } else {
                Err(LeakError { report })
            }
        })
    }

    /// A guard that verifies this ledger when it drops, like goleak's `VerifyNone`: it panics
    /// with the report if handles are retained, unless the thread is already panicking (a failing
    /// test keeps its own message).
    pub fn guard(&self) -> LeakGuard {
        LeakGuard { ledger: self.clone(), settle: Settle::default() }
    }
}

/// Verifies its ledger on drop. See [`Ledger::guard`].
#[must_use = "the guard checks when it drops; bind it to a variable that lives to the end of the test"]
#[derive(Debug)]
pub struct LeakGuard {
    ledger: Ledger,
    settle: Settle,
}

impl LeakGuard {
    /// Uses another settle policy.
    pub fn settle(mut self, settle: Settle) -> Self {
        self.settle = settle;
        self
    }
}

impl Drop for LeakGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = self.ledger.verify_with(self.settle) {
            panic!("{e}");
        }
    }
}

/// Asserts that a ledger has no retained handles and no swallowed close errors, after settling.
/// Panics with the report's table, which names each retained handle's kind, creation site and
/// owner.
///
/// ```
/// let ledger = leakcheck::Ledger::new();
/// leakcheck::assert_no_leaks!(ledger);
/// ```
#[macro_export]
macro_rules! assert_no_leaks {
    ($ledger:expr) => {
        if let Err(e) = $crate::ledger::Ledger::verify(&$ledger) {
            panic!("{e}");
        }
    };
    ($ledger:expr, $($arg:tt)+) => {
        if let Err(e) = $crate::ledger::Ledger::verify(&$ledger) {
            panic!("{}\n{e}", format_args!($($arg)+));
        }
    };
}
