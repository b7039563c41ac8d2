//! Allocation generations: every allocation in the process, Rust's and RocksDB's C++ heap alike,
//! recorded with its usable size and the generation (the cycle) that made it.
//!
//! A counter such as jemalloc's `stats.allocated` cannot tell memory that never comes back from
//! memory freed beside it. This record can: at any moment it knows, per generation, the bytes
//! and allocations still live. A leak is what a cycle allocated and never gave back, so a store
//! that leaks 1 KiB per cycle while a pool gives back 1.25 KiB per cycle still shows 1 KiB of
//! residue in every generation, whatever the total does.
//!
//! The mechanism is jemalloc's allocation hooks (`experimental.hooks.install`, present in the
//! jemalloc 5.3.1 that tikv-jemalloc-sys 0.7.1 vendors; the version is pinned in Cargo.toml and
//! a missing control is reported, not assumed). Where they cannot run (another allocator, a
//! jemalloc without the control, C `malloc` not routed to this jemalloc) [`install`] says why in
//! one line and the verdict falls back to the aggregate rule. docs/generations.md defends the
//! choice and gives its cost.
//!
//! Generations are process-wide, like the heap: one run at a time per process.

#[allow(unsafe_code)]
mod capture;
#[allow(unsafe_code)]
mod hook;
#[allow(unsafe_code)]
mod mapped;
pub(crate) mod sites;
#[allow(unsafe_code)]
mod table;
#[allow(unsafe_code)]
mod unwind;

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A generation's number: [`Generations::advance`] hands them out in increasing order.
pub type Generation = u32;

/// What the hooks' mechanism is called in reports.
pub(crate) const MECHANISM: &str = "jemalloc experimental.hooks.install";

/// Live bytes and allocations of one generation, or of several summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Live {
    /// Bytes (jemalloc's usable sizes) still allocated.
    pub bytes: i64,
    /// Allocations still live.
    pub allocations: i64,
}

impl std::ops::AddAssign for Live {
    fn add_assign(&mut self, o: Live) {
        self.bytes += o.bytes;
        self.allocations += o.allocations;
    }
}

/// An allocating call stack taken by the hooks (see [`Generations::watch`]).
pub type StackId = u32;

/// One live allocation, as [`Generations::survivors`] lists it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Survivor {
    /// jemalloc's usable size, in bytes.
    pub size: u64,
    /// The generation that made it.
    pub generation: Generation,
    /// Its allocating stack, when its size was watched when it was made ([`Generations::stack`]
    /// names it; [`OVERFLOW_STACK`] when the stacks' table was full).
    pub stack: Option<StackId>,
    /// When it is a block grown by reallocs after an earlier generation of the run made it (a
    /// container kept across cycles): its growth history. A growth in a judged cycle has its
    /// stack taken.
    pub chain: Option<Growth>,
}

/// A block's growth history (see [`Survivor::chain`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Growth {
    /// The generation of its last rise above the most it had been.
    pub last: Generation,
    /// The generation of the rise before, or of its making when it rose once.
    pub before: Generation,
    /// Its capacity after the last rise over its capacity before it.
    pub factor: f64,
}

/// The stack of allocations whose stack was taken once the stacks' table was full
/// (`MAX_STACKS` distinct stacks).
pub const OVERFLOW_STACK: StackId = capture::OVERFLOW;

/// Why generations are not available in this process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenerationsError {
    /// This jemalloc has no `experimental.hooks.install` (or refused it).
    #[error("jemalloc refused experimental.hooks.install (code {code}): allocation generations need the jemalloc 5.3.1 of tikv-jemalloc-sys 0.7.1")]
    Hooks {
        /// jemalloc's error code (ENOENT: no such control; EAGAIN: every hook slot taken).
        code: i32,
    },
    /// Memory for the counts could not be mapped.
    #[error("cannot map memory for allocation generations (errno {errno})")]
    Map {
        /// The OS error.
        errno: i32,
    },
    /// C `malloc` does not go through the jemalloc whose hooks were installed.
    #[error("C malloc does not go through leakcheck's jemalloc, so its hooks would miss RocksDB's heap (build rocksdb with its `jemalloc` feature, or leakcheck with `unprefixed-malloc`)")]
    MallocNotRouted,
}

