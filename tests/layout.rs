//! The library's layout (`src/`), read with `syn`: no function over 80 lines, no circle of files,
//! the rooms (top-level folders and files) in one order but for the arrows allowed up, and no
//! file importing a name through the crate root that a module of its own defines (src/lib.rs
//! only re-exports, for users). A name is followed to the file that defines it, through the
//! re-exports (`pub use`) on the way, as a reader of the code would; the tests (`#[cfg(test)]`
//! items and `tests.rs` files) are left out. On a failure the message lists each circle with the
//! names that tie it. docs/development.md has the rooms, their order and the arrows that run
//! back up.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module's path from the crate root: `["probe", "generations", "table"]`.
type ModPath = Vec<String>;

/// One file of the crate, as read.
#[derive(Default)]
struct File {
    /// Names its items define at its top level.
    defines: BTreeSet<String>,
    /// Names it re-exports (`pub use`, `pub(crate) use`), to the absolute path they name.
    reexports: BTreeMap<String, ModPath>,
    /// Every path it uses (imports, and paths in its code), absolute where it could tell.
    uses: Vec<ModPath>,
}

/// The crate's files by module path.
struct Crate {
    root: PathBuf,
    files: BTreeMap<ModPath, File>,
    paths: BTreeMap<ModPath, PathBuf>,
}

/// `src/a/b.rs` and `src/a/b/mod.rs` are module `a::b`; `src/lib.rs` is the root.
fn module_of(src: &Path, file: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).ok()?;
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match stem {
        "lib" if parts.is_empty() => {}
        "mod" => {}
        "tests" => return None,
        _ => parts.push(stem.to_owned()),
    }
    (parts.first().map(String::as_str) != Some("bin")).then_some(parts)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).expect("read src/").flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether an item is compiled for tests only.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Meta>().is_ok_and(|m| m.path().is_ident("test")))
}

/// Whether an item (of any kind) is compiled for tests only.
fn item_is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        _ => return false,
    };
    test_only(attrs)
}

/// Reads one file: what it defines, re-exports and uses.
struct Reader<'a> {
    module: &'a [String],
    file: File,
    /// Names brought in by `use` (or declared as child modules), to absolute paths.
    aliases: BTreeMap<String, ModPath>,
}

impl Reader<'_> {
    /// `path` made absolute from this module (`crate::`, `super::`, `self::`, an alias, a child
    /// module); `None` for another crate's path.
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let (first, rest) = segments.split_first()?;
        let mut base: ModPath = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.module.to_vec(),
            "super" => {
                let mut m = self.module.to_vec();
                m.pop();
                m
            }
            name => {
                let mut m = self.aliases.get(name)?.clone();
                m.extend(rest.iter().cloned());
                return Some(m);
            }
        };
        let mut rest = rest;
        while let Some((s, r)) = rest.split_first().filter(|(s, _)| s.as_str() == "super") {
            let _ = s;
            base.pop();
            rest = r;
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The leaves of a `use` tree: (the name it binds, its path).
    fn leaves(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                Self::leaves(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let name = n.ident.to_string();
                let mut path = prefix.clone();
                if name != "self" {
                    path.push(name.clone());
                }
                let bound = if name == "self" { prefix.last().cloned() } else { Some(name) };
                out.push((bound, path));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(r.ident.to_string());
                out.push((Some(r.rename.to_string()), path));
            }
            syn::UseTree::Glob(_) => out.push((None, prefix.clone())),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    Self::leaves(t, prefix, out);
                }
            }
        }
    }

    fn read_use(&mut self, item: &syn::ItemUse, top: bool) {
        let mut leaves = Vec::new();
        let mut prefix = Vec::new();
        if item.leading_colon.is_some() {
            return;
        }
        Self::leaves(&item.tree, &mut prefix, &mut leaves);
        let public = !matches!(item.vis, syn::Visibility::Inherited);
        for (bound, path) in leaves {
            let Some(abs) = self.absolute(&path) else { continue };
            if let Some(name) = &bound {
                self.aliases.insert(name.clone(), abs.clone());
                if public && top {
                    self.file.reexports.insert(name.clone(), abs.clone());
                    continue;
                }
            }
            self.file.uses.push(abs);
        }
    }
}

