//! The binding's surface, read from its source with `syn`: every function of its `impl` blocks
//! (public or not, with its body), the types that own a native object, what the crate exports, and
//! which public functions reach RocksDB's C API (directly or through the crate's private helpers).
//! No compiler and no macro expansion: what a `macro_rules!` body would generate is not seen. Used
//! by the coverage test (no native handle escapes the ledger), by the fuzz's reached-functions
//! table and by build.rs (the generated setters).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};
use quote::ToTokens;
use syn::visit_mut::{self, VisitMut};

/// One function found in an `impl` block.
#[derive(Debug, Clone)]
pub struct Func {
    /// The implementing type's name (aliases not resolved; a reference's target, `""` for a slice
    /// or a tuple).
    pub ty: String,
    pub name: String,
    /// In `impl Trait for Type` (trait methods are public when the trait is).
    pub trait_impl: bool,
    /// The trait's name, for trait methods.
    pub trait_name: Option<String>,
    /// Takes `&self` or `&mut self`: callable on a value reached through `Deref`.
    pub by_ref_self: bool,
    /// Takes `self` by value (or `self: Box<Self>`, ...): not callable through `Deref` (nothing can
    /// move out of a borrow).
    pub by_value_self: bool,
    /// The return type, `Self` replaced by the implementing type (`Self::Item`, an associated
    /// type, is left as it is).
    pub ret: String,
    /// `file:line` of the `fn` keyword.
    pub at: String,
    /// Marked `pub` (or a trait method): callable by users when its type is exported.
    pub public: bool,
    /// The parameters as written, trailing comma included (`&mut self, v: bool`).
    pub params: String,
    /// The function's own generic parameters (`<P: AsRef<Path>>`), empty when none.
    pub generics: String,
    /// Declared `unsafe fn`.
    pub unsafe_fn: bool,
    /// The `impl` block's header after its generic parameters: `Trait for Type` or `Type`, with
    /// the `where` clause (`DBCommon<T, DBWithThreadModeInner>`).
    pub impl_header: String,
    /// The body's tokens as text (comments dropped).
    pub body: String,
}

/// Tokens as compact Rust text: a space between words, after `,`, `;` and a lone `:`, and around
/// `=`, `+`, `->` and the like, none elsewhere (`&'a mut [u8]`, `Result<Vec<u8>, Error>`). With
/// `self_ty`, `Self` becomes it, except in `Self::` paths.
fn render(tokens: TokenStream, self_ty: Option<&str>) -> String {
    let mut out = String::new();
    write_tokens(&mut out, tokens, self_ty);
    out.trim_end().to_string()
}

/// Keywords followed by a space even before punctuation or a group (`&mut [u8]`, `impl !Send`).
const SPACED_WORDS: &[&str] =
    &["as", "dyn", "else", "if", "impl", "in", "let", "match", "move", "mut", "ref", "return", "where", "while"];
/// Operators with a space on each side.
const SPACED_OPS: &[&str] =
    &["=", "->", "=>", "+", "==", "!=", "<=", ">=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "||"];

/// The word `out` ends with, if any.
fn last_word(out: &str) -> &str {
    &out[out.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1)..]
}

