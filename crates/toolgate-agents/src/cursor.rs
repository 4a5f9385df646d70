//! Cursor's hook protocol: `.cursor/hooks.json` (`{"version": 1, "hooks":
//! {"preToolUse": [{"command": …, "failClosed": true}]}}`), flat snake_case
//! answers.
//!
//! # Why it is written from the documentation
//!
//! Cursor's CLI is on none of the registries toolgate's tests can reach, so
//! this dialect follows Cursor's hooks reference (cursor.com/docs/hooks) and
//! is tested against that schema, not a live run. What each answer becomes,
//! and why:
//!
//! - every answer is printed, `{"permission": "allow"}` included: with
//!   `failClosed` (which `toolgate install cursor` writes) a hook that prints
//!   nothing was reported to block the call;
//! - a deny is `permission: "deny"` with the reason in both `user_message`
//!   and `agent_message` (the documentation sends the second to the model; a
//!   reported run saw the model read the first);
//! - `modify` is `updated_input` beside `permission: "allow"`, the only form
//!   the reference shows;
//! - a pre `replace` cannot be expressed: a denial whose reason carries the
//!   replacement;
//! - after a call only an MCP tool's output can be replaced
//!   (`updated_mcp_tool_output`); for any other tool a post `deny` or
//!   `replace` can only be `additional_context` telling the model to
//!   disregard the output — which it has still been shown. The README says
//!   so; `beforeReadFile` is where a read can be refused;
//! - context before a call has no field (`preToolUse` takes none); it is
//!   dropped, except beside a deny, where it joins the reason.
//!
//! Cursor lets a call through when its hook fails (exits other than 0 or 2,
//! times out, prints invalid JSON) unless the handler says `failClosed:
//! true`; toolgate's own failure is a denial printed with exit 0.

use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, Import, Install, Layout, McpConfig,
    McpShape, ReadAgentInputError, Role, Unjudged, UserDir, answered_for_the_tool, classify,
    needs_a_person, output_text, string_field, withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::import::Imported;
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Cursor.
pub(super) struct Cursor;

const PRE: &str = "preToolUse";
const POST: &str = "postToolUse";
const FAILURE: &str = "postToolUseFailure";

/// The timeout toolgate writes (seconds): Cursor's default is "platform
/// default", not a number, so toolgate says one and answers inside it.
const TIMEOUT_SECS: u64 = 30;

/// Cursor's hook events (its hooks reference), and what each is to
/// toolgate. A name outside this set is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
#[strum(serialize_all = "camelCase")]
enum CursorEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    BeforeShellExecution,
    AfterShellExecution,
    #[strum(serialize = "beforeMCPExecution")]
    BeforeMcpExecution,
    #[strum(serialize = "afterMCPExecution")]
    AfterMcpExecution,
    BeforeReadFile,
    AfterFileEdit,
    BeforeTabFileRead,
    AfterTabFileEdit,
    SessionStart,
    SessionEnd,
    SubagentStart,
    SubagentStop,
    BeforeSubmitPrompt,
    PreCompact,
    Stop,
    AfterAgentResponse,
    AfterAgentThought,
}

impl AgentEvent for CursorEvent {
    fn role(self) -> Role {
        use CursorEvent as E;
        match self {
            E::PreToolUse => Role::Judged(Call::Before),
            E::PostToolUse => Role::Judged(Call::After),
            E::PostToolUseFailure => Role::Judged(Call::AfterFailure),
            // Cursor's older per-kind events each carry a call (a command, an
            // MCP call, a file read or edit) in a shape of its own, which
            // toolgate does not judge: `preToolUse` covers them.
            E::BeforeShellExecution
            | E::AfterShellExecution
            | E::BeforeMcpExecution
            | E::AfterMcpExecution
            | E::BeforeReadFile
            | E::AfterFileEdit
            | E::BeforeTabFileRead
            | E::AfterTabFileEdit => Role::ToolCallNotJudged,
            E::SessionStart
            | E::SessionEnd
            | E::SubagentStart
            | E::SubagentStop
            | E::BeforeSubmitPrompt
            | E::PreCompact
            | E::Stop
            | E::AfterAgentResponse
            | E::AfterAgentThought => Role::NoToolCall,
        }
    }
}

