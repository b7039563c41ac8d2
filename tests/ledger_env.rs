//! The tracking depth comes from LEAKCHECK_TRACKING. The environment is process-wide: one test in
//! this file.

use leakcheck::ledger::{Depth, DEPTH_ENV};
use leakcheck::Ledger;

#[test]
fn depth_from_the_environment_is_strict() {
    std::env::remove_var(DEPTH_ENV);
    assert_eq!(Ledger::from_env().expect("unset is fine").depth(), Depth::Sites);
    std::env::set_var(DEPTH_ENV, "counts");
    assert_eq!(Ledger::from_env().expect("counts").depth(), Depth::Counts);
    std::env::set_var(DEPTH_ENV, "backtraces");
    assert_eq!(Ledger::global().depth(), Depth::Backtraces);
    std::env::set_var(DEPTH_ENV, "everything");
    let err = Ledger::from_env().expect_err("unknown depth");
    assert!(err.to_string().contains("everything"), "{err}");
}
