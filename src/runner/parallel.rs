//! Jobs run a few at a time, their results in the jobs' order.

/// Runs `f` on every job, `workers` at a time, taking the jobs in order, and returns the results
/// in the jobs' order. For runs that each start a process of their own (process-wide signals
/// must not mix): the catalogs, the detection matrix and the binding sweep take two at a time.
pub fn in_parallel<J: Send, R: Send>(jobs: Vec<J>, workers: usize, f: impl Fn(J) -> R + Sync) -> Vec<R> {
    let queue = std::sync::Mutex::new(jobs.into_iter().enumerate().rev().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers.max(1) {
            // The queue's guard moves into `and_then` and is dropped there: no worker holds the
            // queue while its job runs.
            s.spawn(|| {
                while let Some((i, job)) = queue.lock().ok().and_then(|mut q| q.pop()) {
                    let r = f(job);
                    if let Ok(mut all) = results.lock() {
                        all.push((i, r));
                    }
                }
            });
        }
    });
    let mut all = results.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, r)| r).collect()
}
