//! Programs: sequences of steps (an op and its arguments, drawn from one class), the model that
//! says which sequences are valid, the seeded generator, and the snippet a program prints as.

use serde::{Deserialize, Serialize};

use super::find_op;
use super::op::{Arg, ArgClass, Effect, Needs, Op, Role, Values};
use super::ops;

/// A string or byte argument as written in a program: short literals as they are, long ones as
/// one character repeated (so a report stays small and a snippet readable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Text {
    /// The text itself (ASCII, possibly with an interior NUL).
    Lit(String),
    /// A name new in every run of the program: `PREFIX-I` in run I (so that a valid name stays
    /// valid when the program runs again on the same fixture).
    Fresh(String),
    /// `byte` repeated `len` times.
    Fill {
        /// The byte (ASCII).
        byte: u8,
        /// How many.
        len: usize,
    },
}

impl Default for Text {
    fn default() -> Text {
        Text::Lit(String::new())
    }
}

impl Text {
    fn lit(s: impl Into<String>) -> Text {
        Text::Lit(s.into())
    }

    /// The bytes in run `run` of the program.
    pub fn bytes(&self, run: u64) -> Vec<u8> {
        match self {
            Text::Lit(s) => s.as_bytes().to_vec(),
            Text::Fresh(prefix) => format!("{prefix}-{run}").into_bytes(),
            Text::Fill { byte, len } => vec![*byte; *len],
        }
    }

    /// As a `&str` expression (`i` is the run).
    fn render_str(&self) -> String {
        match self {
            Text::Lit(s) => format!("{s:?}"),
            Text::Fresh(prefix) => format!("&format!(\"{prefix}-{{i}}\")"),
            Text::Fill { byte, len } => format!("&{:?}.repeat({len})", char::from(*byte).to_string()),
        }
    }

    /// As a `&[u8]` expression.
    fn render_bytes(&self) -> String {
        match self {
            Text::Lit(s) => format!("b\"{}\"", s.as_bytes().escape_ascii()),
            Text::Fresh(prefix) => format!("format!(\"{prefix}-{{i}}\").as_bytes()"),
            Text::Fill { byte, len } => format!("&vec![b'{}'; {len}][..]", [*byte].escape_ascii()),
        }
    }
}

/// A step's arguments, as the program records them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Args {
    /// `name`.
    #[serde(default, skip_serializing_if = "is_empty_text")]
    pub name: Text,
    /// `key`.
    #[serde(default, skip_serializing_if = "is_empty_text")]
    pub key: Text,
    /// `value`.
    #[serde(default, skip_serializing_if = "is_empty_text")]
    pub value: Text,
    /// `n`.
    #[serde(default)]
    pub n: u64,
}

fn is_empty_text(t: &Text) -> bool {
    *t == Text::default()
}

impl Args {
    /// The values run `run` of the program uses.
    pub fn values(&self, run: u64) -> Values {
        Values {
            name: String::from_utf8_lossy(&self.name.bytes(run)).into_owned(),
            key: self.key.bytes(run),
            value: self.value.bytes(run),
            n: self.n,
        }
    }

    /// Whether the values differ from run to run (a fresh name).
    pub fn per_run(&self) -> bool {
        [&self.name, &self.key, &self.value].iter().any(|t| matches!(t, Text::Fresh(_)))
    }
}

/// One step: an op with arguments drawn from one class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The op's name.
    pub op: String,
    /// The class its arguments were drawn from.
    pub class: ArgClass,
    /// The arguments.
    pub args: Args,
}

impl Step {
    /// `op/class`, as findings and reports name a step.
    pub fn label(&self) -> String {
        format!("{}/{}", self.op, self.class.name())
    }
}

/// A program: steps run in order, the whole repeated many times per cycle against the fixture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Program {
    /// The steps.
    pub steps: Vec<Step>,
}

