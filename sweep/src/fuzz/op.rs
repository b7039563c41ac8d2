//! What an op of a fuzz program is ([`Op`]): its needs, its effect, what its name argument means,
//! the argument classes that make sense for it, and its body kept as text by [`fuzz_op`]. The
//! table of ops (`ops`) and the planted ops (`planted`) are written with it.

use rocksdb::DB;
use serde::{Deserialize, Serialize};

/// What a step's arguments are drawn as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArgClass {
    /// What the call is meant for.
    Valid,
    /// Empty strings and buffers, zero.
    Empty,
    /// The previous step's value again (or the same value on the next repetition).
    Repeated,
    /// In conflict with the state: a name that exists where a new one is wanted, a missing one
    /// where an existing one is, a locked or missing directory.
    Conflicting,
    /// Refused by the binding or RocksDB: an interior NUL, a reversed range, a bad option value.
    Invalid,
    /// Large: a 64 KiB name or key, a 1 MiB value, a capacity of 4 GiB.
    Large,
}

impl ArgClass {
    /// Every class, plainest first (the order the shrinker tries them in).
    pub const ALL: [ArgClass; 6] = [
        ArgClass::Valid,
        ArgClass::Empty,
        ArgClass::Repeated,
        ArgClass::Conflicting,
        ArgClass::Invalid,
        ArgClass::Large,
    ];

    /// The class's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ArgClass::Valid => "valid",
            ArgClass::Empty => "empty",
            ArgClass::Repeated => "repeated",
            ArgClass::Conflicting => "conflicting",
            ArgClass::Invalid => "invalid",
            ArgClass::Large => "large",
        }
    }
}

/// What must hold before an op runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// The fixture's DB is open.
    Open,
    /// The fixture's DB is closed.
    Closed,
    /// Either.
    Any,
}

/// How an op changes the model's state when its arguments are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// None.
    None,
    /// Closes the fixture's DB.
    Close,
    /// Opens it again.
    Reopen,
    /// Adds a column family (its name).
    CreateCf,
    /// Removes one.
    DropCf,
}

/// What an op's `name` argument names, which decides what each class draws.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The op takes no name.
    None,
    /// A column family to create: valid is new, conflicting exists.
    NewCf,
    /// A column family to use: valid exists, conflicting is missing.
    Cf,
    /// A directory under the cycle's to create: valid is new, conflicting is the fixture's DB.
    NewDir,
    /// A DB directory to read: valid is the fixture's DB, conflicting is missing.
    DbDir,
    /// A RocksDB property.
    Property,
    /// A callback's or object's name (a comparator, a merge operator).
    Label,
    /// A mutable option (`set_options`): the value comes in `value`.
    OptionName,
    /// A type with generated setters (`options-setters`): the range of them in `key`.
    SetterType,
}

/// Which arguments an op takes (the snippet declares only those).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arg {
    /// `name: &str`.
    Name,
    /// `key: &[u8]`.
    Key,
    /// `value: &[u8]`.
    Value,
    /// `n: u64`.
    N,
}

/// One step's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ran {
    /// The calls returned `Ok`.
    Ok,
    /// A call returned this error.
    Error(String),
    /// The op needs an open DB and the DB was closed (an earlier step's reopen failed).
    Skipped,
    /// The binding panicked, with this message.
    Panic(String),
}

impl From<Result<(), rocksdb::Error>> for Ran {
    fn from(r: Result<(), rocksdb::Error>) -> Ran {
        match r {
            Ok(()) => Ran::Ok,
            Err(e) => Ran::Error(e.to_string()),
        }
    }
}

/// A step's arguments, made real.
#[derive(Debug, Clone, Default)]
pub struct Values {
    /// `name`.
    pub name: String,
    /// `key`.
    pub key: Vec<u8>,
    /// `value`.
    pub value: Vec<u8>,
    /// `n`.
    pub n: u64,
}

pub(super) type Run = fn(&mut Option<DB>, &std::path::Path, &Values) -> Ran;

