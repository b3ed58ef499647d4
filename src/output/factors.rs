//! `tracelake factors`: for every value of every factor (`session_factors`, and the user's
//! factor files), how the scored sessions with it fared against the others: sessions,
//! failure rate with its 95 % Wilson interval, lift against the rest, Fisher's exact
//! p-value and its Benjamini–Hochberg q-value across every value tested.

use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::score::ScoreError;
use super::stats::{benjamini_hochberg, fisher_exact, probability_text, supported, wilson_interval};
use crate::engine::query_json;

/// One value of one factor against the other scored sessions.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactorScore {
    pub factor: String,
    pub value: String,
    /// Scored sessions with this value, and how many of them failed.
    pub sessions: u64,
    pub failed: u64,
    pub failure_rate: f64,
    /// The 95 % Wilson interval of the failure rate.
    pub ci_low: f64,
    pub ci_high: f64,
    /// The failure rate over that of the other scored sessions; `None` when none of
    /// those failed.
    pub lift: Option<f64>,
    /// The failure rate's interval over the others' rate: the lift's interval, the
    /// others' rate taken as known.
    pub lift_low: Option<f64>,
    pub lift_high: Option<f64>,
    pub p_value: f64,
    /// The Benjamini–Hochberg adjusted p-value across every value tested.
    pub q_value: f64,
}

impl FactorScore {
    /// `74.2 % (64.5–82.0 %)`: the failure rate and its interval.
    pub fn rate_text(&self) -> String {
        format!("{:.1} % ({:.1}–{:.1} %)", 100.0 * self.failure_rate, 100.0 * self.ci_low, 100.0 * self.ci_high)
    }