/// What a program is wrong in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    /// A step names no op.
    #[error("step {index}: no op `{op}` (`leakcheck sweep --fuzz --list-ops` names them)")]
    UnknownOp {
        /// The step.
        index: usize,
        /// The name.
        op: String,
    },
    /// A step's precondition does not hold.
    #[error("step {index}: `{op}` needs the DB {needs}")]
    Precondition {
        /// The step.
        index: usize,
        /// The op.
        op: String,
        /// "open" or "closed".
        needs: &'static str,
    },
    /// A step's class is not one its op draws from.
    #[error("step {index}: `{op}` takes no {class} arguments")]
    Class {
        /// The step.
        index: usize,
        /// The op.
        op: String,
        /// The class.
        class: &'static str,
    },
}

/// The state the generator tracks to draw only valid steps: whether the fixture's DB is open,
/// which column families it has, what was drawn last (for `repeated`).
#[derive(Debug, Clone)]
pub struct Model {
    open: bool,
    cfs: Vec<Text>,
    fresh: u32,
    last: Args,
}

impl Default for Model {
    fn default() -> Model {
        Model { open: true, cfs: vec![Text::lit("cf")], fresh: 0, last: Args::default() }
    }
}

impl Model {
    fn allows(&self, op: &Op) -> bool {
        match op.needs {
            Needs::Open => self.open,
            Needs::Closed => !self.open,
            Needs::Any => true,
        }
    }

    fn apply(&mut self, op: &Op, step: &Step) {
        let name = step.args.name.clone();
        match op.effect {
            Effect::None => {}
            Effect::Close => self.open = false,
            Effect::Reopen => self.open = true,
            Effect::CreateCf if step.class == ArgClass::Valid => self.cfs.push(name),
            Effect::DropCf => self.cfs.retain(|c| *c != name),
            Effect::CreateCf => {}
        }
        self.last = step.args.clone();
    }

    /// One of the column families the program has made or kept.
    fn cf(&self, rng: &mut Rng) -> Option<Text> {
        (!self.cfs.is_empty()).then(|| self.cfs[rng.below(self.cfs.len())].clone())
    }

    fn fresh(&mut self, prefix: &str) -> Text {
        self.fresh += 1;
        Text::Fresh(format!("{prefix}{}", self.fresh))
    }

    /// The name a step of `op` draws for `class`.
    fn name(&mut self, op: &Op, class: ArgClass, rng: &mut Rng) -> Text {
        let fill = |byte: u8, len: usize| Text::Fill { byte, len };
        match class {
            ArgClass::Empty => return Text::default(),
            ArgClass::Repeated if self.last.name != Text::default() => return self.last.name.clone(),
            ArgClass::Invalid if op.role != Role::OptionName => return Text::lit("bad\0name"),
            _ => {}
        }
        let conflicting = class == ArgClass::Conflicting;
        let large = class == ArgClass::Large;
        match op.role {
            Role::None => Text::default(),
            Role::NewCf if large => fill(b'c', 65536),
            Role::NewCf if conflicting => self.cf(rng).unwrap_or_else(|| Text::lit("default")),
            Role::NewCf => self.fresh("cf"),
            Role::Cf if large => fill(b'c', 65536),
            Role::Cf if conflicting => Text::lit(if rng.below(2) == 0 { "no-such-cf" } else { "default" }),
            // With every column family dropped, the one the fixture made (missing now: an error).
            Role::Cf => self.cf(rng).unwrap_or_else(|| Text::lit("cf")),
            Role::NewDir if large => fill(b'd', 4096),
            Role::NewDir if conflicting => Text::lit("db"),
            Role::NewDir => self.fresh("dir"),
            Role::DbDir if large => fill(b'd', 4096),
            Role::DbDir if conflicting => self.fresh("missing"),
            Role::DbDir => Text::lit("db"),
            Role::Property if large => fill(b'p', 65536),
            Role::Property if conflicting => Text::lit("rocksdb.no-such-property"),
            Role::Property => Text::lit(
                ["rocksdb.estimate-num-keys", "rocksdb.stats", "rocksdb.cur-size-all-mem-tables"][rng.below(3)],
            ),
            Role::Label if large => fill(b'l', 65536),
            Role::Label => Text::lit("reverse"),
            Role::OptionName if conflicting => Text::lit("no_such_option"),
            Role::OptionName if class == ArgClass::Invalid => Text::lit("write_buffer_size"),
            Role::OptionName => Text::lit("disable_auto_compactions"),
            Role::SetterType => Text::default(), // drawn in `draw`
        }
    }

