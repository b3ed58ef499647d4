//! One analysis run: choose the events (all, or the sessions touched since the last run),
//! rebuild chains, run every enabled detector, keep the new findings in the lake.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::physical_plan::ExecutionPlan;

use super::PipelineError;
use super::classification::{LlmVerdicts, classify_findings};
use super::commit::{RunResults, write_and_commit};
use super::detection::{Detected, detect};
use super::plan::{Planned, plan};
use super::stages::StageTimes;
use crate::classify::FindingVerdict;
use crate::config::Config;
use crate::detect::run::SkippedDetectors;
use crate::engine::{EngineOptions, open_session};
use crate::lake::live_writers::RegisteredWriter;
use crate::lake::remote::block_on;
use crate::lake::{Lake, Table};
use crate::model::Finding;
use crate::output::effectiveness::{RuleEffectiveness, rule_effectiveness};
use crate::output::files::write_artifacts;
use crate::output::{Classified, GeneratedOutput, generate_outputs};
use crate::redact::Redactor;
use crate::report::analysis::{AnalysisReport, ReportParts};

#[derive(Debug, Clone, Default)]
pub struct AnalyzeOptions {
    /// Analyze every event and replace all earlier findings.
    pub full: bool,
    /// Analyze the sessions active since this time (ms), instead of since the last run.
    pub since_ms: Option<i64>,
    /// More detector files (besides config `detectorsDir`).
    pub detectors_dir: Option<PathBuf>,
    /// LLM requests in this run at most.
    pub max_llm_calls: Option<usize>,
    /// LLM requests in flight at once (0: the default).
    pub llm_concurrency: usize,
    /// How long the LLM stage may take (`None`: the default, 10 minutes).
    pub llm_deadline: Option<std::time::Duration>,
    /// Where the artifact files go (default `LAKE/artifacts`).
    pub artifacts_dir: Option<PathBuf>,
    /// Events per bucket of sessions analyzed together (0: the default, [`super::DEFAULT_BUCKET_EVENTS`]).
    pub bucket_events: u64,
}

/// What the LLM stage cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmStats {
    pub calls: usize,
    pub cache_hits: usize,
    pub over_budget: usize,
    pub unclassified: usize,
}

/// What an analysis run found.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// What its report shows: the most severe new findings (`output.maxFindings`, most
    /// severe first), every new finding counted (the lake keeps them all), what the LLM
    /// said of each finding it was asked about (dropped ones included), the outputs and
    /// rule effectiveness.
    pub results: ReportParts,
    /// Events before this time (ms) were left out as analyzed already (none with `full`).
    pub resumed_from: Option<i64>,
    /// Earlier runs whose findings, failures, classifications and outputs a full run replaced.
    pub replaced_runs: usize,
    /// Findings this run found again that earlier runs reported (and the lake keeps).
    pub reported_before: usize,
    /// User detectors that could not run: (file, reason).
    pub skipped_detectors: SkippedDetectors,
    pub llm: Option<LlmStats>,
    /// Artifact files written.
    pub artifact_files: Vec<PathBuf>,
    /// Things dropped on the way (invalid patterns …).
    pub warnings: Vec<String>,
    /// Where the time went (`analyze --verbose`).
    pub stage_times: StageTimes,
    /// With workers, the plan they ran, with what each node did (`analyze --verbose`
    /// prints it: `detect::sessions::plan_with_metrics`).
    pub worker_plan: Option<Arc<dyn ExecutionPlan>>,
}

impl Analysis {
    /// The run as an AnalysisReport (spec §10.4).
    pub fn into_report(self) -> AnalysisReport {
        AnalysisReport::assemble(self.results)
    }
}

