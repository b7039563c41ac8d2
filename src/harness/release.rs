//! The handle check's wait: how long to wait for handles still retained after close before
//! calling them leaked.
//!
//! A handle retained when close returns is either on its way out (a close finishing on another
//! thread, a worker unwinding) or never coming back (forgotten, parked in a registry, held by a
//! cycle of `Arc`s). The first kind shows: a handle released during the wait, a thread that
//! started after close began and has not ended, a thread ending, another thread using CPU.
//! So the wait goes on while any of that is seen, up to [`HarnessConfig::handle_settle`]'s
//! bound, and ends once nothing was seen for [`HarnessConfig::handle_quiet`]. A forgotten
//! handle in a still process is then a verdict after the quiet period, not after the bound.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::probe::process::{other_threads, OtherThreads};
use crate::{ledger::Ledger, ledger::Settle};

#[cfg(doc)]
use super::HarnessConfig;

/// Other threads' CPU time, per second of the wait, above which they count as working: 1%.
/// Idle RocksDB pool threads and parked workers use none; a close finishing on another thread
/// uses far more.
const BUSY_CPU_PER_SECOND: Duration = Duration::from_millis(10);

/// Waits for retained handles, watching for signs that something could still release them.
/// Keeps its buffers from cycle to cycle.
#[derive(Debug, Default)]
pub(super) struct ReleaseWatch {
    /// The threads when close began; `None` when they could not be read.
    before_close: Option<OtherThreads>,
    last: OtherThreads,
    now: OtherThreads,
}

impl ReleaseWatch {
    /// Notes the threads running as close begins (or as a failed open returns): a thread
    /// started after it (a closer handed the store) is one that could still release a handle.
    /// RocksDB's pools, started while its databases opened, are not counted.
    pub(super) fn closing(&mut self) {
        let mut before = self.before_close.take().unwrap_or_default();
        self.before_close = other_threads(&mut before, false).is_ok().then_some(before);
    }

    /// Waits, checking with backoff, until no undeclared handle is retained, or `settle.timeout`
    /// passes, or `quiet` passes with no sign of a release to come. Returns the retained counts
    /// per kind (empty: none). What cannot be read counts as a sign: then the wait runs to the
    /// bound, as it did before the quiet rule.
    /// `counts` reads the retained counts (the ledger's, less what suppressions accept).
    pub(super) fn wait(
        &mut self,
        ledger: &Ledger,
        counts: &dyn Fn() -> BTreeMap<String, u64>,
        settle: Settle,
        quiet: Duration,
    ) -> BTreeMap<String, u64> {
        let start = Instant::now();
        let deadline = start + settle.timeout;
        let mut retained = counts();
        if retained.is_empty() {
            return retained;
        }
        let mut released = ledger.released_total();
        let mut read_ok = other_threads(&mut self.last, true).is_ok();
        let (mut checked, mut quiet_since) = (start, start);
        let mut backoff = settle.initial_backoff;
        loop {
            let now = Instant::now();
            if now >= deadline || now.duration_since(quiet_since) >= quiet {
                return retained;
            }
            std::thread::sleep(backoff.min(deadline.saturating_duration_since(now)));
            backoff = settle.next_backoff(backoff);
            retained = counts();
            if retained.is_empty() {
                return retained;
            }
            let released_now = ledger.released_total();
            let now_ok = other_threads(&mut self.now, true).is_ok();
            let now = Instant::now();
            let busy =
                released_now != released || !(read_ok && now_ok) || self.threads_changed(now.duration_since(checked));
            if busy {
                quiet_since = now;
            }
            std::mem::swap(&mut self.last, &mut self.now);
            (released, read_ok, checked) = (released_now, now_ok, now);
        }
    }

    /// Whether the threads read last (`now`, against `last`, `elapsed` apart) show something
    /// that could release a handle: a thread that started after close began and is still
    /// running, a thread that started or ended since the last reading, or other threads using CPU.
    fn threads_changed(&self, elapsed: Duration) -> bool {
        let Some(before_close) = &self.before_close else { return true };
        let started_since_close = self.now.ids.iter().any(|id| before_close.ids.binary_search(id).is_err());
        let cpu_busy = match (self.last.cpu_ns, self.now.cpu_ns) {
            (Some(a), Some(b)) => {
                let limit = BUSY_CPU_PER_SECOND.as_nanos() as f64 * elapsed.as_secs_f64();
                // A thread that ended takes its CPU time out of the sum; the ids show that.
                b.saturating_sub(a) as f64 > limit
            }
            _ => true,
        };
        started_since_close || self.now.ids != self.last.ids || cpu_busy
    }
}