fn write_tokens(out: &mut String, tokens: TokenStream, self_ty: Option<&str>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let word_end = |out: &str| out.ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == '"' || c == '\'');
    let mut i = 0;
    while i < tts.len() {
        match &tts[i] {
            TokenTree::Group(g) => {
                let (open, close) = match g.delimiter() {
                    Delimiter::Parenthesis => ("(", ")"),
                    Delimiter::Bracket => ("[", "]"),
                    Delimiter::Brace => ("{", "}"),
                    Delimiter::None => ("", ""),
                };
                let spaced = open == "{" || SPACED_WORDS.contains(&last_word(out));
                if spaced && !out.is_empty() && !out.ends_with([' ', '(', '[', ':']) {
                    out.push(' ');
                }
                out.push_str(open);
                write_tokens(out, g.stream(), self_ty);
                if out.ends_with(' ') {
                    out.pop();
                }
                out.push_str(close);
            }
            TokenTree::Ident(id) => {
                let lifetime = i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '\'');
                if !lifetime && (word_end(out) || out.ends_with([')', ']', '}'])) {
                    out.push(' ');
                }
                let path_follows = matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint);
                match self_ty {
                    Some(ty) if id == "Self" && !path_follows => out.push_str(ty),
                    _ => out.push_str(&id.to_string()),
                }
            }
            TokenTree::Literal(l) => {
                if word_end(out) || out.ends_with([')', ']', '}']) {
                    out.push(' ');
                }
                out.push_str(&l.to_string());
            }
            TokenTree::Punct(p) => {
                // A compound operator: joint punctuation, up to a lifetime's quote.
                let mut op = p.as_char().to_string();
                let mut joint = p.spacing() == Spacing::Joint && p.as_char() != '\'';
                while joint {
                    match tts.get(i + 1) {
                        Some(TokenTree::Punct(q)) if q.as_char() != '\'' => {
                            op.push(q.as_char());
                            joint = q.spacing() == Spacing::Joint;
                            i += 1;
                        }
                        _ => break,
                    }
                }
                let last_is_word = word_end(out) && !out.ends_with('\'');
                match op.as_str() {
                    "," | ";" | ":" => {
                        if out.ends_with(' ') {
                            out.pop();
                        }
                        out.push_str(&op);
                        out.push(' ');
                    }
                    o if SPACED_OPS.contains(&o) => {
                        if !out.is_empty() && !out.ends_with(' ') {
                            out.push(' ');
                        }
                        out.push_str(o);
                        out.push(' ');
                    }
                    "'" => {
                        if last_is_word || out.ends_with([')', ']', '}']) {
                            out.push(' ');
                        }
                        out.push('\'');
                    }
                    o => {
                        if SPACED_WORDS.contains(&last_word(out)) && last_is_word {
                            out.push(' ');
                        }
                        out.push_str(o);
                    }
                }
            }
        }
        i += 1;
    }
}

/// The name of a type: the last segment of its path (`std::sync::Arc<Cache>` -> `Arc`), through
/// references, pointers and parentheses (`&'a CStr` -> `CStr`); `""` for a slice, a tuple, a
/// function pointer or a trait object.
pub fn type_ident(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default(),
        syn::Type::Reference(r) => type_ident(&r.elem),
        syn::Type::Ptr(p) => type_ident(&p.elem),
        syn::Type::Paren(p) => type_ident(&p.elem),
        syn::Type::Group(g) => type_ident(&g.elem),
        _ => String::new(),
    }
}

/// What one file declares: the functions of its `impl` blocks (with their bodies' tokens), its
/// free functions, its structs and its public type aliases.
struct Source {
    funcs: Vec<(Func, TokenStream)>,
    /// Every `fn` outside `impl` and `trait` blocks (`name`, body), and whether it is at the file's
    /// top level.
    free: Vec<(String, TokenStream, bool)>,
    /// `struct` name -> its fields' types.
    structs: Vec<(String, String)>,
    /// `pub type` name -> the aliased type's name.
    aliases: Vec<(String, String)>,
}

/// The innermost `impl` block being read.
struct ImplBlock {
    ty: String,
    trait_name: Option<String>,
    header: String,
}

/// Collects a file's [`Source`] in one walk of its syntax tree, in source order, locating each
/// function's line in the text on the way.
struct Collector<'a> {
    text: &'a str,
    file: &'a str,
    /// Where the search for the next `fn name` starts.
    cursor: usize,
    /// The offset of the last `fn` found, and its line.
    fn_at: usize,
    line: usize,
    impls: Vec<ImplBlock>,
    /// How many item bodies (fn, mod, impl, trait) enclose the current position.
    depth: usize,
    out: Source,
}

impl Collector<'_> {
    /// The line of the next `fn name` in the text, past the previous one: the spans proc-macro2
    /// gives without its `span-locations` feature carry no position, so the text is searched.
    /// Matches after `//` on their line (comments, doc comments) are skipped; every `fn` the walk
    /// meets, macro bodies' included, moves the cursor, so a name defined twice is found in order.
    fn locate(&mut self, name: &str) -> usize {
        let b = self.text.as_bytes();
        let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut from = self.cursor;
        while let Some(p) = self.text[from..].find(name) {
            let at = from + p;
            from = at + name.len();
            if b.get(from).is_some_and(|c| is_ident(*c)) {
                continue;
            }
            let before = self.text[..at].trim_end();
            let Some(kw) = before.strip_suffix("fn").map(str::len) else { continue };
            if kw + 2 == at || kw.checked_sub(1).is_some_and(|k| is_ident(b[k])) {
                continue;
            }
            let line_start = self.text[..kw].rfind('\n').map_or(0, |p| p + 1);
            if self.text[line_start..kw].contains("//") {
                continue;
            }
            self.line += self.text[self.fn_at.min(kw)..kw].matches('\n').count();
            self.fn_at = kw;
            self.cursor = from;
            return self.line;
        }
        0
    }

    /// Moves the cursor past each `fn name` in a macro's tokens (a `macro_rules!` body's
    /// functions are text the walk does not otherwise see).
    fn skip_macro_fns(&mut self, tokens: TokenStream) {
        let mut prev_fn = false;
        for tt in tokens {
            match tt {
                TokenTree::Group(g) => {
                    self.skip_macro_fns(g.stream());
                    prev_fn = false;
                }
                TokenTree::Ident(id) => {
                    if prev_fn {
                        self.locate(&id.to_string());
                    }
                    prev_fn = id == "fn";
                }
                _ => prev_fn = false,
            }
        }
    }
}

