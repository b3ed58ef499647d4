//! OpenTelemetry spans as tracelake reads them, from OTLP JSON (`TracesData`, as the
//! Collector's file exporter writes it a line at a time, ids in hex, or as protobuf's JSON
//! mapping writes it, ids in base64) and from OTLP protobuf.

use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

/// An attribute value (OTLP `AnyValue`).
#[derive(Debug, Clone, PartialEq)]
pub enum AnyValue {
    Str(String),
    Int(i64),
    Double(f64),
    Bool(bool),
    Array(Vec<AnyValue>),
    Map(Attributes),
    Bytes(Vec<u8>),
}

pub type Attributes = Vec<(String, AnyValue)>;

impl AnyValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Self::Int(i) => Some(*i),
            Self::Double(d) => Some(d.round() as i64),
            Self::Str(s) => s.parse().ok(),
            _ => None,
        }
    }

    /// As JSON: maps as objects, arrays as arrays, bytes as base64.
    pub fn to_json(&self) -> Value {
        match self {
            Self::Str(s) => Value::String(s.clone()),
            Self::Int(i) => Value::from(*i),
            Self::Double(d) => Value::from(*d),
            Self::Bool(b) => Value::Bool(*b),
            Self::Array(items) => Value::Array(items.iter().map(Self::to_json).collect()),
            Self::Map(fields) => attributes_json(fields),
            Self::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }
}

/// Attributes as one JSON object.
pub fn attributes_json(attributes: &Attributes) -> Value {
    Value::Object(attributes.iter().map(|(k, v)| (k.clone(), v.to_json())).collect())
}

/// The value of `key` among `attributes` (the last, if repeated).
pub fn attribute<'a>(attributes: &'a Attributes, key: &str) -> Option<&'a AnyValue> {
    attributes.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v)
}

/// A span event (a log record inside a span).
#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub name: String,
    pub time_ms: i64,
    pub attributes: Attributes,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Lowercase hex.
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    pub start_ms: i64,
    pub end_ms: i64,
    /// The status message when the span's status is ERROR (possibly empty).
    pub error: Option<String>,
    pub attributes: Attributes,
    pub events: Vec<SpanEvent>,
    pub resource: Arc<Attributes>,
    pub scope: Option<String>,
}

impl Span {
    /// The value of `key` on the span, else on its resource.
    pub fn get(&self, key: &str) -> Option<&AnyValue> {
        attribute(&self.attributes, key).or_else(|| attribute(&self.resource, key))
    }

    pub fn text(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().find_map(|k| self.get(k).and_then(AnyValue::as_str).filter(|s| !s.is_empty()))
    }

    pub fn int(&self, keys: &[&str]) -> Option<i64> {
        keys.iter().find_map(|k| self.get(k).and_then(AnyValue::as_i64))
    }
}

/// Why OTLP JSON could not be read.
#[derive(Debug, thiserror::Error)]
#[error("not OTLP traces: {0}")]
pub struct NotTraces(String);

/// Whether a JSON object is OTLP traces (`TracesData` or an export request).
pub fn is_traces(value: &Value) -> bool {
    value.get("resourceSpans").is_some_and(Value::is_array)
}

/// The spans of an OTLP JSON `TracesData`.
pub fn spans_from_json(value: &Value) -> Result<Vec<Span>, NotTraces> {
    let resource_spans =
        value.get("resourceSpans").and_then(Value::as_array).ok_or_else(|| NotTraces("no `resourceSpans` array".into()))?;
    let mut spans = Vec::new();
    for resource_span in resource_spans {
        let resource = Arc::new(json_attributes(resource_span.get("resource").and_then(|r| r.get("attributes"))));
        for scope_span in resource_span
            .get("scopeSpans")
            .or_else(|| resource_span.get("instrumentationLibrarySpans"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let scope = scope_span
                .get("scope")
                .or_else(|| scope_span.get("instrumentationLibrary"))
                .and_then(|s| s.get("name"))
                .and_then(Value::as_str);
            for span in scope_span.get("spans").and_then(Value::as_array).into_iter().flatten() {
                spans.push(json_span(span, &resource, scope)?);
            }
        }
    }
    Ok(spans)
}

fn json_span(span: &Value, resource: &Arc<Attributes>, scope: Option<&str>) -> Result<Span, NotTraces> {
    let id =
        |key: &str, bytes: usize| span.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()).map(|s| hex_id(s, bytes)).transpose();
    let trace_id = id("traceId", 16)?.ok_or_else(|| NotTraces("a span without `traceId`".into()))?;
    let span_id = id("spanId", 8)?.ok_or_else(|| NotTraces("a span without `spanId`".into()))?;
    let status = span.get("status");
    let code = status.and_then(|s| s.get("code"));
    let failed = code.is_some_and(|c| c.as_i64() == Some(2) || c.as_str() == Some("STATUS_CODE_ERROR"));
    let message = status.and_then(|s| s.get("message")).and_then(Value::as_str).unwrap_or_default();
    let events = span
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| SpanEvent {
            name: e.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
            time_ms: nanos_ms(e.get("timeUnixNano")),
            attributes: json_attributes(e.get("attributes")),
        })
        .collect();
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id: id("parentSpanId", 8)?,
        name: span.get("name").and_then(Value::as_str).unwrap_or_default().to_owned(),
        start_ms: nanos_ms(span.get("startTimeUnixNano")),
        end_ms: nanos_ms(span.get("endTimeUnixNano")),
        error: failed.then(|| message.to_owned()),
        attributes: json_attributes(span.get("attributes")),
        events,
        resource: Arc::clone(resource),
        scope: scope.map(str::to_owned),
    })
}

