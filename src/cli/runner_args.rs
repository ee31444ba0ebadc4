//! The options every many-episode runner shares (`robustness run`,
//! `watch-help`): worker threads, the network device, the progress bar.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use crate::nn::DeviceChoice;

/// Worker threads, device and progress options.
#[derive(Debug, Args)]
pub struct RunnerArgs {
    /// Worker threads [default: available cores].
    #[arg(long, value_name = "T", value_parser = crate::cli::numeric::count::<usize>(crate::cli::numeric::THREADS))]
    pub threads: Option<usize>,
    /// Where network agents run: cpu, cuda or auto.
    #[arg(long, value_name = "DEVICE", default_value = "auto")]
    pub device: DeviceChoice,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

impl RunnerArgs {
    /// The worker threads, with libtorch's own threads set (the cores; before any
    /// model is built).
    pub fn threads(&self) -> usize {
        let threads = self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        });
        super::torch_threads::apply(None, self.device);
        threads
    }

    /// A progress bar over `total` `what`s, hidden when quiet or not on a
    /// terminal.
    pub fn progress(&self, total: u64, what: &str) -> ProgressBar {
        use std::io::IsTerminal;
        if self.quiet || !std::io::stderr().is_terminal() {
            return ProgressBar::hidden();
        }
        ProgressBar::new(total).with_style(
            ProgressStyle::with_template(&format!(
                "[{{bar:30}}] {{pos}}/{{len}} {what}, {{elapsed}}, eta {{eta}}"
            ))
            .expect("a valid template"),
        )
    }
}
