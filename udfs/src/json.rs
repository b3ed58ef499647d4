//! JSON as the detectors read tool arguments and results: texts borrowed from the source
//! where they hold no escapes. A session's tool results are large and each is read once;
//! a `serde_json::Value` would own a copy of every key and text in it.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A JSON value. An object's members are in the order of their keys, one per key (the
/// last), as in a `serde_json::Value`, so that values are visited in the same order.
#[derive(Debug, PartialEq)]
pub(crate) enum Json<'a> {
    Text(Cow<'a, str>),
    Number(Number),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
    Array(Vec<Json<'a>>),
    /// `null`, `true` or `false`.
    Other,
}

impl<'a> Json<'a> {
    /// `text` as JSON, or `None` when it is not JSON.
    pub(crate) fn parse(text: &'a str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }

    /// A text or a number as text.
    pub(crate) fn scalar(&self) -> Option<Cow<'a, str>> {
        match self {
            Json::Text(s) => Some(s.clone()),
            Json::Number(n) => Some(Cow::Owned(n.to_string())),
            _ => None,
        }
    }

    /// Calls `f` with every text, number, boolean and null in the value.
    pub(crate) fn leaves(&self, f: &mut impl FnMut(&Json<'a>)) {
        match self {
            Json::Object(members) => members.iter().for_each(|(_, v)| v.leaves(f)),
            Json::Array(items) => items.iter().for_each(|v| v.leaves(f)),
            other => f(other),
        }
    }
}

/// Calls `f` with `text` as JSON, also where it is a JSON text inside a JSON string (as
/// tools that return a serialized object are often recorded), or with `None`.
pub(crate) fn with_json<R>(text: &str, f: impl FnOnce(Option<&Json>) -> R) -> R {
    match Json::parse(text) {
        Some(Json::Text(inner)) => f(Json::parse(&inner).as_ref()),
        value => f(value.as_ref()),
    }
}

impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Json::Other)
    }
    fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
        Ok(Json::Other)
    }
    fn visit_i64<E: Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E: Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Number::from_f64(v).map_or(Json::Other, Json::Number))
    }
    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Json::Text(Cow::Borrowed(v)))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Json::Text(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Json::Text(Cow::Owned(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            members.push((key, map.next_value()?));
        }
        if !members.is_sorted_by(|a, b| a.0 < b.0) {
            members.sort_by(|a, b| a.0.cmp(&b.0));
            // Of members with the same key the last stays, in the first one's place.
            members.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    std::mem::swap(&mut later.1, &mut kept.1);
                }
                same
            });
        }
        Ok(Json::Object(members))
    }
}

/// An object's key, borrowed where it holds no escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_borrowed_str<E: Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Borrowed(v)))
    }
    fn visit_str<E: Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(Key(Cow::Owned(v)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    /// The scalars of a value in the order [`Json::leaves`] visits them, as text.
    fn leaves_of(json: &Json) -> Vec<String> {
        let mut out = Vec::new();
        json.leaves(&mut |leaf| out.push(leaf.scalar().map_or_else(|| "-".to_owned(), Cow::into_owned)));
        out
    }

    /// The same for a `serde_json::Value`.
    fn value_leaves(value: &Value) -> Vec<String> {
        match value {
            Value::Object(map) => map.values().flat_map(value_leaves).collect(),
            Value::Array(items) => items.iter().flat_map(value_leaves).collect(),
            Value::String(s) => vec![s.clone()],
            Value::Number(n) => vec![n.to_string()],
            _ => vec!["-".to_owned()],
        }
    }

    #[test]
    fn values_are_visited_as_serde_json_visits_them() {
        for text in [
            r#"{"b": 1, "a": [2.50, "x\"y", null, true], "c": {"z": -3, "y": 1e3}}"#,
            r#"{"k": 1, "j": 2, "k": 3}"#,
            r#"{"k": 1, "k": 2, "k": 3, "a": 0}"#,
            r#"[18446744073709551615, -9223372036854775808, 0.1, "é\u00e9"]"#,
            r#""plain""#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(leaves_of(&Json::parse(text).unwrap()), value_leaves(&value), "{text}");
        }
        assert_eq!(Json::parse("{not json"), None);
    }

    #[test]
    fn texts_without_escapes_are_borrowed() {
        let Some(Json::Object(members)) = Json::parse(r#"{"id": "H8Q05L", "note": "a \"b\""}"#) else { panic!("an object") };
        assert!(matches!(&members[0], (Cow::Borrowed("id"), Json::Text(Cow::Borrowed("H8Q05L")))));
        assert!(matches!(&members[1].1, Json::Text(Cow::Owned(s)) if s == "a \"b\""));
    }

    #[test]
    fn json_inside_a_json_string_is_read_as_json() {
        let quoted = serde_json::to_string(r#"{"id": "H8Q05L"}"#).unwrap();
        assert_eq!(with_json(&quoted, |json| json.map(leaves_of)), Some(vec!["H8Q05L".to_owned()]));
        assert!(with_json("not json", |json| json.is_none()));
    }
}
