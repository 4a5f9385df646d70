//! JSON as toolgate reads configs and hook answers: duplicate keys are not
//! silently resolved, and a parse error never quotes the input.
//!
//! # Why
//!
//! serde_json (like most parsers) keeps the *last* of two equal keys. For a
//! guard that is a loophole: `{"hooks": [guards], "hooks": []}` drops every
//! guard without a word, `{"on_failure": "deny", "on_failure": "allow"}`
//! fails open, and `{"decision": "deny", …, "decision": "allow"}` is an
//! allow. RFC 8259 leaves duplicate names undefined; toolgate refuses them.
//!
//! Two modes, because the two callers need different things:
//! - [`parse`] (configs): a duplicate is an error, at its line and column;
//! - [`parse_recording`] (hook answers): the first value is kept and every
//!   duplicate is reported alongside, so the protocol decoder can apply
//!   "a deny always denies" — if any of the duplicated decisions is a deny,
//!   the answer is a deny; otherwise it is not a decision.
//!
//! Errors carry a line, a column and a category only. serde_json's own
//! messages for type errors quote values; a config file symlinked to a
//! credentials file must not have its content echoed into an error that an
//! agent shows the model.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::fmt;

/// Where and how a JSON text is invalid, without any of its content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not valid JSON at line {line}, column {column}: {what}")]
pub struct JsonError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, in words that quote nothing from the input.
    pub what: String,
}

impl JsonError {
    pub fn from_serde(e: &serde_json::Error) -> Self {
        let what = match e.classify() {
            serde_json::error::Category::Eof => "the text ends in the middle of a value".to_owned(),
            serde_json::error::Category::Syntax => {
                // serde_json's syntax messages name the problem, never the
                // input ("expected value", "trailing characters", …); cut the
                // position it appends.
                let text = e.to_string();
                match text.rfind(" at line ") {
                    Some(at) => text[..at].to_owned(),
                    None => text,
                }
            }
            serde_json::error::Category::Data => "duplicate key".to_owned(),
            serde_json::error::Category::Io => "the text could not be read".to_owned(),
        };
        JsonError {
            line: e.line(),
            column: e.column(),
            what,
        }
    }
}

/// Why a JSON text does not have the shape a type expects, with its line
/// and column, in words that quote nothing from it. serde's own messages
/// quote the offending value (`invalid type: string "…", expected u64`) and
/// unknown variants; here only what the type expects is said (the type's
/// own words: its field names, the kind of value). An unknown key (a
/// position) and a word refused from a closed set (an unknown variant) are
/// named, bounded. A custom message
/// (one of toolgate's own types refusing a value) is kept as it is.
pub fn shape_error(e: &serde_json::Error) -> String {
    if e.classify() != serde_json::error::Category::Data {
        return JsonError::from_serde(e).to_string();
    }
    let text = e.to_string();
    let text = text.rfind(" at line ").map_or(&text[..], |at| &text[..at]);
    let expected = text
        .split_once(", expected ")
        .map(|(_, x)| format!(", expected {x}"))
        .unwrap_or_default();
    let what = if text.starts_with("missing field ") {
        // The name is the type's, not the input's.
        text.to_owned()
    } else if let Some(rest) = text.strip_prefix("invalid type: ") {
        // serde's first word is the kind (`string "…"`, `integer `5``).
        let kind = rest.split([' ', ',']).next().unwrap_or_default();
        format!("a value of the wrong type ({kind}){expected}")
    } else if let Some(rest) = text.strip_prefix("unknown field `") {
        // A key is where, not what (hooks.json names its unknown keys the
        // same way): named, bounded and made printable.
        let key = rest.rsplit_once("`, expected").map_or(rest, |(k, _)| k);
        let key = key.strip_suffix('`').unwrap_or(key);
        format!(
            "unknown field `{}`{expected}",
            crate::text::excerpt(key, 64)
        )
    } else if let Some(rest) = text.strip_prefix("unknown variant `") {
        // A word given for a closed set of words (an `op`, a `role`) is
        // named when refused, bounded, as an unknown event or mode is.
        let word = rest.rsplit_once("`, expected").map_or(rest, |(w, _)| w);
        let word = word.strip_suffix('`').unwrap_or(word);
        format!(
            "unknown variant `{}`{expected}",
            crate::text::excerpt(word, 64)
        )
    } else if text.starts_with("invalid value") {
        format!("a value that is not allowed{expected}")
    } else if text.starts_with("invalid length") {
        format!("a list of the wrong length{expected}")
    } else {
        // A message of one of toolgate's own types (a `TryFrom` refusal),
        // which says itself what it names.
        text.to_owned()
    };
    format!("at line {}, column {}: {what}", e.line(), e.column())
}

