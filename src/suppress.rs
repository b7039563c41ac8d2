//! Known leaks a project accepts, each with its reason: a suppression file (`leakcheck.toml`).
//!
//! ```toml
//! [[suppress]]
//! function = "rocksdb::db::DBCommon<T,D>::list_cf"
//! reason = "rust-rocksdb 0.25: a failed list_cf keeps 8 B per call (found by leakcheck sweep)"
//! max_bytes_per_cycle = 64
//!
//! [[suppress]]
//! handle = "Options"
//! site = "src/store.rs:48"
//! reason = "a process-wide default, made once per task"
//! max_handles_per_cycle = 1
//! ```
//!
//! A suppression names what it matches, by a handle kind (and the handles' creating site: a file,
//! or `file:line`), or by a function in an allocating stack (a part of a frame's function name);
//! a reason, always; and, optionally, a bound per cycle. A suppressed leak does not fail a run,
//! but every report lists it with its size; a suppression that matched nothing is listed as
//! unused, and one whose bound was exceeded suppresses nothing, so the leak fails the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::ledger::{HandleGroup, Ledger};

/// What a suppression matches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// Retained handles of this kind, created at `site` when given.
    Handle {
        /// The kind's name (`Options`, `DB`, or a kind of the user's own).
        kind: String,
        /// `file` or `file:line`: matches a creating site `file:line:column` whose file is this
        /// one or ends with `/` and this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        site: Option<String>,
    },
    /// Allocating stacks with a frame whose function contains this text.
    Function(String),
}

/// One known leak.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Suppression {
    /// What it matches.
    pub target: Target,
    /// Why the leak is accepted.
    pub reason: String,
    /// The most it may hold per cycle (bytes for a function, handles for a handle kind); above
    /// it, it suppresses nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_cycle: Option<f64>,
    /// Where it is written: `leakcheck.toml:7`.
    pub origin: String,
}

impl Suppression {
    /// What it matches, in words: `handle Options at src/store.rs:48`, `function list_cf`.
    pub fn describe(&self) -> String {
        match &self.target {
            Target::Handle { kind, site: Some(site) } => format!("handle {kind} at {site}"),
            Target::Handle { kind, site: None } => format!("handle {kind}"),
            Target::Function(f) => format!("function {f}"),
        }
    }

    /// The unit of its bound: `bytes` or `handles`.
    pub fn unit(&self) -> &'static str {
        match self.target {
            Target::Handle { .. } => "handles",
            Target::Function(_) => "bytes",
        }
    }

    /// Whether it matches handles of `kind` created at `site` (`file:line:column`).
    pub(crate) fn matches_handles(&self, kind: &str, site: Option<&str>) -> bool {
        let Target::Handle { kind: k, site: wanted } = &self.target else { return false };
        if k != kind {
            return false;
        }
        let Some(wanted) = wanted else { return true };
        let Some(place) = site.and_then(crate::probe::stacks::Place::parse) else { return false };
        let (file, line) = match wanted.rsplit_once(':') {
            Some((file, line)) if line.parse::<u32>().is_ok() => (file, line.parse::<u32>().ok()),
            _ => (wanted.as_str(), None),
        };
        let same_file = place.file == file || place.file.ends_with(&format!("/{file}"));
        same_file && line.is_none_or(|l| l == place.line)
    }

    /// Whether it matches an allocating stack (`frames`, each `function (file:line)`).
    pub(crate) fn matches_stack(&self, frames: &[String]) -> bool {
        let Target::Function(f) = &self.target else { return false };
        frames.iter().any(|frame| crate::probe::stacks::split_location(frame).0.contains(f.as_str()))
    }
}

/// A project's suppressions, in the order written (the first that matches is the one used).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Suppressions {
    entries: Vec<Suppression>,
}

