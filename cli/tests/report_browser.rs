//! report.html and compare's page, opened in a real browser (headless Chromium, which
//! scripts/ensure-deps installs): a leaking run's page, a clean run's, a soak's killed with
//! SIGKILL mid-run, and the comparison of the clean run with the leaking one. Each page is opened
//! offline (every host name unresolvable), and must load with no console message, show the
//! verdict, the leaking signal, the retained handle's creation site and the plots, and show
//! values when the pointer is over a plot. Screenshots are kept under the target directory
//! (`tmp/report-browser/`).
//!
//! The pages are looked at through a small page of the test's own that loads each one in a frame
//! (`--allow-file-access-from-files` lets it read the frame), moves the pointer over the first
//! panel and writes what it found as JSON, which Chromium's `--dump-dom` prints.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leakcheck::report::{self, RunReport, HTML_FILE};
use leakcheck::Verdict;

mod common;
use common::{leakcheck, BIN};

const SMALL: [&str; 4] = ["--tasks", "1", "--segments", "1"];

/// The browser: `LEAKCHECK_CHROMIUM`, else the first of chromium, chromium-browser and
/// google-chrome on PATH. Missing, the test fails: the browser is part of what it tests.
fn chromium() -> PathBuf {
    if let Some(p) = std::env::var_os("LEAKCHECK_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!("no Chromium on PATH (chromium, chromium-browser, google-chrome): run scripts/ensure-deps, or set LEAKCHECK_CHROMIUM");
}

/// Chromium headless, offline: no host name resolves, so a page that needed the network would
/// show a console error.
fn browser() -> Command {
    let mut c = Command::new(chromium());
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--hide-scrollbars",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--enable-logging=stderr",
        "--v=0",
    ]);
    c.stdin(Stdio::null());
    c
}

/// What the test's page found in one report page, and the console's messages.
struct Opened {
    facts: serde_json::Value,
    console: Vec<String>,
}

impl Opened {
    fn text(&self, key: &str) -> &str {
        self.facts[key].as_str().unwrap_or_else(|| panic!("{key} missing: {}", self.facts))
    }

    fn count(&self, key: &str) -> u64 {
        self.facts[key].as_u64().unwrap_or_else(|| panic!("{key} missing: {}", self.facts))
    }
}

const PROBE: &str = r##"<!DOCTYPE html>
<html><head><meta charset="utf-8"></head><body>
<pre id="result">not loaded</pre>
<iframe id="page" width="1280" height="1600" src="PAGE"></iframe>
<script>
document.getElementById("page").addEventListener("load", function () {
  var out = {};
  try {
    var w = this.contentWindow, d = this.contentDocument;
    var text = function (sel) { var e = d.querySelector(sel); return e ? e.textContent : null; };
    out.title = d.title;
    out.verdict = text("#verdict");
    out.headline = text("#headline");
    out.sub = text("p.sub");
    out.summary = text("ul.lines");
    out.sections = Array.prototype.map.call(d.querySelectorAll("h2[id]"), function (h) { return h.id; }).join(",");
    out.leaking = Array.prototype.map.call(d.querySelectorAll("#signal-table tr.leak td:first-child"), function (c) { return c.textContent; }).join(",");
    out.retained = text("#retained-sites");
    out.regressions = text("#regressions + ul");
    var flame = d.querySelector("iframe.flame");
    out.flame_boxes = flame && flame.contentDocument ? flame.contentDocument.querySelectorAll("g rect").length : 0;
    out.flame_width = flame && flame.contentDocument ? Math.round(flame.contentDocument.querySelector("svg").getBoundingClientRect().width) : 0;
    out.heap_functions = text("#heap-functions");
    out.plots = d.querySelectorAll(".plot svg").length;
    out.lines = d.querySelectorAll(".plot svg path").length;
    out.panels = d.querySelectorAll(".plot svg rect.lc-hover").length;
    var panel = d.querySelector(".plot svg rect.lc-hover");
    if (panel) {
      var b = panel.getBoundingClientRect();
      panel.ownerSVGElement.dispatchEvent(new w.MouseEvent("mousemove",
        { clientX: b.left + b.width * 0.75, clientY: b.top + b.height / 2, bubbles: true }));
      var tip = d.getElementById("lc-tip");
      out.tip = tip.style.display === "block" ? tip.textContent : "";
    }
  } catch (e) {
    out.error = String(e);
  }
  document.getElementById("result").textContent = JSON.stringify(out);
});
</script>
</body></html>
"##;

fn file_url(p: &Path) -> String {
    format!("file://{}", p.canonicalize().expect("page exists").display())
}