    /// `1.69`, or `∞` when no other session failed.
    pub fn lift_text(&self) -> String {
        self.lift.map_or("∞".to_owned(), |l| format!("{l:.2}"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FactorReport {
    pub sessions_scored: u64,
    pub failed: u64,
    /// Values at or above the support, most telling first.
    pub factors: Vec<FactorScore>,
    /// Values held or lacked by fewer scored sessions than the support, which were not
    /// tested.
    pub not_tested: u64,
    pub min_support: u64,
}

/// Every factor: `session_factors` and the user's factor queries (`session`, `factor`,
/// `value` each), as one query.
pub fn factors_query(extra: &[String]) -> String {
    std::iter::once("SELECT session, factor, value FROM session_factors".to_owned())
        .chain(extra.iter().map(|sql| {
            format!(
                "SELECT CAST(session AS VARCHAR) AS session, CAST(factor AS VARCHAR) AS factor, CAST(value AS VARCHAR) AS value FROM ({sql})"
            )
        }))
        .collect::<Vec<_>>()
        .join(" UNION ALL ")
}

/// The q-value under which a factor value stands out: one in twenty of those that do may be
/// chance.
const FALSE_DISCOVERY_RATE: f64 = 0.05;

/// Whether any tested value stands out, in a sentence: a table of the most telling values
/// reads as findings even when none is more than chance.
pub fn standing_out_sentence(standing_out: usize, failed: u64) -> String {
    let (percent, q) = (FALSE_DISCOVERY_RATE * 100.0, FALSE_DISCOVERY_RATE);
    match standing_out {
        0 => format!(
            "None of them stands out at a false discovery rate of {percent} % (every q is {q} or more): with {failed} failed sessions, \
             their differences may be chance."
        ),
        1 => format!("One of them stands out at a false discovery rate of {percent} % (q under {q})."),
        n => format!("{n} of them stand out at a false discovery rate of {percent} % (q under {q})."),
    }
}

/// Scores every factor value held by at least `min_support` scored sessions and lacked by
/// as many; `extra` are the user's factor queries (each `session, factor, value`).
pub async fn factor_scores(ctx: &SessionContext, extra: &[String], min_support: u64) -> Result<FactorReport, ScoreError> {
    let totals = query_json(ctx, "SELECT count(*) AS n, count(*) FILTER (WHERE failed) AS failed FROM scored_sessions").await?;
    let total = |key: &str| totals.first().and_then(|r| r[key].as_u64()).unwrap_or(0);
    let (scored, failed_total) = (total("n"), total("failed"));
    if scored == 0 {
        return Err(ScoreError::NoOutcomes);
    }
    let factors = factors_query(extra);
    let counts = query_json(
        ctx,
        &format!(
            "WITH factors AS ({factors}) \
             SELECT f.factor, f.value, count(DISTINCT f.session) AS sessions, count(DISTINCT f.session) FILTER (WHERE s.failed) AS failed \
             FROM factors f JOIN scored_sessions s ON s.session = f.session WHERE f.value IS NOT NULL GROUP BY f.factor, f.value"
        ),
    )
    .await?;
    let mut not_tested = 0;
    let mut tested = Vec::new();
    for row in counts {
        let (n, k) = (row["sessions"].as_u64().unwrap_or(0), row["failed"].as_u64().unwrap_or(0));
        if !supported(n, scored, min_support) {
            not_tested += 1;
            continue;
        }
        let (rest, rest_failed) = (scored - n, failed_total - k);
        let (ci_low, ci_high) = wilson_interval(k, n, 0.95);
        let rate = k as f64 / n as f64;
        let rest_rate = rest_failed as f64 / rest as f64;
        tested.push(FactorScore {
            factor: row["factor"].as_str().unwrap_or_default().to_owned(),
            value: row["value"].as_str().unwrap_or_default().to_owned(),
            sessions: n,
            failed: k,
            failure_rate: rate,
            ci_low,
            ci_high,
            lift: (rest_rate > 0.0).then(|| rate / rest_rate),
            lift_low: (rest_rate > 0.0).then(|| ci_low / rest_rate),
            lift_high: (rest_rate > 0.0).then(|| ci_high / rest_rate),
            p_value: fisher_exact([[k, n - k], [rest_failed, rest - rest_failed]]),
            q_value: 1.0,
        });
    }
    let q = benjamini_hochberg(&tested.iter().map(|f| f.p_value).collect::<Vec<_>>());
    for (score, q) in tested.iter_mut().zip(q) {
        score.q_value = q;
    }
    tested.sort_by(|a, b| {
        let lift = |f: &FactorScore| f.lift.unwrap_or(f64::INFINITY);
        a.q_value
            .total_cmp(&b.q_value)
            .then(a.p_value.total_cmp(&b.p_value))
            .then(lift(b).total_cmp(&lift(a)))
            .then(a.factor.cmp(&b.factor))
            .then(a.value.cmp(&b.value))
    });
    Ok(FactorReport { sessions_scored: scored, failed: failed_total, factors: tested, not_tested, min_support })
}

impl FactorReport {
    /// How many values stand out at the [`FALSE_DISCOVERY_RATE`].
    pub fn standing_out(&self) -> usize {
        self.factors.iter().filter(|f| f.q_value < FALSE_DISCOVERY_RATE).count()
    }

    /// The report as a table for the terminal.
    pub fn to_terminal(&self) -> String {
        let mut out = format!(
            "{} sessions with a known outcome, {} failed ({:.1} %); factor values held by at least {} of them and lacked by as many, most telling first\n\n",
            self.sessions_scored,
            self.failed,
            100.0 * self.failed as f64 / self.sessions_scored as f64,
            self.min_support
        );
        let width = self.factors.iter().map(|f| f.factor.len() + f.value.len() + 3).max().unwrap_or(10).max(12);
        out.push_str(&format!(
            "{:<width$} {:>8}  {:>24}  {:>6}  {:>9}  {:>9}\n",
            "factor = value", "sessions", "failure rate (95 % CI)", "lift", "p", "q"
        ));
        for f in &self.factors {
            let lift = f.lift.map_or("∞".to_owned(), |l| format!("{l:.2}"));
            out.push_str(&format!(
                "{:<width$} {:>8}  {:>5.1} % ({:>4.1}–{:>5.1} %)  {lift:>6}  {:>9}  {:>9}\n",
                format!("{} = {}", f.factor, f.value),
                f.sessions,
                100.0 * f.failure_rate,
                100.0 * f.ci_low,
                100.0 * f.ci_high,
                probability_text(f.p_value, 4),
                probability_text(f.q_value, 4),
            ));
        }
        out.push_str(&format!("\n{}\n", standing_out_sentence(self.standing_out(), self.failed)));
        if self.not_tested > 0 {
            out.push_str(&format!(
                "\n{} values held or lacked by fewer than {} scored sessions were not tested (--min-support)\n",
                self.not_tested, self.min_support
            ));
        }
        out
    }

    /// The report as CSV with a header.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("factor,value,sessions,failed,failure_rate,ci_low,ci_high,lift,p_value,q_value\n");
        for f in &self.factors {
            out.push_str(&format!(
                "{},{},{},{},{},{},{},{},{},{}\n",
                csv_field(&f.factor),
                csv_field(&f.value),
                f.sessions,
                f.failed,
                f.failure_rate,
                f.ci_low,
                f.ci_high,
                f.lift.map_or(String::new(), |l| l.to_string()),
                f.p_value,
                f.q_value
            ));
        }
        out
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}
