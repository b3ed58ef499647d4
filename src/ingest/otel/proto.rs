//! Spans from OTLP protobuf (`ExportTraceServiceRequest`, as OTLP/HTTP exporters send
//! it), every string scrubbed by the decoder (redaction, personal data) on the way.

use std::sync::Arc;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue as ProtoValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;

use super::span::{AnyValue, Attributes, Span, SpanEvent};
use crate::ingest::Decoder;

/// Why a protobuf body could not be read.
#[derive(Debug, thiserror::Error)]
#[error("not an OTLP trace export request: {0}")]
pub struct NotProto(#[from] prost::DecodeError);

/// The spans of a protobuf `ExportTraceServiceRequest`.
pub fn spans_from_proto(body: &[u8], decoder: &Decoder) -> Result<Vec<Span>, NotProto> {
    let request = ExportTraceServiceRequest::decode(body)?;
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let resource = Arc::new(resource_spans.resource.map(|r| attributes(r.attributes, decoder)).unwrap_or_default());
        for scope_spans in resource_spans.scope_spans {
            let scope = scope_spans.scope.map(|s| s.name).filter(|n| !n.is_empty());
            for span in scope_spans.spans {
                let failed = span.status.as_ref().is_some_and(|s| s.code == StatusCode::Error as i32);
                let message = span.status.as_ref().map(|s| decoder.scrub(&s.message).into_owned()).unwrap_or_default();
                spans.push(Span {
                    trace_id: hex::encode(&span.trace_id),
                    span_id: hex::encode(&span.span_id),
                    parent_span_id: (!span.parent_span_id.is_empty()).then(|| hex::encode(&span.parent_span_id)),
                    name: decoder.scrub(&span.name).into_owned(),
                    start_ms: (span.start_time_unix_nano / 1_000_000) as i64,
                    end_ms: (span.end_time_unix_nano / 1_000_000) as i64,
                    error: failed.then_some(message),
                    attributes: attributes(span.attributes, decoder),
                    events: span
                        .events
                        .into_iter()
                        .map(|e| SpanEvent {
                            name: e.name,
                            time_ms: (e.time_unix_nano / 1_000_000) as i64,
                            attributes: attributes(e.attributes, decoder),
                        })
                        .collect(),
                    resource: Arc::clone(&resource),
                    scope: scope.clone(),
                });
            }
        }
    }
    Ok(spans)
}

fn attributes(key_values: Vec<KeyValue>, decoder: &Decoder) -> Attributes {
    key_values.into_iter().map(|kv| (decoder.scrub(&kv.key).into_owned(), any_value(kv.value, decoder))).collect()
}

fn any_value(value: Option<ProtoValue>, decoder: &Decoder) -> AnyValue {
    match value.and_then(|v| v.value) {
        Some(any_value::Value::StringValue(s)) => AnyValue::Str(decoder.scrub(&s).into_owned()),
        Some(any_value::Value::BoolValue(b)) => AnyValue::Bool(b),
        Some(any_value::Value::IntValue(i)) => AnyValue::Int(i),
        Some(any_value::Value::DoubleValue(d)) => AnyValue::Double(d),
        Some(any_value::Value::ArrayValue(a)) => AnyValue::Array(a.values.into_iter().map(|v| any_value(Some(v), decoder)).collect()),
        Some(any_value::Value::KvlistValue(kv)) => AnyValue::Map(attributes(kv.values, decoder)),
        Some(any_value::Value::BytesValue(b)) => AnyValue::Bytes(b),
        _ => AnyValue::Str(String::new()),
    }
}
