//! What the binary's tests share: the binary, run as a user runs it.

use std::process::{Command, Output};

/// The `leakcheck` binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_leakcheck");

/// Runs `leakcheck ARGS` to its end, with none of the environment that would plant faults or
/// change what the ledger tracks.
#[allow(dead_code)] // not every test file runs it so
pub fn leakcheck(args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("LEAKCHECK_FAULTS")
        .env_remove("LEAKCHECK_TRACKING")
        .output()
        .expect("run leakcheck")
}
