//! Outward: toolgate as the agent's hook. `toolgate claude-code` and
//! `toolgate codex` read the agent's hook stdin ([`read_agent_input`]), run
//! the chain, and answer in the agent's dialect ([`render_outcome`]).
//!
//! # Why one module for both agents
//!
//! Codex copies Claude Code's hook envelope (event names, `tool_input`,
//! `hookSpecificOutput`), with a stricter output schema. The two differ in a
//! handful of answers, each a `match` arm on [`Outward`] below; a new agent
//! with the same envelope is a new variant, one with its own envelope a new
//! file beside this one.

use super::claude::event_name;
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};

/// The dialect `toolgate` answers in when it is the agent's hook: one
/// variant per agent. Its name (`claude-code`, `codex`) is the subcommand,
/// the `mode` a client asks `toolgate serve` for, and the name in the help
/// snapshots: serde and strum derive them from the variant, so they cannot
/// drift apart. Everything that differs between agents is a `match` on it
/// with no catch-all arm, so a new variant is refused by the compiler until
/// each of them says what the new agent does.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    serde::Serialize,
    serde::Deserialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantArray,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum Outward {
    /// Claude Code.
    ClaudeCode,
    /// Codex: the same envelope with a strict output schema (no `ask`, no
    /// unknown fields, `updatedInput` only with `allow`).
    Codex,
}

impl Outward {
    /// Every dialect, in the order the CLI lists them.
    pub const ALL: &'static [Outward] = <Outward as strum::VariantArray>::VARIANTS;

    /// Its name: the subcommand (`toolgate claude-code`) and the server's
    /// `mode`.
    pub fn name(self) -> &'static str {
        self.into()
    }

    /// The envelope the agent hands its hook.
    fn envelope(self) -> Envelope {
        match self {
            // Codex copies Claude Code's envelope.
            Outward::ClaudeCode | Outward::Codex => Envelope::ClaudeCode,
        }
    }
}

/// How an agent's hook stdin is laid out. Agents that copied Claude Code's
/// share its variant; one with an envelope of its own adds one.
#[derive(Clone, Copy)]
enum Envelope {
    /// `hook_event_name`, `tool_name`, `tool_input`, `tool_response`.
    ClaudeCode,
}

/// A tool call as an agent hands it to its hook.
#[derive(Debug)]
pub struct AgentCall {
    /// `PreToolUse`, `PostToolUse`, `PostToolUseFailure`, or another event
    /// toolgate has no part in.
    pub hook_event_name: String,
    /// The request, when the event is one toolgate evaluates.
    pub request: Option<Request>,
    /// The agent's working directory.
    pub cwd: Option<String>,
}

/// Why an agent's hook input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadAgentInputError {
    /// Not a JSON object.
    #[error("the hook input is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("the hook input is not a JSON object")]
    NotAnObject,
    /// A field the event needs is missing.
    #[error("the hook input has no `{0}`")]
    Missing(&'static str),
}

/// Reads the hook stdin `dialect`'s agent wrote.
pub fn read_agent_input(bytes: &[u8], dialect: Outward) -> Result<AgentCall, ReadAgentInputError> {
    let value: Value = serde_json::from_slice(bytes).map_err(ReadAgentInputError::NotJson)?;
    let Value::Object(obj) = value else {
        return Err(ReadAgentInputError::NotAnObject);
    };
    match dialect.envelope() {
        Envelope::ClaudeCode => read_claude_code_envelope(&obj),
    }
}

