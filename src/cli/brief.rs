//! `tracelake brief`: the boot context an agent loads when it starts, from the lake.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use datafusion::prelude::SessionContext;
use tracelake::config::nearest_within;
use tracelake::engine::{did_you_mean, open_session, query_json};
use tracelake::lake::state::write_atomic;
use tracelake::output::brief::brief;

use super::Ctx;
use super::time_args::parse_time;

#[derive(Debug, Args)]
pub struct BriefArgs {
    /// The agent to brief [default: the lake's only agent].
    #[arg(long)]
    agent: Option<String>,
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
    let agent = match args.agent {
        Some(agent) => agent,
        None => only_agent(&agents(&session).await?)?,
    };
    let mut brief = brief(&session, &agent, now, max_chars).await?;
    if brief.events == 0 {
        // A new agent has no events yet: its brief says so, and this says what the lake has.
        let agents = agents(&session).await?;
        let known: Vec<&str> = agents.iter().map(String::as_str).collect();
        let nearest = did_you_mean(nearest_within(&agent, &known, 2));
        eprintln!("note: the lake holds no events of agent `{agent}`{nearest}; its agents: {}", listed(&agents));
    }
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

/// The lake's agents, most events first.
async fn agents(session: &SessionContext) -> anyhow::Result<Vec<String>> {
    let rows = query_json(session, "SELECT agent FROM events GROUP BY agent ORDER BY count(*) DESC, agent").await?;
    Ok(rows.iter().filter_map(|row| row["agent"].as_str().map(str::to_owned)).collect())
}

/// The agent to brief when `--agent` names none: the lake's only one.
fn only_agent(agents: &[String]) -> anyhow::Result<String> {
    match agents {
        [one] => Ok(one.clone()),
        [] => anyhow::bail!("the lake holds no events, so no agent to brief: import or export its traces first"),
        many => anyhow::bail!("the lake holds {} agents: name one with --agent ({})", many.len(), listed(many)),
    }
}

/// The first of `agents`, and how many more there are.
fn listed(agents: &[String]) -> String {
    const SHOWN: usize = 8;
    if agents.is_empty() {
        return "none".to_owned();
    }
    let names = agents.iter().take(SHOWN).map(|a| format!("`{a}`")).collect::<Vec<_>>().join(", ");
    match agents.len().saturating_sub(SHOWN) {
        0 => names,
        more => format!("{names} and {more} more"),
    }
}
