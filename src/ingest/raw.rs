//! Borrowed views of raw event JSON: an object's fields as unparsed slices of the input.
//!
//! Normalization reads a handful of fields and keeps the rest as JSON text, so parsing the
//! whole event into a `serde_json::Value` tree (and printing parts of it back) would be
//! wasted work. An object is parsed one level deep; a field is parsed only when read, and
//! `payload`, tool results and unmapped fields are kept as the exact text they arrived in.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

/// One JSON value, unparsed.
#[derive(Clone, Copy)]
pub struct Raw<'a>(&'a RawValue);

/// A JSON object's fields in input order, values unparsed. With a duplicate key the last
/// one wins, as in `serde_json::Value`.
#[derive(Default)]
pub struct RawObject<'a> {
    fields: Vec<(Cow<'a, str>, Raw<'a>)>,
    /// Per field, whether it is the last with its key (computed for large objects only).
    last_of: OnceCell<Vec<bool>>,
}

/// Why a text did not parse as an object.
pub enum NotAnObject {
    InvalidJson(serde_json::Error),
    OtherValue,
}

impl<'a> RawObject<'a> {
    /// Parses `text` one level deep; validates the whole text as JSON.
    pub fn parse(text: &'a str) -> Result<Self, NotAnObject> {
        match serde_json::from_str::<RawObject>(text) {
            Ok(object) => Ok(object),
            Err(e) if e.is_data() => Err(NotAnObject::OtherValue),
            Err(e) => Err(NotAnObject::InvalidJson(e)),
        }
    }

    /// Whether field `i` is the last with its key (the one that counts). Objects of a few
    /// fields are searched; large ones (a hostile line may have 100k keys) hashed once.
    fn is_last(&self, i: usize) -> bool {
        const SEARCHED: usize = 32;
        if self.fields.len() <= SEARCHED {
            let key = &self.fields[i].0;
            return !self.fields[i + 1..].iter().any(|(later, _)| later == key);
        }
        let last = self.last_of.get_or_init(|| {
            let mut seen: HashSet<&str> = HashSet::with_capacity(self.fields.len());
            let mut last: Vec<bool> = self.fields.iter().rev().map(|(key, _)| seen.insert(key.as_ref())).collect();
            last.reverse();
            last
        });
        last[i]
    }

    pub fn get(&self, key: &str) -> Option<Raw<'a>> {
        self.fields.iter().rev().find(|(k, _)| k == key).map(|(_, v)| *v)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// The fields whose keys are not in `skip`, as a JSON object text; `None` when there are none.
    pub fn json_without(&self, skip: &[&str]) -> Option<String> {
        let mut out = String::new();
        for (i, (key, value)) in self.fields.iter().enumerate() {
            if !self.is_last(i) || skip.contains(&key.as_ref()) {
                continue;
            }
            out.push(if out.is_empty() { '{' } else { ',' });
            match key {
                // Borrowed: the key as written, which had no escapes.
                Cow::Borrowed(key) => {
                    out.push('"');
                    out.push_str(key);
                    out.push('"');
                }
                Cow::Owned(key) => out.push_str(&serde_json::to_string(key).expect("a string always serializes")),
            }
            out.push(':');
            out.push_str(value.text());
        }
        (!out.is_empty()).then(|| out + "}")
    }
}

impl<'a> Raw<'a> {
    /// The value exactly as it appeared in the input.
    pub fn text(self) -> &'a str {
        self.0.get()
    }

    pub fn is_null(self) -> bool {
        self.text() == "null"
    }

    /// The fields of an object value; empty for anything else.
    pub fn object(self) -> RawObject<'a> {
        match self.text().as_bytes()[0] {
            b'{' => serde_json::from_str(self.text()).unwrap_or_default(),
            _ => RawObject::default(),
        }
    }

    /// The value parsed as a tree, for the few fields whose shape varies; `None` when it
    /// has no tree: a number beyond f64 (`1e400`) or nesting deeper than 128 levels. Such
    /// a value is still valid JSON, kept as its text.
    pub fn value(self) -> Option<Value> {
        serde_json::from_str(self.text()).ok()
    }

    pub fn as_str(self) -> Option<Cow<'a, str>> {
        let text = self.text();
        if !text.starts_with('"') {
            return None;
        }
        let inner = &text[1..text.len() - 1];
        if inner.contains('\\') { serde_json::from_str::<String>(text).ok().map(Cow::Owned) } else { Some(Cow::Borrowed(inner)) }
    }

    pub fn as_bool(self) -> Option<bool> {
        match self.text() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    pub fn is_number(self) -> bool {
        matches!(self.text().as_bytes()[0], b'-' | b'0'..=b'9')
    }

    pub fn as_f64(self) -> Option<f64> {
        if self.is_number() { serde_json::from_str(self.text()).ok() } else { None }
    }

    /// An integer; a fractional number is rounded.
    pub fn as_i64(self) -> Option<i64> {
        if !self.is_number() {
            return None;
        }
        let text = self.text();
        text.parse::<i64>().ok().or_else(|| serde_json::from_str::<f64>(text).ok().filter(|f| f.is_finite()).map(|f| f.round() as i64))
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = RawObject<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
        let mut fields = Vec::with_capacity(map.size_hint().unwrap_or(8));
        while let Some(key) = map.next_key::<Key>()? {
            let value: &'de RawValue = map.next_value()?;
            fields.push((key.0, Raw(value)));
        }
        Ok(RawObject { fields, last_of: OnceCell::new() })
    }
}

/// A key borrowed from the input unless it contains escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}