/// Reads Claude Code's hook stdin (Codex's is the same).
fn read_claude_code_envelope(obj: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
    let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let name = s("hook_event_name").ok_or(ReadAgentInputError::Missing("hook_event_name"))?;
    let cwd = s("cwd");
    let event = match name.as_str() {
        "PreToolUse" => Event::PreToolUse,
        // A call whose tool failed (a command that exited non-zero) goes
        // through the post chain too, with `is_error: true`: otherwise a
        // redactor never sees `echo SECRET; exit 3`.
        "PostToolUse" | "PostToolUseFailure" => Event::PostToolUse,
        _ => {
            return Ok(AgentCall {
                hook_event_name: name,
                request: None,
                cwd,
            });
        }
    };
    let tool = s("tool_name").ok_or(ReadAgentInputError::Missing("tool_name"))?;
    let input = obj
        .get("tool_input")
        .cloned()
        .ok_or(ReadAgentInputError::Missing("tool_input"))?;
    let result = match name.as_str() {
        "PostToolUse" => Some(ToolResult::ok(
            obj.get("tool_response").cloned().unwrap_or(Value::Null),
        )),
        // What the model is shown for a failed call is the error text.
        "PostToolUseFailure" => Some(ToolResult::error(
            obj.get("error").cloned().unwrap_or(Value::Null),
        )),
        _ => None,
    };
    Ok(AgentCall {
        hook_event_name: name,
        request: Some(Request {
            event,
            tool,
            input,
            result,
            session_id: s("session_id"),
            turn_id: s("turn_id"),
            tool_call_id: s("tool_use_id"),
            cwd: cwd.clone(),
        }),
        cwd,
    })
}

