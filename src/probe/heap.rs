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

pub(crate) use super::symbols::{named_frames, resolve, Frame};
use super::{pprof, ProbeError};

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
pub(crate) fn available() -> bool {
    tikv_jemalloc_ctl::profiling::prof::read().unwrap_or(false)
}

/// Starts sampling from now on, one sample per `2^lg_sample` bytes on average: resets the
/// profile's counters (`prof.reset`) and activates it (`prof.active`).
///
/// # Errors
/// [`ProbeError::Profiling`] when jemalloc was started without profiling, with what to set.
pub(crate) fn start(lg_sample: u32) -> Result<(), ProbeError> {
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
pub(crate) fn require_available() -> Result<(), ProbeError> {
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
pub(crate) fn stop() {
    let _ = b"prof.active\0".name().write(false);
}

/// Writes the current profile to `path` (`prof.dump`, jemalloc's `heap_v2` text).
///
/// # Errors
/// [`ProbeError::Profiling`] when jemalloc refuses (profiling not started, the file cannot be
/// written).
pub(crate) fn dump(path: &Path) -> Result<(), ProbeError> {
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
pub(crate) struct Sampled {
    /// Sampled live objects.
    pub objects: u64,
    /// Their bytes, as sampled (not scaled).
    pub bytes: u64,
}

/// A parsed `heap_v2` dump.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HeapProfile {
    /// The mean sampling interval in bytes (`2^lg_prof_sample`).
    pub sample_period: u64,
    /// Live sampled allocations per call stack (return addresses, innermost first).
    pub stacks: BTreeMap<Vec<u64>, Sampled>,
}

/// A stack whose estimated live bytes grew between two dumps.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StackGrowth {
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
pub(crate) fn growing(changes: &[StackGrowth]) -> Vec<StackGrowth> {
    let mut out: Vec<StackGrowth> = changes.iter().filter(|g| g.bytes > 0.0).cloned().collect();
    out.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
    out
}

/// The confidence of [`StackGrowth::lower_bytes_per_cycle`].
pub(crate) const GROWTH_CONFIDENCE: f64 = 0.95;

/// The one-sided lower confidence bound on the mean of a Poisson count observed as `n`: the `λ`
/// at which seeing `n` or more has probability `1 - confidence` (0 for `n <= 0`). Sampled
/// allocations of a stack are such a count: each allocated byte is sampled independently.
pub(crate) fn poisson_lower_bound(n: i64, confidence: f64) -> f64 {
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
    pub(crate) fn parse(text: &str) -> Result<HeapProfile, ProbeError> {
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
    pub(crate) fn estimated_bytes(&self, s: Sampled) -> f64 {
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
    pub(crate) fn changes_since(&self, earlier: &HeapProfile, cycles: u64) -> Vec<StackGrowth> {
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
    /// (innermost frame first, inlined frames before their caller). The schema is pprof's
    /// ([`super::pprof`]); prost writes it.
    ///
    /// # Errors
    /// When compressing fails (it writes to memory: in practice never).
    pub(crate) fn to_pprof(&self, resolve: &dyn Fn(u64) -> Vec<Frame>) -> Result<Vec<u8>, ProbeError> {
        use prost::Message;
        let mut t = Tables::default();
        let value_type =
            |t: &mut Tables, ty: &str, unit: &str| pprof::ValueType { r#type: t.string(ty), unit: t.string(unit) };
        let sample_type =
            vec![value_type(&mut t, "inuse_objects", "count"), value_type(&mut t, "inuse_space", "bytes")];
        let period_type = Some(value_type(&mut t, "inuse_space", "bytes"));
        let sample = self
            .stacks
            .iter()
            .map(|(stack, s)| {
                let estimated = self.estimated_bytes(*s);
                let scale = if s.bytes == 0 { 1.0 } else { estimated / s.bytes as f64 };
                pprof::Sample {
                    location_id: stack.iter().map(|a| t.location(*a, resolve)).collect(),
                    value: vec![(s.objects as f64 * scale).round() as i64, estimated.round() as i64],
                }
            })
            .collect();
        let profile = pprof::Profile {
            sample_type,
            sample,
            location: t.locations,
            function: t.functions,
            string_table: t.strings,
            period_type,
            period: i64::try_from(self.sample_period).unwrap_or(i64::MAX),
        };
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&profile.encode_to_vec()).map_err(ProbeError::Compress)?;
        gz.finish().map_err(ProbeError::Compress)
    }
}

/// Folded stacks (`outer;...;inner bytes`, one line per stack, integer bytes), the input of flame
/// graph tools, from the growth between two profiles.
pub(crate) fn folded(growth: &[StackGrowth], resolve: &dyn Fn(u64) -> Vec<Frame>) -> String {
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

/// A flame graph of the growth (SVG, drawn by inferno from the [`folded`] stacks): one box per
/// function on a stack, as wide as the bytes that grew through it, callers below callees,
/// clickable to zoom, with a search. `None` when no stack grew.
///
/// # Errors
/// When inferno cannot draw the stacks.
pub(crate) fn flame_svg(
    growth: &[StackGrowth],
    resolve: &dyn Fn(u64) -> Vec<Frame>,
    title: &str,
) -> Result<Option<String>, ProbeError> {
    let folded = folded(growth, resolve);
    if !folded.lines().any(|l| l.rsplit(' ').next().is_some_and(|n| n != "0")) {
        return Ok(None);
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "bytes".to_string();
    // Colours from the names, not at random: the same growth draws the same picture.
    opts.hash = true;
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut svg).map_err(ProbeError::Flame)?;
    String::from_utf8(svg)
        .map(Some)
        .map_err(|e| ProbeError::Flame(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))
}

/// pprof's tables (strings, functions, locations), each entry added once, as samples need it.
#[derive(Default)]
struct Tables {
    strings: Vec<String>,
    string_ids: BTreeMap<String, i64>,
    locations: Vec<pprof::Location>,
    location_ids: BTreeMap<u64, u64>,
    functions: Vec<pprof::Function>,
    function_ids: BTreeMap<(String, String), u64>,
}

impl Tables {
    fn string(&mut self, s: &str) -> i64 {
        if self.strings.is_empty() {
            self.strings.push(String::new()); // index 0 is the empty string, by the schema
            self.string_ids.insert(String::new(), 0);
        }
        if let Some(id) = self.string_ids.get(s) {
            return *id;
        }
        let id = self.strings.len() as i64;
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
        let filename = self.string(f.file.as_deref().unwrap_or(""));
        self.functions.push(pprof::Function { id, name, system_name: name, filename });
        self.function_ids.insert(key, id);
        id
    }

    fn location(&mut self, address: u64, resolve: &dyn Fn(u64) -> Vec<Frame>) -> u64 {
        if let Some(id) = self.location_ids.get(&address) {
            return *id;
        }
        let id = self.locations.len() as u64 + 1;
        let line = resolve(address)
            .iter()
            .map(|f| pprof::Line { function_id: self.function(f), line: i64::from(f.line.unwrap_or(0)) })
            .collect();
        self.locations.push(pprof::Location { id, address, line });
        self.location_ids.insert(address, id);
        id
    }
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
        let svg = flame_svg(&growth, &names, "growth <test>").expect("drawn").expect("something grew");
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("growth &lt;test&gt;"), "the title is escaped");
        // Each box's title gives its bytes: f30, the outermost frame of every growing stack,
        // all of them; f10 and f12 their own stack's.
        let bytes_of = |name: &str| -> u64 {
            let at = svg.find(&format!("<title>{name} (")).unwrap_or_else(|| panic!("no box for {name}: {svg}"));
            let rest = &svg[at + name.len() + 9..];
            rest[..rest.find(' ').expect("count")].replace(',', "").parse().expect("a number")
        };
        let total: f64 = growth.iter().map(|g| g.bytes.round()).sum();
        assert_eq!(bytes_of("f30"), total as u64);
        assert_eq!(bytes_of("f10"), growth[0].bytes.round() as u64);
        assert_eq!(bytes_of("f12"), growth[1].bytes.round() as u64);
        assert_eq!(flame_svg(&[], &names, "none").expect("no error"), None, "nothing grew: no picture");
    }

    #[test]
    fn pprof_output_decodes_with_the_schema() {
        use prost::Message;
        let late = HeapProfile::parse(LATE).expect("late");
        let gz = late.to_pprof(&names).expect("pprof");
        let mut raw = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut raw).expect("gunzip");
        let p = pprof::Profile::decode(&raw[..]).expect("a pprof profile");
        let s = |i: i64| p.string_table[usize::try_from(i).expect("index")].as_str();
        assert_eq!(s(0), "", "string 0 is empty, by the schema");
        let types: Vec<(&str, &str)> = p.sample_type.iter().map(|t| (s(t.r#type), s(t.unit))).collect();
        assert_eq!(types, [("inuse_objects", "count"), ("inuse_space", "bytes")]);
        assert_eq!(p.period, 524288);
        assert_eq!(p.sample.len(), late.stacks.len());
        // Each sample: its stack's addresses, innermost first, named and placed, and its values.
        for (sample, (stack, sampled)) in p.sample.iter().zip(&late.stacks) {
            let location = |id: &u64| p.location.iter().find(|l| l.id == *id).expect("location");
            let addresses: Vec<u64> = sample.location_id.iter().map(|id| location(id).address).collect();
            assert_eq!(&addresses, stack);
            let line = location(&sample.location_id[0]).line[0];
            let f = p.function.iter().find(|f| f.id == line.function_id).expect("function");
            let want = format!("f{:x}", stack[0]);
            assert_eq!((s(f.name), s(f.filename), line.line), (want.as_str(), "store.rs", stack[0] as i64));
            assert_eq!(sample.value[1], late.estimated_bytes(*sampled).round() as i64);
            assert!(sample.value[0] >= sampled.objects as i64);
        }
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
