//! How well the findings separate failed sessions from successful ones, from the
//! `signal_scores` view (sql/outputs/signal_scores.sql) over the imported outcomes.

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::engine::sql::{FOLD_SCORES, TASK_FOLDS, fill_template};
use crate::engine::{EngineError, query_json};
use crate::output::stats::{fisher_exact, probability_text};

/// One signal's (or all signals', `(any)`) score: read from the view's snake_case
/// columns, written as camelCase JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all(serialize = "camelCase", deserialize = "snake_case"))]
pub struct SignalScore {
    pub signal: String,
    /// Failed sessions with a finding of the signal.
    pub failed_flagged: u64,
    pub failed: u64,
    pub failed_rate: Option<f64>,
    /// Successful sessions with a finding of the signal.
    pub succeeded_flagged: u64,
    pub succeeded: u64,
    pub succeeded_rate: Option<f64>,
    /// `failed_rate / succeeded_rate`; none when no successful session is flagged.
    pub lift: Option<f64>,
    /// Fisher's exact two-sided p-value of the flagged and unflagged sessions by outcome:
    /// how likely a split at least this uneven is by chance (a lift of ∞ from one failed
    /// session is not telling).
    #[serde(default)]
    pub p_value: f64,
    /// Findings in scored sessions.
    pub findings: u64,
    pub findings_per_session: Option<f64>,
}

/// The scores and what they were computed over.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scores {
    /// Sessions with a known outcome and events in the lake.
    pub sessions_scored: u64,
    pub failed: u64,
    pub succeeded: u64,
    /// Outcomes of sessions the lake has no events of.
    pub outcomes_without_events: u64,
    /// Sessions in the lake with no known outcome (not scored).
    pub sessions_without_outcome: u64,
    /// `(any)` first, then the most telling signals first.
    pub signals: Vec<SignalScore>,
}

#[derive(Debug, thiserror::Error)]
pub enum ScoreError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error(
        "the lake has no outcomes: load the known outcome of each session with `tracelake outcomes import FILE` (JSON Lines or CSV: session, outcome success|failure, optional score and source)"
    )]
    NoOutcomes,
    #[error("unexpected row of signal_scores: {0}")]
    Row(#[from] serde_json::Error),
    #[error("--group-by {task:?} is not a SQL expression over `session` that names a task: {source}")]
    Task { task: String, source: EngineError },
}

const COVERAGE_SQL: &str = "SELECT \
     (SELECT count(*) FROM session_outcomes) AS outcomes, \
     (SELECT count(*) FROM session_outcomes WHERE session NOT IN (SELECT session FROM events)) AS without_events, \
     (SELECT count(DISTINCT session) FROM events WHERE session NOT IN (SELECT session FROM session_outcomes)) AS without_outcome";

pub async fn signal_scores(ctx: &SessionContext) -> Result<Scores, ScoreError> {
    let coverage = query_json(ctx, COVERAGE_SQL).await?;
    let count = |key: &str| coverage.first().and_then(|row| row.get(key)).and_then(serde_json::Value::as_u64).unwrap_or(0);
    if count("outcomes") == 0 {
        return Err(ScoreError::NoOutcomes);
    }
    let mut signals = Vec::new();
    for row in query_json(ctx, "SELECT * FROM signal_scores").await? {
        let mut score = serde_json::from_value::<SignalScore>(row)?;
        score.p_value = fisher_exact([
            [score.failed_flagged, score.failed.saturating_sub(score.failed_flagged)],
            [score.succeeded_flagged, score.succeeded.saturating_sub(score.succeeded_flagged)],
        ]);
        signals.push(score);
    }
    // `(any)` first; then by lift (a signal that flags no successful session first), then recall.
    signals.sort_by(|a, b| {
        let key = |s: &SignalScore| (s.signal != "(any)", s.failed_flagged == 0);
        let lift = |s: &SignalScore| s.lift.unwrap_or(f64::INFINITY);
        key(a).cmp(&key(b)).then(lift(b).total_cmp(&lift(a))).then(b.failed_flagged.cmp(&a.failed_flagged)).then(a.signal.cmp(&b.signal))
    });
    let (failed, succeeded) = signals.first().map_or((0, 0), |s| (s.failed, s.succeeded));
    Ok(Scores {
        sessions_scored: failed + succeeded,
        failed,
        succeeded,
        outcomes_without_events: count("without_events"),
        sessions_without_outcome: count("without_outcome"),
        signals,
    })
}

