//! Every signal the verdict judges or shows, in one table: its name in reports, unit, class and
//! part in the verdict. The verdict, the report's classes, the catalog's expectations and the
//! plots read it from here, so a new signal is added in one place and a misspelt one does not
//! compile.

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a signal measures: the report's `class` column, and what the planted-leak catalog expects
/// to fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Bytes: jemalloc's counts, RSS, RocksDB's accounting, bytes per fault firing.
    Bytes,
    /// Live native handles (and caches not shared while a store is open).
    Handles,
    /// Open file descriptors.
    Fds,
    /// Memory maps.
    Maps,
    /// Threads.
    Threads,
    /// The store's own integrity check.
    Integrity,
    /// Close errors dropped unseen.
    Swallowed,
}

impl Class {
    /// The class as reports spell it (`bytes`, `handles`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Class::Bytes => "bytes",
            Class::Handles => "handles",
            Class::Fds => "fds",
            Class::Maps => "maps",
            Class::Threads => "threads",
            Class::Integrity => "integrity",
            Class::Swallowed => "swallowed",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A signal, or a family of them (`live_handles.<kind>`, `bytes_per_firing.<point>`,
/// `matrix_bytes.<plan>`: [`SignalId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Signal {
    /// jemalloc's `stats.allocated`: every live allocation, Rust's and RocksDB's C++.
    AllocatedBytes,
    /// Allocated bytes minus what is known not to be a leak: the byte signal judged.
    UnexplainedBytes,
    /// What was subtracted: RocksDB's accounting, the harness's records, thread caches.
    ExplainedBytes,
    /// RocksDB's unbounded part of it (memtables, table readers): must level off.
    RocksdbExplainedBytes,
    /// jemalloc's resident bytes after a purge (page-granular).
    ResidentBytes,
    /// Anonymous RSS.
    RssAnonBytes,
    /// Anonymous RSS outside jemalloc's resident pages.
    RssAnonOutsideJemallocBytes,
    /// RSS.
    RssBytes,
    /// The process's open file descriptors.
    OpenFds,
    /// The process's open file descriptors outside the store's directory (judged by the growth
    /// rule: a descriptor leaked every 50 cycles is a leak).
    OpenFdsOutsideDir,
    /// The process's memory maps.
    Maps,
    /// The process's file-backed memory maps.
    FileMaps,
    /// File-backed maps outside the store's directory.
    FileMapsOutsideDir,
    /// The process's threads.
    Threads,
    /// What the cycles' own allocations still hold at the end of the run, from the allocation
    /// generations (exact figures).
    RetainedBytes,
    /// Open files under the store's directory (exact).
    OpenFdsUnderDir,
    /// Memory maps of files under the store's directory (exact).
    MapsUnderDir,
    /// Undeclared live handles of every kind, after every cycle (exact).
    LiveHandles,
    /// Undeclared live handles of one kind: `live_handles.<kind>`.
    LiveHandlesOf,
    /// Caches and write buffer managers not declared shared, alive while the store is open.
    UnsharedCachesOpen,
    /// Handles declared shared beyond those live after the first cycle: the shared set must not
    /// grow (a new "shared" cache per task, never pruned, is a leak behind the declaration).
    DeclaredSharedGrowth,
    /// Close errors dropped unseen.
    SwallowedCloseErrors,
    /// Integrity violations found by the store's check.
    Integrity,
    /// Bytes left behind per firing of one fault point: `bytes_per_firing.<point>`.
    BytesPerFiring,
    /// Bytes per cycle under one plan of the fault matrix: `matrix_bytes.<plan>`.
    MatrixBytes,
}

/// Whether a signal's verdict decides a run or only corroborates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Its "inconclusive" holds the run.
    Decides,
    /// It can call a leak, but its "inconclusive" holds the run only when growth is evidenced
    /// (coarse signals: page-granular memory, the whole process's fds, maps and threads, what
    /// RocksDB accounts for, a fault point's bytes).
    Corroborates,
}

/// Whether a signal is one series or a family of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// One series, named as the signal.
    Single,
    /// One series per qualifier, named `<name>.<qualifier>`.
    Family,
}

/// One row of the signal table.
#[derive(Debug, Clone, Copy)]
struct Spec {
    name: &'static str,
    unit: &'static str,
    class: Class,
    role: Role,
    shape: Shape,
}

