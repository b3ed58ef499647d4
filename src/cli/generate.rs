//! `tracelake generate`: deterministic synthetic traces.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use tracelake::generate::{GenerateOptions, generate};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Number of events (lines) to write.
    #[arg(long, env = "TRACELAKE_EVENTS")]
    events: u64,
    /// Random seed; the same seed gives the same file.
    #[arg(long, env = "TRACELAKE_SEED", default_value_t = 42)]
    seed: u64,
    /// Output JSONL file; what was injected goes to FILE.expected.json beside it.
    #[arg(long, env = "TRACELAKE_GENERATE_OUTPUT")]
    output: PathBuf,
}

pub fn run(args: GenerateArgs) -> anyhow::Result<ExitCode> {
    let file = File::create(&args.output).with_context(|| format!("creating {}", args.output.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let expected = generate(&GenerateOptions { events: args.events, seed: args.seed }, &mut out)
        .with_context(|| format!("writing {}", args.output.display()))?;
    out.flush()?;
    let sidecar = expected_path(&args.output);
    std::fs::write(&sidecar, serde_json::to_vec_pretty(&expected)?).with_context(|| format!("writing {}", sidecar.display()))?;
    println!(
        "wrote {} events in {} sessions to {} (injected findings in {})",
        expected.events,
        expected.sessions,
        args.output.display(),
        sidecar.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `x.jsonl` → `x.jsonl.expected.json`.
pub fn expected_path(output: &std::path::Path) -> PathBuf {
    let mut name = output.as_os_str().to_owned();
    name.push(".expected.json");
    PathBuf::from(name)
}