/// The process's allocation generations (see the module docs). Obtained from [`install`].
#[derive(Debug)]
pub struct Generations {
    _installed: (),
}

static INSTALLED: OnceLock<Result<Generations, GenerationsError>> = OnceLock::new();

/// Installs the allocation hooks, once per process; later calls return the same outcome.
///
/// # Errors
/// [`GenerationsError`] when this process's allocator cannot be hooked.
pub fn install() -> Result<&'static Generations, GenerationsError> {
    INSTALLED
        .get_or_init(|| {
            let installed = hook::install().map_err(|e| match e {
                hook::InstallError::Map(errno) => GenerationsError::Map { errno },
                hook::InstallError::Mallctl(code) => GenerationsError::Hooks { code },
            })?;
            if !hook::c_malloc_is_recorded() {
                hook::remove(installed);
                return Err(GenerationsError::MallocNotRouted);
            }
            // What was allocated before the hooks went in: the part of jemalloc's counter the
            // record does not explain yet.
            if let Ok(allocated) = super::jemalloc::allocated_bytes() {
                let recorded: i64 = (hook::BEFORE..=hook::current()).map(|g| hook::live(g).0).sum();
                hook::add_before(allocated as i64 - recorded, 0);
            }
            Ok(Generations { _installed: () })
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Generations {
    /// Starts a new generation: allocations from now on are charged to it. Returns its number.
    pub fn advance(&self) -> Generation {
        hook::advance()
    }

    /// Starts a run: a new generation (its set-up), whose live bytes and every later
    /// generation's are summed as they change ([`Generations::run_live`]). Returns its number.
    pub fn begin_run(&self) -> Generation {
        hook::begin_run()
    }

    /// What the run's generations (from the last [`Generations::begin_run`]'s on) hold now, in
    /// bytes: exact, for the cost of one read per shard.
    pub(crate) fn run_live(&self) -> i64 {
        table::TABLE.run_live()
    }

    /// What stack `id` holds now: the bytes of its live stacked blocks, their estimate (each
    /// weighted by the sampling period it was drawn at), what it turned over, and the watch class
    /// of its first stacked block.
    pub(crate) fn site_now(&self, id: StackId) -> sites::SiteNow {
        sites::read(id)
    }

    /// What watch class `class` made before it was watched (without a stack) and gave back since,
    /// each block over the class's sampling period then (what the stacked blocks replacing them
    /// add, on average); and how they turned over (the sum of their sizes squared times their
    /// ages, over the period).
    pub(crate) fn class_drained(&self, class: u32) -> (f64, (f64, f64)) {
        sites::drained_of(class)
    }

    /// Takes, from generation `from` on, the stacks of growths of blocks an earlier generation
    /// made (see [`Survivor::chain`]); a run sets it to its first judged cycle's.
    pub fn count_growths_from(&self, from: Generation) {
        hook::count_growths_from(from);
    }

    /// Starts a run whose set-up is generation `setup`: the windows ([`Generations::turnover`])
    /// and first sightings are forgotten, ages and chains count from it, frees are noted.
    pub fn start_run(&self, setup: Generation) {
        hook::start_run(setup);
    }

    /// Stops noting frees in the windows: the store lets go of what it keeps across cycles, and
    /// that teardown says nothing of how its stacks turn over.
    pub fn stop_judging(&self) {
        hook::stop_judging();
    }

    /// The generation allocations are charged to now.
    pub fn current(&self) -> Generation {
        hook::current()
    }

    /// What `generation` still holds.
    pub(crate) fn live(&self, generation: Generation) -> Live {
        let (bytes, allocations) = hook::live(generation);
        Live { bytes, allocations }
    }

    /// What generations `from..=to` still hold, summed.
    pub(crate) fn live_range(&self, from: Generation, to: Generation) -> Live {
        let mut sum = Live::default();
        for g in from..=to {
            sum += self.live(g);
        }
        sum
    }

    /// What leakcheck's own bookkeeping holds (see [`bookkeeping`]).
    pub(crate) fn runner(&self) -> Live {
        self.live(hook::RUNNER)
    }

    /// Every generation summed, the bookkeeping and what came before included: follows jemalloc's
    /// `stats.allocated` (less its internal allocations) to the byte when thread caches are off.
    /// Reads every generation so far (a cost of the process's cycles: for tests and checks, not
    /// for every cycle).
    pub fn total(&self) -> Live {
        self.live_range(hook::BEFORE, self.current())
    }

    /// False once the record missed an allocation (its table could not grow): the figures are no
    /// longer exact, and the verdict must not use them.
    pub fn exact(&self) -> bool {
        !table::TABLE.broken()
    }

    /// Marks the record as having missed an allocation, as a table that could not grow does (for
    /// tests of what a run does with an incomplete record: it judges nothing by it). For the
    /// process's life.
    pub fn mark_incomplete(&self) {
        table::TABLE.mark_broken();
    }

    /// Allocations recorded now, and the bytes of address space their record occupies.
    pub fn record_size(&self) -> (usize, u64) {
        (table::TABLE.len(), table::TABLE.mapped_bytes())
    }

    /// Every allocation that generations `from..=to` made and that is still live. Reads the
    /// whole record (a cost of the live allocations, not of the run's length); what this call
    /// allocates is bookkeeping.
    pub fn survivors(&self, from: Generation, to: Generation) -> Vec<Survivor> {
        bookkeeping(|| {
            let keep = |v: u64| (from..=to).contains(&table::Entry::unpack(v).generation);
            let mut found = Vec::new();
            // Other threads may allocate while the shards are read: room for them, and again
            // with more room in the rare case the first reservation was not enough.
            for slack in [1024usize, 1 << 16, 1 << 20, 1 << 24] {
                found = Vec::with_capacity(table::TABLE.len() + slack);
                if table::TABLE.scan(keep, &mut found) {
                    break;
                }
            }
            found
                .into_iter()
                .map(|(address, value)| {
                    let e = table::Entry::unpack(value);
                    let stack = if e.stacked { table::STACK_OF.get(address).map(|s| sites::unpack(s).0) } else { None };
                    let chain = if e.chained { table::CHAIN_OF.get(address).map(table::Chain::unpack) } else { None };
                    let chain = chain.map(|c| Growth { last: c.last, before: c.before, factor: c.factor() });
                    Survivor { size: e.size, generation: e.generation, stack, chain }
                })
                .collect()
        })
    }

    /// Takes the allocating stack of later allocations by a cycle (not by the bookkeeping) whose
    /// usable size is in `size`'s class (the size itself below 64 KiB at jemalloc's 16-byte
    /// quantum, its power of two above): all of them until [`Generations::adapt`] samples a
    /// common class. An unwind costs microseconds: watch the sizes that stayed, not every size.
    pub fn watch(&self, size: u64) {
        capture::watch(size, hook::current());
    }

    /// Stops taking stacks.
    pub fn unwatch_all(&self) {
        capture::unwatch_all();
    }

    /// The oldest age (generations from its making, or from the run's start, to its free) at
    /// which stack `id` gave a block back while the run judged: what it keeps across cycles and
    /// turns over, it gives back at ages up to this; a leak never gives back.
    pub fn turnover(&self, id: StackId) -> Option<u32> {
        capture::turnover(id)
    }

    /// The same over every block of `size`'s watch class, stacked or not.
    pub(crate) fn class_turnover(&self, size: u64) -> Option<u32> {
        capture::class_turnover(size)
    }

    /// The generation of stack `id`'s first stacked block in this run.
    pub fn first_seen(&self, id: StackId) -> Option<Generation> {
        capture::first_seen(id)
    }

    /// Takes the stack of every later allocation of `size`'s class, however common (see
    /// [`Generations::watch`], which samples a common class).
    pub fn focus(&self, size: u64) {
        capture::focus(size, hook::current());
    }

    /// Sets each watched class's sampling from its allocations since the last call: a class not
    /// focused on costs about `budget` stacks until the next call (every allocation of a rare
    /// size, one in `allocations / budget` of a common one), a boosted one about `boost_budget`.
    /// The runner calls it once a cycle.
    pub(crate) fn adapt(&self, budget: u32, boost_budget: u32) {
        capture::adapt(budget, boost_budget, hook::current());
    }

    /// The generation since which `size`'s class is watched (its allocations from then on have
    /// their stacks taken, or sampled), if it is.
    pub(crate) fn watched_since(&self, size: u64) -> Option<Generation> {
        capture::watched_since(size)
    }

    /// Samples `size`'s class at the boost budget of [`Generations::adapt`] for the next
    /// `generations` generations (renewed, not added, by a later call): a sampled class that left
    /// something behind without a stack. At most 4 classes are boosted at once; false when that
    /// many are already.
    pub(crate) fn boost(&self, size: u64, generations: u32) -> bool {
        let now = hook::current();
        capture::boost(size, now, now.saturating_add(generations))
    }

    /// Size classes watched now, of them those focused on, those boosted, and those sampled.
    pub fn watched_classes(&self) -> (u32, u32, u32, u32) {
        capture::watched_classes(hook::current())
    }

    /// The return addresses of an allocating stack, innermost first (the hooks' and the
    /// allocator's frames included; [`crate::probe::symbols::named_frames`] leaves them out).
    pub fn stack(&self, id: StackId) -> Vec<u64> {
        bookkeeping(|| capture::frames(id).into_iter().map(|a| a as u64).collect())
    }

    /// Stacks taken so far, and distinct stacks kept.
    pub fn stacks_taken(&self) -> (usize, u32) {
        capture::counts()
    }

    /// Walks every later stack twice, from the cache of frame sizes and by libgcc, keeps libgcc's
    /// and counts the stacks the two walked differently ([`Generations::unwinds`]): the check
    /// that the cache walks as libgcc does.
    pub fn verify_unwinds(&self, on: bool) {
        unwind::verify(on);
    }

    /// Stacks walked from the cache of frame sizes, stacks walked by libgcc, and stacks the two
    /// walked differently while [`Generations::verify_unwinds`] was on.
    pub fn unwinds(&self) -> (u64, u64, u64) {
        unwind::counts()
    }
}

/// Resident bytes of the record's own memory (its tables, interned stacks and per-stack ages,
/// outside jemalloc): anonymous memory the measuring adds, which grows with the live allocations it
/// records, a leak's included. 0 before anything was recorded.
pub(crate) fn record_resident_bytes() -> u64 {
    table::TABLE.resident_bytes()
        + table::STACK_OF.resident_bytes()
        + table::CHAIN_OF.resident_bytes()
        + table::LARGE_OF.resident_bytes()
        + capture::resident_bytes()
        + sites::resident_bytes()
        + unwind::resident_bytes()
}

/// Bytes of the live recorded blocks of at least [`table::LARGE_BLOCK`] whose pages were never written
/// (`mincore`): jemalloc's `stats.resident` counts an active page resident from the moment it is
/// handed out, the kernel's RSS only once it is written. A memtable's arena block or a buffer
/// filled over many cycles is touched a little each cycle: anonymous memory that seems to grow
/// outside jemalloc, by a bound the block's size sets. `None` when the hooks are not installed
/// or the table of large blocks could not grow. Reads the large blocks only (a cost of how many
/// are live, not of the run's length, nor of the small allocations) and allocates nothing.
pub(crate) fn untouched_bytes() -> Option<u64> {
    INSTALLED.get()?.as_ref().ok()?;
    let mut untouched = 0u64;
    table::LARGE_OF.visit(
        |_| true,
        |address, size| {
            // A block freed and unmapped since the visit began is skipped: its pages are gone
            // from both counts.
            if let Some(resident) = mapped::resident_in(address, size as usize) {
                untouched += size.saturating_sub(resident);
            }
        },
    );
    (!table::LARGE_OF.broken()).then_some(untouched)
}

pub(crate) use crate::bookkeeping::bookkeeping;
