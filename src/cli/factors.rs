//! `tracelake factors`: which conditions go with failure in the lake's traffic, over the
//! outcomes loaded with `tracelake outcomes import`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use datafusion::prelude::SessionContext;
use tracelake::detect::detectors::sql_files;
use tracelake::engine::computed_once::ComputedOnce;
use tracelake::engine::query_json;
use tracelake::output::factors::{factor_scores, factors_query};

use super::Ctx;
use super::outcomes::{Outcomes, scored_session};

#[derive(Debug, Args)]
pub struct FactorsArgs {
    /// The outcomes to score against: `imported` (`tracelake outcomes import`), or
    /// `inferred`: also those read from what the users said next, for the sessions with
    /// none imported.
    #[arg(long, value_enum, default_value_t = Outcomes::Imported)]
    outcomes: Outcomes,
    /// Output format.
    #[arg(long, value_enum, env = "TRACELAKE_FACTORS_FORMAT", default_value_t = FactorsFormat::Table)]
    format: FactorsFormat,
    /// Factor values held by fewer scored sessions than this are not tested.
    #[arg(long, env = "TRACELAKE_FACTORS_MIN_SUPPORT", default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
    min_support: u64,
    /// A directory of factor files: each `.sql` file one query returning `session`,
    /// `factor` and `value`.
    #[arg(long, env = "TRACELAKE_FACTORS")]
    factors: Option<PathBuf>,
    /// List the factors and their values (with how many sessions hold each) instead of
    /// scoring them.
    #[arg(long)]
    list: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FactorsFormat {
    Table,
    Json,
    Csv,
}

pub async fn run(ctx: &Ctx, args: FactorsArgs) -> anyhow::Result<ExitCode> {
    let (_, session) = scored_session(ctx, args.outcomes).await?;
    let extra = match &args.factors {
        Some(dir) => factor_files(&session, dir).await?,
        None => Vec::new(),
    };
    let mut out = std::io::stdout().lock();
    if args.list {
        let all = factors_query(&extra);
        let sql = format!(
            "SELECT factor, count(DISTINCT value) AS \"values\", count(DISTINCT session) AS sessions FROM ({all}) GROUP BY factor ORDER BY factor"
        );
        for row in query_json(&session, &sql).await? {
            writeln!(
                out,
                "{:<40} {:>6} values  {:>8} sessions",
                row["factor"].as_str().unwrap_or_default(),
                row["values"],
                row["sessions"]
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    // Read twice (the totals, then each value's sessions): computed once.
    let _scored = ComputedOnce::new(&session, "scored_sessions").await?;
    // A hint in an error names the lake where the error is printed.
    let report = factor_scores(&session, &extra, args.min_support).await?;
    match args.format {
        FactorsFormat::Table => write!(out, "{}", report.to_terminal())?,
        FactorsFormat::Json => writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?,
        FactorsFormat::Csv => write!(out, "{}", report.to_csv())?,
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The queries of the `.sql` files in `dir`, in name order, each checked to plan and to
/// return `session`, `factor` and `value`.
pub async fn factor_files(session: &SessionContext, dir: &Path) -> anyhow::Result<Vec<String>> {
    let paths = sql_files(dir).with_context(|| format!("reading the factors directory {}", dir.display()))?;
    let mut queries = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        let sql = text.trim().trim_end_matches(';').to_owned();
        let check = format!("SELECT session, factor, value FROM ({sql}) LIMIT 0");
        session
            .sql_with_options(&check, tracelake::engine::sql::query_only())
            .await
            .with_context(|| format!("{}: a factor file is one query returning session, factor and value", path.display()))?;
        queries.push(sql);
    }
    Ok(queries)
}
