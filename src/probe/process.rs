//! The process's OS resources, read from `/proc/self` (Linux).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::ProbeError;

/// OS resources of this process. A field that could not be read is `None`, never a made-up zero.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProcessStats {
    /// Resident set size (`VmRSS` in `/proc/self/status`), file-backed pages included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Anonymous resident memory (`RssAnon`): RSS without the pages of mapped files (a store
    /// reading its SST files through mmap grows `rss_bytes` with its data, not with a leak).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_anon_bytes: Option<u64>,
    /// Threads of this process (`Threads` in `/proc/self/status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u64>,
    /// Open file descriptors, not counting the one used to list them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_fds: Option<u64>,
    /// Open file descriptors whose target lies under the watched directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_fds_under_dir: Option<u64>,
    /// Memory mappings (lines of `/proc/self/maps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maps: Option<u64>,
    /// Memory mappings of files under the watched directory (deleted files included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maps_under_dir: Option<u64>,
    /// Memory mappings of files anywhere (a path starting with `/`), an object file (the
    /// executable, a shared library) once however often it is mapped and separate debug info
    /// not at all: a symbolizer naming stacks maps them again and lets them go. The anonymous
    /// rest moves with the allocator's extents and thread stacks, which other signals judge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_maps: Option<u64>,
}

/// Reads every field it can. `dir`, when given, is the directory whose files are counted
/// separately (a store's data directory); it should be canonical (the probe's `watch_dir` canonicalizes it).
pub(crate) fn read(dir: Option<&Path>) -> ProcessStats {
    let (rss_bytes, rss_anon_bytes, threads) = status().unwrap_or_default();
    let (open_fds, open_fds_under_dir) = match fds(dir) {
        Ok((all, under)) => (Some(all), under),
        Err(_) => (None, None),
    };
    let (maps, file_maps, maps_under_dir) = match maps(dir) {
        Ok(m) => (Some(m.all), Some(m.files), m.under_dir),
        Err(_) => (None, None, None),
    };
    ProcessStats { rss_bytes, rss_anon_bytes, threads, open_fds, open_fds_under_dir, maps, maps_under_dir, file_maps }
}

/// Resolves `dir` the way the kernel reports paths in `/proc/self/fd` and `/proc/self/maps`
/// (absolute, symlinks resolved), so that prefix matching works.
pub(crate) fn canonical_dir(dir: &Path) -> Result<PathBuf, ProbeError> {
    fs::canonicalize(dir).map_err(|source| ProbeError::Dir { path: dir.to_path_buf(), source })
}

fn proc_err(path: &str) -> impl FnOnce(io::Error) -> ProbeError + '_ {
    move |source| ProbeError::Proc { path: PathBuf::from(path), source }
}

/// `(VmRSS, RssAnon in bytes, Threads)`.
type Status = (Option<u64>, Option<u64>, Option<u64>);

/// `(VmRSS, RssAnon in bytes, Threads)` from `/proc/self/status`.
fn status() -> Result<Status, ProbeError> {
    let text = fs::read_to_string("/proc/self/status").map_err(proc_err("/proc/self/status"))?;
    Ok(parse_status(&text))
}

pub(crate) fn parse_status(text: &str) -> Status {
    // "VmRSS:\t   12345 kB"
    let kib = |rest: &str| {
        let mut parts = rest.split_whitespace();
        match (parts.next().and_then(|v| v.parse::<u64>().ok()), parts.next()) {
            (Some(v), Some("kB")) => Some(v * 1024),
            _ => None,
        }
    };
    let (mut rss, mut anon, mut threads) = (None, None, None);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("VmRSS:") {
            rss = kib(rest);
        } else if let Some(rest) = line.strip_prefix("RssAnon:") {
            anon = kib(rest);
        } else if let Some(rest) = line.strip_prefix("Threads:") {
            threads = rest.trim().parse().ok();
        }
    }
    (rss, anon, threads)
}

