//! `tracelake vacuum`: deletes the files that commits replaced (a full analysis, a
//! re-import, a compaction) once no version younger than the retention needs them.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tracelake::lake::history::{expire, vacuum};

use super::Ctx;
use super::compact::table;
use super::time_args::{format_duration, parse_span};

#[derive(Debug, Args)]
pub struct VacuumArgs {
    /// Keep what versions of the last this long need: `--as-of` reads them (`0s`: only
    /// the current version).
    #[arg(long, default_value = "7d", value_parser = parse_span)]
    retain: Duration,
    /// Say what would be deleted; delete nothing.
    #[arg(long)]
    dry_run: bool,
}

pub fn run(ctx: &Ctx, args: VacuumArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.existing_lake()?;
    let retention = ctx
        .config
        .storage
        .retention_days
        .iter()
        .map(|(name, days)| table(name).map(|t| (t, *days)).map_err(|e| anyhow::anyhow!("storage.retentionDays: {e}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let verb = if args.dry_run { "would delete" } else { "deleted" };
    let expired = expire(&lake, &retention, args.dry_run)?;
    if !expired.is_empty() {
        let kept: Vec<String> = retention.iter().map(|(t, days)| format!("{} {days} days", t.dir_name())).collect();
        println!("{verb} {} file(s) of partitions older than storage.retentionDays ({})", expired.len(), kept.join(", "));
    }
    let summary = vacuum(&lake, args.retain, args.dry_run)?;
    for file in &summary.files {
        println!("{verb} {file}");
    }
    println!(
        "{verb} {} file(s) replaced over {} ago; versions since stay readable with --as-of",
        summary.files.len(),
        retention_text(args.retain)
    );
    Ok(ExitCode::SUCCESS)
}

/// `7d` for whole days, else as `--every` takes a duration.
fn retention_text(retain: Duration) -> String {
    match retain.as_secs() {
        s if s > 0 && s % 86_400 == 0 && retain.subsec_nanos() == 0 => format!("{}d", s / 86_400),
        _ => format_duration(retain),
    }
}
