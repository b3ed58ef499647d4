//! Where an analysis's time went, stage by stage, for `analyze --verbose`.

use std::fmt;
use std::time::{Duration, Instant};

/// The stages an analysis passed, each with the time it took, in order.
#[derive(Debug, Clone)]
pub struct StageTimes {
    stages: Vec<(&'static str, Duration)>,
    /// When the current stage began.
    since: Instant,
}

impl StageTimes {
    pub fn start() -> Self {
        Self { stages: Vec::new(), since: Instant::now() }
    }

    /// Ends the stage `name`, which began where the last one ended.
    pub fn end(&mut self, name: &'static str) {
        let now = Instant::now();
        self.stages.push((name, now - self.since));
        self.since = now;
    }

    pub fn stages(&self) -> &[(&'static str, Duration)] {
        &self.stages
    }
}

impl fmt::Display for StageTimes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: Duration = self.stages.iter().map(|(_, took)| *took).sum();
        let total_s = total.as_secs_f64();
        for (name, took) in &self.stages {
            let share = if total_s > 0.0 { took.as_secs_f64() / total_s * 100.0 } else { 0.0 };
            writeln!(f, "  {name:<26} {:>8.3} s  {share:>3.0} %", took.as_secs_f64())?;
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
}
