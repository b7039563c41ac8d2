//! The binding's surface, read from its source: every function of its `impl` blocks (public or
//! not, with its body), the types that own a native object, what the crate exports, and which
//! public functions reach RocksDB's C API (directly or through the crate's private helpers). Pure
//! text, no compiler: comments and literals are blanked first, so braces and keywords in them do
//! not count. Used by the coverage test (no native handle escapes the ledger) and by the fuzz's
//! reached-functions table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One function found in an `impl` block.
#[derive(Debug, Clone)]
pub struct Func {
    /// The implementing type's name (aliases not resolved).
    pub ty: String,
    pub name: String,
    /// In `impl Trait for Type` (trait methods are public when the trait is).
    pub trait_impl: bool,
    /// The trait's name, for trait methods.
    pub trait_name: Option<String>,
    /// Takes `&self` or `&mut self`: callable on a value reached through `Deref`.
    pub by_ref_self: bool,
    /// Takes `self` by value: not callable through `Deref` (nothing can move out of a borrow).
    pub by_value_self: bool,
    /// The return type, `Self` replaced by the implementing type.
    pub ret: String,
    pub at: String,
    /// Marked `pub` (or a trait method): callable by users when its type is exported.
    pub public: bool,
    /// The parameters' text, up to the first `)` (whitespace collapsed).
    pub params: String,
    /// The function's own generic parameters (`<P: AsRef<Path>>`), empty when none.
    pub generics: String,
    /// Declared `unsafe fn`.
    pub unsafe_fn: bool,
    /// The `impl` block's header (`<T: ThreadMode> DBCommon<T, DBWithThreadModeInner>`).
    pub impl_header: String,
    /// The body's text (stripped), empty for a declaration.
    pub body: String,
}

