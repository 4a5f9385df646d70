//! Claude Code's hook protocol, inward: a hook written for Claude Code,
//! run inside toolgate's chain.
//!
//! # Why
//!
//! Claude Code's hook protocol is the de facto standard (Codex copies it;
//! Cursor, Copilot CLI and VS Code read Claude's settings). People who would
//! use toolgate already have hooks written for it, and run agents that only
//! know how to call a command. So toolgate speaks it in both directions:
//!
//! - **inward**: a subprocess hook with `"protocol": "claude-code"` gets
//!   Claude Code's stdin and is read by Claude Code's rules, so an existing
//!   script runs unmodified inside toolgate's ordered, fail-closed chain;
//! - **outward**: `toolgate claude-code` / `toolgate codex` *is* a Claude Code
//!   (or Codex) hook: one settings entry gives the agent the whole chain.
//!
//! # Where toolgate differs from Claude Code, on purpose
//!
//! - An exit code other than 0 and 2 is a *non-blocking error* in Claude Code
//!   (the call goes through). In toolgate it is a failure, and the hook's
//!   `on_failure` applies — deny by default. A guard that crashes must not
//!   silently stop guarding.
//! - `ask` and `defer` need a person watching. Inside toolgate's chain there
//!   is none, so both become a denial whose reason says a person's
//!   confirmation was required. Never a silent allow.
//! - `continue: false` (stop the whole agent) cannot be honoured by a hook
//!   chain; it becomes a denial of this call with the `stopReason`.
//! - Plain-text stdout on exit 0 is not shown to the model (as in Claude Code
//!   for tool events); toolgate keeps it for the operator.
//! - A JSON answer that is malformed is a failure (fail closed), never the
//!   allow that Claude Code makes of output it cannot read: a byte-order mark
//!   before the JSON, a repeated key, a `permissionDecision`, `decision`,
//!   reason or context that is not a string, a `hookSpecificOutput` that is
//!   not an object, an `updatedInput` that is not an object, a `continue`
//!   that is not a boolean. A deny signal wins over all of that: if the
//!   answer (or any repeated key in it) says `deny`, `ask`, `defer`,
//!   `block` or `continue: false`, the call is denied, so a malformed denial
//!   cannot be waved through by `on_failure: allow`.

use super::{Exit, Read};
use crate::contract::{Decision, Event, HookRequest, ToolResult, Verdict};
use crate::failure::HookFailure;
use serde_json::{Map, Value, json};

pub(crate) use toolgate_agents::event_name;

/// Encodes a request as Claude Code's hook stdin.
pub(crate) fn encode_request(request: &HookRequest<'_>, default_cwd: &str) -> Vec<u8> {
    let mut obj = json!({
        "session_id": request.session_id.unwrap_or("toolgate"),
        "cwd": request.cwd.unwrap_or(default_cwd),
        "permission_mode": "default",
        "hook_event_name": event_name(request.event),
        "tool_name": request.tool,
        "tool_input": request.input,
        "tool_use_id": request.tool_call_id.unwrap_or(""),
    });
    if let Some(result) = request.result {
        obj["tool_response"] = result.output.clone();
    }
    let mut bytes = obj.to_string().into_bytes();
    bytes.push(b'\n');
    bytes
}

/// What a Claude Code-style hook's exit means, read by Claude Code's rules
/// (with toolgate's differences above): exit 2 is a denial whose reason is
/// stderr, exit 0 is read by [`decode_answer`], anything else is a failure.
pub(crate) fn read_exit(event: Event, exit: &Exit<'_>, current: Option<&ToolResult>) -> Read {
    let (answer, note) = match exit.code {
        Some(2) => {
            let reason = String::from_utf8_lossy(exit.stderr).trim().to_owned();
            let reason = if reason.is_empty() {
                "blocked by a hook (exit 2) that gave no reason".to_owned()
            } else {
                reason
            };
            (Ok(Verdict::deny(reason)), None)
        }
        Some(0) => decode_answer(event, exit.stdout, current),
        _ => (
            Err(HookFailure::ExitedNonZero {
                status: format!(
                    "{} (not 0 or 2; in Claude Code a non-blocking error)",
                    exit.status
                ),
            }),
            None,
        ),
    };
    Read { answer, note }
}

