//! Wire v1: the JSON encoding subprocess hooks read and write, and that
//! `toolgate check` reads and prints.
//!
//! # Why fixed, and why strict where it is
//!
//! Hook authors in every language depend on this encoding, so its shape is
//! fixed by `schema: 1` and changes only with a new schema number. The request
//! always carries `schema`, so a hook can refuse a version it does not know.
//!
//! Reading answers follows Postel only where it is safe: unknown answer fields
//! are ignored (a newer hook may add some), but an unknown `decision` is a
//! failure, never an allow, and a `deny` always denies — even one with a
//! missing reason or a malformed extra field, because turning a malformed
//! denial into a failure would let `on_failure: allow` wave it through. No
//! value is ever coerced toward the permissive branch.
//!
//! Duplicate keys are not resolved silently (serde_json would keep the last
//! one, so `{"decision":"deny",…,"decision":"allow"}` would be an allow): if
//! any `decision` among the duplicates is `deny`, the answer is a deny (by
//! the same rule); otherwise an answer with a duplicate key anywhere is not a
//! decision.
//!
//! Request (to the hook):
//! ```json
//! {"schema":1, "event":"pre_tool_use", "hook":"guard", "tool":"shell",
//!  "input":{"command":"ls"}, "session_id":"…", "cwd":"…", "config":{…}}
//! ```
//! `result: {"output":…, "is_error":false}` is present for `post_tool_use`.
//!
//! Answer (from the hook; a verdict in the WIT's words): `{"decision":"allow"}` |
//! `{"decision":"deny","reason":"…"}` | `{"decision":"modify","input":…}` |
//! `{"decision":"replace","result":{"output":…,"is_error":false}}` |
//! `{"decision":"ask","reason":"…"}` (pre only: a person must confirm), each with an
//! optional `"context":"…"`.
//!
//! Session state (`crate::session`) is two optional fields beside these:
//! the request's `"state"` (what the hook kept in this session, once it
//! keeps something; `"state_unavailable"` with why, when the store cannot
//! be read) and the answer's `"state"` (keys to set, `null` to remove),
//! read by [`decode_state`] apart from the decision.

//!
//! # The wire owns its shapes
//!
//! The JSON shapes below (`RequestV1`, `ResultV1`, `AnswerV1`) are this
//! module's own types, converted from and to the library's
//! [`contract`](crate::contract) types at this boundary, as ripgrep's printer
//! keeps its own JSON types: renaming a field of the Rust API cannot
//! silently change wire v1. `the_same_call_reads_alike_in_every_encoding`
//! (below) pins one request and each answer across wire v1, the WIT
//! encoding and the Claude Code dialect.

use crate::contract::{Decision, Event, HookRequest, Request, ToolResult, Verdict};
use crate::failure::HookFailure;
use crate::outcome::Outcome;
use crate::session::{Kept, StateChanges};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The wire schema this build speaks.
pub const SCHEMA: u32 = 1;

/// A request as wire v1 spells it.
#[derive(Serialize)]
struct RequestV1<'a> {
    schema: u32,
    event: &'static str,
    hook: &'a str,
    tool: &'a str,
    input: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<ResultV1>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a crate::session::SessionState>,
    #[serde(skip_serializing_if = "Option::is_none")]
    state_unavailable: Option<&'a str>,
}

/// A tool result as wire v1 spells it (`is_error` defaults to false).
#[derive(Serialize, Deserialize)]
struct ResultV1 {
    output: Value,
    #[serde(default)]
    is_error: bool,
}

impl From<&ToolResult> for ResultV1 {
    fn from(r: &ToolResult) -> Self {
        ResultV1 {
            output: r.output.clone(),
            is_error: r.is_error,
        }
    }
}

impl From<ResultV1> for ToolResult {
    fn from(r: ResultV1) -> Self {
        ToolResult {
            output: r.output,
            is_error: r.is_error,
        }
    }
}

/// An answer as wire v1 spells it. Answers are decoded by hand
/// ([`decode_answer`], whose rules are stricter than serde's); this shape is
/// what toolgate writes (`toolgate check`'s output leads with it).
#[derive(Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
enum DecisionV1<'a> {
    Allow,
    Deny {
        reason: &'a str,
    },
    Modify {
        input: &'a Value,
    },
    Replace {
        result: ResultV1,
    },
    Ask {
        reason: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        input: Option<&'a Value>,
    },
}

