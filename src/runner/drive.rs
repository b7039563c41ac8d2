//! A run driven: the store made, the harness run, the report directory kept current, the
//! progress line, the heap profile, an interrupt or the duration's end.

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::plan::{harness_config, plan_for, settings_of, validate, Plan};
use super::progress::Progress;
use super::{heap, RunError, RunOptions, RunOutcome, StoreEnv};
use crate::harness::Lifecycle;
use crate::report::{self, CycleSummary, RunReport, RunSettings};
use crate::verdict::CycleSample;
use crate::{harness::Harness, ledger::Ledger};

/// Makes the store with `make` and runs it as `leakcheck check` or `soak` does.
///
/// Every problem with the options is found before any file is made (the data directory, if
/// temporary, and the store come next; the report directory last, once the plan is known to fit
/// the store).
///
/// # Errors
/// [`RunError`]: a bad option, a constructor that failed, a report that cannot be written.
pub fn run<L, E, F>(opts: &RunOptions, make: F) -> Result<RunOutcome, RunError>
where
    L: Lifecycle,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
    F: FnOnce(&StoreEnv<'_>) -> Result<L, E>,
{
    let plan = validate(opts)?;
    let scratch;
    let data = match &opts.dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|source| RunError::Dir { option: "--dir", path: d.clone(), source })?;
            d.join("leakcheck-store")
        }
        None => {
            scratch = tempfile::Builder::new().prefix("leakcheck-").tempdir().map_err(|source| RunError::Dir {
                option: "temporary directory",
                path: std::env::temp_dir(),
                source,
            })?;
            scratch.path().join("store")
        }
    };
    let ledger = Ledger::with_depth(plan.depth);
    let mut store = make(&StoreEnv { ledger: &ledger, dir: &data }).map_err(|e| RunError::Store(e.into()))?;
    drive(&mut store, &ledger, opts, &plan, None)
}

/// Runs `store` (already made, its handles registered in `ledger`) as [`run`] does; `stop`, once
/// set, ends the run after the cycle in progress (as an interrupt does).
pub(super) fn drive<L: Lifecycle>(
    store: &mut L,
    ledger: &Ledger,
    opts: &RunOptions,
    plan: &Plan,
    stop: Option<&AtomicBool>,
) -> Result<RunOutcome, RunError> {
    let faults = plan_for(opts, store)?;
    if let Some(dir) = &opts.report {
        report::write::prepare_dir(dir)
            .map_err(|source| RunError::Report { context: format!("--report {}", dir.display()), source })?;
    }
    let stop = if opts.interruptible { Some(crate::sys::stop_on_interrupt().map_err(RunError::Signal)?) } else { stop };
    let settings = settings_of(store, opts, plan, &faults);
    let hc = harness_config(opts, plan, faults);
    let warmup = hc.judged_analysis().warmup_cycles as u64;
    let heap = opts.profile.map(|lg| heap::HeapRun::start(lg, opts.report.as_deref(), warmup)).transpose()?;
    let csv = opts
        .report
        .as_ref()
        .map(|dir| report::SamplesFile::create(&dir.join(report::SAMPLES_FILE)))
        .transpose()
        .map_err(|source| RunError::Report { context: "writing the report".to_string(), source })?;
    let total = (plan.cycles != u64::MAX).then_some(plan.cycles);
    let mut watch = Watch {
        opts,
        baseline: plan.baseline.as_ref(),
        ledger,
        settings,
        progress: Progress::new(total, !opts.progress),
        started: Instant::now(),
        summary: CycleSummary::default(),
        slope: None,
        error: None,
        interrupted: false,
        csv,
        heap,
        stop,
    };
    let result = Harness::new(hc).run_observed(store, ledger, |p| watch.after_cycle(p));
    watch.progress.finish();
    if let Some(e) = watch.error.take() {
        return Err(e);
    }
    watch.finish(result?)
}

/// What [`drive`] keeps while the harness runs: the report being written, the progress line, the
/// heap profile, and why the run stopped early.
struct Watch<'a> {
    opts: &'a RunOptions,
    baseline: Option<&'a (RunReport, String)>,
    ledger: &'a Ledger,
    settings: RunSettings,
    progress: Progress,
    started: Instant,
    summary: CycleSummary,
    slope: Option<f64>,
    error: Option<RunError>,
    interrupted: bool,
    csv: Option<report::SamplesFile>,
    heap: Option<heap::HeapRun>,
    stop: Option<&'a AtomicBool>,
}

