//! What leaked and where, one finding per place a developer would fix: a retained handle group
//! at its creating line, an allocating stack that kept what two or more cycles allocated (at the
//! first frame of the user's own code), a swallowed close error where the close was called, and
//! each other leaking or undecided signal. Every output a person reads first (the terminal's
//! opening lines, CI annotations, the job summary, JUnit failures, report.html's first screen)
//! starts from these.

use super::model::Finding;
use super::RunReport;
use crate::probe::stacks::Place;
use crate::signal::Signal;
use crate::units::human_bytes;
use crate::verdict::Verdict;

impl RunReport {
    /// What leaked and where, the places a developer fixes first: retained handle groups (most
    /// handles first), allocating stacks that kept what two or more judged cycles allocated (most
    /// bytes first), swallowed close errors, then each other judged signal that leaked, and last
    /// the judged signals the run could not decide. Empty for a clean run.
    pub fn findings(&self) -> Vec<Finding> {
        let mut out = self.handle_findings();
        out.extend(self.retained_findings());
        for e in &self.ledger.swallowed_close_errors {
            let owner = e.owner.as_deref().map_or(String::new(), |o| format!(" (owner {o})"));
            out.push(Finding {
                signal: v_name(Signal::SwallowedCloseErrors),
                verdict: Verdict::Leak,
                message: format!("close error of {} dropped unread at {}{owner}: {}", e.what, e.site, e.error),
                place: Place::parse(&e.site),
                per_cycle: None,
                frames: Vec::new(),
            });
        }
        let other = self.other_findings(&out);
        out.extend(other);
        out
    }

