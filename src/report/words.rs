//! What a report says in words: the signal table's cells, the notes under it and the totals.
//! The terminal's table ([`super::text`]) and report.html ([`super::html`]) both read these, so
//! the two say the same thing.

use crate::report::RunReport;
use crate::signal::Class;
use crate::units::human_bytes;
use crate::verdict::{BudgetFrom, RuleKind, Verdict};

pub(crate) use crate::units::rate;

pub(super) fn fmt_num(v: Option<f64>, class: Class) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if class == Class::Bytes => human_bytes(v),
        Some(v) => format!("{v:.2}"),
    }
}

/// One row of the signal table, as text: the verdict (in parentheses when informational, with
/// "(grows)" when clean with growth evidenced), the estimate per cycle, and its interval or the
/// exact signal's residue. The text table and report.html show the same cells.
pub(crate) fn signal_cells(e: &crate::verdict::SignalVerdict) -> [String; 3] {
    if let Some(why) = e.not_measured {
        return [Verdict::NotMeasured.to_string(), "-".to_string(), why.to_string()];
    }
    let verdict = match (e.informational, e.growth_below_budget) {
        (true, _) => format!("({})", e.verdict),
        (false, true) => format!("{} (grows)", e.verdict),
        (false, false) => e.verdict.to_string(),
    };
    let (per_cycle, detail) = match (e.kind(), e.estimate) {
        (_, Some(est)) if e.retained.is_some() => {
            let detail = e.retained.as_ref().map_or_else(String::new, |r| {
                if r.leaks() {
                    format!(
                        "{} at {} site{} held from 2+ cycles",
                        fmt_num(Some(r.recurring_bytes as f64), e.class()),
                        r.recurring_sites,
                        if r.recurring_sites == 1 { "" } else { "s" }
                    )
                } else if r.sites.iter().any(|s| s.suppressed.is_some()) {
                    let held: i64 = r.sites.iter().filter(|s| s.suppressed.is_some()).map(|s| s.bytes).sum();
                    format!("{} suppressed", fmt_num(Some(held as f64), e.class()))
                } else {
                    format!(
                        "{} kept once, in {}/{} cycles",
                        fmt_num(Some(r.bytes as f64), e.class()),
                        r.generations_holding,
                        r.cycles()
                    )
                }
            });
            (fmt_num(Some(est.value), e.class()), detail)
        }
        // A residue of handles, files or maps is a count: a whole number.
        (RuleKind::Exact, _) => {
            let residue = e.residue.map(|r| r.max);
            let shown = match (residue, e.class()) {
                (Some(v), c) if c != Class::Bytes => format!("{v:.0}"),
                (v, c) => fmt_num(v, c),
            };
            ("-".to_string(), format!("residue {shown}"))
        }
        (RuleKind::Statistical, Some(est)) => (
            fmt_num(Some(est.value), e.class()),
            format!("[{}, {}]", fmt_num(Some(est.lower), e.class()), fmt_num(Some(est.upper), e.class())),
        ),
        (RuleKind::Statistical, None) => ("-".to_string(), "-".to_string()),
    };
    [verdict, per_cycle, detail]
}

/// `retained_bytes` in words: what the judged cycles still hold, and how it is spread.
pub(crate) fn retained_line(r: &crate::verdict::Retained) -> String {
    let mut line = format!(
        "retained: of what cycles {}-{} allocated, {} ({} allocations) are still held ({}/cycle)",
        r.from_cycle,
        r.to_cycle,
        human_bytes(r.bytes as f64),
        r.allocations,
        rate(r.bytes_per_cycle())
    );
    if let (Some(first), Some(last)) = (r.first_cycle, r.last_cycle) {
        line.push_str(&format!(
            ", by {} of {} cycles ({}-{}; each {} median, {}-{})",
            r.generations_holding,
            r.cycles(),
            first,
            last,
            human_bytes(r.median_bytes as f64),
            human_bytes(r.min_bytes as f64),
            human_bytes(r.max_bytes as f64)
        ));
    }
    line
}

