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

use leakcheck_sweep::surface::{exported, functions, owned_idents, rust_files, type_ident, types};
use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::punctuated::Punctuated;
use syn::visit_mut::{self, VisitMut};

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

/// The tracked wrappers: what each derefs to (`impl Deref`'s `Target`, or `deref_and_token!`'s
/// second argument), and the methods each has (its own, its trait impls' and those the macros it
/// invokes generate).
fn wrappers() -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut files = Vec::new();
    rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../src/tracked"), &mut files).expect("read src/tracked");
    let parsed: Vec<(String, syn::File)> =
        files.iter().map(|(file, text)| (file.clone(), syn::parse_file(text).expect(file))).collect();
    let all = macros(parsed.iter().map(|(_, syntax)| syntax));
    let names: Vec<&str> = all.iter().filter(|m| m.params.len() == 1 && !m.repeats).map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"tracked_reads") && names.contains(&"tracked_cfs"), "macros in src/tracked: {names:?}");
    let deref_and_token = all.iter().find(|m| m.name == "deref_and_token").expect("deref_and_token! in src/tracked");
    let mut targets: BTreeMap<String, String> = BTreeMap::new();
    let mut methods: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, mut syntax) in parsed {
        let mut walk = Expand { macros: &all, targets: &mut targets, derefs: Vec::new() };
        walk.visit_file_mut(&mut syntax);
        for wrapper in walk.derefs {
            methods.entry(wrapper).or_default().extend(fn_names(deref_and_token.body.clone()));
        }
        let text = syntax.to_token_stream().to_string();
        syn::parse_file(&text).unwrap_or_else(|e| panic!("{file} with its macros expanded: {e}"));
        for f in functions(&text, &file) {
            methods.entry(f.ty.clone()).or_default().insert(f.name.clone());
        }
    }
    targets.into_iter().map(|(w, t)| (w.clone(), (t, methods.remove(&w).unwrap_or_default()))).collect()
}

/// A `macro_rules!` of the wrappers with a single rule.
struct Macro {
    name: String,
    /// The matcher's `$parameter`s.
    params: Vec<String>,
    /// The matcher has a repetition (`$(...)*`).
    repeats: bool,
    body: TokenStream,
}

/// The names of the functions in a macro's body (`fn deref`).
fn fn_names(body: TokenStream) -> Vec<String> {
    let tts: Vec<TokenTree> = body.into_iter().collect();
    let mut out = Vec::new();
    for (i, tt) in tts.iter().enumerate() {
        match (tt, tts.get(i + 1)) {
            (TokenTree::Group(g), _) => out.extend(fn_names(g.stream())),
            (TokenTree::Ident(kw), Some(TokenTree::Ident(name))) if kw == "fn" => out.push(name.to_string()),
            _ => {}
        }
    }
    out
}

/// The single-rule macros the wrappers define. The one-argument ones (one `$parameter`, no
/// repetition) are expanded: `tracked_reads!`, the iterator and snapshot methods of a readable
/// wrapper; `tracked_cfs!`, the column family methods of a DB wrapper.
fn macros<'a>(files: impl Iterator<Item = &'a syn::File>) -> Vec<Macro> {
    let mut out = Vec::new();
    for item in files.flat_map(|f| &f.items) {
        let syn::Item::Macro(m) = item else { continue };
        let (true, Some(name)) = (m.mac.path.is_ident("macro_rules"), &m.ident) else { continue };
        let rule: Vec<TokenTree> = m.mac.tokens.clone().into_iter().collect();
        // `(matcher) => { body }`, with an optional `;`.
        let [TokenTree::Group(matcher), TokenTree::Punct(eq), TokenTree::Punct(gt), TokenTree::Group(body), ..] =
            rule.as_slice()
        else {
            continue;
        };
        if eq.as_char() != '=' || gt.as_char() != '>' || rule.len() > 5 {
            continue;
        }
        let matcher: Vec<TokenTree> = matcher.stream().into_iter().collect();
        let params: Vec<String> = matcher
            .windows(2)
            .filter_map(|w| match w {
                [TokenTree::Punct(d), TokenTree::Ident(p)] if d.as_char() == '$' => Some(p.to_string()),
                _ => None,
            })
            .collect();
        let repeats =
            matcher.windows(2).any(|w| matches!(w, [TokenTree::Punct(d), TokenTree::Group(_)] if d.as_char() == '$'));
        out.push(Macro { name: name.to_string(), params, repeats, body: body.stream() });
    }
    out
}

