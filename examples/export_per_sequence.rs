//! Baseline for the export benchmark: reads the stream one message per request, by
//! sequence number (as the upstream plugin does), and writes the same lake files.
//!
//!     cargo run --release --example export_per_sequence -- NATS_URL STREAM LAKE_DIR [MAX_MESSAGES]

use std::time::Instant;

use tracelake::ingest::Decoder;
use tracelake::lake::event_sink::EventSink;
use tracelake::lake::{Lake, WriterId};
use tracelake::redact::Redactor;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, url, stream, lake, ..] = args.as_slice() else {
        anyhow::bail!("usage: export_per_sequence NATS_URL STREAM LAKE_DIR [MAX_MESSAGES]");
    };
    let max: u64 = args.get(4).map(|s| s.parse()).transpose()?.unwrap_or(u64::MAX);
    let js = async_nats::jetstream::new(async_nats::connect(url.as_str()).await?);
    let mut stream = js.get_stream(stream).await?;
    let last = stream.info().await?.state.last_sequence.min(max);
    let decoder = Decoder::new(Redactor::builtin());
    let mut sink = EventSink::new(Lake::new(lake), WriterId::random(), 64 << 20, 1);
    let started = Instant::now();
    for seq in 1..=last {
        let message = stream.get_raw_message(seq).await?;
        if let Ok(event) = decoder.decode(&message.payload, "nats", seq, Some(message.subject.as_str())) {
            sink.push(event.into_owned())?;
        }
    }
    sink.flush_all()?;
    let secs = started.elapsed().as_secs_f64();
    println!("per-sequence baseline: {last} events in {secs:.2} s ({:.0} events/s)", last as f64 / secs);
    Ok(())
}
