//! `tracelake status`: what the lake holds.

use std::process::ExitCode;

use clap::Args;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{Int64Type, TimestampMillisecondType};
use datafusion::prelude::SessionContext;
use tracelake::config::NatsConfig;
use tracelake::engine::open_session;
use tracelake::ingest::nats::NatsSource;
use tracelake::lake::state::Manifest;

use super::Ctx;

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// NATS server to compare the export cursor with (default: traceAnalyzer.nats.url).
    #[arg(long, env = "NATS_URL")]
    nats_url: Option<String>,
}

pub async fn run(ctx: &Ctx, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let session = open_session(&lake, ctx.redactor()?, &ctx.engine()?).await?;
    print!("{}", describe(&session).await?);
    let manifest = Manifest::load(&lake)?;
    if let Some(export) = &manifest.export {
        let nats = NatsConfig {
            url: args.nats_url.unwrap_or_else(|| ctx.config.nats.url.clone()),
            stream: export.stream.clone(),
            ..ctx.config.nats.clone()
        };
        let stream = match NatsSource::connect(&nats).await {
            Ok(mut source) => match source.last_sequence().await {
                Ok(last) => format!("last sequence {last}, {} behind", last.saturating_sub(export.cursor)),
                Err(e) => format!("not readable ({e})"),
            },
            Err(e) => format!("not reachable ({e})"),
        };
        println!("export:      stream {:?} at sequence {}; stream {stream}", export.stream, export.cursor);
        if let Some(run) = &export.last_run {
            println!("last export: {} ({} events, {} quarantined)", run.finished_at, run.events, run.quarantined);
        }
    }
    match manifest.imports.last() {
        Some(last) => {
            println!("imports:     {} (last: {} at {}, {} events)", manifest.imports.len(), last.source, last.finished_at, last.events)
        }
        None => println!("imports:     none"),
    }
    Ok(ExitCode::SUCCESS)
}

/// A few lines on the events and quarantine tables.
pub async fn describe(session: &SessionContext) -> anyhow::Result<String> {
    let sql = "SELECT count(*) AS n, count(DISTINCT date) AS partitions, min(ts) AS first, max(ts) AS last, \
               count(DISTINCT agent) AS agents, count(DISTINCT session) AS sessions FROM events";
    let batches = session.sql(sql).await?.collect().await?;
    let b = &batches[0];
    let int = |i: usize| b.column(i).as_primitive::<Int64Type>().value(0);
    let time = |i: usize| {
        let col = b.column(i).as_primitive::<TimestampMillisecondType>();
        if col.is_null(0) {
            "-".to_owned()
        } else {
            chrono::DateTime::from_timestamp_millis(col.value(0)).map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
        }
    };
    let mut out = format!(
        "events:      {} in {} partition(s), {} agent(s), {} session(s)\ntime range:  {} .. {} UTC\n",
        int(0),
        int(1),
        int(4),
        int(5),
        time(2),
        time(3)
    );
    let quarantine =
        session.sql("SELECT reason, count(*) AS n FROM quarantine GROUP BY reason ORDER BY n DESC, reason").await?.collect().await?;
    let mut reasons = Vec::new();
    for batch in &quarantine {
        let names = batch.column(0).as_string::<i32>();
        let counts = batch.column(1).as_primitive::<Int64Type>();
        for i in 0..batch.num_rows() {
            reasons.push(format!("{} {}", names.value(i), counts.value(i)));
        }
    }
    let total: i64 = quarantine.iter().map(|b| b.column(1).as_primitive::<Int64Type>().iter().flatten().sum::<i64>()).sum();
    out.push_str(&format!(
        "quarantined: {total}{}\n",
        if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) }
    ));
    Ok(out)
}
