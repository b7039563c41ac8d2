//! Every path of this repository that README.md and docs/ name exists: a file moved or removed
//! takes its mentions with it. A path is read where it starts with one of the repository's
//! folders (`src/`, `docs/`, `leak-tests/`, ...) and is looked for from the root and from each
//! package's folder (a row about `examples/raw-store/` names its `tests/clean.rs`). The few paths
//! of other projects' files, or of a user's that the guide makes up, are listed below with why.

use std::path::{Path, PathBuf};

/// Folders a path of this repository starts with.
const FOLDERS: [&str; 13] = [
    "src/",
    "docs/",
    "scripts/",
    "cli/",
    "leak-tests/",
    "sweep/",
    "examples/",
    "benches/",
    "tests/",
    "macros/",
    "ci/",
    ".ci/",
    ".config/",
];

/// Packages whose files the docs may name from the package's folder.
const PACKAGES: [&str; 6] = ["cli", "leak-tests", "sweep", "macros", "examples/kv-service", "examples/raw-store"];

/// Paths that are not this repository's, each with where it is from.
const FOREIGN: [(&str, &str); 9] = [
    ("src/store.rs", "the guide's example of a user's store"),
    ("tests/db.rs", "the README's example of a user's test file"),
    ("tests/leaks.rs", "the README's example of a user's test file"),
    ("src/hook.c", "jemalloc's source"),
    ("src/jemalloc.c", "jemalloc's source"),
    ("src/arena.c", "jemalloc's source"),
    ("src/large.c", "jemalloc's source"),
    ("tests/test_column_family.rs", "rust-rocksdb's tests"),
    ("tests/test_db.rs", "rust-rocksdb's tests"),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The paths a line names: from a repository folder up to the first character a path does not
/// have, less trailing punctuation and a `:line` or `#anchor`. Globs and placeholders (`*`,
/// `{`, upper-case `NAME`) are not paths.
fn paths_in(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < line.len() {
        let starts = FOLDERS.iter().any(|f| line[i..].starts_with(f));
        let boundary =
            i == 0 || !matches!(bytes[i - 1], b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'/' | b'-');
        if !(starts && boundary) {
            i += line[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let len =
            line[i..].find(|c: char| !(c.is_ascii_alphanumeric() || "_./-*{}:#".contains(c))).unwrap_or(line.len() - i);
        let raw = &line[i..i + len];
        i += len.max(1);
        let path = raw.split([':', '#']).next().unwrap_or(raw).trim_end_matches(['.', ',', ';', ')']);
        let placeholder = path.contains(['*', '{', '}'])
            || path
                .split('/')
                .map(|s| s.split('.').next().unwrap_or(s))
                .any(|s| s.len() > 1 && s.chars().all(|c| c.is_ascii_uppercase()));
        if !placeholder && !path.is_empty() {
            out.push(path.to_string());
        }
    }
    out
}

fn exists(path: &str) -> bool {
    let root = root();
    root.join(path).exists() || PACKAGES.iter().any(|p| root.join(p).join(path).exists())
}

fn docs() -> Vec<PathBuf> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn every_path_the_docs_name_exists() {
    let mut missing = Vec::new();
    let mut read = 0;
    for file in docs() {
        let text = std::fs::read_to_string(&file).expect("read a doc");
        for (n, line) in text.lines().enumerate() {
            for path in paths_in(line) {
                read += 1;
                if !exists(&path) && !FOREIGN.iter().any(|(p, _)| *p == path) {
                    let name = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
                    missing.push(format!("{name}:{}: {path}", n + 1));
                }
            }
        }
    }
    assert!(read > 100, "only {read} paths read: the reader is broken");
    assert!(missing.is_empty(), "paths that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn every_foreign_path_is_still_named() {
    // A foreign path no doc names any more is removed from the list.
    let all: Vec<String> = docs()
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("read a doc");
            text.lines().flat_map(paths_in).collect::<Vec<_>>()
        })
        .collect();
    for (path, from) in FOREIGN {
        assert!(all.iter().any(|p| p == path), "{path} ({from}) is named by no doc: remove it from FOREIGN");
        assert!(!Path::new(&root()).join(path).exists(), "{path} exists here: it is not foreign");
    }
}

#[test]
fn the_reader_finds_paths_and_skips_placeholders() {
    let line = "see `src/verdict/growth/mod.rs:12`, docs/verdict.md#rule and leak-tests/src/NAME.rs, \
                a `scripts/*` glob, mysrc/x.rs";
    assert_eq!(paths_in(line), vec!["src/verdict/growth/mod.rs", "docs/verdict.md"]);
    assert!(!exists("src/verdict/growth.rs"), "a removed file is not found");
}