/// What a clean `retained_bytes` rules out: a leak of any size recurring in a fraction of the
/// judged cycles at least the one [`Retained::rate_ruled_out`](crate::verdict::Retained) states,
/// at a stack that gives nothing back (a stack that turns over: beyond twice its window), with
/// the rule's power; and how many sizes were sampled rather than stacked in full.
pub(crate) fn retained_rules_out(r: &crate::verdict::Retained, g: &crate::harness::GenerationsReport) -> String {
    let power = crate::verdict::retained::age::POWER * 100.0;
    let mut line = match r.rate_ruled_out() {
        Some(p) => format!(
            "retained_bytes clean: rules out, at {power:.0}% power, a leak of any size recurring in 1 of every {} of \
             cycles {}-{} or more often, at a stack that gives nothing back (one that turns over: in what outlives \
             twice its window)",
            format_every(p),
            r.from_cycle,
            r.to_cycle
        ),
        None => format!(
            "retained_bytes clean: cycles {}-{} judged, too few to rule out even a leak in every cycle",
            r.from_cycle, r.to_cycle
        ),
    };
    if let Some(s) = r.largest_plotted() {
        // Growth is read from the later half's start to its last quarter's end at the least:
        // three quarters of the cycles named.
        let span = (s.growth.to_cycle.saturating_sub(s.growth.from_cycle) as f64 * 0.75).max(1.0);
        line.push_str(&format!(
            "; its largest site, {}, held up to {} and kept {} of growth over cycles {}-{} against a budget of {}: \
             a continuing leak there above {}/cycle would have been called",
            s.function,
            crate::units::human_bytes(s.peak()),
            crate::units::human_bytes(s.growth.kept_to_end.max(0.0)),
            s.growth.from_cycle,
            s.growth.to_cycle,
            crate::units::human_bytes(s.growth.budget_bytes),
            crate::units::human_bytes(s.growth.budget_bytes / span)
        ));
    }
    if g.sampled_sizes > 0 {
        line.push_str(&format!(
            "; {} of the {} sizes left behind were sampled at the end (more allocations a cycle than stacks taken): a \
             leak among them recurs at its stack in the share of its firings that were stacked",
            g.sampled_sizes, g.watched_sizes
        ));
    }
    line
}

/// `1 / p` in words: `12 cycles`, `1.3 cycles`.
fn format_every(p: f64) -> String {
    let every = 1.0 / p.max(1e-12);
    if every >= 10.0 {
        format!("{every:.0} cycles")
    } else {
        format!("{every:.1} cycles")
    }
}

/// One site of the record, as the notes list it: what the rule said, what it holds, where.
pub(crate) fn site_line(site: &crate::verdict::RetainedSite) -> String {
    use crate::verdict::{Aged, Open};
    let cycles = match site.cycles_holding {
        1 => format!("cycle {}", site.first_cycle),
        n => format!("{n} cycles ({}-{})", site.first_cycle, site.last_cycle),
    };
    let window =
        |w: u64| if w == 0 { "gives nothing back".to_string() } else { format!("gives back at ages up to {}", w / 2) };
    if let Some(line) = growth_line(site) {
        return line;
    }
    let (label, why) = match (site.suppressed.as_ref(), site.judged, site.facts) {
        (Some(_), _, _) => ("suppressed:", String::new()),
        (None, None, _) => ("unjudged:", String::new()),
        (None, Some(Aged::Leak), Some(f)) => (
            "leak:",
            format!(
                " ({}; old residue from {} cycles, {} of them in the later half of cycles {}-{}: still accumulating)",
                window(f.window),
                f.old_holds,
                f.late_holds,
                site.facts.map_or(0, |f| f.late_from),
                f.old_to.unwrap_or(0)
            ),
        ),
        (None, Some(Aged::Open(Open::OneShort { settles_by })), Some(f)) => (
            "open:",
            format!(
                " ({} of the later half's cycles hold it, one short of a leak: settled by cycle {settles_by} if no more come)",
                f.late_holds
            ),
        ),
        (None, Some(Aged::Open(Open::OnSchedule { growth })), _) => (
            "open:",
            format!(
                " (a container on a leak's schedule: grew x{:.1} at cycle {}, after cycle {}; a steady leak grows it again by \
                 cycle {})",
                growth.factor,
                growth.last,
                growth.before,
                growth.due()
            ),
        ),
        (None, Some(Aged::Open(_)), _) => (
            "open:",
            format!(
                " (accumulating in {}, which the store does not report: report it through Lifecycle::rocksdb_memory, or let \
                 go of it in Lifecycle::let_go)",
                site.consumer.map_or("a RocksDB consumer", |c| c.name())
            ),
        ),
        (None, Some(Aged::Stopped), _) => (
            "stopped:",
            site.growth.map_or_else(String::new, |g| {
                format!(" (a container that last grew at cycle {}; a steady leak would have grown it again by cycle {})", g.last, g.due())
            }),
        ),
        (None, Some(Aged::Explained), _) => (
            "explained:",
            format!(" (held by the {}, which the store reports)", site.consumer.map_or("consumer", |c| c.name())),
        ),
        (None, Some(Aged::State), Some(f)) => ("state:", format!(" ({}: turns over)", window(f.window))),
        (None, Some(Aged::Kept), Some(f)) => {
            ("kept:", format!(" (old residue from {} cycles, {} in the later half: not accumulating)", f.old_holds, f.late_holds))
        }
        (None, Some(_), _) => ("kept:", String::new()),
    };
    format!(
        "  {label} {} in {} allocation{} from {cycles}{}{} {}",
        crate::units::human_bytes(site.bytes as f64),
        site.allocations,
        if site.allocations == 1 { "" } else { "s" },
        why,
        if site.stacked { ", allocated at" } else { ":" },
        site.function
    )
}

