//! Publishes a JSONL file of raw events to a JetStream stream on OpenClaw subjects.
//!
//!     cargo run --release --example publish -- nats://127.0.0.1:4222 openclaw-events FILE.jsonl

use std::io::BufRead;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, stream, file] = args.as_slice() else {
        anyhow::bail!("usage: publish NATS_URL STREAM FILE.jsonl");
    };
    let lines: Vec<String> = std::io::BufReader::new(std::fs::File::open(file)?).lines().collect::<Result<_, _>>()?;
    let started = std::time::Instant::now();
    let n = tracelake::ingest::nats::publish_lines(url, stream, "openclaw.events", lines.iter().map(String::as_str)).await?;
    println!("published {n} events to {stream} in {:.1} s", started.elapsed().as_secs_f64());
    Ok(())
}
