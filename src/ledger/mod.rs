//! The ownership ledger: every native handle a tracked wrapper creates is registered here, and
//! deregistered when the native object is really released.
//!
//! Counts per kind are exact at every tracking depth. At [`Depth::Sites`] and above, every live
//! handle also has an entry: its creation site (the user's line, through `#[track_caller]`), its
//! owner path ([`owner_scope`]), an optional backtrace, and edges to what keeps it alive and what
//! it keeps alive.
//!
//! A handle is a [`Token`]. A wrapper holds its token; an object that keeps another native object
//! alive (a DB keeps its options' block cache) holds a [`Hold`] on that object's token. The native
//! object counts as released only when its token and every hold on it are gone, which mirrors
//! rust-rocksdb's own lifetimes (its DB keeps an `outlive` bundle of caches, env and write buffer
//! manager).

mod close;
mod guard;
mod kind;
pub(crate) mod owner;
mod report;

use std::backtrace::Backtrace;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::panic::Location;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

pub use close::{CloseResult, SwallowedCloseError};
pub use guard::{LeakError, LeakGuard, Settle};
pub use kind::{HandleKind, KindName};
pub use owner::{current_owner, owner_scope, OwnerScope};
pub use report::{HandleGroup, KindCounts, LeakReport};

/// The environment variable that sets the tracking depth: `counts`, `sites` or `backtraces`.
pub const DEPTH_ENV: &str = "LEAKCHECK_TRACKING";

/// How much the ledger records per handle, like the levels of Netty's leak detector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Depth {
    /// Exact live counts per kind; nothing per handle. The cheapest.
    Counts = 0,
    /// Plus, per live handle: creation site, owner path, holder edges.
    #[default]
    Sites = 1,
    /// Plus a captured backtrace per handle. Slow: for hunting a leak, not for soaks.
    Backtraces = 2,
}

impl Depth {
    fn from_u8(v: u8) -> Depth {
        match v {
            0 => Depth::Counts,
            1 => Depth::Sites,
            _ => Depth::Backtraces,
        }
    }

    /// The name used by [`DEPTH_ENV`] and the CLI.
    pub fn name(self) -> &'static str {
        match self {
            Depth::Counts => "counts",
            Depth::Sites => "sites",
            Depth::Backtraces => "backtraces",
        }
    }

    /// Reads [`DEPTH_ENV`]: `Ok(None)` when unset.
    ///
    /// # Errors
    /// When the variable is set to anything but `counts`, `sites` or `backtraces`.
    pub fn from_env() -> Result<Option<Depth>, LedgerError> {
        match std::env::var(DEPTH_ENV) {
            Ok(v) => v.parse().map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(LedgerError::BadDepth { value: v.to_string_lossy().into_owned() })
            }
        }
    }
}

impl fmt::Display for Depth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Depth {
    type Err = LedgerError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "counts" => Ok(Depth::Counts),
            "sites" => Ok(Depth::Sites),
            "backtraces" => Ok(Depth::Backtraces),
            other => Err(LedgerError::BadDepth { value: other.to_string() }),
        }
    }
}

/// Errors of the ledger's configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// An unknown tracking depth.
    #[error("unknown tracking depth `{value}`: expected counts, sites or backtraces")]
    BadDepth {
        /// What was given.
        value: String,
    },
}

/// Per-kind counters.
#[derive(Debug, Default)]
pub(crate) struct KindCounters {
    pub(crate) created: AtomicU64,
    pub(crate) released: AtomicU64,
    /// Live handles declared shared.
    pub(crate) shared_live: AtomicU64,
}

/// The per-handle record kept at [`Depth::Sites`] and above.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) kind: HandleKind,
    pub(crate) site: &'static Location<'static>,
    pub(crate) owner: Option<Arc<str>>,
    pub(crate) backtrace: Option<Arc<Backtrace>>,
    /// Handles that keep this one alive.
    pub(crate) held_by: Vec<u64>,
    /// Handles this one keeps alive.
    pub(crate) holds: Vec<u64>,
    /// The wrapper that owned the token is gone; only holders keep the native object alive.
    pub(crate) wrapper_dropped: bool,
    pub(crate) shared: bool,
}

/// Ids are sequential: a multiplicative hash is enough and much cheaper than SipHash.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

pub(crate) type Entries = HashMap<u64, Entry, BuildHasherDefault<IdHasher>>;

