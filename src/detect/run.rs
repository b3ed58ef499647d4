//! Running detectors over chains: per bucket of sessions with plans made once
//! ([`BucketWork`]), or over a session's materialized chains ([`run_detectors`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::Schema;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

use super::detectors::Detector;
use super::{DetectError, DetectorFailure};
use crate::config::Config;
use crate::engine::EngineError;
use crate::engine::chains::{BucketEvents, BucketPlans, CHAIN_STATS_QUERY, ChainStats, chain_stats_of, newest_event_ms};
use crate::engine::cortex::cortex_messages_sql;
use crate::engine::sql::{SqlParams, query_only};
use crate::lake::schema::CORTEX_MESSAGES_SCHEMA;
use crate::model::Severity;
use crate::model::finding::{Finding, finding_id, from_detector_batch};

/// The severity the config gives a signal, by signal.
pub type Severities = BTreeMap<String, Severity>;

/// The severities `config` sets (`signals.NAME.severity`).
pub fn severities(config: &Config) -> Severities {
    config.signals.iter().filter_map(|(signal, s)| Some((signal.clone(), s.severity?))).collect()
}

/// A detector's plan, or why it has none (shared: it fails in every bucket).
pub type DetectorPlan = Result<Arc<dyn ExecutionPlan>, Arc<DetectorFailure>>;

/// User detectors that could not run: (file, why).
pub type SkippedDetectors = Vec<(String, Arc<DetectorFailure>)>;

/// What every bucket is analyzed with: the chain build and the queries over its chains,
/// planned once.
pub struct BucketWork {
    plans: BucketPlans,
    /// Each detector with its plan, or why it has none.
    detectors: Vec<(Detector, DetectorPlan)>,
    stats: Arc<dyn ExecutionPlan>,
    failures: Arc<dyn ExecutionPlan>,
    /// The `cortex_messages` rows of the messages no analysis saw before.
    cortex: Arc<dyn ExecutionPlan>,
    severities: Severities,
}

impl BucketWork {
    pub async fn plan(
        ctx: &SessionContext,
        events: &Schema,
        detectors: Vec<Detector>,
        severities: Severities,
        params: &SqlParams,
        cortex_fresh_only: bool,
    ) -> Result<Self, DetectError> {
        let plans = BucketPlans::new(ctx, params, events).await?;
        let mut planned = Vec::new();
        // One that cannot be planned fails in every bucket: a built-in one fails the run.
        for detector in detectors {
            let plan = plans.plan(&params.fill(&detector.sql)).await.map_err(|e| Arc::new(e.into()));
            planned.push((detector, plan));
        }
        Ok(Self {
            stats: plans.plan(CHAIN_STATS_QUERY).await?,
            failures: plans.plan(FAILURES_QUERY).await?,
            cortex: plans.plan(&cortex_messages_sql(cortex_fresh_only)).await?,
            plans,
            detectors: planned,
            severities,
        })
    }
}

/// What one bucket of sessions yields.
#[derive(Default)]
pub struct BucketFindings {
    pub stats: ChainStats,
    pub findings: Vec<Finding>,
    /// User detectors that failed.
    pub skipped: SkippedDetectors,
    /// Its failure occurrences, in the columns of the `failures` table.
    pub failures: Vec<RecordBatch>,
    /// What the cortex patterns found in its new messages, in the columns of `cortex_messages`.
    pub cortex: Vec<RecordBatch>,
    /// The time of its newest event, in a chain or not (ms).
    pub newest_event_ms: Option<i64>,
    pub times: ShareTimes,
}

/// Where a share's time went: building its chains (the cortex reading its messages
/// alongside), then running the detectors over them.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ShareTimes {
    /// When its rows were all in, in the process that worked on it (none for a worker's
    /// share).
    pub began: Option<Instant>,
    /// Planning the chain build and the detectors, which the first share does for all.
    pub planning: Duration,
    pub chains: Duration,
    pub detectors: Duration,
}

