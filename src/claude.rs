//! Claude Code's hook protocol, both ways.
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

use crate::contract::{Answer, Event, HookRequest, Request, ToolResult, Verdict};
use crate::failure::HookFailure;
use crate::runner::Outcome;
use serde_json::{Map, Value, json};

/// How a subprocess hook is spoken to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    /// toolgate's wire v1.
    #[default]
    Toolgate,
    /// Claude Code's hook protocol.
    ClaudeCode,
}

/// Claude Code's name for an event.
pub fn event_name(event: Event) -> &'static str {
    match event {
        Event::PreToolUse => "PreToolUse",
        Event::PostToolUse => "PostToolUse",
    }
}

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
/// (with toolgate's differences above). Returns the answer and, when there
/// is one, text for the operator (plain stdout, `systemMessage`).
pub(crate) fn decode_reply(
    event: Event,
    code: Option<i32>,
    status: &str,
    stdout: &[u8],
    stderr: &[u8],
    current: Option<&ToolResult>,
) -> (Result<Answer, HookFailure>, Option<String>) {
    match code {
        Some(2) => {
            let reason = String::from_utf8_lossy(stderr).trim().to_owned();
            let reason = if reason.is_empty() {
                "blocked by a hook (exit 2) that gave no reason".to_owned()
            } else {
                reason
            };
            (Ok(Answer::deny(reason)), None)
        }
        Some(0) => {
            let text = String::from_utf8_lossy(stdout);
            let trimmed = text.trim();
            let unmarked = trimmed
                .trim_start_matches(['\u{feff}', '\u{200b}'])
                .trim_start();
            if trimmed.is_empty() {
                (Ok(Answer::allow()), None)
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
                (Ok(Answer::allow()), Some(note))
            }
        }
        _ => (
            Err(HookFailure::ExitedNonZero {
                status: format!("{status} (not 0 or 2; in Claude Code a non-blocking error)"),
            }),
            None,
        ),
    }
}

