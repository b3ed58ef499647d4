//! Reads a whole JetStream stream and drops every message: what the server and a client
//! spend before an exporter decodes or writes anything. `ordered` is the consumer
//! `tracelake export` uses (an ordered pull consumer from the first message), `push` an
//! ordered push consumer for comparison.
//!
//!     cargo run --release --manifest-path scripts/jetstream_floor/Cargo.toml -- NATS_URL STREAM [ordered|push]

use std::time::Instant;

use async_nats::jetstream::{self, consumer::DeliverPolicy};
use futures::{Stream, StreamExt};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().collect();
    let (url, stream, kind) = match args.as_slice() {
        [_, url, stream] => (url, stream, "ordered"),
        [_, url, stream, kind] => (url, stream, kind.as_str()),
        _ => return Err("usage: jetstream-floor NATS_URL STREAM [ordered|push]".into()),
    };
    let client = async_nats::connect(url.as_str()).await?;
    let js = jetstream::new(client.clone());
    let mut stream = js.get_stream(stream).await?;
    let last = stream.info().await?.state.last_sequence;
    let started = Instant::now();
    let received = match kind {
        "ordered" => {
            let config = jetstream::consumer::pull::OrderedConfig { deliver_policy: DeliverPolicy::All, ..Default::default() };
            drain(stream.create_consumer(config).await?.messages().await?, last).await?
        }
        "push" => {
            let config = jetstream::consumer::push::OrderedConfig {
                deliver_policy: DeliverPolicy::All,
                deliver_subject: client.new_inbox(),
                ..Default::default()
            };
            drain(stream.create_consumer(config).await?.messages().await?, last).await?
        }
        other => return Err(format!("unknown consumer {other:?}: ordered or push").into()),
    };
    let seconds = started.elapsed().as_secs_f64();
    println!("{kind} consumer: {received} messages in {seconds:.2} s, {:.0} messages/s", received as f64 / seconds);
    Ok(())
}

/// Receives messages up to stream sequence `last`; returns how many.
async fn drain<E: std::error::Error + Send + Sync + 'static>(
    mut messages: impl Stream<Item = Result<jetstream::Message, E>> + Unpin,
    last: u64,
) -> Result<u64, BoxError> {
    let mut received = 0;
    while let Some(message) = messages.next().await {
        received += 1;
        if message?.info()?.stream_sequence >= last {
            break;
        }
    }
    Ok(received)
}
