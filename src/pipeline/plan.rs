//! The first stage of an analysis: what it reads (all events, or what was committed since
//! the last run), which detectors run, and the lake state it started from. Nothing is
//! read from the events yet.

use std::path::PathBuf;
use std::sync::Arc;

use datafusion::prelude::SessionContext;

use super::{AnalyzeOptions, PipelineError};
use crate::classify::Tiers;
use crate::config::Config;
use crate::detect::Scope;
use crate::detect::sessions::AnalysisJobs;
use crate::detect::{Detector, enabled_builtin_detectors, user_detectors};
use crate::engine::chains::{Increment, NEW_EVENTS, OLD_EVENTS, Slice, define_analysis_events};
use crate::engine::session::{FAILURE_COLUMNS, register_event_files};
use crate::engine::{EngineOptions, open_session};
use crate::lake::commit::{RunKind, RunLock, begin};
use crate::lake::state::Manifest;
use crate::lake::{Lake, Table, WriterId};
use crate::redact::Redactor;

/// An analysis planned: what it reads and what it runs. (Its session over the events,
/// which [`plan`] returns beside it, is dropped before the results are written.)
pub struct Planned {
    pub engine: EngineOptions,
    pub tiers: Option<Tiers>,
    /// Held until the analysis ends: no other analysis runs meanwhile.
    pub run_lock: RunLock,
    /// The lake as it was when the analysis began.
    pub committed: Manifest,
    /// The committed `events` files, all of which this analysis accounts for.
    pub event_files: Vec<String>,
    pub increment: Increment,
    /// Events before this time (ms) are left out as analyzed already.
    pub resume: Option<i64>,
    /// How far back (ms) an incremental run reads a session's earlier events.
    pub context_ms: i64,
    pub run_id: String,
    /// Detectors run over each bucket of sessions, and over them all after.
    pub per_bucket: Vec<Detector>,
    pub across_sessions: Vec<Detector>,
    pub detected_at: i64,
}

pub async fn plan(
    lake: &Lake,
    config: &Config,
    redactor: &Redactor,
    opts: &AnalyzeOptions,
) -> Result<(Planned, SessionContext), PipelineError> {
    let engine = EngineOptions { session_jobs: Some(Arc::new(AnalysisJobs)), ..EngineOptions::from_config(config)? };
    let tiers = Tiers::from_config(&config.llm)?;
    // Only analyses change the analysis history and the processing state, and no other
    // analysis runs: they stay as read here while imports and exports commit beside it.
    let run_lock = RunLock::acquire(lake, RunKind::Analyze)?;
    // Before the session: `begin` writes the Delta logs of a lake made before tables had
    // them, which the session reads.
    let (committed, _) = begin(lake)?;
    let ctx = open_session(lake, redactor.clone(), &engine).await?;
    let event_files: Vec<String> = committed.table_files(Table::Events).into_iter().map(str::to_owned).collect();
    let (increment, resume) = increment(lake, &ctx, &committed, opts).await?;
    let context_ms = config.incremental_context_window.max(0) * 60_000;
    define_analysis_events(&ctx, &increment, context_ms, &Slice::All).await?;
    if opts.full {
        // A full run rebuilds the failure history from scratch.
        let empty = format!("CREATE OR REPLACE VIEW failure_history AS SELECT {FAILURE_COLUMNS} FROM failures WHERE false");
        ctx.sql(&empty).await?.collect().await?;
    }
    let run_id = format!("run-{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &WriterId::random().as_str()[..6]);
    let mut detectors = enabled_builtin_detectors(config);
    for dir in config.detectors_dir.iter().map(PathBuf::from).chain(opts.detectors_dir.clone()) {
        detectors.extend(user_detectors(&dir)?);
    }
    let (across_sessions, per_bucket) = detectors.into_iter().partition(|d| d.scope == Scope::Lake);
    let planned = Planned {
        engine,
        tiers,
        run_lock,
        committed,
        event_files,
        increment,
        resume,
        context_ms,
        run_id,
        per_bucket,
        across_sessions,
        detected_at: chrono::Utc::now().timestamp_millis(),
    };
    Ok((planned, ctx))
}

/// What is new: the events files committed since the last analysis (older events too),
/// or, after an analysis that kept no such list, the events after its newest; and the
/// time before which events count as analyzed.
async fn increment(
    lake: &Lake,
    ctx: &SessionContext,
    committed: &Manifest,
    opts: &AnalyzeOptions,
) -> Result<(Increment, Option<i64>), PipelineError> {
    let previous = &committed.processing_state;
    let last_ts = (previous.last_processed_ts > 0).then_some(previous.last_processed_ts);
    let increment = match (opts.full, opts.since_ms, committed.event_files_by_analysis(), last_ts) {
        (true, ..) | (false, None, None, None) => Increment::All,
        // A window: the cortex reads what no run saw, or leaves the files no run read to
        // the next incremental run, which reads them whole.
        (false, Some(since), by_analysis, last) => {
            Increment::After { from: since, fresh_after: if by_analysis.is_some() { None } else { Some(last.unwrap_or(0)) } }
        }
        (false, None, None, Some(last)) => Increment::After { from: last, fresh_after: Some(last) },
        (false, None, Some((new, old)), _) => {
            register_event_files(ctx, lake, NEW_EVENTS, &new).await?;
            register_event_files(ctx, lake, OLD_EVENTS, &old).await?;
            Increment::Files
        }
    };
    let resume = match increment {
        Increment::All => None,
        Increment::After { from, .. } => Some(from),
        Increment::Files => last_ts,
    };
    Ok((increment, resume))
}
