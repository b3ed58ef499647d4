//! `tracelake report`: the lake's findings, classifications, artifacts and rule
//! effectiveness as one report (JSON, Markdown, or a self-contained HTML page with charts).

pub mod analysis;
pub mod anonymize;
pub mod cortex;
pub mod factors;
pub mod html;
pub mod json;
pub mod text;

use std::collections::BTreeMap;

use futures::TryStreamExt;

use serde::Serialize;
use serde_json::Value;

use crate::classify::stage::{chain_transcripts, session_transcripts};
use crate::classify::{ActionType, Classification, FindingVerdict, TranscriptEvent};
use crate::config::Config;
use crate::detect::DetectError;
use crate::engine::chains::{
    BucketPlans, Buckets, CHAIN_STATS_QUERY, ChainStats, Increment, Slice, build_chains, chain_stats_of, define_analysis_events,
};
use crate::engine::sql::SqlParams;
use crate::engine::{EngineError, EngineOptions, batches_json, open_session, pool_exhausted, query_json};
use crate::lake::Lake;
use crate::lake::history::{AsOf, lake_as_of_shared};
use crate::lake::state_log;
use crate::model::Finding;
use crate::output::GeneratedOutput;
use crate::output::effectiveness::rule_effectiveness;
use crate::output::score::ScoreError;
use crate::redact::Redactor;
use analysis::{AnalysisReport, FindingCounts, ReportParts};
use cortex::{AgentCortex, agent_cortex};
use factors::factor_section;

/// Everything a report shows.
#[derive(Debug, Clone)]
pub struct LakeReport {
    pub report: AnalysisReport,
    pub charts: Charts,
    /// The events of each reported finding's chain.
    pub transcripts: BTreeMap<String, Vec<TranscriptEvent>>,
    /// The events of each riskiest session without a finding (the factors section).
    pub session_transcripts: BTreeMap<String, Vec<TranscriptEvent>>,
    /// Each agent's open threads, decisions and moods.
    pub cortex: Vec<AgentCortex>,
    /// The optional sections that could not be made, each with why.
    pub left_out: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error(transparent)]
    Factors(#[from] ScoreError),
}

/// Events of a session shown at most in its transcript.
const SESSION_TRANSCRIPT_EVENTS: usize = 200;

/// The data behind the HTML charts.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Charts {
    /// `{bucket, signal, count}` over time: 10 minutes, hours or days, as the span needs.
    pub findings_over_time: Vec<Value>,
    /// `{agent, severity, count}`.
    pub by_agent_severity: Vec<Value>,
    /// `{tool, failures}`, most failures first.
    pub failing_tools: Vec<Value>,
    /// `{bucket, chains}` over chain lengths.
    pub chain_lengths: Vec<Value>,
}

const FINDINGS_SQL: &str = "SELECT finding_id, run_id, signal, severity, chain_id, agent, session, start_idx, end_idx, \
     start_event_id, end_event_id, CAST(occurred_at AS BIGINT) AS occurred_at, CAST(detected_at AS BIGINT) AS detected_at, \
     summary, evidence, fingerprint FROM findings \
     ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END, occurred_at, finding_id";

/// Every finding counted per signal, severity and agent (the signal statistics).
const FINDING_COUNTS_SQL: &str = "SELECT signal, severity, agent, count(*) AS n FROM findings GROUP BY 1, 2, 3";

const CHART_SQL: [&str; 2] = [
    "SELECT agent, severity, count(*) AS count FROM findings GROUP BY 1, 2 ORDER BY 1, 2",
    "SELECT coalesce(tool_name, '(unknown)') AS tool, count(*) AS failures FROM events \
     WHERE type = 'tool.result' AND (tool_is_error OR tool_error IS NOT NULL) GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10",
];

/// The chain length histogram's buckets, in order.
const LENGTH_BUCKETS: [&str; 7] = ["2", "3-5", "6-10", "11-20", "21-50", "51-100", "101+"];

