//! The soak binary (src/bin/kv-soak.rs, one call to leakcheck's runner) behaves as `leakcheck`
//! does: a soak killed with SIGKILL mid-run leaves a valid report; `check --json` prints the
//! report with the service's own setting; `compare` reads two reports; bad input is one line,
//! exit 2.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use leakcheck::report::{self, RunReport};

const BIN: &str = env!("CARGO_BIN_EXE_kv-soak");

fn wait_for_report(path: &Path, cycles: u64) -> RunReport {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(r) = report::read(path) {
            if r.cycles_run >= cycles {
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
    let mut child = Command::new(BIN)
        .args(["soak", "--duration", "10m", "--report-every", "2", "--cache-bytes", "4194304", "--report"])
        .arg(dir.path())
        .env_remove("LEAKCHECK_FAULTS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn kv-soak");
    wait_for_report(&path, 6);
    std::thread::sleep(Duration::from_millis(300));
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let r = report::read(&path).expect("a valid report survives SIGKILL");
    assert!(!r.complete, "killed mid-run: the last rewrite is an interim report");
    assert!(r.cycles_run >= 6);
    assert_eq!(r.settings.store, "kv service");
    assert_eq!(r.settings.store_settings.get("cache_bytes"), Some(&serde_json::json!(4194304)));
    let csv = std::fs::read_to_string(dir.path().join(report::SAMPLES_FILE)).expect("samples.csv");
    report::parse_samples_csv(&csv).expect("samples.csv reads back");
}

#[test]
fn check_prints_its_report_and_compare_reads_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(BIN)
        .args(["check", "--cycles", "30", "--max-cycles", "30", "--faults", "none", "--json", "--report"])
        .arg(dir.path())
        .output()
        .expect("run kv-soak");
    assert!([0, 3].contains(&out.status.code().unwrap_or(-1)), "{}", String::from_utf8_lossy(&out.stderr));
    let printed: RunReport = serde_json::from_slice(&out.stdout).expect("stdout is the report");
    assert_eq!(printed, report::read(&dir.path().join(report::REPORT_FILE)).expect("report.json"));
    assert_eq!((printed.cycles_run, printed.settings.plan.as_str()), (30, ""));
    let same = dir.path().join(report::REPORT_FILE);
    let cmp = Command::new(BIN).arg("compare").args([&same, &same]).output().expect("compare");
    assert_eq!(cmp.status.code(), Some(0), "{}", String::from_utf8_lossy(&cmp.stdout));
    assert!(String::from_utf8_lossy(&cmp.stdout).contains("no regression"));
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    for args in [
        &["check", "--faults", "open.dbb=5%"][..],
        &["check", "--cycles", "3"],
        &["soak", "--duration", "1h"],
        &["check", "--cache-bytes", "x"],
    ] {
        let out = Command::new(BIN).args(args).output().expect("run kv-soak");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("kv-soak: "), "{args:?}: {stderr}");
    }
}