    /// The arguments a step of `op` draws for `class`.
    pub fn draw(&mut self, op: &Op, class: ArgClass, rng: &mut Rng) -> Args {
        let mut args = Args::default();
        if op.role == Role::SetterType {
            // A type, all its setters, and the value class (`setters::value_class`).
            let types = super::setters::types();
            let ty = types.get(rng.below(types.len())).copied().unwrap_or("Options");
            let r = super::setters::range_of(ty);
            args.name = Text::lit(ty);
            args.key = Text::lit(format!("{}..{}", r.start, r.end));
            args.n = super::setters::value_class(class);
            return args;
        }
        if op.takes(Arg::Name) {
            args.name = self.name(op, class, rng);
        }
        let k = rng.below(100);
        if op.takes(Arg::Key) {
            args.key = match class {
                ArgClass::Empty => Text::default(),
                ArgClass::Repeated if self.last.key != Text::default() => self.last.key.clone(),
                ArgClass::Conflicting => Text::lit(format!("missing{k}")),
                ArgClass::Large => Text::Fill { byte: b'k', len: 65536 },
                // A range from above its end (the ops that take a range take `key..value`).
                ArgClass::Invalid => Text::lit("key0090"),
                _ => Text::lit(format!("key{k:04}")),
            };
        }
        if op.takes(Arg::Value) {
            args.value = match class {
                ArgClass::Empty => Text::default(),
                ArgClass::Repeated if self.last.value != Text::default() => self.last.value.clone(),
                ArgClass::Large => Text::Fill { byte: b'v', len: 1 << 20 },
                ArgClass::Invalid if op.role == Role::OptionName => Text::lit("not-a-number"),
                ArgClass::Invalid => Text::lit("key0010"),
                _ if op.role == Role::OptionName => Text::lit("false"),
                _ if op.takes(Arg::Key)
                    && matches!(op.name, "delete-range-cf" | "compact-range" | "approximate-sizes") =>
                {
                    Text::lit("key0050")
                }
                _ => Text::Fill { byte: b'v', len: 64 },
            };
        }
        if op.takes(Arg::N) {
            args.n = match class {
                ArgClass::Empty => 0,
                ArgClass::Repeated if self.last.n != 0 => self.last.n,
                ArgClass::Large => 1 << 32,
                ArgClass::Invalid => u64::MAX,
                _ => 16,
            };
        }
        args
    }
}

/// The ops a fuzz draws from: the model's, the planted ones when asked for, or only the named.
pub fn pool(names: &[String], planted: bool) -> Result<Vec<&'static Op>, ProgramError> {
    if names.is_empty() {
        let planted_ops = if planted { super::planted::PLANTED_OPS } else { &[] };
        let since = ops::OPS_SINCE_0_23.iter().chain(ops::OPS_SINCE_0_24).chain(ops::OPS_SINCE_0_25);
        return Ok(ops::OPS.iter().chain(since).chain(planted_ops).collect());
    }
    names
        .iter()
        .enumerate()
        .map(|(index, n)| find_op(n).ok_or_else(|| ProgramError::UnknownOp { index, op: n.clone() }))
        .collect()
}

