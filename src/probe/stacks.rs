//! Reading the call stacks of a heap profile: which frames are the allocator's and the standard
//! library's, which growth is leakcheck's own bookkeeping, and a stack in one line. Plain text
//! work on resolved frame names, so that reports can be read and printed by a build without the
//! `profiling` feature. And a place in a source file (`Place`), as a frame or a ledger site names it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Allocator machinery at the inner end of every sampled stack: left out when a stack is named.
/// (`__rustc::` is the prefix of the global allocator's shims in recent Rust; `iralloc*`,
/// `ixallocx`, `arena_*` and `large_*` are jemalloc's reallocation paths; `hook_invoke`, the unwinder and
/// `leakcheck::probe::generations::` are the allocation hooks that take generations' stacks.)
const ALLOCATOR: [&str; 27] = [
    "prof_",
    "iralloc",
    "arena_",
    "large_",
    "hook_invoke",
    "_Unwind_",
    "leakcheck::probe::generations::",
    "je_",
    "_rjem_",
    "do_rallocx",
    "imalloc",
    "ialloc",
    "ixallocx",
    "malloc",
    "calloc",
    "realloc",
    "posix_memalign",
    "aligned_alloc",
    "operator new",
    "__rust_alloc",
    "__rust_realloc",
    "__rustc::",
    "__rdl_",
    "__rg_",
    "alloc::alloc::",
    "alloc::raw_vec::",
    "tikv_jemallocator",
];

/// Library frames between an allocation and the code that asked for it.
const LIBRARY: [&str; 4] = ["alloc::", "core::", "std::", "hashbrown::"];

/// Formatting called by the code that owns the text: `<StoreError as core::fmt::Display>::fmt`
/// allocates for whoever formats the error (the harness, when it records a failed step).
const FORMATTING: [&str; 2] = [" as core::fmt::Display>::fmt", " as core::fmt::Debug>::fmt"];

/// Whether the code that asked for a stack's memory is leakcheck's own (its ledger, the harness's
/// records and verdict): the first frame outside the allocator, the standard library and
/// formatting, from the inner end, is in `leakcheck::`; or the stack passes through leakcheck's
/// symbolizer (which names the stacks of what cycles left behind). Such growth is the tool's bookkeeping,
/// which the byte signals subtract; it stays in the profile files but is not reported as the
/// store's.
pub(crate) fn is_leakcheck_bookkeeping(frames: &[String]) -> bool {
    frames.iter().any(|f| function_path(f).starts_with(SYMBOLIZER))
        || frames
            .iter()
            .map(|f| function_path(f))
            .find(|f| !is_library(f) && !FORMATTING.iter().any(|p| f.ends_with(p)))
            .is_some_and(|f| f.starts_with("leakcheck::"))
}

/// leakcheck's symbolizer: what it allocates (the debug info it parses and caches, through the
/// `backtrace` crate and gimli) is the tool's, whichever crate's frame is innermost.
const SYMBOLIZER: &str = "leakcheck::probe::symbols::";

/// Primitive types, whose impls (`<u8 as ..>`, `<[u8]>::to_vec_in`) are the standard library's.
const PRIMITIVES: [&str; 17] = [
    "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool",
    "char", "str",
];

/// Whether a frame (as [`function_path`] reads it) is the allocator's or the standard library's.
pub(crate) fn is_library(path: &str) -> bool {
    is_allocator(path) || LIBRARY.iter().any(|p| path.starts_with(p)) || path.starts_with(['[', '&', '*', '('])
}

/// Whether a function (with any leading `<` trimmed) is the allocator's machinery.
pub(crate) fn is_allocator(path: &str) -> bool {
    ALLOCATOR.iter().any(|p| path.starts_with(p))
}

/// A frame's function and its source location: `name (file:line)` as the heap profile
/// names frames. Only a trailing `(..:LINE)` is a location: C++ signatures have parentheses too
/// (`Submit(std::function<void ()>, ..)`).
pub(crate) fn split_location(frame: &str) -> (&str, Option<&str>) {
    let located = frame.strip_suffix(')').and_then(|f| f.rsplit_once(" (")).filter(|(_, place)| {
        place.rsplit_once(':').is_some_and(|(file, line)| {
            !file.is_empty() && !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
        })
    });
    match located {
        Some((function, place)) => (function, Some(place)),
        None => (frame, None),
    }
}

/// A frame's function as a path to match prefixes against: no `file:line`, no leading `<`, and an
/// impl for a type parameter or a primitive (`<T as alloc::string::ToString>::to_string`,
/// `<u8 as ..>`) read as the trait's path.
fn function_path(frame: &str) -> &str {
    let f = split_location(frame).0.trim_start_matches('<');
    match f.split_once(" as ") {
        Some((param, rest))
            if (param.len() <= 2 && param.chars().all(|c| c.is_ascii_uppercase())) || PRIMITIVES.contains(&param) =>
        {
            rest.trim_start_matches('<')
        }
        _ => f,
    }
}

