//! The reached-functions table of the locked binding: every public function that reaches
//! RocksDB's C API is reached by an op or listed with a reason, and every function an op says it
//! reaches is one of the binding's (a renamed or mistyped one fails here). Pure text.

use leakcheck_sweep::fuzz::reached;
use leakcheck_sweep::surface;

fn src() -> std::path::PathBuf {
    surface::binding_source(leakcheck_sweep::ROCKSDB_VERSION).expect("the locked binding's source")
}

#[test]
fn every_function_an_op_names_is_the_bindings() {
    let unknown = reached::unknown_entries(&src()).expect("read the binding");
    assert!(unknown.is_empty(), "ops name functions the binding does not have: {unknown:?}");
}

#[test]
fn every_public_function_reaching_the_c_api_is_reached_or_has_a_reason() {
    let rows = reached::table(&src()).expect("read the binding");
    println!("{}", reached::counts(&rows));
    // The parser still reads this release: hundreds of such functions, the central ones among them.
    assert!(rows.len() > 400, "only {} functions found", rows.len());
    for f in
        ["DBCommon::create_cf", "DBCommon::get_column_family_metadata", "Options::set_comparator", "DBCommon::open_cf"]
    {
        let row = rows.iter().find(|r| r.function == f).unwrap_or_else(|| panic!("{f} not in the table"));
        assert!(row.reason.is_none() && !row.ops.is_empty(), "{f}: {row:?}");
    }
    for r in &rows {
        assert!(r.ops.is_empty() != r.reason.is_none(), "{r:?}");
    }
    // Every function is reached or has a reason of substance: a new release's new function fails
    // here until an op reaches it or it is classified.
    let unmodelled: Vec<&str> =
        rows.iter().filter(|r| r.reason == Some(reached::NOT_MODELLED)).map(|r| r.function.as_str()).collect();
    assert!(unmodelled.is_empty(), "{} functions neither reached nor classified: {unmodelled:?}", unmodelled.len());
    // What no op may reach: a pure Rust accessor is not in the table.
    assert!(!rows.iter().any(|r| r.function == "Range::new"), "Range::new calls no C function");
}
