//! A risk score per session: an L2-regularized logistic regression (`linfa-logistic`) of
//! failure on the session's factor values (`session_factors`, signals included), with its
//! cross-validated AUC over folds that keep each task's sessions together, as `score
//! --folds` deals them.

use std::collections::{BTreeSet, HashMap};

use datafusion::prelude::SessionContext;
use linfa::prelude::*;
use linfa_logistic::LogisticRegression;
use ndarray::{Array1, Array2};
use serde::Serialize;

use super::factors::factors_query;
use super::score::{DEFAULT_TASK, ScoreError, task_folds};
use super::stats::roc_auc;
use crate::engine::query_json;
use crate::lake::risk::SessionRisk;

/// The L2 penalty: strong enough that a factor held by a few sessions cannot decide alone.
const ALPHA: f64 = 1.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RiskReport {
    pub sessions_scored: u64,
    /// Factor values the model weighs: those held by at least `min_support` scored
    /// sessions and not by all.
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
    let factors = factors_query(extra);
    let rows =
        query_json(ctx, &format!("SELECT session, factor || '=' || value AS feature FROM ({factors}) WHERE value IS NOT NULL")).await?;
    let mut features_of: HashMap<String, BTreeSet<String>> = HashMap::new();
    for row in rows {
        let session = row["session"].as_str().unwrap_or_default().to_owned();
        features_of.entry(session).or_default().insert(row["feature"].as_str().unwrap_or_default().to_owned());
    }
    let mut support: HashMap<&str, u64> = HashMap::new();
    for session in scored.keys() {
        for feature in features_of.get(session).into_iter().flatten() {
            *support.entry(feature).or_default() += 1;
        }
    }
    let columns: Vec<String> = {
        let mut kept: Vec<String> =
            support.iter().filter(|(_, n)| **n >= min_support && **n < scored.len() as u64).map(|(f, _)| (*f).to_owned()).collect();
        kept.sort();
        kept
    };
    let index: HashMap<&str, usize> = columns.iter().enumerate().map(|(i, f)| (f.as_str(), i)).collect();
    let mut sessions: Vec<&String> = features_of.keys().collect();
    sessions.sort();
    let row_of = |session: &str| -> Vec<f64> {
        let mut row = vec![0.0; columns.len()];
        for feature in features_of.get(session).into_iter().flatten() {
            if let Some(&i) = index.get(feature.as_str()) {
                row[i] = 1.0;
            }
        }
        row
    };
    let matrix = |of: &[&String]| -> Array2<f64> {
        let flat: Vec<f64> = of.iter().flat_map(|s| row_of(s)).collect();
        Array2::from_shape_vec((of.len(), columns.len()), flat).expect("rows of equal length")
    };
    let scored_sessions: Vec<&String> = sessions.iter().copied().filter(|s| scored.contains_key(*s)).collect();

    // Out of fold: each fold's sessions scored by a model fitted on the other folds.
    let (mut oof_risk, mut oof_failed) = (Vec::new(), Vec::new());
    for fold in 1..=folds {
        let (test, train): (Vec<&String>, Vec<&String>) = scored_sessions.iter().partition(|s| scored[**s].1 == fold);
        if test.is_empty() {
            continue;
        }
        let labels: Vec<bool> = train.iter().map(|s| scored[*s].0).collect();
        if let Some(risks) = fit_and_score(&matrix(&train), &labels, &matrix(&test)) {
            oof_risk.extend(risks);
            oof_failed.extend(test.iter().map(|s| scored[*s].0));
        }
    }
    let labels: Vec<bool> = scored_sessions.iter().map(|s| scored[*s].0).collect();
    let all_risks = fit_and_score(&matrix(&scored_sessions), &labels, &matrix(&sessions)).unwrap_or_else(|| vec![0.5; sessions.len()]);
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
        features: columns.len(),
        folds,
        cross_validated_auc: roc_auc(&oof_risk, &oof_failed),
        riskiest_without_finding: riskiest,
        risks,
    })
}

/// The probability of failure of each row of `score`, from a model fitted on `train`;
/// `None` when the training sessions hold one outcome only.
fn fit_and_score(train: &Array2<f64>, failed: &[bool], score: &Array2<f64>) -> Option<Vec<f64>> {
    let dataset = Dataset::new(train.clone(), Array1::from(failed.to_vec()));
    let model = LogisticRegression::default().alpha(ALPHA).max_iterations(200).fit(&dataset).ok()?;
    // The model's probabilities are of its larger class.
    let failure_is_positive = model.labels().pos.class;
    Some(model.predict_probabilities(score).iter().map(|p| if failure_is_positive { *p } else { 1.0 - p }).collect())
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
