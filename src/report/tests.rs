use std::collections::BTreeMap;
use std::fs;

use super::csv::samples_csv;
use super::*;
use crate::probe::{JemallocStats, ProcessStats, RocksDbMemory, Sample};
use crate::verdict::{analyze, AnalysisConfig, CycleSample};

fn sample(c: u64) -> CycleSample {
    let jemalloc = JemallocStats {
        allocated_bytes: 10_000_000 + 300 * c + (c * 7919) % 2000,
        active_bytes: 0,
        resident_bytes: 20_000_000 + 4096 * (c % 3),
        mapped_bytes: 0,
        retained_bytes: 0,
        metadata_bytes: 0,
        purged: true,
        tcache_bytes: (c * 104_729) % 50_000,
        internal_bytes: 40_000 + (c * 7_919) % 9_000,
    };
    let rocksdb = RocksDbMemory {
        mem_table_total_bytes: 65_536 * (c % 4),
        mem_table_unflushed_bytes: 0,
        table_readers_total_bytes: 1000,
        cache_total_bytes: 600_000,
        cache_reserved_bytes: 262_144,
        cache_over_capacity_bytes: 3,
        live_sst_files: c % 7,
        live_sst_bytes: 110_000 * (c % 7),
        cache_capacity_bytes: 1 << 20,
    };
    let process = ProcessStats {
        rss_bytes: Some(40 << 20),
        rss_anon_bytes: Some(30 << 20),
        threads: Some(7),
        open_fds: Some(12 + c % 2),
        open_fds_under_dir: Some(0),
        maps: Some(80),
        maps_under_dir: Some(0),
        file_maps: Some(25),
    };
    let s = Sample {
        monotonic_ns: c * 1000,
        jemalloc: Some(jemalloc),
        process,
        rocksdb: Some(rocksdb),
        bookkeeping_bytes: Some(4096 + 64 * c as i64),
        record_resident_bytes: Some(65_536),
        untouched_bytes: Some(8_192),
    };
    let handles = if c == 70 { [("Options".to_string(), 2)].into_iter().collect() } else { BTreeMap::new() };
    CycleSample::new(c, s, handles, c != 3)
}

#[test]
fn the_verdict_sits_at_the_top_of_the_json_and_reads_back() {
    let samples: Vec<CycleSample> = (0..150).map(sample).collect();
    let verdict = analyze(&samples, Some(&samples[0].sample), Some(&samples[149].sample), &AnalysisConfig::default());
    let settings = RunSettings { command: "check".to_string(), cycles: 150, ..RunSettings::default() };
    let report = RunReport::new(
        settings,
        verdict.clone(),
        CycleSummary::default(),
        crate::ledger::Ledger::new().report(),
        150,
        3.0,
        true,
    );
    let json = serde_json::to_value(&report).expect("serialize");
    // The keys readers (`compare`, older reports' readers) look up, at the top level as before.
    for key in ["schema_version", "verdict", "signals", "baseline_return", "cycles_run", "ledger", "settings"] {
        assert!(json.get(key).is_some(), "{key} missing: {json}");
    }
    assert_eq!(json["verdict"], serde_json::to_value(verdict.verdict).expect("verdict"));
    assert!(json.get("judged").is_none() && json["verdict"].is_string());
    // Read back from the text as written, and from a map whose keys come in another order
    // (serde_json's map is sorted by key): objects are read by key, so a report written before
    // the verdict's fields were one struct, in another order, reads the same.
    let text = serde_json::to_string(&report).expect("text");
    assert_eq!(serde_json::from_str::<RunReport>(&text).expect("read back"), report);
    assert_eq!(serde_json::from_value::<RunReport>(json).expect("read back sorted"), report);
}

