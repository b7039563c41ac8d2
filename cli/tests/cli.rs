//! The `leakcheck` binary, run as a user runs it: exit codes (0 clean, 1 leak, 2 bad input),
//! the JSON report and its schema, crash-safe soak reports under SIGKILL and SIGINT, and every
//! kind of bad input rejected with one line and no files left behind. Each test runs the binary
//! in processes of its own, so tests may run in parallel.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use leakcheck::report::{self, RunReport};
use leakcheck::{HandleKind, Signal, Verdict};

mod common;
use common::{leakcheck, BIN};

const SMALL: [&str; 4] = ["--tasks", "1", "--segments", "2"];

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// Check's defaults: the reference store, with nothing in question, is decided clean at the early
/// look (100 cycles, not 200).
#[test]
fn check_of_the_reference_store_is_clean_and_its_json_report_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rep = dir.path().join("report");
    let rep_s = rep.to_str().expect("utf-8 path");
    let mut args = vec!["check", "--json", "--report", rep_s];
    args.extend(SMALL);
    let out = leakcheck(&args);
    let verdicts: Vec<String> = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .ok()
        .and_then(|v| v["signals"].as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter(|s| s["verdict"] != "clean")
        .map(|s| format!("{}={}", s["name"], s["verdict"]))
        .collect();
    assert_eq!(code(&out), 0, "not clean: {verdicts:?}; stderr: {}", String::from_utf8_lossy(&out.stderr));

    let value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(value["schema_version"], report::SCHEMA_VERSION);
    assert_eq!(value["verdict"], "clean");
    let signals = value["signals"].as_array().expect("signals");
    assert!(signals.len() >= 10);
    for s in signals {
        assert!(s["verdict"].is_string(), "{s}");
        if s["kind"] == "statistical" && s["slope_per_cycle"].is_number() {
            assert!(s["lower"].is_number() && s["upper"].is_number(), "{s}");
        }
    }
    let printed: RunReport = serde_json::from_value(value).expect("stdout matches the schema");
    let written = report::read(&rep.join(report::REPORT_FILE)).expect("report.json reads back");
    assert_eq!(printed, written);
    let again: RunReport = serde_json::from_str(&serde_json::to_string(&written).expect("serialize")).expect("parse");
    assert_eq!(again, written);
    assert!(written.complete && !written.interrupted);
    for f in [report::SAMPLES_FILE, "plot.svg", "plot.png"] {
        assert!(rep.join(f).metadata().is_ok_and(|m| m.len() > 100), "{f} missing");
    }
    let csv = std::fs::read_to_string(rep.join(report::SAMPLES_FILE)).expect("csv");
    assert_eq!(written.cycles_run, leakcheck::runner::EARLY_LOOK_CYCLES, "decided at the early look");
    assert_eq!(csv.lines().count() as u64, 1 + written.cycles_run, "header + one row per cycle");
}

