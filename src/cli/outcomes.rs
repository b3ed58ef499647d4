//! `tracelake outcomes import FILE`: the known outcome of sessions (task success, a thumbs
//! down, an eval score) into the lake's `outcomes` table, for `tracelake score`.

use std::io::Read;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use datafusion::prelude::SessionContext;
use tracelake::engine::open_session;
use tracelake::lake::Lake;
use tracelake::load::outcomes::{OutcomeImport, import_outcomes};
use tracelake::output::outcome_source::{OutcomeSource, use_outcomes};

use super::Ctx;

#[derive(Debug, Args)]
pub struct OutcomesArgs {
    #[command(subcommand)]
    command: OutcomesCommand,
}

#[derive(Debug, Subcommand)]
enum OutcomesCommand {
    /// Load outcomes from JSON Lines or CSV (session, outcome success|failure, optional
    /// score or reward, optional source); a later import of a session's outcome wins.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
struct ImportArgs {
    /// JSON Lines or CSV file (with a header row); `-` reads standard input.
    file: String,
    /// The file's format [default: from the extension, else from the content].
    #[arg(long, value_enum)]
    format: Option<OutcomesFormat>,
    /// Import again even if the same content was imported before.
    #[arg(long, env = "TRACELAKE_OUTCOMES_FORCE")]
    force: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutcomesFormat {
    Jsonl,
    Csv,
}

/// Lines not taken that are printed one by one; the rest are counted.
const SHOWN_REJECTS: usize = 5;

pub fn run(ctx: &Ctx, args: OutcomesArgs) -> anyhow::Result<ExitCode> {
    let OutcomesCommand::Import(args) = args.command;
    let lake = ctx.existing_lake()?;
    let mut bytes = Vec::new();
    if args.file == "-" {
        std::io::stdin().read_to_end(&mut bytes).context("reading standard input")?;
    } else {
        bytes = std::fs::read(&args.file).with_context(|| format!("reading {}", args.file))?;
    }
    let csv = match args.format {
        Some(format) => Some(format == OutcomesFormat::Csv),
        None if args.file.to_ascii_lowercase().ends_with(".csv") => Some(true),
        None if [".jsonl", ".json", ".ndjson"].iter().any(|e| args.file.to_ascii_lowercase().ends_with(e)) => Some(false),
        None => None,
    };
    let (outcomes, rejected, replaced) = match import_outcomes(&lake, &args.file, &bytes, csv, args.force)? {
        OutcomeImport::AlreadyImported { previous } => {
            println!(
                "skipped {}: the same content was imported on {} ({} outcomes); use --force to import it again",
                args.file, previous.finished_at, previous.outcomes
            );
            return Ok(ExitCode::SUCCESS);
        }
        OutcomeImport::NoOutcomes { rejected } => {
            print_rejected(&rejected);
            anyhow::bail!(
                "{} holds no outcome: each line needs a session and an outcome (success or failure), as JSON Lines or CSV with a header row",
                args.file
            );
        }
        OutcomeImport::Imported { outcomes, rejected, replaced } => (outcomes, rejected, replaced),
    };
    print_rejected(&rejected);
    let replaced = if replaced { " (replacing its earlier import)" } else { "" };
    println!("imported {}: {outcomes} outcomes, {} lines rejected{replaced}", args.file, rejected.len());
    Ok(ExitCode::SUCCESS)
}

fn print_rejected(rejected: &[tracelake::ingest::outcomes::BadOutcome]) {
    for bad in rejected.iter().take(SHOWN_REJECTS) {
        eprintln!("line {}: {}", bad.line, bad.reason);
    }
    if rejected.len() > SHOWN_REJECTS {
        eprintln!("… and {} more lines rejected", rejected.len() - SHOWN_REJECTS);
    }
}

/// `--outcomes` of `score` and `factors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Outcomes {
    Imported,
    Inferred,
}

impl From<Outcomes> for OutcomeSource {
    fn from(outcomes: Outcomes) -> Self {
        match outcomes {
            Outcomes::Imported => OutcomeSource::Imported,
            Outcomes::Inferred => OutcomeSource::Inferred,
        }
    }
}

/// The lake, and a session over it whose `session_outcomes` are those `outcomes` names.
pub async fn scored_session(ctx: &Ctx, outcomes: Outcomes) -> anyhow::Result<(Lake, SessionContext)> {
    let lake = ctx.existing_lake()?;
    let session = open_session(&lake, ctx.redactor()?, &ctx.engine()?).await?;
    use_outcomes(&session, outcomes.into()).await?;
    Ok((lake, session))
}
