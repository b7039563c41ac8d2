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
            function: sym.name().map_or_else(|| format!("{address:#x}"), |n| by_type(&format!("{n:#}"))),
            file: sym.filename().map(|p| p.display().to_string()),
            line: sym.lineno(),
        });
    });
    if frames.is_empty() {
        frames.push(Frame { function: format!("{address:#x}"), ..Frame::default() });
    }
    frames
}

/// A demangled name with each `module::<impl Type>` (a method whose `impl` block sits in another
/// module than its type, as Rust's symbols spell it) written as the type, `Type`, and each
/// `module::<impl Trait for Type>` as `<Type as Trait>`: the name a reader looks for, and the same
/// wherever in the crate the `impl` block is.
fn by_type(name: &str) -> String {
    const IMPL: &str = "<impl ";
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(at) = rest.find(IMPL) {
        let Some(len) = closing_angle(&rest[at + 1..]) else { break };
        let inner = &rest[at + IMPL.len()..at + 1 + len];
        // The module path the impl block sits in, just before it, is dropped.
        let before = &rest[..at];
        let path = before.trim_end_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ':');
        let keep = if before[path.len()..].ends_with("::") { path } else { before };
        out.push_str(keep);
        match top_level_split(inner, " for ") {
            Some((trait_, ty)) => {
                out.push('<');
                out.push_str(ty);
                out.push_str(" as ");
                out.push_str(trait_);
                out.push('>');
            }
            None => out.push_str(inner),
        }
        rest = &rest[at + 2 + len..];
    }
    out.push_str(rest);
    out
}

/// In `s` (what follows an opening `<`), the byte length up to its matching `>`; `->` is not a
/// bracket.
fn closing_angle(s: &str) -> Option<usize> {
    let mut depth = 1usize;
    let bytes = s.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` split at the first `sep` outside any `<..>`.
fn top_level_split<'a>(s: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let mut depth = 0usize;
    let bytes = s.as_bytes();
    for i in 0..bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' => depth = depth.saturating_sub(1),
            _ if depth == 0 && s[i..].starts_with(sep) => return Some((&s[..i], &s[i + sep.len()..])),
            _ => {}
        }
    }
    None
}

/// Reads the symbolizer's tables for this binary (its debug info, kept for the life of the
/// process), so that naming stacks later allocates little.
pub(crate) fn warm() {
    let _ = resolve(warm as *const () as usize as u64 + 1);
}

/// A stack's frames, innermost first, named by `resolve`, with the allocator's own frames at the
/// inner end left out (`function (file:line)` where debug info has them).
pub fn named_frames(stack: &[u64], resolve: &dyn Fn(u64) -> Vec<Frame>) -> Vec<String> {
    let frames: Vec<Frame> = stack.iter().flat_map(|a| resolve(*a)).collect();
    // The allocator's and the hooks' frames end where the last of them stands in the run of such
    // frames and the standard library's at the inner end: a standard function inlined into the
    // hooks (`bool::then` in the hook's record) is theirs, not the caller's.
    let machinery = |f: &Frame| super::stacks::is_allocator(f.function.trim_start_matches('<'));
    let inner = |f: &Frame| {
        machinery(f)
            || super::stacks::is_library(&f.function)
            || f.file.as_deref().is_some_and(|file| file.contains("/rustc/"))
    };
    let run = frames.iter().position(|f| !inner(f)).unwrap_or(frames.len());
    let first = frames[..run].iter().rposition(machinery).map_or(0, |i| i + 1);
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
    fn methods_are_named_by_their_type_wherever_their_impl_block_sits() {
        let cases = [
            (
                "leak_tests::reference::open::<impl leak_tests::reference::ReferenceStore>::offsets_options",
                "leak_tests::reference::ReferenceStore::offsets_options",
            ),
            ("a::<impl a::b::Wrap<Vec<u8>>>::new::{{closure}}", "a::b::Wrap<Vec<u8>>::new::{{closure}}"),
            ("m::<impl core::ops::Drop for m::Db>::drop", "<m::Db as core::ops::Drop>::drop"),
            ("x::<impl x::F<fn() -> u8>>::call", "x::F<fn() -> u8>::call"),
            ("<impl a::T>::f", "a::T::f"),
            ("rocksdb::DBImpl::Write", "rocksdb::DBImpl::Write"),
            ("broken::<impl a::T::f", "broken::<impl a::T::f"),
            ("0x8", "0x8"),
        ];
        for (mangled, expected) in cases {
            assert_eq!(by_type(mangled), expected, "{mangled}");
        }
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

    #[test]
    fn a_standard_function_inlined_into_the_hooks_is_theirs_and_the_callers_library_frames_stay() {
        let frame = |function: &str, file: Option<&str>| Frame {
            function: function.to_owned(),
            file: file.map(str::to_owned),
            line: file.map(|_| 7),
        };
        let table = [
            frame("bool::then", Some("/rustc/abc/library/core/src/bool.rs")),
            frame("leakcheck::probe::generations::hook::record", Some("/x/src/probe/generations/hook.rs")),
            frame("_rjem_je_malloc_default", None),
            frame("operator new(unsigned long)", None),
            frame("std::_Hashtable<int, int>::_M_insert", None),
            frame("rocksdb::ColumnFamilyData::Open", Some("/r/db/column_family.cc")),
        ];
        let resolve = |a: u64| vec![table[a as usize].clone()];
        let named = named_frames(&[0, 1, 2, 3, 4, 5], &resolve);
        assert_eq!(named.len(), 2, "{named:?}");
        assert!(named[0].starts_with("std::_Hashtable"), "{named:?}");
        // Without the hooks' frames, the stack is named from its first frame that is not the
        // allocator's, as before.
        let named = named_frames(&[3, 4, 5], &resolve);
        assert!(named[0].starts_with("std::_Hashtable"), "{named:?}");
        let named = named_frames(&[5], &resolve);
        assert!(named[0].starts_with("rocksdb::"), "{named:?}");
    }
}
