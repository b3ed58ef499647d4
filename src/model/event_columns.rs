//! The columns of the `events` table: one list that gives the schema and reads each
//! column's value from an event.
//!
//! A batch is built one event at a time, every column appended from it at once: the
//! events come in sort order, scattered in memory, so reading them column after column
//! would fetch each event from memory once per column.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Int64Builder, RecordBatch, StringBuilder, TimestampMillisecondBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema as ArrowSchema, SchemaRef, TimeUnit};
use datafusion::arrow::error::ArrowError;

use super::event::Event;

/// Reads a text column's value from an event.
type TextOf = for<'e> fn(&'e Event<'e>) -> Option<&'e str>;

/// How a column's value is read from an event.
#[derive(Clone, Copy)]
enum Value {
    StreamSeq,
    Ts,
    Text(TextOf),
    Int(fn(&Event) -> Option<i64>),
    Flag(fn(&Event) -> Option<bool>),
}

struct Column {
    name: &'static str,
    nullable: bool,
    value: Value,
}

const fn text(name: &'static str, of: TextOf) -> Column {
    Column { name, nullable: true, value: Value::Text(of) }
}

const fn required(name: &'static str, of: TextOf) -> Column {
    Column { name, nullable: false, value: Value::Text(of) }
}

const fn int(name: &'static str, of: fn(&Event) -> Option<i64>) -> Column {
    Column { name, nullable: true, value: Value::Int(of) }
}

const fn flag(name: &'static str, of: fn(&Event) -> Option<bool>) -> Column {
    Column { name, nullable: true, value: Value::Flag(of) }
}

/// The columns in file order (the partition column `date` is in the path).
const COLUMNS: [Column; 38] = [
    Column { name: "stream_seq", nullable: false, value: Value::StreamSeq },
    required("id", |e| Some(&*e.id)),
    Column { name: "ts", nullable: false, value: Value::Ts },
    required("agent", |e| Some(&*e.agent)),
    required("session", |e| Some(&*e.session)),
    required("type", |e| Some(&*e.event_type)),
    required("raw_type", |e| Some(&*e.raw_type)),
    required("schema", |e| Some(e.schema.as_str())),
    text("content", |e| e.content.as_deref()),
    text("role", |e| e.role.as_deref()),
    text("from", |e| e.from.as_deref()),
    text("to", |e| e.to.as_deref()),
    text("channel", |e| e.channel.as_deref()),
    flag("success", |e| e.success),
    text("tool_name", |e| e.tool_name.as_deref()),
    text("tool_params", |e| e.tool_params.as_deref()),
    text("tool_result", |e| e.tool_result.as_deref()),
    text("tool_error", |e| e.tool_error.as_deref()),
    flag("tool_is_error", tool_failed),
    int("tool_duration_ms", |e| e.tool_duration_ms),
    text("error", |e| e.error.as_deref()),
    int("duration_ms", |e| e.duration_ms),
    text("model", |e| e.model.as_deref()),
    text("provider", |e| e.provider.as_deref()),
    int("usage_input", |e| e.usage_input),
    int("usage_output", |e| e.usage_output),
    int("usage_cache_read", |e| e.usage_cache_read),
    int("usage_cache_write", |e| e.usage_cache_write),
    int("usage_total", |e| e.usage_total),
    text("run_id", |e| e.run_id.as_deref()),
    text("tool_call_id", |e| e.tool_call_id.as_deref()),
    text("canonical_type", |e| e.canonical_type.as_deref()),
    text("trace_id", |e| e.trace_id.as_deref()),
    text("span_id", |e| e.span_id.as_deref()),
    text("parent_span_id", |e| e.parent_span_id.as_deref()),
    text("subject", |e| e.subject.as_deref()),
    required("payload", |e| Some(&*e.payload)),
    text("extra", |e| e.extra.as_deref()),
];

/// Positions of the columns a writer sorts by.
pub const COLUMN_STREAM_SEQ: usize = position("stream_seq");
pub const COLUMN_TS: usize = position("ts");
pub const COLUMN_AGENT: usize = position("agent");
pub const COLUMN_SESSION: usize = position("session");

/// The position of the column `name`; a name that is not a column fails the build.
const fn position(name: &str) -> usize {
    let mut i = 0;
    while i < COLUMNS.len() {
        if COLUMNS[i].name.len() == name.len() {
            let (a, b) = (COLUMNS[i].name.as_bytes(), name.as_bytes());
            let mut j = 0;
            while j < a.len() && a[j] == b[j] {
                j += 1;
            }
            if j == a.len() {
                return i;
            }
        }
        i += 1;
    }
    panic!("not a column of events")
}

/// Columns of `events` as stored in each Parquet file (the partition column is in the path).
pub static EVENTS_SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(ArrowSchema::new(
        COLUMNS
            .iter()
            .map(|column| {
                let data_type = match column.value {
                    Value::StreamSeq => DataType::UInt64,
                    Value::Ts => DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
                    Value::Text(_) => DataType::Utf8,
                    Value::Int(_) => DataType::Int64,
                    Value::Flag(_) => DataType::Boolean,
                };
                Field::new(column.name, data_type, column.nullable)
            })
            .collect::<Vec<_>>(),
    ))
});

/// A column being built, and how its values are read.
enum Builder {
    StreamSeq(UInt64Builder),
    Ts(TimestampMillisecondBuilder),
    Text(StringBuilder, TextOf),
    Int(Int64Builder, fn(&Event) -> Option<i64>),
    Flag(BooleanBuilder, fn(&Event) -> Option<bool>),
}

