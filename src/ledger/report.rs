//! What a ledger says about itself: counts per kind and the retained handles, grouped.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::{lock, Depth, Entry, HandleKind, KindName, Ledger, SwallowedCloseError};

/// Counters of one handle kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct KindCounts {
    /// Handles of this kind registered since the ledger was made.
    pub created: u64,
    /// Handles of this kind whose native object was released.
    pub released: u64,
    /// Live handles: created minus released.
    pub live: u64,
    /// Live handles declared shared.
    pub declared_shared: u64,
}

/// Live handles that share kind, creation site, owner and holders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct HandleGroup {
    /// The handle kind (serialized as its name).
    pub kind: KindName,
    /// How many live handles are in the group.
    pub count: u64,
    /// Where they were created (`file:line:column`); absent for handles registered at
    /// [`Depth::Counts`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub site: Option<String>,
    /// Their owner path; absent when no owner scope was open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The wrapper that owned them is gone, and only the holders below keep them alive.
    #[serde(default)]
    pub wrapper_dropped: bool,
    /// What keeps them alive, summarized: `DB #12 created at src/store.rs:95:14 (task 0_1)`, or
    /// `2 x DB created at ... (#12, #14)` when several alike hold the group's handles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_by: Vec<String>,
    /// What they keep alive, summarized alike (`Cache created at src/store.rs:60:9`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holds: Vec<String>,
    /// Ids of the handles in the group.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<u64>,
    /// The creation backtrace of the group's first handle, at [`Depth::Backtraces`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backtrace: Option<String>,
}

/// The ledger's verdict on handles: what is still live, and which close errors were swallowed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct LeakReport {
    /// The tracking depth when the report was made.
    pub depth: Depth,
    /// Counters per kind, by kind name, for every kind ever registered.
    pub kinds: BTreeMap<String, KindCounts>,
    /// Live handles that were not declared shared: leaks, once the code under test has closed.
    pub retained: Vec<HandleGroup>,
    /// Live handles declared shared: expected.
    pub declared_shared: Vec<HandleGroup>,
    /// Close errors that were dropped without anybody looking at them.
    pub swallowed_close_errors: Vec<SwallowedCloseError>,
}

impl LeakReport {
    /// No retained handle and no swallowed close error.
    pub fn is_clean(&self) -> bool {
        self.retained.is_empty() && self.swallowed_close_errors.is_empty()
    }

    /// Retained (undeclared live) handles, all kinds.
    pub fn retained_count(&self) -> u64 {
        self.retained.iter().map(|g| g.count).sum()
    }

    /// Retained handles of one kind.
    pub fn retained_of(&self, kind: HandleKind) -> u64 {
        self.retained.iter().filter(|g| g.kind == kind).map(|g| g.count).sum()
    }
}

impl<'de> Deserialize<'de> for Depth {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Handles are grouped by what a reader acts on: kind, creation site, owner, and whether only
/// holders keep them. Their holders are summarized in the group, so 400 handles leaked at one
/// line and held by 400 different DBs are one row, not 400.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    kind: HandleKind,
    site: Option<String>,
    owner: Option<String>,
    wrapper_dropped: bool,
}

/// What a group's handles hold or are held by: each related handle described without its id
/// (`DB created at src/store.rs:95:14 (task 0_1)`), with how many of the group's handles it
/// relates to.
#[derive(Default)]
struct Group {
    count: u64,
    ids: Vec<u64>,
    backtrace: Option<String>,
    held_by: BTreeMap<(HandleKind, String), Vec<u64>>,
    holds: BTreeMap<(HandleKind, String), Vec<u64>>,
}

/// Where a related handle was made, and its owner: what makes handles alike.
fn origin(e: &Entry) -> String {
    match &e.owner {
        Some(owner) => format!("created at {} ({owner})", e.site),
        None => format!("created at {}", e.site),
    }
}

/// `DB #12 created at ...` for one handle; `400 x DB created at ... (#12, #14, #16, ...)` for
/// several alike.
fn summarize(related: BTreeMap<(HandleKind, String), Vec<u64>>) -> Vec<String> {
    related
        .into_iter()
        .map(|((kind, origin), mut ids)| {
            ids.sort_unstable();
            ids.dedup();
            match ids.as_slice() {
                [id] => format!("{kind} #{id} {origin}"),
                _ => {
                    let first: Vec<String> = ids.iter().take(3).map(|i| format!("#{i}")).collect();
                    let more = if ids.len() > 3 { ", ..." } else { "" };
                    format!("{} x {kind} {origin} ({}{more})", ids.len(), first.join(", "))
                }
            }
        })
        .collect()
}