/// Reads what a Claude Code hook printed on success: nothing is an allow,
/// plain text is an allow with a note for the operator, JSON is decoded by
/// Claude Code's rules (with toolgate's differences above). Returns the
/// answer and, when there is one, text for the operator.
pub(crate) fn decode_answer(
    event: Event,
    stdout: &[u8],
    current: Option<&ToolResult>,
) -> (Result<Verdict, HookFailure>, Option<String>) {
    let text = String::from_utf8_lossy(stdout);
    let trimmed = text.trim();
    let unmarked = trimmed
        .trim_start_matches(['\u{feff}', '\u{200b}'])
        .trim_start();
    if trimmed.is_empty() {
        (Ok(Verdict::allow()), None)
    } else if unmarked.starts_with('{') && unmarked.len() != trimmed.len() {
        (
            Err(HookFailure::NotADecision {
                detail: "a byte-order mark (or zero-width character) before the JSON \
                         answer; Claude Code would read it as plain text and let the \
                         call through"
                    .into(),
            }),
            None,
        )
    } else if trimmed.starts_with('{') {
        decode_json(event, trimmed, current)
    } else {
        let note = format!(
            "plain-text stdout (not shown to the model): {}",
            crate::text::bound(trimmed.to_owned(), crate::text::MAX_MESSAGE, "stdout")
        );
        (Ok(Verdict::allow()), Some(note))
    }
}

fn decode_json(
    event: Event,
    text: &str,
    current: Option<&ToolResult>,
) -> (Result<Verdict, HookFailure>, Option<String>) {
    let (obj, dups) = match crate::strict_json::parse_recording(text.as_bytes()) {
        Ok((Value::Object(obj), dups)) => (obj, dups),
        Ok(_) => return (Err(not("stdout is JSON but not an object".into())), None),
        Err(e) => {
            return (
                Err(not(format!("stdout starts with `{{` but is not JSON: {e}"))),
                None,
            );
        }
    };
    let answer = Answer::new(&obj, &dups);
    let note = str_field(&obj, "systemMessage").map(|m| format!("systemMessage: {m}"));
    // Deny signals first: in the answer or among its repeated keys, they
    // win over anything malformed (see the module docs). Only then is
    // anything malformed a failure, never an allow.
    let decision = match answer.deny_signal(event) {
        Some(deny) => Ok(deny),
        None => answer
            .well_formed()
            .and_then(|()| answer.decision(event, current)),
    };
    let context = str_field(answer.specific, "additionalContext");
    (decision.map(|decision| Verdict { decision, context }), note)
}

fn not(detail: String) -> HookFailure {
    HookFailure::NotADecision { detail }
}

fn str_field(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// A denial with `reason`, or `fallback` when it gives none.
fn deny(reason: Option<String>, fallback: &str) -> Decision {
    Decision::Deny {
        reason: reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| fallback.to_owned()),
    }
}

/// A Claude Code JSON answer, with the later values of its repeated keys.
struct Answer<'a> {
    top: &'a Map<String, Value>,
    /// `hookSpecificOutput`; empty when it is missing or not an object
    /// (which [`Answer::well_formed`] refuses, unless a deny signal came
    /// first).
    specific: &'a Map<String, Value>,
    dups: &'a [(String, Value)],
}

static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);