    /// The retained handles, one finding per kind and creating line (most handles first), less
    /// the groups a suppression accepts.
    fn handle_findings(&self) -> Vec<Finding> {
        let cycles = self.cycles_run.max(1) as f64;
        let mut groups: Vec<_> = self.ledger.retained.iter().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.count));
        // A group a suppression accepts is listed with the suppressions, not as a leak.
        let accepted = |g: &&crate::ledger::HandleGroup| {
            let kind = g.kind.to_string();
            self.suppressions
                .iter()
                .find(|u| u.suppression.matches_handles(&kind, g.site.as_deref()))
                .is_some_and(crate::suppress::SuppressionUse::applies)
        };
        groups.retain(|g| !accepted(g));
        // One finding per kind and creating line, whatever the owners: a line is what gets fixed.
        let mut by_line: Vec<(String, Option<&str>, Vec<&crate::ledger::HandleGroup>)> = Vec::new();
        for g in groups {
            let kind = g.kind.to_string();
            match by_line.iter_mut().find(|(k, site, _)| *k == kind && *site == g.site.as_deref()) {
                Some((_, _, all)) => all.push(g),
                None => by_line.push((kind, g.site.as_deref(), vec![g])),
            }
        }
        by_line.sort_by_key(|(_, _, all)| std::cmp::Reverse(all.iter().map(|g| g.count).sum::<u64>()));
        by_line
            .into_iter()
            .map(|(kind, site, all)| {
                let count: u64 = all.iter().map(|g| g.count).sum();
                Finding {
                    signal: format!("live_handles.{kind}"),
                    verdict: Verdict::Leak,
                    message: format!(
                        "{count} {kind} handle{} retained, created at {}{}{}",
                        if count == 1 { "" } else { "s" },
                        site.unwrap_or("an unknown site (tracking depth counts)"),
                        owners(&all),
                        kept_by(&all)
                    ),
                    place: site.and_then(Place::parse),
                    per_cycle: Some(count as f64 / cycles),
                    frames: Vec::new(),
                }
            })
            .collect()
    }

    /// The allocating stacks that kept what two or more judged cycles allocated, when
    /// `retained_bytes` leaked: one finding per place in the user's code (most bytes first).
    fn retained_findings(&self) -> Vec<Finding> {
        let Some(v) = self.signal(Signal::RetainedBytes).filter(|v| judged_leak(v)) else { return Vec::new() };
        let Some(r) = &v.retained else { return Vec::new() };
        let judged = r.cycles().max(1) as f64;
        // One finding per place in the user's code (the first frame of theirs, else the
        // innermost): the stacks through one line are one thing to fix.
        let mut by_place: Vec<(&str, Vec<&crate::verdict::RetainedSite>)> = Vec::new();
        for s in r.sites.iter().filter(|s| s.recurs()) {
            let own = crate::probe::stacks::own_frame(&s.frames);
            let at = own.or((!s.frames.is_empty()).then_some(0)).map_or(s.function.as_str(), |i| &s.frames[i]);
            match by_place.iter_mut().find(|(p, _)| *p == at) {
                Some((_, all)) => all.push(s),
                None => by_place.push((at, vec![s])),
            }
        }
        by_place.sort_by_key(|(_, all)| std::cmp::Reverse(all.iter().map(|s| s.bytes).sum::<i64>()));
        let whole_findings = whole_findings(r, &v.signal.to_string());
        by_place
            .into_iter()
            .map(|(at, all)| {
                let bytes: i64 = all.iter().map(|s| s.bytes).sum();
                let allocations: i64 = all.iter().map(|s| s.allocations).sum();
                let cycles_holding = all.iter().map(|s| s.cycles_holding).max().unwrap_or(0);
                let stacks = match all.len() {
                    1 => String::new(),
                    n => format!(", {n} stacks"),
                };
                // The growth of the live bytes: what decided it.
                let grown: Vec<_> = all.iter().filter_map(|s| s.live.map(|j| j.growth)).collect();
                let per_cycle = match grown.is_empty() {
                    true => bytes as f64 / judged,
                    false => grown.iter().map(|g| g.bytes_per_cycle).sum(),
                };
                let message = growth_message(&grown, at, &stacks).unwrap_or_else(|| {
                    format!(
                        "retained_bytes: {} per cycle ({} in {allocations} allocations from {cycles_holding} of cycles \
                         {}-{}{stacks}), allocated in {at}",
                        super::words::rate(per_cycle),
                        human_bytes(bytes as f64),
                        r.from_cycle,
                        r.to_cycle,
                    )
                });
                Finding {
                    signal: v.signal.to_string(),
                    verdict: Verdict::Leak,
                    message,
                    place: Place::parse(at),
                    per_cycle: Some(per_cycle),
                    // The largest stack's frames.
                    frames: all.iter().max_by_key(|s| s.bytes).map(|s| s.frames.clone()).unwrap_or_default(),
                }
            })
            .chain(whole_findings)
            .collect()
    }

    /// After the placed findings (`placed`): each other judged signal that leaked, the return to
    /// baseline when it leaked, then the judged signals the run could not decide.
    fn other_findings(&self, placed: &[Finding]) -> Vec<Finding> {
        let mut out = Vec::new();
        let leaking = |s: Signal| self.verdict.signals.iter().any(|v| v.family() == s && judged_leak(v));
        let any_group = placed.iter().any(|f| f.signal.starts_with("live_handles."));
        let has_place = |s: Signal| match s {
            Signal::LiveHandles | Signal::LiveHandlesOf => any_group,
            Signal::SwallowedCloseErrors => !self.ledger.swallowed_close_errors.is_empty(),
            Signal::RetainedBytes => placed.iter().any(|f| f.signal == v_name(Signal::RetainedBytes)),
            _ => false,
        };
        let with_place: Vec<Signal> = Signal::ALL.iter().copied().filter(|s| leaking(*s) && has_place(*s)).collect();
        for v in self.verdict.signals.iter().filter(|v| judged_leak(v) && !with_place.contains(&v.family())) {
            out.push(Finding {
                signal: v.signal.to_string(),
                verdict: Verdict::Leak,
                message: format!("{}: {}", v.signal, signal_words(v)),
                place: None,
                per_cycle: v.estimate.map(|e| e.value),
                frames: Vec::new(),
            });
        }
        if let Some(b) = self.verdict.baseline_return.as_ref().filter(|b| b.verdict == Verdict::Leak) {
            out.push(Finding {
                signal: "baseline_return".to_string(),
                verdict: Verdict::Leak,
                message: super::words::totals_lines(self)
                    .into_iter()
                    .find(|l| l.starts_with("return to baseline"))
                    .unwrap_or_else(|| format!("return to baseline: {}", b.verdict)),
                place: None,
                per_cycle: None,
                frames: Vec::new(),
            });
        }
        for v in self.verdict.signals.iter().filter(|v| !v.informational && v.verdict == Verdict::Inconclusive) {
            let more = v.more_cycles_needed.map_or(String::new(), |n| format!(", about {n} more cycles needed"));
            out.push(Finding {
                signal: v.signal.to_string(),
                verdict: Verdict::Inconclusive,
                message: format!("{}: inconclusive{more}", v.signal),
                place: None,
                per_cycle: v.estimate.map(|e| e.value),
                frames: Vec::new(),
            });
        }
        out
    }
}

