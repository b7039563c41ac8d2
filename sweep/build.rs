//! Records which rust-rocksdb release this build sweeps (from the Cargo.lock of the build, found
//! upward from this crate), so that the table and the known findings name it.
use std::path::Path;

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
}