/// This process's threads other than the calling one, at one moment: what the handle check
/// watches to tell whether anything could still release a handle (a thread started since the
/// store opened, a thread ending, a thread using CPU).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OtherThreads {
    /// Their ids, sorted.
    pub(crate) ids: Vec<u32>,
    /// CPU time they have used, in nanoseconds (each thread's `schedstat`); `None` when the
    /// kernel keeps no `schedstat` for some thread (a kernel without `CONFIG_SCHED_INFO`).
    pub(crate) cpu_ns: Option<u64>,
}

/// The calling thread's id, from `/proc/thread-self` (a link to `PID/task/TID`).
fn own_thread_id() -> Option<u32> {
    let link = fs::read_link("/proc/thread-self").ok()?;
    link.file_name()?.to_str()?.parse().ok()
}

/// Reads [`OtherThreads`] into `out` (its vector is reused), their CPU time only with `cpu`
/// (`cpu_ns` is `None` otherwise). A thread that ends between the listing and the read of its
/// `schedstat` is left out of the ids.
///
/// # Errors
/// When `/proc/self/task` or `/proc/thread-self` cannot be read.
pub(crate) fn other_threads(out: &mut OtherThreads, cpu: bool) -> Result<(), ProbeError> {
    let me = own_thread_id().ok_or_else(|| ProbeError::Proc {
        path: PathBuf::from("/proc/thread-self"),
        source: io::Error::new(io::ErrorKind::InvalidData, "not a link to PID/task/TID"),
    })?;
    out.ids.clear();
    let mut total = cpu.then_some(0u64);
    for entry in fs::read_dir("/proc/self/task").map_err(proc_err("/proc/self/task"))? {
        let entry = entry.map_err(proc_err("/proc/self/task"))?;
        let Some(id) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if id == me {
            continue;
        }
        if total.is_some() {
            match fs::read_to_string(entry.path().join("schedstat")) {
                Ok(text) => {
                    let ns = text.split_whitespace().next().and_then(|v| v.parse::<u64>().ok());
                    total = total.zip(ns).map(|(a, b)| a + b);
                }
                // Gone since the listing: it ended, which the ids show.
                Err(e) if e.kind() == io::ErrorKind::NotFound && !entry.path().exists() => continue,
                Err(_) => total = None,
            }
        }
        out.ids.push(id);
    }
    out.ids.sort_unstable();
    out.cpu_ns = total;
    Ok(())
}

/// `(all open fds, fds under dir)`. The directory handle used for listing is not counted.
fn fds(dir: Option<&Path>) -> Result<(u64, Option<u64>), ProbeError> {
    let entries = fs::read_dir("/proc/self/fd").map_err(proc_err("/proc/self/fd"))?;
    let mut all = 0u64;
    let mut under = 0u64;
    for entry in entries {
        let entry = entry.map_err(proc_err("/proc/self/fd"))?;
        all += 1;
        if let Some(dir) = dir {
            // An fd closed between listing and readlink is simply gone: not counted under dir.
            if let Ok(target) = fs::read_link(entry.path()) {
                if target.starts_with(dir) {
                    under += 1;
                }
            }
        }
    }
    // The listing itself holds one descriptor open on /proc/self/fd.
    Ok((all.saturating_sub(1), dir.map(|_| under)))
}

/// Counts of `/proc/self/maps` lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MapCounts {
    all: u64,
    files: u64,
    under_dir: Option<u64>,
}

fn maps(dir: Option<&Path>) -> Result<MapCounts, ProbeError> {
    let text = fs::read_to_string("/proc/self/maps").map_err(proc_err("/proc/self/maps"))?;
    Ok(count_maps(&text, dir))
}