#[test]
fn the_page_escapes_what_it_shows_and_loads_nothing() {
    let samples: Vec<CycleSample> = (0..150).map(sample).collect();
    let verdict = analyze(&samples, None, None, &AnalysisConfig::default());
    let settings = RunSettings {
        command: "check".to_string(),
        store: "<script>alert(1)</script> & \"co\"".to_string(),
        plan: "close.flush=5%".to_string(),
        cycles: 150,
        ..RunSettings::default()
    };
    let mut summary = CycleSummary::default();
    summary.integrity_problems.push("cycle 3: key <b>".to_string());
    let report = RunReport::new(settings, verdict, summary, crate::ledger::Ledger::new().report(), 150, 3.0, false);
    let dir = tempfile::tempdir().expect("tempdir");
    write::write_dir(dir.path(), &report, &samples).expect("write");
    let page = fs::read_to_string(dir.path().join(HTML_FILE)).expect("page");
    assert!(!page.contains("<script>alert") && !page.contains("<b>"), "unescaped text in the page");
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;co&quot;"));
    assert_eq!(page.matches("<script>").count(), 1, "only the page's own script");
    let loads = ["src=", "href=", "url(", "@import"];
    assert!(loads.iter().all(|l| !page.contains(l)), "the page loads nothing from elsewhere");
    assert!(page.contains("150 cycles in 3.0 s") && page.contains("in progress"), "an interim page says so");
    // Every panel carries its values for the hover script, as JSON that reads back.
    let data: Vec<serde_json::Value> = page
        .split("data-plot=\"")
        .skip(1)
        .map(|rest| {
            let attr = &rest[..rest.find('"').expect("attribute end")];
            let json = attr.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
            serde_json::from_str(&json).expect("panel data is JSON")
        })
        .collect();
    assert_eq!(data.len(), 4);
    let points = data[0]["series"][0]["points"].as_array().expect("points");
    assert_eq!(points.len(), 150, "one point per cycle while cycles are fewer than pixel columns");
    assert_eq!(points[149][0], 149.0);
}

#[test]
fn samples_read_back_from_their_csv_judge_as_before() {
    let samples: Vec<CycleSample> = (0..150).map(sample).collect();
    let back = parse_samples_csv(&samples_csv(&samples)).expect("parse");
    assert_eq!(back.len(), samples.len());
    for (a, b) in samples.iter().zip(&back) {
        assert_eq!((a.cycle, a.settled), (b.cycle, b.settled));
        assert_eq!(a.sample.unexplained_bytes(), b.sample.unexplained_bytes());
        assert_eq!(a.sample.explained_bytes(), b.sample.explained_bytes());
        assert_eq!(a.sample.process, b.sample.process);
        assert_eq!(a.retained_handles.values().sum::<u64>(), b.retained_handles.values().sum::<u64>());
    }
    let cfg = AnalysisConfig::default();
    let (v, w) = (analyze(&samples, None, None, &cfg), analyze(&back, None, None, &cfg));
    assert_eq!(v.verdict, w.verdict);
    for s in &v.signals {
        // Handles by kind come back as their sum, under the kind `all`.
        let name = s.signal.to_string().replace("live_handles.Options", "live_handles.all");
        let t = w.signal_named(&name).unwrap_or_else(|| panic!("{name} lost"));
        assert_eq!((s.verdict, s.estimate, s.residue), (t.verdict, t.estimate, t.residue), "{name}");
    }
}

#[test]
fn every_column_written_is_read_back() {
    // Written, read and written again: the same text, so the reader reads every column the
    // one column list writes (a column it dropped or misread would change the second text).
    let samples: Vec<CycleSample> = (0..20).map(sample).collect();
    let text = samples_csv(&samples);
    let again = samples_csv(&parse_samples_csv(&text).expect("parse"));
    assert_eq!(again, text);
    assert_eq!(text.lines().next().map(|h| h.split(',').count()), Some(SAMPLES_COLUMNS.len()));
}

#[test]
fn an_older_csv_gets_its_thread_caches_back_from_the_explained_bytes() {
    // Before these columns there were no reservations either.
    let samples: Vec<CycleSample> = (0..5)
        .map(|c| {
            let mut s = sample(c);
            s.sample.rocksdb =
                s.sample.rocksdb.map(|r| RocksDbMemory { cache_reserved_bytes: 0, cache_over_capacity_bytes: 0, ..r });
            s
        })
        .collect();
    let text = samples_csv(&samples);
    let keep = SAMPLES_COLUMNS.iter().position(|c| *c == "file_maps").expect("column");
    let old: String = text.lines().map(|l| l.split(',').take(keep).collect::<Vec<_>>().join(",") + "\n").collect();
    let back = parse_samples_csv(&old).expect("parse");
    for (a, b) in samples.iter().zip(&back) {
        assert_eq!(
            a.sample.explained_bytes() - a.sample.rocksdb.map_or(0, |r| r.explained_bytes() as i64),
            b.sample.explained_bytes() - b.sample.rocksdb.map_or(0, |r| r.explained_bytes() as i64)
        );
        assert_eq!(b.sample.process.file_maps, None);
    }
}