impl VisitMut for Collector<'_> {
    fn visit_item_impl_mut(&mut self, i: &mut syn::ItemImpl) {
        let ty = type_ident(&i.self_ty);
        let trait_name =
            i.trait_.as_ref().map(|(_, path, _)| path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default());
        let mut header = TokenStream::new();
        if let Some((bang, path, for_token)) = &i.trait_ {
            bang.to_tokens(&mut header);
            path.to_tokens(&mut header);
            for_token.to_tokens(&mut header);
        }
        i.self_ty.to_tokens(&mut header);
        let mut header = render(header, None);
        if let Some(w) = &i.generics.where_clause {
            header = format!("{header} {}", render(w.to_token_stream(), None));
        }
        self.impls.push(ImplBlock { ty, trait_name, header });
        self.depth += 1;
        visit_mut::visit_item_impl_mut(self, i);
        self.depth -= 1;
        self.impls.pop();
    }

    fn visit_impl_item_fn_mut(&mut self, f: &mut syn::ImplItemFn) {
        let line = self.locate(&f.sig.ident.to_string());
        if let Some(block) = self.impls.last() {
            let receiver = f.sig.receiver();
            let by_ref_self = receiver.is_some_and(|r| matches!(*r.ty, syn::Type::Reference(_)));
            let ret = match &f.sig.output {
                syn::ReturnType::Default => String::new(),
                syn::ReturnType::Type(_, ty) => render(ty.to_token_stream(), Some(&block.ty)),
            };
            let trait_impl = block.trait_name.is_some();
            let func = Func {
                ty: block.ty.clone(),
                name: f.sig.ident.to_string(),
                trait_impl,
                trait_name: block.trait_name.clone(),
                by_ref_self,
                by_value_self: receiver.is_some() && !by_ref_self,
                ret,
                at: format!("{}:{line}", self.file),
                public: trait_impl || matches!(f.vis, syn::Visibility::Public(_)),
                params: render(f.sig.inputs.to_token_stream(), None),
                generics: render(f.sig.generics.to_token_stream(), None),
                unsafe_fn: f.sig.unsafety.is_some(),
                impl_header: block.header.clone(),
                body: render(f.block.stmts.iter().map(ToTokens::to_token_stream).collect(), None),
            };
            self.out.funcs.push((func, f.block.to_token_stream()));
        }
        self.depth += 1;
        visit_mut::visit_impl_item_fn_mut(self, f);
        self.depth -= 1;
    }

    fn visit_item_fn_mut(&mut self, f: &mut syn::ItemFn) {
        self.locate(&f.sig.ident.to_string());
        self.out.free.push((f.sig.ident.to_string(), f.block.to_token_stream(), self.depth == 0));
        self.depth += 1;
        visit_mut::visit_item_fn_mut(self, f);
        self.depth -= 1;
    }

    fn visit_trait_item_fn_mut(&mut self, f: &mut syn::TraitItemFn) {
        self.locate(&f.sig.ident.to_string());
        visit_mut::visit_trait_item_fn_mut(self, f);
    }

    fn visit_item_trait_mut(&mut self, i: &mut syn::ItemTrait) {
        self.depth += 1;
        visit_mut::visit_item_trait_mut(self, i);
        self.depth -= 1;
    }

    fn visit_foreign_item_fn_mut(&mut self, f: &mut syn::ForeignItemFn) {
        self.locate(&f.sig.ident.to_string());
        visit_mut::visit_foreign_item_fn_mut(self, f);
    }

    fn visit_item_mod_mut(&mut self, i: &mut syn::ItemMod) {
        self.depth += 1;
        visit_mut::visit_item_mod_mut(self, i);
        self.depth -= 1;
    }

    fn visit_macro_mut(&mut self, m: &mut syn::Macro) {
        self.skip_macro_fns(m.tokens.clone());
    }

    fn visit_item_struct_mut(&mut self, i: &mut syn::ItemStruct) {
        let fields: Vec<String> = i.fields.iter().map(|f| render(f.ty.to_token_stream(), None)).collect();
        self.out.structs.push((i.ident.to_string(), fields.join(", ")));
        visit_mut::visit_item_struct_mut(self, i);
    }

    fn visit_item_type_mut(&mut self, i: &mut syn::ItemType) {
        let target = type_ident(&i.ty);
        if matches!(i.vis, syn::Visibility::Public(_)) && !target.is_empty() {
            self.out.aliases.push((i.ident.to_string(), target));
        }
        visit_mut::visit_item_type_mut(self, i);
    }
}

