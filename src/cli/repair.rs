//! `tracelake repair`: rebuild a damaged lake's state from the files it can read.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

use anyhow::bail;
use clap::Args;
use tracelake::lake::commit::RunLock;
use tracelake::lake::repair::{RepairPlan, apply_repair, plan_repair, why_unreadable};
use tracelake::report::text::shell_word;

use super::Ctx;

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// Apply the repair without asking.
    #[arg(long)]
    yes: bool,
}

pub fn run(ctx: &Ctx, args: RepairArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let lock = RunLock::all(&lake)?;
    let (manifest, plan) = plan_repair(&lake)?;
    if plan.is_empty() {
        println!("{}: nothing to repair; every committed file is there and every data file is committed", lake.root().display());
        return Ok(ExitCode::SUCCESS);
    }
    print!("{}", describe(&plan));
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("nothing changed; run `tracelake repair --lake {} --yes` to apply this", shell_word(&lake.location()));
        }
        print!("Apply? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing changed");
            return Ok(ExitCode::SUCCESS);
        }
    }
    let repaired = apply_repair(&lake, manifest, &plan, &ctx.config.nats.stream, &lock)?;
    println!("repaired: the lake has {} committed file(s)", repaired.committed_files().len());
    Ok(ExitCode::SUCCESS)
}

fn describe(plan: &RepairPlan) -> String {
    let mut out = String::new();
    if plan.manifest_missing {
        out.push_str("the events table's Delta log (events/_delta_log), which holds the lake's state, is missing: the state is rebuilt from the data files.\n");
    }
    if !plan.missing.is_empty() {
        out.push_str(&format!("{} committed file(s) are missing and are dropped from the lake:\n", plan.missing.len()));
        plan.missing.iter().for_each(|f| out.push_str(&format!("  {f}\n")));
    }
    if !plan.unreadable.is_empty() {
        out.push_str(&format!("{} file(s) do not read as Parquet and are moved to _state/damaged/:\n", plan.unreadable.len()));
        plan.unreadable.iter().for_each(|(f, why)| out.push_str(&format!("  {f}: {}\n", why_unreadable(why))));
    }
    if !plan.adopted.is_empty() {
        let files: usize = plan.adopted.values().map(Vec::len).sum();
        out.push_str(&format!("{files} readable file(s) no commit names are committed:\n"));
        for file in plan.adopted.values().flatten() {
            out.push_str(&format!("  {} ({} rows)\n", file.path, file.rows));
        }
    }
    out
}