fn decode_json(
    event: Event,
    text: &str,
    current: Option<&ToolResult>,
) -> (Result<Answer, HookFailure>, Option<String>) {
    let not = |detail: String| HookFailure::NotADecision { detail };
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
    let empty = Map::new();
    let specific = match obj.get("hookSpecificOutput") {
        None => &empty,
        Some(Value::Object(o)) => o,
        Some(_) => {
            // Still a denial if it says so elsewhere; see `signals`.
            &empty
        }
    };
    let str_field =
        |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
    let context = str_field(specific, "additionalContext");
    let note = str_field(&obj, "systemMessage").map(|m| format!("systemMessage: {m}"));
    let with_context = |verdict: Verdict| Answer {
        verdict,
        context: context.clone(),
    };
    let deny = |reason: Option<String>, fallback: &str| Verdict::Deny {
        reason: reason
            .filter(|r| !r.trim().is_empty())
            .unwrap_or_else(|| fallback.to_owned()),
    };

    // Deny signals first: in the answer or among its repeated keys, they
    // win over anything malformed (see the module docs).
    let said = |key: &str, value: &Value, first: Option<&Value>| {
        first == Some(value) || dups.iter().any(|(k, v)| k == key && v == value)
    };
    if said("continue", &Value::Bool(false), obj.get("continue")) {
        let reason = deny(
            str_field(&obj, "stopReason"),
            "a hook asked the agent to stop",
        );
        return (Ok(with_context(reason)), note);
    }
    let reason = str_field(&obj, "reason");
    if event == Event::PreToolUse {
        let why = str_field(specific, "permissionDecisionReason").or(reason.clone());
        let decision = specific.get("permissionDecision");
        if said("permissionDecision", &json!("deny"), decision) {
            return (Ok(with_context(deny(why, "denied by a hook"))), note);
        }
        if said("permissionDecision", &json!("ask"), decision) {
            let verdict = deny(
                why.map(|w| format!("this call needs a person's confirmation, which toolgate cannot ask for: {w}")),
                "this call needs a person's confirmation, which toolgate cannot ask for",
            );
            return (Ok(with_context(verdict)), note);
        }
        if said("permissionDecision", &json!("defer"), decision) {
            let verdict = deny(
                why.map(|w| {
                    format!("the hook deferred this call to a person, and none is watching: {w}")
                }),
                "the hook deferred this call to a person, and none is watching",
            );
            return (Ok(with_context(verdict)), note);
        }
    }
    if said("decision", &json!("block"), obj.get("decision")) {
        return (Ok(with_context(deny(reason, "blocked by a hook"))), note);
    }

    // No denial: now anything malformed is a failure, never an allow.
    if let Some((key, _)) = dups.first() {
        return (
            Err(not(format!(
                "the answer repeats the key `{}`; toolgate does not guess which one was meant",
                crate::text::one_line(key)
            ))),
            note,
        );
    }
    if let Some(problem) = malformed(&obj) {
        return (Err(not(problem)), note);
    }
    let legacy = str_field(&obj, "decision");
    let verdict = match event {
        Event::PreToolUse => match str_field(specific, "permissionDecision").as_deref() {
            Some("allow") | None => match legacy.as_deref() {
                Some("approve") | None => match specific.get("updatedInput") {
                    Some(input) => Verdict::Modify {
                        input: input.clone(),
                    },
                    None => Verdict::Allow,
                },
                Some(other) => {
                    return (
                        Err(not(format!(
                            "unknown `decision` {:?} (expected approve or block)",
                            crate::text::one_line(other)
                        ))),
                        note,
                    );
                }
            },
            Some(other) => {
                return (
                    Err(not(format!(
                        "unknown permissionDecision {:?} (expected allow, deny, ask or defer)",
                        crate::text::one_line(other)
                    ))),
                    note,
                );
            }
        },
        Event::PostToolUse => match legacy.as_deref() {
            Some("approve") | None => {
                match specific
                    .get("updatedToolOutput")
                    .or_else(|| specific.get("updatedMCPToolOutput"))
                {
                    Some(output) => Verdict::Replace {
                        result: ToolResult {
                            output: output.clone(),
                            is_error: current.is_some_and(|r| r.is_error),
                        },
                    },
                    None => Verdict::Allow,
                }
            }
            Some(other) => {
                return (
                    Err(not(format!(
                        "unknown `decision` {:?} (expected block)",
                        crate::text::one_line(other)
                    ))),
                    note,
                );
            }
        },
    };
    (Ok(with_context(verdict)), note)
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

/// The dialect `toolgate` answers in when it is the agent's hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// Claude Code.
    ClaudeCode,
    /// Codex: the same envelope with a strict output schema (no `ask`, no
    /// unknown fields, `updatedInput` only with `allow`).
    Codex,
}

/// A tool call as Claude Code (or Codex) hands it to a hook.
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
    #[error("the hook input is not a JSON object: {0}")]
    NotJson(String),
    /// A field the event needs is missing.
    #[error("the hook input has no `{0}`")]
    Missing(&'static str),
}

