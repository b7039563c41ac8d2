//! jemalloc's sampling heap profiles, read and compared: where unexplained bytes come from.
//!
//! With profiling on, jemalloc samples about one allocation per `2^lg_prof_sample` bytes and
//! records its call stack; `prof.dump` writes every stack's live sampled objects and bytes in the
//! `heap_v2` text format (the one `jeprof` reads). This module parses such dumps, scales the
//! samples to estimated live bytes (as `jeprof` does), subtracts an earlier dump from a later one
//! per stack, and writes the result as a gzipped pprof profile (`pprof -base first.pb.gz
//! last.pb.gz`, speedscope and flame graph tools read it) and as folded stacks for a flame graph.
//!
//! Symbols are resolved by the caller (a function from an address to frames), so that a profile
//! taken in one process can be named in it, while the addresses are still mapped.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Write;
use std::path::Path;

use tikv_jemalloc_ctl::{Access, AsName};

use super::ProbeError;
use crate::units::escape_markup as esc;

/// Defines jemalloc's start-up options (the `malloc_conf` symbol) so that heap profiling is
/// compiled in and ready but inactive: `prof:true,prof_active:false`. A run then turns sampling
/// on with `--profile` (or [`crate::runner::Check::profile`]) and pays nothing measurable without it. Use it once, in the binary (a test
/// file of its own, a soak binary); jemalloc reads the symbol before `main`. The environment
/// variable `MALLOC_CONF=prof:true,prof_active:false` does the same without code.
///
/// It defines a `#[no_mangle]` static: a crate that denies `unsafe_code` allows it at the call.
#[macro_export]
macro_rules! heap_profiling_ready {
    () => {
        #[allow(non_upper_case_globals, unsafe_code)]
        #[no_mangle]
        pub static malloc_conf: Option<&'static u8> = Some(&b"prof:true,prof_active:false\0"[0]);
    };
}

/// Whether jemalloc was started with profiling (`opt.prof`), which only start-up options can
/// set ([`heap_profiling_ready!`](crate::heap_profiling_ready) or `MALLOC_CONF`).
pub fn available() -> bool {
    tikv_jemalloc_ctl::profiling::prof::read().unwrap_or(false)
}

/// Starts sampling from now on, one sample per `2^lg_sample` bytes on average: resets the
/// profile's counters (`prof.reset`) and activates it (`prof.active`).
///
/// # Errors
/// [`ProbeError::Profiling`] when jemalloc was started without profiling, with what to set.
pub fn start(lg_sample: u32) -> Result<(), ProbeError> {
    require_available()?;
    let fail = |what: &str, e: tikv_jemalloc_ctl::Error| ProbeError::Profiling {
        problem: format!("{what}: {e}"),
        fix: String::new(),
    };
    b"prof.reset\0".name().write(lg_sample as usize).map_err(|e| fail("prof.reset", e))?;
    b"prof.active\0".name().write(true).map_err(|e| fail("prof.active", e))
}

/// [`available`], as an error that says what to set when it is not.
///
/// # Errors
/// [`ProbeError::Profiling`] when jemalloc was started without profiling.
pub fn require_available() -> Result<(), ProbeError> {
    if !available() {
        return Err(ProbeError::Profiling {
            problem: "jemalloc was started without profiling (opt.prof is false)".into(),
            fix: "build with leakcheck's `profiling` feature and start the process with \
                  MALLOC_CONF=prof:true,prof_active:false, or put leakcheck::heap_profiling_ready!() \
                  in the binary"
                .into(),
        });
    }
    Ok(())
}

/// Stops sampling (`prof.active` false); what was sampled stays in the profile.
pub fn stop() {
    let _ = b"prof.active\0".name().write(false);
}

