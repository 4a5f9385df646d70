//! OpenCode: its hooks are in-process JS plugins, not commands, so toolgate
//! ships one (`integrations/opencode/toolgate.js`) that hands each call to
//! `toolgate opencode` and applies the answer. This file is that exchange.
//!
//! # Why the plugin only relays
//!
//! OpenCode (1.18.33, observed live) forgives a plugin everything: a file
//! that does not load is skipped (a syntax error without a word), and a hook
//! that never settles hangs it forever. The less the plugin decides, the
//! less can go wrong there; so every message the model reads and every
//! mapping onto OpenCode's objects is made here, where it is tested, and the
//! plugin throws on anything but one well-formed answer with exit 0.
//!
//! # The exchange
//!
//! The plugin writes one JSON object on stdin:
//!
//! ```text
//! {"event": "tool.execute.before" | "tool.execute.after",
//!  "tool": "bash", "sessionID": "ses_…", "callID": "call_…",
//!  "args": {…the tool's arguments…},
//!  "output": {…after only: OpenCode's result object, as the hook got it…},
//!  "directory": "/the/project", "timeout_ms": 60000}
//! ```
//!
//! and reads one on stdout:
//!
//! ```text
//! {"action": "allow"}                          let it be
//! {"action": "deny", "message": "…"}           throw `message` (before: the tool does not
//!                                              run; after: the model reads it instead)
//! {"action": "modify", "args": {…}}            before: rewrite the arguments in place
//! {"action": "replace", "output": "…"}         after: the model reads this instead
//! + "context": "…" beside allow, modify and replace: appended to what the model reads
//! ```
//!
//! Exit 0 carries the answer; toolgate's own failure is exit 2 with a deny
//! whose message says why (and the same on stderr). `timeout_ms` is the
//! plugin's deadline: toolgate answers "blocked" before it.
//!
//! # What each answer becomes (each pinned live in `tests/all/live/opencode.rs`)
//!
//! - `allow`: nothing; OpenCode's own `permission` rules still apply.
//! - `deny` before the call: the plugin throws, the tool does not run, and the
//!   model reads the reason as the tool's result.
//! - `modify`: the arguments are rewritten in place, and OpenCode's
//!   `permission` rules judge the rewrite (its tools ask after the hook).
//! - a pre `replace` (answering for the tool) has no equivalent: a denial
//!   whose message carries the replacement.
//! - a post `replace`: `output.output` (an MCP tool's `content`) is the
//!   replacement's text.
//! - a post `deny`: the plugin throws after the call; the model reads only
//!   the message, never the output.
//! - `context`: OpenCode has no channel for it but the result, so it is
//!   appended to what the model reads (before the call: with its result, or
//!   with the denial).
//! - a tool that failed (a missing file): OpenCode calls no hook after it,
//!   so no post hook sees it. A command that exits non-zero is a success to
//!   OpenCode; it goes through the post chain with `is_error: true` (from
//!   the exit code OpenCode keeps in `metadata.exit` — the model is not
//!   shown it).

use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, Import, Install, Layout, McpConfig,
    McpShape, ReadAgentInputError, Role, Unjudged, UserDir, answered_for_the_tool, classify,
    needs_a_person, output_text, string_field, withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// OpenCode.
pub(super) struct OpenCode;

/// OpenCode's event before a tool runs.
const BEFORE: &str = "tool.execute.before";
/// OpenCode's event after a tool returned (successfully: it calls no hook
/// after a tool that threw).
const AFTER: &str = "tool.execute.after";

/// The plugin, as shipped; `toolgate install opencode` writes it with the
/// binary's path ([`plugin_source`]).
pub(super) const PLUGIN: &str = include_str!("../../../integrations/opencode/toolgate.js");

/// The line of [`PLUGIN`] that names the binary.
const BINARY_LINE: &str = "const TOOLGATE = \"toolgate\"; // toolgate-binary";

/// The events toolgate's OpenCode plugin sends: the two tool hooks, nothing
/// else.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
enum OpenCodeEvent {
    #[strum(serialize = "tool.execute.before")]
    Before,
    #[strum(serialize = "tool.execute.after")]
    After,
}

impl AgentEvent for OpenCodeEvent {
    fn role(self) -> Role {
        match self {
            OpenCodeEvent::Before => Role::Judged(Call::Before),
            OpenCodeEvent::After => Role::Judged(Call::After),
        }
    }
}

