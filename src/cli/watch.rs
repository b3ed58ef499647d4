//! `tracelake watch`: live alerts on critical findings, POSTed to a webhook.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tracelake::config::NatsConfig;
use tracelake::watch::{WatchOptions, watch};

use super::Ctx;
use super::time_args::{parse_duration, parse_time};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Where to POST alerts (JSON: the finding as in the report).
    #[arg(long, env = "TRACELAKE_WEBHOOK")]
    webhook: String,
    /// NATS server URL (default: traceAnalyzer.nats.url).
    #[arg(long, env = "NATS_URL")]
    nats_url: Option<String>,
    /// Stream name (default: traceAnalyzer.nats.stream).
    #[arg(long, env = "TRACELAKE_STREAM")]
    stream: Option<String>,
    /// Recent events the detectors look at (also how far back a new watch starts).
    #[arg(long, env = "TRACELAKE_WATCH_WINDOW", value_parser = parse_duration, default_value = "30m")]
    window: Duration,
    /// Replay: read the messages published since this time (RFC 3339, YYYY-MM-DD [HH:MM:SS]
    /// in UTC, or a duration ago: 24h, 24h ago) instead of --window back from now.
    #[arg(long, env = "TRACELAKE_WATCH_SINCE", value_parser = parse_time)]
    since: Option<i64>,
    /// How often the detectors run while events arrive.
    #[arg(long, env = "TRACELAKE_WATCH_INTERVAL", value_parser = parse_duration, default_value = "2s")]
    interval: Duration,
    /// Alert on findings at or above this severity.
    #[arg(
        long,
        env = "TRACELAKE_ALERT_SEVERITY",
        default_value_t = tracelake::model::Severity::Critical,
        value_parser = super::one_of::<tracelake::model::Severity>(&tracelake::model::Severity::NAMES)
    )]
    min_severity: tracelake::model::Severity,
}

pub async fn run(ctx: &Ctx, args: WatchArgs) -> anyhow::Result<ExitCode> {
    let nats = NatsConfig {
        url: args.nats_url.unwrap_or_else(|| ctx.config.nats.url.clone()),
        stream: args.stream.unwrap_or_else(|| ctx.config.nats.stream.clone()),
        ..ctx.config.nats.clone()
    };
    // With a lake, the sent alerts survive restarts; without one they last as long as this run.
    let state_file = ctx.lake.as_ref().map(|dir| tracelake::lake::Lake::new(dir.clone()).state_dir().join("alerts-sent.json"));
    let opts = WatchOptions {
        webhook: args.webhook,
        window: args.window,
        since_ms: args.since,
        interval: args.interval,
        min_severity: args.min_severity,
        state_file,
    };
    eprintln!("watching stream {} at {} (Ctrl-C or SIGTERM stops)", nats.stream, nats.url);
    let stop = super::interrupt::on_interrupt()?;
    let stats = watch(&nats, &ctx.config, ctx.redactor()?, &opts, stop, |f| {
        eprintln!("alert: [{}] {} {}@{}: {}", f.severity, f.signal, f.agent, f.session, f.summary);
    })
    .await?;
    eprintln!(
        "watched {} events ({} quarantined), {} detector runs, {} alerts sent, {} failed",
        stats.events, stats.quarantined, stats.evaluations, stats.alerts_sent, stats.alerts_failed
    );
    Ok(ExitCode::SUCCESS)
}
