//! Progress on stderr: a bar on a terminal (feature `cli`), else a line every 10 seconds.

use std::time::{Duration, Instant};

pub(crate) struct Progress {
    #[cfg(feature = "cli")]
    bar: Option<indicatif::ProgressBar>,
    quiet: bool,
    last_line: Instant,
    every: Duration,
}

impl Progress {
    /// Progress towards `total` cycles (None: a run bounded by time), silent when `quiet`.
    pub(crate) fn new(total: Option<u64>, quiet: bool) -> Self {
        #[cfg(feature = "cli")]
        let bar = {
            use std::io::IsTerminal;
            (!quiet && std::io::stdout().is_terminal() && std::io::stderr().is_terminal()).then(|| {
                use indicatif::{ProgressBar, ProgressStyle};
                let bar = match total {
                    Some(n) => ProgressBar::new(n),
                    None => ProgressBar::new_spinner(),
                };
                let style = ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} cycles  ETA {eta}  {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar());
                bar.set_style(style);
                bar
            })
        };
        #[cfg(not(feature = "cli"))]
        let _ = total;
        Progress {
            #[cfg(feature = "cli")]
            bar,
            quiet,
            last_line: Instant::now(),
            every: Duration::from_secs(10),
        }
    }

    /// After `cycle` (1-based); `line` describes the state.
    pub(crate) fn tick(&mut self, cycle: u64, line: impl FnOnce() -> String) {
        #[cfg(feature = "cli")]
        if let Some(bar) = &self.bar {
            if bar.length().is_some_and(|len| cycle > len) {
                // `check` going on past its cycles while the verdict is inconclusive.
                bar.set_length(cycle);
            }
            bar.set_position(cycle);
            bar.set_message(line());
            return;
        }
        if !self.quiet && self.last_line.elapsed() >= self.every {
            self.last_line = Instant::now();
            eprintln!("cycle {cycle}: {}", line());
        }
    }

    pub(crate) fn finish(&self) {
        #[cfg(feature = "cli")]
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