pub(crate) struct Inner {
    depth: AtomicU8,
    next_id: AtomicU64,
    builtin: [KindCounters; HandleKind::BUILTIN.len()],
    other: Mutex<Vec<(&'static str, Arc<KindCounters>)>>,
    pub(crate) entries: Mutex<Entries>,
    pub(crate) swallowed: Mutex<Vec<SwallowedCloseError>>,
    /// Close results made ([`CloseResult::new`]): whether swallowed close errors could be seen.
    pub(crate) close_results: AtomicU64,
}

/// Locks a mutex, recovering from poisoning: the ledger's data stay consistent across a panic in
/// user code (every critical section here is panic-free), and a leak checker must keep working
/// in a test that is already failing.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A scoped, thread-safe record of live native handles. Cloning gives another reference to the
/// same ledger.
///
/// Give each test its own `Ledger` and tests can run in parallel without seeing each other's
/// handles; [`Ledger::global`] serves long soak runs.
///
/// ```
/// use leakcheck::{HandleKind, Ledger};
///
/// let ledger = Ledger::new();
/// let token = ledger.register(HandleKind::Other("socket"));
/// assert_eq!(ledger.live(HandleKind::Other("socket")), 1);
/// drop(token);
/// assert!(ledger.report().is_clean());
/// ```
#[derive(Clone)]
pub struct Ledger {
    pub(crate) inner: Arc<Inner>,
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger").field("depth", &self.depth()).finish_non_exhaustive()
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Self::new()
    }
}

impl Ledger {
    /// A new ledger at the default depth ([`Depth::Sites`]), whatever the environment says; use
    /// [`Ledger::from_env`] to honour [`DEPTH_ENV`].
    pub fn new() -> Self {
        Self::with_depth(Depth::default())
    }

    /// A new ledger at the given depth.
    pub fn with_depth(depth: Depth) -> Self {
        Ledger {
            inner: Arc::new(Inner {
                depth: AtomicU8::new(depth as u8),
                next_id: AtomicU64::new(1),
                builtin: Default::default(),
                other: Mutex::new(Vec::new()),
                entries: Mutex::new(Entries::default()),
                swallowed: Mutex::new(Vec::new()),
                close_results: AtomicU64::new(0),
            }),
        }
    }

    /// A new ledger at the depth [`DEPTH_ENV`] names, or the default when it is unset.
    ///
    /// # Errors
    /// When the variable holds an unknown depth.
    pub fn from_env() -> Result<Self, LedgerError> {
        Ok(Self::with_depth(Depth::from_env()?.unwrap_or_default()))
    }