impl Scores {
    /// The scores as a table for the terminal.
    pub fn to_terminal(&self) -> String {
        let mut out =
            format!("{} sessions with a known outcome: {} failed, {} succeeded", self.sessions_scored, self.failed, self.succeeded);
        if self.sessions_without_outcome > 0 {
            out.push_str(&format!("; {} sessions without an outcome not scored", self.sessions_without_outcome));
        }
        if self.outcomes_without_events > 0 {
            out.push_str(&format!("; {} outcomes name sessions the lake has no events of", self.outcomes_without_events));
        }
        out.push_str("\n\n");
        out.push_str(&format!(
            "{:<26} {:>18} {:>18} {:>7} {:>9} {:>17}\n",
            "signal", "failed flagged", "succeeded flagged", "lift", "p", "findings/session"
        ));
        let share = |n: u64, of: u64, rate: Option<f64>| format!("{n}/{of} {:>5.1} %", rate.unwrap_or(0.0) * 100.0);
        for s in &self.signals {
            let lift = match (s.lift, s.failed_flagged) {
                (Some(l), _) => format!("{l:.2}"),
                (None, 0) => "–".to_owned(),
                (None, _) => "∞".to_owned(),
            };
            out.push_str(&format!(
                "{:<26} {:>18} {:>18} {:>7} {:>9} {:>17.2}\n",
                s.signal,
                share(s.failed_flagged, s.failed, s.failed_rate),
                share(s.succeeded_flagged, s.succeeded, s.succeeded_rate),
                lift,
                probability_text(s.p_value, 4),
                s.findings_per_session.unwrap_or(0.0)
            ));
        }
        if self.signals.iter().all(|s| s.findings == 0) {
            out.push_str("\nno findings in the scored sessions: run `tracelake analyze` first\n");
        }
        out
    }
}

/// The task of a session by default: its id without a trial suffix (`-t3`, `_trial2`,
/// `.run4`), so that trials of one task fall in one fold.
pub const DEFAULT_TASK: &str = "regexp_replace(session, '[-_.](?:t|trial|try|run|attempt|rep)[0-9]+$', '')";

/// The query of the scored sessions dealt into `folds` folds by `task` (a SQL expression
/// over `session`): `session`, `failed`, `task`, `fold`.
pub fn task_folds(task: &str, folds: u64) -> String {
    fill_template(TASK_FOLDS, &[("group", task.to_owned()), ("folds", folds.max(1).to_string())])
}

/// One fold's counts for one signal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all(serialize = "camelCase", deserialize = "snake_case"))]
pub struct FoldScore {
    pub fold: u64,
    pub tasks: u64,
    pub failed_flagged: u64,
    pub failed: u64,
    pub succeeded_flagged: u64,
    pub succeeded: u64,
}

impl FoldScore {
    pub fn failed_rate(&self) -> Option<f64> {
        (self.failed > 0).then(|| self.failed_flagged as f64 / self.failed as f64)
    }

    /// `None` when no successful session is flagged (unbounded, or nothing flagged).
    pub fn lift(&self) -> Option<f64> {
        let succeeded_rate = (self.succeeded > 0).then(|| self.succeeded_flagged as f64 / self.succeeded as f64)?;
        (succeeded_rate > 0.0).then(|| self.failed_rate().unwrap_or(0.0) / succeeded_rate)
    }
}

/// A signal across the folds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalFolds {
    pub signal: String,
    pub folds: Vec<FoldScore>,
    /// Folds whose lift is below 2 (a fold that flags no successful session is none).
    pub folds_below_lift_2: usize,
}

/// The folds' scores: the same signals as [`Scores`], each fold apart.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FoldedScores {
    pub folds: u64,
    /// The SQL expression over `session` that names a session's task.
    pub task: String,
    pub signals: Vec<SignalFolds>,
}

