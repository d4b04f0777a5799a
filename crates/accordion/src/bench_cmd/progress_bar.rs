//! The bench's progress bar: a thread that polls `bench::progress` and
//! draws an `indicatif` bar on stderr (hidden when stderr is not a
//! terminal), so the driver's hot loop never touches the terminal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

pub struct ProgressBarThread {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProgressBarThread {
    pub fn start() -> ProgressBarThread {
        let bar = ProgressBar::new(0);
        bar.set_style(
            // indicatif's own {per_sec} prints "192,965.7378/s".
            ProgressStyle::with_template("{msg:40} [{bar:30}] {human_pos}/{human_len} ops ({rate}, eta {eta})")
                .expect("valid template")
                .with_key("rate", |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{} ops/s", indicatif::HumanCount(state.per_sec() as u64));
                })
                .progress_chars("=> "),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (bar, stop) = (bar.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let (done, total) = bench::progress::get();
                    bar.set_length(total);
                    bar.set_position(done.min(total));
                    std::thread::sleep(Duration::from_millis(200));
                }
            })
        };
        ProgressBarThread { bar, stop, thread: Some(thread) }
    }

    /// Names the run now in progress.
    pub fn set_label(&self, label: &str) {
        self.bar.reset();
        self.bar.set_message(label.to_string());
    }

    /// Prints a line to stdout without tearing the bar.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| println!("{line}"));
    }
}

impl Drop for ProgressBarThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}
