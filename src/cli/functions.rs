//! `tracelake functions`: the SQL functions tracelake adds, with what they do.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use tracelake::engine::functions::tracelake_functions;

use super::Ctx;

#[derive(Debug, Args)]
pub struct FunctionsArgs {
    /// Only functions whose name contains this.
    pattern: Option<String>,
}

pub fn run(ctx: &Ctx, args: FunctionsArgs) -> anyhow::Result<ExitCode> {
    let functions: Vec<_> = tracelake_functions(&ctx.engine()?)
        .into_iter()
        .filter(|f| args.pattern.as_deref().is_none_or(|p| f.name.contains(&p.to_lowercase())))
        .collect();
    if functions.is_empty() {
        anyhow::bail!("no tracelake function matches `{}`; `tracelake functions` lists them all", args.pattern.unwrap_or_default());
    }
    let mut out = std::io::stdout().lock();
    for f in functions {
        writeln!(out, "{}  ({})\n    {}", f.syntax, f.kind, f.description)?;
        for (name, what) in &f.arguments {
            writeln!(out, "      {name}: {what}")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
