//! A load generator for `tracelake collect`: sends OTLP/HTTP protobuf requests of tool
//! spans at a steady rate and counts what was acknowledged. A request that fails (the
//! receiver was killed, or refused it) is sent again, the same bytes, until it is
//! acknowledged, as OTLP exporters retry.
//!
//! ```sh
//! cargo run --release --example otlp_load -- --url http://127.0.0.1:4318 --seconds 60 --rate 50000
//! ```
//!
//! Prints one JSON line: requests and spans acknowledged, retries, seconds, spans/s. Each
//! span becomes two events (`tool.call`, `tool.result`) with ids unique over the run.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status, status::StatusCode};
use prost::Message;

struct Args {
    url: String,
    seconds: u64,
    rate: u64,
    spans_per_request: u64,
    clients: u64,
}

fn args() -> Args {
    let mut a = Args { url: "http://127.0.0.1:4318".into(), seconds: 60, rate: 50_000, spans_per_request: 500, clients: 8 };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < argv.len() {
        let value = argv.get(i + 1).cloned().unwrap_or_default();
        match argv[i].as_str() {
            "--url" => a.url = value,
            "--seconds" => a.seconds = value.parse().expect("--seconds N"),
            "--rate" => a.rate = value.parse().expect("--rate SPANS_PER_SECOND"),
            "--spans-per-request" => a.spans_per_request = value.parse().expect("--spans-per-request N"),
            "--clients" => a.clients = value.parse().expect("--clients N"),
            other => panic!("unknown argument {other}"),
        }
        i += 2;
    }
    a
}

fn text(key: &str, value: String) -> KeyValue {
    KeyValue { key: key.into(), value: Some(AnyValue { value: Some(any_value::Value::StringValue(value)) }), ..Default::default() }
}

/// Request number `n`: `spans` tool spans of one conversation, one in ten failing.
fn request(n: u64, spans: u64) -> Vec<u8> {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let spans = (0..spans)
        .map(|i| {
            let id = n * 100_000 + i;
            let failed = id.is_multiple_of(10);
            Span {
                trace_id: (u128::from(n) << 64 | 1).to_be_bytes().to_vec(),
                span_id: (id + 1).to_be_bytes().to_vec(),
                name: "execute_tool lookup".into(),
                start_time_unix_nano: now + i * 1_000,
                end_time_unix_nano: now + i * 1_000 + 500,
                attributes: vec![
                    text("gen_ai.operation.name", "execute_tool".into()),
                    text("gen_ai.tool.name", format!("tool_{}", id % 20)),
                    text("gen_ai.tool.call.id", format!("call-{id}")),
                    text("gen_ai.conversation.id", format!("load-{n}")),
                    text("gen_ai.tool.call.arguments", format!("{{\"query\":\"item {id}\"}}")),
                    text("gen_ai.tool.call.result", format!("{{\"found\":{}}}", id % 7)),
                ],
                status: Some(Status {
                    code: if failed { StatusCode::Error as i32 } else { StatusCode::Ok as i32 },
                    message: if failed { "upstream timeout".into() } else { String::new() },
                }),
                ..Default::default()
            }
        })
        .collect();
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource { attributes: vec![text("service.name", "load-agent".into())], ..Default::default() }),
            scope_spans: vec![ScopeSpans { spans, ..Default::default() }],
            ..Default::default()
        }],
    }
    .encode_to_vec()
}

fn main() {
    let a = args();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let (requests, retries, next) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let started = Instant::now();
    let end = started + Duration::from_secs(a.seconds);
    let interval = Duration::from_secs_f64(a.spans_per_request as f64 * a.clients as f64 / a.rate as f64);
    let url = format!("{}/v1/traces", a.url.trim_end_matches('/'));
    runtime.block_on(async {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        let clients: Vec<_> = (0..a.clients)
            .map(|c| {
                let (client, url, requests, retries, next) = (client.clone(), url.clone(), requests.clone(), retries.clone(), next.clone());
                let spans = a.spans_per_request;
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval.mul_f64(c as f64 / 8.0), interval);
                    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    while Instant::now() < end {
                        tick.tick().await;
                        let body = request(next.fetch_add(1, Ordering::Relaxed), spans);
                        loop {
                            let sent = client.post(&url).header("content-type", "application/x-protobuf").body(body.clone()).send().await;
                            if sent.is_ok_and(|r| r.status().is_success()) {
                                break;
                            }
                            retries.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                        }
                        requests.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for c in clients {
            c.await.unwrap();
        }
    });
    let seconds = started.elapsed().as_secs_f64();
    let requests = requests.load(Ordering::Relaxed);
    let spans = requests * a.spans_per_request;
    println!(
        "{{\"requests\":{requests},\"spans\":{spans},\"events\":{},\"retries\":{},\"seconds\":{seconds:.1},\"spans_per_s\":{:.0}}}",
        spans * 2,
        retries.load(Ordering::Relaxed),
        spans as f64 / seconds
    );
}