impl Dialect for Cursor {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        let name = string_field(input, "hook_event_name")
            .ok_or(ReadAgentInputError::Missing("hook_event_name"))?;
        // `cwd` may be empty; the first workspace root is the project.
        let cwd = string_field(input, "cwd")
            .filter(|c| !c.is_empty())
            .or_else(|| {
                input
                    .get("workspace_roots")
                    .and_then(Value::as_array)
                    .and_then(|roots| roots.first())
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
        let call = match classify::<CursorEvent>(&name) {
            Ok(call) => call,
            Err(Unjudged::NothingToSay) => {
                return Ok(AgentCall {
                    hook_event_name: name,
                    request: None,
                    cwd,
                    timeout: None,
                });
            }
            Err(Unjudged::Refused(refused)) => return Err(refused),
        };
        let event = call.event();
        let tool =
            string_field(input, "tool_name").ok_or(ReadAgentInputError::Missing("tool_name"))?;
        let tool_input = match input.get("tool_input") {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            // MCP hooks give it as a JSON string.
            Some(Value::String(text)) => {
                serde_json::from_str(text).map_err(|_| ReadAgentInputError::Invalid {
                    field: "tool_input",
                    expected: "a JSON object",
                })?
            }
            Some(Value::Null) | None => return Err(ReadAgentInputError::Missing("tool_input")),
            Some(_) => {
                return Err(ReadAgentInputError::Invalid {
                    field: "tool_input",
                    expected: "a JSON object",
                });
            }
        };
        let result = match call {
            Call::Before => None,
            // `tool_output` is the tool's result as a JSON string.
            Call::After => Some(ToolResult::ok(match input.get("tool_output") {
                Some(Value::String(text)) => {
                    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
                }
                Some(other) => other.clone(),
                None => Value::Null,
            })),
            Call::AfterFailure => Some(ToolResult::error(
                input.get("error_message").cloned().unwrap_or(Value::Null),
            )),
        };
        Ok(AgentCall {
            hook_event_name: name,
            request: Some(Request {
                event,
                tool,
                input: tool_input,
                result,
                session_id: string_field(input, "conversation_id"),
                turn_id: string_field(input, "generation_id"),
                tool_call_id: string_field(input, "tool_use_id"),
                cwd: cwd.clone(),
            }),
            cwd,
            timeout: None,
        })
    }

    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value> {
        let decision = &outcome.decision;
        let context = outcome.context.as_deref();
        Some(match (outcome.event, hook_event_name) {
            (Event::PreToolUse | Event::ListTools, _) => match decision {
                Decision::Allow => json!({"permission": "allow"}),
                Decision::Deny { reason } => refusal(&with_context(reason, context)),
                Decision::Modify { input } => {
                    json!({"permission": "allow", "updated_input": input})
                }
                Decision::Replace { result } => refusal(&with_context(
                    &answered_for_the_tool(&result.output),
                    context,
                )),
                // Cursor documents `"permission": "ask"`, but no release
                // was tested here: a refusal until one is.
                Decision::Ask { reason, .. } => {
                    refusal(&with_context(&needs_a_person(reason), context))
                }
            },
            // Cursor reads no answer after a failed call.
            (Event::PostToolUse, FAILURE) => json!({}),
            (Event::PostToolUse, _) => post(decision, context),
        })
    }

    fn blocked(&self, reason: &str) -> Blocked {
        Blocked {
            stdout: Some(refusal(reason)),
            stderr: reason.to_owned(),
            exit: 0,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Cursor hook: read its stdin, run the chain, answer in its format \
                    (written from Cursor's documentation; not verified live)",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        Some("CURSOR_PROJECT_DIR")
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(TIMEOUT_SECS)
    }

    fn install(&self) -> Install {
        Install {
            // None toolgate knows of.
            switches: &[],
            user_file: ".cursor/hooks.json",
            user_dir: UserDir::Home,
            project_file: ".cursor/hooks.json",
            events: &[PRE, POST],
            layout: Layout::Flat { handler },
            timeout: Some(TIMEOUT_SECS),
            // Cursor's CLI cannot be installed here: no release was tested.
            agent_cli: "cursor-agent",
            tested_versions: &[],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".cursor/mcp.json",
                user_dir: UserDir::Home,
                shadowed_by: &[],
                project_file: Some(".cursor/mcp.json"),
                shape: McpShape::McpServers,
                per_project: false,
            },
            trust: None,
        }
    }

    fn import(&self) -> Import {
        Import::Settings(import_settings)
    }
}

/// A refusal before the call: the reason for the person and the model.
fn refusal(reason: &str) -> Value {
    json!({"permission": "deny", "user_message": reason, "agent_message": reason})
}

/// A reason with the chain's context after it.
fn with_context(reason: &str, context: Option<&str>) -> String {
    match context {
        Some(c) => format!("{reason}\n{c}"),
        None => reason.to_owned(),
    }
}

/// The answer after a successful call.
fn post(decision: &Decision, context: Option<&str>) -> Value {
    let said = match decision {
        // Never after the call (the chain makes it a failure).
        Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => None,
        Decision::Deny { reason } => Some((
            json!(withheld(reason)),
            format!("{}; disregard the output shown for it", withheld(reason)),
        )),
        Decision::Replace { result } => Some((
            result.output.clone(),
            format!(
                "toolgate replaced the output of this call; disregard it and use this instead: {}",
                output_text(&result.output)
            ),
        )),
    };
    let mut answer = Map::new();
    let mut lines: Vec<String> = Vec::new();
    if let Some((replacement, note)) = said {
        // Honoured for MCP tools only; other tools keep their output, so the
        // model is also told.
        answer.insert(
            "updated_mcp_tool_output".into(),
            match replacement {
                Value::Object(o) => Value::Object(o),
                other => json!({"content": [{"type": "text", "text": output_text(&other)}]}),
            },
        );
        lines.push(note);
    }
    if let Some(c) = context {
        lines.push(c.to_owned());
    }
    if !lines.is_empty() {
        answer.insert("additional_context".into(), json!(lines.join("\n")));
    }
    Value::Object(answer)
}

/// The handler toolgate writes into Cursor's hooks.json for `argv`: a shell
/// string (Cursor documents no exec form), failing closed.
fn handler(argv: &[String]) -> Value {
    json!({
        "command": super::shell_words(argv),
        "failClosed": true,
        "timeout": TIMEOUT_SECS,
    })
}

/// `toolgate cursor --help`.
const HELP: &str = r#"Install it by absolute path, failing closed, in ~/.cursor/hooks.json or a
project's .cursor/hooks.json (project hooks run only in a trusted
workspace):

{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {
        "command": "/usr/local/bin/toolgate cursor",
        "failClosed": true,
        "timeout": 30
      }
    ]
  }
}

