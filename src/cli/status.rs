//! `tracelake status`: what the lake holds.

use std::process::ExitCode;

use clap::Args;
use datafusion::prelude::SessionContext;
use tracelake::config::NatsConfig;
use tracelake::engine::{EngineOptions, open_session, query_json};
use tracelake::ingest::nats::NatsSource;
use tracelake::lake::Lake;
use tracelake::lake::history::{AsOf, lake_as_of_shared, table_sizes_as_of};
use tracelake::lake::sizes::{TableSize, table_sizes};
use tracelake::lake::state::AnalysisRecord;
use tracelake::lake::state_log;
use tracelake::report::text::shell_word;

use super::time_args::{format_time, parse_as_of};
use super::{Ctx, human_bytes};

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// NATS server to compare the export cursor with (default: traceAnalyzer.nats.url).
    #[arg(long, env = "NATS_URL")]
    nats_url: Option<String>,
    /// Show the lake as it was: at a revision (as this command prints it) or a time.
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<AsOf>,
}

pub async fn run(ctx: &Ctx, args: StatusArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let then = lake_as_of_shared(&lake, args.as_of)?;
    let session = open_session(&lake, ctx.redactor()?, &EngineOptions { as_of: then.clone(), ..ctx.engine()? }).await?;
    print!("{}", describe(&session).await?);
    let cortex = query_json(
        &session,
        "SELECT (SELECT count(*) FROM threads WHERE status = 'open') AS open, (SELECT count(*) FROM threads) AS threads, \
         (SELECT count(*) FROM decisions) AS decisions",
    )
    .await?
    .swap_remove(0);
    println!(
        "cortex:      {} open of {} thread(s), {} decision(s) (`threads`, `decisions`, `moods`)",
        cortex["open"], cortex["threads"], cortex["decisions"]
    );
    let manifest = state_log::load(&lake)?;
    if let Some(then) = then {
        let sizes = table_sizes_as_of(&then.tables);
        println!("tables:      {}", tables_line(&sizes));
        println!("as of:       {}; the lake is now at revision {}", then.point, manifest.revision);
        println!("{}", analyses_line(&lake, &then.analyses, String::new()));
        return Ok(ExitCode::SUCCESS);
    }
    let sizes = table_sizes(&lake, &manifest)?;
    println!("tables:      {}", tables_line(&sizes));
    if let Some(line) = compact_line(&sizes, &lake.location()) {
        println!("{line}");
    }
    println!("revision:    {} (sql, report and status read an earlier one with --as-of REVISION|TIME)", manifest.revision);
    if !manifest.removed.is_empty() {
        println!(
            "replaced:    {} file(s) kept for --as-of; `tracelake vacuum --lake {}` deletes those replaced over 7 days ago",
            manifest.removed.len(),
            shell_word(&lake.location())
        );
    }
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
            println!("last export: {} ({} events, {} quarantined)", shown_time(&run.finished_at), run.events, run.quarantined);
        }
    }
    if let Some(collected) = &manifest.collect {
        println!("collected:   {} OTLP requests ({} spans, {} events)", collected.requests, collected.spans, collected.events);
    }
    match manifest.imports.last() {
        Some(last) => {
            let at = shown_time(&last.finished_at);
            println!("imports:     {} (last: {} at {at}, {} events)", manifest.imports.len(), last.source, last.events);
        }
        None => println!("imports:     none"),
    }
    let waiting = match manifest.event_files_by_analysis().map(|(new, _)| new.len()) {
        Some(0) => ", nothing committed since".to_owned(),
        Some(n) => format!(", {n} events file(s) committed since: the next `analyze` reads their sessions"),
        None => String::new(),
    };
    println!("{}", analyses_line(&lake, &manifest.analyses, waiting));
    Ok(ExitCode::SUCCESS)
}

/// The analysis runs and the last of them; `waiting` says what the next run would read.
fn analyses_line(lake: &Lake, analyses: &[AnalysisRecord], waiting: String) -> String {
    match analyses.last() {
        None => format!("analyses:    none: `tracelake analyze --lake {}` finds what failed", shell_word(&lake.location())),
        Some(last) => {
            let at = shown_time(&last.finished_at);
            format!("analyses:    {} (last: {} at {at}, {} findings{waiting})", analyses.len(), last.run_id, last.findings)
        }
    }
}