/// Builds the chains of a bucket's `events` and runs the detectors over them.
pub async fn analyze_bucket(work: Arc<BucketWork>, events: BucketEvents) -> Result<BucketFindings, DetectError> {
    let plans = &work.plans;
    let began = Instant::now();
    let events = events.read()?;
    let newest_event_ms = newest_event_ms(&events);
    // The cortex reads the messages, not the chains: a message alone in its chain counts too.
    let (chains, cortex) = futures::join!(plans.chains(events.clone()), plans.query_events(&work.cortex, events));
    let chains = &chains?;
    let chains_built = Instant::now();
    // Together, so that one query's single-threaded steps overlap another's work.
    let detected = work.detectors.iter().map(|(detector, plan)| async move {
        let found = match plan {
            Ok(plan) => match plans.query(plan, chains).await {
                Ok(batches) => findings_of(&batches).map_err(Arc::new),
                Err(e) => Err(Arc::new(e.into())),
            },
            Err(failure) => Err(Arc::clone(failure)),
        };
        (detector, found)
    });
    let (stats, detected, failures) =
        futures::join!(plans.query(&work.stats, chains), futures::future::join_all(detected), plans.query(&work.failures, chains));
    let (findings, skipped) = gather_findings(detected, &work.severities)?;
    let cortex = cortex?
        .into_iter()
        .filter(|b| b.num_rows() > 0)
        .map(|b| RecordBatch::try_new(CORTEX_MESSAGES_SCHEMA.clone(), b.columns().to_vec()).map_err(EngineError::from))
        .collect::<Result<_, _>>()?;
    // When its rows were in, and what planning took, the job that ran it says.
    let times = ShareTimes { began: None, planning: Duration::ZERO, chains: chains_built - began, detectors: chains_built.elapsed() };
    Ok(BucketFindings { stats: chain_stats_of(&stats?)?, findings, skipped, failures: failures?, cortex, newest_event_ms, times })
}

/// The failure occurrences of this run, in the columns of the `failures` table.
const FAILURES_QUERY: &str = "SELECT fingerprint, session, agent, first_ts, chain_id, CAST(start_idx AS BIGINT) AS start_idx, \
     start_event_id, end_event_id, tool_name, error FROM failure_occurrences";

/// Runs `detectors` over the session's chains: findings with config severities and their
/// ids, and the user detectors that failed (a failing built-in one is an error).
pub async fn run_detectors(
    ctx: &SessionContext,
    detectors: &[Detector],
    config: &Config,
    params: &SqlParams,
) -> Result<(Vec<Finding>, SkippedDetectors), DetectError> {
    // Together, so that one detector's single-threaded steps overlap another's work.
    let results = futures::future::join_all(detectors.iter().map(|d| async move { (d, run_detector(ctx, d, params).await) })).await;
    gather_findings(results, &severities(config))
}

async fn run_detector(ctx: &SessionContext, detector: &Detector, params: &SqlParams) -> Result<Vec<Finding>, Arc<DetectorFailure>> {
    let batches = async { Ok::<_, EngineError>(ctx.sql_with_options(&params.fill(&detector.sql), query_only()).await?.collect().await?) };
    batches.await.map_err(DetectorFailure::from).and_then(|batches| findings_of(&batches)).map_err(Arc::new)
}

fn findings_of(batches: &[RecordBatch]) -> Result<Vec<Finding>, DetectorFailure> {
    let mut findings = Vec::new();
    for batch in batches {
        findings.extend(from_detector_batch(batch)?);
    }
    Ok(findings)
}

/// The findings of each detector's result, with config severities and their ids, and the
/// user detectors that failed (a failed built-in one is an error).
fn gather_findings<'a>(
    results: impl IntoIterator<Item = (&'a Detector, Result<Vec<Finding>, Arc<DetectorFailure>>)>,
    severities: &Severities,
) -> Result<(Vec<Finding>, SkippedDetectors), DetectError> {
    let mut findings = Vec::new();
    let mut skipped = Vec::new();
    for (detector, result) in results {
        match result {
            Ok(found) => findings.extend(found),
            Err(source) if detector.builtin => {
                return Err(DetectError::Builtin { name: detector.name.clone(), source });
            }
            Err(failure) => skipped.push((detector.name.clone(), failure)),
        }
    }
    for f in &mut findings {
        if let Some(severity) = severities.get(&f.signal) {
            f.severity = *severity;
        }
        f.finding_id = finding_id(&f.signal, &f.agent, &f.session, &f.start_event_id, &f.end_event_id);
    }
    Ok((findings, skipped))
}