impl<'ast> Visit<'ast> for Reader<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if item_is_test_only(item) {
            return;
        }
        // A `use` is read where it stands: at the top before the visit, in a block by
        // `visit_block`.
        if !matches!(item, syn::Item::Use(_)) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_block(&mut self, block: &'ast syn::Block) {
        for stmt in &block.stmts {
            if let syn::Stmt::Item(syn::Item::Use(u)) = stmt {
                self.read_use(u, false);
            }
        }
        syn::visit::visit_block(self, block);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 || self.aliases.contains_key(&segments[0]) {
            if let Some(abs) = self.absolute(&segments) {
                self.file.uses.push(abs);
            }
        }
        syn::visit::visit_path(self, path);
    }
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let src = root.join("src");
        let mut all = Vec::new();
        rust_files(&src, &mut all);
        let mut files = BTreeMap::new();
        let mut paths = BTreeMap::new();
        for path in all {
            let Some(module) = module_of(&src, &path) else { continue };
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut reader = Reader { module: &module, file: File::default(), aliases: BTreeMap::new() };
            // Top-level names: child modules are aliases, items are definitions. Read first, so
            // a path in the code finds a `use` written below it.
            for item in &ast.items {
                let (name, attrs) = match item {
                    syn::Item::Mod(i) => {
                        let mut child = module.clone();
                        child.push(i.ident.to_string());
                        reader.aliases.insert(i.ident.to_string(), child);
                        continue;
                    }
                    syn::Item::Fn(i) => (i.sig.ident.to_string(), &i.attrs),
                    syn::Item::Struct(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Enum(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Union(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Trait(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Type(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Const(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Static(i) => (i.ident.to_string(), &i.attrs),
                    syn::Item::Macro(i) => match &i.ident {
                        Some(id) => (id.to_string(), &i.attrs),
                        None => continue,
                    },
                    _ => continue,
                };
                if !test_only(attrs) {
                    reader.file.defines.insert(name);
                }
            }
            for item in &ast.items {
                if let syn::Item::Use(u) = item {
                    if !test_only(&u.attrs) {
                        reader.read_use(u, true);
                    }
                }
            }
            reader.visit_file(&ast);
            let file = reader.file;
            files.insert(module.clone(), file);
            paths.insert(module, path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
        Crate { root: root.to_path_buf(), files, paths }
    }

    /// The module file that defines what `path` names, and the name, following re-exports.
    fn resolve(&self, path: &[String], depth: u32) -> Option<(ModPath, Option<String>)> {
        let split = (0..=path.len()).rev().find(|&n| self.files.contains_key(&path[..n]))?;
        let (module, rest) = path.split_at(split);
        let Some(name) = rest.first() else { return Some((module.to_vec(), None)) };
        let file = &self.files[module];
        match file.reexports.get(name) {
            Some(target) if depth < 16 && !file.defines.contains(name) => {
                let mut t = target.clone();
                t.extend(rest[1..].iter().cloned());
                self.resolve(&t, depth + 1).or(Some((module.to_vec(), Some(name.clone()))))
            }
            _ => Some((module.to_vec(), Some(name.clone()))),
        }
    }

    /// file -> file -> the names the first takes from the second.
    fn arrows(&self) -> Graph {
        let mut arrows: BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>> = BTreeMap::new();
        for (module, file) in &self.files {
            let edges = arrows.entry(module.clone()).or_default();
            for used in file.uses.iter().chain(file.reexports.values()) {
                if let Some((to, name)) = self.resolve(used, 0) {
                    // A module's own file uses its children as the module's face (their items
                    // re-exported, called): structure, not a dependency between peers.
                    if &to != module && !to.starts_with(module) {
                        edges.entry(to).or_default().insert(name.unwrap_or_else(|| "(the module)".into()));
                    }
                }
            }
        }
        arrows
    }

    fn name(&self, module: &ModPath) -> String {
        self.paths[module].display().to_string()
    }
}

/// Strongly connected components of more than one file (Tarjan's algorithm).
fn circles(arrows: &Graph) -> Vec<Vec<ModPath>> {
    struct Walk<'a> {
        arrows: &'a BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        on_stack: BTreeSet<&'a ModPath>,
        out: Vec<Vec<ModPath>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a ModPath) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.arrows.get(v).into_iter().flat_map(|e| e.keys()) {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        arrows,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in arrows.keys() {
        if !walk.index.contains_key(v) {
            walk.visit(v);
        }
    }
    walk.out
}

/// The longest a function of the library may be, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 80;

/// Collects each function's length (`fn` to its closing brace), outside test-only items.
struct Lengths<'a> {
    file: &'a str,
    out: Vec<(usize, String)>,
}

impl Lengths<'_> {
    fn add(&mut self, name: &syn::Ident, from: proc_macro2::Span, to: proc_macro2::Span) {
        let lines = to.end().line.saturating_sub(from.start().line) + 1;
        self.out.push((lines, format!("{}:{} {name}", self.file, from.start().line)));
    }
}

impl<'ast> Visit<'ast> for Lengths<'_> {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !item_is_test_only(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(&f.sig.ident, f.sig.fn_token.span, f.block.brace_token.span.close());
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !test_only(&f.attrs) {
            self.add(&f.sig.ident, f.sig.fn_token.span, f.block.brace_token.span.close());
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.add(&f.sig.ident, f.sig.fn_token.span, block.brace_token.span.close());
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// Every source file of the library but the unit tests' (`tests.rs`), parsed.
fn library_sources(root: &Path) -> Vec<(PathBuf, syn::File)> {
    let mut all = Vec::new();
    rust_files(&root.join("src"), &mut all);
    all.into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != "tests.rs"))
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, ast)
        })
        .collect()
}

