//! `tracelake import`: JSONL files of raw events into the lake.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, bail};
use clap::Args;
use tracelake::load::import::{ImportOptions, ImportOutcome, ImportSource, ImportSummary, import_source};
use tracelake::privacy::PiiKind;

use super::{Ctx, human_bytes, progress, quarantined_text, rate};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// JSONL files to import (a directory: its .jsonl, .ndjson and .json files); `-` reads
    /// standard input.
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
    let decoder = ctx.decoder(&lake)?;
    let opts = ImportOptions { force: args.force, max_event_bytes: args.max_event_bytes, ..ImportOptions::default() };
    let files = input_files(&args.files)?;
    let importing = Arc::new(Mutex::new(None::<String>));
    super::interrupt::exit_on_interrupt({
        let importing = Arc::clone(&importing);
        move || match importing.lock().unwrap_or_else(PoisonError::into_inner).as_deref() {
            Some(file) => {
                format!("interrupted: nothing committed from {file}; run the command again (files imported before it are kept and skipped)")
            }
            None => "interrupted: every file finished was committed; run the command again for the rest".to_owned(),
        }
    })?;
    for file in &files {
        let name = if file == "-" { "standard input".to_owned() } else { file.clone() };
        *importing.lock().unwrap_or_else(PoisonError::into_inner) = Some(name);
        let source = ImportSource::from_arg(file);
        let total = match &source {
            ImportSource::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
            ImportSource::Stdin => None,
        };
        let bar = progress::bytes_bar(total, &format!("importing {file}"));
        let before = decoder.pii_counts();
        let outcome = import_source(&lake, &decoder, &source, &opts, &|n| bar.inc(n));
        *importing.lock().unwrap_or_else(PoisonError::into_inner) = None;
        bar.finish_and_clear();
        match outcome? {
            ImportOutcome::Imported(summary) => {
                println!("{}", summary_line(&summary));
                if let Some(line) = pii_line(&before, &decoder.pii_counts()) {
                    println!("  {line}");
                }
            }
            ImportOutcome::AlreadyImported { source, previous } => println!(
                "skipped {source}: the same content was imported on {} ({} events); use --force to import it again",
                previous.finished_at, previous.events
            ),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The files to import: directories replaced by their JSON Lines files, in name order;
/// every file checked first for what it cannot be imported as, so that nothing is imported
/// when one of them is wrong.
fn input_files(args: &[String]) -> anyhow::Result<Vec<String>> {
    let mut files = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        if arg == "-" || !path.is_dir() {
            files.push(arg.clone());
            continue;
        }
        let mut inside: Vec<String> = std::fs::read_dir(path)
            .with_context(|| format!("reading {arg}"))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| ["jsonl", "ndjson", "json"].contains(&e.to_string_lossy().as_ref())))
            .map(|p| p.display().to_string())
            .collect();
        if inside.is_empty() {
            bail!("{arg} is a directory with no .jsonl, .ndjson or .json file in it");
        }
        inside.sort();
        files.extend(inside);
    }
    for file in files.iter().filter(|f| *f != "-") {
        if let Some(hint) = not_json_lines(Path::new(file))? {
            bail!("{file} {hint}");
        }
    }
    Ok(files)
}

/// What `path` holds instead of JSON Lines, with the command that imports it, when its
/// first bytes tell: a compressed file, or one JSON array.
fn not_json_lines(path: &Path) -> anyhow::Result<Option<String>> {
    let mut head = [0u8; 64];
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let n = file.take(64).read(&mut head).with_context(|| format!("reading {}", path.display()))?;
    let head = &head[..n];
    let name = path.display();
    Ok(if head.starts_with(&[0x1f, 0x8b]) {
        Some(format!("is gzip-compressed: import it with `gunzip -c {name} | tracelake import --lake LAKE -`"))
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Some(format!("is zstd-compressed: import it with `zstd -dc {name} | tracelake import --lake LAKE -`"))
    } else if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') && !holds_transcript(path) {
        Some(format!(
            "holds a JSON array, not one JSON object a line: import it with `jq -c '.[]' {name} | tracelake import --lake LAKE -`"
        ))
    } else {
        None
    })
}

/// `personal data replaced: 3 email, 1 phone`: what an import replaced (`after` less
/// `before`), if anything.
fn pii_line(before: &[(PiiKind, u64)], after: &[(PiiKind, u64)]) -> Option<String> {
    let earlier = |kind| before.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
    let parts: Vec<String> =
        after.iter().map(|(k, n)| (k, n - earlier(*k))).filter(|(_, n)| *n > 0).map(|(k, n)| format!("{n} {}", k.as_str())).collect();
    (!parts.is_empty()).then(|| format!("personal data replaced: {}", parts.join(", ")))
}

/// Whether the JSON array in `path` is a chat transcript (messages with a `role`).
fn holds_transcript(path: &Path) -> bool {
    let text = std::fs::read(path).unwrap_or_default();
    serde_json::from_slice(&text).is_ok_and(|value| tracelake::ingest::transcript::is_transcript(&value))
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
