// The fixture every fuzz program starts from, in plain rust-rocksdb: this file is both compiled
// into the sweep (it makes each cycle's DB) and printed at the top of every snippet, so that a
// snippet runs the very code the fuzz ran.

use std::path::Path;

use rocksdb::{Options, DB};

/// Options that create what is missing.
pub fn created() -> Options {
    let mut o = Options::default();
    o.create_if_missing(true);
    o.create_missing_column_families(true);
    o
}

/// A DB in `dir/db` with the column family `cf` and 100 keys of 64 bytes.
pub fn fixture(dir: &Path) -> Result<DB, rocksdb::Error> {
    let db = DB::open_cf(&created(), dir.join("db"), ["cf"])?;
    for k in 0..100u32 {
        db.put(format!("key{k:04}"), [7u8; 64])?;
    }
    Ok(db)
}

/// The DB in `dir/db` opened again with every column family it has.
pub fn reopen(dir: &Path) -> Result<DB, rocksdb::Error> {
    let cfs = DB::list_cf(&Options::default(), dir.join("db"))?;
    DB::open_cf(&created(), dir.join("db"), cfs)
}