impl Builder {
    /// A builder for `rows` values, of `text_bytes` bytes in all for a text column.
    fn new(value: Value, rows: usize, text_bytes: usize) -> Self {
        match value {
            Value::StreamSeq => Self::StreamSeq(UInt64Builder::with_capacity(rows)),
            Value::Ts => Self::Ts(TimestampMillisecondBuilder::with_capacity(rows)),
            // Sized up front: growing the value buffer while appending would copy it again and again.
            Value::Text(of) => Self::Text(StringBuilder::with_capacity(rows, text_bytes), of),
            Value::Int(of) => Self::Int(Int64Builder::with_capacity(rows), of),
            Value::Flag(of) => Self::Flag(BooleanBuilder::with_capacity(rows), of),
        }
    }

    fn append(&mut self, event: &Event) {
        match self {
            Self::StreamSeq(b) => b.append_value(event.stream_seq),
            Self::Ts(b) => b.append_value(event.ts),
            Self::Text(b, of) => b.append_option(of(event)),
            Self::Int(b, of) => b.append_option(of(event)),
            Self::Flag(b, of) => b.append_option(of(event)),
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Self::StreamSeq(mut b) => Arc::new(b.finish()),
            Self::Ts(mut b) => Arc::new(b.finish().with_timezone("UTC")),
            Self::Text(mut b, _) => Arc::new(b.finish()),
            Self::Int(mut b, _) => Arc::new(b.finish()),
            Self::Flag(mut b, _) => Arc::new(b.finish()),
        }
    }
}

/// Whether a tool result failed, as the `tool_is_error` column holds it: the source's
/// flag, or an error text (schema A sends only `error`); `None` on other events.
fn tool_failed(event: &Event) -> Option<bool> {
    (event.event_type == "tool.result").then(|| event.tool_is_error == Some(true) || event.tool_error.is_some())
}

/// Events (already in their final order) as one record batch.
pub fn events_batch(events: &[&Event<'_>]) -> Result<RecordBatch, ArrowError> {
    let mut text_bytes = [0usize; COLUMNS.len()];
    for event in events {
        for (bytes, column) in text_bytes.iter_mut().zip(&COLUMNS) {
            if let Value::Text(of) = column.value {
                *bytes += of(event).map_or(0, str::len);
            }
        }
    }
    let mut builders: Vec<Builder> =
        COLUMNS.iter().zip(text_bytes).map(|(column, bytes)| Builder::new(column.value, events.len(), bytes)).collect();
    for event in events {
        for builder in &mut builders {
            builder.append(event);
        }
    }
    RecordBatch::try_new(EVENTS_SCHEMA.clone(), builders.into_iter().map(Builder::finish).collect())
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{Int64Type, TimestampMillisecondType, UInt64Type};

    use super::*;
    use crate::model::event::Schema;

    #[test]
    fn every_column_holds_its_own_field() {
        let mut first = Event::new(7, "e1", 1_767_225_600_000, "a", "s", "tool.result", Schema::B);
        first.content = Some("hello".into());
        first.tool_name = Some("search".into());
        first.tool_is_error = Some(true);
        first.usage_cache_write = Some(42);
        first.extra = Some("{\"k\":1}".into());
        let second = Event::new(8, "e2", 1_767_225_600_001, "b", "t", "msg.in", Schema::A);
        let batch = events_batch(&[&first, &second]).unwrap();
        assert_eq!(batch.schema().fields().len(), 38);
        let text = |name: &str, row: usize| {
            let column = batch.column_by_name(name).unwrap().as_string::<i32>();
            column.is_valid(row).then(|| column.value(row).to_owned())
        };
        assert_eq!(batch.column_by_name("stream_seq").unwrap().as_primitive::<UInt64Type>().values(), &[7, 8]);
        assert_eq!(batch.column_by_name("ts").unwrap().as_primitive::<TimestampMillisecondType>().value(1), 1_767_225_600_001);
        assert_eq!((text("id", 0), text("agent", 1), text("session", 1)), (Some("e1".into()), Some("b".into()), Some("t".into())));
        assert_eq!(
            (text("type", 0), text("schema", 0), text("schema", 1)),
            (Some("tool.result".into()), Some("B".into()), Some("A".into()))
        );
        assert_eq!((text("content", 0), text("content", 1)), (Some("hello".into()), None));
        assert_eq!(
            (text("tool_name", 0), text("extra", 0), text("payload", 1)),
            (Some("search".into()), Some("{\"k\":1}".into()), Some("null".into()))
        );
        assert!(batch.column_by_name("tool_is_error").unwrap().as_boolean().value(0));
        let cache_write = batch.column_by_name("usage_cache_write").unwrap().as_primitive::<Int64Type>();
        assert_eq!((cache_write.value(0), cache_write.is_null(1)), (42, true));
        assert!(batch.column_by_name("usage_cache_read").unwrap().is_null(0));
    }

    #[test]
    fn a_tool_result_with_an_error_text_is_an_error_whatever_its_flag() {
        let result = |error: Option<&'static str>, flag: Option<bool>| {
            let mut event = Event::new(1, "e", 1_767_225_600_000, "a", "s", "tool.result", Schema::A);
            event.tool_error = error.map(Into::into);
            event.tool_is_error = flag;
            event
        };
        let message = Event::new(2, "m", 1_767_225_600_000, "a", "s", "msg.in", Schema::A);
        let events =
            [result(Some("Error: not found"), None), result(None, Some(true)), result(None, None), result(None, Some(false)), message];
        let batch = events_batch(&events.iter().collect::<Vec<_>>()).unwrap();
        let flags = batch.column_by_name("tool_is_error").unwrap().as_boolean();
        let flags: Vec<Option<bool>> = (0..flags.len()).map(|row| flags.is_valid(row).then(|| flags.value(row))).collect();
        assert_eq!(flags, [Some(true), Some(true), Some(false), Some(false), None]);
    }
}
