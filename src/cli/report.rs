//! `tracelake report`: what the lake knows, as HTML, Markdown or JSON.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use tracelake::lake::history::AsOf;
use tracelake::report::anonymize::anonymize;
use tracelake::report::json::write_json_pretty;
use tracelake::report::{html, lake_report};

use super::Ctx;
use super::time_args::parse_as_of;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Html,
    Markdown,
    Json,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// `html`: a page with charts and transcripts; `markdown` and `json`: the findings and
    /// their statistics.
    #[arg(long, value_enum, env = "TRACELAKE_REPORT_FORMAT", default_value_t = Format::Html)]
    format: Format,
    /// Write the report here instead of standard output.
    #[arg(long, env = "TRACELAKE_REPORT_OUTPUT")]
    output: Option<PathBuf>,
    /// Strip agent names, session ids, user content, paths, hostnames and IPs, for sharing.
    #[arg(long, env = "TRACELAKE_ANONYMIZE")]
    anonymize: bool,
    /// Findings to show at most (most severe first) [default: output.maxFindings].
    #[arg(long, env = "TRACELAKE_MAX_FINDINGS")]
    max_findings: Option<usize>,
    /// Report on the lake as it was: at a revision (as `status` prints it) or a time.
    #[arg(long, value_parser = parse_as_of)]
    as_of: Option<AsOf>,
}

pub async fn run(ctx: &Ctx, args: ReportArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    if args.format == Format::Html && args.output.is_none() && std::io::stdout().is_terminal() {
        bail!("the HTML report is a page for a browser: pass --output report.html, or --format markdown to read it here");
    }
    let max = args.max_findings.unwrap_or_else(|| usize::try_from(ctx.config.output.max_findings.max(0)).unwrap_or(usize::MAX));
    let mut report = lake_report(&lake, &ctx.config, ctx.redactor()?, max, args.as_of).await?;
    for section in &report.left_out {
        eprintln!("warning: the report leaves out {section}");
    }
    if args.anonymize {
        anonymize(&mut report);
    }
    let text = match args.format {
        Format::Html => html::render(&report),
        Format::Markdown => report.report.to_markdown(),
        Format::Json => {
            let mut json = Vec::new();
            write_json_pretty(&report.report, &mut json)?;
            String::from_utf8(json).expect("JSON is UTF-8") + "\n"
        }
    };
    match &args.output {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
