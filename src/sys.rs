//! Process-wide operating-system state the runner needs: a flag raised by SIGINT and SIGTERM.

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