/// When native allocations are invisible to jemalloc (a build without the unprefixed override),
/// the byte signals are unavailable: the same run that comes out clean above exits 3, with the
/// reason in the report and one line of text, and the exact signals still judged.
#[test]
fn check_with_native_allocations_invisible_exits_3_not_0() {
    let mut args =
        vec!["check", "--cycles", "200", "--max-cycles", "200", "--json", "--simulate-invisible-allocations"];
    args.extend(SMALL);
    let out = leakcheck(&args);
    assert_eq!(code(&out), 3, "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let r: RunReport = serde_json::from_slice(&out.stdout).expect("report");
    assert_eq!(r.verdict.verdict, Verdict::Inconclusive);
    assert!(
        r.verdict.bytes_unavailable.as_deref().is_some_and(|w| w.contains("not routed to jemalloc")),
        "{:?}",
        r.verdict.bytes_unavailable
    );
    let bytes: Vec<_> =
        r.verdict.signals.iter().filter(|s| s.class() == leakcheck::Class::Bytes && !s.informational).collect();
    assert!(!bytes.is_empty() && bytes.iter().all(|s| s.verdict == Verdict::Inconclusive), "{bytes:?}");
    assert!(r
        .verdict
        .signals
        .iter()
        .filter(|s| s.kind() == leakcheck::verdict::RuleKind::Exact)
        .all(|s| s.verdict == Verdict::Clean));
    assert_eq!(r.cycles_run, 200, "the run is not cut short");

    let mut args = vec!["check", "--cycles", "30", "--max-cycles", "30", "--simulate-invisible-allocations"];
    args.extend(SMALL);
    let text = leakcheck(&args);
    assert_eq!(code(&text), 3);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert_eq!(stdout.lines().filter(|l| l.starts_with("byte signals unavailable")).count(), 1, "{stdout}");
}

/// Past --cycles, check goes on while the memory verdict is inconclusive, deciding every 10
/// cycles, and never beyond --max-cycles. Judged by jemalloc's counter alone (`--generations
/// off`), 30 cycles (10 after warm-up) are below the evidence floor: inconclusive with the cycles
/// still needed, never leak or clean. With the allocation generations (the default), the record
/// decides those 30 cycles: clean, the counter's undecided rule shown, not judged.
#[test]
fn check_goes_on_while_inconclusive_up_to_max_cycles() {
    let run = |max: &str, generations: &str| -> (i32, RunReport) {
        let mut args = vec!["check", "--cycles", "30", "--max-cycles", max, "--generations", generations, "--json"];
        args.extend(SMALL);
        let out = leakcheck(&args);
        assert!([0, 3].contains(&code(&out)), "stderr: {}", String::from_utf8_lossy(&out.stderr));
        (code(&out), serde_json::from_slice(&out.stdout).expect("report"))
    };
    let (exit, fixed) = run("30", "off");
    assert_eq!((exit, fixed.verdict.verdict), (3, Verdict::Inconclusive));
    assert_eq!((fixed.cycles_run, fixed.settings.max_cycles), (30, Some(30)));
    let bytes = fixed.signal(Signal::UnexplainedBytes).expect("bytes signal");
    assert_eq!(bytes.verdict, Verdict::Inconclusive);
    assert!(bytes.more_cycles_needed.is_some_and(|n| n >= 20), "{bytes:?}");

    let (exit, recorded) = run("30", "on");
    assert_eq!((exit, recorded.verdict.verdict, recorded.cycles_run), (0, Verdict::Clean, 30));
    let retained = recorded.signal(Signal::RetainedBytes).expect("retained_bytes");
    assert!(retained.verdict == Verdict::Clean && !retained.informational, "{retained:?}");
    let bytes = recorded.signal(Signal::UnexplainedBytes).expect("bytes signal");
    assert!(bytes.verdict != Verdict::Inconclusive || bytes.informational, "{bytes:?}");

    // Going on while inconclusive: with the record, a look whose judged cycles already settle the
    // bytes decides (the counter shown, not judged), or the run goes on as the counter's would.
    let (exit, r) = run("400", "on");
    assert_eq!((exit, r.verdict.verdict), (0, Verdict::Clean), "{}", r.cycles_run);
    assert_eq!((r.cycles_run - 30) % 10, 0, "decided only at checkpoints: {}", r.cycles_run);

    let (_, r) = run("400", "off");
    assert!((30..=400).contains(&r.cycles_run), "{}", r.cycles_run);
    assert_eq!((r.cycles_run - 30) % 10, 0, "decided only at checkpoints: {}", r.cycles_run);
    if r.cycles_run < 400 {
        assert_ne!(r.verdict.verdict, Verdict::Inconclusive, "stopped early without a verdict at {}", r.cycles_run);
    }
    assert_eq!(r.settings.max_cycles, Some(400));
}

/// A short complete run decides on the allocation generations: 1 KiB of C malloc a cycle is a
/// leak, and the clean loop clean, within a few cycles past the 5-cycle warm-up (the counter's
/// growth rule needed 36): 8 judged cycles, by which a leak in every cycle holds 4 of the later
/// half's (docs/verdict.md, the power table). `--leak none` can only be clean because
/// retained_bytes judged it.
#[test]
fn time_to_verdict_decides_in_a_few_cycles() {
    let run = |leak: &str| -> (i32, serde_json::Value) {
        let out = leakcheck(&["time-to-verdict", "--leak", leak, "--max-cycles", "60", "--json"]);
        assert!([0, 1].contains(&code(&out)), "{leak}: stderr {}", String::from_utf8_lossy(&out.stderr));
        (code(&out), serde_json::from_slice(&out.stdout).expect("time-to-verdict JSON"))
    };
    // A leak needs 8 judged cycles (4 of a later half) after the fresh-DB loop's 5 of warm-up; a
    // record holding nothing old is clean after 3 (docs/verdict.md, "Decided early").
    for (leak, exit, verdict, first) in [("malloc-1k", 1, "leak", 10), ("none", 0, "clean", 9)] {
        let (code, d) = run(leak);
        assert_eq!((code, d["verdict"].as_str()), (exit, Some(verdict)), "{leak}: {d}");
        let cycles = d["cycles_to_verdict"].as_u64().expect("cycles_to_verdict");
        assert!((first..=14).contains(&cycles), "{leak}: decided after {cycles} cycles: {d}");
        assert!(d["cycles_in_all"].as_u64().is_some_and(|all| all >= cycles), "{d}");
    }
}

#[test]
fn check_with_a_planted_leak_exits_1_and_names_the_signal() {
    let mut args = vec![
        "check",
        "--cycles",
        "30",
        "--json",
        "--plant",
        "open-failure-leaks-options",
        "--faults",
        "open.options=every:3",
    ];
    args.extend(SMALL);
    let out = leakcheck(&args);
    assert_eq!(code(&out), 1, "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let r: RunReport = serde_json::from_slice(&out.stdout).expect("report");
    assert_eq!(r.verdict.verdict, Verdict::Leak);
    assert_eq!(r.signal(Signal::LiveHandles).map(|s| s.verdict), Some(Verdict::Leak));
    assert!(r.ledger.retained.iter().any(|g| g.kind == HandleKind::Options));
}

#[test]
fn bad_input_is_one_line_exit_2_and_leaves_no_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").expect("file");
    let under_file = file.join("sub");
    let wrong_schema = dir.path().join("old.json");
    std::fs::write(&wrong_schema, r#"{"schema_version": 999, "verdict": "clean"}"#).expect("json");
    let not_json = dir.path().join("not.json");
    std::fs::write(&not_json, "not json").expect("file");
    let fresh = dir.path().join("never-created");
    let fresh_s = fresh.to_str().expect("utf-8");
    let junit_under_file = under_file.join("junit.xml").display().to_string();
    let dir_s = dir.path().to_str().expect("utf-8");
    let missing_toml = dir.path().join("no-such.toml").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["chek"],
        vec!["check", "--bogus"],
        vec!["check", "--duration", "5x", "--report", fresh_s],
        vec!["check", "--duration", "0s", "--report", fresh_s],
        vec!["check", "--handle-quiet", "soon", "--report", fresh_s],
        vec!["check", "--generations", "maybe", "--report", fresh_s],
        vec!["check", "--faults", "close.mraker=10%", "--report", fresh_s],
        vec!["check", "--faults", "close.marker", "--report", fresh_s],
        vec!["check", "--faults", "close.marker=200%", "--report", fresh_s],
        vec!["check", "--tracking", "verbose", "--report", fresh_s],
        vec!["check", "--plant", "no-such-leak", "--report", fresh_s],
        vec!["check", "--cycles", "5", "--report", fresh_s],
        vec!["check", "--cycles", "50", "--max-cycles", "40", "--report", fresh_s],
        vec!["check", "--duration", "1m", "--max-cycles", "400", "--report", fresh_s],
        vec!["soak", "--duration", "1h", "--max-cycles", "400", "--report", fresh_s],
        vec!["check", "--tasks", "0", "--report", fresh_s],
        vec!["check", "--report", under_file.to_str().expect("utf-8")],
        vec!["soak", "--duration", "1h"],
        vec!["soak", "--report", fresh_s],
        vec!["compare", wrong_schema.to_str().expect("utf-8"), wrong_schema.to_str().expect("utf-8")],
        vec!["compare", not_json.to_str().expect("utf-8"), not_json.to_str().expect("utf-8")],
        vec!["compare", fresh_s, fresh_s],
        vec!["mutants", "--cycles", "3"],
        vec!["check", "--annotations", "gitlab", "--report", fresh_s],
        vec!["check", "--junit", junit_under_file.as_str(), "--report", fresh_s],
        vec!["check", "--junit", dir_s, "--report", fresh_s],
        vec!["check", "--suppressions", missing_toml.as_str(), "--report", fresh_s],
        vec!["check", "--suppressions", not_json.to_str().expect("utf-8"), "--report", fresh_s],
        vec!["check", "--baseline", not_json.to_str().expect("utf-8"), "--report", fresh_s],
        vec!["check", "--baseline-margin", "-1", "--report", fresh_s],
    ];
    for args in cases {
        let out = leakcheck(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(code(&out), 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line expected:\n{stderr}");
        assert!(stderr.starts_with("leakcheck: "), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: nothing on stdout");
        assert!(!fresh.exists(), "{args:?} created {}", fresh.display());
    }
    let schema = leakcheck(&["compare", wrong_schema.to_str().expect("utf-8"), wrong_schema.to_str().expect("utf-8")]);
    assert!(String::from_utf8_lossy(&schema.stderr).contains("schema version 999"));
}

fn spawn_soak(report_dir: &Path) -> Child {
    Command::new(BIN)
        // A sample every cycle: the plots need 5 (soak's default takes one every 5 cycles).
        .args(["soak", "--duration", "10m", "--report-every", "2", "--sample-every", "1", "--report"])
        .arg(report_dir)
        .args(SMALL)
        .env_remove("LEAKCHECK_FAULTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn soak")
}

/// Waits until the soak has rewritten its report at least twice.
fn wait_for_report(path: &Path) -> RunReport {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = report::read(path) {
            if r.cycles_run >= 6 {
                return r;
            }
        }
        assert!(Instant::now() < deadline, "no report at {}", path.display());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_soak_killed_with_sigkill_leaves_a_valid_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(report::REPORT_FILE);
    let mut child = spawn_soak(dir.path());
    wait_for_report(&path);
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let r = report::read(&path).expect("a valid report survives SIGKILL");
    assert!(!r.complete, "killed mid-run: the last rewrite is an interim report");
    assert!(r.cycles_run >= 6);
    assert!(dir.path().join(report::SAMPLES_FILE).exists());
    // The page is rewritten right after report.json (report_browser.rs opens it in Chromium):
    // killed between the two, it is one rewrite (--report-every 2) behind.
    let page = std::fs::read_to_string(dir.path().join(report::HTML_FILE)).expect("report.html survives SIGKILL");
    assert!(page.trim_end().ends_with("</html>"), "a torn page");
    let shown = [r.cycles_run, r.cycles_run - 2].map(|n| page.contains(&format!("; {n} cycles in")));
    assert!(shown.contains(&true), "the page is of neither the JSON's rewrite nor the one before");
}

#[test]
fn sigint_finishes_the_cycle_and_writes_the_final_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(report::REPORT_FILE);
    let mut child = spawn_soak(dir.path());
    let interim = wait_for_report(&path);
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGINT to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let status = child.wait().expect("exit");
    let r = report::read(&path).expect("final report");
    assert!(r.complete && r.interrupted, "{r:?}");
    assert!(r.cycles_run >= interim.cycles_run);
    assert_ne!(status.code(), Some(2), "an interrupted soak is not an error");
    assert!(dir.path().join("plot.png").exists(), "the final report draws its plots");
}

#[test]
fn compare_flags_a_regression_in_leak_rate_and_accepts_an_unchanged_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["check", "--cycles", "40", "--json"];
    args.extend(SMALL);
    let out = leakcheck(&args);
    assert_ne!(code(&out), 2, "{}", String::from_utf8_lossy(&out.stderr));
    let mut value: serde_json::Value = serde_json::from_slice(&out.stdout).expect("report");
    let old = dir.path().join("old.json");
    std::fs::write(&old, serde_json::to_vec(&value).expect("json")).expect("write");
    let same = leakcheck(&["compare", old.to_str().expect("utf-8"), old.to_str().expect("utf-8")]);
    assert_eq!(code(&same), 0, "{}", String::from_utf8_lossy(&same.stdout));

    // The counter's rate, when it had one (a run the record decided early may have none): set in
    // both, then far beyond the run's own noise (its slope interval) in the new one.
    let rate = value["leak_rate"]["bytes_per_cycle"].as_f64().unwrap_or(0.0);
    value["leak_rate"] = serde_json::json!({
        "signal": "unexplained_bytes", "bytes_per_cycle": rate, "bytes_per_instance": rate / 2.0, "instances_per_cycle": 2
    });
    std::fs::write(&old, serde_json::to_vec(&value).expect("json")).expect("write");
    let retained_at = value["signals"]
        .as_array()
        .and_then(|a| a.iter().position(|s| s["name"] == "retained_bytes"))
        .expect("retained_bytes judged");
    let worse = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = value.clone();
        edit(&mut v);
        let new = dir.path().join("new.json");
        std::fs::write(&new, serde_json::to_vec(&v).expect("json")).expect("write");
        let out = leakcheck(&["compare", old.to_str().expect("utf-8"), new.to_str().expect("utf-8"), "--json"]);
        assert_eq!(code(&out), 1, "{}", String::from_utf8_lossy(&out.stdout));
        let cmp: serde_json::Value = serde_json::from_slice(&out.stdout).expect("comparison");
        cmp["regressions"]
            .as_array()
            .expect("regressions")
            .iter()
            .filter_map(|r| r.as_str().map(String::from))
            .collect::<Vec<_>>()
    };
    let regressions = worse(&|v| v["leak_rate"]["bytes_per_cycle"] = serde_json::json!(rate + 1_048_576.0));
    assert!(regressions.iter().any(|r| r.starts_with("leak rate")), "{regressions:?}");
    // The record's bytes per cycle: a regression beyond the margin, with no noise to allow for.
    let regressions = worse(&|v| {
        let s = &mut v["signals"][retained_at];
        for field in ["slope_per_cycle", "lower", "upper"] {
            s[field] = serde_json::json!(4096.0);
        }
    });
    assert!(regressions.iter().any(|r| r.starts_with("retained bytes")), "{regressions:?}");
}

/// `--profile`: the planted raw malloc of 4 KiB per cycle is named by its call stack under the
/// verdict, at about 4 KiB per cycle, and the report directory holds the two pprof profiles and
/// the folded stacks of the growth. The binary starts with jemalloc's profiler ready.
#[test]
fn profile_names_the_stack_of_a_raw_leak() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rep = dir.path().join("report");
    let rep_s = rep.to_str().expect("utf-8 path");
    let args = [
        "check",
        "--plant",
        "raw-malloc-per-cycle",
        "--cycles",
        "100",
        "--max-cycles",
        "100",
        "--profile",
        "14",
        "--json",
        "--report",
        rep_s,
    ];
    let out = leakcheck(&args);
    // The stacks are the property here. Sampling at 2^14 moves the byte signals (docs/guide.md), so
    // beside other tests 100 cycles may end inconclusive (3) rather than leak (1); never clean.
    assert!(matches!(code(&out), 1 | 3), "exit {}; stderr: {}", code(&out), String::from_utf8_lossy(&out.stderr));
    let r: RunReport = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let planted = r
        .heap_growth
        .iter()
        .take(3)
        .find(|g| g.frames.first().is_some_and(|f| f.contains("ReferenceStore")))
        .unwrap_or_else(|| panic!("no top-3 stack starts in the reference store: {:#?}", r.heap_growth));
    // About 4 KiB per cycle, as a sampled estimate: at 2^14 a 4 KiB block is sampled with chance
    // 0.22, so 80 cycles give about 18 samples (sd about 3.7), and runs beside other tests gave 7
    // to 25 (1.6 to 5.8 KiB per cycle; 2026-12-05). The profile's 95% lower bound exceeds the
    // truth in about 2% of runs by its own definition (26 samples or more: the CI run of
    // 2026-12-07 failed on that when this test asked for <= 4 KiB), so the test asks what fails
    // only on a wrong bound: below the estimate, and under 1.5 times the truth (36 samples, 5 sd
    // out). The estimate must be within a factor of 4 of the truth.
    assert!(
        planted.lower_bytes_per_cycle < planted.bytes_per_cycle && planted.lower_bytes_per_cycle <= 6144.0,
        "the lower bound is above the estimate or 1.5 times the planted 4 KiB: {planted:?}"
    );
    assert!((1024.0..16384.0).contains(&planted.bytes_per_cycle), "about 4 KiB per cycle: {planted:?}");
    for f in ["heap-first.pb.gz", "heap-last.pb.gz", "heap-growth.folded", "heap-growth.svg"] {
        assert!(rep.join(f).metadata().is_ok_and(|m| m.len() > 20), "{f} missing");
    }
}

