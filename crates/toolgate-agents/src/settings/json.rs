//! The JSON value a settings file is read into: one that keeps its objects'
//! keys in the file's order (see the parent module for why), with the
//! parser that tells a comment from other invalid JSON and the renderer
//! that keeps the file's indentation.

use super::EditSettingsError;
use crate::strict_json::JsonError;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};
use std::fmt;

/// Parses a settings file, telling a comment from other invalid JSON.
pub(super) fn parse(text: &str) -> Result<Json, EditSettingsError> {
    let mut de = serde_json::Deserializer::from_str(text);
    Json::deserialize(&mut de)
        .and_then(|json| de.end().map(|()| json))
        .map_err(|e| {
            if comment_at(text, e.line(), e.column()) {
                EditSettingsError::Comment {
                    line: e.line(),
                    column: e.column(),
                }
            } else {
                let JsonError { line, column, what } = JsonError::from_serde(&e);
                EditSettingsError::NotJson { line, column, what }
            }
        })
}

/// Whether a `//` or `/*` starts at (or just before) the 1-based position
/// serde_json reported an error at.
fn comment_at(text: &str, line: usize, column: usize) -> bool {
    let Some(line) = text.lines().nth(line.saturating_sub(1)) else {
        return false;
    };
    let chars: Vec<char> = line.chars().collect();
    let starts =
        |i: usize| chars.get(i) == Some(&'/') && matches!(chars.get(i + 1), Some('/' | '*'));
    column.checked_sub(1).is_some_and(starts) || column.checked_sub(2).is_some_and(starts)
}

/// The indentation the file uses (its first indented line's), else two
/// spaces.
pub(super) fn indent_of(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect::<String>()
        })
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| "  ".to_owned())
}

/// `json` as pretty JSON with `indent`, ending in a newline.
pub(super) fn render(json: &Json, indent: &str) -> Result<String, EditSettingsError> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    json.serialize(&mut serializer)
        .map_err(EditSettingsError::Render)?;
    out.push(b'\n');
    // Serialized from `str`s and numbers: always UTF-8.
    String::from_utf8(out).map_err(|_| EditSettingsError::NotUtf8)
}

/// A JSON value that keeps its objects' keys in order (see the module
/// docs).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub(super) fn from_value(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(fields) => Json::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    pub(super) fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    pub(super) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub(super) fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(fields) => fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An array of strings, as strings.
    pub(super) fn strings(&self) -> Option<Vec<String>> {
        match self {
            Json::Array(items) => items
                .iter()
                .map(|i| match i {
                    Json::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value()?;
            if fields.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom("duplicate key"));
            }
            fields.push((key, value));
        }
        Ok(Json::Object(fields))
    }
}