/// What `text` (a whole file) declares; nothing for a text that does not parse ([`rust_files`]
/// gives only texts that do).
fn source(text: &str, file: &str) -> Source {
    let mut c = Collector {
        text,
        file,
        cursor: 0,
        fn_at: 0,
        line: 1,
        impls: Vec::new(),
        depth: 0,
        out: Source { funcs: Vec::new(), free: Vec::new(), structs: Vec::new(), aliases: Vec::new() },
    };
    if let Ok(mut parsed) = syn::parse_file(text) {
        c.visit_file_mut(&mut parsed);
    }
    c.out
}

/// Every `impl` block's public functions in `text` (a file's source): inherent ones marked `pub`,
/// and every trait method (public when the trait is).
pub fn functions(text: &str, file: &str) -> Vec<Func> {
    all_functions(text, file).into_iter().filter(|f| f.public).collect()
}

/// Every function of every `impl` block in `text` (a file's source), public or not, wherever the
/// block is (a module, a function's body).
pub fn all_functions(text: &str, file: &str) -> Vec<Func> {
    source(text, file).funcs.into_iter().map(|(f, _)| f).collect()
}

/// Identifiers in `s` (a type, a list of types), except those behind a reference (`&Cache`,
/// `&'a ColumnFamily`): a borrowed handle is not a new one. A path (`&a::B`) is borrowed whole; a
/// generic argument or a group's contents (`&Arc<Cache>`, `&[Cache]`) are not.
pub fn owned_idents(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(tokens) = s.parse::<TokenStream>() {
        owned_in(tokens, &mut false, &mut out);
    }
    out
}

fn owned_in(tokens: TokenStream, borrowed: &mut bool, out: &mut Vec<String>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        let after_quote = i > 0 && matches!(&tts[i - 1], TokenTree::Punct(p) if p.as_char() == '\'');
        match tt {
            TokenTree::Punct(p) if p.as_char() == '&' => *borrowed = true,
            // A lifetime (`'a`) or a path separator keeps the borrow.
            TokenTree::Punct(p) if p.as_char() == '\'' || p.as_char() == ':' => {}
            TokenTree::Ident(_) if after_quote => {}
            TokenTree::Ident(id) => {
                let word = id.to_string();
                if word != "mut" && word != "dyn" {
                    if !*borrowed {
                        out.push(word);
                    }
                    let path_follows = matches!(tts.get(i + 1), Some(TokenTree::Punct(p)) if p.as_char() == ':' && p.spacing() == Spacing::Joint);
                    if !path_follows {
                        *borrowed = false;
                    }
                }
            }
            TokenTree::Group(g) => {
                *borrowed = false;
                owned_in(g.stream(), borrowed, out);
                *borrowed = false;
            }
            _ => *borrowed = false,
        }
    }
}

/// `struct`s (their fields' types), `pub type` aliases and `Drop` types of the binding.
pub struct Types {
    pub drops: BTreeSet<String>,
    pub bodies: BTreeMap<String, String>,
    pub aliases: BTreeMap<String, String>,
}

