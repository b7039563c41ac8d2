//! A signal whose source never reported reads `not measured`, with the reason, in the verdict,
//! the table, report.json and the summary, and takes no part in the run's verdict; the same
//! signals fed by a store that reports them are measured. A data directory that does not exist
//! yet is made before the first cycle, and one that cannot be made is refused, named.
//! Process-wide measurement (jemalloc): one test in this file, its runs one after another.
#![cfg(any(feature = "rocksdb", feature = "unprefixed-malloc"))]

use std::path::PathBuf;

use leakcheck::verdict::Unmeasured;
use leakcheck::{CloseResult, CycleCtx, HandleKind, Integrity, Ledger, Lifecycle, Signal, Verdict};

/// Does nothing the ledger, the integrity check or the directory probes could see: every optional
/// method left to its default, `fault_points` included.
struct Bare;

impl Lifecycle for Bare {
    type Store = Vec<u8>;
    type Error = String;

    fn open(&mut self, _ctx: &CycleCtx<'_>) -> Result<Vec<u8>, String> {
        Ok(vec![1; 4096])
    }

    fn work(&mut self, store: &mut Vec<u8>, ctx: &CycleCtx<'_>) -> Result<(), String> {
        store[0] = ctx.cycle as u8;
        Ok(())
    }

    fn close(&mut self, _store: Vec<u8>, _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }
}

/// Reports every source: a handle registered and released, a close result taken, a check, a
/// file written under a data directory that does not exist when the run starts.
struct Reporting {
    dir: PathBuf,
}

impl Lifecycle for Reporting {
    type Store = leakcheck::Token;
    type Error = String;

    fn open(&mut self, ctx: &CycleCtx<'_>) -> Result<leakcheck::Token, String> {
        std::fs::write(self.dir.join("data"), ctx.cycle.to_be_bytes()).map_err(|e| e.to_string())?;
        Ok(ctx.ledger.register(HandleKind::Other("socket")))
    }

    fn work(&mut self, _store: &mut leakcheck::Token, _ctx: &CycleCtx<'_>) -> Result<(), String> {
        Ok(())
    }

    fn close(&mut self, store: leakcheck::Token, ctx: &CycleCtx<'_>) -> Result<(), String> {
        drop(store);
        CloseResult::<String>::new(ctx.ledger, "socket", Ok(())).into_result()
    }

    fn check(&mut self, _ctx: &CycleCtx<'_>) -> Integrity {
        let mut found = Integrity::default();
        found.records_checked = 1;
        let present = std::fs::read(self.dir.join("data")).is_ok();
        found.violation("lost_data", u64::from(!present));
        found
    }

    fn data_dir(&self) -> Option<PathBuf> {
        Some(self.dir.clone())
    }
}

const SOURCED: [(Signal, Unmeasured); 7] = [
    (Signal::LiveHandles, Unmeasured::NoHandles),
    (Signal::UnsharedCachesOpen, Unmeasured::NoHandles),
    (Signal::DeclaredSharedGrowth, Unmeasured::NoHandles),
    (Signal::SwallowedCloseErrors, Unmeasured::NoCloseResults),
    (Signal::Integrity, Unmeasured::NoIntegrityCheck),
    (Signal::RocksdbExplainedBytes, Unmeasured::NoRocksdbMemory),
    (Signal::OpenFdsUnderDir, Unmeasured::NoDataDir),
];

#[test]
fn signals_without_a_source_say_so_and_the_data_directory_is_made() {
    // Nothing reported: each row not measured, with its reason, everywhere a reader looks.
    let ledger = Ledger::new();
    let bare = leakcheck::check(&mut Bare, &ledger).cycles(40).max_cycles(40).run().expect("the check runs");
    let report = &bare.report;
    for (signal, why) in SOURCED {
        let row = report.signal(signal).unwrap_or_else(|| panic!("{signal:?} has a row:\n{bare}"));
        assert_eq!((row.verdict, row.not_measured), (Verdict::NotMeasured, Some(why)), "{signal:?}");
        assert!(!row.measured());
    }
    assert_ne!(bare.verdict(), Verdict::NotMeasured, "never a run's verdict");
    let json: serde_json::Value = serde_json::from_str(&bare.json()).expect("json");
    let integrity = json["signals"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["name"] == "integrity"))
        .expect("an integrity entry");
    assert_eq!((&integrity["measured"], &integrity["verdict"]), (&false.into(), &"not_measured".into()), "{integrity}");
    assert_eq!(integrity["reason"], Unmeasured::NoIntegrityCheck.reason());
    assert_eq!(json["summary"], bare.summary());
    let table = bare.table();
    assert_eq!(table.lines().next(), Some(bare.summary().as_str()));
    assert!(bare.summary().contains("not measured: "), "{}", bare.summary());
    let row = table.lines().find(|l| l.starts_with("integrity ")).expect("an integrity row");
    assert!(row.contains("not measured") && row.contains(Unmeasured::NoIntegrityCheck.reason()), "{row}");
    // A report read back keeps it.
    let back: leakcheck::report::RunReport = serde_json::from_value(json).expect("reads back");
    assert_eq!(back.signal(Signal::Integrity).map(|s| s.verdict), Some(Verdict::NotMeasured));

    // Every source reported: the same rows measured, the directory made before the first cycle.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("not").join("made").join("yet");
    let ledger = Ledger::new();
    let mut store = Reporting { dir: dir.clone() };
    let reporting = leakcheck::check(&mut store, &ledger).cycles(40).max_cycles(40).run().expect("the check runs");
    assert!(dir.is_dir());
    assert_eq!(reporting.report.cycles_summary.open_errors, 0, "{reporting}");
    for (signal, _) in SOURCED.iter().filter(|(s, _)| *s != Signal::RocksdbExplainedBytes) {
        let row = reporting.report.signal(*signal).unwrap_or_else(|| panic!("{signal:?} has a row:\n{reporting}"));
        assert_eq!((row.verdict, row.not_measured), (Verdict::Clean, None), "{signal:?}:\n{reporting}");
    }

    // A directory that cannot be made is refused before the first cycle, named.
    let file = tmp.path().join("a-file");
    std::fs::write(&file, b"").expect("write");
    let mut store = Reporting { dir: file.join("db") };
    let ledger = Ledger::new();
    let err = leakcheck::check(&mut store, &ledger).cycles(30).run().expect_err("refused");
    assert!(err.to_string().contains(&file.join("db").display().to_string()), "{err}");
    assert_eq!(ledger.live_total(), 0, "no cycle ran");
}
