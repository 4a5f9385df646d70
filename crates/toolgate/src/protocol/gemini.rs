//! Gemini CLI's hook protocol, inward: a `BeforeTool` / `AfterTool` hook
//! written for Gemini CLI, run inside toolgate's chain
//! (`"protocol": "gemini"`, what `toolgate import gemini` writes).
//!
//! # Why
//!
//! So a Gemini CLI user's existing hooks keep working, unmodified, inside
//! the ordered, fail-closed chain that every agent then shares: the hook gets
//! Gemini CLI's stdin and environment, and its answer is read by Gemini
//! CLI's rules (as Gemini CLI 0.61.0 was seen to apply them live).
//!
//! # Where toolgate differs from Gemini CLI, on purpose
//!
//! - Gemini CLI lets a call through when its hook exits 1, exits non-zero
//!   without a word, is killed by a signal or times out. In toolgate each is
//!   a failure, and the hook's `on_failure` applies — deny by default.
//! - `ask` needs a person: a denial that says so (headless Gemini CLI would
//!   wait forever).
//! - `continue: false` cannot stop the agent from inside a chain: this call
//!   is denied with the `stopReason`.
//! - `tailToolCallRequest` (run another tool instead) cannot be carried: a
//!   failure, never a silent allow.
//! - JSON that is not an object, or a `decision` toolgate does not know, is
//!   a failure (Gemini CLI would allow).
//! - A repeated key is not resolved by keeping the last one (as Gemini
//!   CLI's `JSON.parse` does, so `{"decision":"deny","decision":"allow"}`
//!   would be an allow): if any of the repeats is a deny signal
//!   (`decision` deny, block or ask, `continue: false`) the call is denied;
//!   any other repeated key is a failure. Found by the property tests
//!   (`tests/all/props.rs`), as wire v1 and the Claude Code protocol
//!   already read repeats.
//!
//! Kept as Gemini CLI does it: the answer is read from stdout, or from
//! stderr when stdout is empty, as JSON whatever the exit code; plain text is
//! an allow on exit 0 and a denial (the text is the reason) on exit 2 or
//! more; `hookSpecificOutput.tool_input` replaces the whole input;
//! `decision: "deny"` or `"block"` refuses the call (before) or shows the
//! model the reason instead of the output (after).

use super::{Exit, Read};
use crate::contract::{Decision, Event, HookRequest, ToolResult, Verdict};
use crate::failure::HookFailure;
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::path::Path;

/// Gemini CLI's name for an event.
fn event_name(event: Event) -> &'static str {
    match event {
        Event::PreToolUse => "BeforeTool",
        Event::PostToolUse => "AfterTool",
        // Never encoded (`Inward::encode` refuses it): no Gemini CLI event
        // lists tools.
        Event::ListTools => "ListTools",
    }
}

