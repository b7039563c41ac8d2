//! report.html: one self-contained page per report directory (no network: styles, plots and the
//! hover script are inline, so the page opens offline from a CI artifact). It shows what the
//! text table shows, from the same functions, plus the plots with hoverable values, the retained
//! handles with their holders, the per-fault-point attribution and the heap growth.
//!
//! The page is written with report.json and as atomically, so a run killed at any moment leaves
//! a page of the cycles so far.

use std::fmt::Write;

use super::words;
use crate::ledger::HandleGroup;
use crate::signal::Signal;
use crate::units::{escape_markup as esc, human_bytes};
use crate::verdict::Verdict;

use super::plot::Plot;
use super::{Comparison, RunReport};

/// The page's file name in a report directory.
pub const HTML_FILE: &str = "report.html";

const STYLE: &str = r##"
body { font-family: system-ui, "DejaVu Sans", Arial, sans-serif; margin: 0 auto; max-width: 1200px; padding: 0 20px 40px; color: #222; }
h1 { font-size: 22px; margin: 18px 0 6px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #ddd; padding-bottom: 4px; }
p.sub, .note { color: #555; font-size: 13px; }
.verdict { display: inline-block; padding: 2px 10px; border-radius: 4px; color: white; font-weight: bold; }
.verdict.clean { background: #2c7a2c; } .verdict.leak { background: #b22222; } .verdict.inconclusive { background: #b8860b; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.leak td { background: #fdecec; } tr.inconclusive td { background: #fdf7e3; }
tr.informational td { color: #777; } tr.unmeasured td { color: #777; font-style: italic; }
code, .site { font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
ul.lines li { margin: 3px 0; }
.plot { position: relative; }
.plot svg { max-width: 100%; height: auto; }
#lc-tip { position: absolute; display: none; pointer-events: none; background: rgba(255,255,255,0.95); border: 1px solid #888; border-radius: 3px; padding: 4px 8px; font-size: 12px; white-space: nowrap; }
.flame { border: 1px solid #ddd; }
"##;

/// Shows the values under the pointer: for the panel under it, the cycle and each series' value
/// at the nearest sampled cycle, and a vertical line there. Reads the panels' `data-plot`.
const SCRIPT: &str = r##"
(function () {
  function human(v, unit) {
    if (unit !== "bytes") return (Math.round(v * 100) / 100).toString();
    var a = Math.abs(v), units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (a >= 1024 && i < units.length - 1) { a /= 1024; v /= 1024; i++; }
    return (i === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[i];
  }
  function nearest(points, x) {
    var lo = 0, hi = points.length - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (points[mid][0] < x) lo = mid; else hi = mid; }
    return Math.abs(points[lo][0] - x) <= Math.abs(points[hi][0] - x) ? points[lo] : points[hi];
  }
  var tip = document.getElementById("lc-tip");
  document.querySelectorAll(".plot svg").forEach(function (svg) {
    var panels = Array.prototype.map.call(svg.querySelectorAll("rect.lc-hover"), function (r) {
      var line = document.createElementNS("http://www.w3.org/2000/svg", "line");
      line.setAttribute("stroke", "#555"); line.setAttribute("stroke-dasharray", "3,3"); line.style.display = "none";
      svg.appendChild(line);
      return { data: JSON.parse(r.getAttribute("data-plot")), line: line };
    });
    svg.addEventListener("mousemove", function (ev) {
      var m = svg.getScreenCTM(); if (!m) return;
      var pt = svg.createSVGPoint(); pt.x = ev.clientX; pt.y = ev.clientY; pt = pt.matrixTransform(m.inverse());
      var shown = false;
      panels.forEach(function (p) {
        var a = p.data.area, d = p.data;
        var inside = pt.x >= a[0] && pt.x <= a[1] && pt.y >= a[2] && pt.y <= a[3] && d.series.length > 0;
        p.line.style.display = "none";
        if (!inside) return;
        var x = d.x[0] + (pt.x - a[0]) / (a[1] - a[0]) * (d.x[1] - d.x[0]);
        var rows = [], cycle = null;
        d.series.forEach(function (s) {
          var q = nearest(s.points, x); if (cycle === null) cycle = q[0];
          rows.push('<span style="color:' + s.color + '">\u25a0</span> ' + s.name + ": " + human(q[1], d.unit));
        });
        var px = a[0] + (cycle - d.x[0]) / (d.x[1] - d.x[0]) * (a[1] - a[0]);
        p.line.setAttribute("x1", px); p.line.setAttribute("x2", px);
        p.line.setAttribute("y1", a[2]); p.line.setAttribute("y2", a[3]); p.line.style.display = "";
        tip.innerHTML = "cycle " + cycle + "<br>" + rows.join("<br>");
        var box = svg.parentNode.getBoundingClientRect();
        tip.style.left = (ev.clientX - box.left + 14) + "px"; tip.style.top = (ev.clientY - box.top + 14) + "px";
        shown = true;
      });
      tip.style.display = shown ? "block" : "none";
    });
    svg.addEventListener("mouseleave", function () {
      tip.style.display = "none"; panels.forEach(function (p) { p.line.style.display = "none"; });
    });
  });
})();
"##;

/// A page under construction: sections of headings, paragraphs and tables, every text escaped
/// on the way in.
struct Page {
    out: String,
}

impl Page {
    fn new(title: &str) -> Self {
        let mut out = String::new();
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
            esc(title)
        );
        Page { out }
    }

    fn section(&mut self, id: &str, title: &str) {
        let _ = writeln!(self.out, "<h2 id=\"{id}\">{}</h2>", esc(title));
    }

    fn para(&mut self, class: &str, text: &str) {
        let _ = writeln!(self.out, "<p class=\"{class}\">{}</p>", esc(text));
    }

    fn lines(&mut self, lines: &[String]) {
        if lines.is_empty() {
            return;
        }
        self.out.push_str("<ul class=\"lines\">\n");
        for l in lines {
            let _ = writeln!(self.out, "<li>{}</li>", esc(l.trim()));
        }
        self.out.push_str("</ul>\n");
    }

    /// A table; a cell starting with a digit, a sign or `[` is right-aligned as a number.
    fn table(&mut self, id: &str, headers: &[&str], rows: &[Row]) {
        let _ = writeln!(self.out, "<table id=\"{id}\">\n<tr>");
        for h in headers {
            let _ = write!(self.out, "<th>{}</th>", esc(h));
        }
        self.out.push_str("</tr>\n");
        for row in rows {
            let _ = write!(self.out, "<tr class=\"{}\">", row.class);
            for c in &row.cells {
                let numeric = c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '+' || ch == '[')
                    && c.len() > 1
                    || c.chars().all(|ch| ch.is_ascii_digit());
                let class = if numeric { " class=\"num\"" } else { "" };
                let _ = write!(self.out, "<td{class}>{}</td>", esc(c));
            }
            self.out.push_str("</tr>\n");
        }
        self.out.push_str("</table>\n");
    }

    /// The plots' SVG (escaped where it was drawn), each in its box for the hover script.
    fn plots(&mut self, plots: &[Plot], samples: u64) {
        if plots.is_empty() {
            let text = format!(
                "Not plotted: {samples} sample{} (the plots need {} or more).",
                if samples == 1 { "" } else { "s" },
                super::plot::MIN_PLOT_POINTS
            );
            self.para("note", &text);
            return;
        }
        self.para("note", "Hover over a panel for the values at a cycle.");
        for p in plots {
            let _ = writeln!(self.out, "<div class=\"plot\" data-file=\"{}\">", esc(&p.file_name));
            self.out.push_str(&p.svg);
            self.out.push_str("</div>\n");
        }
    }

    fn finish(mut self) -> String {
        let _ = write!(self.out, "<div id=\"lc-tip\"></div>\n<script>{SCRIPT}</script>\n</body>\n</html>\n");
        self.out
    }
}

/// A table row: its cells and a class (`leak`, `inconclusive`, `informational` or none).
struct Row {
    class: &'static str,
    cells: Vec<String>,
}

impl Row {
    fn new(cells: Vec<String>) -> Self {
        Row { class: "", cells }
    }
}

fn verdict_class(v: Verdict) -> &'static str {
    match v {
        Verdict::Clean => "clean",
        Verdict::Leak => "leak",
        Verdict::Inconclusive => "inconclusive",
        Verdict::NotMeasured => "unmeasured",
    }
}

/// Where the run stands: finished, still running (an interim page) or interrupted.
fn status(r: &RunReport) -> String {
    let state = if r.interrupted {
        "interrupted"
    } else if r.complete {
        "finished"
    } else {
        "in progress (this page is rewritten as the run goes)"
    };
    let stopped = r.stopped.as_ref().map_or(String::new(), |s| format!("; {s}"));
    format!(
        "{} cycles in {:.1} s, {:.2} ms per cycle; {state}{stopped}",
        r.cycles_run, r.elapsed_seconds, r.ms_per_cycle
    )
}

/// The page of one run: `plots` are its plots' SVG (as written beside it); `flame` the heap
/// growth's flame graph when profiled.
pub(crate) fn report_html(r: &RunReport, plots: &[Plot], flame: Option<&str>, samples: usize) -> String {
    let s = &r.settings;
    let mut page = Page::new(&format!("leakcheck {}: {} ({})", s.command, r.verdict.verdict, s.store_info()));
    let _ = writeln!(
        page.out,
        "<h1>leakcheck {}: <span id=\"verdict\" class=\"verdict {}\">{}</span></h1>",
        esc(&s.command),
        verdict_class(r.verdict.verdict),
        r.verdict.verdict
    );
    page.para("sub", &format!("{}; {}", s.store_info(), status(r)));
    verdict_section(&mut page, r);
    page.section("signals", "Signals");
    signal_table(&mut page, r);
    page.para("note", &words::signal_table_note());
    page.section("plots", "Plots");
    page.plots(plots, samples as u64);
    handles_section(&mut page, r);
    faults_section(&mut page, r);
    integrity_section(&mut page, r);
    heap_section(&mut page, r, flame);
    settings_section(&mut page, r);
    page.finish()
}

fn verdict_section(page: &mut Page, r: &RunReport) {
    page.section("summary", "Verdict");
    // What leaked and where first: the findings with a place (a creating line, a stack) lead, the
    // signals that only counted come after them.
    let findings = r.findings();
    let leaks: Vec<_> = findings.iter().filter(|f| f.verdict == Verdict::Leak).collect();
    let headline = r.summary_of(&findings);
    let _ = writeln!(page.out, "<p id=\"headline\"><strong>{}</strong></p>", esc(&headline));
    if leaks.len() > 1 {
        let what: Vec<String> = leaks.iter().skip(1).map(|f| format!("{}: {}", f.signal, f.message)).collect();
        page.lines(&what);
    }
    let mut lines = words::notes(r);
    lines.extend(words::totals_lines(r));
    page.lines(&lines);
}

fn signal_table(page: &mut Page, r: &RunReport) {
    let rows: Vec<Row> = r
        .verdict
        .signals
        .iter()
        .map(|e| {
            let [verdict, per_cycle, detail] = words::signal_cells(e);
            let class = if e.informational { "informational" } else { verdict_class(e.verdict) };
            Row { class, cells: vec![e.signal.to_string(), e.class().to_string(), verdict, per_cycle, detail] }
        })
        .collect();
    page.table("signal-table", &["signal", "class", "verdict", "per cycle", "interval / residue"], &rows);
}

/// Groups shown in a table at most: the page stays a page however many owners a leak spread
/// over (report.json has every group).
const MAX_GROUP_ROWS: usize = 500;

fn group_rows(groups: &[HandleGroup]) -> Vec<Row> {
    groups
        .iter()
        .take(MAX_GROUP_ROWS)
        .map(|g| {
            Row::new(vec![
                g.kind.to_string(),
                g.count.to_string(),
                g.site.clone().unwrap_or_else(|| "(unknown: counts depth)".to_string()),
                g.owner.clone().unwrap_or_else(|| "-".to_string()),
                if g.held_by.is_empty() {
                    if g.wrapper_dropped { "(wrapper dropped)" } else { "-" }.to_string()
                } else {
                    g.held_by.join("; ")
                },
                g.holds.join("; "),
            ])
        })
        .collect()
}

/// The groups summed by kind and creation site, the most first: where to look, before whose.
fn by_site(groups: &[HandleGroup]) -> Vec<Row> {
    let mut sums: std::collections::BTreeMap<(String, String), (u64, std::collections::BTreeSet<&str>)> =
        std::collections::BTreeMap::new();
    for g in groups {
        let site = g.site.clone().unwrap_or_else(|| "(unknown: counts depth)".to_string());
        let e = sums.entry((g.kind.to_string(), site)).or_default();
        e.0 += g.count;
        e.1.insert(g.owner.as_deref().unwrap_or("-"));
    }
    let mut rows: Vec<_> = sums.into_iter().collect();
    rows.sort_by_key(|(_, (count, _))| std::cmp::Reverse(*count));
    rows.into_iter()
        .map(|((kind, site), (count, owners))| {
            let shown: Vec<&str> = owners.iter().take(3).copied().collect();
            let more = owners.len().saturating_sub(shown.len());
            let owners = if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") };
            Row::new(vec![kind, count.to_string(), site, owners])
        })
        .collect()
}

fn handles_section(page: &mut Page, r: &RunReport) {
    const HEADERS: [&str; 6] = ["kind", "count", "created at", "owner", "held by", "holds"];
    let l = &r.ledger;
    page.section("handles", "Handles");
    if l.retained.is_empty() {
        page.para("", "No handle retained after the last close.");
    } else {
        page.para("", &format!("{} handles retained after the last close (not declared shared):", l.retained_count()));
        page.table("retained-sites", &["kind", "count", "created at", "owners"], &by_site(&l.retained));
        let rows = group_rows(&l.retained);
        let _ = writeln!(
            page.out,
            "<details{}><summary>by owner and holders ({} groups)</summary>",
            if rows.len() <= 12 { " open" } else { "" },
            l.retained.len()
        );
        page.table("retained", &HEADERS, &rows);
        if l.retained.len() > rows.len() {
            page.para(
                "note",
                &format!("The first {} groups of {}; report.json has all.", rows.len(), l.retained.len()),
            );
        }
        page.out.push_str("</details>\n");
        if let Some(bt) = l.retained.iter().find_map(|g| g.backtrace.as_ref()) {
            let _ = writeln!(
                page.out,
                "<details><summary>creation backtrace of the first group</summary><pre>{}</pre></details>",
                esc(bt)
            );
        }
    }
    if !l.swallowed_close_errors.is_empty() {
        page.para("", "Close errors dropped unseen:");
        let rows: Vec<Row> = l
            .swallowed_close_errors
            .iter()
            .map(|e| {
                Row::new(vec![e.what.clone(), e.site.clone(), e.owner.clone().unwrap_or_default(), e.error.clone()])
            })
            .collect();
        page.table("swallowed", &["what", "closed at", "owner", "error"], &rows);
    }
    if !l.declared_shared.is_empty() {
        page.para("", "Declared shared (expected to stay):");
        page.table("declared-shared", &HEADERS, &group_rows(&l.declared_shared));
    }
    let rows: Vec<Row> = l
        .kinds
        .iter()
        .map(|(k, c)| {
            Row::new(vec![
                k.clone(),
                c.created.to_string(),
                c.released.to_string(),
                c.live.to_string(),
                c.declared_shared.to_string(),
            ])
        })
        .collect();
    page.table("kinds", &["kind", "created", "released", "live", "declared shared"], &rows);
    page.para("note", &format!("tracking depth: {}", r.settings.tracking));
}

fn faults_section(page: &mut Page, r: &RunReport) {
    let c = &r.cycles_summary;
    page.section("faults", "Faults and errors");
    page.para(
        "",
        &format!(
            "Cycles with errors: open {}, work {}, close {}; panics {}. Fault plan: {}.",
            c.open_errors,
            c.work_errors,
            c.close_errors,
            c.panics,
            if r.settings.plan.is_empty() { "none" } else { &r.settings.plan }
        ),
    );
    let per_point = |point: &str| {
        r.verdict
            .signals
            .iter()
            .find(|e| e.signal.signal() == Signal::BytesPerFiring && e.signal.qualifier() == Some(point))
    };
    let rows: Vec<Row> = c
        .faults_fired
        .iter()
        .map(|(point, fired)| {
            let mut cells = vec![point.clone(), fired.to_string()];
            match per_point(point) {
                Some(e) => {
                    let [verdict, per_firing, interval] = words::signal_cells(e);
                    cells.extend([verdict, per_firing, interval]);
                    Row { class: verdict_class(e.verdict), cells }
                }
                None => {
                    cells.extend(["-".to_string(), "-".to_string(), "-".to_string()]);
                    Row::new(cells)
                }
            }
        })
        .collect();
    if rows.is_empty() {
        page.para("note", "No fault point fired.");
    } else {
        page.table("fault-points", &["fault point", "fired", "verdict", "bytes per firing", "interval"], &rows);
        page.para("note", "Bytes left behind per firing of each point, from the unexplained bytes between samples.");
    }
    let matrix: Vec<Row> = r
        .verdict
        .signals
        .iter()
        .filter(|e| e.signal.signal() == Signal::MatrixBytes)
        .map(|e| {
            let [verdict, per_cycle, interval] = words::signal_cells(e);
            Row { class: verdict_class(e.verdict), cells: vec![e.signal.to_string(), verdict, per_cycle, interval] }
        })
        .collect();
    if !matrix.is_empty() {
        page.table("fault-matrix", &["plan", "verdict", "per cycle", "interval"], &matrix);
    }
}

fn integrity_section(page: &mut Page, r: &RunReport) {
    let c = &r.cycles_summary;
    page.section("integrity", "Integrity");
    let counts: Vec<String> = c.counts.iter().map(|(k, v)| format!("{} {v}", k.replace('_', " "))).collect();
    page.para(
        "",
        &format!(
            "{} records checked{}{}.",
            c.records_checked,
            if counts.is_empty() { String::new() } else { format!("; {}", counts.join(", ")) },
            if c.integrity_problems.is_empty() { "; no problem found" } else { "" }
        ),
    );
    page.lines(&c.integrity_problems);
}

fn heap_section(page: &mut Page, r: &RunReport, flame: Option<&str>) {
    if r.heap_growth.is_empty() && r.heap_growth_by_function.is_empty() && flame.is_none() {
        return;
    }
    page.section("heap", "Heap growth");
    page.para(
        "note",
        "From jemalloc's heap profile, the warm-up's end to the run's; unexplained per cycle, its 95% lower bound \
         from the samples, and what a filling block cache explains.",
    );
    let rows: Vec<Row> = r
        .heap_growth_by_function
        .iter()
        .take(20)
        .map(|f| {
            Row::new(vec![
                f.function.clone(),
                human_bytes(f.unexplained_bytes_per_cycle()),
                human_bytes(f.unexplained_lower_bytes_per_cycle),
                human_bytes(f.explained_bytes_per_cycle),
                f.objects.to_string(),
                f.stacks.to_string(),
            ])
        })
        .collect();
    if !rows.is_empty() {
        page.table("heap-functions", &["function", "per cycle", ">= (95%)", "explained", "samples", "stacks"], &rows);
    }
    let rows: Vec<Row> = r
        .heap_growth
        .iter()
        .take(20)
        .map(|g| {
            Row::new(vec![
                human_bytes(g.unexplained_bytes_per_cycle()),
                human_bytes(g.unexplained_lower_bytes_per_cycle()),
                g.objects.to_string(),
                crate::probe::stacks::headline(&g.frames, 160),
            ])
        })
        .collect();
    if !rows.is_empty() {
        page.table("heap-stacks", &["per cycle", ">= (95%)", "samples", "stack (innermost first)"], &rows);
    }
    if let Some(svg) = flame {
        page.para(
            "",
            "Flame graph of the growth (heap-growth.svg beside this page): click a box to zoom, Ctrl-F to search.",
        );
        // In a frame of its own: the graph's script and element ids stay apart from the page's.
        let _ = writeln!(
            page.out,
            "<iframe class=\"flame\" title=\"flame graph\" width=\"100%\" height=\"{}\" srcdoc=\"{}\"></iframe>",
            svg_height(svg).map_or(600.0, |h| h + 20.0),
            esc(&flame_document(svg))
        );
    }
}

/// The flame graph's SVG as the frame's HTML document: without its XML prologue, and as wide as
/// the frame (its script takes the root's `width` away so that it fills a window; in HTML an
/// SVG without one would be 300 pixels wide).
fn flame_document(svg: &str) -> String {
    let root = svg.find("<svg").map_or(svg, |at| &svg[at..]);
    format!("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>html, body {{ margin: 0; }} svg {{ width: 100%; }}</style></head><body>{root}</body></html>")
}

/// The `height` of an SVG document's root element, in pixels.
fn svg_height(svg: &str) -> Option<f64> {
    let root = &svg[svg.find("<svg")?..];
    let root = &root[..root.find('>')?];
    let at = root.find(" height=\"")? + 9;
    root[at..].split('"').next()?.parse().ok()
}

fn settings_section(page: &mut Page, r: &RunReport) {
    page.section("settings", "Settings");
    let mut rows = vec![Row::new(vec!["tool".to_string(), r.tool.clone()])];
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(&r.settings) {
        for (k, v) in map {
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            rows.push(Row::new(vec![k, v]));
        }
    }
    page.table("settings-table", &["setting", "value"], &rows);
}

/// The page of a comparison: the verdicts, rates and times side by side, what regressed, and
/// both runs' plots.
pub(crate) fn compare_html(
    (old_name, old): (&str, &RunReport),
    (new_name, new): (&str, &RunReport),
    c: &Comparison,
    plots: &[Plot],
    notes: &[String],
) -> String {
    let worse = !c.regressions.is_empty();
    let mut page = Page::new(&format!("leakcheck compare: {}", if worse { "regressed" } else { "no regression" }));
    let _ = writeln!(
        page.out,
        "<h1>leakcheck compare: <span id=\"verdict\" class=\"verdict {}\">{}</span></h1>",
        if worse { "leak" } else { "clean" },
        if worse { "regressed" } else { "no regression" }
    );
    page.para("sub", &format!("old: {old_name}; new: {new_name}"));
    page.section("regressions", "What regressed");
    if worse {
        page.lines(&c.regressions);
    } else {
        page.para("", "Nothing got worse beyond the limits.");
    }
    let rate = |v: Option<f64>| v.map_or("-".to_string(), |b| format!("{}/cycle", words::rate(b)));
    let rows = vec![
        Row::new(vec!["verdict".to_string(), c.verdicts.0.to_string(), c.verdicts.1.to_string()]),
        Row::new(vec!["leak rate".to_string(), rate(c.rates.0), rate(c.rates.1)]),
        Row::new(vec!["retained bytes".to_string(), rate(c.retained.0), rate(c.retained.1)]),
        Row::new(vec![
            "time per cycle".to_string(),
            format!("{:.2} ms", c.ms_per_cycle.0),
            format!("{:.2} ms", c.ms_per_cycle.1),
        ]),
        Row::new(vec!["cycles".to_string(), old.cycles_run.to_string(), new.cycles_run.to_string()]),
        Row::new(vec![
            "store".to_string(),
            old.settings.store_info().to_string(),
            new.settings.store_info().to_string(),
        ]),
    ];
    page.table("side-by-side", &["", "old", "new"], &rows);
    page.section("plots", "Both runs");
    page.lines(notes);
    page.plots(plots, u64::MAX);
    page.section("signals", "Signals, old and new");
    let rows: Vec<Row> = new
        .verdict
        .signals
        .iter()
        .map(|e| {
            let before = old.verdict.signals.iter().find(|o| o.signal == e.signal);
            let [v_old, pc_old, _] =
                before.map_or(["-".to_string(), "-".to_string(), "-".to_string()], words::signal_cells);
            let [v_new, pc_new, _] = words::signal_cells(e);
            let class = if before.is_some_and(|o| e.verdict > o.verdict) { "leak" } else { "" };
            Row { class, cells: vec![e.signal.to_string(), v_old, pc_old, v_new, pc_new] }
        })
        .collect();
    page.table("signal-table", &["signal", "old verdict", "old per cycle", "new verdict", "new per cycle"], &rows);
    page.finish()
}