/// One operation of the model.
#[derive(Clone, Copy)]
pub struct Op {
    /// Its name in programs and reports.
    pub name: &'static str,
    /// What must hold before it runs.
    pub needs: Needs,
    /// How it changes the state.
    pub effect: Effect,
    /// What its name argument names.
    pub role: Role,
    /// The arguments it takes.
    pub args: &'static [Arg],
    /// The classes its arguments are drawn from.
    pub classes: &'static [ArgClass],
    /// The binding functions it calls (`Type::function`), for the reached-functions table.
    pub reaches: &'static [&'static str],
    /// Its body as text (the snippet's).
    pub code: &'static str,
    /// A planted leak (in a copy of a binding function), run only when asked for.
    pub planted: bool,
    /// Its body's `db` is the `&mut Option<DB>` (it may close or reopen), not the open `&mut DB`.
    pub slot: bool,
    pub(super) run: Run,
}

impl std::fmt::Debug for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Op {
    /// Runs the op once: a panic of the binding is caught and reported as one.
    pub fn run(&self, db: &mut Option<DB>, dir: &std::path::Path, values: &Values) -> Ran {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (self.run)(db, dir, values))) {
            Ok(ran) => ran,
            Err(p) => Ran::Panic(
                p.downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic without a message".to_string()),
            ),
        }
    }

    /// Whether it takes `arg`.
    pub fn takes(&self, arg: Arg) -> bool {
        self.args.contains(&arg)
    }
}

/// `fuzz_op!(name, Needs, Effect, Role, [args], [classes], [reached functions], |db, dir, name, key,
/// value, n| body)`: an op whose body is kept as text. With `Needs::Open` the body's `db` is the
/// open `&mut DB`; `slot` instead of `db` gives it the `&mut Option<DB>`.
macro_rules! fuzz_op {
    ($name:literal, $needs:ident, $effect:ident, $role:ident, [$($arg:ident),*], [$($class:ident),*], [$($r:literal),*],
     |$db:ident, $dir:ident, $nm:ident, $key:ident, $value:ident, $n:ident| $body:block) => {
        fuzz_op!(@make $name, $needs, $effect, $role, [$($arg),*], [$($class),*], [$($r),*], false, false,
            |slot, $dir, $nm, $key, $value, $n| match slot.as_mut() {
                Some($db) => Ran::from((|| -> Result<(), rocksdb::Error> { $body })()),
                None => Ran::Skipped,
            }, $body)
    };
    (slot $name:literal, $needs:ident, $effect:ident, $role:ident, [$($arg:ident),*], [$($class:ident),*], [$($r:literal),*],
     |$db:ident, $dir:ident, $nm:ident, $key:ident, $value:ident, $n:ident| $body:block) => {
        fuzz_op!(@make $name, $needs, $effect, $role, [$($arg),*], [$($class),*], [$($r),*], false, true,
            |$db, $dir, $nm, $key, $value, $n| Ran::from((|| -> Result<(), rocksdb::Error> { $body })()), $body)
    };
    (planted $name:literal, $needs:ident, $effect:ident, $role:ident, [$($arg:ident),*], [$($class:ident),*], [$($r:literal),*],
     |$db:ident, $dir:ident, $nm:ident, $key:ident, $value:ident, $n:ident| $body:block) => {
        fuzz_op!(@make $name, $needs, $effect, $role, [$($arg),*], [$($class),*], [$($r),*], true, true,
            |$db, $dir, $nm, $key, $value, $n| Ran::from((|| -> Result<(), rocksdb::Error> { $body })()), $body)
    };
    (@make $name:literal, $needs:ident, $effect:ident, $role:ident, [$($arg:ident),*], [$($class:ident),*], [$($r:literal),*], $planted:expr, $slotted:expr,
     |$slot:ident, $dir:ident, $nm:ident, $key:ident, $value:ident, $n:ident| $run:expr, $body:block) => {
        Op {
            name: $name,
            needs: Needs::$needs,
            effect: Effect::$effect,
            role: Role::$role,
            args: &[$(Arg::$arg),*],
            classes: &[$(ArgClass::$class),*],
            reaches: &[$($r),*],
            code: stringify!($body),
            planted: $planted,
            slot: $slotted,
            run: |$slot, $dir, values| {
                #[allow(unused_variables)]
                let ($nm, $key, $value, $n): (&str, &[u8], &[u8], u64) =
                    (values.name.as_str(), values.key.as_slice(), values.value.as_slice(), values.n);
                #[allow(unused_variables)]
                let ($slot, $dir) = ($slot, $dir);
                $run
            },
        }
    };
}

#[allow(unused_imports)] // used by the planted ops only (feature `planted`)
pub(crate) use fuzz_op;