/// Chain lengths in the histogram's buckets: (label, chains).
const CHAIN_LENGTHS_SQL: &str = "SELECT CASE WHEN n_events <= 2 THEN '2' WHEN n_events <= 5 THEN '3-5' WHEN n_events <= 10 THEN '6-10' \
     WHEN n_events <= 20 THEN '11-20' WHEN n_events <= 50 THEN '21-50' WHEN n_events <= 100 THEN '51-100' ELSE '101+' END AS bucket, \
     count(*) AS chains FROM chains GROUP BY 1";

/// Reads the report from the lake: findings (most severe first, at most `max_findings`),
/// the latest verdict per finding, the latest run's artifacts, rule effectiveness, what
/// goes with failure when some sessions have an outcome, and each agent's threads.
pub async fn lake_report(
    lake: &Lake,
    config: &Config,
    redactor: Redactor,
    max_findings: usize,
    as_of: Option<AsOf>,
) -> Result<LakeReport, ReportError> {
    let (mut report, ctx) = findings_report(lake, config, redactor, max_findings, as_of).await?;
    // The factors section is optional: on a lake too large for it in the memory pool, the
    // rest of the report still stands. Any other failure (a damaged file) is the lake's.
    report.report.factors = match factor_section(&ctx).await {
        Ok(section) => section,
        Err(error) if out_of_memory(&error) => {
            report.left_out.push(format!("the factors section (what goes with failure): {error}"));
            None
        }
        Err(error) => return Err(error.into()),
    };
    report.cortex = agent_cortex(&ctx).await.map_err(DetectError::from)?;
    if let Some(section) = &report.report.factors {
        let sessions: Vec<&str> = section.risk.riskiest_without_finding.iter().map(|s| s.session.as_str()).collect();
        let transcripts = session_transcripts(&ctx, &sessions, SESSION_TRANSCRIPT_EVENTS).await.map_err(DetectError::from)?;
        report.session_transcripts = transcripts.into_iter().collect();
    }
    Ok(report)
}

/// Whether `error` is the memory pool's.
fn out_of_memory(error: &ScoreError) -> bool {
    match error {
        ScoreError::DataFusion(e) | ScoreError::Engine(EngineError::DataFusion(e)) => pool_exhausted(e),
        _ => false,
    }
}

