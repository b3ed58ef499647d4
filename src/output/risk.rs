//! A risk score per session: an L2-regularized logistic regression (`logistic`) of
//! failure on the session's factor values (`session_factors`, signals included), with its
//! cross-validated AUC over folds that keep each task's sessions together, as `score
//! --folds` deals them.

use std::collections::{BTreeSet, HashMap};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::factors::factors_query;
use super::logistic;
use super::score::{DEFAULT_TASK, ScoreError, task_folds};
use super::stats::{roc_auc, supported};
use crate::engine::query_json;
use crate::lake::risk::SessionRisk;

/// The L2 penalty: strong enough that a factor held by a few sessions cannot decide alone.
const ALPHA: f64 = 1.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RiskReport {
    pub sessions_scored: u64,
    /// Factor values the model weighs: those held by at least `min_support` scored
    /// sessions and lacked by as many.
    pub features: usize,
    pub folds: u64,
    /// The AUC of the out-of-fold risks: the chance that a failed session is ranked above
    /// a successful one by a model that never saw its task.
    pub cross_validated_auc: Option<f64>,
    /// The riskiest sessions without a finding, riskiest first: the failures the signals
    /// may miss.
    pub riskiest_without_finding: Vec<SessionRisk>,
    /// Every session's risk, riskiest first (what `session_risk` holds).
    #[serde(skip)]
    pub risks: Vec<SessionRisk>,
}

/// Fits the model and scores every session; `extra` are the user's factor queries (each
/// `session, factor, value`), `task` is the SQL expression over `session` naming a
/// session's task.
pub async fn session_risks(
    ctx: &SessionContext,
    extra: &[String],
    folds: u64,
    task: Option<&str>,
    min_support: u64,
    top: usize,
) -> Result<RiskReport, ScoreError> {
    let task = task.unwrap_or(DEFAULT_TASK);
    let scored: HashMap<String, (bool, u64)> = query_json(ctx, &task_folds(task, folds))
        .await
        .map_err(|source| ScoreError::Task { task: task.to_owned(), source })?
        .into_iter()
        .map(|r| (r["session"].as_str().unwrap_or_default().to_owned(), (r["failed"] == true, r["fold"].as_u64().unwrap_or(1))))
        .collect();
    if scored.is_empty() {
        return Err(ScoreError::NoOutcomes);
    }
    let values = session_values(ctx, &factors_query(extra)).await?;
    let mut support = vec![0u64; values.names.len()];
    for ids in scored.keys().filter_map(|s| values.of.get(s)) {
        for &id in ids {
            support[id] += 1;
        }
    }
    // The model's features: the values held and lacked by enough scored sessions, by name.
    let mut kept: Vec<usize> = (0..values.names.len()).filter(|&id| supported(support[id], scored.len() as u64, min_support)).collect();
    kept.sort_by(|a, b| values.names[*a].cmp(&values.names[*b]));
    let mut column_of = vec![None; values.names.len()];
    for (column, &id) in kept.iter().enumerate() {
        column_of[id] = Some(column);
    }
    let mut sessions: Vec<&String> = values.of.keys().collect();
    sessions.sort();
    // Each session's row: the columns of the model's features it holds.
    let rows: HashMap<&str, Vec<usize>> = values
        .of
        .iter()
        .map(|(session, ids)| {
            let mut row: Vec<usize> = ids.iter().filter_map(|&id| column_of[id]).collect();
            row.sort_unstable();
            row.dedup();
            (session.as_str(), row)
        })
        .collect();
    let rows_of = |of: &[&String]| -> Vec<&[usize]> { of.iter().map(|s| rows[s.as_str()].as_slice()).collect() };
    let scored_sessions: Vec<&String> = sessions.iter().copied().filter(|s| scored.contains_key(*s)).collect();

    // Out of fold: each fold's sessions scored by a model fitted on the other folds.
    let (mut oof_risk, mut oof_failed) = (Vec::new(), Vec::new());
    for fold in 1..=folds {
        let (test, train): (Vec<&String>, Vec<&String>) = scored_sessions.iter().partition(|s| scored[**s].1 == fold);
        if test.is_empty() {
            continue;
        }
        let labels: Vec<bool> = train.iter().map(|s| scored[*s].0).collect();
        if let Some(model) = logistic::fit(&rows_of(&train), &labels, kept.len(), ALPHA) {
            oof_risk.extend(rows_of(&test).into_iter().map(|row| model.probability(row)));
            oof_failed.extend(test.iter().map(|s| scored[*s].0));
        }
    }
    let labels: Vec<bool> = scored_sessions.iter().map(|s| scored[*s].0).collect();
    let all_risks: Vec<f64> = match logistic::fit(&rows_of(&scored_sessions), &labels, kept.len(), ALPHA) {
        Some(model) => rows_of(&sessions).into_iter().map(|row| model.probability(row)).collect(),
        None => vec![0.5; sessions.len()],
    };
    let flagged: BTreeSet<String> = query_json(ctx, "SELECT DISTINCT session FROM findings")
        .await?
        .into_iter()
        .filter_map(|r| r["session"].as_str().map(str::to_owned))
        .collect();
    let mut risks: Vec<SessionRisk> = sessions
        .iter()
        .zip(all_risks)
        .map(|(s, risk)| SessionRisk {
            session: (*s).clone(),
            risk,
            failed: scored.get(*s).map(|(f, _)| *f),
            flagged: flagged.contains(s.as_str()),
        })
        .collect();
    risks.sort_by(|a, b| b.risk.total_cmp(&a.risk).then(a.session.cmp(&b.session)));
    let riskiest = risks.iter().filter(|r| !r.flagged).take(top).cloned().collect();
    Ok(RiskReport {
        sessions_scored: scored.len() as u64,
        features: kept.len(),
        folds,
        cross_validated_auc: roc_auc(&oof_risk, &oof_failed),
        riskiest_without_finding: riskiest,
        risks,
    })
}

