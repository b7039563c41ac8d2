//! The verdict table `check` prints.

use std::fmt::Write;

use crate::report::RunReport;
use crate::Verdict;

/// `--profile N` at or below which check's text says the bytes read low: on a planted 4 KiB per
/// cycle leak the allocated slope was 5.1 KiB per cycle unprofiled, 5.2 at 2^19, 4.2 at 2^14 and
/// 2.7 at 2^12 (README, heap profiles). Why jemalloc's counters move so is not established.
const SAMPLING_BIAS_LG: u32 = 16;

/// `1.5 KiB`, `3.2 MiB`, `12 B`.
pub(crate) fn human_bytes(v: f64) -> String {
    let a = v.abs();
    if a >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", v / (1024.0 * 1024.0))
    } else if a >= 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else {
        format!("{v:.0} B")
    }
}

fn fmt_num(v: Option<f64>, unit: &str) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if unit == "B" => human_bytes(v),
        Some(v) => format!("{v:.2}"),
    }
}

/// The table of `report`, as `check` prints it.
pub(crate) fn table(r: &RunReport) -> String {
    let mut out = String::new();
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
    let _ = writeln!(out, "fault plan: {} (seed {}), tracking: {}", if s.plan.is_empty() { "none" } else { &s.plan }, s.seed, s.tracking);
    let c = &r.cycles_summary;
    let mut cycles = format!("cycles with errors: open {}, work {}, close {}; panics {}", c.open_errors, c.work_errors, c.close_errors, c.panics);
    // The store's own counts, where it keeps them (a window store's late records).
    for (name, n) in c.counts.iter().filter(|(_, n)| **n > 0) {
        let _ = write!(cycles, "; {} {n}", name.replace('_', " "));
    }
    let _ = writeln!(out, "{cycles}");
    let _ = writeln!(out);
    let _ = writeln!(out, "{:<32} {:<10} {:<14} {:>12} {:>26}", "signal", "class", "verdict", "per cycle", "interval / residue");
    for e in &r.signals {
        let verdict = match (e.informational, e.growth_below_tolerance) {
            (true, _) => format!("({})", e.verdict),
            (false, true) => format!("{} (grows)", e.verdict),
            (false, false) => e.verdict.to_string(),
        };
        let (per_cycle, detail) = if e.kind == "exact" {
            ("-".to_string(), format!("residue {}", fmt_num(e.max_residue, &e.unit)))
        } else {
            (
                fmt_num(e.slope_per_cycle, &e.unit),
                format!("[{}, {}]", fmt_num(e.lower, &e.unit), fmt_num(e.upper, &e.unit)),
            )
        };
        let _ = writeln!(out, "{:<32} {:<10} {:<14} {:>12} {:>26}", e.name, e.class, verdict, per_cycle, detail);
    }
    let _ = writeln!(out, "(verdicts in parentheses are raw signals shown for reference; the run is judged on the net ones, after\n what RocksDB accounts for and the harness's own records)");
    if r.signals.iter().any(|e| e.growth_below_tolerance && !e.informational) {
        let _ = writeln!(out, "warning: \"clean (grows)\": growth below the tolerance, yet growth (the interval lies above zero)");
    }
    for e in r.signals.iter().filter(|e| !e.informational) {
        if let (Some(at), Some(size)) = (e.step_at_cycle, e.step_size) {
            let _ = writeln!(
        out,
                "retention: {} shifted once by {} at cycle {at}, left out of the slope (memory kept once: a pool or cache \
                 filling, or a leak that happened once)",
                e.name,
                fmt_num(Some(size), &e.unit)
            );
        }
    }
    for e in r.signals.iter().filter(|e| e.verdict == Verdict::Inconclusive && !e.informational) {
        if let Some(n) = e.more_cycles_needed {
            let _ = writeln!(out, "{}: inconclusive, about {n} more cycles needed", e.name);
        }
    }
    if let Some(lg) = r.settings.profile_lg_sample.filter(|lg| *lg <= SAMPLING_BIAS_LG) {
        let _ = writeln!(
            out,
            "\nnote: sampling at 2^{lg} bytes reads the byte signals low (a planted 4 KiB per cycle leak: allocated slope \
             2.7 KiB at 2^12, 4.2 KiB at 2^14, 5.1 KiB unprofiled); judge leaks on a run without --profile"
        );
    }
    if !r.heap_growth.is_empty() {
        let _ = writeln!(out, "\nheap growth by call stack (jemalloc's heap profile, after the warm-up to the end;");
        let _ = writeln!(out, "unexplained per cycle, estimate and 95% lower bound from the samples; a block cache's fill explained):");
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
    if let Some(rate) = &r.leak_rate {
        let _ = writeln!(
        out,
            "\nleak rate ({}): {} per cycle, {} per store instance ({} instances per cycle)",
            rate.signal,
            human_bytes(rate.bytes_per_cycle),
            human_bytes(rate.bytes_per_instance),
            rate.instances_per_cycle
        );
    }
    if let Some(b) = &r.baseline_return {
        let _ = writeln!(
        out,
            "return to baseline: {} ({}, fds under dir {:+}, maps under dir {:+})",
            b.verdict,
            match (b.unexplained_delta_bytes, b.allocated_delta_bytes) {
                (Some(u), Some(a)) => format!("unexplained {u:+}, allocated {a:+}"),
                (None, Some(a)) => format!("allocated {a:+}"),
                _ => "bytes unreadable".to_string(),
            },
            b.fds_under_dir_delta.unwrap_or(0),
            b.maps_under_dir_delta.unwrap_or(0)
        );
    }
    if let Some(why) = &r.bytes_unavailable {
        let _ = writeln!(out, "\nbyte signals unavailable, so the run cannot be called clean: {why}");
    }
    if !r.ledger.is_clean() {
        let _ = writeln!(out, "\n{}", r.ledger);
    } else if r.signal(crate::Signal::DeclaredSharedGrowth).is_some_and(|e| e.verdict == Verdict::Leak) {
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
    for p in &r.cycles_summary.integrity_problems {
        let _ = writeln!(out, "integrity: {p}");
    }
    let _ = writeln!(out, "\nverdict: {}{}", r.verdict, if r.verdict == Verdict::Inconclusive { " (run more cycles)" } else { "" });
    out
}
