//! Reading the OpenClaw event stream from NATS JetStream: connection, subject filters, and
//! an ordered pull consumer that fetches in batches from a start position.

use std::time::Duration;

use async_nats::jetstream::{self, consumer::DeliverPolicy, consumer::pull::OrderedConfig, stream::Stream};
use futures::StreamExt;

use crate::config::NatsConfig;

#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    #[error(
        "cannot reach NATS at {url} ({source}); check the URL (--nats-url, NATS_URL, traceAnalyzer.nats.url) and that the server is running"
    )]
    Unreachable {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("NATS at {url} rejected the credentials ({source}); check traceAnalyzer.nats.user/password or the credentials file")]
    Auth {
        url: String,
        #[source]
        source: async_nats::ConnectError,
    },
    #[error("cannot read NATS credentials file {path}: {source}")]
    Credentials {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("stream {stream:?} does not exist on {url}; check --stream / traceAnalyzer.nats.stream (is JetStream publishing enabled?)")]
    NoStream { stream: String, url: String },
    #[error("JetStream request failed, {doing}: {source}")]
    JetStream {
        doing: String,
        #[source]
        source: BoxError,
    },
    #[error("{kind} {name:?} cannot be part of a NATS subject (no '.', '*', '>' or spaces)")]
    BadFilter { kind: &'static str, name: String },
    #[error("the stream stopped sending with {pending} message(s) still to come (is the NATS server still running?)")]
    StoppedSending { pending: u64 },
    #[error("receiving from the stream: {0}")]
    Receive(#[source] BoxError),
    #[error("the stream ended (was it deleted?)")]
    StreamEnded,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Maps a failed JetStream request to [`NatsError::JetStream`], saying what it was doing.
fn jetstream<E: std::error::Error + Send + Sync + 'static>(doing: impl Into<String>) -> impl FnOnce(E) -> NatsError {
    move |e| NatsError::JetStream { doing: doing.into(), source: Box::new(e) }
}

/// Where to start reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartAt {
    /// The first message in the stream.
    First,
    /// The message with this sequence, or the next one after it.
    Sequence(u64),
    /// The first message published at or after this time (ms since the epoch).
    Time(i64),
}

/// An open connection to the stream.
pub struct NatsSource {
    stream: Stream,
}

impl NatsSource {
    pub async fn connect(config: &NatsConfig) -> Result<Self, NatsError> {
        let url = config.url.clone();
        let mut options = async_nats::ConnectOptions::new().connection_timeout(Duration::from_secs(5)).name("tracelake");
        if let (Some(user), Some(password)) = (&config.user, &config.password) {
            options = options.user_and_password(user.clone(), password.clone());
        }
        if let Some(path) = &config.credentials {
            options = options.credentials_file(path).await.map_err(|source| NatsError::Credentials { path: path.clone(), source })?;
        }
        let client = options.connect(url.as_str()).await.map_err(|source| {
            use async_nats::ConnectErrorKind::{Authentication, AuthorizationViolation};
            match source.kind() {
                Authentication | AuthorizationViolation => NatsError::Auth { url: url.clone(), source },
                _ => NatsError::Unreachable { url: url.clone(), source },
            }
        })?;
        let js = jetstream::new(client);
        let stream = js.get_stream(&config.stream).await.map_err(|e| match e.kind() {
            jetstream::context::GetStreamErrorKind::JetStream(inner) if inner.code() == 404 => {
                NatsError::NoStream { stream: config.stream.clone(), url: url.clone() }
            }
            _ => jetstream(format!("looking up stream {:?} on {url}", config.stream))(e),
        })?;
        Ok(Self { stream })
    }

    /// The stream's last sequence number right now.
    pub async fn last_sequence(&mut self) -> Result<u64, NatsError> {
        let info = self.stream.info().await.map_err(jetstream("reading the stream's state"))?;
        Ok(info.state.last_sequence)
    }

    /// Messages from `start` on, in stream order, fetched in batches by an ordered consumer.
    pub async fn messages(&self, start: StartAt, filters: &[String]) -> Result<MessageStream, NatsError> {
        let deliver_policy = match start {
            StartAt::First => DeliverPolicy::All,
            StartAt::Sequence(seq) => DeliverPolicy::ByStartSequence { start_sequence: seq.max(1) },
            StartAt::Time(ms) => DeliverPolicy::ByStartTime {
                start_time: time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
                    .map_err(jetstream("start time out of range"))?,
            },
        };
        let mut config = OrderedConfig { deliver_policy, ..OrderedConfig::default() };
        match filters {
            [] => {}
            [one] => config.filter_subject = one.clone(),
            many => config.filter_subjects = many.to_vec(),
        }
        let consumer = self.stream.create_consumer(config).await.map_err(jetstream("creating a consumer"))?;
        let messages = consumer.messages().await.map_err(jetstream("starting to fetch"))?;
        Ok(MessageStream { inner: messages })
    }
}

/// One message of the stream, as the exporter needs it.
#[derive(Debug)]
pub struct StreamMessage {
    pub sequence: u64,
    /// Messages after this one that match the consumer (0: the stream is caught up).
    pub pending: u64,
    pub subject: String,
    pub payload: bytes::Bytes,
}

pub struct MessageStream {
    inner: jetstream::consumer::pull::Ordered,
}

