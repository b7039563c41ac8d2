//! Memory straight from the kernel for the record's tables (never from `malloc`, inside whose
//! hooks they are used), how much of it is resident, and the spin lock that guards them: what
//! the tables, the stacks and the cache of frame sizes share, below all three.

use std::sync::atomic::{AtomicBool, Ordering};

/// Takes a spin lock: spins a few hundred times, then yields between tries, so that a holder
/// that was preempted runs. Allocates nothing (the hooks' locks).
pub(crate) fn spin_lock(locked: &AtomicBool) {
    let mut spins = 0u32;
    while locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
        spins += 1;
        if spins < 256 {
            std::hint::spin_loop();
        } else {
            // SAFETY: sched_yield has no preconditions and does not allocate.
            unsafe { libc::sched_yield() };
        }
    }
}

/// Resident bytes of the `len` bytes mapped at `addr` (page-aligned), read with `mincore`. Makes
/// no allocation (callable with a table's lock held); 0 where `mincore` fails.
pub(crate) fn resident_of(addr: *mut libc::c_void, len: usize) -> u64 {
    resident_in(addr as usize, len).unwrap_or(0)
}

/// Resident bytes of the pages under `addr..addr + len` (rounded out to whole pages), read with
/// `mincore`; `None` where part of it is not mapped (a block freed and given back meanwhile).
/// Makes no allocation and never touches the memory it reads of.
pub(crate) fn resident_in(addr: usize, len: usize) -> Option<u64> {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
    let from = addr - addr % page;
    let len = (addr + len).div_ceil(page) * page - from;
    let mut pages = [0u8; 4096];
    let (mut resident, mut offset) = (0u64, 0usize);
    while offset < len {
        let chunk = (len - offset).min(pages.len() * page);
        // SAFETY: `mincore` reads the page table only: an unmapped range is an error (ENOMEM),
        // never a fault. `from + offset` is a multiple of the page size and `pages` has a byte
        // for each of the chunk's pages.
        let ok = unsafe { libc::mincore((from + offset) as *mut libc::c_void, chunk, pages.as_mut_ptr()) } == 0;
        if !ok {
            return None;
        }
        resident += pages[..chunk.div_ceil(page)].iter().filter(|p| **p & 1 == 1).count() as u64 * page as u64;
        offset += chunk;
    }
    Some(resident)
}

/// Resident bytes of the pages a static array occupies (its first and last page rounded out,
/// which other statics may share: a constant, so growth is the array's own). Its pages are
/// touched as stack ids are handed out, so they grow with the stacks seen, outside jemalloc.
pub(crate) fn resident_of_static<T>(array: &[T]) -> u64 {
    resident_of(array.as_ptr().cast_mut().cast(), std::mem::size_of_val(array))
}

/// `bytes` of zeroed, private memory straight from the kernel (never from `malloc`): address space
/// only until touched (`MAP_NORESERVE`). The error is the OS's errno.
pub(crate) fn map_zeroed(bytes: usize) -> Result<*mut libc::c_void, i32> {
    // SAFETY: an anonymous private mapping with no address hint; the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(p)
    }
}