    /// The process-wide ledger, for soak runs and for code that cannot pass a ledger around. Its
    /// depth comes from [`DEPTH_ENV`] on first use.
    ///
    /// # Panics
    /// On first use, when [`DEPTH_ENV`] holds an unknown depth (the message names it). Call
    /// [`Depth::from_env`] first to turn that into an error of your own.
    pub fn global() -> &'static Ledger {
        static GLOBAL: OnceLock<Ledger> = OnceLock::new();
        GLOBAL.get_or_init(|| match Ledger::from_env() {
            Ok(ledger) => ledger,
            Err(e) => panic!("{DEPTH_ENV}: {e}"),
        })
    }

    /// The current tracking depth.
    pub fn depth(&self) -> Depth {
        Depth::from_u8(self.inner.depth.load(Ordering::Relaxed))
    }

    /// Changes the tracking depth for handles registered from now on. Handles registered at
    /// [`Depth::Counts`] stay counted but have no site.
    pub fn set_depth(&self, depth: Depth) {
        self.inner.depth.store(depth as u8, Ordering::Relaxed);
    }

    /// Whether two values refer to the same ledger.
    pub(crate) fn same(&self, other: &Ledger) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Registers a new live handle of `kind` created at the caller's location.
    #[track_caller]
    pub fn register(&self, kind: HandleKind) -> Token {
        self.register_at(kind, Location::caller())
    }

    /// Registers a new live handle of `kind` created at `site`. Wrappers call this from their own
    /// `#[track_caller]` constructors so that the site is the user's line, not the wrapper's.
    pub(crate) fn register_at(&self, kind: HandleKind, site: &'static Location<'static>) -> Token {
        // The ledger's records are leakcheck's own bookkeeping, not the store's allocations.
        crate::bookkeeping::bookkeeping(|| {
            let counters = self.counters(kind);
            let c = counters.get(&self.inner);
            c.created.fetch_add(1, Ordering::Relaxed);
            let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
            let depth = self.depth();
            let has_entry = depth >= Depth::Sites;
            if has_entry {
                let backtrace = (depth >= Depth::Backtraces).then(|| Arc::new(Backtrace::force_capture()));
                let entry = Entry {
                    kind,
                    site,
                    owner: current_owner(),
                    backtrace,
                    held_by: Vec::new(),
                    holds: Vec::new(),
                    wrapper_dropped: false,
                    shared: false,
                };
                lock(&self.inner.entries).insert(id, entry);
            }
            Token {
                inner: Arc::new(TokenInner {
                    ledger: self.clone(),
                    id,
                    kind,
                    counters,
                    has_entry,
                    shared: AtomicBool::new(false),
                }),
            }
        })
    }

    fn counters(&self, kind: HandleKind) -> CounterRef {
        match kind.builtin_index() {
            Some(i) => CounterRef::Builtin(i),
            None => {
                let HandleKind::Other(name) = kind else { unreachable!("built-ins have an index") };
                let mut other = lock(&self.inner.other);
                if let Some((_, c)) = other.iter().find(|(n, _)| *n == name) {
                    return CounterRef::Other(c.clone());
                }
                let c = Arc::new(KindCounters::default());
                other.push((name, c.clone()));
                CounterRef::Other(c)
            }
        }
    }

    /// Live handles of `kind` right now (created minus released), declared shared ones included.
    pub fn live(&self, kind: HandleKind) -> u64 {
        let c = self.counters(kind);
        let c = c.get(&self.inner);
        let released = c.released.load(Ordering::Acquire);
        c.created.load(Ordering::Acquire).saturating_sub(released)
    }

    /// Live handles per kind that were not declared shared, for kinds with any: the exact signal,
    /// cheap at every depth (counters only, no entry table).
    pub fn retained_counts(&self) -> std::collections::BTreeMap<String, u64> {
        self.kind_snapshot()
            .into_iter()
            .filter_map(|(k, c)| {
                let retained = c.live.saturating_sub(c.declared_shared);
                (retained > 0).then(|| (k.name().to_string(), retained))
            })
            .collect()
    }

    /// Whether any handle was ever registered: without one the handle signals measured nothing.
    pub(crate) fn registered_any(&self) -> bool {
        self.inner.next_id.load(Ordering::Relaxed) > 1
    }

    /// Whether any close result was ever made: without one no swallowed close error can be seen.
    pub(crate) fn close_results_made(&self) -> bool {
        self.inner.close_results.load(Ordering::Relaxed) > 0
    }

    /// Handles released since the ledger was made, every kind together: it moves whenever any
    /// handle is released.
    pub(crate) fn released_total(&self) -> u64 {
        self.kind_snapshot().values().map(|c| c.released).sum()
    }

    /// Live handles of every kind, declared shared ones included.
    pub fn live_total(&self) -> u64 {
        self.kind_snapshot().values().map(|c| c.live).sum()
    }

    /// Declares a handle shared: it may outlive the code under test (a store-wide block cache,
    /// a write buffer manager). Reports then expect exactly the declared handles and zero of
    /// everything else.
    pub fn declare_shared(&self, token: &Token) {
        token.declare_shared_in(self);
    }

    /// Counters of every kind ever registered, by kind.
    pub(crate) fn kind_snapshot(&self) -> std::collections::BTreeMap<HandleKind, KindCounts> {
        let mut out = std::collections::BTreeMap::new();
        let mut add = |kind: HandleKind, c: &KindCounters| {
            // Read released before created so that a concurrent register/release pair can only
            // make `live` look larger, never negative.
            let released = c.released.load(Ordering::Acquire);
            let shared = c.shared_live.load(Ordering::Acquire);
            let created = c.created.load(Ordering::Acquire);
            if created > 0 {
                out.insert(
                    kind,
                    KindCounts { created, released, live: created.saturating_sub(released), declared_shared: shared },
                );
            }
        };
        for (i, kind) in HandleKind::BUILTIN.iter().enumerate() {
            add(*kind, &self.inner.builtin[i]);
        }
        for (name, c) in lock(&self.inner.other).iter() {
            add(HandleKind::Other(name), c);
        }
        out
    }
}

enum CounterRef {
    Builtin(usize),
    Other(Arc<KindCounters>),
}

impl CounterRef {
    fn get<'a>(&'a self, inner: &'a Inner) -> &'a KindCounters {
        match self {
            CounterRef::Builtin(i) => &inner.builtin[*i],
            CounterRef::Other(c) => c,
        }
    }
}

struct TokenInner {
    ledger: Ledger,
    id: u64,
    kind: HandleKind,
    counters: CounterRef,
    has_entry: bool,
    shared: AtomicBool,
}

impl Drop for TokenInner {
    /// The native object is released: the last of its token and holds is gone.
    fn drop(&mut self) {
        let inner = &self.ledger.inner;
        if self.has_entry {
            let mut entries = lock(&inner.entries);
            entries.remove(&self.id);
            // Keep memory proportional to live handles after a burst.
            if entries.capacity() > 1024 && entries.len() * 8 < entries.capacity() {
                let keep = entries.len() * 2;
                entries.shrink_to(keep);
            }
        }
        let c = self.counters.get(inner);
        if self.shared.load(Ordering::Relaxed) {
            c.shared_live.fetch_sub(1, Ordering::AcqRel);
        }
        c.released.fetch_add(1, Ordering::Release);
    }
}