/// Checks `program` against the model: every op known, every class one its op draws from, every
/// precondition met from the fixture's state.
pub fn validate(program: &Program) -> Result<(), ProgramError> {
    let mut model = Model::default();
    for (index, step) in program.steps.iter().enumerate() {
        let op = find_op(&step.op).ok_or_else(|| ProgramError::UnknownOp { index, op: step.op.clone() })?;
        if !op.classes.contains(&step.class) {
            return Err(ProgramError::Class { index, op: step.op.clone(), class: step.class.name() });
        }
        if !model.allows(op) {
            let needs = if op.needs == Needs::Open { "open" } else { "closed" };
            return Err(ProgramError::Precondition { index, op: step.op.clone(), needs });
        }
        model.apply(op, step);
    }
    Ok(())
}

/// The generator programs are drawn with: one splitmix64 stream per program, from the seed and
/// the program's number, so that the same seed draws the same programs.
#[derive(Debug, Clone)]
pub struct Rng(leakcheck::workspace::SplitMix64);

impl Rng {
    /// A generator for `seed` and `stream` (one stream per program).
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = leakcheck::workspace::SplitMix64::new(seed ^ stream.wrapping_mul(0xA076_1D64_78BD_642F));
        r.next_u64();
        Rng(r)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0.below(n as u64) as usize
    }
}

