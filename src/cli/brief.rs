//! `tracelake brief`: the boot context an agent loads when it starts, from the lake.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use tracelake::engine::open_session;
use tracelake::lake::state::write_atomic;
use tracelake::output::brief::brief;

use super::Ctx;
use super::time_args::parse_time;

#[derive(Debug, Args)]
pub struct BriefArgs {
    /// The agent to brief.
    #[arg(long)]
    agent: String,
    /// Write the context here (atomically) instead of standard output, e.g. BOOTSTRAP.md.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The most characters the context may have [default: cortex.maxChars, 16000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(200..))]
    max_chars: Option<u64>,
    /// The time to brief at: what is recent, fresh or stale is judged from it (RFC 3339, a
    /// date, epoch seconds, or a duration ago) [default: now].
    #[arg(long, value_parser = parse_time)]
    at: Option<i64>,
    /// `markdown`, or `json` for programs.
    #[arg(long, value_enum, default_value_t = BriefFormat::Markdown)]
    format: BriefFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BriefFormat {
    Markdown,
    Json,
}

pub async fn run(ctx: &Ctx, args: BriefArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let redactor = ctx.redactor()?;
    let session = open_session(&lake, redactor.clone(), &ctx.engine()?).await?;
    let now = match args.at {
        Some(ms) => chrono::DateTime::from_timestamp_millis(ms).context("the time of --at")?,
        None => chrono::Utc::now(),
    };
    let max_chars = args.max_chars.unwrap_or(u64::from(ctx.config.cortex.max_chars)) as usize;
    let mut brief = brief(&session, &args.agent, now, max_chars).await?;
    // The lake holds redacted text; this keeps a secret from a custom pattern added since.
    brief.text = redactor.redact(&brief.text).into_owned();
    let out = match args.format {
        BriefFormat::Markdown => brief.text.clone(),
        BriefFormat::Json => serde_json::to_string_pretty(&brief)? + "\n",
    };
    match &args.output {
        Some(path) => {
            write_atomic(path, out.as_bytes()).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {} ({} characters)", path.display(), brief.text.chars().count());
        }
        None => {
            let mut stdout = std::io::stdout().lock();
            stdout.write_all(out.as_bytes())?;
            stdout.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