/// Reads Claude Code's (or Codex's) hook stdin.
pub fn read_agent_input(bytes: &[u8]) -> Result<AgentCall, ReadAgentInputError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| ReadAgentInputError::NotJson(e.to_string()))?;
    let Value::Object(obj) = value else {
        return Err(ReadAgentInputError::NotJson("not an object".into()));
    };
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
///   shows the original on a mismatch. A string replacement for Bash fills
///   `stdout` and empties `stderr`. Where no shape can be derived, toolgate
///   fails closed as below.
/// - a post `deny` withholds the output: for Bash, an interrupted result whose
///   stderr is the reason (the model sees the reason marked as an error); for
///   a tool whose shape toolgate cannot fill, `continue: false`, which stops
///   the agent before the model sees the output.
/// - on `PostToolUseFailure` Claude Code honours no replacement and no stop:
///   a deny or replace becomes `decision: block` with the reason (the model
///   is told the output must be disregarded) and the context; the output
///   itself cannot be withheld.
pub fn render_outcome(outcome: &Outcome, dialect: Dialect, hook_event_name: &str) -> Option<Value> {
    let failure_event = hook_event_name == "PostToolUseFailure";
    let event = if failure_event {
        "PostToolUseFailure"
    } else {
        event_name(outcome.event)
    };
    let mut specific = Map::new();
    specific.insert("hookEventName".into(), json!(event));
    if let Some(context) = &outcome.context {
        specific.insert("additionalContext".into(), json!(context));
    }
    let mut top = Map::new();
    let original = outcome.tool_result.as_ref().map(|r| &r.output);
    let withheld = |reason: &str| format!("toolgate withheld the output of this call: {reason}");
    match (outcome.event, &outcome.verdict) {
        (Event::PreToolUse, Verdict::Allow) => {}
        (Event::PreToolUse, Verdict::Deny { reason }) => {
            specific.insert("permissionDecision".into(), json!("deny"));
            specific.insert("permissionDecisionReason".into(), json!(reason));
        }
        (Event::PreToolUse, Verdict::Modify { input }) => {
            if dialect == Dialect::Codex {
                specific.insert("permissionDecision".into(), json!("allow"));
            }
            specific.insert("updatedInput".into(), input.clone());
        }
        (Event::PreToolUse, Verdict::Replace { result }) => {
            specific.insert("permissionDecision".into(), json!("deny"));
            specific.insert(
                "permissionDecisionReason".into(),
                json!(format!(
                    "toolgate answered for the tool instead of running it: {}",
                    output_text(&result.output)
                )),
            );
        }
        (Event::PostToolUse, Verdict::Allow | Verdict::Modify { .. }) => {}
        (Event::PostToolUse, Verdict::Deny { reason }) if failure_event => {
            top.insert("decision".into(), json!("block"));
            top.insert("reason".into(), json!(withheld(reason)));
        }
        (Event::PostToolUse, Verdict::Replace { result }) if failure_event => {
            top.insert("decision".into(), json!("block"));
            top.insert(
                "reason".into(),
                json!(format!(
                    "toolgate replaced the output of this call; disregard it and use this instead: {}",
                    output_text(&result.output)
                )),
            );
        }
        (Event::PostToolUse, Verdict::Deny { reason }) => match dialect {
            Dialect::ClaudeCode => {
                match original.and_then(|o| withheld_in_shape(o, &withheld(reason))) {
                    Some(shaped) => {
                        specific.insert("updatedToolOutput".into(), shaped);
                    }
                    None => stop(&mut top, &withheld(reason)),
                }
            }
            Dialect::Codex => {
                top.insert("decision".into(), json!("block"));
                top.insert("reason".into(), json!(reason));
            }
        },
        (Event::PostToolUse, Verdict::Replace { result }) => match dialect {
            Dialect::ClaudeCode => match in_shape(original, &result.output) {
                Some(shaped) => {
                    specific.insert("updatedToolOutput".into(), shaped);
                }
                None => stop(
                    &mut top,
                    "toolgate replaced the output of this call but cannot express the \
                     replacement in this tool's output shape, so the output is withheld",
                ),
            },
            // Codex's strict schema has no output replacement: block with
            // the replacement as the reason, so the model sees only it.
            Dialect::Codex => {
                top.insert("decision".into(), json!("block"));
                top.insert(
                    "reason".into(),
                    json!(format!(
                        "toolgate replaced this tool's output: {}",
                        output_text(&result.output)
                    )),
                );
            }
        },
    }
    if specific.len() > 1 {
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

/// Fails closed after the call where no replacement can be expressed: the
/// agent stops before the model sees the output.
fn stop(top: &mut Map<String, Value>, reason: &str) {
    top.insert("continue".into(), json!(false));
    top.insert("stopReason".into(), json!(reason));
}

/// Fields that carry a tool's text output, in the order they are looked for.
const TEXT_FIELDS: [&str; 5] = ["stdout", "content", "output", "result", "text"];

/// `replacement` in the shape of `original` (the agent's `tool_response`): a
/// string for a string-shaped tool, the text field filled (and Bash's
/// `stderr` emptied) for an object-shaped one, an object replacement passed
/// as the hook wrote it. `None` when no shape can be derived.
fn in_shape(original: Option<&Value>, replacement: &Value) -> Option<Value> {
    let Value::String(text) = replacement else {
        // The hook gave a structured replacement: it chose the shape.
        return Some(replacement.clone());
    };
    match original {
        None | Some(Value::Null | Value::String(_)) => Some(replacement.clone()),
        Some(Value::Object(fields)) => {
            let field = TEXT_FIELDS
                .iter()
                .find(|f| fields.get(**f).is_some_and(Value::is_string))?;
            let mut shaped = fields.clone();
            shaped.insert((*field).to_owned(), json!(text));
            if shaped.contains_key("stderr") {
                shaped.insert("stderr".into(), json!(""));
            }
            if shaped.contains_key("interrupted") {
                shaped.insert("interrupted".into(), json!(false));
            }
            Some(Value::Object(shaped))
        }
        Some(_) => None,
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

/// A Claude Code matcher, translated to toolgate's tool filter.
#[derive(Debug, PartialEq, Eq)]
pub enum Matcher {
    /// `""` or `"*"`: every tool.
    All,
    /// Letters, digits, `_` and `|` only: exact names (Claude Code 2.1.197
    /// matches `Foo|Bas` against `Bash` as a list of names, not a regex).
    Tools(Vec<String>),
    /// Anything else is a regex Claude Code *searches* for in the name
    /// (`^mcp__` covers every MCP tool; `a.h` matches `Bash`). toolgate's
    /// matcher is anchored to the whole name, so the pattern is wrapped in
    /// `.*(?:…).*`: the same set of tools.
    Regex(String),
    /// A regex toolgate's engine cannot compile (JavaScript's lookarounds,
    /// backreferences), with why.
    Unsupported(String),
}

/// Translates a Claude Code matcher to the same set of tools in toolgate's
/// terms. Pinned by a table-driven test of matcher forms; the rules are what
/// the real Claude Code CLI was seen to do.
pub fn translate_matcher(matcher: &str) -> Matcher {
    match matcher {
        "" | "*" => Matcher::All,
        m if m
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|') =>
        {
            Matcher::Tools(
                m.split('|')
                    .filter(|n| !n.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )
        }
        m => {
            let pattern = format!(".*(?:{m}).*");
            // Compiled on its own first: a pattern that is not a regex by
            // itself must not be rescued by the wrapping.
            match crate::config::whole_name_matcher(m)
                .and_then(|_| crate::config::whole_name_matcher(&pattern))
            {
                Ok(_) => Matcher::Regex(pattern),
                Err(e) => Matcher::Unsupported(format!(
                    "not a regex toolgate can compile: {}",
                    crate::text::one_line(&e)
                )),
            }
        }
    }
}

/// What importing Claude Code settings produced.
#[derive(Debug, Default, serde::Serialize)]
pub struct Imported {
    /// The equivalent hooks.json (`{"schema": 1, "hooks": [...]}`).
    pub hooks_json: Value,
    /// Things carried over with a change the operator should know about.
    pub warnings: Vec<String>,
    /// Things that could not be carried over, each named: never a silent drop.
    pub not_carried: Vec<String>,
}

/// Translates the `hooks` of a Claude Code settings file into hooks.json.
///
/// - `PreToolUse` / `PostToolUse` command hooks become subprocess hooks with
///   `"protocol": "claude-code"`, so the scripts run unmodified;
/// - matchers are translated to the same set of tools ([`translate_matcher`]):
///   empty or `*` is every tool, a name or `|`-list of names is `tools`, a
///   regex (which Claude Code searches for anywhere in the name) becomes
///   `.*(?:regex).*` with a warning saying so;
/// - a shell-string `command` becomes `["sh", "-c", …]` (a warning says so),
///   while the exec form (`command` + `args`) is kept as an argv;
/// - `timeout` (seconds; Claude Code's default 60) becomes `timeout_ms`;
/// - http / prompt / agent handlers, `if` rules, `async` hooks and events
///   toolgate does not have are listed in `not_carried`.
pub fn import_settings(settings: &Value) -> Imported {
    let mut out = Imported::default();
    let mut hooks = Vec::new();
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        out.not_carried
            .push("the settings have no `hooks` object: nothing to import".into());
        out.hooks_json = json!({"schema": 1, "hooks": []});
        return out;
    };
    for (event_name, groups) in events {
        let event = match event_name.as_str() {
            "PreToolUse" => "pre_tool_use",
            "PostToolUse" => "post_tool_use",
            other => {
                let n = groups.as_array().map_or(0, Vec::len);
                out.not_carried.push(format!(
                    "{other}: {n} matcher group(s) — toolgate has no {other} event"
                ));
                continue;
            }
        };
        for (g, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            for (h, handler) in group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("{event_name}[{g}].hooks[{h}]");
                let kind = handler
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("command");
                if kind != "command" {
                    out.not_carried.push(format!(
                        "{at}: a `{kind}` handler — toolgate runs commands only"
                    ));
                    continue;
                }
                if let Some(rule) = handler.get("if") {
                    out.not_carried.push(format!(
                        "{at}: an `if` rule ({rule}) — not imported, the hook is left out"
                    ));
                    continue;
                }
                if handler.get("async") == Some(&Value::Bool(true)) {
                    out.not_carried.push(format!(
                        "{at}: an `async` hook — it cannot decide anything, so it is left out"
                    ));
                    continue;
                }
                let Some(command) = handler.get("command").and_then(Value::as_str) else {
                    out.not_carried.push(format!("{at}: no `command`"));
                    continue;
                };
                let argv: Vec<String> = match handler.get("args").and_then(Value::as_array) {
                    Some(args) => std::iter::once(command.to_owned())
                        .chain(args.iter().map(|a| match a {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        }))
                        .collect(),
                    None => {
                        out.warnings.push(format!(
                            "{at}: the shell string {command:?} now runs as [\"sh\", \"-c\", …]; \
                             write it as an argv if it needs no shell"
                        ));
                        vec!["sh".into(), "-c".into(), command.to_owned()]
                    }
                };
                let timeout_ms = match handler.get("timeout").and_then(Value::as_f64) {
                    Some(secs) => {
                        let ms = (secs * 1000.0).round().clamp(1.0, 600_000.0) as u64;
                        if (secs * 1000.0).round() as u64 != ms {
                            out.warnings
                                .push(format!("{at}: timeout {secs} s clamped to {ms} ms"));
                        }
                        ms
                    }
                    None => 60_000,
                };
                let base = argv
                    .iter()
                    .rev()
                    .find_map(|a| {
                        let last = a.split_whitespace().last()?;
                        let name = last.rsplit('/').next()?;
                        (!name.is_empty()).then(|| name.trim_matches('"').to_owned())
                    })
                    .unwrap_or_else(|| "hook".into());
                let mut hook = json!({
                    "name": format!("{}-{}-{}-{}", event.trim_end_matches("_tool_use"), g, h, base),
                    "command": argv,
                    "protocol": "claude-code",
                    "event": event,
                    "timeout_ms": timeout_ms,
                });
                match translate_matcher(matcher) {
                    Matcher::All => {}
                    Matcher::Tools(names) => hook["tools"] = json!(names),
                    Matcher::Regex(pattern) => {
                        out.warnings.push(format!(
                            "{at}: the matcher {matcher:?} is a regex, which Claude Code looks \
                             for anywhere in the tool name; toolgate matches whole names, so it \
                             became {pattern:?} (the same set of tools)"
                        ));
                        hook["matcher"] = json!(pattern);
                    }
                    Matcher::Unsupported(why) => {
                        out.not_carried.push(format!(
                            "{at}: the matcher {matcher:?} — {why}; the hook is left out"
                        ));
                        continue;
                    }
                }
                hooks.push(hook);
            }
        }
    }
    if !hooks.is_empty() {
        out.warnings.push(
            "a hook that exits with a code other than 0 or 2 is a non-blocking error in \
             Claude Code but a failure in toolgate, which blocks the call (on_failure: deny); \
             add \"on_failure\": \"allow\" to a hook that should fail open"
                .into(),
        );
    }
    out.hooks_json = json!({"schema": 1, "hooks": hooks});
    out
}
