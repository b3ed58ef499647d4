//! `tracelake sql`: ad-hoc SQL over the lake, one-shot or interactive.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use datafusion::prelude::SessionContext;
use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tracelake::engine::{PrintFormat, open_session, print_statements};
use tracelake::lake::Lake;

use super::Ctx;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// SQL to run (several statements separated by `;`). Without it and without -f: an
    /// interactive prompt on a terminal, or SQL read from standard input.
    query: Option<String>,
    /// Read the SQL from a file.
    #[arg(short = 'f', long = "file", env = "TRACELAKE_SQL_FILE", conflicts_with = "query")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, env = "TRACELAKE_SQL_FORMAT", default_value_t = PrintFormat::Table)]
    format: PrintFormat,
}

pub async fn run(ctx: &Ctx, args: SqlArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let session = open_session(&lake, ctx.redactor()?, &ctx.engine()?).await?;
    let sql = match (&args.query, &args.file) {
        (Some(q), _) => q.clone(),
        (None, Some(path)) => std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
        (None, None) if std::io::stdin().is_terminal() => {
            return repl(&session, &lake, args.format).await;
        }
        (None, None) => {
            let mut sql = String::new();
            std::io::stdin().read_to_string(&mut sql).context("reading SQL from standard input")?;
            sql
        }
    };
    execute(&session, &lake, &sql, args.format).await?;
    Ok(ExitCode::SUCCESS)
}

async fn execute(session: &SessionContext, lake: &Lake, sql: &str, format: PrintFormat) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    print_statements(session, lake, sql, format, &mut out).await?;
    out.flush()?;
    Ok(())
}

/// Statements end with `;`; `\q` or `exit` leaves.
async fn repl(session: &SessionContext, lake: &Lake, format: PrintFormat) -> anyhow::Result<ExitCode> {
    let mut editor = DefaultEditor::new().context("starting the interactive prompt")?;
    println!(
        "tracelake SQL — tables: events, quarantine, findings, failures; views: chains, chain_events, tool_attempts. End statements with `;`, `\\q` to quit."
    );
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() { "tracelake> " } else { "       ...> " };
        match editor.readline(prompt) {
            Ok(line) => {
                let trimmed = line.trim();
                if buffer.is_empty() && matches!(trimmed, "\\q" | "quit" | "exit") {
                    break;
                }
                buffer.push_str(&line);
                buffer.push('\n');
                if trimmed.ends_with(';') {
                    let _ = editor.add_history_entry(buffer.trim());
                    if let Err(e) = execute(session, lake, &buffer, format).await {
                        eprintln!("error: {}", super::message(&e));
                    }
                    buffer.clear();
                }
            }
            Err(ReadlineError::Interrupted) => buffer.clear(),
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e).context("reading input"),
        }
    }
    Ok(ExitCode::SUCCESS)
}