/// Each session's factor values (`factor=value`), as indices into `names`.
struct SessionValues {
    names: Vec<String>,
    of: HashMap<String, Vec<usize>>,
}

async fn session_values(ctx: &SessionContext, factors: &str) -> Result<SessionValues, ScoreError> {
    let sql = format!("SELECT session, factor || '=' || value AS feature FROM ({factors}) WHERE value IS NOT NULL");
    let mut values = SessionValues { names: Vec::new(), of: HashMap::new() };
    let mut id_of: HashMap<String, usize> = HashMap::new();
    for batch in ctx.sql(&sql).await?.collect().await? {
        let text = |i: usize| cast(batch.column(i), &DataType::Utf8).map_err(DataFusionError::from);
        let (session, feature) = (text(0)?, text(1)?);
        for (session, feature) in session.as_string::<i32>().iter().zip(feature.as_string::<i32>().iter()) {
            let (Some(session), Some(feature)) = (session, feature) else { continue };
            let id = match id_of.get(feature) {
                Some(&id) => id,
                None => {
                    values.names.push(feature.to_owned());
                    id_of.insert(feature.to_owned(), values.names.len() - 1);
                    values.names.len() - 1
                }
            };
            match values.of.get_mut(session) {
                Some(ids) => ids.push(id),
                None => {
                    values.of.insert(session.to_owned(), vec![id]);
                }
            }
        }
    }
    Ok(values)
}

impl RiskReport {
    pub fn to_terminal(&self) -> String {
        let auc = self.cross_validated_auc.map_or("– (too few sessions of one outcome in the folds)".to_owned(), |a| format!("{a:.3}"));
        let mut out = format!(
            "risk model: logistic regression (L2, alpha {ALPHA}) on {} factor values of {} scored sessions\n\
             cross-validated AUC over {} folds by task: {auc}\n",
            self.features, self.sessions_scored, self.folds
        );
        if !self.riskiest_without_finding.is_empty() {
            out.push_str("\nriskiest sessions without a finding:\n");
            for s in &self.riskiest_without_finding {
                out.push_str(&format!("  {:>5.1} %  {}  ({})\n", 100.0 * s.risk, s.session, known_outcome(s.failed)));
            }
        }
        out
    }
}

/// A session's known outcome in a word.
pub fn known_outcome(failed: Option<bool>) -> &'static str {
    match failed {
        Some(true) => "failed",
        Some(false) => "succeeded",
        None => "no outcome",
    }
}
