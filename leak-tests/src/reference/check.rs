//! The integrity check after each cycle: every live segment reopened, no lock held, offsets not ahead of the data, destroyed segments gone.

#[allow(clippy::wildcard_imports)]
use super::*;

impl ReferenceStore {
    pub(super) fn check_task(&self, ctx: &CycleCtx<'_>, task: u32) -> Integrity {
        let _owner = owner_scope(format!("check task 0_{task}"));
        // A snapshot of the book; the late drops are counted since the last check.
        let book = {
            let mut live = lock(&self.tasks[task as usize].book);
            let snapshot = live.clone();
            live.late_dropped = 0;
            snapshot
        };
        let mut report = Integrity::default();
        // Every counter is reported, zeros included: the report shows what was checked.
        for name in VIOLATIONS {
            report.violation(name, 0);
        }
        report.count(MALFORMED_SKIPPED, 0);
        report.count(LATE_DROPPED, book.late_dropped);
        // Every segment directory on disk must be a live segment: a destroyed one still there, or
        // one re-created after its destruction, is stale.
        let task_dir = self.config.dir.join(format!("task_0_{task}"));
        match std::fs::read_dir(&task_dir) {
            Ok(entries) => {
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    let id = name.to_str().and_then(|n| n.strip_prefix("segment_")).and_then(|n| n.parse::<u64>().ok());
                    if let Some(id) = id.filter(|id| !book.live.contains(id)) {
                        report.violation("stale_dirs", 1);
                        report.problem(format!(
                            "task {task}: segment {id} is on disk but not live (destroyed, or re-created)"
                        ));
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                report.violation("reopen_failures", 1);
                report.problem(format!("task {task}: cannot list {}: {e}", task_dir.display()));
            }
        }
        let mut restored = BTreeMap::new();
        let mut present: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        for &id in &book.live {
            let shared = match self.shared(task) {
                Ok(shared) => shared,
                Err(e) => {
                    report.violation("reopen_failures", 1);
                    report.problem(e.to_string());
                    break;
                }
            };
            let (mut db_options, cfs) = self.segment_options(ctx.ledger, task, shared);
            // The check reads on this thread: RocksDB would otherwise start and join up to 15
            // threads per reopen to load the table files (`max_file_opening_threads`, 16 by
            // default), which is the store's own opening's business, not the check's.
            db_options.set_max_file_opening_threads(1);
            let path = self.segment_dir(task, id);
            let seg = match Db::open_cf_descriptors(&db_options, &path, cfs) {
                Ok(db) => Segment { id, db, _db_options: db_options },
                Err(e) => {
                    let text = e.to_string();
                    if text.to_lowercase().contains("lock") {
                        report.violation("locks_held", 1);
                        report.problem(format!("task {task} segment {id}: LOCK still held: {text}"));
                    } else {
                        report.violation("reopen_failures", 1);
                        report.problem(format!("task {task} segment {id}: reopen failed: {text}"));
                    }
                    continue;
                }
            };
            match self.restore_segment(task, &seg, &mut restored) {
                Ok(skipped) => report.count(MALFORMED_SKIPPED, skipped),
                Err(e) => {
                    report.violation("reopen_failures", 1);
                    report.problem(format!("task {task} segment {id}: restore failed: {e}"));
                }
            }
            if let Some(cf) = seg.db.cf_handle(DATA) {
                for item in seg.db.iterator_cf(&cf, IteratorMode::Start) {
                    match item {
                        Ok((key, _)) => {
                            if let Some((p, o)) = parse_data_key(&key) {
                                present.entry(p).or_default().insert(o);
                            }
                        }
                        Err(e) => {
                            report.violation("reopen_failures", 1);
                            report.problem(format!("task {task} segment {id}: data scan failed: {e}"));
                            break;
                        }
                    }
                }
            }
            if let Err(e) = seg.db.close().into_result() {
                report.violation("reopen_failures", 1);
                report.problem(format!("task {task} segment {id}: close after check failed: {e}"));
            }
        }
        // Records are owed from the oldest segment that is both on disk and within the retention:
        // a segment past the retention may still be on disk (an error cut work short before the
        // retention step), but records for it were dropped as late, as a window store drops them.
        // Stream time only moves forward, so every segment at or above today's floor was within
        // the retention when its records were written.
        let floor = book.newest.map(|n| self.retention_floor(n));
        let oldest_owed = book.live.iter().copied().find(|&id| floor.is_none_or(|f| id >= f));
        for (&p, &truth) in &book.committed {
            let got = restored.get(&p).copied().unwrap_or(0);
            if got < truth {
                report.violation("offsets_dropped_by_restore", 1);
                report.problem(format!("task {task} partition {p}: restore returned offset {got}, committed {truth}"));
            }
            // Every record below the committed offset whose segment is still retained must exist.
            let from = oldest_owed.map_or(truth, |s| s * self.config.segment_interval);
            let have = present.get(&p);
            for o in from..truth {
                report.records_checked += 1;
                if !have.is_some_and(|h| h.contains(&o)) {
                    report.violation("lost_records", 1);
                    if report.violations_of("lost_records") <= 3 {
                        report.problem(format!(
                            "task {task} partition {p}: offset {o} committed (up to {truth}) but its record is missing from segment {} (live segments {:?}, stream time at segment {:?})",
                            self.segment_of(o),
                            book.live,
                            book.newest
                        ));
                    }
                }
            }
        }
        report
    }
}