pub fn types(files: &[(String, String)]) -> Types {
    let mut t = Types { drops: BTreeSet::new(), bodies: BTreeMap::new(), aliases: BTreeMap::new() };
    for (_, text) in files {
        let s = source(text, "");
        for (f, _) in s.funcs {
            if f.trait_impl && f.name == "drop" {
                t.drops.insert(f.ty);
            }
        }
        t.bodies.extend(s.structs);
        t.aliases.extend(s.aliases);
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
    /// A file that is not Rust `syn` can parse.
    #[error("parse {path}: {message}")]
    Parse {
        /// The path.
        path: PathBuf,
        /// syn's error.
        message: String,
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

/// `path`'s source, parsed.
fn parse(path: &Path) -> Result<syn::File, SurfaceError> {
    syn::parse_file(&read(path)?).map_err(|e| SurfaceError::Parse { path: path.to_path_buf(), message: e.to_string() })
}

/// Every `.rs` file under `dir` (sorted): `(path, text)`, each checked to parse.
///
/// # Errors
/// A directory or file that cannot be read, or a file that does not parse.
pub fn rust_files(dir: &Path, out: &mut Vec<(String, String)>) -> Result<(), SurfaceError> {
    let io = |source| SurfaceError::Io { path: dir.to_path_buf(), source };
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(io)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>().map_err(io)?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            let text = read(&p)?;
            if let Err(e) = syn::parse_file(&text) {
                return Err(SurfaceError::Parse { path: p, message: e.to_string() });
            }
            out.push((p.display().to_string(), text));
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

/// The names a `use` tree brings in: each leaf, and both names of a rename (the impl blocks name
/// the original).
fn use_names(tree: &syn::UseTree, out: &mut BTreeSet<String>) {
    match tree {
        syn::UseTree::Path(p) => use_names(&p.tree, out),
        syn::UseTree::Name(n) => {
            out.insert(n.ident.to_string());
        }
        syn::UseTree::Rename(r) => {
            out.insert(r.ident.to_string());
            out.insert(r.rename.to_string());
        }
        syn::UseTree::Group(g) => g.items.iter().for_each(|t| use_names(t, out)),
        syn::UseTree::Glob(_) => {}
    }
}

/// The names lib.rs's `pub use` items put at the crate root (both names of a rename); with
/// `crate_only`, only those of the crate's own modules (`pub use crate::...`).
///
/// # Errors
/// lib.rs cannot be read or parsed.
pub fn root_exports(src: &Path, crate_only: bool) -> Result<BTreeSet<String>, SurfaceError> {
    let lib = parse(&src.join("lib.rs"))?;
    let mut names = BTreeSet::new();
    for item in &lib.items {
        if let syn::Item::Use(u) = item {
            let from_crate = matches!(&u.tree, syn::UseTree::Path(p) if p.ident == "crate");
            if matches!(u.vis, syn::Visibility::Public(_)) && (from_crate || !crate_only) {
                use_names(&u.tree, &mut names);
            }
        }
    }
    Ok(names)
}

/// The public `struct`, `enum` and `type` names declared anywhere in a file.
#[derive(Default)]
struct PublicTypes(BTreeSet<String>);

impl VisitMut for PublicTypes {
    fn visit_item_struct_mut(&mut self, i: &mut syn::ItemStruct) {
        if matches!(i.vis, syn::Visibility::Public(_)) {
            self.0.insert(i.ident.to_string());
        }
        visit_mut::visit_item_struct_mut(self, i);
    }

    fn visit_item_enum_mut(&mut self, i: &mut syn::ItemEnum) {
        if matches!(i.vis, syn::Visibility::Public(_)) {
            self.0.insert(i.ident.to_string());
        }
        visit_mut::visit_item_enum_mut(self, i);
    }

    fn visit_item_type_mut(&mut self, i: &mut syn::ItemType) {
        if matches!(i.vis, syn::Visibility::Public(_)) {
            self.0.insert(i.ident.to_string());
        }
        visit_mut::visit_item_type_mut(self, i);
    }
}

/// The binding's public type names: what lib.rs re-exports from the crate (`pub use crate::...`),
/// and the public structs, enums and aliases of its `pub mod`s.
///
/// # Errors
/// lib.rs cannot be read or parsed.
pub fn exported(src: &Path) -> Result<BTreeSet<String>, SurfaceError> {
    let mut names = root_exports(src, true)?;
    let mut public = PublicTypes::default();
    for item in parse(&src.join("lib.rs"))?.items {
        let syn::Item::Mod(mut m) = item else { continue };
        if !matches!(m.vis, syn::Visibility::Public(_)) {
            continue;
        }
        if m.content.is_some() {
            public.visit_item_mod_mut(&mut m);
            continue;
        }
        let module = m.ident.to_string();
        for file in [src.join(format!("{module}.rs")), src.join(&module).join("mod.rs")] {
            if file.is_file() {
                public.visit_file_mut(&mut parse(&file)?);
            }
        }
    }
    names.extend(public.0);
    Ok(names)
}

/// Free functions (outside `impl` and `trait` blocks) at the top level of `text` (a file's
/// source): `(name, body)`.
pub fn free_functions(text: &str) -> Vec<(String, String)> {
    source(text, "")
        .free
        .into_iter()
        .filter(|(_, _, top)| *top)
        .map(|(name, body, _)| (name, render(body, None)))
        .collect()
}

/// Whether a body calls RocksDB's C API itself (`ffi::...`, the binding's `ffi_try!`), and the
/// functions it calls by a name this analysis follows: `self.f(`, `Self::f(`, `T::f(`,
/// `T::f::<U>(` and a bare `f(`, macro arguments included.
fn calls(tokens: TokenStream, direct: &mut bool, callees: &mut BTreeSet<String>) {
    let tts: Vec<TokenTree> = tokens.into_iter().collect();
    let punct = |i: usize, c: char| matches!(tts.get(i), Some(TokenTree::Punct(p)) if p.as_char() == c);
    let path_sep = |i: usize| punct(i, ':') && punct(i + 1, ':');
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Group(g) => calls(g.stream(), direct, callees),
            TokenTree::Ident(id) => {
                let name = id.to_string();
                if (name == "ffi" && path_sep(i + 1))
                    || ((name == "ffi_try" || name == "ffi_try_impl") && punct(i + 1, '!'))
                {
                    *direct = true;
                }
                // `f::<..>(`: past the turbofish (`->` in it is not a closing angle).
                let mut k = i + 1;
                if path_sep(k) && punct(k + 2, '<') {
                    let mut depth = 0;
                    k += 2;
                    while k < tts.len() {
                        if punct(k, '<') {
                            depth += 1;
                        } else if punct(k, '>') && !punct(k - 1, '-') {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        k += 1;
                    }
                    k += 1;
                }
                let call = matches!(tts.get(k), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                let by_self = i >= 2 && punct(i - 1, '.') && matches!(&tts[i - 2], TokenTree::Ident(s) if s == "self");
                let by_path = i >= 2 && punct(i - 1, ':') && punct(i - 2, ':');
                let bare = i == 0 || !punct(i - 1, '.');
                if call && (by_self || by_path || bare) {
                    callees.insert(name);
                }
            }
            _ => {}
        }
    }
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
    // Each function's (name, reaches the C API itself, callees), and the impl functions.
    let mut bodies: Vec<(String, bool, BTreeSet<String>)> = Vec::new();
    let mut all: Vec<(Func, bool, BTreeSet<String>)> = Vec::new();
    let analyse = |tokens: TokenStream| {
        let (mut direct, mut callees) = (false, BTreeSet::new());
        calls(tokens, &mut direct, &mut callees);
        callees.retain(|c| !UNFOLLOWED.contains(&c.as_str()));
        (direct, callees)
    };
    for (file, text) in &files {
        let short = file.rsplit("/src/").next().unwrap_or(file);
        let s = source(text, short);
        for (f, body) in s.funcs {
            let (direct, callees) = analyse(body);
            bodies.push((f.name.clone(), direct, callees.clone()));
            all.push((f, direct, callees));
        }
        for (name, body, top) in s.free {
            if top {
                let (direct, callees) = analyse(body);
                bodies.push((name, direct, callees));
            }
        }
    }
    let mut reaches: BTreeSet<String> =
        bodies.iter().filter(|(_, direct, _)| *direct).map(|(n, ..)| n.clone()).collect();
    loop {
        let before = reaches.len();
        for (name, _, callees) in &bodies {
            if !reaches.contains(name) && callees.iter().any(|c| reaches.contains(c)) {
                reaches.insert(name.clone());
            }
        }
        if reaches.len() == before {
            break;
        }
    }
    let mut out: Vec<Func> = all
        .into_iter()
        .filter(|(f, ..)| f.public && (exported.contains(&f.ty) || exported.contains(&types.resolve(&f.ty))))
        .filter(|(_, direct, callees)| *direct || callees.iter().any(|c| reaches.contains(c)))
        .map(|(mut f, ..)| {
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