impl<'a> From<&'a Decision> for DecisionV1<'a> {
    fn from(v: &'a Decision) -> Self {
        match v {
            Decision::Allow => DecisionV1::Allow,
            Decision::Deny { reason } => DecisionV1::Deny { reason },
            Decision::Modify { input } => DecisionV1::Modify { input },
            Decision::Replace { result } => DecisionV1::Replace {
                result: result.into(),
            },
            Decision::Ask { reason, input } => DecisionV1::Ask {
                reason,
                input: input.as_ref(),
            },
        }
    }
}

/// The request as a wire-v1 hook receives it (for logging what an
/// interceptor was asked, or handing it on).
pub fn request_json(request: &HookRequest<'_>) -> Value {
    serde_json::to_value(RequestV1::from(request)).unwrap_or_default()
}

impl<'a> From<&HookRequest<'a>> for RequestV1<'a> {
    fn from(request: &HookRequest<'a>) -> Self {
        RequestV1 {
            schema: SCHEMA,
            event: request.event.as_str(),
            hook: request.hook,
            tool: request.tool,
            input: request.input,
            result: request.result.map(ResultV1::from),
            session_id: request.session_id,
            turn_id: request.turn_id,
            tool_call_id: request.tool_call_id,
            cwd: request.cwd,
            config: request.config,
            state: match request.state {
                Kept::State(state) if !state.is_empty() => Some(state),
                Kept::State(_) | Kept::NoSession | Kept::Unavailable(_) => None,
            },
            state_unavailable: match request.state {
                Kept::Unavailable(why) => Some(why),
                Kept::State(_) | Kept::NoSession => None,
            },
        }
    }
}