/// Parses one JSON value; a duplicate key anywhere is an error.
pub fn parse(bytes: &[u8]) -> Result<Value, JsonError> {
    run(bytes, None)
}

/// Parses one JSON value, keeping the first of duplicate keys and returning
/// every later duplicate as (key, value).
pub fn parse_recording(bytes: &[u8]) -> Result<(Value, Vec<(String, Value)>), JsonError> {
    let dups = RefCell::new(Vec::new());
    let value = run(bytes, Some(&dups))?;
    Ok((value, dups.into_inner()))
}

fn run(bytes: &[u8], dups: Option<&RefCell<Vec<(String, Value)>>>) -> Result<Value, JsonError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = StrictSeed { dups }
        .deserialize(&mut de)
        .map_err(|e| JsonError::from_serde(&e))?;
    de.end().map_err(|e| JsonError::from_serde(&e))?;
    Ok(value)
}

#[derive(Clone, Copy)]
struct StrictSeed<'a> {
    dups: Option<&'a RefCell<Vec<(String, Value)>>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(self)?;
            if obj.contains_key(&key) {
                match self.dups {
                    None => return Err(de::Error::custom("duplicate key")),
                    Some(dups) => dups.borrow_mut().push((key, value)),
                }
            } else {
                obj.insert(key, value);
            }
        }
        Ok(Value::Object(obj))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duplicate_key_is_an_error_with_its_position() {
        let e = parse(b"{\n \"a\": 1,\n \"a\": 2}").unwrap_err();
        assert_eq!((e.line, e.what.as_str()), (3, "duplicate key"));
        assert!(parse(br#"{"a": {"b": 1, "b": 1}}"#).is_err(), "nested too");
        assert!(
            parse(br#"[{"a": 1}, {"a": 2}]"#).is_ok(),
            "equal keys in two objects are fine"
        );
    }

    #[test]
    fn recording_keeps_the_first_and_reports_the_rest() {
        let (v, dups) = parse_recording(br#"{"d": "deny", "d": "allow"}"#).unwrap();
        assert_eq!(v["d"], "deny");
        assert_eq!(dups, vec![("d".to_owned(), Value::from("allow"))]);
    }

    #[test]
    fn shape_errors_quote_nothing_from_the_input() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct T {
            n: u64,
            e: Option<E>,
        }
        #[derive(Debug, serde::Deserialize)]
        enum E {
            A,
        }
        for text in [r#"{"n": "AKIASECRET"}"#, r#"{"e": "A"}"#] {
            let e = serde_json::from_str::<T>(text).unwrap_err();
            let said = shape_error(&e);
            assert!(
                !said.contains("AKIA") && said.starts_with("at line 1"),
                "{said}"
            );
        }
    }

    #[test]
    fn errors_quote_nothing_from_the_input() {
        for text in [
            &b"AKIASECRETSECRET"[..],
            b"{\"k\": AKIASECRET}",
            b"{\"k\": 1} AKIASECRET",
        ] {
            let e = parse(text).unwrap_err().to_string();
            assert!(!e.contains("AKIA") && !e.contains("SECRET"), "{e}");
        }
    }
}