/// Opens `page` through the test's page and returns what it found.
fn open(page: &Path, work: &Path) -> Opened {
    let html = std::fs::read_to_string(page).expect("page");
    // Self-contained: nothing names a file or address to load (namespaces name, they do not
    // load; `url(#id)` refers within the document).
    let text = html.as_str();
    let loads: Vec<&str> = ["src=", "href=", "url(", "@import"]
        .iter()
        .flat_map(|l| text.match_indices(l).map(move |(i, _)| (&text[i + l.len()..], &text[i..text.len().min(i + 40)])))
        .filter(|(target, _)| {
            let target = target.trim_start_matches(['"', '\'']).trim_start_matches("&quot;");
            !target.starts_with('#')
        })
        .map(|(_, shown)| shown)
        .collect();
    assert!(loads.is_empty(), "{} loads from elsewhere: {loads:?}", page.display());
    let probe = work.join(format!("probe-{}.html", page.file_stem().and_then(|s| s.to_str()).unwrap_or("page")));
    std::fs::write(&probe, PROBE.replace("PAGE", &file_url(page))).expect("write probe");
    let out = browser()
        .args(["--allow-file-access-from-files", "--virtual-time-budget=10000", "--dump-dom"])
        .arg(file_url(&probe))
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom.find("<pre id=\"result\">").expect("result element") + "<pre id=\"result\">".len();
    let end = start + dom[start..].find("</pre>").expect("result end");
    let json = dom[start..end].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
    let facts: serde_json::Value =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("{}: no result ({e}): {json}", page.display()));
    assert!(facts.get("error").is_none(), "{}: {}", page.display(), facts["error"]);
    let console =
        String::from_utf8_lossy(&out.stderr).lines().filter(|l| l.contains(":CONSOLE")).map(str::to_string).collect();
    Opened { facts, console }
}

/// A screenshot of `page`, kept where the target directory keeps test files.
fn screenshot(page: &Path, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    let png = dir.join(format!("{name}.png"));
    let _ = std::fs::remove_file(&png);
    let out = browser()
        .arg("--window-size=1280,2400")
        .arg(format!("--screenshot={}", png.display()))
        .arg(file_url(page))
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000, "{} is not a screenshot of a page", png.display());
    eprintln!("screenshot: {}", png.display());
    png
}

fn assert_no_console_messages(o: &Opened, what: &str) {
    assert!(o.console.is_empty(), "{what}: console messages: {:#?}", o.console);
}

fn assert_plots_with_values(o: &Opened, what: &str, panels: u64) {
    assert!(o.count("plots") >= 1, "{what}: no plot");
    assert_eq!(o.count("panels"), panels, "{what}: panels");
    assert!(o.count("lines") >= panels, "{what}: lines drawn: {}", o.count("lines"));
    let tip = o.text("tip");
    assert!(tip.starts_with("cycle ") && tip.contains(':'), "{what}: hovering shows no values: {tip:?}");
}

fn run_check(dir: &Path, extra: &[&str]) -> RunReport {
    let mut args = vec!["check", "--report", dir.to_str().expect("utf-8 path")];
    args.extend(SMALL);
    args.extend(extra);
    let out = leakcheck(&args);
    // 0 clean, 1 leak, 3 inconclusive (a profiled run may be: sampling moves the byte signals).
    assert!([0, 1, 3].contains(&out.status.code().unwrap_or(-1)), "{}", String::from_utf8_lossy(&out.stderr));
    report::read(&dir.join(report::REPORT_FILE)).expect("report.json")
}

