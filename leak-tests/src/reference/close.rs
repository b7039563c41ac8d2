//! Closing: the closed-state marker written into every segment, every handle released whatever failed, tasks closed on worker threads.

#[allow(clippy::wildcard_imports)]
use super::*;

impl ReferenceStore {
    /// Closes one segment: the closed-state marker, then the release, whatever the marker did.
    pub(super) fn close_segment(&self, ctx: &CycleCtx<'_>, task: u32, seg: Segment) -> Result<(), StoreError> {
        let id = seg.id;
        let _owner = owner_scope(format!("segment {id}"));
        let marker = seg.cf(task, OFFSETS).and_then(|cf| {
            let mut w = TrackedWriteOptions::new(ctx.ledger);
            if ctx.faults.check_error("close.marker") {
                // A real RocksDB error: a synced write with the WAL disabled.
                w.set_sync(true);
                w.disable_wal(true);
            }
            seg.db.put_cf_opt(&cf, CLOSED_MARKER, [1], &w).map_err(|source| StoreError::RocksDb {
                task,
                segment: id,
                what: "closed marker",
                source,
            })
        });
        if marker.is_err() {
            match self.config.variant {
                Variant::MarkerFailureSkipsRelease => {
                    // Planted (KAFKA-20616): the exception skips the release that follows.
                    planted!("marker-failure-skips-release", ());
                    std::mem::forget(seg);
                    return marker;
                }
                Variant::MarkerFailureLeaksBytes => {
                    // Planted: the error path returns before freeing a 1 KiB native buffer.
                    planted!("marker-failure-leaks-bytes", self.leak_native(MARKER_LEAK_BYTES));
                }
                Variant::MarkerFailureLeaksSometimes if mix(ctx.cycle.wrapping_mul(1 << 20) ^ id) % 10 < 4 => {
                    // Planted: on 40% of the failures, the error path skips freeing 4 KiB.
                    planted!("marker-failure-leaks-sometimes", self.leak_native(SOMETIMES_LEAK_BYTES));
                }
                Variant::MigratingReleasesFirstOnly if self.config.is_migrating(task) => {
                    // Planted: of the dual accessor's three handles, only the first is released.
                    planted!("migrating-releases-first-only", ());
                    let refs = [DATA_OLD, DATA, OFFSETS].map(|n| seg.db.cf_handle(n));
                    let [first, rest @ ..] = refs;
                    drop(first);
                    std::mem::forget(rest);
                }
                _ => {}
            }
        }
        let flush = if ctx.faults.check_error("close.flush") {
            Err(StoreError::Injected { task, point: "close.flush" })
        } else {
            Ok(())
        };
        // Parked once it has been reopened, so it has SST files open and mapped.
        if self.config.variant == Variant::SegmentNeverClosed && id.is_multiple_of(2) && ctx.cycle >= 2 {
            // Planted: the segment DB is parked, never closed.
            planted!("segment-never-closed", ());
            lock(&self.planted).registry.push(seg);
            return marker.and(flush);
        }
        let closed = seg.db.close();
        let closed = if self.config.variant == Variant::SwallowedCloseError {
            // Planted: the close result is dropped on the floor; with it goes the marker's error.
            planted!("swallowed-close-error", ());
            drop(closed);
            let _ = leakcheck::CloseResult::new(ctx.ledger, "segment", marker);
            return flush;
        } else {
            closed.into_result().map_err(|source| StoreError::RocksDb { task, segment: id, what: "close", source })
        };
        marker.and(flush).and(closed)
    }

    pub(super) fn close_task(&self, ctx: &CycleCtx<'_>, store: TaskStore) -> Result<(), StoreError> {
        let _owner = owner_scope(format!("task 0_{}", store.task));
        let mut first = Ok(());
        for (_, seg) in store.segments {
            let r = self.close_segment(ctx, store.task, seg);
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// Runs `f(task, worker)` for each task on the worker its cycle assigns: tasks move between
    /// workers from one cycle to the next (a rebalance).
    pub(super) fn on_workers<T: Send>(
        &self,
        cycle: u64,
        tasks: Vec<u32>,
        f: impl Fn(u32, u32) -> T + Sync,
    ) -> Result<Vec<(u32, T)>, StoreError> {
        let workers = self.config.workers.max(1);
        let mut assignment: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for t in tasks {
            assignment.entry(((u64::from(t) + cycle) % u64::from(workers)) as u32).or_default().push(t);
        }
        let f = &f;
        let results: Vec<std::thread::Result<Vec<(u32, T)>>> = std::thread::scope(|s| {
            let handles: Vec<_> = assignment
                .iter()
                .map(|(&w, ts)| s.spawn(move || ts.iter().map(|&t| (t, f(t, w))).collect::<Vec<_>>()))
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut out = Vec::new();
        let mut panicked = None;
        for r in results {
            match r {
                Ok(v) => out.extend(v),
                Err(p) => panicked = Some(p),
            }
        }
        if let Some(p) = panicked {
            // Every other worker finished; what they made drops (and is released) here.
            drop(out);
            std::panic::resume_unwind(p);
        }
        out.sort_by_key(|(t, _)| *t);
        Ok(out)
    }
}
