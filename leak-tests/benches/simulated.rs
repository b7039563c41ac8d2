//! The growth rule on simulated allocation histories, at scale: how often it calls a clean
//! mixture a leak once its bound shows (and how often a bound beyond the planned end makes it the
//! "still growing" leak), how often a leak is found by the power table's cycle, what stays open at
//! the end, how often the stress cases (between clean and leaking) are called a leak, and the
//! power table itself, measured. `cargo bench -p leak-tests --bench simulated [-- HISTORIES]` (default
//! 100,000 of each). docs/verdict.md quotes its output.

use std::time::Instant;

use leak_tests::simulate::{
    first_look_at_or_after, mixture, run, stress, Firing, Mixture, Pattern, SiteSpec, Stop, MAX_CYCLES, STRESS, WARMUP,
};
use leakcheck::workspace::age;

fn main() {
    let n: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(100_000);
    let started = Instant::now();

    // Clean mixtures: every look to the last (a soak), and as check decides (from cycle 200).
    let (mut false_leaks, mut still_growing, mut open_end) = (0u64, 0u64, 0u64);
    let mut reasons = std::collections::BTreeMap::<&str, u64>::new();
    let mut decided = Vec::new();
    for seed in 0..n {
        let m = mixture(seed, false);
        let o = run(&m, Stop::Never);
        false_leaks += u64::from(o.leak_at.is_some() && !o.still_growing);
        still_growing += u64::from(o.still_growing);
        if o.open_at_end {
            open_end += 1;
            *reasons.entry(o.open_reason.unwrap_or("?")).or_default() += 1;
        }
        if let Some(at) = run(&m, Stop::Decided(200)).clean_at {
            decided.push(at);
        }
    }
    decided.sort_unstable();
    let q = |v: &[u64], f: f64| v.get(((v.len() as f64 - 1.0) * f) as usize).copied().unwrap_or(0);
    println!("clean mixtures: {n}");
    println!(
        "  called a leak at any look to cycle {MAX_CYCLES} once their bound showed: {false_leaks} ({:.3}%)",
        100.0 * false_leaks as f64 / n as f64
    );
    println!(
        "  called still growing (a container or a consumer whose bound lies past the look): {still_growing} ({:.2}%)",
        100.0 * still_growing as f64 / n as f64
    );
    println!("  open at the end (inconclusive): {open_end} ({:.1}%): {reasons:?}", 100.0 * open_end as f64 / n as f64);
    println!(
        "  decided clean from cycle 200: {} of them, at cycles median {} p90 {} p99 {} max {}",
        decided.len(),
        q(&decided, 0.5),
        q(&decided, 0.9),
        q(&decided, 0.99),
        decided.last().copied().unwrap_or(0)
    );

    // Leaking mixtures: found by the table's cycle (at the rule's power)?
    let (mut due_in_run, mut found, mut late, mut missed) = (0u64, 0u64, 0u64, 0u64);
    for seed in 0..n {
        let m = mixture(seed, true);
        let due = m.found_by(age::POWER).unwrap_or(u64::MAX);
        if due > MAX_CYCLES {
            continue;
        }
        due_in_run += 1;
        match run(&m, Stop::Never).leak_at {
            Some(at) if at <= due => found += 1,
            Some(_) => late += 1,
            None => missed += 1,
        }
    }
    println!("leaking mixtures: {n}, of which {due_in_run} have a leak the table says is found by cycle {MAX_CYCLES}");
    println!(
        "  found by the table's cycle: {found} ({:.3}%), later: {late}, not by {MAX_CYCLES}: {missed}",
        100.0 * found as f64 / due_in_run.max(1) as f64
    );

    println!("stress cases: {n} each");
    for (k, name) in STRESS.iter().enumerate() {
        let leaks = (0..n).filter(|&s| run(&stress(k, s), Stop::Never).leak_at.is_some()).count();
        println!("  {name}: called a leak in {leaks} ({:.2}%)", 100.0 * leaks as f64 / n as f64);
    }

    // The power table: a leak alone at its site, every block stacked, from the first judged cycle;
    // the rule's own cycle (looks every 10 from cycle 30), and check's first planned end at or after
    // it (no statistical leak is called before 200).
    println!("power table (a leak at a site that gives nothing back, from cycle {WARMUP}, every firing stacked):");
    println!("  {:>12} {:>14} {:>16} {:>12} {:>16}", "rate", "table: cycle", "found by it", "p99 found", "check's end");
    let per_rate = (n / 10).max(1000);
    for p in [1.0, 0.5, 0.25, 0.1, 0.05, 0.02, 0.01] {
        let table = WARMUP + age::cycles_to_find(p) + 1;
        let mut at: Vec<u64> = (0..per_rate)
            .map(|seed| {
                let m = Mixture {
                    sites: vec![SiteSpec {
                        patterns: vec![Pattern::Leak { fires: Firing::Rate { p, from: 0 } }],
                        stacked: 1.0,
                        class: 0,
                    }],
                    seed,
                };
                run(&m, Stop::From(30)).leak_at.unwrap_or(u64::MAX)
            })
            .collect();
        at.sort_unstable();
        // Found by the table's cycle (the next look after it), or by the run's last when the table
        // says later.
        let by_cycle = (30 + table.saturating_sub(30).div_ceil(10) * 10).min(MAX_CYCLES);
        let by = at.iter().filter(|&&c| c <= by_cycle).count();
        let p99 = q(&at, 0.99);
        println!(
            "  {:>12} {:>14} {:>15.2}% {:>12} {:>16}",
            format!("1 in {}", (1.0 / p).round()),
            if table > MAX_CYCLES { format!("{table} (run: {MAX_CYCLES})") } else { table.to_string() },
            100.0 * by as f64 / per_rate as f64,
            if p99 == u64::MAX { format!("> {MAX_CYCLES}") } else { p99.to_string() },
            first_look_at_or_after(table)
        );
    }
    println!("{:.1} s", started.elapsed().as_secs_f64());
}