impl Ledger {
    /// A report of this instant: counts per kind, retained and declared-shared handles grouped by
    /// kind, site and owner, and swallowed close errors. Does not wait; see [`Ledger::verify`].
    pub fn report(&self) -> LeakReport {
        let kinds = self.kind_snapshot();
        let mut retained: BTreeMap<GroupKey, Group> = BTreeMap::new();
        let mut shared: BTreeMap<GroupKey, Group> = BTreeMap::new();
        // Handles with an entry, per kind and sharedness; the rest were registered at counts depth.
        let mut with_entry: BTreeMap<(HandleKind, bool), u64> = BTreeMap::new();
        {
            let entries = lock(&self.inner.entries);
            for (id, e) in entries.iter() {
                let key = GroupKey {
                    kind: e.kind,
                    site: Some(e.site.to_string()),
                    owner: e.owner.as_deref().map(str::to_string),
                    wrapper_dropped: e.wrapper_dropped,
                };
                let map = if e.shared { &mut shared } else { &mut retained };
                let group = map.entry(key).or_default();
                group.count += 1;
                group.ids.push(*id);
                if group.backtrace.is_none() {
                    group.backtrace = e.backtrace.as_ref().map(|b| b.to_string());
                }
                for (ids, related) in [(&e.held_by, &mut group.held_by), (&e.holds, &mut group.holds)] {
                    for (h, other) in ids.iter().filter_map(|h| entries.get(h).map(|o| (*h, o))) {
                        related.entry((other.kind, origin(other))).or_default().push(h);
                    }
                }
                *with_entry.entry((e.kind, e.shared)).or_default() += 1;
            }
        }
        for (kind, c) in &kinds {
            for (is_shared, live) in [(false, c.live.saturating_sub(c.declared_shared)), (true, c.declared_shared)] {
                let seen = with_entry.get(&(*kind, is_shared)).copied().unwrap_or(0);
                let unsited = live.saturating_sub(seen);
                if unsited > 0 {
                    let key = GroupKey { kind: *kind, site: None, owner: None, wrapper_dropped: false };
                    let map = if is_shared { &mut shared } else { &mut retained };
                    map.entry(key).or_default().count += unsited;
                }
            }
        }
        let groups = |m: BTreeMap<GroupKey, Group>| {
            m.into_iter()
                .map(|(k, mut g)| {
                    g.ids.sort_unstable();
                    HandleGroup {
                        kind: k.kind.into(),
                        count: g.count,
                        site: k.site,
                        owner: k.owner,
                        wrapper_dropped: k.wrapper_dropped,
                        held_by: summarize(g.held_by),
                        holds: summarize(g.holds),
                        ids: g.ids,
                        backtrace: g.backtrace,
                    }
                })
                .collect::<Vec<_>>()
        };
        LeakReport {
            depth: self.depth(),
            kinds: kinds.into_iter().map(|(k, c)| (k.name().to_string(), c)).collect(),
            retained: groups(retained),
            declared_shared: groups(shared),
            swallowed_close_errors: lock(&self.inner.swallowed).clone(),
        }
    }
}

impl fmt::Display for LeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let retained = self.retained_count();
        if self.is_clean() {
            writeln!(f, "leakcheck: no retained handles (tracking depth: {})", self.depth)?;
        } else {
            writeln!(
                f,
                "leakcheck: {retained} native handle(s) retained, {} close error(s) swallowed \
                 (tracking depth: {})",
                self.swallowed_close_errors.len(),
                self.depth
            )?;
        }
        let table = |f: &mut fmt::Formatter<'_>, title: &str, groups: &[HandleGroup]| -> fmt::Result {
            if groups.is_empty() {
                return Ok(());
            }
            writeln!(f, "{title}:")?;
            writeln!(f, "  {:<22} {:>5}  {:<40} owner", "kind", "count", "created at")?;
            for g in groups {
                let site = g.site.as_deref().unwrap_or("(unknown: counts depth)");
                writeln!(f, "  {:<22} {:>5}  {:<40} {}", g.kind, g.count, site, g.owner.as_deref().unwrap_or("-"))?;
                if g.wrapper_dropped {
                    writeln!(f, "      wrapper dropped; release deferred while held")?;
                }
                for h in &g.held_by {
                    writeln!(f, "      held by {h}")?;
                }
                for h in &g.holds {
                    writeln!(f, "      keeps alive {h}")?;
                }
                if let Some(bt) = &g.backtrace {
                    for line in bt.lines().take(24) {
                        writeln!(f, "      {line}")?;
                    }
                }
            }
            Ok(())
        };
        table(f, "retained (not declared shared)", &self.retained)?;
        table(f, "declared shared (expected)", &self.declared_shared)?;
        if !self.swallowed_close_errors.is_empty() {
            writeln!(f, "swallowed close errors (dropped without being looked at):")?;
            for s in &self.swallowed_close_errors {
                writeln!(
                    f,
                    "  {} at {}{}: {}",
                    s.what,
                    s.site,
                    s.owner.as_deref().map(|o| format!(" ({o})")).unwrap_or_default(),
                    s.error
                )?;
            }
        }
        if !self.kinds.is_empty() {
            writeln!(f, "per kind (created / released / live / declared shared):")?;
            for (kind, c) in &self.kinds {
                writeln!(f, "  {kind:<22} {} / {} / {} / {}", c.created, c.released, c.live, c.declared_shared)?;
            }
        }
        Ok(())
    }
}
