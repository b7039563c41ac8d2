//! Every `unsafe` call of the core, in one place: a flag raised by SIGINT and SIGTERM, the
//! monotonic clock, jemalloc's mallctls that its safe wrapper cannot express (void commands, `prof.dump`'s path), and C `malloc` for the
//! allocator coverage check. The rest of the crate denies `unsafe_code` (the planted-leak
//! catalog's deliberate leaks are allowed in their own modules).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn raise_stop(_signal: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

/// A flag that SIGINT and SIGTERM raise instead of ending the process (so a run can finish its
/// cycle and write its final report). Installs the handler once per process; each call lowers
/// the flag first.
///
/// # Errors
/// When `sigaction` fails.
pub(crate) fn stop_on_interrupt() -> std::io::Result<&'static AtomicBool> {
    static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: a zeroed sigaction is valid; the handler only stores to an atomic, and
            // sigemptyset/sigaction get pointers to live locals.
            let failed = unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = raise_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut()) != 0
            };
            if failed {
                return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
        }
        Ok(())
    });
    match installed {
        Ok(()) => {
            STOP.store(false, Ordering::Relaxed);
            Ok(&STOP)
        }
        Err(code) => Err(std::io::Error::from_raw_os_error(*code)),
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC is always supported on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// Calls a mallctl that neither reads nor writes a value; the error is jemalloc's code. jemalloc
/// rejects such calls (EPERM) when any pointer is non-null, which rules out
/// `tikv_jemalloc_ctl::raw::write(name, ())`.
pub(crate) fn mallctl_void(name: &std::ffi::CStr) -> Result<(), i32> {
    // SAFETY: `name` is nul-terminated; every in/out pointer is null with zero length, which is
    // exactly the calling convention of jemalloc's void commands.
    let code = unsafe {
        tikv_jemalloc_sys::mallctl(name.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), 0)
    };
    if code == 0 {
        Ok(())
    } else {
        Err(code)
    }
}

/// `count` blocks of `bytes` each from C `malloc`, held while `during` runs, then freed: an
/// allocation that only the C allocator sees (to prove it is jemalloc's).
pub(crate) fn with_c_blocks<T>(bytes: usize, count: usize, during: impl FnOnce() -> T) -> T {
    let mut blocks = Vec::with_capacity(count);
    for _ in 0..count {
        // SAFETY: plain C malloc; every block is freed below.
        let p = unsafe { libc::malloc(bytes) };
        blocks.push(std::hint::black_box(p));
    }
    let out = during();
    for p in blocks {
        // SAFETY: `p` came from malloc above (or is null, which free accepts).
        unsafe { libc::free(p) };
    }
    out
}

/// `prof.dump` to `path`: jemalloc writes the current heap profile there.
///
/// # Errors
/// jemalloc's error (profiling not active, the file cannot be written).
#[cfg(feature = "profiling")]
pub(crate) fn prof_dump(path: &std::ffi::CStr) -> Result<(), tikv_jemalloc_ctl::Error> {
    // SAFETY: `prof.dump` takes a `const char *` file name, read during the call; `path` is a
    // nul-terminated string that outlives it.
    unsafe { tikv_jemalloc_ctl::raw::write::<*const libc::c_char>(b"prof.dump\0", path.as_ptr()) }
}