impl<'a> Answer<'a> {
    fn new(top: &'a Map<String, Value>, dups: &'a [(String, Value)]) -> Answer<'a> {
        let specific = match top.get("hookSpecificOutput") {
            Some(Value::Object(o)) => o,
            // Read as absent, as Claude Code reads no field of it.
            Some(
                Value::Null
                | Value::Bool(_)
                | Value::Number(_)
                | Value::String(_)
                | Value::Array(_),
            )
            | None => &EMPTY,
        };
        Answer {
            top,
            specific,
            dups,
        }
    }

    /// Whether the answer says `key: value`, first or in a repeat.
    fn said(&self, key: &str, value: &Value, first: Option<&Value>) -> bool {
        first == Some(value) || self.dups.iter().any(|(k, v)| k == key && v == value)
    }

    /// The denial the answer signals anywhere (`continue: false`, a
    /// `deny`, `ask` or `defer` before the call, `decision: block`); a
    /// well-formed `ask` before the call, not repeated and with no denial
    /// beside it, is toolgate's `ask`.
    fn deny_signal(&self, event: Event) -> Option<Decision> {
        if self.said("continue", &Value::Bool(false), self.top.get("continue")) {
            let why = str_field(self.top, "stopReason");
            return Some(deny(why, "a hook asked the agent to stop"));
        }
        let reason = str_field(self.top, "reason");
        if event == Event::PreToolUse {
            let why = str_field(self.specific, "permissionDecisionReason").or(reason.clone());
            let decision = self.specific.get("permissionDecision");
            let said = |what: &str| self.said("permissionDecision", &json!(what), decision);
            if said("deny") {
                return Some(deny(why, "denied by a hook"));
            }
            if self.said("decision", &json!("block"), self.top.get("decision")) {
                return Some(deny(reason, "blocked by a hook"));
            }
            // A clean `ask` is toolgate's own: the agent's confirmation
            // where a person is watching, a denial saying so elsewhere
            // (the chain decides). An `ask` in a malformed or repeated
            // answer stays a denial: closed world.
            if decision == Some(&json!("ask")) && self.well_formed().is_ok() {
                let reason = why
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or_else(|| crate::contract::ASK_WITHOUT_A_REASON.to_owned());
                return Some(Decision::Ask {
                    reason,
                    input: None,
                });
            }
            let person = if said("ask") {
                Some(toolgate_contract::refusal::NEEDS_A_PERSON)
            } else if said("defer") {
                Some("the hook deferred this call to a person, and none is watching")
            } else {
                None
            };
            if let Some(person) = person {
                return Some(deny(why.map(|w| format!("{person}: {w}")), person));
            }
        }
        if self.said("decision", &json!("block"), self.top.get("decision")) {
            return Some(deny(reason, "blocked by a hook"));
        }
        None
    }

    /// No repeated key and no field of the wrong type.
    fn well_formed(&self) -> Result<(), HookFailure> {
        if let Some((key, _)) = self.dups.first() {
            return Err(not(format!(
                "the answer repeats the key `{}`; toolgate does not guess which one was meant",
                crate::text::one_line(key)
            )));
        }
        match malformed(self.top) {
            Some(problem) => Err(not(problem)),
            None => Ok(()),
        }
    }

    /// What a well-formed answer without a denial decides.
    fn decision(
        &self,
        event: Event,
        current: Option<&ToolResult>,
    ) -> Result<Decision, HookFailure> {
        let unknown = |field: &str, value: &str, expected: &str| {
            Err(not(format!(
                "unknown {field} {:?} (expected {expected})",
                crate::text::one_line(value)
            )))
        };
        let legacy = str_field(self.top, "decision");
        match event {
            // A list is never put to this protocol (`Inward::encode`).
            Event::PreToolUse | Event::ListTools => {
                match str_field(self.specific, "permissionDecision").as_deref() {
                    Some("allow") | None => {}
                    Some(other) => {
                        return unknown("permissionDecision", other, "allow, deny, ask or defer");
                    }
                }
                match legacy.as_deref() {
                    Some("approve") | None => Ok(match self.specific.get("updatedInput") {
                        Some(input) => Decision::Modify {
                            input: input.clone(),
                        },
                        None => Decision::Allow,
                    }),
                    Some(other) => unknown("`decision`", other, "approve or block"),
                }
            }
            Event::PostToolUse => match legacy.as_deref() {
                Some("approve") | None => Ok(
                    match self
                        .specific
                        .get("updatedToolOutput")
                        .or_else(|| self.specific.get("updatedMCPToolOutput"))
                    {
                        Some(output) => Decision::Replace {
                            result: ToolResult {
                                output: output.clone(),
                                is_error: current.is_some_and(|r| r.is_error),
                            },
                        },
                        None => Decision::Allow,
                    },
                ),
                Some(other) => unknown("`decision`", other, "block"),
            },
        }
    }
}