const fn spec(name: &'static str, unit: &'static str, class: Class, role: Role, shape: Shape) -> Spec {
    Spec { name, unit, class, role, shape }
}

impl Signal {
    /// The statistical signals: the first of [`Signal::ALL`], in the order reports list them.
    pub(crate) const STATISTICAL: &'static [Signal] = Signal::ALL.split_at(14).0;

    /// Every signal, in the order reports list them: the statistical ones first.
    pub const ALL: [Signal; 25] = [
        Signal::AllocatedBytes,
        Signal::UnexplainedBytes,
        Signal::ExplainedBytes,
        Signal::RocksdbExplainedBytes,
        Signal::ResidentBytes,
        Signal::RssAnonBytes,
        Signal::RssAnonOutsideJemallocBytes,
        Signal::RssBytes,
        Signal::OpenFds,
        Signal::OpenFdsOutsideDir,
        Signal::Maps,
        Signal::FileMaps,
        Signal::FileMapsOutsideDir,
        Signal::Threads,
        Signal::RetainedBytes,
        Signal::OpenFdsUnderDir,
        Signal::MapsUnderDir,
        Signal::LiveHandles,
        Signal::LiveHandlesOf,
        Signal::UnsharedCachesOpen,
        Signal::DeclaredSharedGrowth,
        Signal::SwallowedCloseErrors,
        Signal::Integrity,
        Signal::BytesPerFiring,
        Signal::MatrixBytes,
    ];

    /// The table.
    const fn spec(self) -> Spec {
        use Class::*;
        use Role::*;
        use Shape::*;
        match self {
            Signal::AllocatedBytes => spec("allocated_bytes", "B", Bytes, Decides, Single),
            Signal::UnexplainedBytes => spec("unexplained_bytes", "B", Bytes, Decides, Single),
            Signal::ExplainedBytes => spec("explained_bytes", "B", Bytes, Decides, Single),
            // What RocksDB accounts for moves with its background work.
            Signal::RocksdbExplainedBytes => spec("rocksdb_explained_bytes", "B", Bytes, Corroborates, Single),
            // Page-granular memory and the whole process's fds, maps and threads: the allocator
            // maps extents, RocksDB starts threads, on their own schedules.
            Signal::ResidentBytes => spec("resident_bytes", "B", Bytes, Corroborates, Single),
            Signal::RssAnonBytes => spec("rss_anon_bytes", "B", Bytes, Corroborates, Single),
            Signal::RssAnonOutsideJemallocBytes => {
                spec("rss_anon_outside_jemalloc_bytes", "B", Bytes, Corroborates, Single)
            }
            Signal::RssBytes => spec("rss_bytes", "B", Bytes, Corroborates, Single),
            Signal::OpenFds => spec("open_fds", "fds", Fds, Corroborates, Single),
            Signal::OpenFdsOutsideDir => spec("open_fds_outside_dir", "fds", Fds, Corroborates, Single),
            Signal::Maps => spec("maps", "maps", Maps, Corroborates, Single),
            Signal::FileMaps => spec("file_maps", "maps", Maps, Corroborates, Single),
            Signal::FileMapsOutsideDir => spec("file_maps_outside_dir", "maps", Maps, Corroborates, Single),
            Signal::Threads => spec("threads", "threads", Threads, Corroborates, Single),
            Signal::RetainedBytes => spec("retained_bytes", "B", Bytes, Decides, Single),
            Signal::OpenFdsUnderDir => spec("open_fds_under_dir", "fds", Fds, Decides, Single),
            Signal::MapsUnderDir => spec("maps_under_dir", "maps", Maps, Decides, Single),
            Signal::LiveHandles => spec("live_handles", "handles", Handles, Decides, Single),
            Signal::LiveHandlesOf => spec("live_handles", "handles", Handles, Decides, Family),
            Signal::UnsharedCachesOpen => spec("unshared_caches_open", "handles", Handles, Decides, Single),
            Signal::DeclaredSharedGrowth => spec("declared_shared_growth", "handles", Handles, Decides, Single),
            Signal::SwallowedCloseErrors => spec("swallowed_close_errors", "errors", Swallowed, Decides, Single),
            Signal::Integrity => spec("integrity", "violations", Integrity, Decides, Single),
            // A fault point's bytes: its "inconclusive" does not hold a run.
            Signal::BytesPerFiring => spec("bytes_per_firing", "B", Bytes, Corroborates, Family),
            Signal::MatrixBytes => spec("matrix_bytes", "B", Bytes, Decides, Family),
        }
    }