/// The text with comments and the contents of string and char literals blanked (newlines kept, so
/// offsets still give line numbers).
pub fn strip(src: &str) -> String {
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

pub fn line_of(text: &str, at: usize) -> usize {
    text[..at].bytes().filter(|c| *c == b'\n').count() + 1
}

pub fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether the keyword `kw` starts at `i` as a whole word.
pub fn word_at(b: &[u8], i: usize, kw: &str) -> bool {
    b[i..].starts_with(kw.as_bytes())
        && (i == 0 || !is_ident(b[i - 1]))
        && b.get(i + kw.len()).is_none_or(|c| !is_ident(*c))
}

/// The index of the brace closing the one opened at `open`.
pub fn matching(b: &[u8], open: usize) -> usize {
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
pub fn skip_angles(b: &[u8], mut i: usize) -> usize {
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
pub fn type_name(s: &str) -> String {
    let s = s.trim_start().trim_start_matches('&').trim_start();
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(s.len());
    s[..end].rsplit("::").next().unwrap_or("").to_string()
}

/// Every `impl` block's public functions in `text` (already stripped): inherent ones marked `pub`,
/// and every trait method (public when the trait is).
pub fn functions(text: &str, file: &str) -> Vec<Func> {
    all_functions(text, file).into_iter().filter(|f| f.public).collect()
}

/// Every function of every `impl` block in `text` (already stripped), public or not.
pub fn all_functions(text: &str, file: &str) -> Vec<Func> {
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
                    if !name.is_empty() {
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
                        let body = match b.get(sig_end) {
                            Some(b'{') => text[sig_end..matching(b, sig_end).min(close)].to_string(),
                            _ => String::new(),
                        };
                        out.push(Func {
                            public: public && !restricted,
                            params: params[..params_end]
                                .trim_start_matches('(')
                                .split_whitespace()
                                .collect::<Vec<_>>()
                                .join(" "),
                            generics: sig.trim_start()[name.len()..].trim_start().strip_prefix('<').map_or(
                                String::new(),
                                |g| {
                                    let g = format!("<{g}");
                                    g[..skip_angles(g.as_bytes(), 0).min(g.len())].to_string()
                                },
                            ),
                            unsafe_fn: before.contains("unsafe"),
                            impl_header: header.trim().to_string(),
                            body,
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
pub fn owned_idents(s: &str) -> Vec<String> {
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
pub struct Types {
    pub drops: BTreeSet<String>,
    pub bodies: BTreeMap<String, String>,
    pub aliases: BTreeMap<String, String>,
}

pub fn types(files: &[(String, String)]) -> Types {
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
            // The `=` after the alias's own generics (whose defaults have `=` too).
            let name_end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c.is_whitespace())).unwrap_or(0);
            let after = if rest.as_bytes().get(name_end) == Some(&b'<') {
                skip_angles(rest.as_bytes(), name_end)
            } else {
                name_end
            };
            let Some(eq) = rest[after..].find('=').map(|p| after + p) else { continue };
            let end = rest.find(';').unwrap_or(rest.len());
            if eq < end {
                t.aliases.insert(type_name(rest), type_name(&rest[eq + 1..end]));
            }
        }
    }
    t
}

impl Types {
    pub fn resolve(&self, name: &str) -> String {
        self.chain(name).pop().unwrap_or_else(|| name.to_string())
    }

    /// `name` and each alias it resolves through, in order (`DB`, `DBWithThreadMode`,
    /// `DBCommon`).
    pub fn chain(&self, name: &str) -> Vec<String> {
        let mut out = vec![name.to_string()];
        for _ in 0..8 {
            match out.last().and_then(|n| self.aliases.get(n)) {
                Some(target) if !out.contains(target) => out.push(target.clone()),
                _ => break,
            }
        }
        out
    }

    /// Types that own a native object: a `Drop` type, or one holding such a type (an `Arc` of a
    /// wrapper, a struct of options), through aliases.
    pub fn handles(&self) -> BTreeSet<String> {
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

/// What could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SurfaceError {
    /// A file or directory of the binding's source.
    #[error("read {path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The release is not unpacked in the cargo registry.
    #[error("rocksdb-{version} is not in the cargo registry at {registry}: build once so cargo unpacks it")]
    NotUnpacked {
        /// The release.
        version: String,
        /// Where it was looked for.
        registry: PathBuf,
    },
    /// Neither CARGO_HOME nor HOME is set.
    #[error("neither CARGO_HOME nor HOME is set: cannot find the cargo registry")]
    NoHome,
}

fn read(path: &Path) -> Result<String, SurfaceError> {
    std::fs::read_to_string(path).map_err(|source| SurfaceError::Io { path: path.to_path_buf(), source })
}

/// Every `.rs` file under `dir` (sorted), stripped: `(path, text)`.
///
/// # Errors
/// A directory or file that cannot be read.
pub fn rust_files(dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), SurfaceError> {
    let io = |source| SurfaceError::Io { path: dir.to_path_buf(), source };
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push((p.display().to_string(), strip(&read(&p)?)));
        }
    }
    Ok(())
}

/// The `src` of rust-rocksdb `version` in the cargo registry.
///
/// # Errors
/// No registry, or the release not unpacked in it.
pub fn binding_source(version: &str) -> Result<PathBuf, SurfaceError> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or(SurfaceError::NoHome)?;
    let registry = home.join("registry").join("src");
    let not_unpacked = || SurfaceError::NotUnpacked { version: version.to_string(), registry: registry.clone() };
    std::fs::read_dir(&registry)
        .map_err(|_| not_unpacked())?
        .filter_map(Result::ok)
        .map(|e| e.path().join(format!("rocksdb-{version}")).join("src"))
        .find(|p| p.is_dir())
        .ok_or_else(not_unpacked)
}

/// The binding's public type names: what lib.rs re-exports, and the types of its `pub mod`s.
///
/// # Errors
/// lib.rs cannot be read.
pub fn exported(src: &Path) -> Result<BTreeSet<String>, SurfaceError> {
    let lib = strip(&read(&src.join("lib.rs"))?);
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
    Ok(names)
}

/// Free functions (outside `impl` blocks) of `text` (already stripped): `(name, body)`.
pub fn free_functions(text: &str) -> Vec<(String, String)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            // An item's body (impl, mod, trait, struct): skipped; a function's body is taken whole below.
            i = matching(b, i) + 1;
            continue;
        }
        if word_at(b, i, "fn") {
            let name: String =
                text[i + 2..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let Some(open) = text[i..].find(['{', ';']).map(|p| i + p) else { break };
            if b[open] == b'{' {
                out.push((name, text[open..matching(b, open)].to_string()));
                i = matching(b, open) + 1;
                continue;
            }
            i = open + 1;
            continue;
        }
        i += 1;
    }
    out
}