/// A suppression file that cannot be used: the file and line, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SuppressionError {
    /// The file could not be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid suppression file.
    #[error("{origin}:{line}: {problem}")]
    Invalid {
        /// The file (or `suppressions` for text given directly).
        origin: String,
        /// The line (1-based) of the mistake.
        line: usize,
        /// What is wrong.
        problem: String,
    },
}

/// One `[[suppress]]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    reason: Option<String>,
    handle: Option<String>,
    site: Option<String>,
    function: Option<String>,
    max_bytes_per_cycle: Option<f64>,
    max_handles_per_cycle: Option<f64>,
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    suppress: Vec<toml::Spanned<Entry>>,
}

impl Suppressions {
    /// No suppressions.
    pub fn none() -> Self {
        Suppressions::default()
    }

    /// Reads a suppression file.
    ///
    /// # Errors
    /// The file cannot be read, or is not a valid suppression file (the error names the line).
    pub fn from_path(path: &Path) -> Result<Self, SuppressionError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| SuppressionError::Read { path: path.to_path_buf(), source })?;
        Suppressions::parse(&text, &path.display().to_string())
    }

    /// Reads suppressions from `text`; `origin` names it in errors and reports (a file's path).
    ///
    /// # Errors
    /// Not valid TOML, an unknown key, a suppression without a reason, one that names both or
    /// neither of `handle` and `function`, a `site` without `handle`, a bound of the other kind's
    /// unit, or a bound that is not a positive number.
    pub fn parse(text: &str, origin: &str) -> Result<Self, SuppressionError> {
        let line_of = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let invalid =
            |line: usize, problem: String| SuppressionError::Invalid { origin: origin.to_string(), line, problem };
        let file: File = toml::from_str(text).map_err(|e| {
            let line = e.line_col().map_or(1, |(line, _)| line + 1);
            let said = e.to_string();
            let problem = said.split(" at line ").next().unwrap_or(&said).trim().replace('\n', "; ");
            invalid(line, problem)
        })?;
        // toml 0.5 spans a `[[suppress]]` table from the file's start, so each entry's line is its
        // header's, in order; entries written inline (`suppress = [{ .. }]`) have true spans.
        let headers: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_start().strip_prefix("[[").is_some_and(|h| h.trim_start().starts_with("suppress")))
            .map(|(i, _)| i + 1)
            .collect();
        let by_header = headers.len() == file.suppress.len();
        let mut entries = Vec::with_capacity(file.suppress.len());
        for (i, spanned) in file.suppress.into_iter().enumerate() {
            let line = if by_header { headers[i] } else { line_of(spanned.start()) };
            let e = spanned.into_inner();
            let fail = |problem: &str| invalid(line, problem.to_string());
            let reason = e.reason.filter(|r| !r.trim().is_empty()).ok_or_else(|| {
                fail("every suppression needs a `reason`: why the leak is accepted (an upstream issue, a fix to come)")
            })?;
            let nonempty = |v: Option<String>, key: &str| match v {
                Some(v) if v.trim().is_empty() => Err(fail(&format!("`{key}` is empty"))),
                v => Ok(v),
            };
            let (handle, function, site) =
                (nonempty(e.handle, "handle")?, nonempty(e.function, "function")?, nonempty(e.site, "site")?);
            let (target, max_per_cycle) = match (handle, function) {
                (Some(_), Some(_)) => {
                    return Err(fail("a suppression names a `handle` kind or a `function`, not both"))
                }
                (None, None) => {
                    return Err(fail("a suppression needs a `handle` kind (with an optional `site`) or a `function`"))
                }
                (Some(kind), None) => {
                    if e.max_bytes_per_cycle.is_some() {
                        return Err(fail(
                            "`max_bytes_per_cycle` bounds a `function`; a `handle` takes `max_handles_per_cycle`",
                        ));
                    }
                    (Target::Handle { kind, site }, e.max_handles_per_cycle)
                }
                (None, Some(f)) => {
                    if site.is_some() {
                        return Err(fail(
                            "`site` goes with `handle` (the handles' creating site), not with `function`",
                        ));
                    }
                    if e.max_handles_per_cycle.is_some() {
                        return Err(fail(
                            "`max_handles_per_cycle` bounds a `handle`; a `function` takes `max_bytes_per_cycle`",
                        ));
                    }
                    (Target::Function(f), e.max_bytes_per_cycle)
                }
            };
            if let Some(m) = max_per_cycle.filter(|m| !(m.is_finite() && *m > 0.0)) {
                return Err(fail(&format!("a bound per cycle must be a positive number, not {m}")));
            }
            entries.push(Suppression { target, reason, max_per_cycle, origin: format!("{origin}:{line}") });
        }
        Ok(Suppressions { entries })
    }

    /// The suppressions, in the order written.
    pub fn entries(&self) -> &[Suppression] {
        &self.entries
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether any names a function.
    pub(crate) fn names_functions(&self) -> bool {
        self.entries.iter().any(|s| matches!(s.target, Target::Function(_)))
    }

    /// Whether any function suppression matches `frames`.
    pub(crate) fn matches_stack(&self, frames: &[String]) -> bool {
        self.entries.iter().any(|s| s.matches_stack(frames))
    }

    /// Whether any names a handle kind.
    fn has_handles(&self) -> bool {
        self.entries.iter().any(|s| matches!(s.target, Target::Handle { .. }))
    }

    /// For each suppression, the retained groups it matches (each group by the first that
    /// matches it).
    fn handle_matches<'a>(&self, groups: &'a [HandleGroup]) -> Vec<Vec<&'a HandleGroup>> {
        let mut out = vec![Vec::new(); self.entries.len()];
        for g in groups {
            let kind = g.kind.to_string();
            if let Some(i) = self.entries.iter().position(|s| s.matches_handles(&kind, g.site.as_deref())) {
                out[i].push(g);
            }
        }
        out
    }

    /// Whether `matched` handles (in all) are within suppression `i`'s bound after `cycles`.
    fn within(&self, i: usize, matched: f64, cycles: u64) -> bool {
        self.entries[i].max_per_cycle.is_none_or(|m| matched <= m * cycles.max(1) as f64)
    }

    /// The ledger's retained counts per kind, less the groups a suppression matches within its
    /// bound after `cycles` cycles: what the exact handle signals judge.
    pub(crate) fn unsuppressed_counts(&self, ledger: &Ledger, cycles: u64) -> BTreeMap<String, u64> {
        let mut counts = ledger.retained_counts();
        if counts.is_empty() || !self.has_handles() {
            return counts;
        }
        let report = ledger.report();
        for (i, groups) in self.handle_matches(&report.retained).into_iter().enumerate() {
            let matched: u64 = groups.iter().map(|g| g.count).sum();
            if matched == 0 || !self.within(i, matched as f64, cycles) {
                continue;
            }
            for g in groups {
                if let Some(n) = counts.get_mut(&g.kind.to_string()) {
                    *n = n.saturating_sub(g.count);
                }
            }
        }
        counts.retain(|_, n| *n > 0);
        counts
    }

    /// Marks the sites a suppression matches within its bound (its sites' bytes per judged
    /// cycle, of `cycles`) as suppressed: they no longer count as leaks.
    pub(crate) fn mark_sites(&self, sites: &mut [crate::verdict::RetainedSite], cycles: u64) {
        let Some(first) = self.entries.iter().position(|s| matches!(s.target, Target::Function(_))) else {
            return;
        };
        let mut per_entry = vec![Vec::new(); self.entries.len()];
        for (k, site) in sites.iter().enumerate().filter(|(_, s)| s.stacked) {
            if let Some(i) = self.entries[first..].iter().position(|s| s.matches_stack(&site.frames)) {
                per_entry[first + i].push(k);
            }
        }
        for (i, matched) in per_entry.into_iter().enumerate() {
            let bytes: i64 = matched.iter().map(|k| sites[*k].bytes).sum();
            if matched.is_empty() || !self.within(i, bytes as f64, cycles) {
                continue;
            }
            for k in matched {
                sites[k].suppressed = Some(self.entries[i].origin.clone());
            }
        }
    }

    /// How each suppression was used, at the end of a run of `cycles` cycles: the retained
    /// groups of `ledger` and the sites of `retained` it matched.
    pub(crate) fn uses(
        &self,
        ledger: &crate::ledger::LeakReport,
        retained: Option<&crate::verdict::Retained>,
        cycles: u64,
    ) -> Vec<SuppressionUse> {
        let handles = self.handle_matches(&ledger.retained);
        self.entries
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let (matched, total, per_cycle_of) = match &s.target {
                    Target::Handle { .. } => {
                        let total: u64 = handles[i].iter().map(|g| g.count).sum();
                        // The groups of one site (several owners) are one line.
                        let mut by_site: BTreeMap<(String, &str), u64> = BTreeMap::new();
                        for g in &handles[i] {
                            let site = g.site.as_deref().unwrap_or("an unknown site");
                            *by_site.entry((g.kind.to_string(), site)).or_default() += g.count;
                        }
                        let matched = by_site
                            .into_iter()
                            .map(|((kind, site), n)| {
                                format!("{n} {kind} handle{} created at {site}", if n == 1 { "" } else { "s" })
                            })
                            .collect();
                        (matched, total as f64, cycles.max(1))
                    }
                    Target::Function(_) => {
                        let Some(r) = retained else { return SuppressionUse::of(s, Vec::new(), 0.0, false) };
                        let sites: Vec<_> =
                            r.sites.iter().filter(|t| t.stacked && s.matches_stack(&t.frames)).collect();
                        let total: i64 = sites.iter().map(|t| t.bytes).sum();
                        let matched = sites
                            .iter()
                            .map(|t| format!("{} held at {}", crate::units::human_bytes(t.bytes as f64), t.function))
                            .collect();
                        (matched, total as f64, r.cycles().max(1))
                    }
                };
                let exceeded = !self.within(i, total, per_cycle_of);
                SuppressionUse::of(s, matched, total / per_cycle_of as f64, exceeded)
            })
            .collect()
    }
}