/// An id in lowercase hex: as given when it is `bytes` long in hex, else decoded from base64.
fn hex_id(id: &str, bytes: usize) -> Result<String, NotTraces> {
    if id.len() == bytes * 2 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(id.to_ascii_lowercase());
    }
    match base64::engine::general_purpose::STANDARD.decode(id) {
        Ok(decoded) if decoded.len() == bytes => Ok(hex::encode(decoded)),
        _ => Err(NotTraces(format!("`{id}` is not a {bytes}-byte id in hex or base64"))),
    }
}

/// Nanoseconds since the epoch (a number, or a decimal string as protobuf's JSON writes
/// 64-bit integers) as milliseconds.
fn nanos_ms(value: Option<&Value>) -> i64 {
    let nanos = match value {
        Some(Value::String(s)) => s.parse::<u64>().unwrap_or(0),
        Some(Value::Number(n)) => n.as_u64().unwrap_or(0),
        _ => 0,
    };
    (nanos / 1_000_000) as i64
}

fn json_attributes(value: Option<&Value>) -> Attributes {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|kv| Some((kv.get("key")?.as_str()?.to_owned(), json_value(kv.get("value")?))))
        .collect()
}

fn json_value(value: &Value) -> AnyValue {
    let Some((kind, inner)) = value.as_object().and_then(|o| o.iter().next()) else {
        return AnyValue::Str(String::new());
    };
    match kind.as_str() {
        "stringValue" => AnyValue::Str(inner.as_str().unwrap_or_default().to_owned()),
        "intValue" => AnyValue::Int(inner.as_i64().or_else(|| inner.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)),
        "doubleValue" => AnyValue::Double(inner.as_f64().or_else(|| inner.as_str().and_then(|s| s.parse().ok())).unwrap_or(0.0)),
        "boolValue" => AnyValue::Bool(inner.as_bool().unwrap_or(false)),
        "arrayValue" => AnyValue::Array(inner.get("values").and_then(Value::as_array).into_iter().flatten().map(json_value).collect()),
        "kvlistValue" => AnyValue::Map(json_attributes(inner.get("values"))),
        "bytesValue" => {
            AnyValue::Bytes(inner.as_str().and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok()).unwrap_or_default())
        }
        _ => AnyValue::Str(inner.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_in_hex_and_in_base64_read_the_same() {
        let span = |trace: &str, id: &str| {
            serde_json::json!({"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [{"scope": {"name": "lib"}, "spans": [{"traceId": trace, "spanId": id, "name": "chat m",
                "startTimeUnixNano": "1700000000123456789", "endTimeUnixNano": 1700000001000000000u64, "status": {"code": 2, "message": "boom"},
                "attributes": [{"key": "n", "value": {"intValue": "7"}}]}]}]}]})
        };
        let hex = spans_from_json(&span("5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174")).unwrap();
        let b64 = spans_from_json(&span("W47/95gDgQPSabYzgT/GDA==", "7uGbfsPBsXQ=")).unwrap();
        assert_eq!(hex, b64);
        let s = &hex[0];
        assert_eq!((s.start_ms, s.end_ms, s.error.as_deref()), (1_700_000_000_123, 1_700_000_001_000, Some("boom")));
        assert_eq!((s.int(&["n"]), s.text(&["service.name"]), s.scope.as_deref()), (Some(7), Some("svc"), Some("lib")));
        assert!(spans_from_json(&span("xyz", "eee19b7ec3c1b174")).is_err());
    }
}