/// A registered native handle. The wrapper that owns the native object owns its token; dropping
/// the token (with no [`Hold`] left) releases the handle in the ledger.
///
/// A token that is never dropped (`mem::forget`, `Box::leak`, an `Arc` cycle, a registry that is
/// never pruned) stays live, and the ledger reports it with its site and owner.
pub struct Token {
    inner: Arc<TokenInner>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token({} #{})", self.inner.kind, self.inner.id)
    }
}

impl Token {
    /// The handle's id, unique within its ledger.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The handle's kind.
    pub fn kind(&self) -> HandleKind {
        self.inner.kind
    }

    /// The ledger this handle is registered in.
    pub fn ledger(&self) -> &Ledger {
        &self.inner.ledger
    }

    /// Declares this handle shared (see [`Ledger::declare_shared`]).
    pub fn declare_shared(&self) {
        self.declare_shared_in(&self.inner.ledger.clone());
    }

    fn declare_shared_in(&self, ledger: &Ledger) {
        debug_assert!(ledger.same(&self.inner.ledger), "token belongs to another ledger");
        if !self.inner.shared.swap(true, Ordering::AcqRel) {
            self.inner.counters.get(&self.inner.ledger.inner).shared_live.fetch_add(1, Ordering::AcqRel);
            if self.inner.has_entry {
                if let Some(e) = lock(&self.inner.ledger.inner.entries).get_mut(&self.inner.id) {
                    e.shared = true;
                }
            }
        }
    }

    /// Records that `holder` keeps this handle's native object alive: the object is released only
    /// when this token and every hold on it are gone. The holder stores the returned [`Hold`].
    pub fn held_by(&self, holder: &Token) -> Hold {
        link(&self.inner, holder)
    }
}

fn link(held: &Arc<TokenInner>, holder: &Token) -> Hold {
    let holder_id = holder.inner.id;
    let linked = held.has_entry && holder.inner.has_entry;
    if linked {
        // The ledger's records are leakcheck's own bookkeeping, not the store's allocations: a
        // shared handle's list of holders grows to the most holders it ever had at once.
        crate::bookkeeping::bookkeeping(|| {
            let mut entries = lock(&held.ledger.inner.entries);
            if let Some(e) = entries.get_mut(&held.id) {
                e.held_by.push(holder_id);
            }
            if let Some(e) = entries.get_mut(&holder_id) {
                e.holds.push(held.id);
            }
        });
    }
    Hold { held: held.clone(), holder_id, linked }
}

impl Drop for Token {
    fn drop(&mut self) {
        // Others still hold the native object: the release is deferred, not a leak. Say so in the
        // entry so a report can tell "dropped but held by DB #3" from "never dropped".
        if self.inner.has_entry && Arc::strong_count(&self.inner) > 1 {
            if let Some(e) = lock(&self.inner.ledger.inner.entries).get_mut(&self.inner.id) {
                e.wrapper_dropped = true;
            }
        }
    }
}

/// Keeps another handle's native object alive on behalf of a holder (see [`Token::held_by`]).
pub struct Hold {
    held: Arc<TokenInner>,
    holder_id: u64,
    linked: bool,
}

impl fmt::Debug for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hold(#{} on {} #{})", self.holder_id, self.held.kind, self.held.id)
    }
}

impl Hold {
    /// The held handle's kind.
    pub fn kind(&self) -> HandleKind {
        self.held.kind
    }

    /// The held handle's id.
    pub fn id(&self) -> u64 {
        self.held.id
    }

    /// A hold on the same native object by another holder: for an object that copies what it
    /// holds into a new one (options copied into a DB keep the same block cache alive).
    #[cfg_attr(not(feature = "rocksdb"), allow(dead_code))]
    pub(crate) fn rehold(&self, holder: &Token) -> Hold {
        link(&self.held, holder)
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.linked {
            let mut entries = lock(&self.held.ledger.inner.entries);
            if let Some(e) = entries.get_mut(&self.held.id) {
                if let Some(i) = e.held_by.iter().position(|&h| h == self.holder_id) {
                    e.held_by.swap_remove(i);
                }
            }
            if let Some(e) = entries.get_mut(&self.holder_id) {
                if let Some(i) = e.holds.iter().position(|&h| h == self.held.id) {
                    e.holds.swap_remove(i);
                }
            }
        }
        // The Arc drops after this: the last hold releases the native object.
    }
}
