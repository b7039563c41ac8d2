//! `rocksdb-sweep --fuzz` can fail: two leaks planted in copies of binding functions (one only on
//! an error path, one only for empty arguments) are found by drawn programs, shrunk to the one
//! step and the plainest class that leak, and printed as snippets; and the same seed draws the
//! same programs. Each program runs in a child of its own (process-wide jemalloc counters).
#![cfg(feature = "planted")]

use std::process::Command;

use leakcheck_sweep::fuzz::FuzzReport;

fn fuzz(args: &[&str]) -> (i32, FuzzReport) {
    let out = Command::new(env!("CARGO_BIN_EXE_rocksdb-sweep"))
        .args(["--fuzz", "--json"])
        .args(args)
        .output()
        .expect("spawn rocksdb-sweep");
    let code = out.status.code().unwrap_or(-1);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("exit {code}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (code, report)
}

#[test]
fn planted_leaks_are_found_and_shrunk_to_the_step_and_class_that_leak() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let report_dir = dir.path().join("report");
    let report_arg = report_dir.to_str().expect("a UTF-8 path");
    let ops = "planted-open,planted-batch-put,put,get,close,reopen";
    let (code, report) = fuzz(&[
        "--plant",
        "--ops",
        ops,
        "--seed",
        "7",
        "--programs",
        "26",
        "--duration",
        "10m",
        "--report",
        report_arg,
    ]);
    print!("{}", leakcheck_sweep::fuzz::summary(&report));
    assert_eq!(report.programs.len(), 26, "the count asked for");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let steps: Vec<Vec<String>> = report.findings.iter().map(|f| f.steps.clone()).collect();
    // The error path: a lock error (the fixture's own DB, open) is the plainest class that fails
    // the open; valid, empty (a new DB in the cycle's directory) and invalid (refused before
    // RocksDB) do not leak.
    assert!(steps.contains(&vec!["planted-open/conflicting".to_string()]), "{steps:?}");
    // The argument class: only an empty key skips the destroy.
    assert!(steps.contains(&vec!["planted-batch-put/empty".to_string()]), "{steps:?}");
    for f in &report.findings {
        assert_eq!(f.steps.len(), 1, "shrunk to one step: {:?}", f.steps);
        assert!(f.known.is_none());
        let [bytes, lo, _] = f.run.bytes_per_run.expect("bytes per run");
        assert!(lo > 0.0 && bytes > 16.0, "{:?}: {bytes} B per run, lower {lo}", f.steps);
        assert!(f.snippet.contains("fn main()") && f.snippet.contains("planted::"), "{}", f.snippet);
        let written = std::fs::read_to_string(report_dir.join(format!("finding-{}.rs", f.id))).expect("snippet file");
        assert_eq!(written, f.snippet);
    }
    // No program with only valid, non-empty planted steps leaked.
    for p in &report.programs {
        let plain = p.program.steps.iter().all(|s| s.class == leakcheck_sweep::fuzz::op::ArgClass::Valid);
        assert!(!(plain && p.verdict == leakcheck::Verdict::Leak), "a valid program leaked: {:?}", p.program);
    }
    assert_eq!(code, 1, "new leaks fail the fuzz");
    // The report on disk is the one printed, complete.
    let on_disk: FuzzReport = serde_json::from_slice(&std::fs::read(report_dir.join("fuzz.json")).expect("fuzz.json"))
        .expect("parse fuzz.json");
    assert!(on_disk.complete);
    assert_eq!(on_disk.programs.len(), report.programs.len());
    assert_eq!(on_disk.seed, 7);
}

#[test]
fn bad_fuzz_arguments_are_errors_naming_the_problem() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_rocksdb-sweep")).args(args).output().expect("spawn rocksdb-sweep");
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, err) = run(&["--fuzz", "--ops", "no-such-op", "--programs", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no-such-op"), "{err}");
    let (code, err) = run(&["--fuzz", "--duration", "ten minutes"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ten minutes"), "{err}");
    let program = r#"{"steps":[{"op":"reopen","class":"valid","args":{"n":0}}]}"#;
    let file = tempfile::NamedTempFile::new().expect("temporary file");
    std::fs::write(file.path(), program).expect("write the program");
    let (code, err) = run(&["--program", file.path().to_str().expect("UTF-8")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("needs the DB closed"), "{err}");
}

/// A crash (a child killed by a signal) is shrunk like a leak: from a program of several steps to
/// the one step and class that kill the process, with its snippet; programs that hold it later
/// are counted under it, not shrunk again.
#[test]
fn a_planted_crash_is_shrunk_to_the_step_and_class_that_kill_the_process() {
    use leakcheck_sweep::fuzz::program::{Program, Step};
    use leakcheck_sweep::fuzz::{shrink, Exe, Keep};
    let exe = Exe { path: env!("CARGO_BIN_EXE_rocksdb-sweep").into(), prefix: Vec::new() };
    let step = |json: &str| -> Step { serde_json::from_str(json).expect("a step") };
    let program = Program {
        steps: vec![
            step(r#"{"op": "put", "class": "valid", "args": {"key": {"lit": "k"}, "value": {"lit": "v"}}}"#),
            step(r#"{"op": "planted-ratelimiter", "class": "large", "args": {"n": 0}}"#),
            step(r#"{"op": "get", "class": "valid", "args": {"key": {"lit": "k"}}}"#),
        ],
    };
    let crashed = exe.run(&program).expect_err("a rate of 0 kills the child");
    assert_eq!(crashed.signal(), Some(6), "SIGABRT: {crashed}");
    let shrunk = shrink(&exe, program, None, Keep::Signal(6), 40);
    let labels: Vec<String> = shrunk.program.steps.iter().map(Step::label).collect();
    // One step left, and its class made plainer while the child still dies: `valid` draws a
    // rate that is not 0, `empty` draws 0.
    assert_eq!(labels, ["planted-ratelimiter/empty"], "after {} checks", shrunk.checks);
    assert!(shrunk.run.is_none(), "a crash has no run");
    assert_eq!(exe.run(&shrunk.program).err().and_then(|e| e.signal()), Some(6));

    // In a fuzz: reported under crashes, with a snippet written beside fuzz.json.
    let dir = tempfile::tempdir().expect("temporary directory");
    let report_arg = dir.path().to_str().expect("a UTF-8 path");
    let (code, report) = fuzz(&[
        "--plant",
        "--ops",
        "planted-ratelimiter,put",
        "--seed",
        "3",
        "--programs",
        "10",
        "--report",
        report_arg,
    ]);
    print!("{}", leakcheck_sweep::fuzz::summary(&report));
    let crash = report.crashes.iter().find(|c| c.steps == ["planted-ratelimiter/empty"]).expect("the crash");
    assert_eq!(crash.signal, 6);
    assert!(report.findings.is_empty(), "no leak: {:?}", report.findings);
    let snippet = std::fs::read_to_string(dir.path().join(format!("crash-{}.rs", crash.id))).expect("crash snippet");
    assert!(snippet.contains("fn main()") && snippet.contains("planted::set_ratelimiter"), "{snippet}");
    let crashed: usize = report.crashes.iter().map(|c| 1 + c.also_in.len()).sum();
    assert_eq!(crashed, report.failures.len(), "every crashed program is under a crash: {:?}", report.failures);
    assert_eq!(code, 0, "a crash is reported, not a leak");
}