/// RocksDB functions that read a block into a block cache or insert one there: the live bytes
/// under them are cache entries, which the cache's usage counts (or blocks pinned by a reader,
/// which it counts too, beyond capacity).
const CACHE_FILL: [&str; 3] = ["MaybeReadBlockAndLoadToCache", "PutDataBlockToCache", "InsertEntryToCache"];

/// Whether a stack stores a block in a block cache (one of RocksDB's block-cache insertions among its frames). Such growth
/// is a cache filling as long as the caches' usage within capacity grew as much over the same
/// cycles; the runner explains it up to that much and no further.
pub(crate) fn fills_a_block_cache(frames: &[String]) -> bool {
    frames.iter().any(|f| CACHE_FILL.iter().any(|c| function_path(f).contains(c)))
}

/// Where the system's libraries say their sources were (glibc's debug info names
/// `./elf/../elf/dl-tls.c`; distribution packages build under `/build/` and install headers
/// under `/usr/`).
const SYSTEM_PLACES: [&str; 3] = ["./", "/build/", "/usr/"];

/// The innermost frame of the user's own code: a frame with a source location outside the
/// standard library, the registry's crates and the system's libraries, not leakcheck's (`None`
/// without debug info).
pub(crate) fn own_frame(frames: &[String]) -> Option<usize> {
    frames.iter().position(|f| {
        let place = split_location(f).1.unwrap_or("");
        !place.is_empty()
            && !place.contains("/rustc/")
            && !place.contains("/.cargo/registry/")
            && !SYSTEM_PLACES.iter().any(|p| place.starts_with(p))
            && !function_path(f).starts_with("leakcheck::")
            && !is_library(function_path(f))
    })
}

/// The function of `own_frame`, without its `file:line`: what stacks are summed by.
pub fn own_function(frames: &[String]) -> Option<&str> {
    own_frame(frames).map(|i| split_location(&frames[i]).0)
}

/// The function of the user's own code that made a stack's allocation itself: its innermost own
/// frame ([`own_frame`]) with only the allocator and the standard library inside it (not a
/// library's code it called, as RocksDB's). What the stacks of a leak whose callers differ from
/// cycle to cycle have in common.
pub(crate) fn made_by_own_function(frames: &[String]) -> Option<&str> {
    let own = own_frame(frames)?;
    frames[..own].iter().all(|f| is_library(function_path(f))).then(|| split_location(&frames[own]).0)
}

/// A stack in one line for a table: its innermost frame and the first frame of the user's own code
/// (`own_frame`), each function cut to `width` characters; the first three frames when no frame
/// is the user's (no debug info).
pub fn headline(frames: &[String], width: usize) -> String {
    let cut = |f: &String| -> String {
        let (function, place) = match split_location(f) {
            (function, Some(place)) => (function, format!(" ({place})")),
            (function, None) => (function, String::new()),
        };
        let short: String = function.chars().take(width).collect();
        let ellipsis = if short.len() < function.len() { "..." } else { "" };
        format!("{short}{ellipsis}{place}")
    };
    match own_frame(frames) {
        Some(0) => cut(&frames[0]),
        Some(1) => format!("{} <- {}", cut(&frames[0]), cut(&frames[1])),
        Some(i) => format!("{} <- .. <- {}", cut(&frames[0]), cut(&frames[i])),
        None => frames.iter().take(3).map(cut).collect::<Vec<_>>().join(" <- "),
    }
}

/// A place in a source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// The file as the build recorded it (relative to the workspace it was built in, or absolute).
    pub file: String,
    /// Its line.
    pub line: u32,
}

impl Place {
    /// `file:line` or `file:line:column` (a ledger site), or a frame's `function (file:line)`.
    pub(crate) fn parse(site: &str) -> Option<Place> {
        let site = match split_location(site) {
            (_, Some(place)) => place,
            (whole, None) => whole,
        };
        let number = |t: &str| t.parse::<u32>().ok();
        let (rest, last) = site.rsplit_once(':')?;
        let (file, line) = match rest.rsplit_once(':') {
            // `file:line:column`
            Some((file, line)) if number(line).is_some() && number(last).is_some() => (file, number(line)?),
            _ => (rest, number(last)?),
        };
        (!file.is_empty() && line > 0).then(|| Place { file: file.to_string(), line })
    }

