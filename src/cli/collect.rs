//! `tracelake collect`: an OTLP/HTTP receiver writing spans to the lake.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use tracelake::receiver::{CollectOptions, collect};

use super::Ctx;

#[derive(Debug, Args)]
pub struct CollectArgs {
    /// Address to serve OTLP/HTTP on (`POST /v1/traces`, protobuf or JSON, gzip or not):
    /// HOST:PORT, a host name resolved (`localhost:4318`).
    #[arg(long, env = "TRACELAKE_COLLECT_LISTEN", default_value = "127.0.0.1:4318", value_parser = super::listen_addr::listen_addr)]
    listen: SocketAddr,
    /// How long a request waits for others to be committed with it, in milliseconds: a
    /// request is answered once committed.
    #[arg(long, env = "TRACELAKE_COLLECT_COMMIT_MS", default_value_t = 200)]
    commit_ms: u64,
}

pub async fn run(ctx: &Ctx, args: CollectArgs) -> anyhow::Result<ExitCode> {
    let lake = ctx.lake_to_write()?;
    let decoder = ctx.decoder(&lake)?;
    let opts = CollectOptions { listen: args.listen, commit_interval: Duration::from_millis(args.commit_ms), ..CollectOptions::default() };
    let interrupted = super::interrupt::on_interrupt()?;
    let ready = |addr: SocketAddr| {
        eprintln!("collecting OTLP traces on http://{addr}/v1/traces into {} (Ctrl-C or SIGTERM stops)", lake.location());
    };
    let stopping = async {
        interrupted.await;
        eprintln!("stopping: committing what was received…");
    };
    let s = collect(&lake, decoder, &opts, ready, stopping).await?;
    println!(
        "collected {} requests: {} spans, {} events; {} sent again and not written twice, {} refused",
        s.requests, s.spans, s.events, s.repeated, s.rejected
    );
    Ok(ExitCode::SUCCESS)
}
