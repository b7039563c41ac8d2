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
        f.write_str(self.name())
    }
}

/// A signal, or a family of them (`live_handles.<kind>`, `bytes_per_firing.<point>`,
/// `matrix_bytes.<plan>`: [`Signal::qualified`]).
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
    /// The process's memory maps.
    Maps,
    /// The process's file-backed memory maps.
    FileMaps,
    /// The process's threads.
    Threads,
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

impl Signal {
    /// Every signal, in the order reports list them.
    pub const ALL: [Signal; 22] = [
        Signal::AllocatedBytes,
        Signal::UnexplainedBytes,
        Signal::ExplainedBytes,
        Signal::RocksdbExplainedBytes,
        Signal::ResidentBytes,
        Signal::RssAnonBytes,
        Signal::RssAnonOutsideJemallocBytes,
        Signal::RssBytes,
        Signal::OpenFds,
        Signal::Maps,
        Signal::FileMaps,
        Signal::Threads,
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

    /// The table: name (the prefix of a family), unit, class, corroborating, a family.
    const fn spec(self) -> (&'static str, &'static str, Class, bool, bool) {
        use Class::*;
        match self {
            Signal::AllocatedBytes => ("allocated_bytes", "B", Bytes, false, false),
            Signal::UnexplainedBytes => ("unexplained_bytes", "B", Bytes, false, false),
            Signal::ExplainedBytes => ("explained_bytes", "B", Bytes, false, false),
            // Corroborating: what RocksDB accounts for moves with its background work.
            Signal::RocksdbExplainedBytes => ("rocksdb_explained_bytes", "B", Bytes, true, false),
            // Page-granular memory and the whole process's fds, maps and threads corroborate: the
            // allocator maps extents, RocksDB starts threads, on their own schedules.
            Signal::ResidentBytes => ("resident_bytes", "B", Bytes, true, false),
            Signal::RssAnonBytes => ("rss_anon_bytes", "B", Bytes, true, false),
            Signal::RssAnonOutsideJemallocBytes => ("rss_anon_outside_jemalloc_bytes", "B", Bytes, true, false),
            Signal::RssBytes => ("rss_bytes", "B", Bytes, true, false),
            Signal::OpenFds => ("open_fds", "fds", Fds, true, false),
            Signal::Maps => ("maps", "maps", Maps, true, false),
            Signal::FileMaps => ("file_maps", "maps", Maps, true, false),
            Signal::Threads => ("threads", "threads", Threads, true, false),
            Signal::OpenFdsUnderDir => ("open_fds_under_dir", "fds", Fds, false, false),
            Signal::MapsUnderDir => ("maps_under_dir", "maps", Maps, false, false),
            Signal::LiveHandles => ("live_handles", "handles", Handles, false, false),
            Signal::LiveHandlesOf => ("live_handles", "handles", Handles, false, true),
            Signal::UnsharedCachesOpen => ("unshared_caches_open", "handles", Handles, false, false),
            Signal::DeclaredSharedGrowth => ("declared_shared_growth", "handles", Handles, false, false),
            Signal::SwallowedCloseErrors => ("swallowed_close_errors", "errors", Swallowed, false, false),
            Signal::Integrity => ("integrity", "violations", Integrity, false, false),
            // A fault point's bytes corroborate: its "inconclusive" does not hold a run.
            Signal::BytesPerFiring => ("bytes_per_firing", "B", Bytes, true, true),
            Signal::MatrixBytes => ("matrix_bytes", "B", Bytes, false, true),
        }
    }

    /// The name in reports (a family's prefix, without the `.`).
    pub const fn name(self) -> &'static str {
        self.spec().0
    }

    /// The unit of its values (`B`, `handles`, `fds`, ...).
    pub const fn unit(self) -> &'static str {
        self.spec().1
    }

    /// What it measures.
    pub const fn class(self) -> Class {
        self.spec().2
    }

    /// Whether it only corroborates: it can call a leak, but its "inconclusive" does not hold a
    /// run once the exact and net signals have decided.
    pub const fn corroborating(self) -> bool {
        self.spec().3
    }

    /// Whether it is a family, named `<name>.<qualifier>`.
    pub const fn is_family(self) -> bool {
        self.spec().4
    }

    /// The name of one member of a family (`live_handles.Options`); the plain name for a signal
    /// that is not a family.
    pub fn qualified(self, qualifier: &str) -> String {
        if self.is_family() {
            format!("{}.{qualifier}", self.name())
        } else {
            self.name().to_string()
        }
    }

    /// The signal a report's name belongs to (`live_handles.Options` is [`Signal::LiveHandlesOf`]).
    pub fn of_name(name: &str) -> Option<Signal> {
        Signal::ALL.into_iter().find(|s| match name.strip_prefix(s.name()) {
            Some("") => !s.is_family(),
            Some(rest) => s.is_family() && rest.len() > 1 && rest.starts_with('.'),
            None => false,
        })
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::{Class, Signal};

    #[test]
    fn names_map_back_to_their_signal() {
        for s in Signal::ALL {
            let name = s.qualified("Options");
            assert_eq!(Signal::of_name(&name), Some(s), "{name}");
        }
        assert_eq!(Signal::of_name("live_handles"), Some(Signal::LiveHandles));
        assert_eq!(Signal::of_name("live_handles."), None);
        assert_eq!(Signal::of_name("live_handlesX"), None);
        assert_eq!(Signal::of_name("bytes_per_firing.close.flush"), Some(Signal::BytesPerFiring));
        assert_eq!(Signal::of_name("rss"), None);
        assert_eq!(Signal::UnsharedCachesOpen.class(), Class::Handles);
        let names: std::collections::BTreeSet<String> = Signal::ALL.iter().map(|s| s.qualified("x")).collect();
        assert_eq!(names.len(), Signal::ALL.len(), "every name is its own");
    }
}