/// Writes the current profile to `path` (`prof.dump`, jemalloc's `heap_v2` text).
///
/// # Errors
/// [`ProbeError::Profiling`] when jemalloc refuses (profiling not started, the file cannot be
/// written).
pub fn dump(path: &Path) -> Result<(), ProbeError> {
    let c = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| ProbeError::Profiling {
        problem: format!("the path {} has a NUL byte", path.display()),
        fix: String::new(),
    })?;
    crate::sys::prof_dump(&c).map_err(|e| ProbeError::Profiling {
        problem: format!("prof.dump to {}: {e}", path.display()),
        fix: "check that the directory exists and is writable".into(),
    })
}

/// One stack's sampled live allocations in a dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sampled {
    /// Sampled live objects.
    pub objects: u64,
    /// Their bytes, as sampled (not scaled).
    pub bytes: u64,
}

/// A parsed `heap_v2` dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeapProfile {
    /// The mean sampling interval in bytes (`2^lg_prof_sample`).
    pub sample_period: u64,
    /// Live sampled allocations per call stack (return addresses, innermost first).
    pub stacks: BTreeMap<Vec<u64>, Sampled>,
}

/// A stack whose estimated live bytes grew between two dumps.
#[derive(Debug, Clone, PartialEq)]
pub struct StackGrowth {
    /// The call stack (return addresses, innermost first).
    pub stack: Vec<u64>,
    /// Estimated live bytes added between the dumps.
    pub bytes: f64,
    /// `bytes` divided by the cycles between the dumps.
    pub bytes_per_cycle: f64,
    /// Sampled live objects added.
    pub objects: i64,
    /// A one-sided 95% lower confidence bound on `bytes_per_cycle`: what the growth is at least,
    /// given that only `objects` samples stand for it ([`poisson_lower_bound`]). One sample of a
    /// small allocation stands for about one sample period of bytes, so a stack seen once or
    /// twice proves little; a leak sampled many times has a bound close to its estimate.
    pub lower_bytes_per_cycle: f64,
}

/// The stacks of `changes` ([`HeapProfile::changes_since`]) that grew, most first.
pub fn growing(changes: &[StackGrowth]) -> Vec<StackGrowth> {
    let mut out: Vec<StackGrowth> = changes.iter().filter(|g| g.bytes > 0.0).cloned().collect();
    out.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
    out
}

/// The confidence of [`StackGrowth::lower_bytes_per_cycle`].
pub const GROWTH_CONFIDENCE: f64 = 0.95;