#[test]
fn a_bad_csv_names_its_line_and_problem() {
    let header = SAMPLES_COLUMNS.join(",");
    let row = samples_csv(&[sample(1)]).lines().nth(1).expect("row").to_string();
    let cases = [
        (String::new(), 1, "no header"),
        ("cycle,monotonic_ns\n1,2\n".to_string(), 1, "no column allocated_bytes"),
        (format!("{header}\n{row}\n1,2\n"), 3, "2 fields"),
        (format!("{header}\n{}\n", row.replacen("1,", "x,", 1)), 2, "cycle: \"x\" is not an integer"),
        (format!("{header}\n{}\n", row.replace(",true,", ",maybe,")), 2, "settled"),
    ];
    for (text, line, problem) in cases {
        match parse_samples_csv(&text) {
            Err(ReportError::Samples { line: l, problem: p }) => {
                assert_eq!(l, line, "{p}");
                assert!(p.contains(problem), "{p:?} should say {problem:?}");
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

/// A leaking report: an Options handle kept at this file's line, in a run whose samples show it.
fn leaking_report() -> (RunReport, u32) {
    let samples: Vec<CycleSample> = (0..150).map(sample).collect();
    let verdict = analyze(&samples, None, None, &AnalysisConfig::default());
    let ledger = crate::ledger::Ledger::new();
    let line = line!() + 1;
    let token = ledger.register(crate::ledger::HandleKind::Options);
    std::mem::forget(token);
    let settings =
        RunSettings { command: "check".to_string(), store: "kv".to_string(), cycles: 150, ..RunSettings::default() };
    (RunReport::new(settings, verdict, CycleSummary::default(), ledger.report(), 150, 3.0, true), line)
}

#[test]
fn findings_say_what_leaked_and_where_first() {
    let (report, line) = leaking_report();
    let findings = report.findings();
    let first = &findings[0];
    assert_eq!(first.signal, "live_handles.Options");
    assert_eq!(first.verdict, crate::verdict::Verdict::Leak);
    let place = first.place.as_ref().expect("a place");
    assert_eq!((place.file.as_str(), place.line), ("src/report/tests.rs", line));
    assert!(
        first.message.starts_with("1 Options handle retained, created at src/report/tests.rs:"),
        "{}",
        first.message
    );
    // The one-line summary names it by its signal, and the terminal's table opens with that line.
    assert_eq!(report.summary(), format!("leak: live_handles.Options: {}", first.message));
    let table = text::table(&report);
    assert_eq!(table.lines().next(), Some(report.summary().as_str()));
}

/// check's default text is the summary, the findings and the judged signals; `--verbose` (the
/// whole table) adds the raw signals shown for reference and the totals.
#[test]
fn the_brief_table_holds_the_judged_signals_and_the_findings_and_no_raw_signal() {
    let (report, _) = leaking_report();
    let (brief, whole) = (text::brief(&report), text::table(&report));
    let row = |table: &str, signal: &crate::signal::SignalId| {
        table.lines().any(|l| l.split_whitespace().next() == Some(signal.to_string().as_str()))
    };
    let raw: Vec<_> = report.verdict.signals.iter().filter(|s| s.informational).collect();
    let judged: Vec<_> = report.verdict.signals.iter().filter(|s| !s.informational).collect();
    assert!(!raw.is_empty() && !judged.is_empty());
    for s in &judged {
        assert!(row(&brief, &s.signal) && row(&whole, &s.signal), "{} judged: in both", s.signal);
    }
    for s in &raw {
        assert!(!row(&brief, &s.signal) && row(&whole, &s.signal), "{} raw: only with --verbose", s.signal);
    }
    // The findings (the summary naming the leak, the ledger's table) and the verdict in both; the
    // totals only in the whole table.
    for text in [&brief, &whole] {
        assert_eq!(text.lines().next(), Some(report.summary().as_str()));
        assert!(text.contains("src/report/tests.rs") && text.contains("\nverdict: leak"), "{text}");
    }
    let totals = words::totals_lines(&report);
    assert!(!totals.is_empty() && totals.iter().all(|l| whole.contains(l.as_str()) && !brief.contains(l.as_str())));
    assert!(brief.lines().count() < whole.lines().count());
}

#[test]
fn annotations_are_workflow_commands_at_the_leaking_line() {
    let (report, line) = leaking_report();
    let root = std::env::current_dir().expect("cwd");
    let text = github::annotations(&report, &root);
    let first = text.lines().next().expect("a command");
    // `::error file=F,line=L,title=T::message`
    let rest = first.strip_prefix("::error ").expect("an error command");
    let (properties, message) = rest.split_once("::").expect("properties and message");
    let properties: BTreeMap<&str, &str> =
        properties.split(',').map(|p| p.split_once('=').expect("key=value")).collect();
    assert_eq!(properties["file"], "src/report/tests.rs");
    assert_eq!(properties["line"], line.to_string());
    assert_eq!(properties["title"], "leakcheck%3A live_handles.Options");
    assert!(message.starts_with("1 Options handle retained"), "{message}");
}

#[test]
fn junit_has_a_case_per_judged_signal_and_a_failure_per_leak() {
    use quick_xml::events::Event;
    let (mut report, line) = leaking_report();
    report.verdict.signals.push(crate::verdict::SignalVerdict::unmeasured(
        crate::signal::Signal::Integrity.into(),
        crate::verdict::Rule::Exact { expected: 0.0 },
        crate::verdict::Unmeasured::NoIntegrityCheck,
    ));
    let xml = junit_xml(&report);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut path: Vec<String> = Vec::new();
    let mut cases = Vec::new();
    let mut failures = Vec::new();
    let mut suites = Vec::new();
    loop {
        let event = reader.read_event().expect("well-formed XML");
        let (start, empty) = match &event {
            Event::Start(e) => (Some(e.clone()), false),
            Event::Empty(e) => (Some(e.clone()), true),
            Event::End(_) => {
                path.pop();
                (None, false)
            }
            Event::Eof => break,
            _ => (None, false),
        };
        let Some(e) = start else { continue };
        let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
        let attrs: BTreeMap<String, String> = e
            .attributes()
            .map(|a| {
                let a = a.expect("attribute");
                (
                    String::from_utf8_lossy(a.key.as_ref()).into_owned(),
                    a.normalized_value(quick_xml::XmlVersion::Explicit1_0).expect("value").into_owned(),
                )
            })
            .collect();
        // The schema's nesting: testsuites > testsuite > testcase > failure | error.
        let parent = path.last().map(String::as_str);
        match name.as_str() {
            "testsuites" => assert_eq!(parent, None),
            "testsuite" => {
                assert_eq!(parent, Some("testsuites"));
                suites.push(attrs.clone());
            }
            "testcase" => {
                assert_eq!(parent, Some("testsuite"));
                assert!(attrs.contains_key("classname"));
                cases.push(attrs["name"].clone());
            }
            "failure" | "error" | "skipped" => {
                assert_eq!(parent, Some("testcase"));
                failures.push((name.clone(), path.len(), attrs.clone()));
            }
            other => panic!("unexpected element {other}"),
        }
        if !empty {
            path.push(name);
        }
    }
    let judged: Vec<String> =
        report.verdict.signals.iter().filter(|s| !s.informational).map(|s| s.signal.to_string()).collect();
    assert_eq!(cases, judged, "one case per judged signal, in the report's order");
    let leaks = report
        .verdict
        .signals
        .iter()
        .filter(|s| !s.informational && s.verdict == crate::verdict::Verdict::Leak)
        .count();
    let fails = failures.iter().filter(|(n, _, _)| n == "failure").count();
    assert_eq!(fails, leaks);
    assert_eq!(suites[0]["tests"], judged.len().to_string());
    assert_eq!(suites[0]["failures"], leaks.to_string());
    // A signal that measured nothing is skipped, with its reason.
    assert_eq!(suites[0]["skipped"], "1");
    let skipped: Vec<_> = failures.iter().filter(|(n, _, _)| n == "skipped").collect();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].2["message"].contains("the store defines no integrity check"), "{:?}", skipped[0].2);
    let handle =
        failures.iter().find(|(_, _, a)| a["message"].contains("Options handle")).expect("the handle's failure");
    assert!(handle.2["message"].contains(&format!("src/report/tests.rs:{line}")), "{:?}", handle.2);
}

#[test]
fn a_run_of_a_few_samples_is_not_plotted_and_the_page_says_so() {
    let samples: Vec<CycleSample> = (0..3).map(sample).collect();
    let verdict = analyze(&samples, None, None, &AnalysisConfig::default());
    let report = RunReport::new(
        RunSettings::default(),
        verdict,
        CycleSummary::default(),
        crate::ledger::Ledger::new().report(),
        3,
        0.1,
        true,
    );
    let dir = tempfile::tempdir().expect("tempdir");
    write::write_dir(dir.path(), &report, &samples).expect("write");
    assert!(!dir.path().join("plot.svg").exists(), "no empty plot");
    let page = fs::read_to_string(dir.path().join(HTML_FILE)).expect("page");
    assert!(page.contains("Not plotted: 3 samples (the plots need 5 or more)."), "the page says why");
    assert!(!page.contains("data-plot="), "no panel");
    // The summary is the page's headline and report.json's `summary`.
    let summary = report.summary();
    assert!(page.contains(&format!("<p id=\"headline\"><strong>{summary}</strong>")), "{summary}");
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(dir.path().join(REPORT_FILE)).expect("report.json")).expect("json");
    assert_eq!(json["summary"], summary.as_str());
    // An undecided run says which judged signals held it, and how many more cycles they need; a
    // corroborating signal's noise does not.
    let (mut undecided, _) = leaking_report();
    undecided.verdict.verdict = crate::verdict::Verdict::Inconclusive;
    for s in undecided.verdict.signals.iter_mut().filter(|s| !s.informational) {
        s.verdict = crate::verdict::Verdict::Inconclusive;
        s.more_cycles_needed = Some(120);
    }
    let summary = undecided.summary();
    assert!(summary.starts_with("inconclusive after 150 cycles: undecided: "), "{summary}");
    assert!(summary.contains("unexplained_bytes (about 120 more cycles needed)"), "{summary}");
    assert!(!summary.contains("rss_anon_outside_jemalloc_bytes"), "corroborating only: {summary}");
}

#[test]
fn a_clean_return_to_baseline_under_a_leak_says_why_the_two_differ() {
    let (mut report, _) = leaking_report();
    let (first, last) = (sample(0).sample, sample(149).sample);
    report.verdict.baseline_return = Some(crate::verdict::BaselineReturn::judge(&first, &last, 2 << 20));
    assert_eq!(report.verdict.verdict, crate::verdict::Verdict::Leak);
    let line = words::totals_lines(&report).into_iter().find(|l| l.starts_with("return to baseline")).expect("a line");
    assert!(line.starts_with("return to baseline: clean, within 2.0 MiB allowed"), "{line}");
    assert!(line.contains("not the verdict: the leak found by live_handles"), "{line}");
    // Beyond its allowance, it says so, and is a finding of its own.
    let mut grown = last.clone();
    if let Some(j) = grown.jemalloc.as_mut() {
        j.allocated_bytes += 100_000;
    }
    report.verdict.baseline_return = Some(crate::verdict::BaselineReturn::judge(&first, &grown, 0));
    let line = words::totals_lines(&report).into_iter().find(|l| l.starts_with("return to baseline")).expect("a line");
    assert!(line.starts_with("return to baseline: leak, beyond the 16.0 KiB allowed"), "{line}");
    assert!(report.findings().iter().any(|f| f.signal == "baseline_return"));
}

#[test]
fn a_clean_summary_says_what_it_rules_out_and_what_was_not_measured() {
    let flat = |c: u64| {
        let mut s = sample(c);
        if let Some(j) = s.sample.jemalloc.as_mut() {
            j.allocated_bytes = 10_000_000 + (c * 7919) % 2000;
            (j.tcache_bytes, j.internal_bytes) = (0, 40_000);
        }
        s.sample.rocksdb = None;
        s.retained_handles = BTreeMap::new();
        s
    };
    let samples: Vec<CycleSample> = (0..150).map(flat).collect();
    let mut verdict = analyze(&samples, None, None, &AnalysisConfig::default());
    verdict.signals.push(crate::verdict::SignalVerdict::unmeasured(
        crate::signal::Signal::Integrity.into(),
        crate::verdict::Rule::Exact { expected: 0.0 },
        crate::verdict::Unmeasured::NoIntegrityCheck,
    ));
    let settings = RunSettings { command: "check".to_string(), cycles: 150, ..RunSettings::default() };
    let report = RunReport::new(
        settings,
        verdict,
        CycleSummary::default(),
        crate::ledger::Ledger::new().report(),
        150,
        3.0,
        true,
    );
    let summary = report.summary();
    assert_eq!(report.verdict.verdict, crate::verdict::Verdict::Clean, "{summary}");
    assert!(summary.starts_with("clean after 150 cycles: rules out a continuing leak above "), "{summary}");
    assert!(summary.contains("/cycle (unexplained_bytes)"), "{summary}");
    assert!(summary.ends_with("; not measured: integrity"), "{summary}");
    assert_eq!(text::table(&report).lines().next(), Some(summary.as_str()));
}

#[test]
fn the_job_summary_opens_with_the_summary_and_lists_what_was_not_measured() {
    let (mut report, _) = leaking_report();
    report.verdict.signals.push(crate::verdict::SignalVerdict::unmeasured(
        crate::signal::Signal::SwallowedCloseErrors.into(),
        crate::verdict::Rule::Exact { expected: 0.0 },
        crate::verdict::Unmeasured::NoCloseResults,
    ));
    let md = github::summary(&report, std::path::Path::new("/"), None);
    let mut lines = md.lines().filter(|l| !l.is_empty());
    assert_eq!(lines.next(), Some("## leakcheck check: leak"));
    assert!(lines.next().is_some_and(|l| l.starts_with("leak: live\\_handles.Options: 1 Options handle")), "{md}");
    assert!(md.contains("### Not measured"), "{md}");
    assert!(md.contains("- `swallowed_close_errors`: no close result was made"), "{md}");
}

/// A signal whose undecided state does not hold the run (a corroborating one with no growth
/// evidenced) is shown, not judged, everywhere: not a finding, not a note of cycles needed, in
/// parentheses in the table; one that holds the run is a finding of an inconclusive run.
#[test]
fn an_undecided_signal_that_does_not_judge_says_so_everywhere() {
    let flat = |c: u64| {
        let mut s = sample(c);
        if let Some(j) = s.sample.jemalloc.as_mut() {
            j.allocated_bytes = 10_000_000 + (c * 7919) % 2000;
            (j.tcache_bytes, j.internal_bytes) = (0, 40_000);
        }
        s.sample.rocksdb = None;
        s.retained_handles = BTreeMap::new();
        s
    };
    let samples: Vec<CycleSample> = (0..150).map(flat).collect();
    let mut verdict = analyze(&samples, None, None, &AnalysisConfig::default());
    // A corroborating signal left undecided, its growth not evidenced.
    let rss = verdict
        .signals
        .iter_mut()
        .find(|s| s.signal.signal() == crate::signal::Signal::RssAnonOutsideJemallocBytes)
        .expect("rss_anon_outside_jemalloc_bytes");
    assert!(rss.corroborating());
    (rss.verdict, rss.informational, rss.growth, rss.more_cycles_needed) =
        (crate::verdict::Verdict::Inconclusive, false, None, Some(224));
    verdict.verdict = crate::verdict::aggregate(&mut verdict.signals);
    let settings = RunSettings { command: "check".to_string(), cycles: 150, ..RunSettings::default() };
    let report = RunReport::new(
        settings.clone(),
        verdict.clone(),
        CycleSummary::default(),
        crate::ledger::Ledger::new().report(),
        150,
        3.0,
        true,
    );
    let undecided: Vec<_> = report
        .verdict
        .signals
        .iter()
        .filter(|s| !s.informational && s.verdict != crate::verdict::Verdict::Clean)
        .collect();
    assert_eq!(report.verdict.verdict, crate::verdict::Verdict::Clean, "{undecided:#?}");
    let rss = report.signal(crate::signal::Signal::RssAnonOutsideJemallocBytes).expect("the row");
    assert!(rss.informational, "shown, not judged");
    assert!(report.findings().is_empty(), "{:?}", report.findings());
    let table = text::table(&report);
    assert!(!table.contains("rss_anon_outside_jemalloc_bytes: inconclusive"), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("rss_anon_outside_jemalloc_bytes") && l.contains("(inconclusive)")),
        "{table}"
    );
    // Growth evidenced: it holds the run, and is its finding.
    let mut held = verdict;
    let rss = held
        .signals
        .iter_mut()
        .find(|s| s.signal.signal() == crate::signal::Signal::RssAnonOutsideJemallocBytes)
        .expect("row");
    rss.informational = false;
    let unexplained = held.signal(crate::signal::Signal::UnexplainedBytes).and_then(|s| s.growth).expect("a growth");
    let rss = held
        .signals
        .iter_mut()
        .find(|s| s.signal.signal() == crate::signal::Signal::RssAnonOutsideJemallocBytes)
        .expect("row");
    rss.growth = Some(crate::verdict::Growth { lower: 1.0, ..unexplained });
    held.verdict = crate::verdict::aggregate(&mut held.signals);
    let report =
        RunReport::new(settings, held, CycleSummary::default(), crate::ledger::Ledger::new().report(), 150, 3.0, true);
    assert_eq!(report.verdict.verdict, crate::verdict::Verdict::Inconclusive);
    assert!(report.findings().iter().any(|f| f.signal == "rss_anon_outside_jemalloc_bytes"), "{:?}", report.findings());
}