/// The programs of one step: every op of `pool` with every class it draws from (an op that needs
/// a closed DB after a `close`). The fuzz runs these first.
pub fn single_steps(pool: &[&'static Op]) -> Vec<Program> {
    let mut out = Vec::new();
    for op in pool {
        for class in op.classes {
            let mut model = Model::default();
            let mut rng = Rng::new(0, out.len() as u64);
            let mut steps = Vec::new();
            if op.needs == Needs::Closed {
                steps.push(Step { op: "close".to_string(), class: ArgClass::Valid, args: Args::default() });
                model.open = false;
            }
            let args = model.draw(op, *class, &mut rng);
            steps.push(Step { op: op.name.to_string(), class: *class, args });
            out.push(Program { steps });
        }
    }
    out
}

/// Random program number `index` of `seed`: 2 to `max_len` steps drawn from `pool`, each valid in
/// the model's state.
pub fn random(seed: u64, index: u64, pool: &[&'static Op], max_len: usize) -> Program {
    let mut rng = Rng::new(seed, index);
    let len = 2 + rng.below(max_len.saturating_sub(1).max(1));
    let mut model = Model::default();
    let mut steps = Vec::new();
    let reopen = find_op("reopen");
    while steps.len() < len {
        let allowed: Vec<&&Op> = pool.iter().filter(|o| model.allows(o)).collect();
        let op = match (allowed.is_empty(), reopen) {
            (false, _) => *allowed[rng.below(allowed.len())],
            (true, Some(r)) if model.allows(r) => r,
            _ => break,
        };
        let class = op.classes[rng.below(op.classes.len())];
        let args = model.draw(op, class, &mut rng);
        let step = Step { op: op.name.to_string(), class, args };
        model.apply(op, &step);
        steps.push(step);
    }
    Program { steps }
}

/// `step` with its arguments drawn again for `class` in the state the steps before it leave.
pub fn redraw(program: &Program, index: usize, class: ArgClass) -> Option<Program> {
    let mut model = Model::default();
    for step in &program.steps[..index] {
        model.apply(find_op(&step.op)?, step);
    }
    let op = find_op(&program.steps[index].op)?;
    let mut out = program.clone();
    out.steps[index].class = class;
    out.steps[index].args = model.draw(op, class, &mut Rng::new(0, index as u64));
    Some(out)
}

/// Text of the prelude (the fixture), shared with the sweep's own code.
const PRELUDE: &str = include_str!("prelude.rs");

/// The program as a Rust program against rust-rocksdb alone: the prelude (the fixture), then the
/// steps in a loop, each as the op's own body with its arguments bound. `header` goes first, as
/// comments.
pub fn snippet(program: &Program, header: &[String]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    for line in header {
        let _ = writeln!(out, "// {line}");
    }
    // The prelude without its comments, and `reopen` only when a step may close the DB.
    let closes = program.steps.iter().any(|s| find_op(&s.op).is_some_and(|o| o.slot && uses(o.code, "db")));
    let mut prelude = String::new();
    for item in PRELUDE.split("\n\n").filter(|i| closes || !i.contains("fn reopen")) {
        let code: Vec<&str> = item.lines().filter(|l| !l.trim_start().starts_with("//")).collect();
        let _ = writeln!(prelude, "{}\n", code.join("\n"));
    }
    let _ = writeln!(out, "#![allow(unused_imports, unused_variables, deprecated)]");
    let _ = writeln!(out, "use rocksdb::backup::{{BackupEngine, BackupEngineOptions, RestoreOptions}};");
    let _ = writeln!(out, "use rocksdb::checkpoint::Checkpoint;");
    let _ = writeln!(out, "use rocksdb::*;");
    let _ = write!(out, "{}", prelude.trim_start());
    if program.steps.iter().any(|s| find_op(&s.op).is_some_and(|o| uses(o.code, "concat"))) {
        let _ = writeln!(out, "{}\n", ops::CONCAT);
    }
    let _ = writeln!(out, "fn main() -> Result<(), Box<dyn std::error::Error>> {{");
    let _ = writeln!(out, "let dir = std::env::temp_dir().join(\"rocksdb-leak-snippet\");");
    let _ = writeln!(out, "let _ = std::fs::remove_dir_all(&dir);");
    let _ = writeln!(out, "std::fs::create_dir_all(&dir)?;");
    let _ = writeln!(out, "let dir = dir.as_path();");
    let _ = writeln!(out, "let mut db = Some(fixture(dir)?);");
    let _ = writeln!(out, "for i in 0..1_000_000u64 {{");
    for step in &program.steps {
        let Some(op) = find_op(&step.op) else { continue };
        let _ = writeln!(out, "// {}", step.label());
        if op.role == Role::SetterType {
            for i in super::setters::parse_range(&step.args.key.bytes(0)) {
                let _ = writeln!(out, "{}", super::setters::render(i, step.args.n));
            }
            continue;
        }
        let _ = writeln!(
            out,
            "{}",
            match (op.slot, uses(op.code, "db")) {
                (false, _) => "if let Some(db) = db.as_mut() {",
                (true, true) => "{ let db = &mut db;",
                (true, false) => "{",
            }
        );
        if op.takes(Arg::Name) {
            let _ = writeln!(out, "let name: &str = {};", step.args.name.render_str());
        }
        if op.takes(Arg::Key) {
            let _ = writeln!(out, "let key: &[u8] = {};", step.args.key.render_bytes());
        }
        if op.takes(Arg::Value) {
            let _ = writeln!(out, "let value: &[u8] = {};", step.args.value.render_bytes());
        }
        if op.takes(Arg::N) {
            let _ = writeln!(out, "let n: u64 = {};", step.args.n);
        }
        let _ = writeln!(out, "let _: Result<(), rocksdb::Error> = (|| {})();\n}}", tidy(op.code));
    }
    if closes {
        let _ = writeln!(out, "if db.is_none() {{ db = reopen(dir).ok(); }}");
    }
    let _ = writeln!(out, "}}\nOk(())\n}}");
    rustfmt(&out).unwrap_or(out)
}

/// Whether `code` has the identifier `ident`.
fn uses(code: &str, ident: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| w == ident)
}

/// `stringify!`'s spacing made closer to a person's (rustfmt, when present, does the rest).
fn tidy(code: &str) -> String {
    let mut s = code.to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" . ", "."),
        (" (", "("),
        ("( ", "("),
        (" )", ")"),
        (" ,", ","),
        (" ;", ";"),
        (" ?", "?"),
        ("& ", "&"),
        (" ! [", "!["),
        (" ! (", "!("),
        ("::< ", "::<"),
        (" >(", ">("),
        (" < ", "<"),
    ] {
        s = s.replace(from, to);
    }
    s.replace("if let", "if let ").replace("  ", " ").replace("crate::fuzz::planted::", "planted::")
}