/// `body` with `$param` replaced by `arg` and `$crate` by `crate`.
fn substitute(body: TokenStream, param: &str, arg: &TokenStream) -> TokenStream {
    let mut out = TokenStream::new();
    let mut tts = body.into_iter().peekable();
    while let Some(tt) = tts.next() {
        match tt {
            TokenTree::Punct(d) if d.as_char() == '$' => match tts.peek() {
                Some(TokenTree::Ident(p)) if p == param => {
                    tts.next();
                    out.extend(arg.clone());
                }
                Some(TokenTree::Ident(p)) if p == "crate" => {}
                _ => out.extend([TokenTree::Punct(d)]),
            },
            TokenTree::Group(g) => {
                let inner = substitute(g.stream(), param, arg);
                out.extend([TokenTree::Group(proc_macro2::Group::new(g.delimiter(), inner))]);
            }
            other => out.extend([other]),
        }
    }
    out
}

/// Replaces every invocation of a one-argument macro (an item, or an item of an `impl`) by the
/// macro's body with its parameter replaced by the argument, so the methods it generates count as
/// the wrapper's own; and notes each wrapper's `Deref` target, and the wrappers of
/// `deref_and_token!`.
struct Expand<'a> {
    macros: &'a [Macro],
    targets: &'a mut BTreeMap<String, String>,
    derefs: Vec<String>,
}

impl Expand<'_> {
    fn expansion(&self, mac: &syn::Macro) -> Option<TokenStream> {
        let name = mac.path.segments.last()?.ident.to_string();
        let m = self.macros.iter().find(|m| m.name == name && !m.repeats)?;
        let [param] = m.params.as_slice() else { return None };
        Some(substitute(m.body.clone(), param, &mac.tokens))
    }
}

impl VisitMut for Expand<'_> {
    fn visit_file_mut(&mut self, file: &mut syn::File) {
        let mut items = Vec::new();
        for item in std::mem::take(&mut file.items) {
            match &item {
                syn::Item::Macro(m) if m.mac.path.is_ident("deref_and_token") => {
                    let args = m
                        .mac
                        .parse_body_with(Punctuated::<syn::Type, syn::Token![,]>::parse_terminated)
                        .expect("deref_and_token!(Wrapper, Target)");
                    if let [wrapper, target] = args.iter().collect::<Vec<_>>().as_slice() {
                        self.targets.insert(type_ident(wrapper), type_ident(target));
                        self.derefs.push(type_ident(wrapper));
                    }
                    items.push(item);
                }
                syn::Item::Macro(m) if m.ident.is_none() => match self.expansion(&m.mac) {
                    Some(tokens) => items.extend(syn::parse2::<syn::File>(tokens).expect("an expansion").items),
                    None => items.push(item),
                },
                _ => items.push(item),
            }
        }
        file.items = items;
        visit_mut::visit_file_mut(self, file);
    }

    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        let mut items = Vec::new();
        for item in std::mem::take(&mut i.items) {
            match &item {
                syn::ImplItem::Macro(m) => match self.expansion(&m.mac) {
                    Some(tokens) => {
                        let wrapped: syn::ItemImpl =
                            syn::parse2(quote::quote!(impl X { #tokens })).expect("an expansion");
                        items.extend(wrapped.items);
                    }
                    None => items.push(item),
                },
                syn::ImplItem::Type(t) if t.ident == "Target" => {
                    let deref = i
                        .trait_
                        .as_ref()
                        .is_some_and(|(_, p, _)| p.segments.last().is_some_and(|s| s.ident == "Deref"));
                    if deref {
                        self.targets.insert(type_ident(&i.self_ty), type_ident(&t.ty));
                    }
                    items.push(item);
                }
                _ => items.push(item),
            }
        }
        i.items = items;
        visit_mut::visit_item_impl_mut(self, i);
    }
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
