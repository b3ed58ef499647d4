//! `tracelake import`: JSONL files of raw events into the lake.

use std::process::ExitCode;

use clap::Args;
use tracelake::ingest::Decoder;
use tracelake::lake::import::{ImportOptions, ImportOutcome, ImportSource, ImportSummary, import_source};

use super::{Ctx, human_bytes, progress, quarantined_text, rate};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// JSONL files to import; `-` reads standard input.
    #[arg(required = true)]
    files: Vec<String>,
    /// Import again even if the same content was imported before (replacing it).
    #[arg(long, env = "TRACELAKE_IMPORT_FORCE")]
    force: bool,
    /// Largest accepted event in bytes; longer lines are quarantined.
    #[arg(long, env = "TRACELAKE_MAX_EVENT_BYTES", default_value_t = tracelake::ingest::DEFAULT_MAX_EVENT_BYTES)]
    max_event_bytes: usize,
}

pub fn run(ctx: &Ctx, args: ImportArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.lake_to_write()?;
    let decoder = Decoder::new(ctx.redactor()?);
    let opts = ImportOptions { force: args.force, max_event_bytes: args.max_event_bytes, ..ImportOptions::default() };
    for file in &args.files {
        let source = ImportSource::from_arg(file);
        let total = match &source {
            ImportSource::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            ImportSource::Stdin => None,
        };
        let bar = progress::bytes_bar(total, &format!("importing {file}"));
        let outcome = import_source(&lake, &decoder, &source, &opts, &|n| bar.inc(n));
        bar.finish_and_clear();
        match outcome? {
            ImportOutcome::Imported(summary) => println!("{}", summary_line(&summary)),
            ImportOutcome::AlreadyImported { source, previous } => println!(
                "skipped {source}: the same content was imported on {} ({} events); use --force to import it again",
                previous.finished_at, previous.events
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `imported F: 8758 events, 0 quarantined, 4.6 MB in 0.21 s (41,000 events/s)`.
pub fn summary_line(s: &ImportSummary) -> String {
    let quarantined = quarantined_text(&s.quarantined);
    let rate = rate(s.events, s.seconds);
    let swept = if s.swept > 0 { format!("; removed {} leftover file(s) of an interrupted write", s.swept) } else { String::new() };
    let grown = if s.lines_before > 0 {
        format!(" (lines {}–{}: the file grew since its last import)", s.lines_before + 1, s.lines_before + s.lines)
    } else {
        String::new()
    };
    format!(
        "imported {}{grown}: {} events, {quarantined}, {} in {:.2} s ({:.0} events/s){swept}",
        s.source,
        s.events,
        human_bytes(s.bytes),
        s.seconds,
        rate
    )
}
