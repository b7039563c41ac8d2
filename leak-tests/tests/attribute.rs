//! `#[leakcheck::test]` on ordinary tests: a clean one and a leaking one in one file, each with
//! its own verdict under nextest (in place) and under `cargo test` (a child process each, with one
//! test thread or eight).

// Ordinary tests use rocksdb's own types: the attribute's point is that they need no wrapper.
#![allow(clippy::disallowed_types)]

#[global_allocator]
static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;

use rocksdb::{Options, DB};

/// An ordinary RocksDB test: open, write, read, close.
#[leakcheck::test]
fn a_db_opened_and_dropped() -> Result<(), rocksdb::Error> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut opts = Options::default();
    opts.create_if_missing(true);
    let db = DB::open(&opts, dir.path())?;
    db.put(b"key", b"value")?;
    assert_eq!(db.get(b"key")?.as_deref(), Some(&b"value"[..]));
    Ok(())
}

/// The same test, losing its options' native object on every run.
#[leakcheck::test]
#[should_panic(expected = "is not clean")]
fn options_forgotten() {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    std::mem::forget(opts);
}

/// The two tests above run as `cargo test` runs them (threads of one process, here with one
/// test thread and with eight): each must then run in a child process of its own and keep its
/// own verdict, which its report directory (`LEAKCHECK_TEST_REPORTS`) records.
#[test]
fn each_verdict_is_its_own_under_cargo_test() {
    let exe = std::env::current_exe().expect("this test binary");
    for threads in ["1", "8"] {
        let reports = tempfile::tempdir().expect("a temporary directory");
        let out = std::process::Command::new(&exe)
            .args([
                "a_db_opened_and_dropped",
                "options_forgotten",
                "nested::a_vec_made_and_dropped",
                "--exact",
                "--test-threads",
                threads,
            ])
            .env_remove("NEXTEST")
            .env_remove("NEXTEST_EXECUTION_MODE")
            .env(leakcheck::runner::attribute::REPORTS_ENV, reports.path())
            .output()
            .expect("the test binary runs");
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "with {threads} test threads:\n{said}");
        let verdict = |test: &str| {
            let report = leakcheck::report::read(&reports.path().join(format!("attribute-{test}")).join("report.json"))
                .unwrap_or_else(|e| panic!("{test}'s report, {threads} threads: {e}\n{said}"));
            report.verdict.verdict
        };
        assert_eq!(verdict("a_db_opened_and_dropped"), leakcheck::Verdict::Clean, "{said}");
        assert_eq!(verdict("options_forgotten"), leakcheck::Verdict::Leak, "{said}");
        assert_eq!(verdict("nested-a_vec_made_and_dropped"), leakcheck::Verdict::Clean, "{said}");
    }
}

/// A test's own fault point, taken on every third run: its failure path releases what it made.
#[leakcheck::test(faults = "write=every:3")]
fn a_failure_path_that_releases() -> Result<(), String> {
    let pending = vec![0u8; 4096];
    if leakcheck::fault("write") {
        return Err(format!("injected, {} bytes dropped", pending.len()));
    }
    assert_eq!(pending.len(), 4096);
    Ok(())
}

/// The same failure path losing its buffer: a leak in one cycle of three.
#[leakcheck::test(faults = "write=every:3")]
#[should_panic(expected = "is not clean")]
fn a_failure_path_that_leaks() -> Result<(), String> {
    let pending = vec![0u8; 4096];
    if leakcheck::fault("write") {
        std::mem::forget(pending);
        return Err("injected".to_string());
    }
    Ok(())
}

/// A test failing on its own (no fault fired) fails as it would without the attribute, with its
/// own panic.
#[leakcheck::test]
#[should_panic(expected = "the test's own assertion")]
fn a_test_that_fails_on_its_own() {
    let made: Vec<u8> = (0..16).collect();
    assert_eq!(made.len(), 17, "the test's own assertion");
}

/// A plan naming a point the body never checks is a mistake, not a pass.
#[leakcheck::test(faults = "flush=always")]
#[should_panic(expected = "which the test never checked")]
fn a_plan_naming_an_unchecked_point() {
    drop(vec![1u8; 16]);
}

/// A body checking a point with no plan to fire it would pass without ever taking the path.
#[leakcheck::test]
#[should_panic(expected = "no plan names them")]
fn a_point_without_a_plan() {
    if leakcheck::fault("flush") {
        unreachable!("no plan fires it");
    }
}

mod nested {
    /// A test in a module: its child process is filtered to `nested::...`.
    #[leakcheck::test]
    fn a_vec_made_and_dropped() {
        let v: Vec<u64> = (0..1000).collect();
        assert_eq!(v.iter().sum::<u64>(), 499_500);
    }
}

/// A file the test made in its temporary directory, left open on every run: no byte of the heap
/// is lost, and the open file decides (the body's `TMPDIR` is watched as a store's directory is).
#[leakcheck::test]
#[should_panic(expected = "open_fds_under_dir")]
fn a_file_left_open() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = std::fs::File::create(dir.path().join("scratch")).expect("a file to make");
    std::mem::forget(file);
}

/// A body using the tracked wrappers with the check's ledger: a handle it keeps is found exactly,
/// with the line that made it.
#[leakcheck::test]
#[should_panic(expected = "1 Options handle retained, created at leak-tests/tests/attribute.rs")]
fn a_tracked_handle_kept() {
    let opts = leakcheck::tracked::TrackedOptions::new(leakcheck::test_ledger());
    std::mem::forget(opts);
}