/// The one-sided lower confidence bound on the mean of a Poisson count observed as `n`: the `λ`
/// at which seeing `n` or more has probability `1 - confidence` (0 for `n <= 0`). Sampled
/// allocations of a stack are such a count: each allocated byte is sampled independently.
pub fn poisson_lower_bound(n: i64, confidence: f64) -> f64 {
    if n <= 0 {
        return 0.0;
    }
    let n = n as u64;
    // P(X <= n - 1 | λ), summed in log space so large counts do not overflow.
    let below = |lambda: f64| -> f64 {
        let mut log_term = -lambda; // k = 0
        let mut sum = log_term.exp();
        for k in 1..n {
            log_term += lambda.ln() - (k as f64).ln();
            sum += log_term.exp();
        }
        sum
    };
    // `below` falls from 1 as λ grows: bisect for below(λ) = confidence.
    let (mut lo, mut hi) = (0.0_f64, n as f64 + 10.0 * (n as f64).sqrt() + 10.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if below(mid) > confidence {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

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

fn bad(line: usize, problem: impl Into<String>) -> ProbeError {
    ProbeError::HeapProfile { line, problem: problem.into() }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).ok()
}

/// `objs: bytes` from a `t*: 12: 4096 [0: 0]` line.
fn counts(rest: &str) -> Option<Sampled> {
    let mut parts = rest.split(':').map(str::trim);
    let objects = parts.next()?.parse().ok()?;
    let bytes = parts.next()?.split_whitespace().next()?.parse().ok()?;
    Some(Sampled { objects, bytes })
}

impl HeapProfile {
    /// Parses a `heap_v2/<period>` dump. The per-thread lines are ignored (their sum is the
    /// `t*` line); the `MAPPED_LIBRARIES` section ends the samples.
    ///
    /// # Errors
    /// [`ProbeError::HeapProfile`] naming the line at fault.
    pub fn parse(text: &str) -> Result<HeapProfile, ProbeError> {
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (_, header) = lines.next().ok_or_else(|| bad(1, "empty dump"))?;
        let period = header
            .trim()
            .strip_prefix("heap_v2/")
            .and_then(|p| p.trim().parse::<u64>().ok())
            .ok_or_else(|| bad(1, format!("expected `heap_v2/<sample period>`, found `{}`", header.trim())))?;
        let mut profile = HeapProfile { sample_period: period, stacks: BTreeMap::new() };
        let mut current: Option<Vec<u64>> = None;
        for (n, line) in lines {
            let line = line.trim();
            if line.starts_with("MAPPED_LIBRARIES") {
                break;
            }
            if let Some(addrs) = line.strip_prefix('@') {
                let stack: Option<Vec<u64>> = addrs.split_whitespace().map(hex).collect();
                current = Some(stack.ok_or_else(|| bad(n, format!("a stack address is not hex: `{line}`")))?);
            } else if let Some(rest) = line.strip_prefix("t*:") {
                let c = counts(rest)
                    .ok_or_else(|| bad(n, format!("expected `t*: <objects>: <bytes> [..]`, found `{line}`")))?;
                if let Some(stack) = current.take() {
                    let slot = profile.stacks.entry(stack).or_default();
                    slot.objects += c.objects;
                    slot.bytes += c.bytes;
                }
                // A `t*` line with no stack before it is the whole-heap total: not a stack.
            }
        }
        Ok(profile)
    }

    /// Estimated live bytes of a stack's samples: each sample stands for `1 / (1 - e^(-size /
    /// period))` allocations of its mean size (jemalloc samples an allocation of `size` bytes with
    /// that probability; `jeprof` scales the same way).
    pub fn estimated_bytes(&self, s: Sampled) -> f64 {
        if s.objects == 0 || s.bytes == 0 || self.sample_period <= 1 {
            return s.bytes as f64;
        }
        let mean = s.bytes as f64 / s.objects as f64;
        let p = 1.0 - (-mean / self.sample_period as f64).exp();
        if p <= 0.0 {
            s.bytes as f64
        } else {
            s.bytes as f64 / p
        }
    }

    /// What grew per stack from `earlier` to this profile over `cycles` cycles, most first. Stacks
    /// that shrank or stayed are left out.
    #[cfg(test)]
    fn growth_since(&self, earlier: &HeapProfile, cycles: u64) -> Vec<StackGrowth> {
        growing(&self.changes_since(earlier, cycles))
    }

    /// The change of every stack in either profile from `earlier` to this one over `cycles`
    /// cycles, shrinking ones too (negative `bytes` and `objects`, lower bound 0), in no order.
    pub fn changes_since(&self, earlier: &HeapProfile, cycles: u64) -> Vec<StackGrowth> {
        let gone = earlier.stacks.keys().filter(|s| !self.stacks.contains_key(*s));
        self.stacks
            .keys()
            .chain(gone)
            .map(|stack| {
                let now = self.stacks.get(stack).copied().unwrap_or_default();
                let before = earlier.stacks.get(stack).copied().unwrap_or_default();
                let bytes = self.estimated_bytes(now) - earlier.estimated_bytes(before);
                let objects = now.objects as i64 - before.objects as i64;
                let bytes_per_cycle = bytes / cycles.max(1) as f64;
                let lower = if objects > 0 && bytes > 0.0 {
                    bytes_per_cycle * poisson_lower_bound(objects, GROWTH_CONFIDENCE) / objects as f64
                } else {
                    0.0
                };
                StackGrowth { stack: stack.clone(), bytes, bytes_per_cycle, objects, lower_bytes_per_cycle: lower }
            })
            .collect()
    }

    /// The profile in pprof's format (protobuf, gzipped), sample types `inuse_objects`/`count`
    /// and `inuse_space`/`bytes` with estimated values, every address resolved by `resolve`
    /// (innermost frame first, inlined frames before their caller).
    ///
    /// # Errors
    /// When compressing fails (it writes to memory: in practice never).
    pub fn to_pprof(&self, resolve: &dyn Fn(u64) -> Vec<Frame>) -> Result<Vec<u8>, ProbeError> {
        let mut p = Pprof::default();
        let objects = p.string("inuse_objects");
        let count = p.string("count");
        let space = p.string("inuse_space");
        let bytes = p.string("bytes");
        let mut msg = Vec::new();
        for (t, u) in [(objects, count), (space, bytes)] {
            let mut vt = Vec::new();
            varint_field(&mut vt, 1, t);
            varint_field(&mut vt, 2, u);
            bytes_field(&mut msg, 1, &vt);
        }
        let mut samples = Vec::new();
        for (stack, s) in &self.stacks {
            let ids: Vec<u64> = stack.iter().map(|a| p.location(*a, resolve)).collect();
            let scale = if s.bytes == 0 { 1.0 } else { self.estimated_bytes(*s) / s.bytes as f64 };
            let values = [(s.objects as f64 * scale).round() as u64, self.estimated_bytes(*s).round() as u64];
            let mut sample = Vec::new();
            packed_field(&mut sample, 1, &ids);
            packed_field(&mut sample, 2, &values);
            samples.push(sample);
        }
        for s in &samples {
            bytes_field(&mut msg, 2, s);
        }
        for loc in &p.locations {
            bytes_field(&mut msg, 4, loc);
        }
        for f in &p.functions {
            bytes_field(&mut msg, 5, f);
        }
        for s in &p.strings {
            bytes_field(&mut msg, 6, s.as_bytes());
        }
        let mut period_type = Vec::new();
        varint_field(&mut period_type, 1, space);
        varint_field(&mut period_type, 2, bytes);
        bytes_field(&mut msg, 11, &period_type);
        varint_field(&mut msg, 12, self.sample_period);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&msg).map_err(ProbeError::Compress)?;
        gz.finish().map_err(ProbeError::Compress)
    }
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

/// Folded stacks (`outer;...;inner bytes`, one line per stack, integer bytes), the input of flame
/// graph tools, from the growth between two profiles.
pub fn folded(growth: &[StackGrowth], resolve: &dyn Fn(u64) -> Vec<Frame>) -> String {
    let mut out = String::new();
    for g in growth {
        let frames: Vec<String> = g
            .stack
            .iter()
            .rev()
            .flat_map(|a| resolve(*a).into_iter().rev().map(|f| f.function.replace(';', ":")))
            .collect();
        out.push_str(&format!("{} {}\n", frames.join(";"), g.bytes.round() as u64));
    }
    out
}

/// A flame graph of the growth (SVG): one box per function on a stack, as wide as the bytes that
/// grew through it, callers below callees; hovering a box shows its name and bytes per cycle.
pub fn flame_svg(growth: &[StackGrowth], resolve: &dyn Fn(u64) -> Vec<Frame>, title: &str) -> String {
    #[derive(Default)]
    struct Node {
        bytes: f64,
        per_cycle: f64,
        children: BTreeMap<String, Node>,
    }
    let mut root = Node::default();
    let mut depth_max = 0;
    for g in growth {
        let names: Vec<String> =
            g.stack.iter().rev().flat_map(|a| resolve(*a).into_iter().rev().map(|f| f.function)).collect();
        depth_max = depth_max.max(names.len());
        root.bytes += g.bytes;
        root.per_cycle += g.bytes_per_cycle;
        let mut node = &mut root;
        for n in names {
            node = node.children.entry(n).or_default();
            node.bytes += g.bytes;
            node.per_cycle += g.bytes_per_cycle;
        }
    }
    const WIDTH: f64 = 1200.0;
    const ROW: f64 = 16.0;
    let height = (depth_max as f64 + 3.0) * ROW;
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" font-family=\"monospace\" font-size=\"11\">\n\
         <text x=\"4\" y=\"12\">{}</text>\n",
        esc(title)
    );
    fn draw(out: &mut String, node: &Node, name: &str, x: f64, width: f64, depth: usize, height: f64) {
        if width < 0.5 {
            return;
        }
        let y = height - (depth as f64 + 1.0) * ROW;
        let hue = name.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b))) % 60;
        out.push_str(&format!(
            "<g><title>{} ({:.0} B per cycle)</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{width:.1}\" height=\"{:.1}\" fill=\"hsl({hue},80%,60%)\" stroke=\"white\"/>",
            esc(name),
            node.per_cycle,
            ROW - 1.0
        ));
        let chars = ((width - 4.0) / 7.0).floor() as usize;
        if chars >= 3 {
            let label: String = if name.chars().count() > chars {
                name.chars().take(chars.saturating_sub(2)).chain("..".chars()).collect()
            } else {
                name.to_string()
            };
            out.push_str(&format!("<text x=\"{:.1}\" y=\"{:.1}\">{}</text>", x + 2.0, y + ROW - 4.0, esc(&label)));
        }
        out.push_str("</g>\n");
        let mut cx = x;
        for (child, c) in &node.children {
            let w = if node.bytes > 0.0 { width * c.bytes / node.bytes } else { 0.0 };
            draw(out, c, child, cx, w, depth + 1, height);
            cx += w;
        }
    }
    draw(&mut out, &root, "all growth", 0.0, WIDTH, 0, height);
    out.push_str("</svg>\n");
    out
}

