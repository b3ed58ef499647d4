//! `tracelake score`: which signals separate the sessions that failed from those that went
//! well, over the outcomes loaded with `tracelake outcomes import`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tracelake::engine::open_session;
use tracelake::output::score::signal_scores;

use super::Ctx;

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// Output format.
    #[arg(long, value_enum, env = "TRACELAKE_SCORE_FORMAT", default_value_t = ScoreFormat::Table)]
    format: ScoreFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScoreFormat {
    Table,
    Json,
}

pub async fn run(ctx: &Ctx, args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let session = open_session(&lake, ctx.redactor()?, &ctx.engine()?).await?;
    let scores = signal_scores(&session).await?;
    let mut out = std::io::stdout().lock();
    match args.format {
        ScoreFormat::Table => write!(out, "{}", scores.to_terminal())?,
        ScoreFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&scores)?)?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