/// All maps, the maps of files, and the maps of files under `dir` (deleted ones included).
///
/// Of the maps of files, an object file (the executable or a shared library: a file with code
/// mapped executable) counts once however often it is mapped, and a separate debug-info file
/// (under `/usr/lib/debug`, or named `*.debug`) not at all. A symbolizer maps them again to read
/// their debug info and lets them go as its cache turns over (backtrace's keeps 4 libraries):
/// the measuring code naming stacks, not the store. A library loaded anew still counts.
pub(crate) fn count_maps(text: &str, dir: Option<&Path>) -> MapCounts {
    let mut c = MapCounts { all: 0, files: 0, under_dir: dir.map(|_| 0) };
    let executable = |line: &str| line.split_whitespace().nth(1).is_some_and(|perms| perms.contains('x'));
    let objects: std::collections::BTreeSet<&str> =
        text.lines().filter(|l| executable(l)).filter_map(file_of_map).collect();
    let debug_info = |path: &str| path.starts_with("/usr/lib/debug/") || path.ends_with(".debug");
    c.files = objects.len() as u64;
    for line in text.lines() {
        c.all += 1;
        let Some(path) = path_of_map(line) else { continue };
        if path.starts_with('/') && !objects.contains(path) && !debug_info(path) {
            c.files += 1;
        }
        if let (Some(dir), Some(under)) = (dir, c.under_dir.as_mut()) {
            if Path::new(path).starts_with(dir) {
                *under += 1;
            }
        }
    }
    c
}

/// The file a `/proc/self/maps` line maps (a deleted one by its old path), if it maps a file.
fn file_of_map(line: &str) -> Option<&str> {
    path_of_map(line).filter(|path| path.starts_with('/'))
}

/// A `/proc/self/maps` line's pathname, a deleted file's by its old path.
fn path_of_map(line: &str) -> Option<&str> {
    let path = map_path(line)?;
    Some(path.strip_suffix(" (deleted)").unwrap_or(path))
}

