//! No native handle escapes the ledger, checked against the locked rust-rocksdb itself: this test
//! reads the binding's source in the cargo registry (the version in Cargo.lock), finds every public
//! function that returns a native handle type (a type with a `Drop` that frees a native object, or
//! one that holds such a type), and fails unless each is accounted for:
//!
//! - **shadowed**: the method is on a type a tracked wrapper derefs to, and the wrapper has a
//!   method of the same name (method resolution picks the wrapper's, which registers the handle);
//! - **disallowed**: `clippy.toml` lists the method (`disallowed-methods`), or lists its type
//!   (`disallowed-types`) and the function is a constructor (calling it names the type) or the type
//!   is reachable only through other functions, which are then checked themselves.
//!
//! A new rust-rocksdb release with a new handle-returning method makes this fail until the method
//! is wrapped or disallowed with a reason. Pure text: no process-wide signal, runs anywhere.
#![cfg(feature = "rocksdb")]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One function found in an `impl` block.
#[derive(Debug, Clone)]
struct Func {
    /// The implementing type's name (aliases not resolved).
    ty: String,
    name: String,
    /// In `impl Trait for Type` (trait methods are public when the trait is).
    trait_impl: bool,
    /// The trait's name, for trait methods.
    trait_name: Option<String>,
    /// Takes `&self` or `&mut self`: callable on a value reached through `Deref`.
    by_ref_self: bool,
    /// Takes `self` by value: not callable through `Deref` (nothing can move out of a borrow).
    by_value_self: bool,
    /// The return type, `Self` replaced by the implementing type.
    ret: String,
    at: String,
}

