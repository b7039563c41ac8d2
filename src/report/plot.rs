//! Plots drawn by the tool itself, as SVG: bytes per cycle with the fitted slope, live handles
//! per kind, open files and maps. A person should look at the plot, not read the JSON.

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::verdict::CycleSample;

use super::axis::{axis, ticks_within, Scale};
use super::RunReport;
use crate::units::escape_markup as esc;

/// One finished SVG document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plot {
    /// The file name to use (`plot.svg`).
    pub file_name: String,
    /// The SVG text.
    pub svg: String,
}

const W: f64 = 960.0;
const PANEL_H: f64 = 260.0;
const MARGIN_L: f64 = 90.0;
const MARGIN_R: f64 = 200.0;
const MARGIN_T: f64 = 34.0;
const MARGIN_B: f64 = 36.0;
const COLORS: [&str; 8] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
/// A line pattern per series besides its colour, so lines that lie on each other (a series of
/// zeros under another) and a reader without colour still tell them apart.
const DASHES: [&str; 5] = ["", "9,3", "2,3", "9,3,2,3", "14,4,4,4"];

struct Series {
    name: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
}

fn panel(out: &mut String, top: f64, (title, note): (&str, &str), series: &[Series], scale: Scale) {
    let (x0, x1) = (MARGIN_L, W - MARGIN_R);
    let (y0, y1) = (top + MARGIN_T, top + PANEL_H - MARGIN_B);
    let all = || series.iter().flat_map(|s| s.points.iter());
    let (mut xmin, mut xmax, mut ymin, mut ymax) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all() {
        xmin = xmin.min(x);
        xmax = xmax.max(x);
        ymin = ymin.min(y);
        ymax = ymax.max(y);
    }
    let _ = writeln!(
        out,
        r##"<text x="{x0}" y="{}" font-size="14" font-weight="bold">{}<tspan font-size="11" font-weight="normal" fill="#555" dx="10">{}</tspan></text>"##,
        top + 20.0,
        esc(title),
        esc(note)
    );
    if xmin > xmax {
        let _ = writeln!(out, r#"<text x="{x0}" y="{}" font-size="12">no data</text>"#, (y0 + y1) / 2.0);
        return;
    }
    if xmax == xmin {
        xmax = xmin + 1.0;
    }
    // Round ticks, the axis widened to them: whole numbers for counts, one unit for bytes.
    let y_axis = axis(ymin, ymax, 5, scale);
    let (ymin, ymax) = (y_axis.min, y_axis.max);
    let sx = |x: f64| x0 + (x - xmin) / (xmax - xmin) * (x1 - x0);
    let sy = |y: f64| y1 - (y - ymin) / (ymax - ymin) * (y1 - y0);
    let _ = writeln!(
        out,
        r##"<rect x="{x0}" y="{y0}" width="{}" height="{}" fill="#fbfbfb" stroke="#999"/>"##,
        x1 - x0,
        y1 - y0
    );
    for (y, label) in &y_axis.ticks {
        let py = sy(*y);
        let _ = writeln!(out, r##"<line x1="{x0}" y1="{py:.1}" x2="{x1}" y2="{py:.1}" stroke="#e4e4e4"/>"##);
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#,
            x0 - 6.0,
            py + 4.0,
            esc(label)
        );
    }
    for (x, label) in ticks_within(xmin, xmax, 6, Scale::Count) {
        let px = sx(x);
        let _ = writeln!(out, r##"<line x1="{px:.1}" y1="{y1}" x2="{px:.1}" y2="{}" stroke="#999"/>"##, y1 + 4.0);
        let _ = writeln!(
            out,
            r#"<text x="{px:.1}" y="{}" font-size="11" text-anchor="middle">{}</text>"#,
            y1 + 16.0,
            esc(&label)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" font-size="11" text-anchor="middle">cycle</text>"#,
        (x0 + x1) / 2.0,
        y1 + 30.0
    );
    hover_layer(out, [x0, x1, y0, y1], [xmin, xmax], series, scale);
    draw_series(out, series, (&sx, &sy), x1, y0);
}

/// Each series as a line in the plot area, and its key to the right of it (`x1`, from `y0` down).
fn draw_series(
    out: &mut String,
    series: &[Series],
    (sx, sy): (&dyn Fn(f64) -> f64, &dyn Fn(f64) -> f64),
    x1: f64,
    y0: f64,
) {
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        if s.points.is_empty() {
            continue;
        }
        let mut d = String::new();
        for (j, (px, py)) in at_pixels(&s.points, &sx, &sy).into_iter().enumerate() {
            let _ = write!(d, "{}{px:.1},{py:.1} ", if j == 0 { "M" } else { "L" });
        }
        let pattern = if s.dashed { "6,4" } else { DASHES[i % DASHES.len()] };
        let dash = if pattern.is_empty() { String::new() } else { format!(r#" stroke-dasharray="{pattern}""#) };
        let _ = writeln!(out, r#"<path d="{d}" fill="none" stroke="{color}" stroke-width="1.6"{dash}/>"#);
        let ly = y0 + 14.0 + i as f64 * 18.0;
        let _ = writeln!(
            out,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"{dash}/>"#,
            x1 + 12.0,
            x1 + 32.0
        );
        let _ = writeln!(out, r#"<text x="{}" y="{}" font-size="11">{}</text>"#, x1 + 38.0, ly + 4.0, esc(&s.name));
    }
}

/// The panel's values for a reader to hover over (report.html's script; inert in plot.svg and
/// plot.png): a transparent rectangle over the plot area carrying, as JSON in `data-plot`, the
/// area's corners in pixels, its x range, the unit, and each measured series (fits left out)
/// at most one point per pixel column, the last of each, so the data costs the panel's width
/// whatever the run's length.
fn hover_layer(out: &mut String, [x0, x1, y0, y1]: [f64; 4], [xmin, xmax]: [f64; 2], series: &[Series], scale: Scale) {
    let measured: Vec<serde_json::Value> = series
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.dashed && !s.points.is_empty())
        .map(|(i, s)| {
            let mut points: Vec<[f64; 2]> = Vec::new();
            let mut last_column = None;
            for &(x, y) in &s.points {
                let column = ((x - xmin) / (xmax - xmin) * (x1 - x0)).floor() as i64;
                if last_column == Some(column) {
                    points.pop();
                }
                last_column = Some(column);
                points.push([x, y]);
            }
            serde_json::json!({ "name": s.name, "color": COLORS[i % COLORS.len()], "points": points })
        })
        .collect();
    let data = serde_json::json!({
        "area": [x0, x1, y0, y1],
        "x": [xmin, xmax],
        "unit": match scale { Scale::Bytes => "bytes", Scale::Count => "count" },
        "series": measured,
    });
    let _ = writeln!(
        out,
        r#"<rect class="lc-hover" x="{x0}" y="{y0}" width="{}" height="{}" fill="none" data-plot="{}"/>"#,
        x1 - x0,
        y1 - y0,
        esc(&data.to_string())
    );
}

/// `text` cut to what fits in `width` pixels at `font_size` (a character of DejaVu Sans is at most
/// about 0.62 of the size), with an ellipsis when cut: the whole text is in report.json.
fn fit_width(text: &str, width: f64, font_size: f64) -> String {
    let fits = (width / (0.62 * font_size)).floor().max(1.0) as usize;
    if text.chars().count() <= fits {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(fits.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A point on the canvas: x and y in pixels.
type Pixel = (f64, f64);

/// The points of a series in pixels, at most the lowest and the highest of each pixel column (in
/// the order they came) and the last: the line looks the same, spikes included, and a plot redrawn through a
/// soak costs the panel's width, not the samples kept.
fn at_pixels(points: &[(f64, f64)], sx: &dyn Fn(f64) -> f64, sy: &dyn Fn(f64) -> f64) -> Vec<Pixel> {
    let mut out = Vec::new();
    // The current column, with its points of the smallest and the largest screen y.
    let mut column: Option<(i64, Pixel, Pixel)> = None;
    let flush = |out: &mut Vec<Pixel>, (_, a, b): (i64, Pixel, Pixel)| {
        let (first, second) = if a.0 <= b.0 { (a, b) } else { (b, a) };
        out.push(first);
        if second != first {
            out.push(second);
        }
    };
    for &(x, y) in points {
        let p = (sx(x), sy(y));
        let c = p.0.floor() as i64;
        column = match column {
            Some((at, top, bottom)) if at == c => {
                Some((at, if p.1 < top.1 { p } else { top }, if p.1 > bottom.1 { p } else { bottom }))
            }
            done => {
                if let Some(done) = done {
                    flush(&mut out, done);
                }
                Some((c, p, p))
            }
        };
    }
    if let Some(done) = column {
        flush(&mut out, done);
    }
    // The line ends where the series does.
    if let Some(&(x, y)) = points.last() {
        let end = (sx(x), sy(y));
        if out.last() != Some(&end) {
            out.push(end);
        }
    }
    out
}

fn series_of(samples: &[CycleSample], name: &str, f: impl Fn(&CycleSample) -> Option<f64>) -> Series {
    Series {
        name: name.to_string(),
        points: samples.iter().filter_map(|c| Some((c.cycle as f64, f(c)?))).collect(),
        dashed: false,
    }
}

/// The later part's growth per cycle as a line through the median intercept of its points.
fn fit_line(
    samples: &[CycleSample],
    report: &RunReport,
    value: impl Fn(&CycleSample) -> Option<f64>,
) -> Option<Series> {
    let signal = report.bytes_signal()?;
    let slope = signal.estimate?.value;
    let from = signal.growth.map_or(0, |g| g.from_cycle);
    let pts: Vec<(f64, f64)> =
        samples.iter().filter(|c| c.cycle >= from).filter_map(|c| Some((c.cycle as f64, value(c)?))).collect();
    let mut intercepts: Vec<f64> = pts.iter().map(|(x, y)| y - slope * x).collect();
    if intercepts.is_empty() {
        return None;
    }
    intercepts.sort_by(f64::total_cmp);
    let b = intercepts[intercepts.len() / 2];
    let (first, last) = (pts.first()?.0, pts.last()?.0);
    Some(Series {
        name: format!("fit {:+.1} B/cycle", slope),
        points: vec![(first, b + slope * first), (last, b + slope * last)],
        dashed: true,
    })
}

/// An SVG document's start, tall enough for `panels` panels under a title line.
fn svg_start(panels: u32, title: &str) -> String {
    let mut out = String::new();
    let h = f64::from(panels) * PANEL_H + 54.0;
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="DejaVu Sans, Arial, sans-serif">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{MARGIN_L}" y="22" font-size="17">{}</text>"#,
        esc(&fit_width(title, W - MARGIN_L - 10.0, 17.0))
    );
    out
}

/// Draws the report's plots: one SVG with four panels (bytes with the fitted slope, resident
/// memory, retained handles per kind, open files and maps).
/// Samples below which a run is not plotted: a handful of points draws nothing a reader can
/// read (a check stopped at its first cycle by an exact leak), and the page says so instead.
pub(crate) const MIN_PLOT_POINTS: usize = 5;

pub(super) fn plot_svgs(report: &RunReport, samples: &[CycleSample]) -> Vec<Plot> {
    if samples.len() < MIN_PLOT_POINTS {
        return Vec::new();
    }
    let title =
        format!("leakcheck {}: {} after {} cycles", report.settings.command, report.verdict.verdict, report.cycles_run);
    let sites = site_series(report);
    let mut out = svg_start(if sites.is_empty() { 4 } else { 5 }, &title);
    let settings = format!(
        "{}; faults: {}",
        report.settings.store_info(),
        if report.settings.plan.is_empty() { "none" } else { &report.settings.plan }
    );
    let _ = writeln!(
        out,
        r##"<text x="{MARGIN_L}" y="40" font-size="11" fill="#555">{}</text>"##,
        esc(&fit_width(&settings, W - MARGIN_L - 10.0, 11.0))
    );
    let unexplained = |c: &CycleSample| c.sample.unexplained_bytes().map(|v| v as f64);
    let mut bytes = vec![
        series_of(samples, "allocated", |c| c.sample.allocated_bytes().map(|v| v as f64)),
        series_of(samples, "unexplained", unexplained),
        series_of(samples, "RocksDB caches", |c| c.sample.rocksdb.map(|r| r.cache_total_bytes as f64)),
        series_of(samples, "RocksDB memtables", |c| c.sample.rocksdb.map(|r| r.mem_table_total_bytes as f64)),
        series_of(samples, "harness bookkeeping", |c| c.sample.bookkeeping_bytes.map(|v| v as f64)),
    ];
    bytes.retain(|s| !s.points.is_empty());
    if let Some(fit) = fit_line(samples, report, unexplained) {
        bytes.insert(2, fit);
    }
    panel(
        &mut out,
        44.0,
        ("bytes after each cycle", "unexplained = allocated - RocksDB's - harness's - thread caches"),
        &bytes,
        Scale::Bytes,
    );

    let kinds: BTreeSet<&String> = samples.iter().flat_map(|c| c.retained_handles.keys()).collect();
    let mut handles: Vec<Series> = kinds
        .iter()
        .map(|k| series_of(samples, k, |c| Some(c.retained_handles.get(*k).copied().unwrap_or(0) as f64)))
        .collect();
    if handles.is_empty() {
        handles.push(series_of(samples, "all kinds", |_| Some(0.0)));
    }
    let resident = vec![
        series_of(samples, "jemalloc resident", |c| c.sample.jemalloc.map(|j| j.resident_bytes as f64)),
        series_of(samples, "RSS anonymous", |c| c.sample.process.rss_anon_bytes.map(|v| v as f64)),
        series_of(samples, "RSS", |c| c.sample.process.rss_bytes.map(|v| v as f64)),
    ];
    panel(
        &mut out,
        44.0 + PANEL_H,
        ("resident memory", "page-granular; jemalloc's after purge"),
        &resident,
        Scale::Bytes,
    );

    let handles_title = ("retained handles per kind", "not declared shared, after close");
    panel(&mut out, 44.0 + 2.0 * PANEL_H, handles_title, &handles, Scale::Count);

    let os = vec![
        series_of(samples, "fds under store dir", |c| c.sample.process.open_fds_under_dir.map(|v| v as f64)),
        series_of(samples, "maps under store dir", |c| c.sample.process.maps_under_dir.map(|v| v as f64)),
        series_of(samples, "open fds (process)", |c| c.sample.process.open_fds.map(|v| v as f64)),
        series_of(samples, "threads", |c| c.sample.process.threads.map(|v| v as f64)),
    ];
    panel(&mut out, 44.0 + 3.0 * PANEL_H, ("open files, maps and threads", ""), &os, Scale::Count);
    if !sites.is_empty() {
        let note = "the record's, lowest of each block of samples; a leak's keeps rising, a cache's levels off";
        panel(&mut out, 44.0 + 4.0 * PANEL_H, ("live bytes per allocating site", note), &sites, Scale::Bytes);
    }
    out.push_str("</svg>\n");
    vec![Plot { file_name: "plot.svg".to_string(), svg: out }]
}

/// A site in a legend's width: the user's frame (a headline's last part), its function by its
/// type and name (`ReferenceStore::open_segment`) and its file's name and line.
fn short_site(headline: &str) -> String {
    let frame = headline.rsplit(" <- ").next().unwrap_or(headline);
    let (function, place) = crate::probe::stacks::split_location(frame);
    let parts: Vec<&str> = function.split("::").collect();
    let short = parts[parts.len().saturating_sub(2)..].join("::");
    match place.and_then(|p| p.rsplit('/').next()) {
        Some(file) => format!("{short} ({file})"),
        None => short,
    }
}

/// The sites the record's verdict plots ([`crate::verdict::Retained::plotted`]), each named by
/// its verdict and its line.
fn site_series(report: &RunReport) -> Vec<Series> {
    let Some(r) = report.verdict.signal(crate::signal::Signal::RetainedBytes).and_then(|s| s.retained.as_ref()) else {
        return Vec::new();
    };
    r.plotted
        .iter()
        .map(|s| {
            let said = if s.growth.leaks() {
                "leak"
            } else if s.growth.open() {
                "open"
            } else {
                "clean"
            };
            Series {
                name: format!("{said}: {}", short_site(&s.function)),
                points: s.points.iter().map(|&(c, b)| (c as f64, b)).collect(),
                dashed: false,
            }
        })
        .collect()
}

/// Two runs' series on one plot (`compare --html`): unexplained and allocated bytes, retained
/// handles of all kinds, and the process's open files, each panel with the old run's line and
/// the new run's, over each run's own cycles.
pub(super) fn compare_svgs(title: &str, old: &[CycleSample], new: &[CycleSample]) -> Vec<Plot> {
    let mut out = svg_start(3, title);
    type Value = fn(&CycleSample) -> Option<f64>;
    let both = |name: &str, f: Value| {
        vec![series_of(old, &format!("old {name}"), f), series_of(new, &format!("new {name}"), f)]
    };
    let mut bytes = both("unexplained", |c| c.sample.unexplained_bytes().map(|v| v as f64));
    bytes.extend(both("allocated", |c| c.sample.allocated_bytes().map(|v| v as f64)));
    bytes.retain(|s| !s.points.is_empty());
    panel(&mut out, 44.0, ("bytes after each cycle", "old and new run"), &bytes, Scale::Bytes);
    let handles = both("retained", |c| Some(c.retained_handles.values().sum::<u64>() as f64));
    panel(
        &mut out,
        44.0 + PANEL_H,
        ("retained handles, all kinds", "not declared shared, after close"),
        &handles,
        Scale::Count,
    );
    let mut os = both("open fds", |c| c.sample.process.open_fds.map(|v| v as f64));
    os.extend(both("threads", |c| c.sample.process.threads.map(|v| v as f64)));
    os.retain(|s| !s.points.is_empty());
    panel(&mut out, 44.0 + 2.0 * PANEL_H, ("open files and threads", "the whole process"), &os, Scale::Count);
    out.push_str("</svg>\n");
    vec![Plot { file_name: "compare.svg".to_string(), svg: out }]
}

#[cfg(test)]
mod tests {
    use super::{at_pixels, fit_width};

    #[test]
    fn a_long_line_is_cut_to_its_width_with_an_ellipsis() {
        assert_eq!(fit_width("short", 100.0, 10.0), "short");
        let cut = fit_width(&"close.flush=5%,".repeat(20), 300.0, 10.0);
        assert_eq!(cut.chars().count(), 48, "{cut}");
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn a_line_keeps_each_columns_extremes_and_no_more() {
        // 10,000 points over 100 pixels, a spike at one of them.
        let points: Vec<(f64, f64)> =
            (0..10_000).map(|i| (f64::from(i), if i == 5_050 { 1_000.0 } else { f64::from(i % 7) })).collect();
        let px = at_pixels(&points, &|x| x / 100.0, &|y| -y);
        assert!(px.len() <= 201, "{}", px.len());
        assert!(px.iter().any(|p| p.1 == -1_000.0), "the spike is drawn");
        assert!(px.windows(2).all(|w| w[0].0 <= w[1].0), "in the order they came");
        assert_eq!((px[0].0, px[px.len() - 1].0), (0.0, 99.99), "first and last column");
    }
}