#[test]
fn no_function_is_longer_than_80_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut long = Vec::new();
    let mut seen = 0;
    let mut longest = (0, String::new());
    for (path, ast) in library_sources(root) {
        let name = path.strip_prefix(root).unwrap_or(&path).display().to_string();
        let mut lengths = Lengths { file: &name, out: Vec::new() };
        lengths.visit_file(&ast);
        seen += lengths.out.len();
        if let Some(top) = lengths.out.iter().max() {
            longest = longest.max(top.clone());
        }
        long.extend(lengths.out.into_iter().filter(|(n, _)| *n > MAX_FUNCTION_LINES));
    }
    println!("{seen} functions read, the longest {} lines: {}", longest.0, longest.1);
    assert!(seen > 500, "only {seen} functions read");
    long.sort();
    let words: Vec<String> = long.iter().map(|(n, f)| format!("{f}: {n} lines")).collect();
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines:\n{}", words.join("\n"));
}

/// The most `pub` functions and methods the library may have outside `src/tracked` (whose
/// wrappers mirror rust-rocksdb's): each one a user calls or reads, the rest `pub(crate)`.
const MAX_PUBLIC_FUNCTIONS: usize = 249;

/// Counts the functions and methods declared plain `pub`, outside test-only items.
#[derive(Default)]
struct Public {
    out: Vec<String>,
}

