//! A native leak planted around any lifecycle: C `malloc` of a fixed size per cycle, with no
//! handle and no wrapper, kept reachable only through a raw pointer list. For measuring what the
//! bytes signal can see (sensitivity tables, benches).

use std::collections::BTreeMap;
use std::sync::Mutex;

use leakcheck::harness::{CycleCtx, Integrity, Lifecycle};
use leakcheck::probe::RocksDbMemory;

/// Where each planted leak that ran in this process is in the source (`file:line`).
static SITES: Mutex<BTreeMap<&'static str, String>> = Mutex::new(BTreeMap::new());

/// Records that the planted leak `name` ran at `file:line` (the `planted!` macro).
pub fn record_site(name: &'static str, file: &'static str, line: u32) {
    crate::lock(&SITES).entry(name).or_insert_with(|| format!("{file}:{line}"));
}

/// Where the planted leak `name` ran in this process (`leak-tests/src/reference/close.rs:41`), if it did.
pub fn site_of(name: &str) -> Option<String> {
    crate::lock(&SITES).get(name).cloned()
}

/// `planted!("name", expr)`: evaluates `expr`, a planted leak, and records its line, so the
/// detection matrix can compare the ledger's creation sites with it without reading source text.
/// Keep `expr` on the macro's first line (the line recorded).
macro_rules! planted {
    ($name:literal, $planted:expr) => {{
        $crate::planted::record_site($name, file!(), line!());
        $planted
    }};
}
pub(crate) use planted;

/// Handles parked by [`PlantedMalloc::parking_options`]: a registry that lives as long as the
/// process, so they stay reachable to the end (what valgrind files under "still reachable").
static PARKED: Mutex<Vec<leakcheck::tracked::TrackedOptions>> = Mutex::new(Vec::new());

/// What [`PlantedMalloc`] does with a tracked handle each cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlantedHandle {
    /// Nothing.
    None,
    /// Forgets a tracked Options (`mem::forget`): unreachable.
    Forget,
    /// Parks a tracked Options in a process-wide registry: reachable, never released.
    Park,
}

/// Wraps a lifecycle and leaks `bytes_per_cycle` bytes of native memory in every open (and,
/// with [`PlantedMalloc::forgetting_options`] or [`PlantedMalloc::parking_options`], a tracked
/// Options handle too).
pub struct PlantedMalloc<L> {
    inner: L,
    bytes_per_cycle: usize,
    kept: Vec<usize>,
    handle: PlantedHandle,
}

impl<L> PlantedMalloc<L> {
    /// `inner`, leaking `bytes_per_cycle` per cycle (0: nothing). `cycles` reserves room for the
    /// pointers up front, so keeping them allocates nothing during the run.
    pub fn new(inner: L, bytes_per_cycle: usize, cycles: u64) -> Self {
        PlantedMalloc {
            inner,
            bytes_per_cycle,
            kept: Vec::with_capacity(cycles.min(1 << 24) as usize),
            handle: PlantedHandle::None,
        }
    }

    /// Also forgets one tracked `Options` per cycle (a leaked handle the ledger sees at once).
    pub fn forgetting_options(mut self) -> Self {
        self.handle = PlantedHandle::Forget;
        self
    }

    /// Also parks one tracked `Options` per cycle in a registry that lives as long as the
    /// process (a leaked handle that stays reachable: no tool that scans memory at exit calls it
    /// lost).
    pub fn parking_options(mut self) -> Self {
        self.handle = PlantedHandle::Park;
        self
    }

    /// The wrapped lifecycle.
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

impl<L> Drop for PlantedMalloc<L> {
    fn drop(&mut self) {
        for p in self.kept.drain(..) {
            // SAFETY: allocated by libc::malloc in `open`, freed exactly once here.
            unsafe { libc::free(p as *mut libc::c_void) };
        }
    }
}

impl<L: Lifecycle> Lifecycle for PlantedMalloc<L> {
    type Store = L::Store;
    type Error = L::Error;

    fn fault_points(&self) -> Vec<&'static str> {
        self.inner.fault_points()
    }

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<L::Store, L::Error> {
        if self.bytes_per_cycle > 0 && self.kept.len() < self.kept.capacity() {
            // SAFETY: a plain C allocation, kept on purpose and freed on drop.
            let p = unsafe { libc::malloc(self.bytes_per_cycle) };
            if !p.is_null() {
                // SAFETY: `p` points to `bytes_per_cycle` writable bytes.
                unsafe { p.cast::<u8>().write_bytes(0xa5, self.bytes_per_cycle) };
                self.kept.push(std::hint::black_box(p) as usize);
            }
        }
        match self.handle {
            PlantedHandle::None => {}
            PlantedHandle::Forget => std::mem::forget(leakcheck::tracked::TrackedOptions::new(ctx.ledger)),
            PlantedHandle::Park => crate::lock(&PARKED).push(leakcheck::tracked::TrackedOptions::new(ctx.ledger)),
        }
        self.inner.open(ctx)
    }

    fn work(&mut self, store: &mut L::Store, ctx: &CycleCtx<'_>) -> Result<(), L::Error> {
        self.inner.work(store, ctx)
    }

    fn close(&mut self, store: L::Store, ctx: &CycleCtx<'_>) -> Result<(), L::Error> {
        self.inner.close(store, ctx)
    }

    fn check(&mut self, ctx: &CycleCtx<'_>) -> Integrity {
        self.inner.check(ctx)
    }

    fn data_dir(&self) -> Option<std::path::PathBuf> {
        self.inner.data_dir()
    }

    fn instances_per_cycle(&self) -> u64 {
        self.inner.instances_per_cycle()
    }

    fn rocksdb_memory(&self) -> Option<RocksDbMemory> {
        self.inner.rocksdb_memory()
    }
}

impl<L> std::fmt::Debug for PlantedMalloc<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlantedMalloc").finish_non_exhaustive()
    }
}