/// A signal's name in reports.
fn v_name(s: Signal) -> String {
    crate::signal::SignalId::from(s).to_string()
}

/// ` (owner task 0_0 / segment 0)`, ` (owners a, b, c and 2 more)`, or nothing without owners.
fn owners(groups: &[&crate::ledger::HandleGroup]) -> String {
    const LISTED: usize = 3;
    let mut names: Vec<&str> = groups.iter().filter_map(|g| g.owner.as_deref()).collect();
    names.sort_unstable();
    names.dedup();
    match names.len() {
        0 => String::new(),
        1 => format!(" (owner {})", names[0]),
        n if n <= LISTED => format!(" (owners {})", names.join(", ")),
        n => format!(" (owners {} and {} more)", names[..LISTED].join(", "), n - LISTED),
    }
}

/// `; its wrapper is gone, kept alive by ..` for groups only holders keep alive.
fn kept_by(groups: &[&crate::ledger::HandleGroup]) -> String {
    let holders: Vec<&str> =
        groups.iter().filter(|g| g.wrapper_dropped).flat_map(|g| g.held_by.iter().map(String::as_str)).collect();
    if holders.is_empty() {
        String::new()
    } else {
        format!("; its wrapper is gone, kept alive by {}", holders.join(", "))
    }
}

/// A judged (not informational) leak verdict.
fn judged_leak(v: &crate::verdict::SignalVerdict) -> bool {
    !v.informational && v.verdict == Verdict::Leak
}

/// A leaking signal without a place, in words: its estimate per cycle and interval, or its
/// residue.
fn signal_words(v: &crate::verdict::SignalVerdict) -> String {
    let [_, per_cycle, detail] = super::words::signal_cells(v);
    match per_cycle.as_str() {
        "-" => format!("leak, {detail}"),
        _ => format!("leak, {per_cycle} per cycle {detail}"),
    }
}

/// The sites of one place whose live bytes kept growing (`grown`), in one line: how fast, where
/// (`at`), over which cycles, and what to do when the growth is bounded past the run. `None` when
/// none grew (a report written before the growth rule).
fn growth_message(grown: &[crate::verdict::SiteGrowth], at: &str, stacks: &str) -> Option<String> {
    let (from, to) = grown.iter().map(|g| (g.from_cycle, g.to_cycle)).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)))?;
    let per_cycle: f64 = grown.iter().map(|g| g.bytes_per_cycle).sum();
    Some(format!(
        "retained_bytes: still growing {}/cycle at {at} through cycles {from}-{to} ({} live now{stacks}); if it is \
         bounded, run past its bound (`cycles = {}`, `--cycles {}`)",
        super::words::rate(per_cycle),
        human_bytes(grown.iter().map(|g| g.live_bytes).sum()),
        2 * (to + 1),
        2 * (to + 1),
    ))
}

/// The record's total and the rest (the sites past the most kept apart), when they kept growing:
/// a finding each, with no place (no one site holds it).
fn whole_findings(r: &crate::verdict::Retained, signal: &str) -> Vec<Finding> {
    let wholes = [
        ("the record's total, less what RocksDB reports (no one site holds it)", r.total),
        ("the sites past the most kept apart, summed", r.rest),
    ];
    wholes
        .into_iter()
        .filter_map(|(what, g)| g.filter(|g| g.leaks()).map(|g| (what, g)))
        .map(|(what, g)| Finding {
            signal: signal.to_string(),
            verdict: Verdict::Leak,
            message: format!(
                "retained_bytes: {what} still growing {}/cycle through cycles {}-{} ({} kept against a budget of {}); \
                 if it is bounded, run past its bound (`cycles = {}`, `--cycles {}`)",
                super::words::rate(g.bytes_per_cycle),
                g.from_cycle,
                g.to_cycle,
                human_bytes(g.growth_bytes),
                human_bytes(g.budget_bytes),
                2 * (g.to_cycle + 1),
                2 * (g.to_cycle + 1),
            ),
            place: None,
            per_cycle: Some(g.bytes_per_cycle),
            frames: Vec::new(),
        })
        .collect()
}