impl<'ast> Visit<'ast> for Public {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        if !item_is_test_only(item) {
            syn::visit::visit_item(self, item);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if matches!(f.vis, syn::Visibility::Public(_)) {
            self.out.push(f.sig.ident.to_string());
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if matches!(f.vis, syn::Visibility::Public(_)) && !test_only(&f.attrs) {
            self.out.push(f.sig.ident.to_string());
        }
    }
}

#[test]
fn the_public_functions_outside_the_wrappers_are_under_250() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut public = Public::default();
    let wrappers = root.join("src/tracked");
    for (_, ast) in library_sources(root).iter().filter(|(path, _)| !path.starts_with(&wrappers)) {
        public.visit_file(ast);
    }
    println!("{} pub functions and methods outside src/tracked", public.out.len());
    assert!(public.out.len() > 50, "only {} read", public.out.len());
    assert!(
        public.out.len() <= MAX_PUBLIC_FUNCTIONS,
        "{} pub functions and methods outside src/tracked, over {MAX_PUBLIC_FUNCTIONS}: make `pub(crate)` \
         what no user calls or reads",
        public.out.len()
    );
}

/// file -> file -> the names the first takes from the second.
type Graph = BTreeMap<ModPath, BTreeMap<ModPath, BTreeSet<String>>>;

/// Each circle with the arrows that tie it, in words.
fn words(found: &[Vec<ModPath>], arrows: &Graph, name: &dyn Fn(&ModPath) -> String) -> String {
    let mut out = Vec::new();
    for c in found {
        out.push(format!("a circle of {}:", c.len()));
        for a in c {
            for b in c {
                if let Some(names) = arrows.get(a).and_then(|e| e.get(b)) {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    out.push(format!("  {} -> {}: {}", name(a), name(b), names.join(", ")));
                }
            }
        }
    }
    out.join("\n")
}

fn this_crate() -> Crate {
    Crate::read(Path::new(env!("CARGO_MANIFEST_DIR")))
}

#[test]
fn no_circle_of_imports_between_the_library_files() {
    let krate = this_crate();
    let arrows = krate.arrows();
    assert!(arrows.len() > 40, "read {} files of {}/src: the reader missed some", arrows.len(), krate.root.display());
    let found = circles(&arrows);
    assert!(found.is_empty(), "{}", words(&found, &arrows, &|m| krate.name(m)));
}

/// The arrows between rooms (src/'s top-level folders and files) allowed to run back up, each
/// with why: with them left out, the rooms are in one order, every other import pointing down
/// (docs/development.md draws it).
const UP: [(&str, &str, &str); 0] = [];

/// A file's room: its top-level folder under src/ (`probe/`), or itself (`fault.rs`).
fn room(krate: &Crate, module: &ModPath) -> String {
    let path = &krate.paths[module];
    let parts: Vec<String> = path.iter().skip(1).map(|p| p.to_string_lossy().into_owned()).collect();
    match parts.as_slice() {
        [dir, _, ..] => format!("{dir}/"),
        [file] => file.clone(),
        _ => path.display().to_string(),
    }
}

/// Adds an arrow between two rooms, each name it carries labelled with the files' arrow `at`.
fn add_arrow(rooms: &mut Graph, a: &ModPath, b: ModPath, at: &str, names: &BTreeSet<String>) {
    rooms.entry(a.clone()).or_default().entry(b).or_default().extend(names.iter().map(|n| format!("{at}: {n}")));
}

#[test]
fn the_rooms_are_in_one_order_but_for_the_arrows_allowed_up() {
    let krate = this_crate();
    let mut rooms: Graph = BTreeMap::new();
    for (from, to) in krate.arrows() {
        let a = vec![room(&krate, &from)];
        for (target, names) in to {
            let b = vec![room(&krate, &target)];
            if a != b && !UP.iter().any(|(x, y, _)| a[0] == *x && b[0] == *y) {
                let at = format!("{} -> {}", krate.name(&from), krate.name(&target));
                add_arrow(&mut rooms, &a, b, &at, &names);
            }
        }
    }
    let found = circles(&rooms);
    assert!(found.is_empty(), "rooms that import each other:\n{}", words(&found, &rooms, &|m| m[0].clone()));
    assert!(UP.len() <= 3, "at most 3 arrows run back up");
}

