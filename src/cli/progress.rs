//! Progress bars on a terminal; nothing when output is piped or in CI.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A byte-progress bar on stderr, hidden when stderr is not a terminal.
pub fn bytes_bar(total: Option<u64>, label: &str) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr()),
        None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
    };
    let template = if total.is_some() {
        "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}"
    } else {
        "{msg} {spinner} {bytes} {bytes_per_sec}"
    };
    bar.set_style(ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
    bar.set_message(label.to_owned());
    bar
}