/// The report without its factors and threads, and the session it was read in.
async fn findings_report(
    lake: &Lake,
    config: &Config,
    redactor: Redactor,
    max_findings: usize,
    as_of: Option<AsOf>,
) -> Result<(LakeReport, datafusion::prelude::SessionContext), DetectError> {
    let then = lake_as_of_shared(lake, as_of)?;
    let engine = EngineOptions { as_of: then.clone(), ..EngineOptions::from_config(config)? };
    let params = &engine.sql_params;
    let ctx = open_session(lake, redactor, &engine).await?;
    // The session's `runs` are those of the lake now, or as of `then`.
    let last_run = query_json(&ctx, "SELECT run_id FROM runs ORDER BY run_no DESC LIMIT 1")
        .await?
        .first()
        .and_then(|row| row["run_id"].as_str().map(str::to_owned));

    let mut findings: Vec<Finding> = Vec::new();
    for row in query_json(&ctx, &format!("{FINDINGS_SQL} LIMIT {max_findings}")).await? {
        findings.push(serde_json::from_value(row).map_err(DetectError::FindingRow)?);
    }
    let mut counts = FindingCounts::default();
    for row in query_json(&ctx, FINDING_COUNTS_SQL).await? {
        let text = |k: &str| row[k].as_str().unwrap_or_default().to_owned();
        counts.add(&text("signal"), &text("severity"), &text("agent"), row["n"].as_u64().unwrap_or(0) as usize);
    }
    let verdicts = latest_verdicts(&ctx).await?;
    let outputs = latest_outputs(&ctx, last_run.as_deref()).await?;
    let mut charts_data = vec![findings_over_time(&ctx).await?];
    for sql in CHART_SQL {
        charts_data.push(query_json(&ctx, sql).await?);
    }
    let (stats, lengths) = chain_lengths(&ctx, params).await?;
    charts_data.push(lengths);
    let [over_time, by_agent, tools, lengths] = <[Vec<Value>; 4]>::try_from(charts_data).expect("four charts");
    // Transcripts need only the chains of the findings shown.
    let sessions: Vec<String> = findings.iter().map(|f| f.session.clone()).collect();
    define_analysis_events(&ctx, &Increment::All, 0, &Slice::Sessions(&sessions)).await?;
    build_chains(&ctx, params).await?;
    let transcripts = chain_transcripts(&ctx, &findings).await?.into_iter().collect();
    let parts = ReportParts {
        run_id: last_run.unwrap_or_default(),
        started_at: 0,
        completed_at: chrono::Utc::now().timestamp_millis(),
        events_processed: stats.events,
        chains: stats.chains,
        time_range: (stats.first, stats.last),
        findings,
        counts,
        // As of a point in the past, the state its last analysis left.
        processing_state: match &then {
            Some(then) => then.analyses.last().and_then(|a| a.state_after.clone()).unwrap_or_default(),
            None => state_log::load(lake)?.processing_state,
        },
        verdicts,
        outputs,
        rule_effectiveness: rule_effectiveness(&ctx).await?,
    };
    let report = AnalysisReport::assemble(parts).at_lake(&lake.location());
    let report = LakeReport {
        report,
        charts: Charts { findings_over_time: over_time, by_agent_severity: by_agent, failing_tools: tools, chain_lengths: lengths },
        transcripts,
        session_transcripts: BTreeMap::new(),
        cortex: Vec::new(),
        left_out: Vec::new(),
    };
    Ok((report, ctx))
}

/// Findings per signal in time buckets sized to the span: 10 minutes up to 6 hours,
/// hours up to 3 days, days beyond.
async fn findings_over_time(ctx: &datafusion::prelude::SessionContext) -> Result<Vec<Value>, DetectError> {
    let span = query_json(ctx, "SELECT CAST(max(occurred_at) AS BIGINT) - CAST(min(occurred_at) AS BIGINT) AS ms FROM findings").await?;
    let span_ms = span.first().and_then(|r| r["ms"].as_i64()).unwrap_or(0);
    let (width, label) = match span_ms {
        ms if ms <= 6 * 3_600_000 => ("10 minutes", "%H:%M"),
        ms if ms <= 3 * 86_400_000 => ("1 hour", "%m-%d %H:00"),
        _ => ("1 day", "%Y-%m-%d"),
    };
    let sql = format!(
        "SELECT to_char(b, '{label}') AS bucket, signal, count FROM \
         (SELECT date_bin(INTERVAL '{width}', occurred_at, TIMESTAMP '2000-01-01T00:00:00Z') AS b, signal, count(*) AS count \
          FROM findings GROUP BY 1, 2) ORDER BY b, signal"
    );
    Ok(query_json(ctx, &sql).await?)
}

