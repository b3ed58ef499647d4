//! `tracelake worker`: serves the query plans of `--workers` runs.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Args;
use tracelake::engine::distributed::serve_worker;

use super::Ctx;

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Address to serve plans on (gRPC); port 0 takes a free one.
    #[arg(long, env = "TRACELAKE_WORKER_LISTEN", default_value = "127.0.0.1:50051", value_parser = super::listen_addr::listen_addr)]
    listen: SocketAddr,
    /// Memory the queries running on this worker share, e.g. `4G` or `512M` (as
    /// `datafusion.runtime.memory_limit`); operators spill to disk beyond it.
    #[arg(long, env = "TRACELAKE_WORKER_MEMORY_LIMIT", default_value = "1G", value_parser = memory_size)]
    memory_limit: usize,
}

/// `4G`, `512M`, `64K` or a number of bytes.
fn memory_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len()));
    let shift = match unit.to_ascii_uppercase().as_str() {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("{text}: write a size such as 4G, 512M or 1048576")),
    };
    let n: usize = digits.parse().map_err(|_| format!("{text}: write a size such as 4G, 512M or 1048576"))?;
    n.checked_shl(shift).filter(|v| v >> shift == n).ok_or_else(|| format!("{text} is too large"))
}

pub async fn run(ctx: &Ctx, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let engine = tracelake::engine::EngineOptions {
        memory_limit_bytes: args.memory_limit,
        session_jobs: Some(std::sync::Arc::new(tracelake::detect::sessions::AnalysisJobs)),
        ..ctx.engine()?
    };
    let stop = super::interrupt::on_interrupt()?;
    let ready = |addr: SocketAddr| eprintln!("tracelake worker serving plans on http://{addr} (Ctrl-C or SIGTERM stops)");
    serve_worker(args.listen, ctx.redactor()?, &engine, ctx.config.storage.options.clone(), ready, stop).await?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::memory_size;

    #[test]
    fn memory_sizes_read_as_datafusion_writes_them() {
        assert_eq!(memory_size("4G"), Ok(4 << 30));
        assert_eq!(memory_size("512m"), Ok(512 << 20));
        assert_eq!(memory_size("1048576"), Ok(1 << 20));
        assert!(memory_size("4GB").is_err() && memory_size("G").is_err() && memory_size("99999999999999T").is_err());
    }
}
