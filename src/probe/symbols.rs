//! Naming return addresses of this process: functions demangled (Rust and C++), with file and
//! line where debug info has them. Used for the stacks of what stays (allocation generations)
//! and of heap profiles.

/// One frame of a resolved address: a function, and where it is when debug info says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frame {
    /// The function (demangled), or the address in hex when unknown.
    pub function: String,
    /// Its source file, when known.
    pub file: Option<String>,
    /// Its line, when known.
    pub line: Option<u32>,
}

/// Resolves a return address in this process to its frames, inlined ones first: Rust and C++
/// names demangled (Rust's without the hash), file and line where debug info has them, else the
/// address in hex. Looks up `address - 1`, inside the call instruction (a return address points
/// after it), as `jeprof` does.
pub fn resolve(address: u64) -> Vec<Frame> {
    let mut frames = Vec::new();
    let inside = address.saturating_sub(1) as usize as *mut std::ffi::c_void;
    backtrace::resolve(inside, |sym| {
        frames.push(Frame {
            function: sym.name().map_or_else(|| format!("{address:#x}"), |n| format!("{n:#}")),
            file: sym.filename().map(|p| p.display().to_string()),
            line: sym.lineno(),
        });
    });
    if frames.is_empty() {
        frames.push(Frame { function: format!("{address:#x}"), ..Frame::default() });
    }
    frames
}

/// A stack's frames, innermost first, named by `resolve`, with the allocator's own frames at the
/// inner end left out (`function (file:line)` where debug info has them).
pub fn named_frames(stack: &[u64], resolve: &dyn Fn(u64) -> Vec<Frame>) -> Vec<String> {
    let frames: Vec<Frame> = stack.iter().flat_map(|a| resolve(*a)).collect();
    let first =
        frames.iter().position(|f| !super::stacks::is_allocator(f.function.trim_start_matches('<'))).unwrap_or(0);
    frames[first..]
        .iter()
        .map(|f| match (&f.file, f.line) {
            (Some(file), Some(line)) => format!("{} ({file}:{line})", f.function),
            _ => f.function.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The return addresses of the calling stack, innermost first, as jemalloc records them.
    #[inline(never)]
    fn a_named_function() -> Vec<u64> {
        let mut ips = Vec::new();
        backtrace::trace(|frame| {
            ips.push(frame.ip() as usize as u64);
            true
        });
        std::hint::black_box(ips)
    }

    #[test]
    fn return_addresses_of_this_process_resolve_to_their_functions() {
        let ips = a_named_function();
        let names: Vec<String> = ips.iter().flat_map(|a| resolve(*a)).map(|f| f.function).collect();
        assert!(names.iter().any(|n| n.ends_with("a_named_function")), "{names:?}");
        assert!(
            names.iter().any(|n| n.ends_with("return_addresses_of_this_process_resolve_to_their_functions")),
            "{names:?}"
        );
        assert_eq!(resolve(8)[0].function, "0x8", "an unmapped address stays an address");
    }
}