/// The text with comments and the contents of string and char literals blanked (newlines kept, so
/// offsets still give line numbers).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if b[i] == b'"' || (b[i] == b'r' && b.get(i + 1).is_some_and(|c| *c == b'"' || *c == b'#')) {
            // A string (raw or not): keep the quotes, blank the inside.
            let raw = b[i] == b'r';
            let mut hashes = 0;
            out.push(b[i]);
            i += 1;
            if raw {
                while b.get(i) == Some(&b'#') {
                    hashes += 1;
                    i += 1;
                }
                out.extend(std::iter::repeat_n(b'#', hashes));
                out.push(b'"');
                i += 1;
            }
            while i < b.len() {
                if !raw && b[i] == b'\\' {
                    out.extend_from_slice(b"  ");
                    i += 2;
                    continue;
                }
                if b[i] == b'"' && b[i + 1..].iter().take(hashes).all(|c| *c == b'#') && b.len() > i + hashes {
                    out.push(b'"');
                    out.extend(std::iter::repeat_n(b'#', hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.extend_from_slice(b"' '");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // '\n', '\'', '\x7f', '\u{..}'
            let end = b[i + 2..].iter().position(|c| *c == b'\'').map_or(b.len(), |p| i + 2 + p);
            out.extend(std::iter::repeat_n(b' ', end + 1 - i));
            i = end + 1;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn line_of(text: &str, at: usize) -> usize {
    text[..at].bytes().filter(|c| *c == b'\n').count() + 1
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the keyword `kw` starts at `i` as a whole word.
fn word_at(b: &[u8], i: usize, kw: &str) -> bool {
    b[i..].starts_with(kw.as_bytes())
        && (i == 0 || !is_ident(b[i - 1]))
        && b.get(i + kw.len()).is_none_or(|c| !is_ident(*c))
}

/// The index of the brace closing the one opened at `open`.
fn matching(b: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (i, c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Skips a `<...>` group starting at `i` (angle brackets balanced, `->` not counted).
fn skip_angles(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && b[i - 1] == b'-' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The last identifier of the type path at the start of `s` (`std::ops::Deref<..>` -> `Deref`).
fn type_name(s: &str) -> String {
    let s = s.trim_start().trim_start_matches('&').trim_start();
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(s.len());
    s[..end].rsplit("::").next().unwrap_or("").to_string()
}

/// Every `impl` block's public functions in `text` (already stripped): inherent ones marked `pub`,
/// and every trait method (public when the trait is).
fn functions(text: &str, file: &str) -> Vec<Func> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !word_at(b, i, "impl") {
            i += 1;
            continue;
        }
        let mut h = i + 4;
        while h < b.len() && b[h].is_ascii_whitespace() {
            h += 1;
        }
        if b.get(h) == Some(&b'<') {
            h = skip_angles(b, h);
        }
        let Some(open) = text[h..].find(['{', ';']).map(|p| h + p) else { break };
        if b[open] == b';' {
            i = open;
            continue;
        }
        let header = &text[h..open];
        // `Trait for Type`, with the trait's own generics skipped.
        let (trait_name, ty) = {
            let hb = header.as_bytes();
            let mut depth = 0;
            let mut split = None;
            for k in 0..hb.len() {
                match hb[k] {
                    b'<' => depth += 1,
                    b'>' if k > 0 && hb[k - 1] != b'-' => depth -= 1,
                    _ if depth == 0 && word_at(hb, k, "for") => {
                        split = Some(k);
                        break;
                    }
                    _ => {}
                }
            }
            match split {
                Some(k) => (Some(type_name(&header[..k])), type_name(&header[k + 3..])),
                None => (None, type_name(header)),
            }
        };
        let trait_impl = trait_name.is_some();
        let close = matching(b, open);
        let body_start = open + 1;
        let mut j = body_start;
        let mut depth = 0;
        while j < close {
            match b[j] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ if depth == 0 && word_at(b, j, "fn") => {
                    // Visibility: the words before `fn` on its line.
                    let line_start = text[..j].rfind('\n').map_or(0, |p| p + 1);
                    let before = text[line_start..j].trim();
                    let public = trait_impl
                        || before.starts_with("pub ")
                        || before == "pub"
                        || before.starts_with("pub unsafe")
                        || before.starts_with("pub const");
                    let restricted = before.starts_with("pub(");
                    let sig_end = text[j..close].find(['{', ';']).map_or(close, |p| j + p);
                    let sig = &text[j + 2..sig_end];
                    let name: String =
                        sig.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                    if public && !restricted && !name.is_empty() {
                        let params = sig.find('(').map_or("", |p| &sig[p..]);
                        let params_end = params.find(')').map_or(params.len(), |p| p);
                        let first = params[..params_end].trim_start_matches('(').split(',').next().unwrap_or("").trim();
                        let by_ref_self = first.starts_with('&') && first.ends_with("self");
                        let by_value_self =
                            !by_ref_self && (first == "self" || first == "mut self" || first.starts_with("self:"));
                        let ret = sig
                            .find("->")
                            .map(|p| {
                                let r = &sig[p + 2..];
                                let r = r.find(" where").map_or(r, |w| &r[..w]);
                                // `Self::Item` is an associated type, not the implementing type.
                                let r = r.split_whitespace().collect::<Vec<_>>().join(" ");
                                let r = r.replace("Self::", "SelfAssoc::");
                                r.replace("Self", &ty)
                            })
                            .unwrap_or_default();
                        out.push(Func {
                            ty: ty.clone(),
                            name,
                            trait_impl,
                            trait_name: trait_name.clone(),
                            by_ref_self,
                            by_value_self,
                            ret,
                            at: format!("{file}:{}", line_of(text, j)),
                        });
                    }
                    j = sig_end;
                    continue;
                }
                _ => {}
            }
            j += 1;
        }
        i = close;
    }
    out
}

/// Identifiers in `s`, except those behind a reference (`&Cache`, `&'a ColumnFamily`): a borrowed
/// handle is not a new one.
fn owned_idents(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    let mut borrowed = false;
    while i < b.len() {
        if b[i] == b'&' {
            borrowed = true;
            i += 1;
        } else if b[i] == b'\'' {
            // a lifetime: skip it, keep `borrowed`
            i += 1;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
        } else if is_ident(b[i]) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let word = &s[start..i];
            if word != "mut" && word != "dyn" {
                if !borrowed {
                    out.push(word.to_string());
                }
                // A path (`a::b`) or a generic argument keeps the borrow of its head only.
                if !s[i..].starts_with("::") {
                    borrowed = false;
                }
            }
        } else {
            if b[i] != b':' && !b[i].is_ascii_whitespace() {
                borrowed = false;
            }
            i += 1;
        }
    }
    out
}

/// `pub struct`/`struct` bodies, `type` aliases and `Drop` types of the binding.
struct Types {
    drops: BTreeSet<String>,
    bodies: BTreeMap<String, String>,
    aliases: BTreeMap<String, String>,
}

fn types(files: &[(String, String)]) -> Types {
    let mut t = Types { drops: BTreeSet::new(), bodies: BTreeMap::new(), aliases: BTreeMap::new() };
    for (_, text) in files {
        for f in functions(text, "") {
            if f.trait_impl && f.name == "drop" {
                t.drops.insert(f.ty);
            }
        }
        let b = text.as_bytes();
        for (i, _) in text.match_indices("struct ") {
            if !word_at(b, i, "struct") {
                continue;
            }
            let name = type_name(&text[i + 7..]);
            let rest = &text[i + 7..];
            let end = rest.find([';', '{']).map_or(rest.len(), |p| p);
            let body = if rest.as_bytes().get(end) == Some(&b'{') {
                let open = i + 7 + end;
                &text[open..matching(b, open)]
            } else {
                &rest[..end]
            };
            t.bodies.insert(name, body.to_string());
        }
        for (i, _) in text.match_indices("type ") {
            if !word_at(b, i, "type") || !text[..i].trim_end().ends_with("pub") {
                continue;
            }
            let rest = &text[i + 5..];
            let Some(eq) = rest.find('=') else { continue };
            let end = rest.find(';').unwrap_or(rest.len());
            if eq < end {
                t.aliases.insert(type_name(rest), type_name(&rest[eq + 1..end]));
            }
        }
    }
    t
}

impl Types {
    fn resolve(&self, name: &str) -> String {
        let mut n = name.to_string();
        for _ in 0..8 {
            match self.aliases.get(&n) {
                Some(target) if target != &n => n = target.clone(),
                _ => break,
            }
        }
        n
    }

    /// Types that own a native object: a `Drop` type, or one holding such a type (an `Arc` of a
    /// wrapper, a struct of options), through aliases.
    fn handles(&self) -> BTreeSet<String> {
        let mut handles: BTreeSet<String> = self.drops.clone();
        loop {
            let mut grew = false;
            for (name, body) in &self.bodies {
                if !handles.contains(name) && owned_idents(body).iter().any(|w| handles.contains(&self.resolve(w))) {
                    handles.insert(name.clone());
                    grew = true;
                }
            }
            for (alias, target) in &self.aliases {
                if !handles.contains(alias) && handles.contains(&self.resolve(target)) {
                    handles.insert(alias.clone());
                    grew = true;
                }
            }
            if !grew {
                return handles;
            }
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).expect("read_dir").map(|e| e.expect("entry").path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&p).expect("read source");
            out.push((p.display().to_string(), strip(&text)));
        }
    }
}

/// The locked rust-rocksdb's `src` in the cargo registry.
fn binding_source() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lock = std::fs::read_to_string(root.join("Cargo.lock")).expect("Cargo.lock");
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"rocksdb\"\n"))
        .and_then(|p| {
            p.lines().find_map(|l| l.strip_prefix("version = \"")).map(|v| v.trim_end_matches('"').to_string())
        })
        .expect("rocksdb in Cargo.lock");
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let registry = home.join("registry").join("src");
    let found = std::fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("cannot read the cargo registry at {}: {e}", registry.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path().join(format!("rocksdb-{version}")).join("src"))
        .find(|p| p.is_dir());
    found
        .unwrap_or_else(|| panic!("rocksdb-{version} is not in {}: build once so cargo unpacks it", registry.display()))
}

