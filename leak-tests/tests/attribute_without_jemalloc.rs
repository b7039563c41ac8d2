//! `#[leakcheck::test]` in a test binary whose global allocator jemalloc does not see (here one
//! that maps each allocation's pages itself, as an allocator of its own would): the test fails at
//! once with the line to add, and never passes blind to the Rust heap.

use std::alloc::{GlobalAlloc, Layout};

/// Each allocation its own pages from the kernel; none of them pass through jemalloc.
struct Mapped;

const PAGE: usize = 4096;

// SAFETY: every block is a fresh anonymous mapping of at least `layout.size()` bytes, aligned to
// a page (the layouts a test asks for need no more), and returned to the kernel whole.
unsafe impl GlobalAlloc for Mapped {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.align() > PAGE {
            return std::ptr::null_mut();
        }
        let len = layout.size().max(1).div_ceil(PAGE) * PAGE;
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let p = libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
        if p == libc::MAP_FAILED {
            std::ptr::null_mut()
        } else {
            p.cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        let len = layout.size().max(1).div_ceil(PAGE) * PAGE;
        libc::munmap(ptr.cast(), len);
    }
}

#[global_allocator]
static ALLOC: Mapped = Mapped;

#[leakcheck::test]
#[should_panic(expected = "#[global_allocator] static ALLOC: leakcheck::Jemalloc = leakcheck::Jemalloc;")]
fn without_jemalloc() {
    drop(vec![1u8; 16]);
}
