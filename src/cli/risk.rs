//! `tracelake risk`: a risk score per session from its factors and signals, how well it
//! ranks failures on tasks it never saw, and the riskiest sessions no signal flagged.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};
use tracelake::lake::risk::write_session_risks;
use tracelake::output::risk::session_risks;

use super::Ctx;
use super::factors::factor_files;
use super::outcomes::{Outcomes, scored_session};

#[derive(Debug, Args)]
pub struct RiskArgs {
    /// The outcomes to fit against: `imported`, or `inferred` (also those read from what
    /// the users said next, for the sessions with none imported).
    #[arg(long, value_enum, default_value_t = Outcomes::Imported)]
    outcomes: Outcomes,
    /// Folds of the cross-validation; the sessions of one task stay in one fold.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(2..=100))]
    folds: u64,
    /// The SQL expression over `session` that names a session's task (default: the
    /// session id without a trial suffix such as `-t3`).
    #[arg(long, value_name = "SQL")]
    group_by: Option<String>,
    /// Factor values held by fewer scored sessions than this are left out of the model.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    min_support: u64,
    /// A directory of factor files (as for `tracelake factors`) whose factors the model
    /// weighs too.
    #[arg(long, env = "TRACELAKE_FACTORS")]
    factors: Option<PathBuf>,
    /// How many of the riskiest sessions without a finding to show.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t = RiskFormat::Table)]
    format: RiskFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum RiskFormat {
    Table,
    Json,
}

pub async fn run(ctx: &Ctx, args: RiskArgs) -> anyhow::Result<ExitCode> {
    let (lake, session) = scored_session(ctx, args.outcomes).await?;
    let extra = match &args.factors {
        Some(dir) => factor_files(&session, dir).await?,
        None => Vec::new(),
    };
    let report = session_risks(&session, &extra, args.folds, args.group_by.as_deref(), args.min_support, args.top).await?;
    let outcomes = args.outcomes.to_possible_value().map(|v| v.get_name().to_owned()).unwrap_or_default();
    write_session_risks(&lake, &report.risks, &outcomes, report.cross_validated_auc)?;
    let mut out = std::io::stdout().lock();
    match args.format {
        RiskFormat::Table => write!(out, "{}", report.to_terminal())?,
        RiskFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
    }
    out.flush()?;
    if args.format == RiskFormat::Table {
        eprintln!("wrote the risk of {} sessions to the table session_risk", report.risks.len());
    }
    Ok(ExitCode::SUCCESS)
}