impl Dialect for OpenCode {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        let s = |k: &str| string_field(input, k);
        let name = s("event").ok_or(ReadAgentInputError::Missing("event"))?;
        let cwd = s("directory");
        let timeout = match input.get("timeout_ms") {
            None | Some(Value::Null) => None,
            Some(ms) => Some(Duration::from_millis(ms.as_u64().ok_or(
                ReadAgentInputError::Invalid {
                    field: "timeout_ms",
                    expected: "a number of milliseconds",
                },
            )?)),
        };
        // Closed world: the plugin is ours and sends only these two. Any
        // other event means a plugin and a binary that disagree; "nothing to
        // say" would let whatever it guards through, so it is refused.
        let event = match classify::<OpenCodeEvent>(&name) {
            Ok(call) => call.event(),
            Err(Unjudged::Refused(refused)) => return Err(refused),
            // No event of the plugin's is silent; were one, it would still
            // not pass unjudged.
            Err(Unjudged::NothingToSay) => {
                return Err(ReadAgentInputError::UnjudgedToolEvent(name));
            }
        };
        let tool = s("tool").ok_or(ReadAgentInputError::Missing("tool"))?;
        let args = input
            .get("args")
            .cloned()
            .ok_or(ReadAgentInputError::Missing("args"))?;
        let result = match event {
            Event::PreToolUse | Event::ListTools => None,
            Event::PostToolUse => Some(result_of(
                input
                    .get("output")
                    .ok_or(ReadAgentInputError::Missing("output"))?,
            )?),
        };
        Ok(AgentCall {
            hook_event_name: name,
            request: Some(Request {
                event,
                tool,
                input: args,
                result,
                session_id: s("sessionID"),
                turn_id: None,
                tool_call_id: s("callID"),
                cwd: cwd.clone(),
            }),
            cwd,
            timeout,
        })
    }

    fn render(&self, outcome: &Outcome, _hook_event_name: &str) -> Option<Value> {
        let context = outcome.context.as_deref();
        let answer = match (outcome.event, &outcome.decision) {
            // Neither rewrite nor ask comes after the call (the chain
            // makes them failures).
            (_, Decision::Allow)
            | (Event::PostToolUse, Decision::Modify { .. } | Decision::Ask { .. }) => {
                with_context(json!({"action": "allow"}), context)
            }
            (Event::PreToolUse | Event::ListTools, Decision::Deny { reason }) => {
                deny(reason, context)
            }
            (Event::PreToolUse | Event::ListTools, Decision::Modify { input })
                if input.is_object() =>
            {
                with_context(json!({"action": "modify", "args": input}), context)
            }
            // The plugin can only hand OpenCode an object of arguments.
            (Event::PreToolUse | Event::ListTools, Decision::Modify { .. }) => deny(
                "toolgate rewrote this call's arguments into something that is not an object \
                 of arguments, which OpenCode cannot run, so the call is blocked",
                context,
            ),
            (Event::PreToolUse | Event::ListTools, Decision::Replace { result }) => {
                deny(&answered_for_the_tool(&result.output), context)
            }
            // The plugin has no confirmation to hand the call to.
            (Event::PreToolUse | Event::ListTools, Decision::Ask { reason, .. }) => {
                deny(&needs_a_person(reason), context)
            }
            (Event::PostToolUse, Decision::Deny { reason }) => deny(&withheld(reason), context),
            (Event::PostToolUse, Decision::Replace { result }) => with_context(
                json!({"action": "replace", "output": output_text(&result.output)}),
                context,
            ),
        };
        Some(answer)
    }

    fn blocked(&self, reason: &str) -> Blocked {
        Blocked {
            stdout: Some(json!({"action": "deny", "message": reason})),
            stderr: reason.to_owned(),
            exit: 2,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be OpenCode's hook (through toolgate's plugin): read a call, run the chain, \
                    answer the plugin",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        // OpenCode sets none; the plugin sends the project's directory, and
        // toolgate walks up from it to the `.toolgate/`.
        None
    }

    fn default_hook_timeout(&self) -> Duration {
        // OpenCode waits for a hook forever; the plugin blocks the call past
        // its own deadline (DEADLINE_MS in the plugin, 60 s), which it also
        // sends as `timeout_ms`.
        Duration::from_secs(60)
    }

    fn install(&self) -> Install {
        Install {
            // None toolgate knows of.
            switches: &[],
            user_file: ".config/opencode/plugin/toolgate.js",
            user_dir: UserDir::Var {
                var: "XDG_CONFIG_HOME",
                dir: ".config",
            },
            project_file: ".opencode/plugin/toolgate.js",
            events: &[BEFORE, AFTER],
            layout: Layout::Plugin {
                source: plugin_source,
            },
            timeout: None,
            agent_cli: "opencode",
            tested_versions: &["1.18.33"],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".config/opencode/opencode.json",
                user_dir: UserDir::Var {
                    var: "XDG_CONFIG_HOME",
                    dir: ".config",
                },
                shadowed_by: &[],
                project_file: Some("opencode.json"),
                shape: McpShape::CommandArray,
                per_project: false,
            },
            trust: None,
        }
    }

    fn import(&self) -> Import {
        Import::Unsupported(
            "OpenCode's hooks are JS plugins (code, not settings): there is nothing to import; \
             port a plugin's checks to a toolgate hook by hand",
        )
    }
}