/// The functions a body calls by a name this analysis follows: `self.f(`, `Self::f(`, `T::f(`
/// and a bare `f(`.
fn callees(body: &str) -> BTreeSet<String> {
    let b = body.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident(b[i]) && (i == 0 || !is_ident(b[i - 1])) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            let mut k = i;
            if b.get(k) == Some(&b':') && b.get(k + 1) == Some(&b':') && b.get(k + 2) == Some(&b'<') {
                k = skip_angles(b, k + 2);
            }
            if b.get(k) == Some(&b'(') {
                let before = body[..start].trim_end();
                let by_self = before.ends_with("self.");
                let by_path = before.ends_with("::");
                let bare = !before.ends_with('.') && !by_path;
                if by_self || by_path || bare {
                    out.insert(body[start..i].to_string());
                }
            }
            continue;
        }
        i += 1;
    }
    out
}

/// Names too common to follow by name alone (std's as much as the binding's).
const UNFOLLOWED: &[&str] = &[
    "new", "default", "from", "into", "clone", "drop", "get", "len", "iter", "next", "map", "as_ref", "as_ptr",
    "to_vec", "is_null", "unwrap", "Some", "Ok", "Err", "Box", "Vec", "String", "format", "vec",
];

/// Every public function of an exported type of the binding at `src` that reaches RocksDB's C
/// API: its body calls `ffi::` (or the binding's `ffi_try!`), or calls by name a function of the
/// binding that does. A trait method counts when its trait is public; aliases are resolved in
/// [`Func::ty`].
///
/// # Errors
/// The source cannot be read.
pub fn reaching(src: &Path) -> Result<Vec<Func>, SurfaceError> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    let types = types(&files);
    let exported = exported(src)?;
    let mut all: Vec<Func> = Vec::new();
    let mut bodies: Vec<(String, String)> = Vec::new();
    for (file, text) in &files {
        let short = file.rsplit("/src/").next().unwrap_or(file);
        for f in all_functions(text, short) {
            bodies.push((f.name.clone(), f.body.clone()));
            all.push(f);
        }
        bodies.extend(free_functions(text));
    }
    let direct = |body: &str| body.contains("ffi::") || body.contains("ffi_try!") || body.contains("ffi_try_impl!");
    let mut reaches: BTreeSet<String> =
        bodies.iter().filter(|(_, body)| direct(body)).map(|(n, _)| n.clone()).collect();
    loop {
        let before = reaches.len();
        for (name, body) in &bodies {
            if !reaches.contains(name)
                && callees(body).iter().any(|c| reaches.contains(c) && !UNFOLLOWED.contains(&c.as_str()))
            {
                reaches.insert(name.clone());
            }
        }
        if reaches.len() == before {
            break;
        }
    }
    let mut out: Vec<Func> = all
        .into_iter()
        .filter(|f| f.public && (exported.contains(&f.ty) || exported.contains(&types.resolve(&f.ty))))
        .filter(|f| {
            direct(&f.body) || callees(&f.body).iter().any(|c| reaches.contains(c) && !UNFOLLOWED.contains(&c.as_str()))
        })
        .map(|mut f| {
            f.ty = types.resolve(&f.ty);
            f
        })
        .collect();
    out.sort_by(|a, b| (&a.ty, &a.name, &a.at).cmp(&(&b.ty, &b.name, &b.at)));
    Ok(out)
}

/// The binding's types, read from `src`, to resolve the aliases ops name their functions by.
///
/// # Errors
/// The source cannot be read.
pub fn binding_types(src: &Path) -> Result<Types, SurfaceError> {
    let mut files = Vec::new();
    rust_files(src, &mut files)?;
    Ok(types(&files))
}
