//! The reached-functions table: every public function of the binding that reaches RocksDB's C
//! API (read from the binding's source by [`crate::surface::reaching`]), with the ops that call it
//! or the reason none does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::all_ops;
use super::op::Op;
use crate::surface::{self, Func, SurfaceError};

/// One public function of the binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// `Type::function`, the type's aliases resolved.
    pub function: String,
    /// Where it is defined in the binding's source.
    pub at: String,
    /// The ops that call it.
    pub ops: Vec<&'static str>,
    /// Why no op calls it, when none does.
    pub reason: Option<&'static str>,
}

/// Why a function is not reached, in the order they are tried.
pub const UNSAFE: &str = "unsafe: its contract is the caller's (raw pointers, lifetimes)";
/// A destructor of a type no op makes.
pub const DESTRUCTOR: &str = "destructor of a type no op makes";
/// A twin of a function the ops call, for the multi-threaded DB.
pub const MULTI_THREADED: &str = "multi-threaded twin: the fixture's DB is single-threaded";
/// Changes a process-wide thread pool, which no drop undoes.
pub const PROCESS_WIDE: &str =
    "process-wide: sizes or reprioritises the default Env's thread pools, which outlive every Env value";
/// Needs user-defined timestamps.
pub const TIMESTAMPS: &str =
    "user-defined timestamps: needs a DB opened with a timestamp-aware comparator, not in the model";
/// Functions whose argument is a user type implementing a callback trait or a struct of many
/// fields: the model has no such values yet.
pub const CALLBACK_SHAPED_REASON: &str =
    "takes a user-implemented trait object or a many-field struct (a compaction filter factory, a write batch iterator, a plain table's options): not in the model yet";
const CALLBACK_SHAPED: &[&str] = &[
    "Options::set_compaction_filter_factory",
    "Options::set_plain_table_factory",
    "SliceTransform::create",
    "WriteBatchWithTransaction::iterate",
    "WriteBatchWithTransaction::iterate_cf",
];
/// Not in the model yet.
pub const NOT_MODELLED: &str = "not modelled yet";

/// Each op's reached functions, keyed by `Type::function` with the type's aliases resolved.
fn reached_by(types: &surface::Types) -> BTreeMap<String, Vec<&'static str>> {
    let mut out: BTreeMap<String, Vec<&'static str>> = BTreeMap::new();
    for op in all_ops().filter(|o| !o.planted) {
        for r in op.reaches {
            if let Some((ty, f)) = r.split_once("::") {
                out.entry(format!("{}::{f}", types.resolve(ty))).or_default().push(op.name);
            }
        }
    }
    for (ty, f) in super::setters::SETTERS {
        out.entry(format!("{}::{f}", types.resolve(ty))).or_default().push("options-setters");
    }
    out
}

/// The table for the binding whose source is at `src`.
///
/// # Errors
/// The source cannot be read.
pub fn table(src: &Path) -> Result<Vec<Row>, SurfaceError> {
    let types = surface::binding_types(src)?;
    let by = reached_by(&types);
    let made: BTreeSet<&str> = by.keys().filter_map(|k| k.split("::").next()).collect();
    let rows = surface::reaching(src)?.into_iter().map(|f: Func| {
        let function = format!("{}::{}", f.ty, f.name);
        let mut ops = by.get(&function).cloned().unwrap_or_default();
        let is_drop = f.name == "drop" && f.trait_name.as_deref() == Some("Drop");
        if is_drop && made.contains(f.ty.as_str()) {
            ops =
                by.iter().filter(|(k, _)| k.starts_with(&format!("{}::", f.ty))).flat_map(|(_, o)| o.clone()).collect();
            ops.sort_unstable();
            ops.dedup();
        }
        let reason = ops.is_empty().then(|| {
            if f.unsafe_fn {
                UNSAFE
            } else if is_drop && f.ty != "BoundColumnFamily" {
                DESTRUCTOR
            } else if f.impl_header.contains("MultiThreaded") || f.ty == "BoundColumnFamily" {
                MULTI_THREADED
            } else if (f.ty == "Env" && (f.name.contains("threads") || f.name.contains("priority")))
                || f.name == "increase_parallelism"
            {
                PROCESS_WIDE
            } else if f.name.ends_with("_ts")
                || f.name.contains("_ts_")
                || f.name.contains("with_ts")
                || f.name.contains("timestamp")
            {
                TIMESTAMPS
            } else if CALLBACK_SHAPED.contains(&function.as_str()) {
                CALLBACK_SHAPED_REASON
            } else {
                NOT_MODELLED
            }
        });
        Row { function, at: f.at, ops, reason }
    });
    Ok(rows.collect())
}

/// Entries of the ops' `reaches` that name no function of the binding (a typo, or a function the
/// release renamed), as `(op, entry)`.
///
/// # Errors
/// The source cannot be read.
pub fn unknown_entries(src: &Path) -> Result<Vec<(&'static str, &'static str)>, SurfaceError> {
    let types = surface::binding_types(src)?;
    let mut files = Vec::new();
    surface::rust_files(src, &mut files)?;
    let known: BTreeSet<String> = files
        .iter()
        .flat_map(|(file, text)| surface::all_functions(text, file))
        .map(|f| format!("{}::{}", types.resolve(&f.ty), f.name))
        .collect();
    let mut out = Vec::new();
    for op in all_ops().filter(|o: &&Op| !o.planted) {
        for r in op.reaches {
            let Some((ty, f)) = r.split_once("::") else {
                out.push((op.name, *r));
                continue;
            };
            if !known.contains(&format!("{}::{f}", types.resolve(ty))) {
                out.push((op.name, *r));
            }
        }
    }
    Ok(out)
}

/// The table as text: one row per function, then the counts.
pub fn render(rows: &[Row], release: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "public functions of rust-rocksdb {release} that reach RocksDB's C API, and the fuzz ops that call them"
    );
    for r in rows {
        let what = match r.reason {
            Some(reason) => format!("- {reason}"),
            None => format!("reached by {}", r.ops.join(", ")),
        };
        let _ = writeln!(out, "{:<64} {:<36} {what}", r.function, r.at);
    }
    let _ = writeln!(out, "{}", counts(rows));
    out
}

/// `N functions: R reached; U unsafe, ...`.
pub fn counts(rows: &[Row]) -> String {
    let reached = rows.iter().filter(|r| r.reason.is_none()).count();
    let by = |reason: &str| rows.iter().filter(|r| r.reason == Some(reason)).count();
    format!(
        "{} functions: {reached} reached; {} unsafe, {} multi-threaded twins, {} process-wide, {} need timestamps, {} destructors of types no op makes, {} take a user callback type, {} not modelled yet",
        rows.len(),
        by(UNSAFE),
        by(MULTI_THREADED),
        by(PROCESS_WIDE),
        by(TIMESTAMPS),
        by(DESTRUCTOR),
        by(CALLBACK_SHAPED_REASON),
        by(NOT_MODELLED)
    )
}
