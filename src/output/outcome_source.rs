//! Which outcomes `score` and `factors` set the findings and factors against: the
//! imported ones, or also those inferred from the users' words; and how the inferred
//! ones agree with the imported ones where a session has both.

use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::score::ScoreError;
use super::stats::cohen_kappa;
use crate::engine::sql::{OUTCOMES_WITH_INFERRED, SIGNAL_SCORES};
use crate::engine::{query_json, run_statements};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutcomeSource {
    /// `tracelake outcomes import`.
    #[default]
    Imported,
    /// The imported ones, and the inferred ones of the sessions that have none.
    Inferred,
}

/// Redefines `session_outcomes` (and `signal_scores` over it) for `source`.
pub async fn use_outcomes(ctx: &SessionContext, source: OutcomeSource) -> Result<(), ScoreError> {
    if source == OutcomeSource::Inferred {
        run_statements(ctx, OUTCOMES_WITH_INFERRED, |_, _| Ok(())).await?;
        run_statements(ctx, SIGNAL_SCORES, |_, _| Ok(())).await?;
    }
    Ok(())
}

/// How the inferred session outcomes agree with the imported ones.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Agreement {
    /// Sessions with both an imported and an inferred outcome.
    pub sessions: u64,
    pub agreed: u64,
    pub accuracy: f64,
    /// Cohen's kappa, failure against success; none when both always say the same one.
    pub kappa: Option<f64>,
    /// Sessions with an imported outcome from whose words nothing could be inferred.
    pub not_inferred: u64,
}

/// The agreement, when some session has both outcomes.
pub async fn agreement(ctx: &SessionContext) -> Result<Option<Agreement>, ScoreError> {
    let sql = "SELECT \
        count(*) FILTER (WHERE i.outcome = 'failure' AND n.outcome = 'failure') AS both_failed, \
        count(*) FILTER (WHERE i.outcome = 'failure' AND n.outcome = 'success') AS failed_success, \
        count(*) FILTER (WHERE i.outcome <> 'failure' AND n.outcome = 'failure') AS success_failed, \
        count(*) FILTER (WHERE i.outcome <> 'failure' AND n.outcome = 'success') AS both_succeeded, \
        count(*) FILTER (WHERE n.outcome IS NULL) AS not_inferred \
        FROM imported_outcomes i LEFT JOIN inferred_session_outcomes n ON n.session = i.session \
        WHERE i.session IN (SELECT session FROM events)";
    let rows = query_json(ctx, sql).await?;
    let count = |key: &str| rows.first().and_then(|r| r[key].as_u64()).unwrap_or(0);
    let cells = [count("both_failed"), count("failed_success"), count("success_failed"), count("both_succeeded")];
    let sessions: u64 = cells.iter().sum();
    if sessions == 0 {
        return Ok(None);
    }
    let agreed = cells[0] + cells[3];
    Ok(Some(Agreement {
        sessions,
        agreed,
        accuracy: agreed as f64 / sessions as f64,
        kappa: cohen_kappa(cells[0], cells[1], cells[2], cells[3]),
        not_inferred: count("not_inferred"),
    }))
}

impl Agreement {
    pub fn to_terminal(&self) -> String {
        let kappa = self.kappa.map_or("–".to_owned(), |k| format!("{k:.2}"));
        format!(
            "inferred outcomes agree with the imported ones on {} of {} sessions (accuracy {:.1} %, Cohen's kappa {kappa}); {} sessions with an imported outcome had none inferred\n",
            self.agreed,
            self.sessions,
            100.0 * self.accuracy,
            self.not_inferred
        )
    }
}
