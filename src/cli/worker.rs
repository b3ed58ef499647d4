//! `tracelake worker`: serves the query plans of `--workers` runs.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;
use tracelake::engine::distributed::serve_worker;

use super::Ctx;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Address to serve plans on (gRPC); port 0 takes a free one.
    #[arg(long, env = "TRACELAKE_WORKER_LISTEN", default_value = "127.0.0.1:50051")]
    listen: SocketAddr,
}

pub async fn run(ctx: &Ctx, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let engine = ctx.engine()?;
    let interrupted = super::on_interrupt()?;
    let mut terminated = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stop = async {
        tokio::select! {
            () = interrupted => {}
            _ = terminated.recv() => {}
        }
    };
    let ready = |addr: SocketAddr| eprintln!("tracelake worker serving plans on http://{addr} (Ctrl-C or SIGTERM stops)");
    serve_worker(args.listen, ctx.redactor()?, &engine, ctx.config.storage.options.clone(), ready, stop).await?;
    Ok(ExitCode::SUCCESS)
}