and the same entry under "postToolUse". Without "failClosed": true a
missing, crashing or hanging toolgate lets the call through. Only documented
event names: Cursor was reported to ignore the whole file over one unknown
name. Written from Cursor's hooks reference, not verified against a live
Cursor; the book's "Cursor" section lists what each answer becomes."#;

/// Imports Cursor's hooks.json.
///
/// Cursor hands a hook its own envelope (`tool_name`, `tool_input`; answers
/// `permission`, `updated_input`), which toolgate does not speak to a hook,
/// so nothing can be run unmodified: each hook is listed, with what it
/// was, as not carried over.
pub(crate) fn import_settings(settings: &Value) -> Imported {
    let mut out = Imported {
        hooks_json: json!({"schema": 1, "hooks": []}),
        ..Imported::default()
    };
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        out.not_carried
            .push("the file has no `hooks` object: nothing to import".into());
        return out;
    };
    for (event, entries) in events {
        for (i, entry) in entries.as_array().into_iter().flatten().enumerate() {
            let command = entry.get("command").and_then(Value::as_str).unwrap_or("?");
            let matcher = entry
                .get("matcher")
                .and_then(Value::as_str)
                .map(|m| format!(", matcher {m:?}"))
                .unwrap_or_default();
            out.not_carried.push(format!(
                "{event}[{i}]: {command:?}{matcher} — it speaks Cursor's hook envelope, which \
                 toolgate does not speak to a hook; install `toolgate cursor` as Cursor's hook \
                 and rewrite it as a toolgate hook"
            ));
        }
    }
    out.warnings
        .push("Cursor runs a project's .cursor/hooks.json only in a trusted workspace".into());
    out
}
