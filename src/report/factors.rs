//! The report's factors section, when some sessions have a known outcome: the factor values
//! that go with failure (`tracelake factors`) and the riskiest sessions no signal flagged
//! (`tracelake risk`), with their transcripts.

use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::engine::computed_once::ComputedOnce;
use crate::output::factors::{FactorScore, factor_scores, standing_out_sentence};
use crate::output::outcome_source::{OutcomeSource, use_outcomes};
use crate::output::risk::{RiskReport, known_outcome, session_risks};
use crate::output::score::ScoreError;
use crate::output::stats::probability_text;
use crate::report::text::clip;

/// Factor values shown at most, most telling first.
const TOP_FACTORS: usize = 15;
/// Riskiest sessions without a finding shown at most.
const TOP_RISKIEST: usize = 10;
/// As `tracelake factors` and `risk` by default.
const MIN_SUPPORT: u64 = 5;
const FOLDS: u64 = 5;

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactorSection {
    /// The outcomes scored against: `imported`, or `inferred` (from what the users said
    /// next) when the lake has none imported.
    pub outcomes: &'static str,
    pub sessions_scored: u64,
    pub failed: u64,
    pub min_support: u64,
    /// The most telling factor values.
    pub factors: Vec<FactorScore>,
    /// Factor values tested in all.
    pub tested: usize,
    /// Those that stand out at a false discovery rate of 5 %.
    pub standing_out: usize,
    pub risk: RiskReport,
}

/// The section over the imported outcomes, or the inferred ones when none were imported;
/// `None` when no session has an outcome.
pub async fn factor_section(ctx: &SessionContext) -> Result<Option<FactorSection>, ScoreError> {
    for (source, outcomes) in [(OutcomeSource::Imported, "imported"), (OutcomeSource::Inferred, "inferred")] {
        use_outcomes(ctx, source).await?;
        // Both the factor scores and the risk model read these: computed once for both.
        let scored = ComputedOnce::new(ctx, "scored_sessions").await?;
        if scored.rows == 0 {
            continue;
        }
        let _factors = ComputedOnce::new(ctx, "session_factors").await?;
        let mut scores = factor_scores(ctx, &[], MIN_SUPPORT).await?;
        let risk = session_risks(ctx, &[], FOLDS, None, MIN_SUPPORT, TOP_RISKIEST).await?;
        let (tested, standing_out) = (scores.factors.len(), scores.standing_out());
        scores.factors.truncate(TOP_FACTORS);
        return Ok(Some(FactorSection {
            outcomes,
            sessions_scored: scores.sessions_scored,
            failed: scores.failed,
            min_support: MIN_SUPPORT,
            factors: scores.factors,
            tested,
            standing_out,
            risk,
        }));
    }
    Ok(None)
}

impl FactorSection {
    /// What was scored, in a sentence.
    pub fn scored(&self) -> String {
        let with = match self.outcomes {
            "inferred" => "an outcome inferred from their users' words (none was imported)",
            _ => "an imported outcome",
        };
        format!(
            "{} sessions with {with}, {} failed ({:.1} %)",
            self.sessions_scored,
            self.failed,
            100.0 * self.failed as f64 / self.sessions_scored.max(1) as f64
        )
    }

    /// The heading of the riskiest sessions' outcomes.
    pub fn outcome_heading(&self) -> String {
        format!("outcome ({})", self.outcomes)
    }

    /// Whether any value stands out, in a sentence.
    pub fn standing_out_text(&self) -> String {
        standing_out_sentence(self.standing_out, self.failed)
    }

    /// The cross-validated AUC of the risk model, in words.
    pub fn auc(&self) -> String {
        self.risk.cross_validated_auc.map_or("not measurable (too few sessions of one outcome)".to_owned(), |a| format!("{a:.3}"))
    }

    pub fn to_markdown(&self) -> String {
        let mut md = format!(
            "\n## What goes with failure\n\n{}. The {} most telling of {} factor values held by at least {} of them and lacked by as many \
             (`tracelake factors` lists all). {}\n\n| factor = value | sessions | failure rate (95 % CI) | lift | q |\n|---|---|---|---|---|\n",
            self.scored(),
            self.factors.len(),
            self.tested,
            self.min_support,
            self.standing_out_text()
        );
        for f in &self.factors {
            md.push_str(&format!(
                "| {} = {} | {} | {} | {} | {} |\n",
                f.factor,
                clip(&f.value, 60).replace('|', "\\|"),
                f.sessions,
                f.rate_text(),
                f.lift_text(),
                probability_text(f.q_value, 3)
            ));
        }
        md.push_str(&format!(
            "\nRisk model (`tracelake risk`): cross-validated AUC over {} folds by task {}.\n",
            self.risk.folds,
            self.auc()
        ));
        if !self.risk.riskiest_without_finding.is_empty() {
            md.push_str(&format!("\n| risk | session without a finding | {} |\n|---|---|---|\n", self.outcome_heading()));
            for s in &self.risk.riskiest_without_finding {
                md.push_str(&format!("| {:.1} % | {} | {} |\n", 100.0 * s.risk, s.session, known_outcome(s.failed)));
            }
        }
        md
    }
}