/// Encodes a request as Gemini CLI's hook stdin, and the variables Gemini
/// CLI sets for its hooks (all naming `project_dir`).
pub(crate) fn encode_request(
    request: &HookRequest<'_>,
    project_dir: &Path,
) -> (Vec<u8>, Vec<(&'static str, OsString)>) {
    let dir = project_dir.to_string_lossy();
    let mut obj = json!({
        "session_id": request.session_id.unwrap_or("toolgate"),
        "transcript_path": "",
        "cwd": request.cwd.unwrap_or(&dir),
        "hook_event_name": event_name(request.event),
        "timestamp": timestamp(),
        "tool_name": request.tool,
        "tool_input": request.input,
    });
    if let Some(result) = request.result {
        let text = match &result.output {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let mut response = json!({"llmContent": text, "returnDisplay": text});
        if result.is_error {
            response["error"] = json!({"message": text, "type": "execution_failed"});
        }
        obj["tool_response"] = response;
    }
    let mut bytes = obj.to_string().into_bytes();
    bytes.push(b'\n');
    let dir = project_dir.as_os_str().to_owned();
    let env = ["GEMINI_PROJECT_DIR", "GEMINI_CWD", "CLAUDE_PROJECT_DIR"]
        .into_iter()
        .map(|k| (k, dir.clone()))
        .collect();
    (bytes, env)
}

/// Now, as Gemini CLI writes it (`2026-12-01T11:18:44.208Z`).
fn timestamp() -> String {
    crate::text::rfc3339(std::time::SystemTime::now())
}

/// How a Gemini CLI hook ended, read by Gemini CLI's rules with toolgate's
/// differences (see the module docs).
pub(crate) fn read_exit(event: Event, exit: &Exit<'_>, _current: Option<&ToolResult>) -> Read {
    let stdout = String::from_utf8_lossy(exit.stdout);
    let stderr = String::from_utf8_lossy(exit.stderr);
    let text = match stdout.trim() {
        "" => stderr.trim(),
        out => out,
    };
    let failed = |why: String| Read {
        answer: Err(HookFailure::ExitedNonZero { status: why }),
        note: None,
    };
    let Some(code) = exit.code else {
        return failed(format!(
            "{} (in Gemini CLI a signal lets the call through)",
            exit.status
        ));
    };
    if let Some((json, repeats)) = as_json(text) {
        let (answer, note) = decode_json(event, &json, &repeats);
        return match (code, &answer) {
            // Gemini CLI reads the JSON whatever the exit code; toolgate
            // keeps a denial, and a hook that failed has not allowed.
            (0, _)
            | (
                _,
                Ok(Verdict {
                    decision: Decision::Deny { .. },
                    ..
                }),
            ) => Read { answer, note },
            _ => failed(format!(
                "{} with a JSON answer that does not deny",
                exit.status
            )),
        };
    }
    match code {
        0 => Read {
            answer: Ok(Verdict::allow()),
            note: (!text.is_empty()).then(|| {
                format!(
                    "plain-text output (not shown to the model): {}",
                    crate::text::bound(text.to_owned(), crate::text::MAX_MESSAGE, "output")
                )
            }),
        },
        2.. if !text.is_empty() => Read {
            answer: Ok(Verdict::deny(text.to_owned())),
            note: None,
        },
        _ => failed(format!(
            "{} (in Gemini CLI {})",
            exit.status,
            if text.is_empty() {
                "a silent non-zero exit lets the call through"
            } else {
                "exit 1 is a warning and lets the call through"
            }
        )),
    }
}

/// `text` as a JSON value, when it is JSON (or a JSON string holding JSON,
/// which Gemini CLI unwraps once), with every repeated key after its first
/// (see the module docs).
fn as_json(text: &str) -> Option<(Value, Vec<(String, Value)>)> {
    match crate::strict_json::parse_recording(text.as_bytes()).ok()? {
        (Value::String(inner), _) => crate::strict_json::parse_recording(inner.as_bytes()).ok(),
        read => Some(read),
    }
}

/// Whether `key: value`, repeated somewhere in an answer, is a deny signal.
fn denies(key: &str, value: &Value) -> bool {
    (key == "decision" && matches!(value.as_str(), Some("deny" | "block" | "ask")))
        || (key == "continue" && value == &Value::Bool(false))
}

fn not(detail: impl Into<String>) -> HookFailure {
    HookFailure::NotADecision {
        detail: detail.into(),
    }
}

fn decode_json(
    event: Event,
    json: &Value,
    repeats: &[(String, Value)],
) -> (Result<Verdict, HookFailure>, Option<String>) {
    let (answer, note) = decode_first(event, json);
    let Some((key, _)) = repeats.first() else {
        return (answer, note);
    };
    // A repeated key: a deny read from the first values stands; a deny
    // signal among the repeats denies; anything else is not guessed at.
    let answer = match answer {
        Ok(Verdict {
            decision: Decision::Deny { .. },
            ..
        }) => answer,
        _ if repeats.iter().any(|(k, v)| denies(k, v)) => Ok(Verdict::deny(
            "denied by a hook whose answer repeated a key (one of its decisions was a denial)",
        )),
        _ => Err(not(format!(
            "the answer repeats the key `{}`; toolgate does not guess which one was meant",
            crate::text::one_line(key)
        ))),
    };
    (answer, note)
}

/// Decodes an answer by its first value of each key.
fn decode_first(event: Event, json: &Value) -> (Result<Verdict, HookFailure>, Option<String>) {
    let Value::Object(top) = json else {
        return (Err(not("the JSON answer is not an object")), None);
    };
    let note = top
        .get("systemMessage")
        .and_then(Value::as_str)
        .map(|m| format!("systemMessage: {m}"));
    let empty = Map::new();
    let specific = match top.get("hookSpecificOutput") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => {
            return (Err(not("`hookSpecificOutput` is not an object")), note);
        }
    };
    let text = |o: &Map<String, Value>, k: &str| {
        o.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned)
    };
    let reason = text(top, "reason");
    let context = text(specific, "additionalContext");
    let decision = if top.get("continue") == Some(&Value::Bool(false)) {
        Ok(Decision::Deny {
            reason: text(top, "stopReason")
                .or(reason)
                .unwrap_or_else(|| "a hook asked the agent to stop".into()),
        })
    } else {
        match top.get("decision") {
            Some(Value::String(d)) if d == "deny" || d == "block" => Ok(Decision::Deny {
                reason: reason.unwrap_or_else(|| "No reason provided".into()),
            }),
            // Before the call, toolgate's own `ask` (the agent's
            // confirmation where a person is watching, a denial saying so
            // elsewhere); after it, there is nothing left to confirm.
            Some(Value::String(d)) if d == "ask" && event == Event::PreToolUse => {
                Ok(Decision::Ask {
                    reason: reason
                        .unwrap_or_else(|| crate::contract::ASK_WITHOUT_A_REASON.to_owned()),
                    input: None,
                })
            }
            Some(Value::String(d)) if d == "ask" => Ok(Decision::Deny {
                reason: toolgate_contract::refusal::NEEDS_A_PERSON.into(),
            }),
            None | Some(Value::Null) => allow_or_modify(event, specific),
            Some(Value::String(d)) if d == "allow" || d == "approve" => {
                allow_or_modify(event, specific)
            }
            Some(other) => Err(not(format!(
                "unknown `decision` {other} (expected allow, deny, block or ask)"
            ))),
        }
    };
    (decision.map(|decision| Verdict { decision, context }), note)
}

/// Allow, or the rewrite a `BeforeTool` answer carries; a tail call cannot
/// be carried.
fn allow_or_modify(event: Event, specific: &Map<String, Value>) -> Result<Decision, HookFailure> {
    if specific.contains_key("tailToolCallRequest") {
        return Err(not(
            "`tailToolCallRequest` (run another tool instead) cannot run inside toolgate's chain",
        ));
    }
    match (event, specific.get("tool_input")) {
        (Event::PreToolUse, Some(input @ Value::Object(_))) => Ok(Decision::Modify {
            input: input.clone(),
        }),
        // A list is never put to this protocol (`Inward::encode`).
        (Event::PreToolUse, Some(Value::Null) | None)
        | (Event::PostToolUse | Event::ListTools, _) => Ok(Decision::Allow),
        (Event::PreToolUse, Some(_)) => Err(not("`tool_input` is not an object")),
    }
}
