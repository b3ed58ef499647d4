//! `tracelake upgrade`: moves the state of a lake made by an earlier release into its
//! events table's Delta log and writes the logs its tables lack, in place (nothing is
//! copied: the committed files become each table's current version).

use std::process::ExitCode;

use clap::Args;
use tracelake::lake::Table;
use tracelake::lake::commit::{begin, upgrade};
use tracelake::lake::delta;
use tracelake::report::text::shell_word;

use super::Ctx;

#[derive(Debug, Args)]
pub struct UpgradeArgs {}

pub fn run(ctx: &Ctx, _args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let upgraded = upgrade(&lake)?;
    let (manifest, _) = begin(&lake)?;
    if upgraded.is_none() {
        println!("{}: nothing to upgrade; its state is in the events table's Delta log", shell_word(&lake.location()));
    }
    for table in Table::ALL {
        let version = delta::version(&lake, table)?.map_or_else(|| "no log".to_owned(), |v| format!("version {v}"));
        println!("{:<16} Delta {version}, {} committed file(s)", table.dir_name(), manifest.table_files(table).len());
    }
    Ok(ExitCode::SUCCESS)
}
