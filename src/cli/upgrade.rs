//! `tracelake upgrade`: writes the Delta logs of a lake made before tables had them, in
//! place (nothing is copied: the committed files become each table's first version).

use std::process::ExitCode;

use clap::Args;
use tracelake::lake::Table;
use tracelake::lake::commit::begin;
use tracelake::lake::delta;

use super::Ctx;

#[derive(Debug, Args)]
pub struct UpgradeArgs {}

pub fn run(ctx: &Ctx, _args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let (manifest, _) = begin(&lake)?;
    for table in Table::ALL {
        let version = delta::version(&lake, table)?.map_or_else(|| "no log".to_owned(), |v| format!("version {v}"));
        println!("{:<16} Delta {version}, {} committed file(s)", table.dir_name(), manifest.table_files(table).len());
    }
    Ok(ExitCode::SUCCESS)
}