/// A site whose live bytes grew, as the notes list it (`None` for one that did not, or that a
/// suppression accepts).
fn growth_line(site: &crate::verdict::RetainedSite) -> Option<String> {
    let (label, why) = growth_words(site.live.filter(|_| site.suppressed.is_none())?)?;
    Some(format!(
        "  {label} {} live in {} allocation{} held{why}, allocated at {}",
        crate::units::human_bytes(site.live.map_or(site.bytes as f64, |j| j.growth.live_bytes)),
        site.allocations,
        if site.allocations == 1 { "" } else { "s" },
        site.function
    ))
}

/// What the growth rule said of a site's live bytes, when it grew: its label and why (`None` for a
/// site whose live bytes did not grow, described by its residue's ages).
fn growth_words(j: crate::verdict::sites::Judged) -> Option<(&'static str, String)> {
    use crate::verdict::Grew;
    let g = j.growth;
    let kept = |what: &str| {
        format!(
            " ({what}: {}/cycle through cycles {}-{}, {} kept against a budget of {}, {} rises in the later half)",
            rate(g.bytes_per_cycle),
            g.from_cycle,
            g.to_cycle,
            crate::units::human_bytes(g.growth_bytes),
            crate::units::human_bytes(g.budget_bytes),
            g.rises
        )
    };
    let consumer = j.consumer.map_or("a RocksDB consumer", |c| c.name());
    Some(match g.grew {
        _ if j.explained => ("explained:", format!(" (growing in the {consumer}, within what the store reports)")),
        _ if j.unreported => (
            "open:",
            format!(
                " (growing in {consumer}, which the store does not report: report it through Lifecycle::rocksdb_memory, \
                 or let go of it in Lifecycle::let_go)"
            ),
        ),
        Grew::Leak => ("leak:", kept("still growing")),
        Grew::BelowBudget => ("open:", kept("growing, not yet past its own variability")),
        Grew::Stopped => ("stopped:", kept("grew, then not in the last quarter")),
        Grew::RareLosses { settles_by } => (
            "open:",
            format!(
                " (never gave back; rose in {} judged cycles, the last at {}, too few to prove: settled by cycle \
                 {settles_by} if no more come)",
                g.rises_judged,
                g.last_rise.unwrap_or(0)
            ),
        ),
        _ => return None,
    })
}

/// What the signal table's "per cycle" column means (the brief's table and the full one).
pub(crate) const PER_CYCLE_NOTE: &str = "per cycle: growth over the later half of the judged cycles";

/// What the full signal table's columns mean.
pub(crate) fn signal_table_note() -> String {
    format!(
        "{PER_CYCLE_NOTE}; verdicts in parentheses are raw signals shown for reference, the run is judged on the net \
         ones, after what RocksDB accounts for and the harness's own records"
    )
}