/// Runs the stages of an analysis: plan, detect, classify (with an LLM), generate the
/// outputs, write and commit, then measure the rules.
pub async fn analyze(lake: &Lake, config: &Config, redactor: Redactor, opts: &AnalyzeOptions) -> Result<Analysis, PipelineError> {
    let started_at = chrono::Utc::now().timestamp_millis();
    let mut stage_times = StageTimes::start();
    let (planned, ctx) = plan(lake, config, &redactor, opts).await?;
    let registered = RegisteredWriter::start(lake)?;
    let mut detected = detect(lake, config, opts, &planned, &ctx, registered.id().clone(), &mut stage_times).await?;
    let signals: HashMap<String, String> = detected.findings.iter().map(|f| (f.finding_id.clone(), f.signal.clone())).collect();
    let llm = match &planned.tiers {
        Some(tiers) => {
            let classified = classify_findings(lake, &planned, &ctx, tiers, &redactor, opts, &mut detected.findings).await?;
            stage_times.end("llm classification");
            Some(classified)
        }
        None => None,
    };
    // The last bucket's chains are not needed any more, nor held while the results are written.
    drop(ctx);
    let verdicts = llm.as_ref().map(|l| l.verdicts.as_slice()).unwrap_or_default();
    let (outputs, warnings) = generate(&detected.findings, verdicts);
    let Detected { findings, mut counts, stats, newest_event_ms, files, .. } = detected;
    let results =
        RunResults { findings: &findings, signals: &signals, counts: &mut counts, stats, newest_event_ms, verdicts, outputs: &outputs };
    let committed = write_and_commit(lake, opts, &planned, files, results)?;
    registered.finish()?;
    stage_times.end("write and commit");
    let artifact_files = upload_artifacts(lake, opts, &planned, &outputs)?;
    let Planned { run_lock, engine, resume, run_id, .. } = planned;
    drop(run_lock);
    let rule_effectiveness = measure_rules(lake, redactor, &engine).await?;
    stage_times.end("rule effectiveness");
    let time_range = if stats.chains == 0 { (0, 0) } else { (stats.first, stats.last) };
    let (verdicts, llm) = match llm {
        Some(LlmVerdicts { verdicts, llm }) => (verdicts, Some(llm)),
        None => (Vec::new(), None),
    };
    let results = ReportParts {
        run_id,
        started_at,
        completed_at: chrono::Utc::now().timestamp_millis(),
        events_processed: stats.events,
        chains: stats.chains,
        time_range,
        findings,
        counts,
        processing_state: committed.processing_state,
        verdicts,
        outputs,
        rule_effectiveness,
    };
    Ok(Analysis {
        results,
        resumed_from: resume,
        replaced_runs: committed.replaced_runs,
        reported_before: detected.reported_before,
        skipped_detectors: detected.skipped_detectors,
        llm,
        artifact_files,
        warnings,
        stage_times,
        worker_plan: detected.worker_plan,
    })
}

/// The fixes the LLM's classifications call for (SOUL.md rules, policies, patterns).
fn generate(findings: &[Finding], verdicts: &[FindingVerdict]) -> (Vec<GeneratedOutput>, Vec<String>) {
    let by_id: HashMap<&str, &FindingVerdict> = verdicts.iter().map(|v| (v.finding_id.as_str(), v)).collect();
    let classified: Vec<Classified> =
        findings.iter().filter_map(|f| by_id.get(f.finding_id.as_str()).and_then(|v| v.classification.as_ref()).map(|c| (f, c))).collect();
    generate_outputs(&classified)
}

/// The artifact files of the outputs (with an LLM configured), kept in the lake on object
/// storage unless they were asked for elsewhere.
fn upload_artifacts(
    lake: &Lake,
    opts: &AnalyzeOptions,
    planned: &Planned,
    outputs: &[GeneratedOutput],
) -> Result<Vec<PathBuf>, PipelineError> {
    if planned.tiers.is_none() {
        return Ok(Vec::new());
    }
    let artifact_files = write_artifacts(&opts.artifacts_dir.clone().unwrap_or_else(|| lake.root().join("artifacts")), outputs)?;
    if let (Some(remote), None) = (lake.remote(), &opts.artifacts_dir) {
        // The staging directory goes with this process: the lake keeps the artifacts.
        for file in &artifact_files {
            block_on(remote.upload(&lake.relative(file)))?;
        }
    }
    Ok(artifact_files)
}

/// Rule effectiveness over the lake as committed. Rules are generated outputs: a lake that
/// never had one has nothing to measure.
async fn measure_rules(lake: &Lake, redactor: Redactor, engine: &EngineOptions) -> Result<Vec<RuleEffectiveness>, PipelineError> {
    if lake.remote().is_none() && !lake.table_dir(Table::Outputs).is_dir() {
        return Ok(Vec::new());
    }
    Ok(rule_effectiveness(&open_session(lake, redactor, engine).await?).await?)
}