    /// The file relative to `root` (a repository's checkout), where it lies under it; a relative
    /// file is taken as relative to `root` already.
    pub(crate) fn relative_to(&self, root: &Path) -> PathBuf {
        let file = Path::new(&self.file);
        file.strip_prefix(root).map_or_else(|_| file.to_path_buf(), Path::to_path_buf)
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(f: &[&str]) -> Vec<String> {
        f.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_stack_is_made_by_the_users_function_only_with_the_standard_library_inside_it() {
        let pushed = frames(&[
            "alloc::raw_vec::RawVec<T,A>::grow_one (/rustc/59807616e/library/alloc/src/raw_vec/mod.rs:1)",
            "store::Log::append (src/log.rs:12)",
            "store::Store::work (src/store.rs:40)",
        ]);
        assert_eq!(made_by_own_function(&pushed), Some("store::Log::append"));
        // RocksDB's allocation under the user's call is RocksDB's, and a stack with no frame of
        // the user's has no such function.
        let rocksdb =
            frames(&["rocksdb::Arena::AllocateNewBlock(unsigned long)", "store::Store::put (src/store.rs:40)"]);
        assert_eq!(made_by_own_function(&rocksdb), None);
        assert_eq!(made_by_own_function(&frames(&["malloc", "rocksdb::DBImpl::Open(..)"])), None);
    }

    /// Stacks as `--profile` names them (from a run of the reference store with line tables):
    /// leakcheck's records, also through a store error's `Display`, are bookkeeping; the store's
    /// own allocations are not, whatever the allocator shims above them.
    #[test]
    fn bookkeeping_is_the_first_frame_past_allocator_library_and_formatting() {
        let record = frames(&[
            "__rustc::__rust_alloc (src/bin/leakcheck/main.rs:24)",
            "<alloc::vec::Vec<u8>>::with_capacity_in (library/alloc/src/vec/mod.rs:1)",
            "<leakcheck::harness::Integrity as core::clone::Clone>::clone (src/harness/mod.rs:1)",
        ]);
        let error_text = frames(&[
            "irallocx_prof",
            "do_rallocx",
            "<leak_tests::reference::StoreError as core::fmt::Display>::fmt (leak-tests/src/reference.rs:1)",
            "leakcheck::harness::describe (src/harness/mod.rs:1)",
        ]);
        let store = frames(&[
            "__rustc::__rust_alloc",
            "<leak_tests::reference::ReferenceStore as leakcheck::harness::Lifecycle>::open (leak-tests/src/reference.rs:1018)",
            "leakcheck::harness::run_cycle",
        ]);
        let generic = frames(&[
            "<alloc::string::String as core::fmt::Write>::write_str",
            "<leak_tests::reference::StoreError as core::fmt::Display>::fmt",
            "<T as alloc::string::ToString>::to_string",
            "leakcheck::harness::describe",
        ]);
        assert!(is_leakcheck_bookkeeping(&generic));
        let symbolizer = frames(&[
            "gimli::read::abbrev::Abbreviations::insert",
            "backtrace::symbolize::resolve (/root/.cargo/registry/src/backtrace-0.3.77/src/symbolize/mod.rs:63)",
            "leakcheck::probe::symbols::resolve (src/probe/symbols.rs:23)",
            "leakcheck::harness::generations::RunGenerations::retained",
        ]);
        assert!(is_leakcheck_bookkeeping(&symbolizer), "the symbolizer's caches are the tool's");
        let clone = frames(&[
            "<alloc::vec::Vec<u8>>::with_capacity_in",
            "<u8 as <[_]>::to_vec_in::ConvertVec>::to_vec::<alloc::alloc::Global>",
            "<[u8]>::to_vec_in::<alloc::alloc::Global>",
            "<alloc::string::String as core::clone::Clone>::clone",
            "leakcheck::fault::Faults::take_fired::{{closure}}::{{closure}}",
        ]);
        assert!(is_leakcheck_bookkeeping(&clone));
        let native = frames(&[
            "rocksdb_options_create",
            "leak_tests::reference::ReferenceStore::offsets_options",
            "leakcheck::harness::run_cycle",
        ]);
        assert!(is_leakcheck_bookkeeping(&record));
        assert!(is_leakcheck_bookkeeping(&error_text));
        assert!(!is_leakcheck_bookkeeping(&store));
        assert!(!is_leakcheck_bookkeeping(&native));
    }

    #[test]
    fn a_block_cache_fill_is_read_from_rocksdbs_cache_functions() {
        let fill = frames(&[
            "rocksdb::BlockFetcher::ReadBlock(bool)",
            "std::enable_if<(true), rocksdb::Status>::type rocksdb::BlockBasedTable::MaybeReadBlockAndLoadToCache<rocksdb::Block_kData>(rocksdb::FilePrefetchBuffer*) const",
            "rocksdb::DBImpl::Get(rocksdb::ReadOptions const&)",
        ]);
        let handle = frames(&[
            "rocksdb::lru_cache::LRUCacheShard::CreateHandle(rocksdb::Slice const&)",
            "rocksdb::BlockBasedTable::PutDataBlockToCache<rocksdb::Block_kData>()",
        ]);
        let uncached = frames(&[
            "rocksdb::BlockFetcher::ReadBlock(bool)",
            "rocksdb::BlockBasedTable::ReadAndParseBlockFromFile()",
        ]);
        let options = frames(&["rocksdb_options_create", "kv_service::KvService::options (/work/kv/src/lib.rs:112)"]);
        assert!(fills_a_block_cache(&fill));
        assert!(fills_a_block_cache(&handle));
        assert!(!fills_a_block_cache(&uncached));
        assert!(!fills_a_block_cache(&options));
    }

    #[test]
    fn a_headline_is_the_innermost_frame_and_the_first_of_the_users_code() {
        let options = frames(&[
            "rocksdb_options_create",
            "leak_tests::reference::ReferenceStore::offsets_options (/work/leak-tests/src/reference.rs:431)",
            "leak_tests::reference::ReferenceStore::segment_options (/work/leak-tests/src/reference.rs:411)",
        ]);
        assert_eq!(
            headline(&options, 80),
            "rocksdb_options_create <- leak_tests::reference::ReferenceStore::offsets_options (/work/leak-tests/src/reference.rs:431)"
        );
        let deep = frames(&[
            "rocksdb::Arena::AllocateNewBlock(unsigned long)",
            "rocksdb::db::DBCommon<T,D>::put_cf (/root/.cargo/registry/src/x/rocksdb-0.25.0/src/db.rs:1)",
            "<leakcheck::tracked::db::TrackedDb<T>>::put_cf (/work/src/tracked/db.rs:9)",
            "core::ops::function::FnOnce::call_once (/rustc/abc/library/core/src/ops/function.rs:250)",
            "kv_service::KvService::work (/work/kv/src/lib.rs:170)",
        ]);
        assert_eq!(headline(&deep, 14), "rocksdb::Arena... <- .. <- kv_service::Kv... (/work/kv/src/lib.rs:170)");
        assert_eq!(own_function(&deep), Some("kv_service::KvService::work"));
        assert_eq!(own_function(&options), Some("leak_tests::reference::ReferenceStore::offsets_options"));
        let bare = frames(&["a", "b", "c", "d"]);
        assert_eq!(headline(&bare, 80), "a <- b <- c");
        assert_eq!(own_function(&bare), None);
        let cpp = frames(&[
            "rocksdb::ThreadPoolImpl::Impl::Submit(std::function<void ()>&&, std::function<void ()>&&, void*)",
            "kv_service::KvService::open_db (/work/kv/src/lib.rs:129)",
        ]);
        assert_eq!(split_location(&cpp[0]), (cpp[0].as_str(), None));
        assert_eq!(own_function(&cpp), Some("kv_service::KvService::open_db"));
        let tls =
            frames(&["allocate_dtv (./elf/../elf/dl-tls.c:401)", "__GI__dl_allocate_tls (./elf/../elf/dl-tls.c:670)"]);
        assert_eq!(own_function(&tls), None);
    }

    #[test]
    fn places_are_read_from_sites_and_frames() {
        let p = |s: &str| Place::parse(s).map(|p| p.to_string());
        assert_eq!(p("src/store.rs:48:22").as_deref(), Some("src/store.rs:48"));
        assert_eq!(p("my_crate::f (src/store.rs:88)").as_deref(), Some("src/store.rs:88"));
        assert_eq!(p("src/store.rs:88").as_deref(), Some("src/store.rs:88"));
        assert_eq!(p("C:\\work\\store.rs:9:1").as_deref(), Some("C:\\work\\store.rs:9"));
        assert_eq!(p("rocksdb::DBImpl::Write"), None);
        assert_eq!(p("src/store.rs:0:1"), None);
    }

    #[test]
    fn a_place_under_the_checkout_is_relative_to_it() {
        let p = Place { file: "/home/runner/work/app/app/src/store.rs".into(), line: 3 };
        assert_eq!(
            p.relative_to(std::path::Path::new("/home/runner/work/app/app")),
            std::path::Path::new("src/store.rs")
        );
        let q = Place { file: "src/store.rs".into(), line: 3 };
        assert_eq!(
            q.relative_to(std::path::Path::new("/home/runner/work/app/app")),
            std::path::Path::new("src/store.rs")
        );
    }
}
