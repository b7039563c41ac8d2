//! Whose allocations are leakcheck's own: a depth per thread that the allocation hooks read
//! (`probe::generations`), raised while the runner samples, the ledger records, a verdict is
//! judged or a report written. Below everything that raises it, so the ledger needs nothing
//! above it to say so.

thread_local! {
    /// Depth of [`bookkeeping`] on this thread: while above zero, this thread's allocations are
    /// leakcheck's own. A `const` thread-local of a type without a destructor: reading it never
    /// allocates and works during thread teardown.
    static BOOKKEEPING: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Runs `f` with this thread's allocations charged to leakcheck's bookkeeping, not to the
/// current generation: the runner's samples, the ledger's records, verdicts and reports. Frees
/// are always charged to the generation that made the allocation. Costs two thread-local
/// writes; works whether or not generations are installed.
pub(crate) fn bookkeeping<T>(f: impl FnOnce() -> T) -> T {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            let _ = BOOKKEEPING.try_with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    let _ = BOOKKEEPING.try_with(|d| d.set(d.get() + 1));
    let _depth = Depth;
    f()
}

/// Whether this thread is in [`bookkeeping`] (false during its teardown). Read by the allocation
/// hooks on every allocation: inlined into them across modules.
#[inline]
pub(crate) fn in_bookkeeping() -> bool {
    BOOKKEEPING.try_with(|d| d.get() > 0).unwrap_or(false)
}