/// A time the lake's state keeps (RFC 3339, to the nanosecond) as the time range shows
/// times: to the second, in UTC.
fn shown_time(rfc3339: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(rfc3339).map_or_else(|_| rfc3339.to_owned(), |t| format_time(t.with_timezone(&chrono::Utc)))
}

/// A few lines on the events and quarantine tables.
pub async fn describe(session: &SessionContext) -> anyhow::Result<String> {
    let sql = "SELECT count(*) AS n, count(DISTINCT date) AS partitions, CAST(min(ts) AS BIGINT) AS first, \
               CAST(max(ts) AS BIGINT) AS last, count(DISTINCT agent) AS agents, count(DISTINCT session) AS sessions FROM events";
    let row = query_json(session, sql).await?.swap_remove(0);
    let int = |name: &str| row[name].as_i64().unwrap_or(0);
    let time = |name: &str| {
        row[name]
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis)
            .map_or("-".into(), |t| t.format("%Y-%m-%d %H:%M:%S").to_string())
    };
    let mut out = format!(
        "events:      {} in {} partition(s), {} agent(s), {} session(s)\ntime range:  {} .. {} UTC\n",
        int("n"),
        int("partitions"),
        int("agents"),
        int("sessions"),
        time("first"),
        time("last")
    );
    let quarantine = query_json(session, "SELECT reason, count(*) AS n FROM quarantine GROUP BY reason ORDER BY n DESC, reason").await?;
    let reasons: Vec<String> = quarantine.iter().map(|r| format!("{} {}", r["reason"].as_str().unwrap_or("?"), r["n"])).collect();
    let total: i64 = quarantine.iter().filter_map(|r| r["n"].as_i64()).sum();
    out.push_str(&format!(
        "quarantined: {total}{}\n",
        if reasons.is_empty() { String::new() } else { format!(" ({})", reasons.join(", ")) }
    ));
    Ok(out)
}

/// Tables of at least this many files, of less than [`SMALL_FILE_BYTES`] on average, are
/// worth compacting: every query lists and opens each file.
const MANY_FILES: usize = 100;
const SMALL_FILE_BYTES: u64 = 1 << 20;

/// A line pointing to `compact` when tables hold many small files (a long `collect`,
/// frequent exports).
fn compact_line(sizes: &[TableSize], lake: &str) -> Option<String> {
    let small: Vec<String> = sizes
        .iter()
        .filter(|t| t.files >= MANY_FILES && t.bytes / t.files as u64 <= SMALL_FILE_BYTES)
        .map(|t| format!("{} has {} file(s) of {} on average", t.table.dir_name(), t.files, human_bytes(t.bytes / t.files as u64)))
        .collect();
    (!small.is_empty())
        .then(|| format!("small files: {}; `tracelake compact --lake {}` merges them per partition", small.join(", "), shell_word(lake)))
}

/// Each table's version, files and bytes: `events v3 2 file(s) 1.2 MB, …`.
fn tables_line(sizes: &[TableSize]) -> String {
    let tables: Vec<String> = sizes
        .iter()
        .map(|t| {
            let version = t.version.map(|v| format!(" v{v}")).unwrap_or_default();
            format!("{}{version} {} file(s) {}", t.table.dir_name(), t.files, human_bytes(t.bytes))
        })
        .collect();
    if tables.is_empty() { "no committed files".to_owned() } else { tables.join(", ") }
}

#[cfg(test)]
mod tests {
    use tracelake::lake::Table;

    use super::*;

    fn size(table: Table, files: usize, bytes: u64) -> TableSize {
        TableSize { table, files, bytes, version: Some(1) }
    }

    #[test]
    fn many_small_files_point_to_compact_and_few_or_large_ones_do_not() {
        let line = compact_line(&[size(Table::Events, 4000, 40_000_000), size(Table::Findings, 3, 3_000)], "my lake").unwrap();
        assert!(line.starts_with("small files: events has 4000 file(s) of 10.0 kB on average;"), "{line}");
        assert!(line.ends_with("`tracelake compact --lake 'my lake'` merges them per partition"), "{line}");
        assert_eq!(compact_line(&[size(Table::Events, 99, 99_000)], "l"), None, "few files");
        assert_eq!(compact_line(&[size(Table::Events, 200, 200 << 21)], "l"), None, "large files");
    }
}