/// `leakcheck sweep`: a planted leak of 16 bytes per call fails it (exit 1) beside a clean path,
/// with bytes per call in the JSON rows; an unknown path is one line naming the paths, exit 2.
#[test]
fn sweep_fails_on_a_planted_leak_and_names_bad_paths() {
    let out = leakcheck(&["sweep", "--json", "put-get", "planted-16-bytes"]);
    assert_eq!(code(&out), 1, "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<leakcheck_sweep::PathOutcome> = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let row = |name: &str| rows.iter().find(|r| r.path == name).unwrap_or_else(|| panic!("{name} missing: {rows:?}"));
    assert_eq!(row("put-get").verdict, leakcheck::Verdict::Clean);
    assert_eq!(row("planted-16-bytes").verdict, leakcheck::Verdict::Leak);
    assert!(row("planted-16-bytes").bytes_per_call.is_some_and(|[b, _, _]| (15.0..=17.0).contains(&b)), "{rows:?}");
    let bad = leakcheck(&["sweep", "no-such-path"]);
    assert_eq!(code(&bad), 2);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.lines().count() == 1 && err.contains("no-such-path") && err.contains("create-cf-existing-fails"),
        "{err}"
    );
}

/// A retained handle that outlived its settle makes the verdict a leak whatever later cycles do:
/// check stops after that cycle and says why; `--all-cycles` runs every cycle, to the same verdict.
#[test]
fn check_stops_once_an_exact_signal_decides_and_all_cycles_runs_on() {
    let run = |extra: &[&str]| -> RunReport {
        let mut args =
            vec!["check", "--plant", "offsets-options-tracked", "--cycles", "30", "--max-cycles", "30", "--json"];
        args.extend(SMALL);
        args.extend(extra);
        let out = leakcheck(&args);
        assert_eq!(code(&out), 1, "stderr: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("report")
    };
    let stopped = run(&[]);
    assert!(stopped.cycles_run < 30, "ran on after the verdict was decided: {}", stopped.cycles_run);
    match &stopped.stopped {
        Some(leakcheck::harness::Stopped::ExactLeak { signal, cycle }) => {
            assert!(signal.to_string().starts_with("live_handles"), "{signal}");
            assert_eq!(cycle + 1, stopped.cycles_run);
        }
        other => panic!("no reason to stop: {other:?}"),
    }
    assert_eq!(stopped.verdict.verdict, Verdict::Leak);
    assert!(stopped.ledger.retained_of(HandleKind::Options) > 0);
    assert_eq!(stopped.first_leak_cycle, Some(stopped.cycles_run - 1));
    assert_eq!(stopped.settings.handle_quiet_ms, Some(100), "the report records the handle wait's quiet period");
    let full = run(&["--all-cycles", "--handle-quiet", "250ms"]);
    assert_eq!(full.settings.handle_quiet_ms, Some(250));
    assert_eq!((full.cycles_run, &full.stopped), (30, &None));
    assert_eq!(full.first_leak_cycle, stopped.first_leak_cycle, "the same first leaking cycle");
    assert!(full.ledger.retained_of(HandleKind::Options) > stopped.ledger.retained_of(HandleKind::Options));
}