/// What toolgate prints for an outcome when it is the agent's hook: the JSON
/// for stdout (none when there is nothing to say) — always with exit 0; a
/// toolgate failure is exit 2 with the reason on stderr, handled by the CLI.
/// `hook_event_name` is the agent's event (`PostToolUseFailure` is answered
/// as itself).
///
/// What each answer becomes, and why (Claude Code 2.1.197, each line pinned
/// by a live test against the real CLI in `tests/all/live.rs`):
///
/// - `allow` prints no permission decision: toolgate's allow means "no
///   objection", and the agent's own permission rules still apply.
/// - `modify` is `updatedInput` **without** a permission decision: with
///   `allow` beside it, Claude Code would approve the rewritten call and skip
///   its permission rules; without one, it applies the rewrite and still asks
///   its rules (Codex's schema needs `allow` with `updatedInput`).
/// - a pre `replace` (toolgate answering for the tool) cannot be expressed;
///   it becomes a denial whose reason carries the replacement.
/// - a post `replace` is `updatedToolOutput` **in the tool's own output
///   shape**, derived from the `tool_response` toolgate was given: Claude
///   Code validates the replacement against the tool's schema and silently
///   shows the original on a mismatch. Whatever the chain's last replacement
///   is (a string, or JSON of any shape), what is sent fits that shape
///   (`in_shape`): a replacement that does not is shown as text in the
///   tool's text field (a string replacement for Bash fills `stdout` and
///   empties `stderr`). Where no shape can be derived, toolgate fails closed
///   as below: the agent is stopped, never shown the original.
/// - a post `deny` withholds the output: for Bash, an interrupted result whose
///   stderr is the reason (the model sees the reason marked as an error); for
///   a tool whose shape toolgate cannot fill, `continue: false`, which stops
///   the agent before the model sees the output.
/// - on `PostToolUseFailure` Claude Code honours no replacement and no stop:
///   a deny or replace becomes `decision: block` with the reason (the model
///   is told the output must be disregarded) and the context; the output
///   itself cannot be withheld.
pub fn render_outcome(outcome: &Outcome, dialect: Outward, hook_event_name: &str) -> Option<Value> {
    let failure_event = hook_event_name == "PostToolUseFailure";
    let event = if failure_event {
        "PostToolUseFailure"
    } else {
        event_name(outcome.event)
    };
    let mut answer = Rendered::default();
    answer.specific.insert("hookEventName".into(), json!(event));
    if let Some(context) = &outcome.context {
        answer
            .specific
            .insert("additionalContext".into(), json!(context));
    }
    let decision = &outcome.decision;
    match outcome.event {
        Event::PreToolUse => answer.pre(decision, dialect),
        Event::PostToolUse if failure_event => answer.post_failure(decision),
        Event::PostToolUse => {
            let original = outcome.tool_result.as_ref().map(|r| &r.output);
            answer.post(decision, dialect, original);
        }
    }
    let Rendered { mut top, specific } = answer;
    if specific.len() > 1 {
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

/// An answer being written: its top-level fields and its
/// `hookSpecificOutput`.
#[derive(Default)]
struct Rendered {
    top: Map<String, Value>,
    specific: Map<String, Value>,
}

fn withheld(reason: &str) -> String {
    format!("toolgate withheld the output of this call: {reason}")
}

impl Rendered {
    /// Before the call.
    fn pre(&mut self, decision: &Decision, dialect: Outward) {
        let specific = &mut self.specific;
        match decision {
            Decision::Allow => {}
            Decision::Deny { reason } => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert("permissionDecisionReason".into(), json!(reason));
            }
            Decision::Modify { input } => {
                match dialect {
                    // Claude Code: no decision, so its permission rules still apply.
                    Outward::ClaudeCode => {}
                    // Codex's schema takes `updatedInput` only beside `allow`.
                    Outward::Codex => {
                        specific.insert("permissionDecision".into(), json!("allow"));
                    }
                }
                specific.insert("updatedInput".into(), input.clone());
            }
            Decision::Replace { result } => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert(
                    "permissionDecisionReason".into(),
                    json!(format!(
                        "toolgate answered for the tool instead of running it: {}",
                        output_text(&result.output)
                    )),
                );
            }
        }
    }

    /// After a call whose tool failed (`PostToolUseFailure`): only a block
    /// with a reason is honoured.
    fn post_failure(&mut self, decision: &Decision) {
        let reason = match decision {
            Decision::Allow | Decision::Modify { .. } => return,
            Decision::Deny { reason } => withheld(reason),
            Decision::Replace { result } => format!(
                "toolgate replaced the output of this call; disregard it and use this instead: {}",
                output_text(&result.output)
            ),
        };
        self.block(reason);
    }

    /// After the call; `original` is the agent's `tool_response`.
    fn post(&mut self, decision: &Decision, dialect: Outward, original: Option<&Value>) {
        match decision {
            Decision::Allow | Decision::Modify { .. } => {}
            Decision::Deny { reason } => match dialect {
                Outward::ClaudeCode => {
                    match original.and_then(|o| withheld_in_shape(o, &withheld(reason))) {
                        Some(shaped) => self.replace_output(shaped),
                        None => self.stop(&withheld(reason)),
                    }
                }
                Outward::Codex => self.block(reason.clone()),
            },
            Decision::Replace { result } => match dialect {
                Outward::ClaudeCode => match in_shape(original, &result.output) {
                    Some(shaped) => self.replace_output(shaped),
                    None => self.stop(
                        "toolgate replaced the output of this call but cannot express the \
                         replacement in this tool's output shape, so the output is withheld",
                    ),
                },
                // Codex's strict schema has no output replacement: block
                // with the replacement as the reason, so the model sees
                // only it.
                Outward::Codex => self.block(format!(
                    "toolgate replaced this tool's output: {}",
                    output_text(&result.output)
                )),
            },
        }
    }

    fn block(&mut self, reason: String) {
        self.top.insert("decision".into(), json!("block"));
        self.top.insert("reason".into(), json!(reason));
    }

    fn replace_output(&mut self, shaped: Value) {
        self.specific.insert("updatedToolOutput".into(), shaped);
    }

    /// Fails closed after the call where no replacement can be expressed:
    /// the agent stops before the model sees the output.
    fn stop(&mut self, reason: &str) {
        self.top.insert("continue".into(), json!(false));
        self.top.insert("stopReason".into(), json!(reason));
    }
}

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
fn in_shape(original: Option<&Value>, replacement: &Value) -> Option<Value> {
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
fn withheld_in_shape(original: &Value, reason: &str) -> Option<Value> {
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

fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
