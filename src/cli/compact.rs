//! `tracelake compact`: the small files of each partition merged into one, as a commit.

use std::process::ExitCode;

use clap::Args;
use tracelake::lake::Table;
use tracelake::lake::compact::compact;

use super::Ctx;

#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Tables to compact (`events`, `findings`, …; default: all).
    #[arg(long = "table", value_parser = table)]
    tables: Vec<Table>,
}

pub fn table(name: &str) -> Result<Table, String> {
    Table::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Table::ALL.iter().map(|t| t.dir_name()).collect();
        format!("no table {name:?}; the lake's tables are {}", names.join(", "))
    })
}

pub fn run(ctx: &Ctx, args: CompactArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let summary = compact(&lake, &args.tables)?;
    if summary.merged == 0 {
        println!("nothing to compact: no partition holds two or more small files of one writer");
    } else {
        println!(
            "merged {} file(s) into {} ({} rows); the replaced files stay for --as-of until `tracelake vacuum`",
            summary.merged, summary.written, summary.rows
        );
    }
    Ok(ExitCode::SUCCESS)
}