/// The snippet formatted by rustfmt, when it is installed and accepts it.
fn rustfmt(code: &str) -> Option<String> {
    use std::io::Write as _;
    let mut child = std::process::Command::new("rustfmt")
        .args(["--edition", "2021", "--emit", "stdout"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(code.as_bytes()).ok()?;
    let out = child.wait_with_output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<&'static Op> {
        pool(&[], true).expect("the model's ops")
    }

    #[test]
    fn every_op_with_every_class_is_a_valid_program_of_one_step() {
        let singles = single_steps(&all());
        let expected: usize = all().iter().map(|o| o.classes.len()).sum();
        assert_eq!(singles.len(), expected);
        for p in &singles {
            validate(p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
        }
    }

    #[test]
    fn the_same_seed_draws_the_same_valid_programs_and_another_seed_others() {
        let ops = all();
        for seed in 0..40 {
            for i in 0..25 {
                let p = random(seed, i, &ops, 8);
                assert!((2..=8).contains(&p.steps.len()), "{p:?}");
                validate(&p).unwrap_or_else(|e| panic!("seed {seed} program {i}: {e}: {p:?}"));
                assert_eq!(p, random(seed, i, &ops, 8));
            }
        }
        let a: Vec<Program> = (0..10).map(|i| random(1, i, &ops, 8)).collect();
        let b: Vec<Program> = (0..10).map(|i| random(2, i, &ops, 8)).collect();
        assert_ne!(a, b);
    }

    #[test]
    fn an_invalid_program_is_refused_with_the_step_and_the_reason() {
        let step = |op: &str| Step { op: op.to_string(), class: ArgClass::Valid, args: Args::default() };
        let p = Program { steps: vec![step("close"), step("put")] };
        assert_eq!(validate(&p), Err(ProgramError::Precondition { index: 1, op: "put".to_string(), needs: "open" }));
        let p = Program { steps: vec![step("no-such-op")] };
        assert!(matches!(validate(&p), Err(ProgramError::UnknownOp { index: 0, .. })));
        let mut p = Program { steps: vec![step("flush")] };
        p.steps[0].class = ArgClass::Large;
        assert!(matches!(validate(&p), Err(ProgramError::Class { .. })));
    }

    #[test]
    fn a_redrawn_step_takes_the_plainer_class_and_stays_valid() {
        let ops = all();
        let create = ops.iter().find(|o| o.name == "create-cf").expect("create-cf");
        let mut model = Model::default();
        let mut rng = Rng::new(3, 0);
        let args = model.draw(create, ArgClass::Large, &mut rng);
        let p = Program { steps: vec![Step { op: "create-cf".to_string(), class: ArgClass::Large, args }] };
        let q = redraw(&p, 0, ArgClass::Conflicting).expect("redrawn");
        assert_eq!(q.steps[0].class, ArgClass::Conflicting);
        assert_eq!(q.steps[0].args.name, Text::lit("cf"), "conflicting: a name that exists");
        validate(&q).expect("valid");
    }

    #[test]
    fn a_snippet_binds_the_arguments_and_holds_the_ops_own_code() {
        let ops = all();
        for p in single_steps(&ops) {
            let s = snippet(&p, &["header".to_string()]);
            assert!(s.starts_with("// header"), "{s}");
            assert!(s.contains("fn fixture(") && s.contains("fn main()"), "{s}");
            let step = p.steps.last().expect("a step");
            let op = find_op(&step.op).expect("op");
            if op.role == Role::SetterType {
                assert!(s.contains("::default(); o.set_") || s.contains("::default();\n"), "{s}");
            } else if op.takes(Arg::Name) {
                assert!(s.contains("let name: &str ="), "{s}");
            }
            assert!(s.contains(&format!("// {}", step.label())), "{s}");
        }
    }
}
