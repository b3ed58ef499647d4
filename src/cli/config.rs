//! `tracelake config`: the effective settings and where each came from.

use std::process::ExitCode;

use clap::Args;
use serde_json::{Value, json};
use tracelake::config::Setting;

use super::Ctx;

#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print the settings as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(ctx: &Ctx, args: ConfigArgs) -> anyhow::Result<ExitCode> {
    let file = ctx.config_file.as_ref();
    let root: Option<Value> = match file {
        Some(path) => Some(serde_json::from_slice(&std::fs::read(path)?)?),
        None => None,
    };
    let source = |s: &Setting| match (s.from_file, file) {
        (true, Some(path)) => path.display().to_string(),
        _ => "default".to_owned(),
    };
    let settings = ctx.config.settings(root.as_ref(), &tracelake::detect::signals::settings_in_effect(&ctx.config));
    if args.json {
        let rows: Vec<Value> = settings.iter().map(|s| json!({"key": s.key, "value": s.value, "from": source(s)})).collect();
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    match file {
        Some(path) => println!("config file: {} (--config or TRACELAKE_CONFIG)", path.display()),
        None => println!("config file: none (--config FILE or TRACELAKE_CONFIG; every setting is its default)"),
    }
    match &ctx.lake {
        Some(lake) => println!("lake: {} (--lake or TRACELAKE_LAKE)", lake.display()),
        None => println!("lake: none (--lake DIR or TRACELAKE_LAKE)"),
    }
    let width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
    let values: Vec<String> = settings.iter().map(|s| s.value.to_string()).collect();
    let value_width = values.iter().map(String::len).max().unwrap_or(0).min(40);
    println!();
    for (setting, value) in settings.iter().zip(&values) {
        println!("{:width$}  {value:value_width$}  {}", setting.key, source(setting));
    }
    Ok(ExitCode::SUCCESS)
}