/// Splits the scored sessions into `folds` folds by task (`task`, a SQL expression over
/// `session`; [`DEFAULT_TASK`] when none) and scores each signal in each.
pub async fn fold_scores(ctx: &SessionContext, folds: u64, task: Option<&str>, order: &Scores) -> Result<FoldedScores, ScoreError> {
    let task = task.unwrap_or(DEFAULT_TASK);
    let sql = fill_template(FOLD_SCORES, &[("task_folds", task_folds(task, folds))]);
    let rows = query_json(ctx, &sql).await.map_err(|source| ScoreError::Task { task: task.to_owned(), source })?;
    let mut signals: Vec<SignalFolds> = Vec::new();
    for row in rows {
        let signal = row.get("signal").and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        let fold = serde_json::from_value::<FoldScore>(row)?;
        match signals.last_mut() {
            Some(last) if last.signal == signal => last.folds.push(fold),
            _ => signals.push(SignalFolds { signal, folds: vec![fold], folds_below_lift_2: 0 }),
        }
    }
    for s in &mut signals {
        s.folds_below_lift_2 = s.folds.iter().filter(|f| f.lift().is_some_and(|l| l < 2.0)).count();
    }
    // In the order of the overall scores.
    let rank = |signal: &str| order.signals.iter().position(|s| s.signal == signal).unwrap_or(usize::MAX);
    signals.sort_by_key(|s| rank(&s.signal));
    Ok(FoldedScores { folds, task: task.to_owned(), signals })
}

impl FoldedScores {
    /// Per signal, the lift and the share of failed sessions flagged in each fold, with
    /// their range.
    pub fn to_terminal(&self) -> String {
        let mut out = format!("\n{} folds by task ({})", self.folds, self.task);
        if let Some(first) = self.signals.first() {
            let sizes: Vec<String> = first.folds.iter().map(|f| format!("{} tasks, {}/{}", f.tasks, f.failed, f.succeeded)).collect();
            out.push_str(&format!("; failed/succeeded sessions per fold: {}", sizes.join(" · ")));
        }
        out.push_str("\n\n");
        let width = self.folds as usize * 6;
        out.push_str(&format!(
            "{:<26} {:<width$} {:>11}   {:<width$} {:>11}\n",
            "signal", "lift by fold", "min–max", "failed flagged by fold", "min–max"
        ));
        let lift_text = |f: &FoldScore| match (f.lift(), f.failed_flagged) {
            (Some(l), _) => format!("{l:.1}"),
            (None, 0) => "–".to_owned(),
            (None, _) => "∞".to_owned(),
        };
        for s in &self.signals {
            let lifts: Vec<String> = s.folds.iter().map(|f| format!("{:>5}", lift_text(f))).collect();
            let rates: Vec<f64> = s.folds.iter().filter_map(FoldScore::failed_rate).collect();
            let shares: Vec<String> = rates.iter().map(|r| format!("{:>4.0}%", r * 100.0)).collect();
            // Folds that flag anything: a fold that flags successful sessions only has lift 0.
            let lift_values: Vec<f64> =
                s.folds.iter().filter(|f| f.failed_flagged + f.succeeded_flagged > 0).map(|f| f.lift().unwrap_or(f64::INFINITY)).collect();
            let range = |values: &[f64], show: &dyn Fn(f64) -> String| match (
                values.iter().copied().reduce(f64::min),
                values.iter().copied().reduce(f64::max),
            ) {
                (Some(lo), Some(hi)) => format!("{}–{}", show(lo), show(hi)),
                _ => "–".to_owned(),
            };
            let lift = |l: f64| if l.is_infinite() { "∞".to_owned() } else { format!("{l:.1}") };
            out.push_str(&format!(
                "{:<26} {:<width$} {:>11}   {:<width$} {:>11}\n",
                s.signal,
                lifts.join(" "),
                range(&lift_values, &lift),
                shares.join(" "),
                range(&rates, &|r| format!("{:.0}%", r * 100.0))
            ));
        }
        let weak: Vec<String> =
            self.signals.iter().filter(|s| s.signal != "(any)" && s.folds_below_lift_2 > 1).map(|s| s.signal.clone()).collect();
        if !weak.is_empty() {
            out.push_str(&format!("\nlift below 2 in more than one fold: {}\n", weak.join(", ")));
        }
        out
    }
}
