//! memcheck-loop CYCLES LEAK DIR: open/write/close a 2-column-family RocksDB in a fresh
//! directory per cycle, planting LEAK each cycle: `forget-options` (a rocksdb Options
//! forgotten: its native object leaks, unreachable), `malloc-1k` (1 KiB of C malloc,
//! unreachable), `park-options` (a rocksdb Options parked in a process-wide registry: never
//! released, reachable at exit), or `none`. The same scenarios as `leakcheck time-to-verdict`.
use std::process::ExitCode;
use std::sync::Mutex;

/// Where `park-options` parks its Options: lives as long as the process.
static PARKED: Mutex<Vec<rocksdb::Options>> = Mutex::new(Vec::new());

const LEAKS: [&str; 4] = ["forget-options", "malloc-1k", "park-options", "none"];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(cycles), Some(leak), Some(dir)) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("usage: memcheck-loop CYCLES {} DIR", LEAKS.join("|"));
        return ExitCode::from(2);
    };
    if !LEAKS.contains(&leak.as_str()) {
        eprintln!("memcheck-loop: unknown leak `{leak}`: expected one of {}", LEAKS.join(", "));
        return ExitCode::from(2);
    }
    let Ok(cycles) = cycles.parse::<u32>() else {
        eprintln!("memcheck-loop: CYCLES must be a number");
        return ExitCode::from(2);
    };
    for c in 0..cycles {
        let path = std::path::Path::new(dir).join(format!("cycle-{c}"));
        let mut opts = rocksdb::Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        let cfs = ["data", "offsets"].map(|n| rocksdb::ColumnFamilyDescriptor::new(n, rocksdb::Options::default()));
        let db = match rocksdb::DB::open_cf_descriptors(&opts, &path, cfs) {
            Ok(db) => db,
            Err(e) => {
                eprintln!("memcheck-loop: open: {e}");
                return ExitCode::from(2);
            }
        };
        for name in ["data", "offsets"] {
            if let Some(cf) = db.cf_handle(name) {
                for i in 0..100u32 {
                    let _ = db.put_cf(cf, i.to_be_bytes(), [0x5a; 64]);
                }
            }
        }
        drop(db);
        let _ = std::fs::remove_dir_all(&path);
        match leak.as_str() {
            "malloc-1k" => {
                // SAFETY: plain C malloc, leaked on purpose (the pointer is dropped).
                let p = unsafe { libc::malloc(1024) };
                std::hint::black_box(p);
            }
            "forget-options" => std::mem::forget(rocksdb::Options::default()),
            "park-options" => match PARKED.lock() {
                Ok(mut parked) => parked.push(rocksdb::Options::default()),
                Err(_) => return ExitCode::from(2),
            },
            _ => {}
        }
    }
    ExitCode::SUCCESS
}
