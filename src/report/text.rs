//! The verdict table `check` prints.

use std::fmt::Write;

use super::words::{bytes_unavailable, notes, signal_cells, signal_table_note, totals_lines, PER_CYCLE_NOTE};
use crate::report::RunReport;
use crate::units::human_bytes;
use crate::verdict::Verdict;

/// `--profile N` at or below which check's text says the bytes read low: on a planted 4 KiB per
/// cycle leak the allocated slope was 5.1 KiB per cycle unprofiled, 5.2 at 2^19, 4.2 at 2^14 and
/// 2.7 at 2^12 (docs/guide.md, heap profiles). Why jemalloc's counters move so is not established.
const SAMPLING_BIAS_LG: u32 = 16;

/// The whole table of `report`: every signal, raw ones too, and the totals (`check --verbose`,
/// and a failed assertion's message).
pub(crate) fn table(r: &RunReport) -> String {
    render(r, true)
}

/// What `check` prints by default: the summary, the findings, the judged signals with their
/// notes, and the verdict. The raw signals shown for reference and the totals are in
/// [`table`].
pub(crate) fn brief(r: &RunReport) -> String {
    render(r, false)
}

fn render(r: &RunReport, every_signal: bool) -> String {
    let mut out = String::new();
    let findings = r.findings();
    let _ = writeln!(out, "{}", r.summary_of(&findings));
    what_leaked(&mut out, &findings);
    header(&mut out, r);
    signal_rows(&mut out, r, every_signal);
    signal_notes(&mut out, r);
    heap_section(&mut out, r);
    if every_signal {
        totals(&mut out, r);
    } else if let Some(line) = bytes_unavailable(r) {
        let _ = writeln!(out, "\n{line}");
    }
    ledger_section(&mut out, r);
    if let Some(b) = &r.baseline {
        let _ = writeln!(out);
        for line in b.lines() {
            let _ = writeln!(out, "{line}");
        }
    }
    for p in &r.cycles_summary.integrity_problems {
        let _ = writeln!(out, "integrity: {p}");
    }
    let _ = writeln!(
        out,
        "\nverdict: {}{}",
        r.verdict.verdict,
        match (r.verdict.verdict, r.baseline.as_ref().map(|b| b.passes())) {
            (Verdict::Inconclusive, _) => " (run more cycles)",
            (Verdict::Leak, Some(true)) => " (none beyond the baseline: passes)",
            (Verdict::Leak, Some(false)) => " (beyond the baseline)",
            _ => "",
        }
    );
    out
}

/// After the summary (which names the first), every finding that leaked, when there are several:
/// what a reader acts on.
fn what_leaked(out: &mut String, findings: &[crate::report::Finding]) {
    const SHOWN: usize = 5;
    let leaks: Vec<_> = findings.iter().filter(|f| f.verdict == Verdict::Leak).collect();
    if leaks.len() < 2 {
        let _ = writeln!(out);
        return;
    }
    for f in leaks.iter().take(SHOWN) {
        let _ = writeln!(out, "leak: {}", f.message);
    }
    if leaks.len() > SHOWN {
        let _ = writeln!(out, "leak: and {} more, below", leaks.len() - SHOWN);
    }
    let _ = writeln!(out);
}

