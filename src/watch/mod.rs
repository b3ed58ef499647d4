//! Live alerts: a consumer of its own reads the stream as it grows, the
//! chain-local detectors run over a sliding window of recent events, and each finding at
//! or above the alert severity is POSTed to a webhook once.

pub mod sent;
pub mod webhook;

use std::future::Future;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::config::{Config, NatsConfig};
use crate::detect::{DetectError, enabled_builtin_detectors, run_detectors};
use crate::engine::chains::build_chains;
use crate::engine::{EngineOptions, session::memory_session};
use crate::ingest::Decoder;
use crate::ingest::nats::{NatsError, NatsSource, StartAt};
use crate::lake::LakeError;
use crate::model::Event;
use crate::model::event::events_batch;
use crate::model::{Finding, Severity};
use crate::redact::Redactor;
use sent::SentAlerts;
use webhook::Webhook;

#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    #[error(transparent)]
    Nats(#[from] NatsError),
    #[error(transparent)]
    Detect(#[from] DetectError),
    #[error(transparent)]
    Lake(#[from] LakeError),
    #[error(transparent)]
    Engine(#[from] crate::engine::EngineError),
    #[error(transparent)]
    Patterns(#[from] tracelake_udfs::PatternError),
}

#[derive(Debug, Clone)]
pub struct WatchOptions {
    pub webhook: String,
    /// Events older than this (before the newest one, by the events' own times) leave the
    /// window.
    pub window: Duration,
    /// Read the stream from the messages published since this time (ms since the epoch)
    /// instead of `window` back from now: a replay of traces published earlier.
    pub since_ms: Option<i64>,
    /// How often the detectors run while events arrive.
    pub interval: Duration,
    /// Alerts for findings at or above this severity.
    pub min_severity: Severity,
    /// Where the ids of sent alerts are kept across restarts (none: only in memory).
    pub state_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchStats {
    pub events: u64,
    pub quarantined: u64,
    pub evaluations: u64,
    pub alerts_sent: u64,
    pub alerts_failed: u64,
}

/// Watches until `stop` completes; `on_alert` hears of every alert sent.
pub async fn watch(
    nats: &NatsConfig,
    config: &Config,
    redactor: Redactor,
    opts: &WatchOptions,
    stop: impl Future<Output = ()>,
    on_alert: impl Fn(&Finding),
) -> Result<WatchStats, WatchError> {
    let source = NatsSource::connect(nats).await?;
    let window_ms = i64::try_from(opts.window.as_millis()).unwrap_or(i64::MAX);
    let start = opts.since_ms.unwrap_or_else(|| chrono::Utc::now().timestamp_millis().saturating_sub(window_ms));
    let mut messages = source.messages(StartAt::Time(start), &[]).await?;
    let decoder = Decoder::new(redactor.clone());
    let engine = EngineOptions::from_config(config)?;
    let params = &engine.sql_params;
    let mut detectors = enabled_builtin_detectors(config);
    detectors.retain(|d| crate::detect::signals::signal(&d.name).is_some_and(|s| s.live));
    let webhook = Webhook::new(&opts.webhook);
    let mut sent = SentAlerts::load(opts.state_file.clone());
    let mut window: Vec<Event<'static>> = Vec::new();
    let mut stats = WatchStats::default();
    let mut changed = false;
    let mut last_run = Instant::now();
    tokio::pin!(stop);
    loop {
        let next = tokio::select! {
            () = &mut stop => break,
            next = messages.next(opts.interval) => next?,
        };
        if let Some(message) = &next {
            match decoder.decode(&message.payload, "nats", message.sequence, Some(&message.subject)) {
                Ok(event) => window.push(event.into_owned()),
                Err(_) => stats.quarantined += 1,
            }
            stats.events += 1;
            changed = true;
        }
        // Run when the stream goes quiet, or at the interval while it is busy.
        if !changed || (next.is_some() && last_run.elapsed() < opts.interval) {
            continue;
        }
        changed = false;
        last_run = Instant::now();
        stats.evaluations += 1;
        slide(&mut window, window_ms);
        let refs: Vec<&Event> = window.iter().collect();
        let batch = events_batch(&refs).map_err(LakeError::from)?;
        let ctx = memory_session(vec![batch], redactor.clone(), &engine).await?;
        build_chains(&ctx, params).await?;
        let (findings, _) = run_detectors(&ctx, &detectors, config, params).await?;
        for mut finding in findings.into_iter().filter(|f| f.severity >= opts.min_severity) {
            if sent.contains(&finding.finding_id) {
                continue;
            }
            finding.detected_at = chrono::Utc::now().timestamp_millis();
            match webhook.post(&finding).await {
                Ok(()) => {
                    sent.insert(&finding.finding_id)?;
                    stats.alerts_sent += 1;
                    on_alert(&finding);
                }
                // Not marked as sent: the next run, at the next interval, tries again.
                Err(e) => {
                    stats.alerts_failed += 1;
                    changed = true;
                    eprintln!("warning: {e}");
                }
            }
        }
    }
    Ok(stats)
}

/// Keeps the events within `window_ms` of the newest one.
fn slide(window: &mut Vec<Event>, window_ms: i64) {
    if let Some(newest) = window.iter().map(|e| e.ts).max() {
        window.retain(|e| e.ts >= newest.saturating_sub(window_ms));
    }
}