/// clippy.toml's disallowed types (last path segment) and methods (`Type::method`).
fn disallowed() -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("clippy.toml")).expect("clippy.toml");
    let mut types = BTreeSet::new();
    let mut methods = BTreeSet::new();
    let mut in_methods = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("disallowed-types") {
            in_methods = false;
        } else if line.starts_with("disallowed-methods") {
            in_methods = true;
        }
        if let Some(p) = line.split("path = \"").nth(1).and_then(|p| p.split('"').next()) {
            let segs: Vec<&str> = p.split("::").collect();
            if in_methods && segs.len() >= 2 {
                methods.insert(format!("{}::{}", segs[segs.len() - 2], segs[segs.len() - 1]));
            } else if !in_methods {
                types.insert(segs[segs.len() - 1].to_string());
            }
        }
    }
    (types, methods)
}

/// The tracked wrappers: what each derefs to, and the methods each has (its own and its trait
/// impls').
fn wrappers() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join("tracked"), &mut files);
    let files = expand_tracked_reads(files);
    let mut targets: BTreeMap<String, String> = BTreeMap::new();
    let mut methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        for (i, _) in text.match_indices("deref_and_token!(") {
            let args = &text[i + 17..];
            let end = args.find(')').unwrap_or(args.len());
            let mut parts = args[..end].splitn(2, ',');
            if let (Some(w), Some(t)) = (parts.next(), parts.next()) {
                if !w.contains('$') {
                    targets.insert(type_name(w), type_name(t));
                }
            }
        }
        for f in functions(text, file) {
            if f.trait_impl && f.name == "deref" {
                // The Target line is in the same impl: take the one nearest before this fn.
                let at: usize = f.at.rsplit(':').next().and_then(|l| l.parse().ok()).unwrap_or(0);
                let upto: usize = text.lines().take(at).map(|l| l.len() + 1).sum();
                if let Some(p) = text[..upto].rfind("type Target =") {
                    targets.insert(f.ty.clone(), type_name(&text[p + 13..]));
                }
            }
            methods.entry(f.ty.clone()).or_default().insert(f.name.clone());
        }
    }
    targets.into_iter().map(|(w, t)| (w.clone(), (t, methods.remove(&w).unwrap_or_default()))).collect()
}

