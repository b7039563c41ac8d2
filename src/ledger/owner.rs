//! Owner paths: which task, segment and column family a handle belongs to.
//!
//! The path is a per-thread stack of scopes. A handle registered while scopes are open records the
//! joined path (`task 0_1 / segment 1717 / offsets`), so a report can say whose handle leaked.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::sync::Arc;

thread_local! {
    /// Each element is the full path up to and including that scope.
    static OWNER: RefCell<Vec<Arc<str>>> = const { RefCell::new(Vec::new()) };
}

/// FNV-1a, 64 bits: stable across runs and builds (unlike `std`'s randomly keyed hasher).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Opens an owner scope on this thread until the returned guard drops. Scopes nest:
///
/// ```
/// let _task = leakcheck::owner_scope("task 0_1");
/// let _segment = leakcheck::owner_scope("segment 1717");
/// assert_eq!(leakcheck::current_owner().as_deref(), Some("task 0_1 / segment 1717"));
/// ```
pub fn owner_scope(name: impl AsRef<str>) -> OwnerScope {
    // The path is leakcheck's record (the ledger's entries keep it), not the store's allocation:
    // no cycle is charged with it, whoever keeps the handles alive.
    crate::bookkeeping::bookkeeping(|| {
        OWNER.with(|stack| {
            let mut stack = stack.borrow_mut();
            let path: Arc<str> = match stack.last() {
                Some(parent) => format!("{parent} / {}", name.as_ref()).into(),
                None => name.as_ref().into(),
            };
            stack.push(path);
            OwnerScope { depth: stack.len(), _not_send: PhantomData }
        })
    })
}

/// The owner path of this thread's innermost open scope.
pub fn current_owner() -> Option<Arc<str>> {
    OWNER.with(|stack| stack.borrow().last().cloned())
}

/// A stable hash of this thread's innermost owner path (the same on every thread and in every
/// run), or `None` outside any scope. Seeded fault draws are keyed by it, so a draw depends on
/// where a check happens rather than on which thread gets there first. Hashed here, at the draw,
/// rather than kept per scope: most scopes never see a draw.
pub(crate) fn current_owner_hash() -> Option<u64> {
    OWNER.try_with(|stack| stack.borrow().last().map(|path| fnv1a(path.as_bytes()))).ok().flatten()
}

/// Closes its owner scope when dropped. Not `Send`: a scope belongs to the thread that opened it.
#[must_use = "the scope closes as soon as this guard is dropped"]
#[derive(Debug)]
pub struct OwnerScope {
    depth: usize,
    _not_send: PhantomData<*const ()>,
}

impl Drop for OwnerScope {
    fn drop(&mut self) {
        // Truncating (rather than popping) keeps the stack right even when guards drop out of
        // order: closing an outer scope closes the ones inside it.
        let _ = OWNER.try_with(|stack| stack.borrow_mut().truncate(self.depth - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_close() {
        assert_eq!(current_owner(), None);
        {
            let _a = owner_scope("task 0_1");
            {
                let _b = owner_scope("segment 3");
                assert_eq!(current_owner().as_deref(), Some("task 0_1 / segment 3"));
            }
            assert_eq!(current_owner().as_deref(), Some("task 0_1"));
        }
        assert_eq!(current_owner(), None);
    }

    #[test]
    fn out_of_order_drop_closes_inner_scopes() {
        let a = owner_scope("a");
        let b = owner_scope("b");
        drop(a);
        assert_eq!(current_owner(), None);
        drop(b);
        assert_eq!(current_owner(), None);
        let _c = owner_scope("c");
        assert_eq!(current_owner().as_deref(), Some("c"));
    }

    #[test]
    fn path_hashes_name_the_path_not_the_thread() {
        assert_eq!(current_owner_hash(), None);
        let _a = owner_scope("task 0_1");
        let a = current_owner_hash().expect("in scope");
        {
            let _b = owner_scope("segment 3");
            assert_ne!(current_owner_hash(), Some(a));
        }
        assert_eq!(current_owner_hash(), Some(a));
        let other = std::thread::spawn(|| {
            let _a = owner_scope("task 0_1");
            current_owner_hash()
        })
        .join()
        .expect("thread");
        assert_eq!(other, Some(a), "the same path on another thread hashes the same");
    }

    #[test]
    fn scopes_are_per_thread() {
        let _a = owner_scope("main thread");
        let seen = std::thread::spawn(current_owner).join().expect("thread");
        assert_eq!(seen, None);
    }
}