/// Encodes a request for a subprocess hook.
pub fn encode_request(request: &HookRequest<'_>) -> Vec<u8> {
    let wire = RequestV1::from(request);

    // Serializing borrowed `Value`s and strings cannot fail.
    let mut bytes = serde_json::to_vec(&wire).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

/// Encodes an answer as a wire-v1 hook would print it.
pub fn encode_answer(answer: &Verdict) -> Value {
    let mut value = serde_json::to_value(DecisionV1::from(&answer.decision)).unwrap_or_default();
    if let (Some(context), Value::Object(obj)) = (&answer.context, &mut value) {
        obj.insert("context".into(), json!(context));
    }
    value
}

/// Decodes what a hook printed into an answer.
pub fn decode_answer(stdout: &[u8]) -> Result<Verdict, HookFailure> {
    if stdout.iter().all(u8::is_ascii_whitespace) {
        return Err(HookFailure::EmptyOutput);
    }
    let (value, duplicates) = crate::strict_json::parse_recording(stdout).map_err(|e| {
        not_a_decision(format!(
            "stdout is not one JSON object ({e}); it began: {}",
            excerpt(stdout)
        ))
    })?;
    if !duplicates.is_empty() {
        return repeated_key_answer(&value, &duplicates);
    }
    let Value::Object(obj) = value else {
        return Err(not_a_decision(format!(
            "stdout is JSON but not an object: {}",
            excerpt(stdout)
        )));
    };
    let decision = match obj.get("decision") {
        Some(Value::String(d)) => d.clone(),
        Some(other) => {
            return Err(not_a_decision(format!(
                "`decision` must be a string, got {other}"
            )));
        }
        None => return Err(not_a_decision("the object has no `decision` field".into())),
    };
    if decision == "deny" {
        return Ok(deny_answer(obj));
    }
    other_answer(&decision, obj)
}

/// What a hook's answer asks to keep in its session (`"state"`: an object
/// of keys to strings, or to `null` to remove one), read apart from the
/// decision: a hook that keeps nothing never writes the field. `Err` says
/// why the field is unusable; the binding then keeps nothing and fails the
/// hook, since a guard that meant to remember and could not must not be
/// taken as having decided.
pub fn decode_state(stdout: &[u8]) -> Result<StateChanges, DecodeStateError> {
    // Most answers keep nothing: skip the second parse.
    if !stdout.windows(7).any(|w| w == b"\"state\"") {
        return Ok(StateChanges::new());
    }
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(stdout) else {
        return Ok(StateChanges::new());
    };
    match obj.remove("state") {
        None | Some(Value::Null) => Ok(StateChanges::new()),
        Some(Value::Object(state)) => state
            .into_iter()
            .map(|(key, value)| match value {
                Value::String(v) => Ok((key, Some(v))),
                Value::Null => Ok((key, None)),
                other => Err(DecodeStateError::NotAString {
                    got: crate::text::excerpt(&other.to_string(), 60),
                    key,
                }),
            })
            .collect(),
        Some(other) => Err(DecodeStateError::NotAnObject(crate::text::excerpt(
            &other.to_string(),
            60,
        ))),
    }
}

/// Why an answer's `"state"` cannot be kept as written.
#[derive(Debug, thiserror::Error)]
pub enum DecodeStateError {
    /// `state` is not an object.
    #[error("`state` must be an object of strings, got {0}")]
    NotAnObject(String),
    /// One of its values is neither a string nor null.
    #[error("`state.{key}` must be a string or null, got {got}")]
    NotAString {
        /// The key.
        key: String,
        /// An excerpt of what it held.
        got: String,
    },
}

/// The failure for output that is not a usable decision.
fn not_a_decision(detail: String) -> HookFailure {
    HookFailure::NotADecision { detail }
}

/// An answer that repeats a key: its own step because a `deny` anywhere in it
/// still denies, while any other repeat is refused rather than guessed at.
fn repeated_key_answer(
    value: &Value,
    duplicates: &[(String, Value)],
) -> Result<Verdict, HookFailure> {
    let denies = |v: &Value| v.get("decision") == Some(&Value::from("deny"));
    let dup_deny = duplicates
        .iter()
        .any(|(k, v)| k == "decision" && v == "deny");
    if denies(value) || dup_deny {
        let reason = value
            .get("reason")
            .and_then(Value::as_str)
            .filter(|r| !r.trim().is_empty())
            .unwrap_or(
                "denied by a hook whose answer repeated a key (one of its decisions was deny)",
            );
        return Ok(Verdict::deny(reason));
    }
    Err(not_a_decision(format!(
        "the answer repeats the key `{}`; toolgate does not guess which one was meant",
        crate::text::one_line(&duplicates[0].0)
    )))
}

/// A `deny` answer: its own step because a denial always denies (see the
/// module docs), so nothing else in the object can make it fail.
fn deny_answer(mut obj: serde_json::Map<String, Value>) -> Verdict {
    let reason = match obj.remove("reason") {
        Some(Value::String(r)) if !r.trim().is_empty() => r,
        // Still a denial, with toolgate's words.
        Some(_) | None => "denied by a hook that gave no reason".to_owned(),
    };
    let context = match obj.remove("context") {
        Some(Value::String(c)) => Some(c),
        Some(_) | None => None,
    };
    Verdict {
        decision: Decision::Deny { reason },
        context,
    }
}

/// Any answer but `deny`: checked strictly, since a malformed one must fail
/// (and so fail closed) rather than let the call through.
fn other_answer(
    decision: &str,
    mut obj: serde_json::Map<String, Value>,
) -> Result<Verdict, HookFailure> {
    let context = match obj.remove("context") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c),
        Some(other) => {
            return Err(not_a_decision(format!(
                "`context` must be a string, got {other}"
            )));
        }
    };
    let verdict = match decision {
        "allow" => Decision::Allow,
        "modify" => match obj.remove("input") {
            Some(input) => Decision::Modify { input },
            None => return Err(not_a_decision("`modify` without an `input`".into())),
        },
        "replace" => match obj.remove("result") {
            Some(result) => Decision::Replace {
                result: parse_result(result).map_err(|e| {
                    not_a_decision(format!("`replace` with an unusable `result`: {e}"))
                })?,
            },
            None => return Err(not_a_decision("`replace` without a `result`".into())),
        },
        // Strict like the others: an `ask` whose reason is not text fails
        // (closed); one without a reason still asks, in toolgate's words.
        "ask" => Decision::Ask {
            reason: match obj.remove("reason") {
                Some(Value::String(r)) if !r.trim().is_empty() => r,
                None | Some(Value::Null | Value::String(_)) => {
                    crate::contract::ASK_WITHOUT_A_REASON.to_owned()
                }
                Some(other) => {
                    return Err(not_a_decision(format!(
                        "`ask` with a `reason` that is not a string: {other}"
                    )));
                }
            },
            input: None,
        },
        other => {
            return Err(not_a_decision(format!(
                "unknown decision {other:?} (expected allow, deny, modify, replace or ask)"
            )));
        }
    };
    Ok(Verdict {
        decision: verdict,
        context,
    })
}