/// The pathname column of a `/proc/self/maps` line: everything after the five fixed fields
/// (address, perms, offset, dev, inode). Pathnames may contain spaces.
pub(crate) fn map_path(line: &str) -> Option<&str> {
    let mut rest = line;
    for _ in 0..5 {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace)?;
        rest = &rest[end..];
    }
    let path = rest.trim_start();
    (!path.is_empty()).then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_parse() {
        let text = "Name:\tx\nVmRSS:\t   2048 kB\nRssAnon:\t  1024 kB\nThreads:\t7\n";
        assert_eq!(parse_status(text), (Some(2048 * 1024), Some(1024 * 1024), Some(7)));
    }

    #[test]
    fn status_missing_or_odd_fields_are_absent_not_zero() {
        assert_eq!(parse_status("Name:\tx\n"), (None, None, None));
        assert_eq!(parse_status("VmRSS:\t12 MB\nThreads:\tmany\n"), (None, None, None));
    }

    #[test]
    fn map_paths_with_spaces_and_anonymous_maps() {
        let anon = "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 ";
        assert_eq!(map_path(anon), None);
        let file = "7f0000000000-7f0000001000 r--s 00000000 fd:01 1234     /tmp/a b/000012.sst";
        assert_eq!(map_path(file), Some("/tmp/a b/000012.sst"));
        let heap = "55d0c0000000-55d0c0021000 rw-p 00000000 00:00 0          [heap]";
        assert_eq!(map_path(heap), Some("[heap]"));
    }

    #[test]
    fn maps_under_dir_count_deleted_files_and_respect_component_boundaries() {
        let text = "\
7f0000000000-7f0000001000 r--s 00000000 fd:01 1 /data/store/000012.sst
7f0000001000-7f0000002000 r--s 00000000 fd:01 2 /data/store/000013.sst (deleted)
7f0000002000-7f0000003000 r--s 00000000 fd:01 3 /data/store2/000014.sst
7f0000003000-7f0000004000 rw-p 00000000 00:00 0
";
        assert_eq!(
            count_maps(text, Some(Path::new("/data/store"))),
            MapCounts { all: 4, files: 3, under_dir: Some(2) }
        );
        assert_eq!(count_maps(text, None), MapCounts { all: 4, files: 3, under_dir: None });
    }

    #[test]
    fn an_object_file_counts_once_and_debug_info_not_at_all() {
        // The executable as the loader maps it, then again whole by a symbolizer; a library;
        // its separate debug info; a file a store maps.
        let loaded = "\
5600000000-5600001000 r--p 00000000 fd:01 7 /usr/bin/app
5600001000-5600002000 r-xp 00001000 fd:01 7 /usr/bin/app
5600002000-5600003000 rw-p 00002000 fd:01 7 /usr/bin/app
7f0000000000-7f0000001000 r-xp 00000000 fd:01 8 /lib/libc.so.6
7f0000001000-7f0000002000 r--s 00000000 fd:01 9 /data/other/blob
";
        let base = count_maps(loaded, None);
        assert_eq!(base, MapCounts { all: 5, files: 3, under_dir: None });
        let symbolizing = format!(
            "{loaded}\
7f0000100000-7f0000900000 r--p 00000000 fd:01 7 /usr/bin/app
7f0000900000-7f0000a00000 r--p 00000000 fd:01 10 /usr/lib/debug/.build-id/ab/cdef.debug
7f0000a00000-7f0000b00000 r--p 00000000 fd:01 11 /lib/libc.so.6.debug
"
        );
        assert_eq!(count_maps(&symbolizing, None).files, base.files, "the symbolizer's maps are not the store's");
        // A second map of a file that is no object counts; so does a library loaded anew.
        let more = format!(
            "{loaded}\
7f0000002000-7f0000003000 r--s 00000000 fd:01 9 /data/other/blob
7f0000003000-7f0000004000 r-xp 00000000 fd:01 12 /lib/libz.so.1
"
        );
        assert_eq!(count_maps(&more, None).files, base.files + 2);
    }

    #[test]
    fn reading_this_process_fills_every_field_on_linux() {
        let dir = tempfile::tempdir().expect("tempdir");
        let dir = canonical_dir(dir.path()).expect("canonical");
        let stats = read(Some(&dir));
        assert!(stats.rss_bytes.is_some_and(|v| v > 0), "{stats:?}");
        assert!(stats.rss_anon_bytes.is_some_and(|v| v > 0 && Some(v) <= stats.rss_bytes), "{stats:?}");
        assert!(stats.threads.is_some_and(|v| v >= 1), "{stats:?}");
        assert!(stats.open_fds.is_some_and(|v| v >= 3), "{stats:?}");
        assert_eq!(stats.open_fds_under_dir, Some(0));
        assert!(stats.maps.is_some_and(|v| v > 0), "{stats:?}");
        assert_eq!(stats.maps_under_dir, Some(0));
    }

    #[test]
    fn other_threads_see_a_thread_start_work_and_end() {
        let mut before = OtherThreads::default();
        other_threads(&mut before, true).expect("read threads");
        let me = own_thread_id().expect("own id");
        assert!(!before.ids.contains(&me), "the calling thread is left out: {before:?}");
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            tx.send(own_thread_id()).expect("send id");
            // 30 ms of CPU by its own count (on a loaded machine, more wall time), then wait to
            // be let go.
            let own_cpu = || {
                let text = fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
                text.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(u64::MAX)
            };
            let start = own_cpu();
            let mut x = 0u64;
            while own_cpu().saturating_sub(start) < 30_000_000 {
                for _ in 0..10_000 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            }
            stop_rx.recv().ok();
            x
        });
        let id = rx.recv().expect("worker id").expect("worker's own id");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut during = OtherThreads::default();
        loop {
            other_threads(&mut during, true).expect("read threads");
            match (before.cpu_ns, during.cpu_ns) {
                (Some(a), Some(b)) if b < a + 25_000_000 && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                _ => break,
            }
        }
        assert!(during.ids.contains(&id), "{id} in {during:?}");
        if let (Some(a), Some(b)) = (before.cpu_ns, during.cpu_ns) {
            assert!(b >= a + 20_000_000, "the worker's CPU shows: {a} -> {b}");
        }
        stop_tx.send(()).expect("let go");
        worker.join().expect("worker");
        let mut after = OtherThreads::default();
        other_threads(&mut after, false).expect("read threads");
        assert!(!after.ids.contains(&id), "{id} ended: {after:?}");
    }
}