/// Chain counts and the chain length histogram over the whole lake, in buckets of sessions
/// as the analysis does, so memory stays bounded.
async fn chain_lengths(ctx: &datafusion::prelude::SessionContext, params: &SqlParams) -> Result<(ChainStats, Vec<Value>), DetectError> {
    define_analysis_events(ctx, &Increment::All, 0, &Slice::All).await?;
    let buckets = Buckets::split(ctx, 0).await?;
    let plans = std::sync::Arc::new(BucketPlans::new(ctx, params, buckets.schema()).await?);
    let queries = std::sync::Arc::new([plans.plan(CHAIN_STATS_QUERY).await?, plans.plan(CHAIN_LENGTHS_SQL).await?]);
    let mut stats = ChainStats::default();
    let mut histogram: BTreeMap<usize, i64> = BTreeMap::new();
    buckets
        .run(ctx, |events| {
            let (plans, queries) = (std::sync::Arc::clone(&plans), std::sync::Arc::clone(&queries));
            async move {
                let chains = plans.chains(events.read()?).await?;
                let [counts, lengths] = &*queries;
                let counted = chain_stats_of(&plans.query(counts, &chains).await?)?;
                Ok::<_, EngineError>((counted, batches_json(&plans.query(lengths, &chains).await?)?))
            }
        })
        .try_for_each(|(counted, rows)| {
            stats.add(counted);
            for row in rows {
                let label = row["bucket"].as_str().unwrap_or_default();
                let position = LENGTH_BUCKETS.iter().position(|b| *b == label).unwrap_or(LENGTH_BUCKETS.len() - 1);
                *histogram.entry(position).or_default() += row["chains"].as_i64().unwrap_or(0);
            }
            std::future::ready(Ok(()))
        })
        .await?;
    let rows = histogram.into_iter().map(|(i, chains)| serde_json::json!({"bucket": LENGTH_BUCKETS[i], "chains": chains})).collect();
    Ok((stats, rows))
}

/// The most recent classification of each finding.
async fn latest_verdicts(ctx: &datafusion::prelude::SessionContext) -> Result<Vec<FindingVerdict>, DetectError> {
    let sql = "SELECT finding_id, model, root_cause, action_type, action_text, confidence FROM \
        (SELECT *, row_number() OVER (PARTITION BY finding_id ORDER BY classified_at DESC) AS n FROM classifications \
         WHERE action_type IS NOT NULL) WHERE n = 1";
    Ok(query_json(ctx, sql)
        .await?
        .into_iter()
        .map(|row| {
            let text = |k: &str| row[k].as_str().unwrap_or_default().to_owned();
            let action_type = ActionType::parse(&text("action_type")).unwrap_or(ActionType::ManualReview);
            FindingVerdict {
                finding_id: text("finding_id"),
                triage: None,
                classification: Some(Classification {
                    root_cause: text("root_cause"),
                    action_type,
                    action_text: text("action_text"),
                    confidence: row["confidence"].as_f64().unwrap_or(0.5),
                    model: text("model"),
                }),
                error: None,
            }
        })
        .collect())
}

/// The artifacts of run `run_id`.
async fn latest_outputs(ctx: &datafusion::prelude::SessionContext, run_id: Option<&str>) -> Result<Vec<GeneratedOutput>, DetectError> {
    let Some(run_id) = run_id else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT output_id, type, content, signal, agents, source_findings, observation_count, confidence FROM outputs \
         WHERE run_id = {} ORDER BY type, output_id",
        crate::engine::sql::string_literal(run_id)
    );
    Ok(query_json(ctx, &sql)
        .await?
        .into_iter()
        .map(|row| {
            let text = |k: &str| row[k].as_str().unwrap_or_default().to_owned();
            GeneratedOutput {
                id: text("output_id"),
                output_type: ActionType::parse(&text("type")).unwrap_or(ActionType::ManualReview),
                content: text("content"),
                source_findings: serde_json::from_str(&text("source_findings")).unwrap_or_default(),
                observation_count: row["observation_count"].as_u64().unwrap_or(0) as usize,
                confidence: row["confidence"].as_f64().unwrap_or(0.0),
                signal: text("signal"),
                agents: text("agents").split(',').filter(|a| !a.is_empty()).map(str::to_owned).collect(),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::error::DataFusionError;

    #[test]
    fn only_the_memory_pools_failure_leaves_the_factors_out() {
        let exhausted = || DataFusionError::ResourcesExhausted("Failed to allocate additional 67.7 MB".into());
        assert!(out_of_memory(&ScoreError::DataFusion(exhausted())));
        assert!(out_of_memory(&ScoreError::Engine(EngineError::DataFusion(exhausted().context("aggregating")))));
        assert!(!out_of_memory(&ScoreError::DataFusion(DataFusionError::Execution("Parquet file too small".into()))));
        assert!(!out_of_memory(&ScoreError::NoOutcomes));
    }
}