fn header(out: &mut String, r: &RunReport) {
    let s = &r.settings;
    let _ = writeln!(
        out,
        "leakcheck {}: {}, {} cycles in {:.1} s{}{}",
        s.command,
        s.store_info(),
        r.cycles_run,
        r.elapsed_seconds,
        if r.cycles_run > s.cycles {
            format!(" ({} asked; went on while the verdict was inconclusive)", s.cycles)
        } else {
            String::new()
        },
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if let Some(stopped) = &r.stopped {
        let more = if matches!(stopped, crate::harness::Stopped::ExactLeak { .. }) {
            " (--all-cycles runs them all)"
        } else {
            ""
        };
        let _ = writeln!(out, "{stopped}{more}");
    }
    let _ = writeln!(
        out,
        "fault plan: {} (seed {}), tracking: {}",
        if s.plan.is_empty() { "none" } else { &s.plan },
        s.seed,
        s.tracking
    );
    let c = &r.cycles_summary;
    let mut cycles = format!(
        "cycles with errors: open {}, work {}, close {}; panics {}",
        c.open_errors, c.work_errors, c.close_errors, c.panics
    );
    // The store's own counts, where it keeps them (a window store's late records).
    for (name, n) in c.counts.iter().filter(|(_, n)| **n > 0) {
        let _ = write!(cycles, "; {} {n}", name.replace('_', " "));
    }
    let _ = writeln!(out, "{cycles}");
    let _ = writeln!(out);
}

fn signal_rows(out: &mut String, r: &RunReport, every_signal: bool) {
    let _ = writeln!(
        out,
        "{:<32} {:<10} {:<14} {:>12} {:>26}",
        "signal", "class", "verdict", "per cycle", "interval / residue"
    );
    for e in r.verdict.signals.iter().filter(|e| every_signal || !e.informational) {
        let [verdict, per_cycle, detail] = signal_cells(e);
        let _ = writeln!(
            out,
            "{:<32} {:<10} {:<14} {:>12} {:>26}",
            e.signal.to_string(),
            e.class(),
            verdict,
            per_cycle,
            detail
        );
    }
    if every_signal {
        // Broken where the terminal table's width ends.
        let _ = writeln!(out, "({})", signal_table_note().replacen(" for reference", "\n for reference", 1));
    } else {
        let raw = r.verdict.signals.iter().filter(|e| e.informational).count();
        let _ = writeln!(
            out,
            "(the judged signals; {PER_CYCLE_NOTE}. {raw} raw signals shown for reference and the totals: --verbose, or \
             report.html with --report DIR)"
        );
    }
}

fn signal_notes(out: &mut String, r: &RunReport) {
    for line in notes(r) {
        let _ = writeln!(out, "{line}");
    }
}

fn heap_section(out: &mut String, r: &RunReport) {
    if let Some(lg) = r.settings.profile_lg_sample.filter(|lg| *lg <= SAMPLING_BIAS_LG) {
        let _ = writeln!(
            out,
            "\nnote: sampling at 2^{lg} bytes reads the byte signals low (a planted 4 KiB per cycle leak: allocated slope \
             2.7 KiB at 2^12, 4.2 KiB at 2^14, 5.1 KiB unprofiled); judge leaks on a run without --profile"
        );
    }
    if !r.heap_growth.is_empty() {
        let _ = writeln!(out, "\nheap growth by call stack (jemalloc's heap profile, after the warm-up to the end;");
        let _ = writeln!(
            out,
            "unexplained per cycle, estimate and 95% lower bound from the samples; a block cache's fill explained):"
        );
        for g in r.heap_growth.iter().take(5) {
            let explained = if g.explained_bytes_per_cycle > 0.0 {
                format!(" (and {} a filling block cache explains)", human_bytes(g.explained_bytes_per_cycle))
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "  {:>10} (>= {:>10}) {:>4} samples  {}{explained}",
                human_bytes(g.unexplained_bytes_per_cycle()),
                human_bytes(g.unexplained_lower_bytes_per_cycle()),
                g.objects,
                crate::probe::stacks::headline(&g.frames, 100)
            );
        }
        if !r.heap_growth_by_function.is_empty() {
            let _ = writeln!(out, "summed per function of your code (every stack through it):");
            for f in r.heap_growth_by_function.iter().take(5) {
                let _ = writeln!(
                    out,
                    "  {:>10} (>= {:>10}) {:>4} samples  {:>3} stacks  {}",
                    human_bytes(f.unexplained_bytes_per_cycle()),
                    human_bytes(f.unexplained_lower_bytes_per_cycle),
                    f.objects,
                    f.stacks,
                    f.function
                );
            }
        }
    }
}

fn totals(out: &mut String, r: &RunReport) {
    let lines = totals_lines(r);
    if !lines.is_empty() {
        let _ = writeln!(out);
    }
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
}

fn ledger_section(out: &mut String, r: &RunReport) {
    if !r.ledger.is_clean() {
        let _ = writeln!(out, "\n{}", r.ledger);
    } else if r.signal(crate::signal::Signal::DeclaredSharedGrowth).is_some_and(|e| e.verdict == Verdict::Leak) {
        // The shared set grew: where its handles were declared, most first (the growing line has
        // a count that rises with the cycles).
        let mut groups: Vec<_> = r.ledger.declared_shared.iter().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(g.count));
        let _ = writeln!(out, "\nthe declared-shared set grew during the run; declared shared now:");
        for g in groups {
            let _ = writeln!(
                out,
                "  {:>5} x {:<22} {:<40} {}",
                g.count,
                g.kind,
                g.site.as_deref().unwrap_or("(unknown: counts depth)"),
                g.owner.as_deref().unwrap_or("-")
            );
        }
    }
}