#[test]
fn report_pages_open_offline_in_chromium_and_show_the_run() {
    let work = tempfile::tempdir().expect("tempdir");
    let (leak_dir, clean_dir, killed_dir) =
        (work.path().join("leak"), work.path().join("clean"), work.path().join("killed"));

    // A soak, killed with SIGKILL once it has rewritten its report a few times.
    let mut soak = Command::new(BIN)
        // A sample every cycle: the plots need 5 (soak's default takes one every 5 cycles).
        .args(["soak", "--duration", "10m", "--report-every", "2", "--sample-every", "1", "--report"])
        .arg(&killed_dir)
        .args(SMALL)
        .env_remove("LEAKCHECK_FAULTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn soak");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !report::read(&killed_dir.join(report::REPORT_FILE)).is_ok_and(|r| r.cycles_run >= 6) {
        assert!(Instant::now() < deadline, "the soak wrote no report");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(300));
    soak.kill().expect("SIGKILL");
    soak.wait().expect("reaped");

    // Every cycle run (an exact leak stops a check at its first cycle), so that there is a plot.
    let leak = run_check(
        &leak_dir,
        &["--plant", "offsets-options-tracked", "--cycles", "40", "--max-cycles", "40", "--all-cycles"],
    );
    assert_eq!(leak.verdict.verdict, Verdict::Leak);
    let site = leak.ledger.retained.first().and_then(|g| g.site.clone()).expect("a retained handle with its site");
    let clean = run_check(&clean_dir, &[]);
    assert_eq!(clean.verdict.verdict, Verdict::Clean, "the clean run is not clean");

    // The leaking run: its verdict, the signals that found it, where the handle was made.
    let page = open(&leak_dir.join(HTML_FILE), work.path());
    assert_no_console_messages(&page, "leak");
    assert_eq!(page.text("verdict"), "leak");
    let leaking = page.text("leaking");
    assert!(leaking.split(',').any(|s| s == "live_handles.Options"), "leaking signals shown: {leaking}");
    assert!(page.text("headline").contains("live_handles.Options"), "{}", page.text("headline"));
    assert!(page.text("retained").contains(&site), "retained table without {site}: {}", page.text("retained"));
    for section in ["summary", "signals", "plots", "handles", "faults", "integrity", "settings"] {
        assert!(page.text("sections").split(',').any(|s| s == section), "no {section} section");
    }
    // The four panels of the signals, and the record's top sites sample by sample.
    assert_plots_with_values(&page, "leak", 5);

    // The clean run: clean, and what that rules out.
    let page = open(&clean_dir.join(HTML_FILE), work.path());
    assert_no_console_messages(&page, "clean");
    assert_eq!(page.text("verdict"), "clean");
    assert_eq!(page.text("leaking"), "");
    assert!(page.text("summary").contains("rules out a continuing leak above"), "{}", page.text("summary"));
    assert!(page.facts["retained"].is_null(), "a clean run lists no retained handle");
    assert_plots_with_values(&page, "clean", 5);

    // The killed soak: the page of its last rewrite opens and shows the cycles so far.
    let killed = report::read(&killed_dir.join(report::REPORT_FILE)).expect("report.json survives SIGKILL");
    assert!(!killed.complete);
    let page = open(&killed_dir.join(HTML_FILE), work.path());
    assert_no_console_messages(&page, "killed soak");
    let sub = page.text("sub");
    // Rewritten right after report.json: killed between the two, one rewrite behind.
    let shown = [killed.cycles_run, killed.cycles_run - 2].map(|n| sub.contains(&format!("; {n} cycles in")));
    assert!(shown.contains(&true) && sub.contains("in progress"), "{sub} (report.json: {})", killed.cycles_run);
    // An interim report: the looks while the run goes name no frames, so no sites are plotted.
    assert_plots_with_values(&page, "killed soak", 4);

    // A profiled run: the heap's growth by function, and the flame graph in its frame.
    let profiled_dir = work.path().join("profiled");
    let profiled = run_check(
        &profiled_dir,
        &["--plant", "raw-malloc-per-cycle", "--cycles", "100", "--max-cycles", "100", "--profile", "14"],
    );
    let function = &profiled.heap_growth_by_function.first().expect("heap growth by function").function;
    let page = open(&profiled_dir.join(HTML_FILE), work.path());
    assert_no_console_messages(&page, "profiled");
    assert!(page.text("sections").split(',').any(|s| s == "heap"), "no heap section");
    assert!(
        page.text("heap_functions").contains(function.as_str()),
        "{function} not in {}",
        page.text("heap_functions")
    );
    assert!(page.count("flame_boxes") >= 10, "the flame graph has {} boxes", page.count("flame_boxes"));
    assert!(page.count("flame_width") >= 1000, "the flame graph is {} pixels wide", page.count("flame_width"));

    // The comparison: clean, then the planted leak, is a regression.
    let compare_page = work.path().join("compare.html");
    let out = leakcheck(&[
        "compare",
        clean_dir.join(report::REPORT_FILE).to_str().expect("utf-8"),
        leak_dir.join(report::REPORT_FILE).to_str().expect("utf-8"),
        "--html",
        compare_page.to_str().expect("utf-8"),
    ]);
    assert_eq!(out.status.code(), Some(1), "a regression exits 1: {}", String::from_utf8_lossy(&out.stderr));
    let page = open(&compare_page, work.path());
    assert_no_console_messages(&page, "compare");
    assert_eq!(page.text("verdict"), "regressed");
    assert!(page.text("regressions").contains("verdict clean -> leak"), "{}", page.text("regressions"));
    assert_plots_with_values(&page, "compare", 3);

    screenshot(&leak_dir.join(HTML_FILE), "leak");
    screenshot(&clean_dir.join(HTML_FILE), "clean");
    screenshot(&compare_page, "compare");
    screenshot(&profiled_dir.join(HTML_FILE), "profiled");
}
