//! A replacement in the shape of the tool's own output, for Claude Code's
//! `updatedToolOutput`.
//!
//! # Why its own module
//!
//! Claude Code validates a replacement against the tool's output schema
//! and, on a mismatch, silently shows the original: what a guard withheld.
//! Fitting a value to a shape is a small algorithm of its own, with its own
//! rules (pinned in tests/all/claude.rs), apart from which answer becomes
//! which field.

use crate::output_text;
use serde_json::{Value, json};

/// Fields that carry a tool's text output, in the order they are looked for.
const TEXT_FIELDS: [&str; 5] = ["stdout", "content", "output", "result", "text"];

/// `replacement` in the shape of `original` (the agent's `tool_response`),
/// or `None` when it cannot be put in that shape.
///
/// Claude Code checks `updatedToolOutput` against the tool's output schema
/// and, when it does not fit, silently shows the model the original output:
/// whatever a guard withheld. So nothing reaches Claude Code that does not
/// fit the shape the tool itself answered in ([`fits`]):
///
/// - a replacement that fits is passed as it is (a hook that answered in the
///   tool's own shape chose every field);
/// - anything else is shown as text (a JSON replacement as its JSON text):
///   for a string-shaped tool that string; for an object-shaped one, the
///   tool's text field filled (and Bash's `stderr` emptied, `interrupted`
///   cleared);
/// - where neither works (no `tool_response`, a number, an array, an object
///   without a text field), `None`: the caller stops the agent.
pub(super) fn in_shape(original: Option<&Value>, replacement: &Value) -> Option<Value> {
    let original = match original {
        None | Some(Value::Null) => return None,
        Some(original) => original,
    };
    if fits(original, replacement) {
        return Some(replacement.clone());
    }
    let text = output_text(replacement);
    let shaped = match original {
        Value::String(_) => json!(text),
        Value::Object(fields) => {
            let field = TEXT_FIELDS
                .iter()
                .find(|f| fields.get(**f).is_some_and(Value::is_string))?;
            let mut shaped = fields.clone();
            shaped.insert((*field).to_owned(), json!(text));
            if shaped.get("stderr").is_some_and(Value::is_string) {
                shaped.insert("stderr".into(), json!(""));
            }
            if shaped.get("interrupted").is_some_and(Value::is_boolean) {
                shaped.insert("interrupted".into(), json!(false));
            }
            Value::Object(shaped)
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::Array(_) => return None,
    };
    // By construction it fits; checked, because a mismatch would show the
    // original.
    fits(original, &shaped).then_some(shaped)
}

/// Whether `value` has the shape of `shape` (a `tool_response`): the same
/// JSON type; for an object, exactly the same fields, each fitting; for an
/// array, every element fitting one of the original's (an empty original
/// admits only an empty array). Stricter than any tool's schema, never
/// looser: a field the original lacked, or one it had that is missing, is a
/// mismatch, since toolgate cannot tell which fields the schema allows.
fn fits(shape: &Value, value: &Value) -> bool {
    match (shape, value) {
        (Value::Null, Value::Null)
        | (Value::Bool(_), Value::Bool(_))
        | (Value::Number(_), Value::Number(_))
        | (Value::String(_), Value::String(_)) => true,
        (Value::Array(shapes), Value::Array(values)) => values
            .iter()
            .all(|v| shapes.iter().any(|shape| fits(shape, v))),
        (Value::Object(shapes), Value::Object(values)) => {
            shapes.len() == values.len()
                && values
                    .iter()
                    .all(|(k, v)| shapes.get(k).is_some_and(|shape| fits(shape, v)))
        }
        (
            Value::Null
            | Value::Bool(_)
            | Value::Number(_)
            | Value::String(_)
            | Value::Array(_)
            | Value::Object(_),
            _,
        ) => false,
    }
}

/// A withheld result in Bash's shape: an interrupted command whose stderr is
/// the reason, which Claude Code shows the model as an error. `None` for
/// other shapes.
pub(super) fn withheld_in_shape(original: &Value, reason: &str) -> Option<Value> {
    let fields = original.as_object()?;
    if !(fields.get("stdout").is_some_and(Value::is_string)
        && fields.get("stderr").is_some_and(Value::is_string))
    {
        return None;
    }
    let mut shaped = fields.clone();
    shaped.insert("stdout".into(), json!(""));
    shaped.insert("stderr".into(), json!(reason));
    shaped.insert("interrupted".into(), json!(true));
    Some(Value::Object(shaped))
}
