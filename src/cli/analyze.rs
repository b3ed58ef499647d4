//! `tracelake analyze`: detect failure patterns and report them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, ValueEnum};
use tracelake::detect::sessions::plan_with_metrics;
use tracelake::engine::chains::DEFAULT_BUCKET_EVENTS;
use tracelake::engine::{open_session, query_json};
use tracelake::lake::Lake;
use tracelake::model::Severity;
use tracelake::pipeline::{Analysis, AnalyzeOptions, analyze};
use tracelake::report::analysis::{AnalysisReport, any_at_least};
use tracelake::report::json::write_json_pretty;
use tracelake::report::text::shell_word;

use super::Ctx;
use super::time_args::{format_time_ms, parse_time};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Table,
    Json,
    Markdown,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Analyze every event and replace all earlier findings (default: only what is new).
    #[arg(long, env = "TRACELAKE_ANALYZE_FULL")]
    full: bool,
    /// Analyze the sessions active since this time (RFC 3339, YYYY-MM-DD [HH:MM:SS] in UTC, epoch seconds, or a duration ago: 24h, 7d, 2w, 24h ago).
    #[arg(long, env = "TRACELAKE_ANALYZE_SINCE", value_parser = parse_time, conflicts_with = "full")]
    since: Option<i64>,
    /// Report format.
    #[arg(long, value_enum, env = "TRACELAKE_ANALYZE_FORMAT", default_value_t = ReportFormat::Table)]
    format: ReportFormat,
    /// Write the report to this file instead of standard output.
    #[arg(long, env = "TRACELAKE_ANALYZE_OUTPUT")]
    output: Option<PathBuf>,
    /// Exit with code 3 when a finding at or above this severity exists.
    #[arg(long, env = "TRACELAKE_FAIL_ON", value_parser = super::one_of::<Severity>(&Severity::NAMES))]
    fail_on: Option<Severity>,
    /// A directory of extra detector .sql files.
    #[arg(long, env = "TRACELAKE_DETECTORS")]
    detectors: Option<PathBuf>,
    /// At most this many LLM requests in this run (answers already cached are free).
    #[arg(long, env = "TRACELAKE_MAX_LLM_CALLS")]
    max_llm_calls: Option<usize>,
    /// LLM requests in flight at once.
    #[arg(long, env = "TRACELAKE_LLM_CONCURRENCY", default_value_t = 4)]
    llm_concurrency: usize,
    /// Seconds the LLM stage may take in all; what is not classified by then stays
    /// unclassified (and is asked again by the next run).
    #[arg(long, env = "TRACELAKE_LLM_DEADLINE", default_value_t = 600)]
    llm_deadline: u64,
    /// Where to write soul-rules.md, governance-policies.json and cortex-patterns.json
    /// [default: LAKE/artifacts].
    #[arg(long, env = "TRACELAKE_ARTIFACTS")]
    artifacts: Option<PathBuf>,
    /// Sessions are analyzed in buckets of about this many events, one per core at a time;
    /// smaller buckets use less memory, larger ones (up to the whole lake in one) less time.
    #[arg(long, env = "TRACELAKE_BUCKET_EVENTS", default_value_t = DEFAULT_BUCKET_EVENTS)]
    bucket_events: u64,
    /// Print where the time went, stage by stage, on stderr.
    #[arg(long, short)]
    verbose: bool,
}

pub async fn run(ctx: &Ctx, args: AnalyzeArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let analysis = analyze(&lake, &ctx.config, ctx.redactor()?, &options(&args)).await?;
    if args.verbose {
        eprintln!("where the time went:\n{}", analysis.stage_times);
        if let Some(plan) = &analysis.worker_plan {
            eprintln!("on the workers:\n{}", plan_with_metrics(Arc::clone(plan)).await?);
        }
    }
    print_notes(ctx, &lake, &args, &analysis).await?;
    let fail = args.fail_on.is_some_and(|threshold| any_at_least(&analysis.results.findings, threshold));
    let report = analysis.into_report().at_lake(&lake.location());
    match &args.output {
        Some(path) => {
            let written = File::create(path).map_err(anyhow::Error::from).and_then(|file| write_report(&report, args.format, file));
            written.with_context(|| format!("writing {}", path.display()))?;
        }
        None => write_report(&report, args.format, std::io::stdout().lock())?,
    }
    if let Some(path) = &ctx.config.output.report_path {
        let written = File::create(path).map_err(anyhow::Error::from).and_then(|file| write_report(&report, ReportFormat::Json, file));
        written.with_context(|| format!("writing the report to {path} (`output.reportPath` in the config)"))?;
    }
    Ok(if fail { ExitCode::from(3) } else { ExitCode::SUCCESS })
}

