//! `tracelake score`: which signals separate the sessions that failed from those that went
//! well, over the outcomes loaded with `tracelake outcomes import`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tracelake::output::outcome_source::agreement;
use tracelake::output::score::{fold_scores, signal_scores};
use tracelake::report::text::with_lake;

use super::Ctx;
use super::outcomes::{Outcomes, scored_session};

#[derive(Debug, Args)]
pub struct ScoreArgs {
    /// The outcomes to score against: `imported` (`tracelake outcomes import`), or
    /// `inferred`: also those read from what the users said next, for the sessions with
    /// none imported.
    #[arg(long, value_enum, default_value_t = Outcomes::Imported)]
    outcomes: Outcomes,
    /// Output format.
    #[arg(long, value_enum, env = "TRACELAKE_SCORE_FORMAT", default_value_t = ScoreFormat::Table)]
    format: ScoreFormat,
    /// Also split the scored sessions into K folds by task and score each signal in each,
    /// so that a signal that holds only on some tasks shows it.
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(2..=100))]
    folds: Option<u64>,
    /// With --folds: the SQL expression over `session` that names a session's task
    /// (default: the session id without a trial suffix such as `-t3`).
    #[arg(long, value_name = "SQL", requires = "folds")]
    group_by: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ScoreFormat {
    Table,
    Json,
}

pub async fn run(ctx: &Ctx, args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let (lake, session) = scored_session(ctx, args.outcomes).await?;
    let scores = signal_scores(&session).await?;
    let agreement = agreement(&session).await?;
    let folded = match args.folds {
        Some(k) => Some(fold_scores(&session, k, args.group_by.as_deref(), &scores).await?),
        None => None,
    };
    let mut out = std::io::stdout().lock();
    match args.format {
        ScoreFormat::Table => {
            write!(out, "{}", with_lake(&scores.to_terminal(), &lake.location()))?;
            if let Some(agreement) = &agreement {
                write!(out, "\n{}", agreement.to_terminal())?;
            }
            if let Some(folded) = &folded {
                write!(out, "{}", folded.to_terminal())?;
            }
        }
        ScoreFormat::Json => {
            let mut json = serde_json::to_value(&scores)?;
            if let Some(folded) = &folded {
                json["folds"] = serde_json::to_value(folded)?;
            }
            if let Some(agreement) = &agreement {
                json["inferredAgreement"] = serde_json::to_value(agreement)?;
            }
            writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
