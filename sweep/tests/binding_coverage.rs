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

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use leakcheck_sweep::surface::{exported, functions, matching, owned_idents, rust_files, type_name, types};

/// clippy.toml's disallowed types (last path segment) and methods (`Type::method`).
fn disallowed() -> (BTreeSet<String>, BTreeSet<String>) {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../clippy.toml")).expect("clippy.toml");
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
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../src/tracked"), &mut files).expect("read src/tracked");
    let files = expand_macros(files);
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

/// The wrappers' sources with every invocation of a one-argument macro they define (`tracked_reads!`,
/// the iterator and snapshot methods of a readable wrapper; `tracked_cfs!`, the column family
/// methods of a DB wrapper) replaced by the macro's body, its parameter replaced by the argument,
/// so the methods it generates count as the wrapper's own.
fn expand_macros(files: Vec<(String, String)>) -> Vec<(String, String)> {
    let mut macros: Vec<(String, String, String)> = Vec::new(); // name, parameter, body
    for (_, text) in &files {
        for (at, _) in text.match_indices("macro_rules! ") {
            let rest = &text[at + 13..];
            let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let (Some(param_at), Some(arm)) = (rest.find('$'), rest.find("=> {")) else { continue };
            let param: String =
                rest[param_at..].chars().take_while(|c| *c == '$' || c.is_alphanumeric() || *c == '_').collect();
            let open = at + 13 + arm + 3;
            macros.push((name, param, text[open + 1..matching(text.as_bytes(), open)].to_string()));
        }
    }
    let names: Vec<&str> = macros.iter().map(|(n, ..)| n.as_str()).collect();
    assert!(names.contains(&"tracked_reads") && names.contains(&"tracked_cfs"), "macros in src/tracked: {names:?}");
    files
        .into_iter()
        .map(|(file, mut text)| {
            for (name, param, body) in &macros {
                let call = format!("{name}!(");
                let mut out = String::with_capacity(text.len());
                let mut rest = text.as_str();
                while let Some(at) = rest.find(&call) {
                    let arg_at = at + call.len();
                    let end = rest[at..].find(");").map_or(rest.len(), |p| at + p + 2);
                    let arg = rest[arg_at..end.saturating_sub(2).max(arg_at)].trim();
                    out.push_str(&rest[..at]);
                    out.push_str(&body.replace(param.as_str(), arg));
                    rest = &rest[end..];
                }
                out.push_str(rest);
                text = out;
            }
            (file, text)
        })
        .collect()
}

#[test]
fn every_handle_returning_function_of_the_locked_binding_is_shadowed_or_disallowed() {
    let src = leakcheck_sweep::surface::binding_source(leakcheck_sweep::ROCKSDB_VERSION)
        .expect("the locked binding's source");
    let mut files = Vec::new();
    rust_files(&src, &mut files).expect("read the binding's source");
    let t = types(&files);
    let handles = t.handles();
    let (dis_types, dis_methods) = disallowed();
    let wrappers = wrappers();
    let exported = exported(&src).expect("the binding's lib.rs");
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
            // The wrappers whose Deref target is the impl's type or resolves through it: `impl
            // DBCommon<T, D>` is reached from TrackedDb (`DB` -> `DBWithThreadMode` -> `DBCommon`);
            // `impl OptimisticTransactionDB<T>`, an alias of `DBCommon<T,
            // OptimisticTransactionDBInner>`, is not.
            let through: Vec<(&String, &BTreeSet<String>)> = wrappers
                .iter()
                .filter(|(_, (target, _))| t.chain(target).contains(&f.ty))
                .map(|(w, (_, methods))| (w, methods))
                .collect();
            let via = (!through.is_empty()).then_some(&through);
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
