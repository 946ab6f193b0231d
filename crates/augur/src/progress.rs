//! The one progress display of the offline tools (`augur mrc`, `mrc-compare`, `sim`):
//! elapsed time, a bar with done/total requests, the rate and the ETA when the total is
//! known; elapsed time, count and rate when it is not (a trace whose length cannot be told
//! without reading it). Drawn on stderr, and only when stderr is a terminal, so that
//! output redirected to a file or a pipe stays clean.

use std::fmt::Write as _;
use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// A progress bar over `total` requests (None: unknown), labelled `what`.
pub fn bar(total: Option<u64>, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let (pb, template) = match total {
        Some(n) => (
            ProgressBar::with_draw_target(Some(n), ProgressDrawTarget::stderr()),
            "{spinner} {msg} [{elapsed_precise}] [{bar:40}] {human_pos}/{human_len} requests, {rate}, eta {eta}",
        ),
        None => (
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
            "{spinner} {msg} [{elapsed_precise}] {human_pos} requests, {rate}",
        ),
    };
    let style = ProgressStyle::with_template(template)
        .expect("valid template")
        .progress_chars("=> ")
        .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&human_rate(s.per_sec()));
        });
    pb.set_style(style);
    pb.set_message(what.to_string());
    pb
}

/// `12.3M/s`, `845k/s`, `97/s`: three significant figures at most.
pub fn human_rate(per_sec: f64) -> String {
    let mut s = String::new();
    let _ = match per_sec {
        r if r >= 1e9 => write!(s, "{:.2}G/s", r / 1e9),
        r if r >= 1e6 => write!(s, "{:.1}M/s", r / 1e6),
        r if r >= 1e3 => write!(s, "{:.0}k/s", r / 1e3),
        r => write!(s, "{:.0}/s", r),
    };
    s
}

#[cfg(test)]
mod tests {
    use super::human_rate;

    #[test]
    fn rates_are_short() {
        assert_eq!(human_rate(0.4), "0/s");
        assert_eq!(human_rate(97.2), "97/s");
        assert_eq!(human_rate(845_123.0), "845k/s");
        assert_eq!(human_rate(12_345_678.0), "12.3M/s");
        assert_eq!(human_rate(2.5e9), "2.50G/s");
    }
}