/// Why a `replace` answer's `result` is not a tool result.
#[derive(Debug, thiserror::Error)]
enum ParseResultError {
    #[error("expected an object with `output`, got {0}")]
    NotAnObject(Value),
    #[error("{0}")]
    Malformed(serde_json::Error),
}

fn parse_result(value: Value) -> Result<ToolResult, ParseResultError> {
    #[derive(Deserialize)]
    struct Lenient {
        output: Value,
        #[serde(default)]
        is_error: bool,
    }
    let Value::Object(_) = &value else {
        return Err(ParseResultError::NotAnObject(value));
    };
    // Unknown fields in an answer are ignored (a newer hook may add some).
    let r: Lenient = serde_json::from_value(value).map_err(ParseResultError::Malformed)?;
    Ok(ResultV1 {
        output: r.output,
        is_error: r.is_error,
    }
    .into())
}

/// A short, printable excerpt of bytes a hook wrote.
fn excerpt(bytes: &[u8]) -> String {
    const MAX: usize = 120;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX * 4)]);
    format!("{:?}", crate::text::excerpt(&text, MAX))
}

/// Why a request could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadRequestError {
    /// Not JSON, or a field of the wrong type, or an unknown field.
    #[error("the request is not a valid wire v1 object")]
    Malformed(#[source] serde_json::Error),
    /// A `schema` other than 1.
    #[error("the request says schema {0}; this toolgate speaks schema {SCHEMA}")]
    UnsupportedSchema(u64),
    /// A required field is absent.
    #[error("the request has no `{0}` (give it in the JSON or with --{0})")]
    Missing(&'static str),
    /// An event name that is not an event.
    #[error("unknown event {0:?} (expected pre_tool_use or post_tool_use)")]
    UnknownEvent(String),
    /// `result` on a pre request, or none on a post request.
    #[error("{0}")]
    ResultMismatch(&'static str),
}

/// Reads a wire-v1 request as `toolgate check` takes it: `schema` and `hook`
/// optional, `event` and `tool` overridable. `event` defaults to
/// `pre_tool_use`, as a hook's `event` does in hooks.json: most calls an
/// author writes by hand are checks before the call. `hook` and `config` are accepted
/// (so a request captured from a hook can be fed back) and ignored: every
/// hook gets its own `config` from hooks.json.
pub fn read_request(
    json: &[u8],
    event: Option<&str>,
    tool: Option<&str>,
) -> Result<Request, ReadRequestError> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Incoming {
        schema: Option<u64>,
        event: Option<String>,
        #[serde(rename = "hook")]
        _hook: Option<Value>,
        tool: Option<String>,
        // `"input": null` is an input (a tool called without one; what
        // `request_json` writes for it), not a missing one: serde would read
        // both as `None`, so a request captured from a hook could not be fed
        // back (found by the round-trip property, tests/all/props.rs).
        #[serde(default, deserialize_with = "present")]
        input: Option<Value>,
        result: Option<ResultV1>,
        session_id: Option<String>,
        turn_id: Option<String>,
        tool_call_id: Option<String>,
        cwd: Option<String>,
        #[serde(rename = "config")]
        _config: Option<Value>,
    }
    // serde's message quotes the offending value or key; the request may
    // carry a file's content (a tool's input or output), so the error says
    // where and what was expected only (found by the property tests,
    // tests/all/props.rs).
    let incoming: Incoming = serde_json::from_slice(json).map_err(|e| {
        ReadRequestError::Malformed(serde::de::Error::custom(crate::strict_json::shape_error(
            &e,
        )))
    })?;
    if let Some(schema) = incoming.schema
        && schema != u64::from(SCHEMA)
    {
        return Err(ReadRequestError::UnsupportedSchema(schema));
    }
    let event = match event.map(str::to_owned).or(incoming.event) {
        Some(name) => Event::from_wire(&name).ok_or(ReadRequestError::UnknownEvent(name))?,
        None => Event::PreToolUse,
    };
    let tool = tool
        .map(str::to_owned)
        .or(incoming.tool)
        .ok_or(ReadRequestError::Missing("tool"))?;
    let input = incoming.input.ok_or(ReadRequestError::Missing("input"))?;
    match (event, &incoming.result) {
        (Event::PostToolUse, None) => {
            return Err(ReadRequestError::ResultMismatch(
                "a post_tool_use request needs `result`: {\"output\": …, \"is_error\": false}",
            ));
        }
        (Event::PreToolUse, Some(_)) => {
            return Err(ReadRequestError::ResultMismatch(
                "a pre_tool_use request has no `result` (the tool has not run yet)",
            ));
        }
        (Event::ListTools, Some(_)) => {
            return Err(ReadRequestError::ResultMismatch(
                "a list_tools request has no `result` (its input is the tool's definition)",
            ));
        }
        (Event::PreToolUse | Event::ListTools, None) | (Event::PostToolUse, Some(_)) => {}
    }
    Ok(Request {
        event,
        tool,
        input,
        result: incoming.result.map(ToolResult::from),
        session_id: incoming.session_id,
        turn_id: incoming.turn_id,
        tool_call_id: incoming.tool_call_id,
        cwd: incoming.cwd,
    })
}

/// A field that is present, even as `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The JSON `toolgate check` prints for an outcome: `decision`, then `reason`
/// (deny), `input` (modify), `result` (replace, and post deny: what the model
/// is shown), `context`, `decided_by`, `shadow` (what a shadow hook would
/// have made of it), and `runs`.
pub fn outcome_json(outcome: &Outcome) -> Value {
    let answer = Verdict {
        decision: outcome.decision.clone(),
        context: outcome.context.clone(),
    };
    let Value::Object(mut out) = encode_answer(&answer) else {
        return Value::Null;
    };
    if let (Decision::Deny { .. }, Some(shown)) = (&outcome.decision, &outcome.shown) {
        out.insert("result".into(), json!(ResultV1::from(shown)));
    }
    if let Some(by) = &outcome.decided_by {
        out.insert("decided_by".into(), json!(by));
    }
    if let Some(shadowed) = outcome.shadowed() {
        out.insert("shadow".into(), json!(shadowed));
    }
    out.insert("runs".into(), json!(outcome.runs));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(text: &str) -> Result<Verdict, HookFailure> {
        decode_answer(text.as_bytes())
    }

    #[test]
    fn a_deny_always_denies_even_malformed() {
        let answer = decode(r#"{"decision":"deny","context":7}"#).unwrap();
        assert!(matches!(answer.decision, Decision::Deny { .. }));
        let answer = decode(r#"{"decision":"allow","decision":"deny","reason":"r"}"#).unwrap();
        assert_eq!(answer.decision, Decision::Deny { reason: "r".into() });
    }

    #[test]
    fn nothing_unclear_is_ever_an_allow() {
        for text in [
            "",
            "  \n",
            "allow",
            "[]",
            r#"{"decision":"yes"}"#,
            r#"{"decision":"allow","decision":"allow"}"#,
            r#"{"decision":"modify"}"#,
            r#"{"decision":"replace","result":"x"}"#,
            r#"{"decision":"allow","context":7}"#,
        ] {
            assert!(decode(text).is_err(), "{text:?} was read as an answer");
        }
    }

    #[test]
    fn unknown_answer_fields_are_ignored() {
        let answer = decode(r#"{"decision":"allow","future":1}"#).unwrap();
        assert_eq!(answer, Verdict::allow());
    }

    #[test]
    fn an_excerpt_of_garbage_is_one_short_printable_line() {
        let err = decode(&format!("\u{1b}[2J{}", "x".repeat(500))).unwrap_err();
        let text = err.to_string();
        assert!(!text.contains('\u{1b}') && text.len() < 400, "{text}");
    }
}