/// What the signal table alone does not say: the look judged, what a clean verdict rules out,
/// growth below the budget, memory kept once, cycles still needed. One line each, for the text
/// table and report.html.
pub(crate) fn notes(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(notice) = r.generations.notice.as_ref() {
        out.push(notice.clone());
    }
    let retained = r.signal(crate::signal::Signal::RetainedBytes);
    if let Some(ret) = retained.and_then(|s| s.retained.as_ref()) {
        out.extend(retained_notes(r, ret, retained.is_some_and(|s| s.verdict == Verdict::Clean && !s.informational)));
    }
    for u in &r.suppressions {
        out.push(u.line());
    }
    if let Some(j) = r.verdict.judged_at_cycles {
        out.push(format!("statistical verdicts as judged after {j} cycles (the last look so far)"));
    }
    if let Some(ro) = &r.verdict.rules_out {
        out.extend(rules_out_lines(r, ro));
    }
    if r.verdict.signals.iter().any(|e| e.growth_below_budget && !e.informational) {
        out.push("warning: \"clean (grows)\": growth below the budget at the last look, yet growth (the interval lies above zero)".to_string());
    }
    for e in r.verdict.signals.iter().filter(|e| !e.informational) {
        if let Some(ret) = e.retention {
            out.push(format!(
                "retention: {} shifted once by {} near cycle {}, followed by level data (memory kept once: a pool or cache \
                 filling, or a leak that happened once)",
                e.signal,
                fmt_num(Some(ret.size), e.class()),
                ret.at_cycle
            ));
        }
    }
    let handles_leak = r.verdict.signal(crate::signal::Signal::LiveHandles).is_some_and(|e| e.verdict == Verdict::Leak);
    if let (true, Some(q)) = (handles_leak, r.settings.handle_quiet_ms) {
        out.push(format!(
            "live_handles: retained handles were waited for until nothing in the process could release them for {q} ms; a \
             close deferred on a thread that existed before close and sleeps first needs --handle-quiet above its delay"
        ));
    }
    for e in r.verdict.signals.iter().filter(|e| e.verdict == Verdict::Inconclusive && !e.informational) {
        if let Some(n) = e.more_cycles_needed {
            out.push(format!("{}: inconclusive, about {n} more cycles needed", e.signal));
        }
    }
    out
}

/// The notes of the record of allocations: what the judged cycles hold, what a clean verdict
/// rules out (`judged_clean`), the counter's verdicts shown beside it, the largest sites.
fn retained_notes(r: &RunReport, ret: &crate::verdict::Retained, judged_clean: bool) -> Vec<String> {
    let mut out = Vec::new();
    out.push(retained_line(ret));
    if judged_clean {
        out.push(retained_rules_out(ret, &r.generations));
    }
    let undecided: Vec<String> = r
        .verdict
        .signals
        .iter()
        .filter(|s| s.informational && s.verdict == Verdict::Inconclusive)
        .filter(|s| {
            matches!(s.family(), crate::signal::Signal::UnexplainedBytes | crate::signal::Signal::BytesPerFiring)
        })
        .map(|s| s.signal.to_string())
        .collect();
    if !undecided.is_empty() {
        out.push(format!(
            "{}: undecided by the counter's growth rule, shown, not judged: retained_bytes recorded what the cycles allocated",
            undecided.join(", ")
        ));
    }
    for s in r.verdict.signals.iter().filter(|s| s.informational && s.verdict == Verdict::Leak) {
        if let (Some(h), Some(e)) = (s.record_holds.filter(|h| h.contradicts()), s.estimate) {
            out.push(format!(
                "{}: a leak by the counter's rule (at least {:.1} B {}), shown, not judged: cycles {}-{} held {} B \
                 before the store let go, the smallest leak the rule calls would have left {:.0} B there",
                s.signal,
                e.lower,
                if s.family() == crate::signal::Signal::BytesPerFiring { "per firing" } else { "per cycle" },
                h.from_cycle,
                h.to_cycle,
                h.bytes,
                h.leak_would_hold
            ));
        }
    }
    for site in ret.sites.iter().take(5) {
        out.push(site_line(site));
    }
    out
}