/// Folders that read one way down inside as src/ does: their `mod.rs` declares and re-exports,
/// defining nothing a file below it could import, and their files and subfolders stand in one
/// order with no arrow back up (the types the rule files share live in a file below them).
const ONE_WAY_DOWN: [&str; 1] = ["verdict"];

#[test]
fn the_verdicts_files_read_one_way_down() {
    let krate = this_crate();
    for folder in ONE_WAY_DOWN {
        let top = vec![folder.to_owned()];
        let defined = &krate.files[&top].defines;
        assert!(defined.is_empty(), "src/{folder}/mod.rs defines {defined:?}: it should declare and re-export only");
        // A file's room inside the folder: its own file, or the subfolder it sits in.
        let inner = |m: &ModPath| (m.len() > 1 && m[0] == folder).then(|| vec![m[1].clone()]);
        let mut rooms: Graph = BTreeMap::new();
        for (from, to) in krate.arrows() {
            let Some(a) = inner(&from) else { continue };
            for (target, names) in to {
                let at = format!("{} -> {}", krate.name(&from), krate.name(&target));
                let b = match inner(&target) {
                    Some(b) if b != a => b,
                    // An import of the folder's own mod.rs runs up to the top.
                    None if target == top => vec!["mod.rs".to_owned()],
                    _ => continue,
                };
                add_arrow(&mut rooms, &a, b, &at, &names);
            }
        }
        let up: Vec<String> = rooms
            .iter()
            .flat_map(|(a, to)| {
                to.iter().filter(|(b, _)| b[0] == "mod.rs").map(move |(_, n)| format!("{}: {n:?}", a[0]))
            })
            .collect();
        assert!(up.is_empty(), "files of src/{folder}/ importing its mod.rs:\n{}", up.join("\n"));
        let found = circles(&rooms);
        assert!(
            found.is_empty(),
            "rooms of src/{folder}/ that import each other:\n{}",
            words(&found, &rooms, &|m| m[0].clone())
        );
        assert!(rooms.len() >= 8, "read {} rooms under src/{folder}/: the reader missed some", rooms.len());
    }
}

#[test]
fn no_file_imports_through_the_crate_root() {
    let krate = this_crate();
    let root = &krate.files[&Vec::new()];
    let mut through = Vec::new();
    for (module, file) in &krate.files {
        for used in &file.uses {
            if let [name, ..] = used.as_slice() {
                // (`crate::fault::X` names the module `fault`, not the function it re-exports.)
                let a_module = krate.files.contains_key(&vec![name.clone()]);
                if root.reexports.contains_key(name) && !a_module && !module.is_empty() {
                    through.push(format!("{} uses crate::{name}", krate.name(module)));
                }
            }
        }
    }
    through.sort();
    through.dedup();
    assert!(through.is_empty(), "import from the module that defines the name:\n{}", through.join("\n"));
}

#[test]
fn the_reader_sees_a_circle_and_follows_a_reexport() {
    // Two files that import each other, one through its parent's re-export: a circle.
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("a")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "mod a;\npub use a::Thing;\n").expect("write");
    std::fs::write(src.join("a/mod.rs"), "mod b;\nmod c;\npub(crate) use c::Thing;\n").expect("write");
    std::fs::write(src.join("a/b.rs"), "pub(crate) fn helper() -> crate::Thing { super::c::Thing }\n").expect("write");
    std::fs::write(src.join("a/c.rs"), "use super::b;\npub struct Thing;\nfn f() { let _ = b::helper(); }\n")
        .expect("write");
    let krate = Crate::read(dir.path());
    let arrows = krate.arrows();
    let b = vec!["a".to_owned(), "b".to_owned()];
    let c = vec!["a".to_owned(), "c".to_owned()];
    assert!(arrows[&b].contains_key(&c), "crate::Thing is followed to a/c.rs: {:?}", arrows[&b]);
    assert_eq!(circles(&arrows), vec![vec![b, c]]);
}
