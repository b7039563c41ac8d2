//! Allocator coverage: proof that native allocations are visible to jemalloc's counters.
//!
//! A Rust global allocator sees nothing of a C++ library's heap. Only when jemalloc replaces
//! `malloc` itself (rocksdb's `jemalloc` feature turns on tikv-jemalloc-sys's unprefixed
//! override) do RocksDB's allocations show in `stats.allocated`. These checks prove it at run time
//! and, when it is not so, say why and how to fix it.

use serde::{Deserialize, Serialize};

use super::{jemalloc, ProbeError};

/// What a coverage check measured: bytes it put into native memory (C `malloc`, or key and
/// value bytes written into a RocksDB memtable) and how far jemalloc's `stats.allocated` moved
/// meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Coverage {
    /// Bytes the check allocated natively (malloc'ed, or written into the memtable).
    pub native_bytes: u64,
    /// Growth of jemalloc's `stats.allocated` over the same span.
    pub allocated_delta_bytes: i64,
}

/// Mallocs 4 MiB in 1 KiB blocks through C `malloc` and checks that jemalloc's `stats.allocated`
/// grows by at least 90% of it.
///
/// # Errors
/// [`ProbeError::MallocNotRouted`] with a diagnosis when `malloc` is not jemalloc's.
pub fn check_malloc_coverage() -> Result<Coverage, ProbeError> {
    const BLOCK: usize = 1024;
    const BLOCKS: usize = 4096;
    let requested_bytes = (BLOCK * BLOCKS) as u64;
    jemalloc::purge_all()?;
    let before = jemalloc::allocated_bytes()?;
    let after = crate::sys::with_c_blocks(BLOCK, BLOCKS, jemalloc::allocated_bytes);
    let allocated_delta_bytes = after? as i64 - before as i64;
    let coverage = Coverage { native_bytes: requested_bytes, allocated_delta_bytes };
    if allocated_delta_bytes < (requested_bytes as i64) * 9 / 10 {
        return Err(ProbeError::MallocNotRouted { requested_bytes, allocated_delta_bytes, diagnosis: diagnose() });
    }
    Ok(coverage)
}

/// Allocates 4 MiB through Rust's global allocator and checks that jemalloc's
/// `stats.allocated` grows by at least 90% of it: the test binary's allocator is jemalloc
/// (`#[global_allocator] static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;`).
///
/// # Errors
/// [`ProbeError::GlobalAllocatorNotJemalloc`] when it is not.
pub fn check_global_allocator() -> Result<Coverage, ProbeError> {
    const BYTES: usize = 4 << 20;
    let requested_bytes = BYTES as u64;
    let before = jemalloc::allocated_bytes()?;
    let block = std::hint::black_box(vec![1u8; BYTES]);
    let after = jemalloc::allocated_bytes();
    drop(block);
    let allocated_delta_bytes = after? as i64 - before as i64;
    if allocated_delta_bytes < (requested_bytes as i64) * 9 / 10 {
        return Err(ProbeError::GlobalAllocatorNotJemalloc { requested_bytes, allocated_delta_bytes });
    }
    Ok(Coverage { native_bytes: requested_bytes, allocated_delta_bytes })
}

/// Writes 100,000 keys with 100-byte values into a scratch RocksDB's memtable and checks that
/// jemalloc's `stats.allocated` grows by at least 8 MB while the DB holds them (measured here:
/// about 13 MB with the override on).
///
/// # Errors
/// [`ProbeError::RocksDbNotVisible`] with a diagnosis when RocksDB's heap is not visible.
#[cfg(feature = "rocksdb")]
#[allow(clippy::disallowed_types)] // a scratch DB measured by bytes, not by the ledger
pub fn check_rocksdb_coverage() -> Result<Coverage, ProbeError> {
    const PUTS: u64 = 100_000;
    const EXPECTED: u64 = 8_000_000;
    let dir = tempfile::Builder::new().prefix("leakcheck-coverage").tempdir().map_err(ProbeError::ScratchDir)?;
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    let db = rocksdb::DB::open(&opts, dir.path())?;
    let mut write = rocksdb::WriteOptions::default();
    write.disable_wal(true);
    jemalloc::purge_all()?;
    let before = jemalloc::allocated_bytes()?;
    let value = [0x5au8; 100];
    let mut written_bytes = 0u64;
    for i in 0..PUTS {
        let key = format!("key{i:012}");
        db.put_opt(key.as_bytes(), value, &write)?;
        written_bytes += (key.len() + value.len()) as u64;
    }
    jemalloc::purge_all()?;
    let after = jemalloc::allocated_bytes()?;
    drop(db);
    let allocated_delta_bytes = after as i64 - before as i64;
    if allocated_delta_bytes < EXPECTED as i64 {
        return Err(ProbeError::RocksDbNotVisible {
            written_bytes,
            allocated_delta_bytes,
            expected_bytes: EXPECTED,
            diagnosis: diagnose(),
        });
    }
    Ok(Coverage { native_bytes: written_bytes, allocated_delta_bytes })
}

/// The likely reason native allocations bypass jemalloc, with its fix.
fn diagnose() -> String {
    if let Some(preload) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        return format!(
            "LD_PRELOAD={} preloads another allocator (or a tool that replaces malloc) in front \
             of jemalloc: run without it.",
            preload.to_string_lossy()
        );
    }
    let libc_malloc = libc::malloc as *const () as usize;
    let jemalloc_malloc = tikv_jemalloc_sys::malloc as *const () as usize;
    if libc_malloc != jemalloc_malloc {
        return "jemalloc is linked with prefixed symbols (_rjem_malloc), so C and C++ code still \
                uses the system malloc. Either the override is off, or this platform does not \
                support it (tikv-jemalloc-sys prefixes on macOS, Windows and Android: run leak \
                checks on Linux). To turn it on: on rust-rocksdb 0.25 or later, enable rocksdb's \
                `jemalloc` feature (`rocksdb = { version = \"0.25\", features = [\"jemalloc\"] }`); \
                on rust-rocksdb 0.22 to 0.24, whose `jemalloc` feature cannot be linked beside \
                leakcheck's jemalloc, leave it off and enable leakcheck's `unprefixed-malloc` \
                feature instead (`leakcheck = { version = \"..\", default-features = false, \
                features = [\"unprefixed-malloc\"] }`)."
            .to_string();
    }
    "malloc resolves to jemalloc, yet the allocations were not counted: jemalloc may have been \
     built with --disable-stats (enable tikv-jemalloc-ctl's `stats` feature), or another \
     thread freed memory while measuring: run the check in a process of its own."
        .to_string()
}