/// pprof's tables, built as samples are added.
#[derive(Default)]
struct Pprof {
    strings: Vec<String>,
    string_ids: BTreeMap<String, u64>,
    locations: Vec<Vec<u8>>,
    location_ids: BTreeMap<u64, u64>,
    functions: Vec<Vec<u8>>,
    function_ids: BTreeMap<(String, String), u64>,
}

impl Pprof {
    fn string(&mut self, s: &str) -> u64 {
        if self.strings.is_empty() {
            self.strings.push(String::new()); // index 0 is the empty string, by the format
            self.string_ids.insert(String::new(), 0);
        }
        if let Some(id) = self.string_ids.get(s) {
            return *id;
        }
        let id = self.strings.len() as u64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn function(&mut self, f: &Frame) -> u64 {
        let key = (f.function.clone(), f.file.clone().unwrap_or_default());
        if let Some(id) = self.function_ids.get(&key) {
            return *id;
        }
        let id = self.functions.len() as u64 + 1;
        let name = self.string(&f.function);
        let file = self.string(f.file.as_deref().unwrap_or(""));
        let mut m = Vec::new();
        varint_field(&mut m, 1, id);
        varint_field(&mut m, 2, name);
        varint_field(&mut m, 3, name);
        varint_field(&mut m, 4, file);
        self.functions.push(m);
        self.function_ids.insert(key, id);
        id
    }

    fn location(&mut self, address: u64, resolve: &dyn Fn(u64) -> Vec<Frame>) -> u64 {
        if let Some(id) = self.location_ids.get(&address) {
            return *id;
        }
        let id = self.locations.len() as u64 + 1;
        let mut m = Vec::new();
        varint_field(&mut m, 1, id);
        varint_field(&mut m, 3, address);
        for f in resolve(address) {
            let function = self.function(&f);
            let mut line = Vec::new();
            varint_field(&mut line, 1, function);
            varint_field(&mut line, 2, u64::from(f.line.unwrap_or(0)));
            bytes_field(&mut m, 4, &line);
        }
        self.locations.push(m);
        self.location_ids.insert(address, id);
        id
    }
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_field(out: &mut Vec<u8>, field: u32, v: u64) {
    varint(out, u64::from(field) << 3);
    varint(out, v);
}

fn bytes_field(out: &mut Vec<u8>, field: u32, data: &[u8]) {
    varint(out, (u64::from(field) << 3) | 2);
    varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn packed_field(out: &mut Vec<u8>, field: u32, values: &[u64]) {
    let mut data = Vec::new();
    for v in values {
        varint(&mut data, *v);
    }
    bytes_field(out, field, &data);
}

#[cfg(test)]
mod tests {
    use super::*;

    const EARLY: &str = "heap_v2/524288
  t*: 30: 90000 [0: 0]
  t0: 30: 90000 [0: 0]
@ 0x10 0x20 0x30
  t*: 10: 40960 [0: 0]
  t0: 10: 40960 [0: 0]
@ 0x11 0x20 0x30
  t*: 20: 49040 [0: 0]

MAPPED_LIBRARIES:
55d0c0000000-55d0c0100000 r-xp 00000000 00:00 0 /bin/store
";

    const LATE: &str = "heap_v2/524288
  t*: 60: 300000 [0: 0]
@ 0x10 0x20 0x30
  t*: 50: 204800 [0: 0]
@ 0x11 0x20 0x30
  t*: 20: 49040 [0: 0]
@ 0x12 0x30
  t*: 1: 100 [0: 0]
MAPPED_LIBRARIES:
";

    fn names(a: u64) -> Vec<Frame> {
        vec![Frame { function: format!("f{a:x}"), file: Some("store.rs".into()), line: Some(a as u32) }]
    }

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

    #[test]
    fn parses_stacks_and_skips_the_total_and_thread_lines() {
        let p = HeapProfile::parse(EARLY).expect("parse");
        assert_eq!(p.sample_period, 524288);
        assert_eq!(p.stacks.len(), 2);
        assert_eq!(p.stacks[&vec![0x10, 0x20, 0x30]], Sampled { objects: 10, bytes: 40960 });
    }

    #[test]
    fn bad_dumps_name_the_line() {
        for (text, line) in [("", 1), ("heap_v1/3\n", 1), ("heap_v2/8\n@ 0xzz\n", 2), ("heap_v2/8\n@ 0x1\n t*: x\n", 3)]
        {
            match HeapProfile::parse(text) {
                Err(ProbeError::HeapProfile { line: l, .. }) => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn samples_are_scaled_as_jeprof_scales_them() {
        let p = HeapProfile { sample_period: 524288, stacks: BTreeMap::new() };
        // 4 KiB objects are sampled with probability 1 - e^(-4096/524288) ~ 0.78%.
        let est = p.estimated_bytes(Sampled { objects: 1, bytes: 4096 });
        assert!((est - 4096.0 / (1.0 - (-4096.0f64 / 524288.0).exp())).abs() < 1e-6);
        assert!(est > 500_000.0 && est < 530_000.0, "{est}");
        // Objects far above the period are always sampled: counted as they are.
        let big = p.estimated_bytes(Sampled { objects: 1, bytes: 64 << 20 });
        assert!((big - (64 << 20) as f64).abs() < 1.0);
        // Period 1 (lg_prof_sample:0) samples everything.
        let every = HeapProfile { sample_period: 1, stacks: BTreeMap::new() };
        assert_eq!(every.estimated_bytes(Sampled { objects: 3, bytes: 300 }), 300.0);
    }

    #[test]
    fn growth_is_per_stack_most_first_and_per_cycle() {
        let early = HeapProfile::parse(EARLY).expect("early");
        let late = HeapProfile::parse(LATE).expect("late");
        let g = late.growth_since(&early, 40);
        assert_eq!(g.len(), 2, "the unchanged stack is left out: {g:?}");
        assert_eq!(g[0].stack, vec![0x10, 0x20, 0x30]);
        assert_eq!(g[0].objects, 40);
        let expected = late.estimated_bytes(Sampled { objects: 50, bytes: 204800 })
            - early.estimated_bytes(Sampled { objects: 10, bytes: 40960 });
        assert!((g[0].bytes - expected).abs() < 1e-6);
        assert!((g[0].bytes_per_cycle - expected / 40.0).abs() < 1e-6);
        assert_eq!(g[1].stack, vec![0x12, 0x30]);
        // Read the other way, every stack changed or not is there, the shrinking ones negative.
        let mut back = early.changes_since(&late, 40);
        back.sort_by(|a, b| a.stack.cmp(&b.stack));
        assert_eq!(
            back.iter().map(|c| (c.objects, c.lower_bytes_per_cycle)).collect::<Vec<_>>(),
            vec![(-40, 0.0), (0, 0.0), (-1, 0.0)]
        );
        assert!(back[0].bytes < 0.0);
    }

    #[test]
    fn folded_stacks_read_outer_to_inner() {
        let early = HeapProfile::parse(EARLY).expect("early");
        let late = HeapProfile::parse(LATE).expect("late");
        let text = folded(&late.growth_since(&early, 1), &names);
        let first = text.lines().next().expect("a line");
        assert!(first.starts_with("f30;f20;f10 "), "{text}");
    }

    #[test]
    fn the_flame_graph_draws_each_function_as_wide_as_its_growth() {
        let early = HeapProfile::parse(EARLY).expect("early");
        let late = HeapProfile::parse(LATE).expect("late");
        let growth = late.growth_since(&early, 10);
        let svg = flame_svg(&growth, &names, "growth <test>");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("growth &lt;test&gt;"), "the title is escaped");
        // f30 is the outermost frame of every growing stack: full width, one row above the root.
        assert!(svg.contains("<title>f30 ("), "{svg}");
        let width_of = |name: &str| -> f64 {
            let at = svg.find(&format!("<title>{name} (")).expect(name);
            let w = &svg[at..];
            let w = &w[w.find("width=\"").expect("width") + 7..];
            w[..w.find('"').expect("quote")].parse().expect("a number")
        };
        assert!((width_of("f30") - 1200.0).abs() < 0.2);
        let (big, small) = (width_of("f10"), width_of("f12"));
        let want = growth[0].bytes / growth[1].bytes;
        assert!(((big / small) / want - 1.0).abs() < 0.01, "{big} / {small} against {want}");
    }

    #[test]
    fn pprof_output_is_gzipped_protobuf_with_the_names() {
        let late = HeapProfile::parse(LATE).expect("late");
        let gz = late.to_pprof(&names).expect("pprof");
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).expect("gunzip");
        let text = String::from_utf8_lossy(&raw);
        for s in ["inuse_space", "inuse_objects", "bytes", "f10", "f12", "store.rs"] {
            assert!(text.contains(s), "{s} missing");
        }
        // Field 12 (period) holds the sample period as a varint at the end.
        let mut period = Vec::new();
        varint_field(&mut period, 12, 524288);
        assert!(raw.ends_with(&period));
    }

    /// The bound against known values of the chi-square relation `λ_low = χ²(1 - c; 2n) / 2`.
    #[test]
    fn poisson_lower_bounds_match_the_chi_square_table() {
        for (n, want) in [(1, 0.05129), (2, 0.35536), (3, 0.81769), (10, 5.42540), (100, 84.14)] {
            let got = poisson_lower_bound(n, 0.95);
            assert!((got / want - 1.0).abs() < 2e-3, "n = {n}: {got} against {want}");
        }
        assert_eq!(poisson_lower_bound(0, 0.95), 0.0);
        assert_eq!(poisson_lower_bound(-3, 0.95), 0.0);
    }
}
