//! Every snippet the fuzz prints is Rust against rust-rocksdb alone: the snippet of every op with
//! every class (the planted ops aside: they call this crate's copies) type-checks with rustc
//! against the binding this crate was built with, found beside this test's binary.

use std::path::PathBuf;
use std::process::Command;

use leakcheck_sweep::fuzz::{op, program};

/// The directory of this build's dependencies and the rocksdb rlib in it.
fn binding() -> (PathBuf, PathBuf) {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_rocksdb-sweep"));
    let deps = exe.parent().expect("the target directory").join("deps");
    let rlib = std::fs::read_dir(&deps)
        .expect("the deps directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("librocksdb-") && n.ends_with(".rlib"))
        })
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("a rocksdb rlib beside the sweep");
    (deps, rlib)
}

#[test]
fn every_snippet_type_checks_against_the_binding_alone() {
    let pool: Vec<&op::Op> = leakcheck_sweep::fuzz::all_ops().filter(|o| !o.planted).collect();
    let programs = program::single_steps(&pool);
    // One crate: each snippet in a module of its own (its inner attribute moved to the top).
    let mut source = String::from("#![allow(unused_imports, unused_variables, dead_code)]\nfn main() {}\n");
    for (i, p) in programs.iter().enumerate() {
        let s = program::snippet(p, &[format!("{:?}", p.steps.last().map(|s| s.label()))]);
        assert!(!s.contains("leakcheck"), "a snippet names leakcheck:\n{s}");
        let body: String = s.lines().filter(|l| !l.starts_with("#![")).collect::<Vec<_>>().join("\n");
        source.push_str(&format!("mod snippet{i} {{\n{body}\n}}\n"));
    }
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("snippets.rs");
    std::fs::write(&file, &source).expect("write the snippets");
    let (deps, rlib) = binding();
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(rustc)
        .args(["--edition", "2021", "--crate-type", "bin", "--emit=metadata", "-o"])
        .arg(dir.path().join("snippets.rmeta"))
        .arg("-L")
        .arg(format!("dependency={}", deps.display()))
        .arg("--extern")
        .arg(format!("rocksdb={}", rlib.display()))
        .arg(&file)
        .output()
        .expect("run rustc");
    assert!(
        out.status.success(),
        "{} snippets do not type-check:\n{}",
        programs.len(),
        String::from_utf8_lossy(&out.stderr).lines().take(60).collect::<Vec<_>>().join("\n")
    );
}
