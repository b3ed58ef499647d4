//! How well the findings separate failed sessions from successful ones, from the
//! `signal_scores` view (sql/outputs/signal_scores.sql) over the imported outcomes.

use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::engine::{EngineError, query_json};

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
        signals.push(serde_json::from_value::<SignalScore>(row)?);
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
            "{:<26} {:>18} {:>18} {:>7} {:>17}\n",
            "signal", "failed flagged", "succeeded flagged", "lift", "findings/session"
        ));
        let share = |n: u64, of: u64, rate: Option<f64>| format!("{n}/{of} {:>5.1} %", rate.unwrap_or(0.0) * 100.0);
        for s in &self.signals {
            let lift = match (s.lift, s.failed_flagged) {
                (Some(l), _) => format!("{l:.2}"),
                (None, 0) => "–".to_owned(),
                (None, _) => "∞".to_owned(),
            };
            out.push_str(&format!(
                "{:<26} {:>18} {:>18} {:>7} {:>17.2}\n",
                s.signal,
                share(s.failed_flagged, s.failed, s.failed_rate),
                share(s.succeeded_flagged, s.succeeded, s.succeeded_rate),
                lift,
                s.findings_per_session.unwrap_or(0.0)
            ));
        }
        if self.signals.iter().all(|s| s.findings == 0) {
            out.push_str("\nno findings in the scored sessions: run `tracelake analyze` first\n");
        }
        out
    }
}
