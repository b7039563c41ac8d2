//! criterion `Measurement`s for memory (feature `criterion`): bytes allocated per iteration,
//! bytes retained per iteration, handles retained per iteration. Put them in your own benches:
//!
//! ```no_run
//! use criterion::Criterion;
//! use leakcheck::bench::RetainedBytes;
//!
//! let mut c = Criterion::default().with_measurement(RetainedBytes::default());
//! c.bench_function("my_cycle", |b| b.iter(|| { /* open, use, close */ }));
//! ```
//!
//! Criterion divides the measured value by the iteration count, so each measurement is additive:
//! what the iterations allocated or retained in total, never a level.

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::Throughput;

use crate::ledger::Ledger;
use crate::probe::jemalloc::{self, ThreadCounters};
use crate::units::byte_unit;

/// Formats byte counts as B, KiB, MiB or GiB.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct BytesFormatter;

impl ValueFormatter for BytesFormatter {
    fn scale_values(&self, typical_value: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = byte_unit(typical_value);
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(&self, typical_value: f64, _throughput: &Throughput, values: &mut [f64]) -> &'static str {
        self.scale_values(typical_value, values)
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "B"
    }
}

/// Formats handle counts.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct HandlesFormatter;

impl ValueFormatter for HandlesFormatter {
    fn scale_values(&self, _typical_value: f64, _values: &mut [f64]) -> &'static str {
        "handles"
    }

    fn scale_throughputs(&self, _typical_value: f64, _throughput: &Throughput, _values: &mut [f64]) -> &'static str {
        "handles"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "handles"
    }
}

/// Bytes the benchmarking thread allocated during the iterations (jemalloc's per-thread
/// `thread.allocated`): allocation churn per iteration, freed or not. Other threads (RocksDB's
/// background work) are not counted.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllocatedBytes;

fn thread_allocated() -> u64 {
    ThreadCounters::current().map(|c| c.allocated()).unwrap_or(0)
}

impl Measurement for AllocatedBytes {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        thread_allocated()
    }
    fn end(&self, start: u64) -> u64 {
        thread_allocated().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &BytesFormatter
    }
}

/// Bytes still allocated, process-wide, after the iterations: jemalloc's `stats.allocated` read
/// after flushing this thread's cache and purging, twice in a row until it agrees, at start and
/// end. A leak of N bytes per iteration measures as N per iteration; a clean routine as about 0
/// (it can go slightly negative when caches shrink).
#[derive(Debug, Clone, Copy)]
pub struct RetainedBytes {
    /// Two consecutive reads may differ by at most this much to count as settled.
    pub settle_bound_bytes: u64,
}

impl Default for RetainedBytes {
    fn default() -> Self {
        RetainedBytes { settle_bound_bytes: 256 }
    }
}

impl RetainedBytes {
    /// Allocated bytes, process-wide, once settled (at most 50 tries, 1 ms apart).
    pub(crate) fn settled_allocated(&self) -> i64 {
        let read = || {
            let _ = jemalloc::purge_all();
            jemalloc::allocated_bytes().unwrap_or(0) as i64
        };
        let mut prev = read();
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(1));
            let next = read();
            if next.abs_diff(prev) <= self.settle_bound_bytes {
                return next;
            }
            prev = next;
        }
        prev
    }
}

/// A measurement of a level read by `$read` (an `i64`) at start and end, whose value is the
/// difference: additive over iterations, as criterion needs.
macro_rules! level_difference {
    ($ty:ty, $read:ident, $formatter:expr) => {
        impl Measurement for $ty {
            type Intermediate = i64;
            type Value = f64;

            fn start(&self) -> i64 {
                self.$read()
            }
            fn end(&self, start: i64) -> f64 {
                (self.$read() - start) as f64
            }
            fn add(&self, a: &f64, b: &f64) -> f64 {
                a + b
            }
            fn zero(&self) -> f64 {
                0.0
            }
            fn to_f64(&self, v: &f64) -> f64 {
                *v
            }
            fn formatter(&self) -> &dyn ValueFormatter {
                &$formatter
            }
        }
    };
}

level_difference!(RetainedBytes, settled_allocated, BytesFormatter);

/// Undeclared live handles added to a ledger during the iterations.
#[derive(Debug, Clone)]
pub struct RetainedHandles {
    ledger: Ledger,
}

impl RetainedHandles {
    /// Counts `ledger`'s retained (live, not declared shared) handles.
    pub fn new(ledger: &Ledger) -> Self {
        RetainedHandles { ledger: ledger.clone() }
    }

    fn retained(&self) -> i64 {
        self.ledger.retained_counts().values().sum::<u64>() as i64
    }
}

level_difference!(RetainedHandles, retained, HandlesFormatter);
