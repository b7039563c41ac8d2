//! Records which rust-rocksdb release this build sweeps (from the Cargo.lock of the build, found
//! upward from this crate), so that the table and the known findings name it; and generates the
//! fuzz's setter calls from that release's source (src/fuzz/setters.rs includes them): every
//! public `set_*` of an exported type with a `Default`, taking one scalar (a bool, an integer, a
//! float), so that no setter of the release is left out by hand.
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

#[allow(dead_code)]
#[path = "src/surface.rs"]
mod surface;

fn main() {
    let mut dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).to_path_buf();
    let mut version = String::from("unknown");
    loop {
        let lock = dir.join("Cargo.lock");
        if let Ok(text) = std::fs::read_to_string(&lock) {
            println!("cargo:rerun-if-changed={}", lock.display());
            let mut lines = text.lines();
            while let Some(line) = lines.next() {
                if line == "name = \"rocksdb\"" {
                    if let Some(v) =
                        lines.next().and_then(|l| l.strip_prefix("version = \"")).and_then(|v| v.strip_suffix('"'))
                    {
                        version = v.to_string();
                    }
                    break;
                }
            }
            break;
        }
        if !dir.pop() {
            break;
        }
    }
    println!("cargo:rustc-env=LEAKCHECK_SWEEP_ROCKSDB={version}");
    // Ops (and list paths) of functions added in 0.23, 0.24 or 0.25 are built on those releases
    // and later only: cfg `rocksdb_0_23`, `rocksdb_0_24`, `rocksdb_0_25`.
    println!("cargo:rustc-check-cfg=cfg(rocksdb_0_23)");
    println!("cargo:rustc-check-cfg=cfg(rocksdb_0_24)");
    println!("cargo:rustc-check-cfg=cfg(rocksdb_0_25)");
    let minor: Option<(u32, u32)> = version
        .split('.')
        .map(|p| p.parse().ok())
        .take(2)
        .collect::<Option<Vec<u32>>>()
        .and_then(|v| Some((*v.first()?, *v.get(1)?)));
    for (since, cfg) in [((0, 23), "rocksdb_0_23"), ((0, 24), "rocksdb_0_24"), ((0, 25), "rocksdb_0_25")] {
        if minor.is_some_and(|m| m >= since) {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
    println!("cargo:rerun-if-changed=src/surface.rs");
    let setters = match surface::binding_source(&version) {
        Ok(src) => setters(&src).unwrap_or_else(|e| {
            println!("cargo:warning=no generated setters: {e}");
            Vec::new()
        }),
        Err(e) => {
            println!("cargo:warning=no generated setters: {e}");
            Vec::new()
        }
    };
    let out = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("setters.rs");
    if let Err(e) = std::fs::write(&out, generate(&setters)) {
        println!("cargo:warning=cannot write {}: {e}", out.display());
    }
}

/// A setter: its type, its name, the primitive its one parameter is.
struct Setter {
    ty: String,
    name: String,
    prim: &'static str,
}

/// The primitive a scalar parameter type is (C aliases resolved), if it is one.
fn primitive(ty: &str) -> Option<&'static str> {
    Some(match ty {
        "bool" => "bool",
        "i32" | "c_int" | "libc::c_int" => "i32",
        "u32" | "c_uint" | "libc::c_uint" => "u32",
        "i64" => "i64",
        "u64" => "u64",
        "usize" | "size_t" | "libc::size_t" => "usize",
        "u8" | "c_uchar" => "u8",
        "f64" | "c_double" | "libc::c_double" => "f64",
        _ => return None,
    })
}

fn setters(src: &Path) -> Result<Vec<Setter>, surface::SurfaceError> {
    let mut files = Vec::new();
    surface::rust_files(src, &mut files)?;
    let at_root = surface::root_exports(src, false)?;
    let all: Vec<surface::Func> = files.iter().flat_map(|(f, text)| surface::all_functions(text, f)).collect();
    let defaults: BTreeSet<&str> = all
        .iter()
        .filter(|f| f.trait_name.as_deref() == Some("Default") && f.name == "default")
        .map(|f| f.ty.as_str())
        .collect();
    let mut out: Vec<Setter> = all
        .iter()
        .filter(|f| f.public && !f.unsafe_fn && !f.trait_impl && f.name.starts_with("set_") && f.generics.is_empty())
        .filter(|f| defaults.contains(f.ty.as_str()) && at_root.contains(&f.ty) && !f.impl_header.contains('<'))
        .filter_map(|f| {
            let (first, param) = f.params.split_once(',')?;
            if first.trim() != "&mut self" || param.contains(',') {
                return None;
            }
            let ty = param.split_once(':')?.1.trim();
            Some(Setter { ty: f.ty.clone(), name: f.name.clone(), prim: primitive(ty)? })
        })
        .collect();
    out.sort_by(|a, b| (&a.ty, &a.name).cmp(&(&b.ty, &b.name)));
    out.dedup_by(|a, b| a.ty == b.ty && a.name == b.name);
    Ok(out)
}

/// The value of class `n` (0 zero, 1 one, 2 the largest, 3 the smallest) of `prim`, as Rust.
fn values(prim: &str) -> [String; 4] {
    match prim {
        "bool" => ["false", "true", "true", "false"].map(String::from),
        "f64" => ["0.0".to_string(), "1.0".to_string(), "f64::MAX".to_string(), "f64::MIN".to_string()],
        p => ["0".to_string(), "1".to_string(), format!("{p}::MAX"), format!("{p}::MIN")],
    }
}

fn generate(setters: &[Setter]) -> String {
    let mut s = String::from("// Generated by build.rs from the locked rust-rocksdb's source.\n\n");
    let _ = writeln!(s, "/// Every generated setter: (type, setter), grouped by type.");
    let _ = writeln!(s, "pub const SETTERS: &[(&str, &str)] = &[");
    for x in setters {
        let _ = writeln!(s, "    ({:?}, {:?}),", x.ty, x.name);
    }
    let _ = writeln!(s, "];\n");
    let _ = writeln!(
        s,
        "/// Calls setter `i` of [`SETTERS`] with value class `n` on a new value of its type, then drops it."
    );
    let _ = writeln!(s, "pub fn call(i: usize, n: u64) {{\n    match (i, n.min(3)) {{");
    for (i, x) in setters.iter().enumerate() {
        for (n, v) in values(x.prim).iter().enumerate() {
            let _ = writeln!(
                s,
                "        ({i}, {n}) => {{ let mut o = rocksdb::{}::default(); o.{}({v}); drop(o); }}",
                x.ty, x.name
            );
        }
    }
    let _ = writeln!(s, "        _ => {{}}\n    }}\n}}\n");
    let _ = writeln!(s, "/// The call of setter `i` with value class `n`, as a snippet writes it.");
    let _ = writeln!(s, "pub fn render(i: usize, n: u64) -> String {{\n    match (i, n.min(3)) {{");
    for (i, x) in setters.iter().enumerate() {
        for (n, v) in values(x.prim).iter().enumerate() {
            let _ = writeln!(
                s,
                "        ({i}, {n}) => {:?}.to_string(),",
                format!("{{ let mut o = {}::default(); o.{}({v}); drop(o); }}", x.ty, x.name)
            );
        }
    }
    let _ = writeln!(s, "        _ => String::new(),\n    }}\n}}");
    s
}
