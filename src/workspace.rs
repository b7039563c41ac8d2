//! Workspace-only: what the catalogs (`leak-tests`), the binding sweep (`sweep/`), the command
//! line (`cli/`) and the workspace's own tests and benches reach inside the library. Not part of
//! leakcheck's API: hidden from its documentation, and changed whenever the library changes.

/// The allocation generations: jemalloc's hooks and the record of live allocations.
pub mod generations {
    pub use crate::probe::generations::{
        install, Generation, Generations, GenerationsError, Growth, Live, StackId, Survivor, OVERFLOW_STACK,
    };
}

/// The rule that judges a site's residue by its age: the simulator of allocation histories
/// (`leak_tests::simulate`) and its bench call it as the harness does.
pub mod age {
    pub use crate::verdict::retained::age::{
        cycles_to_find, judge, rate_ruled_out, AgeFacts, Aged, ContainerGrowth, History, Open, Span, LATE_HOLDS, POWER,
        SCHEDULE_SLACK,
    };
}

/// The rule for bytes: live bytes per site, sample by sample, judged by growth (the simulator of
/// allocation histories and its bench call it as the harness does).
pub mod growth {
    pub use crate::verdict::sites::rule::{Grew, SiteGrowth, LATE_RISES};
    pub use crate::verdict::sites::series::{Key, Reading, SeriesSet};
    pub use crate::verdict::sites::{judge, Context, Judged, Verdicts};
    pub use crate::verdict::Consumer;
}

/// Call stacks: frames resolved and named, a stack's headline, the user's own function in it.
pub mod stacks {
    pub use crate::probe::stacks::{headline, own_function};
    pub use crate::probe::symbols::{named_frames, resolve, Frame};
}

pub use crate::fault::rng::SplitMix64;
pub use crate::probe::jemalloc::{allocated_bytes, purge_all};
pub use crate::report::write::{prepare_dir, write_dir};
pub use crate::runner::outcome::tool_name;
pub use crate::runner::parallel::in_parallel;