fn options(args: &AnalyzeArgs) -> AnalyzeOptions {
    AnalyzeOptions {
        full: args.full,
        since_ms: args.since,
        detectors_dir: args.detectors.clone(),
        max_llm_calls: args.max_llm_calls,
        llm_concurrency: args.llm_concurrency,
        llm_deadline: Some(std::time::Duration::from_secs(args.llm_deadline)),
        artifacts_dir: args.artifacts.clone(),
        bucket_events: args.bucket_events,
    }
}

/// What the run skipped, cost or replaced, and why it found nothing, on standard error.
async fn print_notes(ctx: &Ctx, lake: &Lake, args: &AnalyzeArgs, analysis: &Analysis) -> anyhow::Result<()> {
    for (name, reason) in &analysis.skipped_detectors {
        eprintln!("warning: detector {name} skipped: {reason}");
    }
    for warning in &analysis.warnings {
        eprintln!("warning: {warning}");
    }
    if let Some(llm) = &analysis.llm {
        let dropped = analysis.results.verdicts.iter().filter(|v| v.dropped()).count();
        eprintln!(
            "llm: {} requests, {} cached answers, {} dropped by triage, {} unclassified{}",
            llm.calls,
            llm.cache_hits,
            dropped,
            llm.unclassified,
            if llm.over_budget > 0 { format!(" ({} over the --max-llm-calls budget)", llm.over_budget) } else { String::new() }
        );
        for file in &analysis.artifact_files {
            eprintln!("wrote {}", file.display());
        }
    }
    if analysis.replaced_runs > 0 {
        eprintln!(
            "--full: the findings, failures, classifications and generated outputs of {} earlier run(s) were replaced by this run's; rule effectiveness is measured from this run on",
            analysis.replaced_runs
        );
    }
    if analysis.results.events_processed == 0
        && args.since.is_none()
        && let Some(since) = analysis.resumed_from
    {
        let since = format_time_ms(since);
        eprintln!(
            "nothing new since {since}, where the last run stopped: `--full` analyzes every event again, `--since TIME` from a time on, and `tracelake report` shows what earlier runs found"
        );
    }
    if let Some(since) = args.since
        && analysis.results.events_processed == 0
    {
        eprintln!("no events since {}: {}", format_time_ms(since), time_range(ctx, lake).await?);
    }
    if analysis.reported_before > 0 && (args.since.is_some() || analysis.results.findings.is_empty()) {
        eprintln!(
            "{} finding(s) in these sessions were reported by earlier runs and are not repeated: `tracelake report --lake {}` lists them",
            analysis.reported_before,
            shell_word(&lake.location())
        );
    }
    Ok(())
}

/// What times the lake's events span, as a sentence.
async fn time_range(ctx: &Ctx, lake: &Lake) -> anyhow::Result<String> {
    let session = open_session(lake, ctx.redactor()?, &ctx.engine()?).await?;
    let rows = query_json(&session, "SELECT CAST(min(ts) AS BIGINT) AS first, CAST(max(ts) AS BIGINT) AS last FROM events").await?;
    let at = |key: &str| rows.first().and_then(|r| r[key].as_i64());
    Ok(match (at("first"), at("last")) {
        (Some(first), Some(last)) => {
            format!("the lake's events run from {} to {}", format_time_ms(first), format_time_ms(last))
        }
        _ => "the lake has no events".to_owned(),
    })
}

/// Writes `report` in `format` to `out`; JSON is written as it is rendered, not held
/// whole (every finding of a large lake can be hundreds of MB of it).
pub fn write_report(report: &AnalysisReport, format: ReportFormat, out: impl Write) -> anyhow::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 16, out);
    match format {
        ReportFormat::Json => {
            write_json_pretty(report, &mut out)?;
            writeln!(out)?;
        }
        ReportFormat::Markdown => out.write_all(report.to_markdown().as_bytes())?,
        ReportFormat::Table => out.write_all(report.to_terminal(15).as_bytes())?,
    }
    out.flush()?;
    Ok(())
}