/// What a clean verdict rules out, and the part a filling block cache's rounding could hide.
fn rules_out_lines(r: &RunReport, ro: &crate::verdict::RulesOut) -> Vec<String> {
    let mut out = Vec::new();
    let growth = r.bytes_signal().and_then(|s| s.growth);
    out.push(format!(
        "clean: rules out a continuing leak above {}/cycle ({} per store instance): {} grew {} over cycles {}-{}, \
         against a budget of {} ({}){}",
        rate(ro.bytes_per_cycle),
        rate(ro.bytes_per_instance),
        ro.signal,
        growth.map_or("-".to_string(), |g| format!(
            "{} [{}, {}]",
            human_bytes(g.growth),
            human_bytes(g.lower),
            human_bytes(g.upper)
        )),
        ro.from_cycle,
        ro.to_cycle,
        human_bytes(ro.budget_bytes),
        match ro.budget_from {
            BudgetFrom::Total => "the total budget",
            BudgetFrom::Tolerance => "the tolerance per cycle times the span",
        },
        ro.upper_alpha.map_or(String::new(), |a| format!(", at confidence {}", confidence(a)))
    ));
    if ro.cache_rounding_bytes_per_cycle > 0.0 {
        out.push(format!(
            "       of which {}/cycle is what a filling block cache's rounding allowance could hide over those cycles",
            rate(ro.cache_rounding_bytes_per_cycle)
        ));
    }
    out
}

/// The run's totals: the leak rate, the return to baseline, why the byte signals could not be
/// trusted. One line each, for the text table and report.html.
pub(crate) fn totals_lines(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(rate) = &r.verdict.leak_rate {
        out.push(format!(
            "leak rate ({}): {} per cycle, {} per store instance ({} instances per cycle)",
            rate.signal,
            human_bytes(rate.bytes_per_cycle),
            human_bytes(rate.bytes_per_instance),
            rate.instances_per_cycle
        ));
    }
    if let Some(b) = &r.verdict.baseline_return {
        let allowed = b.tolerance_bytes.saturating_add(b.data_allowance_bytes).saturating_add(b.suppressed_bytes);
        let mut line = format!(
            "return to baseline: {}, {} {} allowed ({}{})",
            b.verdict,
            if b.verdict == Verdict::Leak { "beyond the" } else { "within" },
            human_bytes(allowed as f64),
            match (b.unexplained_delta_bytes, b.allocated_delta_bytes) {
                (Some(u), Some(a)) => format!("unexplained {u:+}, allocated {a:+}"),
                (None, Some(a)) => format!("allocated {a:+}"),
                _ => "bytes unreadable".to_string(),
            },
            // Only where a data directory was watched.
            match (b.fds_under_dir_delta, b.maps_under_dir_delta) {
                (Some(f), Some(m)) => format!(", fds under dir {f:+}, maps under dir {m:+}"),
                (Some(f), None) => format!(", fds under dir {f:+}"),
                (None, Some(m)) => format!(", maps under dir {m:+}"),
                (None, None) => String::new(),
            }
        );
        if b.verdict == Verdict::Clean && r.verdict.verdict == Verdict::Leak {
            // Clean here, a leak above: say why the two differ.
            let leaking = r.verdict.leaking_signals().iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ");
            let size = match r.verdict.leak_rate.as_ref().filter(|l| l.bytes_per_cycle > 0.0) {
                Some(l) => format!(
                    " ({}/cycle over {} cycles is {})",
                    rate(l.bytes_per_cycle),
                    r.cycles_run,
                    human_bytes(l.bytes_per_cycle * r.cycles_run as f64)
                ),
                None => String::new(),
            };
            line.push_str(&format!(
                "; a coarse check of the whole process against a fixed allowance, not the verdict: the leak found by \
                 {leaking}{size} fits inside it"
            ));
        }
        out.push(line);
    }
    out.extend(bytes_unavailable(r));
    out
}

/// Why the byte signals could not judge the run, when they could not: the last of the totals'
/// lines, and in the brief table too.
pub(crate) fn bytes_unavailable(r: &RunReport) -> Option<String> {
    r.verdict
        .bytes_unavailable
        .as_ref()
        .map(|why| format!("byte signals unavailable, so the run cannot be called clean: {why}"))
}

/// A confidence from its one-sided error rate: `95%`, or `1 - 8.7e-4` when the rate is small.
fn confidence(alpha: f64) -> String {
    if alpha >= 0.01 {
        format!("{:.0}%", 100.0 * (1.0 - alpha))
    } else {
        format!("1 - {alpha:.1e}")
    }
}