impl Watch<'_> {
    /// After each cycle: samples appended, the report rewritten every `report_every` cycles, the
    /// progress line, the heap profile; stops on an error, an interrupt or the duration's end.
    /// (Past the cycles asked for, the harness itself stops once the memory signals decide.)
    fn after_cycle(&mut self, p: &crate::harness::Progress<'_>) -> ControlFlow<()> {
        self.summary.add(p.record);
        let cycle = p.record.cycle + 1;
        if let (Some(f), Some(s)) = (self.csv.as_mut(), p.sample) {
            f.push(s);
        }
        if cycle.is_multiple_of(self.opts.report_every) || cycle == 1 {
            if let Err(e) = self.interim_report(p, cycle) {
                self.error = Some(e);
                return ControlFlow::Break(());
            }
        }
        let (ledger, slope) = (self.ledger, self.slope);
        self.progress.tick(cycle, || {
            let unexplained = p.samples.last().and_then(|s| s.sample.unexplained_bytes()).unwrap_or(0) as f64;
            format!(
                "retained handles {}  unexplained {}  slope {}",
                ledger.retained_counts().values().sum::<u64>(),
                crate::units::human_bytes(unexplained),
                slope.map_or("-".to_string(), |s| format!("{s:+.1} B/cycle"))
            )
        });
        if let Some(Err(e)) = self.heap.as_mut().map(|h| h.after_cycle(cycle, heap::cache_fill(p.samples))) {
            self.error = Some(e);
            return ControlFlow::Break(());
        }
        if self.stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            self.interrupted = true;
            return ControlFlow::Break(());
        }
        if self.opts.duration.is_some_and(|d| self.started.elapsed() >= d) {
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }

    /// The verdict so far, and the report with it when there is a report directory.
    fn interim_report(&mut self, p: &crate::harness::Progress<'_>, cycle: u64) -> Result<(), RunError> {
        let interim = p.judged.cloned().unwrap_or_else(|| p.analysis.current());
        self.slope = interim.leak_rate.as_ref().map(|r| r.bytes_per_cycle);
        let (Some(dir), Some(f)) = (&self.opts.report, self.csv.as_mut()) else {
            return Ok(());
        };
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut r = RunReport::new(
            self.settings.clone(),
            interim,
            self.summary.clone(),
            self.ledger.report(),
            cycle,
            elapsed,
            false,
        );
        r.first_leak_cycle = p.first_leak_cycle;
        write_report(dir, f, &r, p.samples, false)
    }

    /// The final report, with the heap growth when profiled.
    fn finish(mut self, h: crate::harness::HarnessReport) -> Result<RunOutcome, RunError> {
        let elapsed = self.started.elapsed().as_secs_f64();
        // The observer saw every cycle's full record: its summary is the run's, soak or check.
        let mut r = RunReport::new(
            self.settings,
            h.verdict.clone(),
            self.summary,
            h.ledger.clone(),
            h.cycles_run,
            elapsed,
            true,
        );
        r.interrupted = self.interrupted;
        r.stopped = h.stopped.clone().filter(|s| !matches!(s, crate::harness::Stopped::Asked { .. }));
        r.first_leak_cycle = h.first_leak_cycle;
        r.generations = h.generations.clone();
        r.suppressions = h.suppressions.clone();
        r.baseline =
            self.baseline.map(|(base, file)| report::BaselineCheck::of(&r, base, file, self.opts.baseline_margin));
        if let Some(heap) = self.heap {
            let growth = heap.finish(h.cycles_run, heap::cache_fill(&h.samples))?;
            r.heap_growth = growth.stacks;
            r.heap_growth_by_function = growth.functions;
        }
        if let (Some(dir), Some(f)) = (&self.opts.report, self.csv.as_mut()) {
            write_report(dir, f, &r, &h.samples, true)?;
        }
        let outcome =
            RunOutcome { report: r, report_dir: self.opts.report.clone(), annotations: self.opts.annotations.github() };
        super::ci::publish(&outcome, self.opts)?;
        Ok(outcome)
    }
}

/// Appends the new samples to samples.csv (synced), then writes report.json and the plots, each
/// atomically (PNG only in the final report, with feature `png`: rendering takes longer than a
/// cycle). The plots draw the samples kept in memory (every one in a check, an evenly thinned set
/// in a long soak).
fn write_report(
    dir: &Path,
    csv: &mut report::SamplesFile,
    r: &RunReport,
    samples: &[CycleSample],
    last: bool,
) -> Result<(), RunError> {
    let failed = |source| RunError::Report { context: "writing the report".to_string(), source };
    csv.flush().map_err(failed)?;
    let plots = report::write_views(dir, r, samples).map_err(failed)?;
    #[cfg(feature = "png")]
    if last {
        for plot in &plots {
            let png = png_of(&plot.svg)?;
            report::write_atomic(&dir.join(plot.file_name.replace(".svg", ".png")), &png).map_err(failed)?;
        }
    }
    let _ = (last, plots);
    Ok(())
}

/// Renders the SVG to PNG with the system's fonts (text is left out where none are installed).
#[cfg(feature = "png")]
fn png_of(svg: &str) -> Result<Vec<u8>, RunError> {
    use resvg::{tiny_skia, usvg};
    let mut opt = usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = usvg::Tree::from_str(svg, &opt).map_err(|e| RunError::Png(e.to_string()))?;
    let size = tree.size().to_int_size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| RunError::Png("empty plot".to_string()))?;
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| RunError::Png(e.to_string()))
}