/// What the model reads for a refusal, with the context after it.
fn deny(reason: &str, context: Option<&str>) -> Value {
    let message = match context {
        Some(context) => format!("{reason}\n\n{context}"),
        None => reason.to_owned(),
    };
    json!({"action": "deny", "message": message})
}

fn with_context(mut answer: Value, context: Option<&str>) -> Value {
    if let (Some(context), Value::Object(fields)) = (context, &mut answer) {
        fields.insert("context".into(), json!(context));
    }
    answer
}

/// The result the post chain sees, from OpenCode's result object: a built-in
/// tool's text (`output`; a command's exit code in `metadata.exit`), or an
/// MCP tool's text parts (`content`, `isError`).
fn result_of(output: &Value) -> Result<ToolResult, ReadAgentInputError> {
    let invalid = || ReadAgentInputError::Invalid {
        field: "output",
        expected: "OpenCode's tool result (an object with `output` or MCP `content`)",
    };
    let fields = output.as_object().ok_or_else(invalid)?;
    if let Some(text) = fields.get("output").and_then(Value::as_str) {
        let failed = fields
            .get("metadata")
            .and_then(|m| m.get("exit"))
            .and_then(Value::as_i64)
            .is_some_and(|code| code != 0);
        return Ok(ToolResult {
            output: json!(text),
            is_error: failed,
        });
    }
    if let Some(parts) = fields.get("content").and_then(Value::as_array) {
        let text = parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        return Ok(ToolResult {
            output: json!(text),
            is_error: fields.get("isError") == Some(&Value::Bool(true)),
        });
    }
    Err(invalid())
}

/// The plugin file `toolgate install opencode` writes: [`PLUGIN`] naming the
/// binary of `argv` (`[binary, "opencode"]`).
fn plugin_source(argv: &[String]) -> String {
    let binary = argv.first().map_or("toolgate", String::as_str);
    PLUGIN.replacen(
        BINARY_LINE,
        &format!("const TOOLGATE = {}; // toolgate-binary", json!(binary)),
        1,
    )
}

/// `toolgate opencode --help`.
const HELP: &str = r#"OpenCode runs JS plugins, not hook commands: toolgate's plugin
(integrations/opencode/toolgate.js in toolgate's repository) hands every
tool call to `toolgate opencode` and applies the answer. Put it, with
this binary's absolute path on its `const TOOLGATE` line:
  /usr/local/bin/toolgate
in ~/.config/opencode/plugin/toolgate.js (or a project's
.opencode/plugin/toolgate.js). It blocks a call whenever toolgate cannot
answer (missing, crashing, no answer within 60 s).

OpenCode runs every call unguarded when a plugin does not load (a syntax
error is skipped without a word, and --pure loads none). To refuse calls
then, add to the permissions in opencode.json, last:

  "permission": {
    "*": {"*": "deny", "toolgate plugin not loaded": "deny"}
  }

The plugin lifts exactly this rule once it has loaded and toolgate answers.
The book's "OpenCode" section lists what each answer becomes.

Example:
  echo '{"event":"tool.execute.before","tool":"bash","args":{"command":"ls"}}' \
    | toolgate opencode"#;