/// How one suppression was used in a run: report.json's `suppressions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SuppressionUse {
    /// The suppression.
    pub suppression: Suppression,
    /// What it matched (`3 Options handles created at src/store.rs:48:22`, a stack's headline);
    /// empty: unused.
    pub matched: Vec<String>,
    /// What it matched per cycle of the run, in [`Suppression::unit`].
    pub per_cycle: f64,
    /// The bound was exceeded: it suppressed nothing, and what it matched is judged.
    pub exceeded: bool,
}

impl SuppressionUse {
    fn of(s: &Suppression, matched: Vec<String>, per_cycle: f64, exceeded: bool) -> Self {
        let exceeded = exceeded && !matched.is_empty();
        SuppressionUse { suppression: s.clone(), matched, per_cycle, exceeded }
    }

    /// It matched nothing: remove it, or the leak it names is fixed.
    pub fn unused(&self) -> bool {
        self.matched.is_empty()
    }

    /// It matched something within its bound: that is not judged.
    pub fn applies(&self) -> bool {
        !self.matched.is_empty() && !self.exceeded
    }

    /// One line: `suppressed (leakcheck.toml:7, function list_cf): 8.0 B per cycle, 2 stacks: reason`.
    pub(crate) fn line(&self) -> String {
        let s = &self.suppression;
        let per_cycle = match s.unit() {
            "bytes" => format!("{} per cycle", crate::units::rate(self.per_cycle)),
            _ => format!("{:.2} handles per cycle", self.per_cycle),
        };
        let bound = s.max_per_cycle.map_or(String::new(), |m| format!(" (bound {m} {} per cycle)", s.unit()));
        if self.unused() {
            format!(
                "unused suppression ({}, {}): matched nothing; remove it if the leak is fixed",
                s.origin,
                s.describe()
            )
        } else if self.exceeded {
            format!(
                "suppression exceeded ({}, {}): {per_cycle}{bound}, so it suppresses nothing: {}",
                s.origin,
                s.describe(),
                self.matched.join("; ")
            )
        } else {
            format!(
                "suppressed ({}, {}): {per_cycle}{bound}, {}: {}",
                s.origin,
                s.describe(),
                self.matched.join("; "),
                s.reason
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> (usize, String) {
        match Suppressions::parse(text, "leakcheck.toml") {
            Err(SuppressionError::Invalid { line, problem, .. }) => (line, problem),
            other => panic!("expected an error, got {other:?}"),
        }
    }

    #[test]
    fn a_file_reads_in_order_with_the_line_of_each() {
        let s = Suppressions::parse(
            "# known leaks\n[[suppress]]\nfunction = \"list_cf\"\nreason = \"upstream #1\"\nmax_bytes_per_cycle = 64\n\n\
             [[suppress]]\nhandle = \"Options\"\nsite = \"src/store.rs:48\"\nreason = \"once per task\"\n",
            "leakcheck.toml",
        )
        .expect("valid");
        let e = s.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].target, Target::Function("list_cf".into()));
        assert_eq!((e[0].max_per_cycle, e[0].origin.as_str()), (Some(64.0), "leakcheck.toml:2"));
        assert_eq!(e[1].origin, "leakcheck.toml:7");
        assert!(e[1].matches_handles("Options", Some("src/store.rs:48:22")));
        assert!(e[1].matches_handles("Options", Some("/home/ci/app/src/store.rs:48:5")));
        assert!(!e[1].matches_handles("Options", Some("src/store.rs:49:22")));
        assert!(!e[1].matches_handles("Options", Some("src/other_store.rs:48:22")));
        assert!(!e[1].matches_handles("Cache", Some("src/store.rs:48:22")));
        assert!(e[0].matches_stack(&["rocksdb::db::DBCommon<T,D>::list_cf (src/db.rs:9)".to_string()]));
        assert!(!e[0].matches_stack(&["my::f (src/list_cf.rs:9)".to_string()]), "the file is not the function");
        assert!(Suppressions::parse("", "x").expect("empty").is_empty());
    }

    #[test]
    fn mistakes_name_their_line() {
        assert_eq!(problem("[[suppress]]\nfunction = \"f\"\n").0, 1);
        assert!(problem("[[suppress]]\nfunction = \"f\"\n").1.contains("reason"));
        assert_eq!(problem("\n[[suppress]]\nfunction = \"f\"\nreason = \"r\"\nhandle = \"DB\"\n").0, 2);
        assert!(problem("[[suppress]]\nreason = \"r\"\n").1.contains("`handle`"));
        assert!(problem("[[suppress]]\nfunction = \"f\"\nsite = \"a.rs\"\nreason = \"r\"\n").1.contains("site"));
        assert!(problem("[[suppress]]\nhandle = \"DB\"\nmax_bytes_per_cycle = 8\nreason = \"r\"\n")
            .1
            .contains("max_handles"));
        assert!(problem("[[suppress]]\nfunction = \"f\"\nmax_bytes_per_cycle = -1\nreason = \"r\"\n")
            .1
            .contains("positive"));
        assert!(problem("[[suppress]]\nfunction = \"f\"\nreason = \"  \"\n").1.contains("reason"));
        let (line, unknown) = problem("[[suppress]]\nfunction = \"f\"\nreason = \"r\"\nbytes = 3\n");
        assert!(unknown.contains("bytes"), "{unknown}");
        assert!(line >= 1);
        assert_eq!(problem("[[suppress]]\nfunction = \"f\"\nreason = \"r\n").0, 3, "a TOML error names its line");
    }
}