/// The first field of a Claude Code answer whose type is wrong, in words.
fn malformed(obj: &Map<String, Value>) -> Option<String> {
    let wrong = |field: &str, expected: &str| Some(format!("`{field}` must be {expected}"));
    let specific = match obj.get("hookSpecificOutput") {
        None => None,
        Some(Value::Object(o)) => Some(o),
        Some(_) => return wrong("hookSpecificOutput", "an object"),
    };
    for key in ["decision", "reason", "stopReason", "systemMessage"] {
        if obj.get(key).is_some_and(|v| !v.is_string()) {
            return wrong(key, "a string");
        }
    }
    for key in ["continue", "suppressOutput"] {
        if obj.get(key).is_some_and(|v| !v.is_boolean()) {
            return wrong(key, "true or false");
        }
    }
    let specific = specific?;
    for key in [
        "hookEventName",
        "permissionDecision",
        "permissionDecisionReason",
        "additionalContext",
    ] {
        if specific.get(key).is_some_and(|v| !v.is_string()) {
            return wrong(&format!("hookSpecificOutput.{key}"), "a string");
        }
    }
    if specific.get("updatedInput").is_some_and(|v| !v.is_object()) {
        return wrong("hookSpecificOutput.updatedInput", "an object");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(event: Event, text: &str) -> (Result<Verdict, HookFailure>, Option<String>) {
        decode_answer(event, text.as_bytes(), None)
    }

    #[test]
    fn a_clean_ask_is_toolgates_ask_with_its_reason() {
        let text = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#;
        let (answer, _) = decode(Event::PreToolUse, text);
        let Decision::Ask { reason, input } = answer.unwrap().decision else {
            panic!("a clean ask was not an ask")
        };
        assert_eq!(reason, "sure?");
        assert_eq!(input, None);
        let bare =
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}"#;
        let (answer, _) = decode(Event::PreToolUse, bare);
        assert!(matches!(
            answer.unwrap().decision,
            Decision::Ask { reason, .. } if reason == crate::contract::ASK_WITHOUT_A_REASON
        ));
    }

    #[test]
    fn an_ask_beside_a_block_a_repeat_or_a_malformed_field_is_a_denial() {
        for text in [
            r#"{"decision":"block","hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"}}"#,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecision":"ask"}}"#,
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask"},"continue":"yes"}"#,
        ] {
            let (answer, _) = decode(Event::PreToolUse, text);
            assert!(
                matches!(
                    answer.as_ref().map(|v| &v.decision),
                    Ok(Decision::Deny { .. })
                ),
                "{text}: {answer:?}"
            );
        }
    }

    #[test]
    fn defer_becomes_a_denial_that_says_a_person_was_needed() {
        let text =
            r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer"}}"#;
        let (answer, _) = decode(Event::PreToolUse, text);
        let Decision::Deny { reason } = answer.unwrap().decision else {
            panic!("defer was not a denial")
        };
        assert!(reason.contains("person"), "{reason}");
    }

    #[test]
    fn a_byte_order_mark_before_json_is_a_failure_not_plain_text() {
        let (answer, _) = decode(Event::PreToolUse, "\u{feff}{\"decision\":\"block\"}");
        assert!(answer.is_err());
    }

    #[test]
    fn plain_text_is_an_allow_with_a_note_for_the_operator() {
        let (answer, note) = decode(Event::PreToolUse, "looks fine to me");
        assert_eq!(answer.unwrap(), Verdict::allow());
        assert!(note.unwrap().contains("looks fine to me"));
    }

    #[test]
    fn a_deny_signal_wins_over_a_malformed_answer() {
        let (answer, _) = decode(
            Event::PreToolUse,
            r#"{"continue":false,"stopReason":"halt","hookSpecificOutput":7}"#,
        );
        assert_eq!(
            answer.unwrap().decision,
            Decision::Deny {
                reason: "halt".into()
            }
        );
        let (answer, _) = decode(
            Event::PostToolUse,
            r#"{"decision":"approve","decision":"block"}"#,
        );
        assert!(matches!(answer.unwrap().decision, Decision::Deny { .. }));
    }

    #[test]
    fn exit_codes_read_by_claude_codes_rules() {
        let exit = |code, stderr: &'static [u8]| Exit {
            code: Some(code),
            status: "exit",
            stdout: b"",
            stderr,
        };
        let read = read_exit(Event::PreToolUse, &exit(2, b"no\n"), None);
        assert_eq!(read.answer.unwrap(), Verdict::deny("no"));
        let read = read_exit(Event::PreToolUse, &exit(0, b""), None);
        assert_eq!(read.answer.unwrap(), Verdict::allow());
        let read = read_exit(Event::PreToolUse, &exit(1, b""), None);
        assert!(matches!(
            read.answer,
            Err(HookFailure::ExitedNonZero { .. })
        ));
    }
}
