//! A run in GitHub Actions' own terms: workflow commands that put each finding on the line that
//! leaked (`::error file=..,line=..::..`, `::warning` for a signal the run could not decide), and
//! the Markdown job summary appended to `$GITHUB_STEP_SUMMARY`.

use std::fmt::Write;
use std::path::Path;

use super::model::Finding;
use super::RunReport;
use crate::probe::stacks::Place;
use crate::verdict::Verdict;

/// The workflow commands of a run's findings, one line each: `::error` for a leak at its place
/// (the file relative to `root`, the repository's checkout, so that it lands on the diff),
/// `::warning` for a signal the run could not decide; then each suppression at its line in the
/// suppression file (`::notice` applied, `::warning` unused, `::error` exceeded).
pub(crate) fn annotations(report: &RunReport, root: &Path) -> String {
    let mut out = String::new();
    for f in report.findings() {
        let command = if f.verdict == Verdict::Leak { "error" } else { "warning" };
        let mut properties = Vec::new();
        if let Some(p) = &f.place {
            properties.push(format!("file={}", property(&p.relative_to(root).to_string_lossy())));
            properties.push(format!("line={}", p.line));
        }
        properties.push(format!("title={}", property(&format!("leakcheck: {}", f.signal))));
        let _ = writeln!(out, "::{command} {}::{}", properties.join(","), data(&f.message));
    }
    // Suppressions at their own lines: one that matched nothing (stale) or whose bound was
    // exceeded (its leak is an error above too) is worth a look; one that applied, a notice.
    for u in &report.suppressions {
        let command = match (u.unused(), u.exceeded) {
            (true, _) => "warning",
            (false, true) => "error",
            (false, false) => "notice",
        };
        let mut properties = Vec::new();
        if let Some(p) = Place::parse(&u.suppression.origin) {
            properties.push(format!("file={}", property(&p.relative_to(root).to_string_lossy())));
            properties.push(format!("line={}", p.line));
        }
        properties.push(format!("title={}", property("leakcheck: suppression")));
        let _ = writeln!(out, "::{command} {}::{}", properties.join(","), data(&u.line()));
    }
    out
}

/// A workflow command's message: `%`, CR and LF escaped.
fn data(s: &str) -> String {
    s.replace('%', "%25").replace('\r', "%0D").replace('\n', "%0A")
}

/// A workflow command's property value: as a message, and `:` and `,` too.
fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

/// The job summary: the verdict, what leaked and where (or what a clean run rules out), and how
/// to get the report. `report_dir` is where the report was written, when it was.
pub(crate) fn summary(report: &RunReport, root: &Path, report_dir: Option<&Path>) -> String {
    let mut out = String::new();
    let v = &report.verdict;
    let s = &report.settings;
    let findings = report.findings();
    let _ = writeln!(out, "## leakcheck {}: {}\n", s.command, v.verdict);
    let _ = writeln!(out, "{}\n", cell(&report.summary_of(&findings)));
    let _ = writeln!(
        out,
        "{}, {} cycles in {:.1} s, fault plan `{}` (seed {}).\n",
        cell(&s.store_info().to_string()),
        report.cycles_run,
        report.elapsed_seconds,
        if s.plan.is_empty() { "none" } else { &s.plan },
        s.seed
    );
    let (leaks, undecided): (Vec<&Finding>, Vec<&Finding>) = findings.iter().partition(|f| f.verdict == Verdict::Leak);
    if !leaks.is_empty() {
        let _ = writeln!(out, "### What leaked, and where\n");
        table(&mut out, &leaks, root);
    }
    if !undecided.is_empty() {
        let _ = writeln!(out, "### Undecided\n");
        table(&mut out, &undecided, root);
    }
    let unmeasured: Vec<_> = v.signals.iter().filter_map(|s| Some((s, s.not_measured?))).collect();
    if !unmeasured.is_empty() {
        let _ = writeln!(out, "### Not measured\n");
        let _ = writeln!(out, "Neither clean nor a leak: their source never reported.\n");
        for (s, why) in unmeasured {
            let _ = writeln!(out, "- `{}`: {}", s.signal, cell(why.reason()));
        }
        let _ = writeln!(out);
    }
    if let Some(b) = &report.baseline {
        let _ = writeln!(out, "### Against the baseline\n");
        for line in b.lines() {
            let _ = writeln!(out, "- {}", cell(&line));
        }
        let _ = writeln!(out);
    }
    if !report.suppressions.is_empty() {
        let _ = writeln!(out, "### Suppressions\n");
        for u in &report.suppressions {
            let _ = writeln!(out, "- {}", cell(&u.line()));
        }
        let _ = writeln!(out);
    }
    if v.verdict == Verdict::Clean {
        let _ = writeln!(out, "### What it rules out\n");
        let rules_out: Vec<String> = super::words::notes(report)
            .into_iter()
            .filter(|l| l.starts_with("clean: rules out") || l.starts_with("retained_bytes clean: rules out"))
            .collect();
        if rules_out.is_empty() {
            let _ = writeln!(out, "No judged signal found a leak.\n");
        }
        for line in rules_out {
            let _ = writeln!(out, "- {}", line.trim());
        }
        let _ = writeln!(out);
    }
    match report_dir {
        Some(dir) => {
            let _ = writeln!(
                out,
                "The report: `{}` (open `report.html` in a browser; `report.json` is the same as data).",
                dir.join(super::HTML_FILE).display()
            );
        }
        None => {
            let _ = writeln!(
                out,
                "For the full report (report.html, plots, report.json), run again with `--report DIR` and keep `DIR` as an artifact."
            );
        }
    }
    out
}

/// The findings as a Markdown table: what, where.
fn table(out: &mut String, findings: &[&Finding], root: &Path) {
    let _ = writeln!(out, "| signal | what | where |\n| --- | --- | --- |");
    for f in findings {
        let place =
            f.place.as_ref().map_or("-".to_string(), |p| format!("`{}:{}`", p.relative_to(root).display(), p.line));
        let _ = writeln!(out, "| `{}` | {} | {} |", f.signal, cell(&f.message), place);
    }
    let _ = writeln!(out);
}

/// Text for a Markdown table cell: `|` escaped, no line breaks, and Markdown's own characters
/// that would change what it says (`*`, `_`, `<`) escaped.
fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '*' | '_' | '<' | '>' | '`' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_text_is_escaped() {
        assert_eq!(data("50% of\nit"), "50%25 of%0Ait");
        assert_eq!(property("a:b,c"), "a%3Ab%2Cc");
    }

    #[test]
    fn table_cells_keep_their_text() {
        assert_eq!(cell("<impl a|b>::f_x\n"), "\\<impl a\\|b\\>::f\\_x ");
    }
}