/// The wrappers' sources with every `tracked_reads!(..);` (src/tracked/iter.rs: the iterator and
/// snapshot methods a readable wrapper shadows) replaced by the macro's body, so the methods it
/// generates count as the wrapper's own.
fn expand_tracked_reads(files: Vec<(String, String)>) -> Vec<(String, String)> {
    const NAME: &str = "macro_rules! tracked_reads";
    let body = files.iter().find_map(|(_, text)| {
        let at = text.find(NAME)?;
        let open = at + text[at..].find("=> {")? + 3;
        Some(text[open + 1..matching(text.as_bytes(), open)].to_string())
    });
    let body = body.expect("src/tracked/iter.rs defines macro_rules! tracked_reads");
    files
        .into_iter()
        .map(|(file, text)| {
            let mut out = String::with_capacity(text.len());
            let mut rest = text.as_str();
            while let Some(at) = rest.find("tracked_reads!(") {
                let end = rest[at..].find(");").map_or(rest.len(), |p| at + p + 2);
                out.push_str(&rest[..at]);
                out.push_str(&body);
                rest = &rest[end..];
            }
            out.push_str(rest);
            (file, out)
        })
        .collect()
}

/// The binding's public type names: what lib.rs re-exports, and the types of its `pub mod`s.
fn exported(src: &Path) -> BTreeSet<String> {
    let lib = strip(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut names = BTreeSet::new();
    for (i, _) in lib.match_indices("pub use crate::") {
        let rest = &lib[i..];
        let end = rest.find(';').unwrap_or(rest.len());
        for w in owned_idents(&rest[..end]) {
            names.insert(w);
        }
    }
    for (i, _) in lib.match_indices("pub mod ") {
        let module = type_name(&lib[i + 8..]);
        for file in [src.join(format!("{module}.rs")), src.join(&module).join("mod.rs")] {
            if let Ok(text) = std::fs::read_to_string(&file) {
                let text = strip(&text);
                for kw in ["pub struct ", "pub enum ", "pub type "] {
                    for (j, _) in text.match_indices(kw) {
                        names.insert(type_name(&text[j + kw.len()..]));
                    }
                }
            }
        }
    }
    names
}

#[test]
fn every_handle_returning_function_of_the_locked_binding_is_shadowed_or_disallowed() {
    let src = binding_source();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let t = types(&files);
    let handles = t.handles();
    let (dis_types, dis_methods) = disallowed();
    let wrappers = wrappers();
    let exported = exported(&src);
    // What each binding type is reached through: the wrappers that deref to it (aliases resolved).
    let mut wrapped: BTreeMap<String, Vec<(&String, &BTreeSet<String>)>> = BTreeMap::new();
    for (w, (target, methods)) in &wrappers {
        wrapped.entry(t.resolve(target)).or_default().push((w, methods));
    }
    assert!(wrapped.contains_key("DBCommon"), "TrackedDb's Deref target not found: {wrappers:?}");
    assert!(
        handles.contains("Cache")
            && handles.contains("DBPinnableSlice")
            && handles.contains("DBIteratorWithThreadMode"),
        "{handles:?}"
    );

    let mut checked = 0;
    let mut unaccounted = Vec::new();
    for (file, text) in &files {
        let short = file.rsplit("/src/").next().unwrap_or(file);
        for f in functions(text, short) {
            let returned: Vec<String> =
                owned_idents(&f.ret).into_iter().map(|w| t.resolve(&w)).filter(|w| handles.contains(w)).collect();
            if returned.is_empty() || f.name == "drop" {
                continue;
            }
            checked += 1;
            let ty = t.resolve(&f.ty);
            if !exported.contains(&f.ty) && !exported.contains(&ty) {
                continue; // a private type of the binding: no user can call it
            }
            let method = format!("{}::{}", f.ty, f.name);
            let resolved_method = format!("{ty}::{}", f.name);
            let trait_method = f.trait_name.as_ref().map(|tr| format!("{tr}::{}", f.name));
            let disallowed_method = dis_methods.contains(&method)
                || dis_methods.contains(&resolved_method)
                || trait_method.is_some_and(|m| dis_methods.contains(&m));
            let type_disallowed = dis_types.contains(&f.ty) || dis_types.contains(&ty);
            let via = wrapped.get(&ty);
            let shadowed = via.is_some_and(|ws| ws.iter().all(|(_, m)| m.contains(&f.name)));
            let takes_self = f.by_ref_self || f.by_value_self;
            let accounted = disallowed_method
                || shadowed
                // Nothing moves out of a wrapper's Deref: `self` by value is not reachable there.
                || (via.is_some() && f.by_value_self)
                // A constructor names its type; a disallowed type nobody derefs to is reached
                // only through functions checked here themselves.
                || (type_disallowed && (!takes_self || via.is_none()));
            if !accounted {
                let through = via.map_or(String::new(), |ws| {
                    format!(" (reached through {})", ws.iter().map(|(w, _)| w.as_str()).collect::<Vec<_>>().join(", "))
                });
                unaccounted.push(format!("{method} -> {} at {}{through}", f.ret, f.at));
            }
        }
    }
    eprintln!("{checked} handle-returning functions of rust-rocksdb at {}", src.display());
    assert!(checked > 50, "the parser found only {checked}: it no longer reads this binding's source");
    assert!(
        unaccounted.is_empty(),
        "{} function(s) return a native handle the ledger never sees; wrap them (a tracked method of \
         the same name on the wrapper) or add them to clippy.toml with a reason:\n  {}",
        unaccounted.len(),
        unaccounted.join("\n  ")
    );
}
