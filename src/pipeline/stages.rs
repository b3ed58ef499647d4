//! Where an analysis's time went, stage by stage, for `analyze --verbose`.

use std::fmt;
use std::time::{Duration, Instant};

use crate::detect::run::ShareTimes;

/// The stages an analysis passed, each with the time it took, in order.
#[derive(Debug, Clone)]
pub struct StageTimes {
    stages: Vec<(&'static str, Duration)>,
    /// Lines on the parts of a stage, by the stage's index.
    details: Vec<(usize, String)>,
    /// When the current stage began.
    since: Instant,
}

impl StageTimes {
    pub fn start() -> Self {
        Self { stages: Vec::new(), details: Vec::new(), since: Instant::now() }
    }

    /// Ends the stage `name`, which began where the last one ended.
    pub fn end(&mut self, name: &'static str) {
        let now = Instant::now();
        self.stages.push((name, now - self.since));
        self.since = now;
    }

    /// Says, under the stage that ended last, what part `name` of it took and how.
    pub fn detail(&mut self, name: &str, took: Duration, how: &str) {
        let line = format!("  {name:<24} {:>8.3} s  {how}", took.as_secs_f64());
        self.details.push((self.stages.len().saturating_sub(1), line.trim_end().to_owned()));
    }

    pub fn stages(&self) -> &[(&'static str, Duration)] {
        &self.stages
    }
}

/// What the shares of sessions did within the stage that ran them, as they came in.
#[derive(Debug, Clone, Copy, Default)]
pub struct SharesWork {
    shares: usize,
    /// When the first share's work began (none when the shares ran on workers).
    first_began: Option<Instant>,
    planning: Duration,
    chains: Duration,
    detectors: Duration,
    merge: Duration,
}

impl SharesWork {
    /// Counts a share that took `times`, and `merge` to merge what it found.
    pub fn add(&mut self, times: ShareTimes, merge: Duration) {
        self.shares += 1;
        self.first_began = match (self.first_began, times.began) {
            (Some(first), Some(began)) => Some(first.min(began)),
            (first, began) => first.or(began),
        };
        self.planning += times.planning;
        self.chains += times.chains;
        self.detectors += times.detectors;
        self.merge += merge;
    }

    /// The parts of the stage that began at `stage_began`, under it in `times`. The
    /// shares run side by side, so their summed times exceed the stage's on many cores.
    pub fn describe(&self, stage_began: Instant, on_workers: bool, times: &mut StageTimes) {
        if self.shares == 0 {
            return;
        }
        let (first, over, summed) = match self.shares {
            1 => ("the share".to_owned(), "in the one share".to_owned(), ""),
            n => {
                let side_by_side = if on_workers { "on the workers" } else { "side by side" };
                (
                    format!("the first of {n} shares"),
                    format!("summed over the {n} shares, which run {side_by_side}"),
                    "summed over the shares",
                )
            }
        };
        if let Some(began) = self.first_began {
            let until = format!("until {first} had all its sessions' events");
            times.detail("scan, spread by session", began.saturating_duration_since(stage_began), &until);
        }
        let planned = if on_workers { "once in each worker's task" } else { "once, by the first share" };
        times.detail("planning", self.planning, &format!("the chain build and the detectors, {planned}"));
        times.detail("chains and cortex", self.chains, &over);
        times.detail("detectors", self.detectors, summed);
        times.detail("merge", self.merge, "");
    }
}

impl fmt::Display for StageTimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: Duration = self.stages.iter().map(|(_, took)| *took).sum();
        let total_s = total.as_secs_f64();
        for (stage, (name, took)) in self.stages.iter().enumerate() {
            let share = if total_s > 0.0 { took.as_secs_f64() / total_s * 100.0 } else { 0.0 };
            writeln!(f, "  {name:<26} {:>8.3} s  {share:>3.0} %", took.as_secs_f64())?;
            for (_, line) in self.details.iter().filter(|(of, _)| *of == stage) {
                writeln!(f, "  {line}")?;
            }
        }
        write!(f, "  {:<26} {total_s:>8.3} s", "total")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_follow_each_other_and_add_up_to_the_total() {
        let mut times = StageTimes::start();
        std::thread::sleep(Duration::from_millis(20));
        times.end("first");
        times.end("second");
        let names: Vec<&str> = times.stages().iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["first", "second"]);
        assert!(times.stages()[0].1 >= Duration::from_millis(20));
        let text = times.to_string();
        assert!(text.lines().next().unwrap().trim_start().starts_with("first"), "{text}");
        assert!(text.lines().last().unwrap().trim_start().starts_with("total"), "{text}");
    }

    #[test]
    fn the_shares_work_is_told_under_the_stage_that_ran_them() {
        let stage_began = Instant::now();
        let mut times = StageTimes::start();
        let mut work = SharesWork::default();
        let share = |began_ms: u64, planning_ms: u64, chains_ms: u64, detectors_ms: u64| ShareTimes {
            began: Some(stage_began + Duration::from_millis(began_ms)),
            planning: Duration::from_millis(planning_ms),
            chains: Duration::from_millis(chains_ms),
            detectors: Duration::from_millis(detectors_ms),
        };
        work.add(share(900, 0, 300, 200), Duration::from_millis(10));
        work.add(share(700, 150, 500, 100), Duration::from_millis(20));
        times.end("scan to findings");
        work.describe(stage_began, false, &mut times);
        times.end("write and commit");
        let text = times.to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert!(lines[0].starts_with("scan to findings"), "{text}");
        assert_eq!(lines[1], "scan, spread by session     0.700 s  until the first of 2 shares had all its sessions' events");
        assert_eq!(lines[2], "planning                    0.150 s  the chain build and the detectors, once, by the first share");
        assert_eq!(lines[3], "chains and cortex           0.800 s  summed over the 2 shares, which run side by side");
        assert_eq!(lines[4], "detectors                   0.300 s  summed over the shares");
        assert_eq!(lines[5], "merge                       0.030 s");
        assert!(lines[6].starts_with("write and commit"), "{text}");
    }
}
