//! `tracelake export`: the JetStream stream into the lake, once or on a schedule.

use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use tracelake::config::NatsConfig;
use tracelake::ingest::nats::{NatsError, NatsSource, subject_filters};
use tracelake::load::LoadError;
use tracelake::load::export::{ExportOptions, ExportSummary, export};

use super::time_args::{format_duration, format_time, parse_duration, parse_time};
use super::{Ctx, human_bytes, quarantined_text, rate};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// NATS server URL (default: traceAnalyzer.nats.url, then nats://localhost:4222).
    #[arg(long, env = "NATS_URL")]
    nats_url: Option<String>,
    /// JetStream stream (default: traceAnalyzer.nats.stream, then openclaw-events).
    #[arg(long, env = "TRACELAKE_STREAM")]
    stream: Option<String>,
    /// Only events of this agent (repeatable); filtered on the server by subject.
    #[arg(long = "agent", env = "TRACELAKE_AGENTS", value_delimiter = ',')]
    agents: Vec<String>,
    /// Only events of this type as published, e.g. msg.in or conversation.tool_call (repeatable).
    #[arg(long = "type", env = "TRACELAKE_TYPES", value_delimiter = ',')]
    types: Vec<String>,
    /// Rebuild the lake's exported events from the first message of the stream.
    #[arg(long, env = "TRACELAKE_EXPORT_FULL")]
    full: bool,
    /// Rebuild the lake's exported events from this time on (RFC 3339, YYYY-MM-DD [HH:MM:SS] in UTC, or a duration ago: 24h, 24h ago).
    #[arg(long, env = "TRACELAKE_EXPORT_SINCE", value_parser = parse_time, conflicts_with = "full")]
    since: Option<i64>,
    /// Run again at this interval (e.g. 24h) until interrupted; default from
    /// traceAnalyzer.schedule when it is enabled.
    #[arg(long, env = "TRACELAKE_EVERY", value_parser = parse_duration)]
    every: Option<Duration>,
    /// Commit (write files and move the cursor) after this many messages.
    #[arg(long, env = "TRACELAKE_COMMIT_EVERY", default_value_t = 250_000)]
    commit_every: usize,
}

pub async fn run(ctx: &Ctx, args: ExportArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.lake_to_write()?;
    let decoder = ctx.decoder(&lake)?;
    let nats = NatsConfig {
        url: args.nats_url.clone().unwrap_or_else(|| ctx.config.nats.url.clone()),
        stream: args.stream.clone().unwrap_or_else(|| ctx.config.nats.stream.clone()),
        ..ctx.config.nats.clone()
    };
    let mut opts = ExportOptions::new(&nats.stream);
    opts.filter_subjects = subject_filters(&nats.subject_prefix, &args.agents, &args.types)?;
    opts.full = args.full;
    opts.since_ms = args.since;
    opts.commit_every = args.commit_every.max(1);
    let schedule = ctx.config.schedule.enabled.then(|| Duration::from_secs(ctx.config.schedule.interval_hours.max(1) as u64 * 3600));
    let every = args.every.or(schedule);

    let stop = Arc::new(AtomicBool::new(false));
    let stopper = Arc::clone(&stop);
    let interrupted = super::interrupt::on_interrupt()?;
    tokio::spawn(async move {
        interrupted.await;
        eprintln!("stopping after the current batch…");
        stopper.store(true, Ordering::Relaxed);
    });

    let mut source = NatsSource::connect(&nats).await?;
    loop {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(ProgressStyle::with_template("exporting {spinner} {human_pos} events {per_sec} {msg}").expect("valid template"));
        let summary = export(&lake, &mut source, &decoder, &opts, Arc::clone(&stop), &|messages, _bytes| bar.inc(messages)).await;
        bar.finish_and_clear();
        // A schedule's lines say when they were written, and a run the server did not
        // answer is one to try again, not the end of the schedule.
        match (summary, every) {
            (Ok(summary), None) => println!("{}", summary_line(&summary)),
            (Ok(summary), Some(_)) => println!("{} {}", now(), summary_line(&summary)),
            (Err(e), Some(interval)) if is_outage(&e) => {
                eprintln!("{} NATS at {} did not answer ({e}); trying again in {}", now(), nats.url, format_duration(interval));
            }
            (Err(e), _) => return Err(e.into()),
        }
        // Only the first run of a schedule rebuilds; later runs continue from the cursor.
        opts.full = false;
        opts.since_ms = None;
        let Some(interval) = every else { break };
        if stop.load(Ordering::Relaxed) || wait_or_stop(interval, &stop).await {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Whether an export failed because the server stopped answering, not because of the
/// lake or the request.
fn is_outage(e: &LoadError) -> bool {
    matches!(
        e,
        LoadError::ExportInterrupted { .. }
            | LoadError::Nats(
                NatsError::JetStream { .. } | NatsError::Receive(_) | NatsError::StreamEnded | NatsError::StoppedSending { .. }
            )
    )
}

/// The time, for the lines of a schedule.
fn now() -> String {
    format!("[{}]", format_time(chrono::Utc::now()))
}

/// Sleeps for `interval`; returns true when asked to stop meanwhile.
async fn wait_or_stop(interval: Duration, stop: &AtomicBool) -> bool {
    let deadline = tokio::time::Instant::now() + interval;
    while tokio::time::Instant::now() < deadline {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200).min(deadline - tokio::time::Instant::now())).await;
    }
    stop.load(Ordering::Relaxed)
}

fn summary_line(s: &ExportSummary) -> String {
    format!(
        "exported {} events, {}, {} in {:.2} s ({:.0} events/s); cursor {} of {}{}",
        s.events,
        quarantined_text(&s.quarantined),
        human_bytes(s.bytes),
        s.seconds,
        rate(s.events, s.seconds),
        s.cursor,
        s.stream_last_sequence,
        if s.stopped { " (stopped early)" } else { "" }
    )
}