    /// The name in reports (a family's prefix, without the `.`).
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// The unit of its values (`B`, `handles`, `fds`, ...).
    pub const fn unit(self) -> &'static str {
        self.spec().unit
    }

    /// What it measures.
    pub const fn class(self) -> Class {
        self.spec().class
    }

    /// Whether it decides a run or corroborates.
    pub const fn role(self) -> Role {
        self.spec().role
    }

    /// Whether it only corroborates ([`Role::Corroborates`]).
    pub const fn corroborating(self) -> bool {
        matches!(self.spec().role, Role::Corroborates)
    }

    /// Whether it is a family, named `<name>.<qualifier>`.
    pub(crate) const fn is_family(self) -> bool {
        matches!(self.spec().shape, Shape::Family)
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A signal, or one member of a family (`live_handles.Options`): what a verdict is about. Shown
/// and serialized by its name in reports.
///
/// ```
/// use leakcheck::{Signal, SignalId};
/// let id: SignalId = "bytes_per_firing.close.flush".parse().unwrap();
/// assert_eq!((id.signal(), id.qualifier()), (Signal::BytesPerFiring, Some("close.flush")));
/// assert_eq!(id.to_string(), "bytes_per_firing.close.flush");
/// assert_eq!(SignalId::from(Signal::Threads).to_string(), "threads");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SignalId {
    signal: Signal,
    qualifier: Option<String>,
}

impl SignalId {
    /// One member of a family (`Signal::LiveHandlesOf`, `"Options"`); for a signal that is not a
    /// family the qualifier is dropped.
    pub fn member(signal: Signal, qualifier: impl Into<String>) -> Self {
        SignalId { signal, qualifier: signal.is_family().then(|| qualifier.into()) }
    }

    /// The signal (of a family: the family).
    pub fn signal(&self) -> Signal {
        self.signal
    }

    /// The member's qualifier (the handle kind, the fault point, the plan).
    pub fn qualifier(&self) -> Option<&str> {
        self.qualifier.as_deref()
    }
}

impl From<Signal> for SignalId {
    fn from(signal: Signal) -> Self {
        SignalId { signal, qualifier: None }
    }
}

impl fmt::Display for SignalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.qualifier {
            Some(q) => f.pad(&format!("{}.{q}", self.signal.name())),
            None => f.pad(self.signal.name()),
        }
    }
}

/// A name that is no signal's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a signal's name")]
pub struct UnknownSignal(pub String);

impl std::str::FromStr for SignalId {
    type Err = UnknownSignal;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Signal::ALL
            .into_iter()
            .find_map(|s| match name.strip_prefix(s.name()) {
                Some("") if !s.is_family() => Some(SignalId::from(s)),
                Some(rest) if s.is_family() && rest.len() > 1 && rest.starts_with('.') => {
                    Some(SignalId::member(s, &rest[1..]))
                }
                _ => None,
            })
            .ok_or_else(|| UnknownSignal(name.to_string()))
    }
}

impl Serialize for SignalId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SignalId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::{Class, Signal, SignalId};

    fn of_name(name: &str) -> Option<Signal> {
        name.parse::<SignalId>().ok().map(|id| id.signal())
    }

    #[test]
    fn names_map_back_to_their_signal() {
        for s in Signal::ALL {
            let name = SignalId::member(s, "Options").to_string();
            assert_eq!(of_name(&name), Some(s), "{name}");
        }
        assert_eq!(of_name("live_handles"), Some(Signal::LiveHandles));
        assert_eq!(of_name("live_handles."), None);
        assert_eq!(of_name("live_handlesX"), None);
        assert_eq!(of_name("bytes_per_firing.close.flush"), Some(Signal::BytesPerFiring));
        assert_eq!(of_name("rss"), None);
        assert_eq!(Signal::UnsharedCachesOpen.class(), Class::Handles);
        let names: std::collections::BTreeSet<String> =
            Signal::ALL.iter().map(|s| SignalId::member(*s, "x").to_string()).collect();
        assert_eq!(names.len(), Signal::ALL.len(), "every name is its own");
    }
}
