//! `tracelake demo`: the bundled sample through the whole pipeline.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use tracelake::engine::{PrintFormat, open_session, run_statements};
use tracelake::ingest::Decoder;
use tracelake::lake::Lake;
use tracelake::load::import::{ImportOptions, ImportOutcome, ImportSource, import_source};
use tracelake::pipeline::{AnalyzeOptions, analyze};
use tracelake::report::text::shell_word;
use tracelake::temp_dirs::ProcessTempDir;

use super::{Ctx, import::summary_line, is_new_or_empty, status::describe};

/// Generated with `tracelake generate --events 3000 --seed 7 --output data/sample.events.jsonl`.
const SAMPLE: &[u8] = include_bytes!("../../data/sample.events.jsonl");

#[derive(Debug, Args)]
pub struct DemoArgs {}

const QUERIES: &[(&str, &str)] = &[
    (
        "Events by type and schema",
        "SELECT type, schema, count(*) AS events FROM events GROUP BY type, schema ORDER BY events DESC, type, schema",
    ),
    (
        "Failing tools",
        "SELECT tool_name, count(*) AS failures, min(tool_error) AS example_error FROM events \
         WHERE type = 'tool.result' AND (tool_is_error OR tool_error IS NOT NULL) \
         GROUP BY tool_name ORDER BY failures DESC LIMIT 5",
    ),
    (
        "Busiest agents",
        "SELECT agent, count(DISTINCT session) AS sessions, count(*) AS events, sum(usage_total) AS llm_tokens \
         FROM events GROUP BY agent ORDER BY events DESC",
    ),
];

/// Marks a lake the demo made, which a later demo may write into again.
const DEMO_MARKER: &str = "made-by-demo";

/// `dir` as the demo's lake, when it is new, empty, or a lake an earlier demo made: the
/// demo imports its sample and starts the analysis afresh, which must never touch a lake
/// of real traces (`TRACELAKE_LAKE` may well name one).
fn demo_lake(dir: &Path) -> anyhow::Result<Lake> {
    let marker = dir.join("_state").join(DEMO_MARKER);
    if !is_new_or_empty(dir)? && !marker.exists() {
        bail!(
            "{} is not empty and is not a lake the demo made: the demo writes only into a new or empty directory. \
             Run `tracelake demo --lake NEW_DIR`, or `tracelake demo` without --lake (and without TRACELAKE_LAKE) for a temporary lake",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir.join("_state")).with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(&marker, b"").with_context(|| format!("writing {}", marker.display()))?;
    Ok(Lake::new(dir))
}

pub async fn run(ctx: &Ctx, _args: DemoArgs) -> anyhow::Result<ExitCode> {
    // A demo stopped with `kill -9` leaves its lake to the next run to remove.
    let temp = ProcessTempDir::new("demo")?;
    let lake = match &ctx.lake {
        Some(dir) => demo_lake(dir)?,
        None => Lake::new(temp.path().join("lake")),
    };
    let sample = temp.path().join("sample.events.jsonl");
    std::fs::write(&sample, SAMPLE).context("writing the sample data")?;

    println!("tracelake demo: {} sample events → lake at {}\n", SAMPLE.iter().filter(|&&b| b == b'\n').count(), lake.root().display());
    let decoder = Decoder::new(ctx.redactor()?);
    let opts = ImportOptions { force: true, ..ImportOptions::default() };
    if let ImportOutcome::Imported(summary) = import_source(&lake, &decoder, &ImportSource::File(sample), &opts, &|_| {})? {
        println!("{}\n", summary_line(&summary));
    }
    let session = open_session(&lake, ctx.redactor()?, &ctx.engine()?).await?;
    print!("{}", describe(&session).await?);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for (title, sql) in QUERIES {
        writeln!(out, "\n{title}:")?;
        run_statements(&session, sql, |schema, batches| PrintFormat::Table.write(&mut out, &schema, &batches)).await?;
    }
    let analysis = analyze(&lake, &ctx.config, ctx.redactor()?, &AnalyzeOptions { full: true, ..AnalyzeOptions::default() }).await?;
    writeln!(out, "\nAnalysis:")?;
    let report = analysis.into_report();
    let report = if ctx.lake.is_some() { report.at_lake(&lake.location()) } else { report };
    write!(out, "{}", report.to_terminal(10))?;
    if ctx.lake.is_none() {
        writeln!(
            out,
            "\nThe demo lake was temporary. Keep one with `tracelake demo --lake DIR`, then explore it with `tracelake sql --lake DIR`."
        )?;
    } else {
        let dir = shell_word(&lake.location());
        writeln!(out, "\nExplore it: tracelake sql --lake {dir} \"SELECT * FROM findings LIMIT 5\"")?;
        writeln!(out, "Report with charts: tracelake report --lake {dir} --format html --output report.html")?;
    }
    Ok(ExitCode::SUCCESS)
}