impl MessageStream {
    /// The next message, `Ok(None)` when nothing arrives within `idle`.
    pub async fn next(&mut self, idle: Duration) -> Result<Option<StreamMessage>, NatsError> {
        match tokio::time::timeout(idle, self.inner.next()).await {
            Err(_) => Ok(None),
            Ok(None) => Err(NatsError::StreamEnded),
            Ok(Some(Err(e))) => Err(NatsError::Receive(Box::new(e))),
            Ok(Some(Ok(message))) => {
                let info = message.info().map_err(NatsError::Receive)?;
                let (sequence, pending) = (info.stream_sequence, info.pending);
                let message = message.split().0;
                Ok(Some(StreamMessage { sequence, pending, subject: message.subject.to_string(), payload: message.payload }))
            }
        }
    }
}

/// Subject filters for the given agents and event types: `{prefix}.{agent}.{type_with_underscores}`,
/// with wildcards for what is not restricted. No agents and no types: no filter.
pub fn subject_filters(prefix: &str, agents: &[String], types: &[String]) -> Result<Vec<String>, NatsError> {
    let token = |kind: &'static str, name: &str| -> Result<String, NatsError> {
        let bad = name.is_empty() || name.chars().any(|c| matches!(c, '*' | '>' | ' ' | '\t' | '\r' | '\n'));
        let bad = bad || (kind == "agent" && name.contains('.'));
        if bad {
            return Err(NatsError::BadFilter { kind, name: name.to_owned() });
        }
        Ok(name.replace('.', "_"))
    };
    if agents.is_empty() && types.is_empty() {
        return Ok(Vec::new());
    }
    let agents: Vec<String> =
        if agents.is_empty() { vec!["*".into()] } else { agents.iter().map(|a| token("agent", a)).collect::<Result<_, _>>()? };
    let types: Vec<String> =
        if types.is_empty() { vec![">".into()] } else { types.iter().map(|t| token("event type", t)).collect::<Result<_, _>>()? };
    Ok(agents.iter().flat_map(|a| types.iter().map(move |t| format!("{prefix}.{a}.{t}"))).collect())
}

/// The subject an OpenClaw publisher uses for an event: `{prefix}.{agent}.{type_with_underscores}`.
pub fn event_subject(prefix: &str, agent: &str, event_type: &str) -> String {
    let token = |s: &str| -> String {
        let t: String = s.chars().map(|c| if matches!(c, '.' | '*' | '>' | ' ' | '\t' | '\r' | '\n') { '_' } else { c }).collect();
        if t.is_empty() { "unknown".into() } else { t }
    };
    format!("{prefix}.{}.{}", token(agent), token(event_type))
}

/// Publishes raw JSONL events to JetStream on their OpenClaw subjects, creating the stream
/// (`{prefix}.>`) when it does not exist. For tests, benchmarks and replaying files.
pub async fn publish_lines<'a>(url: &str, stream: &str, prefix: &str, lines: impl IntoIterator<Item = &'a str>) -> Result<u64, NatsError> {
    let client = async_nats::connect(url).await.map_err(|source| NatsError::Unreachable { url: url.to_owned(), source })?;
    let js = jetstream::new(client);
    js.get_or_create_stream(jetstream::stream::Config {
        name: stream.to_owned(),
        subjects: vec![format!("{prefix}.>")],
        ..Default::default()
    })
    .await
    .map_err(jetstream(format!("creating stream {stream}")))?;
    let mut acks = Vec::new();
    let mut published = 0;
    for line in lines {
        let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
        let agent = value.get("agent").and_then(|v| v.as_str()).unwrap_or("unknown");
        let kind = value.get("type").and_then(|v| v.as_str()).unwrap_or("unknown");
        let ack = js
            .publish(event_subject(prefix, agent, kind), bytes::Bytes::copy_from_slice(line.as_bytes()))
            .await
            .map_err(jetstream("publishing"))?;
        acks.push(ack);
        published += 1;
        if acks.len() >= 4096 {
            for ack in acks.drain(..) {
                ack.await.map_err(jetstream("waiting for a publish ack"))?;
            }
        }
    }
    for ack in acks {
        ack.await.map_err(jetstream("waiting for a publish ack"))?;
    }
    Ok(published)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| (*x).to_owned()).collect()
    }

    #[test]
    fn filters_are_subjects_with_wildcards() {
        assert!(subject_filters("openclaw.events", &[], &[]).unwrap().is_empty());
        assert_eq!(subject_filters("openclaw.events", &s(&["main"]), &[]).unwrap(), s(&["openclaw.events.main.>"]));
        assert_eq!(
            subject_filters("p", &[], &s(&["msg.in", "conversation.tool_call"])).unwrap(),
            s(&["p.*.msg_in", "p.*.conversation_tool_call"])
        );
        assert_eq!(subject_filters("p", &s(&["a", "b"]), &s(&["tool.result"])).unwrap(), s(&["p.a.tool_result", "p.b.tool_result"]));
    }

    #[test]
    fn names_that_would_change_the_subject_are_refused() {
        for agent in ["a.b", "*", ">", "a b", ""] {
            assert!(subject_filters("p", &s(&[agent]), &[]).is_err(), "{agent:?}");
        }
    }
}
