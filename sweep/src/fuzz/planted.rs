//! Copies of binding functions with a bug planted in each, written over librocksdb-sys as the
//! binding writes them: the fuzz's own proof that it can fail. Each fails on one kind of input
//! only, so that it is found only by drawing that input:
//!
//! - [`open`], a copy of `DB::open`, does not free RocksDB's error message when the open fails
//!   (the binding's `ffi_try!` frees it): a leak on the error path only.
//! - [`batch_put`], a copy of `WriteBatch::put` with the batch's drop, returns early for an empty
//!   key and so never destroys the batch: a leak for one argument class only (empty), not for
//!   valid arguments.
//! - [`set_ratelimiter`], a copy of `Options::set_ratelimiter`, aborts the process for a rate of
//!   0 (RocksDB itself dies by SIGFPE there; an abort is the same kind of finding, a crash, made
//!   certain): a crash for one argument class only (empty), for the crash shrink.
//!
//! Built with the sweep's `planted` feature only (the older releases' sweep builds without it).
#![allow(unsafe_code, clippy::redundant_closure_call)]

#[cfg(feature = "planted")]
use std::ffi::{c_char, CStr, CString};
#[cfg(feature = "planted")]
use std::os::unix::ffi::OsStrExt;
#[cfg(feature = "planted")]
use std::path::Path;

#[cfg(feature = "planted")]
use super::op::{fuzz_op, Arg, ArgClass, Effect, Needs, Op, Ran, Role};

/// The planted ops (empty without the `planted` feature).
#[cfg(feature = "planted")]
pub const PLANTED_OPS: &[Op] = &[
    fuzz_op!(planted "planted-open", Any, None, NewDir, [Name], [Valid, Empty, Conflicting, Invalid, Large], ["planted::open (a copy of DB::open)"], |db, dir, name, key, value, n| {
        crate::fuzz::planted::open(&dir.join(name));
        Ok(())
    }),
    fuzz_op!(planted "planted-ratelimiter", Any, None, None, [N], [Valid, Empty, Large], ["planted::set_ratelimiter (a copy of Options::set_ratelimiter)"], |db, dir, name, key, value, n| {
        crate::fuzz::planted::set_ratelimiter(n as i64);
        Ok(())
    }),
    fuzz_op!(planted "planted-batch-put", Any, None, None, [Key, Value], [Valid, Empty, Repeated, Large], ["planted::batch_put (a copy of WriteBatch::put)"], |db, dir, name, key, value, n| {
        crate::fuzz::planted::batch_put(key, value);
        Ok(())
    }),
];

/// The planted ops (empty without the `planted` feature).
#[cfg(not(feature = "planted"))]
pub const PLANTED_OPS: &[super::op::Op] = &[];

/// `DB::open(&opts, path)` with `create_if_missing`, then dropped; returns whether the open
/// failed. Planted bug: on failure the error message RocksDB allocated is not freed.
#[cfg(feature = "planted")]
pub fn open(path: &Path) -> bool {
    let Ok(cpath) = CString::new(path.as_os_str().as_bytes()) else {
        return true; // the binding refuses an interior NUL before calling RocksDB, as here
    };
    // SAFETY: the options and the DB are created, used and destroyed here; `err` is RocksDB's
    // out-parameter, a C string it allocates when the call fails.
    unsafe {
        let opts = librocksdb_sys::rocksdb_options_create();
        librocksdb_sys::rocksdb_options_set_create_if_missing(opts, 1);
        let mut err: *mut c_char = std::ptr::null_mut();
        let db = librocksdb_sys::rocksdb_open(opts, cpath.as_ptr(), &mut err);
        librocksdb_sys::rocksdb_options_destroy(opts);
        if !err.is_null() {
            let _message = CStr::from_ptr(err).to_string_lossy().into_owned();
            // The binding frees `err` here (ffi_util::error_message); this copy does not.
            return true;
        }
        librocksdb_sys::rocksdb_close(db);
        false
    }
}

/// `WriteBatch::default()`, `put(key, value)` and the batch's drop. Planted bug: an empty key
/// returns before the batch is destroyed.
#[cfg(feature = "planted")]
pub fn batch_put(key: &[u8], value: &[u8]) {
    // SAFETY: the batch is created here; the key and value outlive the put (RocksDB copies them).
    unsafe {
        let batch = librocksdb_sys::rocksdb_writebatch_create();
        librocksdb_sys::rocksdb_writebatch_put(
            batch,
            key.as_ptr() as *const c_char,
            key.len(),
            value.as_ptr() as *const c_char,
            value.len(),
        );
        if key.is_empty() {
            return; // planted: the early return skips the destroy below
        }
        librocksdb_sys::rocksdb_writebatch_destroy(batch);
    }
}

/// `Options::default()`, `set_ratelimiter(rate, 100_000, 10)` and the options' drop. Planted bug:
/// a rate of 0 aborts the process.
#[cfg(feature = "planted")]
pub fn set_ratelimiter(rate: i64) {
    if rate == 0 {
        std::process::abort(); // planted: the crash RocksDB's compiled-out assert lets through
    }
    // SAFETY: the options and the rate limiter are created, used and destroyed here; RocksDB
    // keeps its own reference to the limiter in the options.
    unsafe {
        let opts = librocksdb_sys::rocksdb_options_create();
        let limiter = librocksdb_sys::rocksdb_ratelimiter_create(rate, 100_000, 10);
        librocksdb_sys::rocksdb_options_set_ratelimiter(opts, limiter);
        librocksdb_sys::rocksdb_ratelimiter_destroy(limiter);
        librocksdb_sys::rocksdb_options_destroy(opts);
    }
}
