//! Gemini CLI's hook protocol (`BeforeTool` / `AfterTool` in
//! `settings.json`), as Gemini CLI 0.61.0 was seen to honour it live
//! (tests/all/live/gemini.rs).
//!
//! # Why it is its own dialect
//!
//! Gemini CLI took Claude Code's envelope (`tool_name`, `tool_input`,
//! `hookSpecificOutput`) but not its answers: it ignores
//! `permissionDecision` (a Claude Code deny lets the call run), reads a
//! top-level `decision: "deny"` with `reason`, rewrites with
//! `hookSpecificOutput.tool_input` (the *whole* input: a partial one fails
//! its validation), and has no output replacement. So every answer is
//! chosen here:
//!
//! - **deny** (before): `decision: deny`; the model reads
//!   `Tool execution blocked: <reason>` and the tool does not run.
//! - **modify**: `tool_input` with the complete input. Gemini CLI checks its
//!   own policy *after* the hook, on the rewritten input, so the rewrite
//!   gains no permission it would not have had.
//! - **replace** (before): cannot be expressed (Gemini CLI has no answer
//!   that stands in for a tool); a denial whose reason carries the
//!   replacement.
//! - **deny** / **replace** (after): `decision: deny`, which Gemini CLI
//!   shows the model *instead of* the output, as the call's error.
//! - **context**: after the call `additionalContext`, appended to the
//!   output. Before the call Gemini CLI 0.61.0 ignores it (seen live); it is
//!   still sent, so a release that honours it shows it.
//! - never `ask`: headless Gemini CLI waits for a confirmation nobody can
//!   give (seen live: it hung until killed).
//!
//! # Failing closed where Gemini CLI lets it
//!
//! Gemini CLI has no fail-closed switch. It parses a hook's stdout (or, if
//! that is empty, its stderr) as JSON whatever the exit code; text that is
//! not JSON allows the call on exit 0 and 1 and denies it on any other code;
//! a hook that prints nothing, is killed by a signal or outlives its
//! `timeout` (60 000 ms by default) lets the call through. So toolgate's own
//! failure is a JSON denial on stdout *and* the reason on stderr with exit
//! 2 ([`Gemini::blocked`]): it blocks whichever Gemini CLI reads. A missing
//! toolgate blocks too (bash's "No such file or directory" on stderr, exit
//! 127); a toolgate killed by a signal or hung past the timeout cannot, which
//! is why the deadline answers well inside Gemini CLI's timeout.

use super::{
    AgentCall, Blocked, Dialect, Help, Import, Install, Layout, ReadAgentInputError, TrustCheck,
    TrustStep, answered_for_the_tool, output_text, string_field, withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Gemini CLI.
pub(super) struct Gemini;

impl Dialect for Gemini {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        read(input)
    }

    fn render(&self, outcome: &Outcome, _hook_event_name: &str) -> Option<Value> {
        render(outcome)
    }

    fn blocked(&self, reason: &str) -> Blocked {
        // Gemini CLI reads stdout's JSON first; exit 2 with the reason on
        // stderr blocks as well if stdout does not reach it intact.
        Blocked {
            stdout: Some(json!({"decision": "deny", "reason": reason})),
            stderr: reason.to_owned(),
            exit: 2,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Gemini CLI hook: read its stdin, run the chain, answer in its format",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        // Gemini CLI sets GEMINI_PROJECT_DIR (and CLAUDE_PROJECT_DIR) to the
        // directory it was started in, not to a project root: started in a
        // subdirectory, it names the subdirectory. The nearest `.toolgate/`
        // above the call's cwd is the better answer.
        None
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }

    fn install(&self) -> Install {
        Install {
            user_file: ".gemini/settings.json",
            project_file: ".gemini/settings.json",
            events: &["BeforeTool", "AfterTool"],
            layout: Layout::Grouped { handler },
            timeout: None,
            agent_cli: "gemini",
            tested_versions: &["0.61.0"],
            trust: Some(TrustStep {
                fix: "trust the project folder in Gemini CLI (answer its trust prompt, or \
                      `/permissions`, which writes ~/.gemini/trustedFolders.json): in a folder \
                      it does not trust, Gemini CLI runs no hooks at all — neither the \
                      project's nor the user's — and headless runs refuse to start",
                check: Some(TrustCheck {
                    file: ".gemini/trustedFolders.json",
                    done: folder_trusted,
                }),
            }),
        }
    }

    fn import(&self) -> Import {
        Import::Unsupported(
            "importing Gemini CLI's hooks is not supported yet: its hooks answer in Gemini \
             CLI's own format (`decision`, `hookSpecificOutput.tool_input`), which toolgate's \
             chain cannot run unchanged; run `toolgate gemini` as Gemini CLI's hook and \
             write hooks.json by hand",
        )
    }
}

/// The handler toolgate writes into Gemini CLI's settings for `argv`: a
/// shell string (Gemini CLI runs it with `bash -c`), named so that
/// `hooksConfig.disabled` and its hook listings can name it.
fn handler(argv: &[String]) -> Value {
    json!({"type": "command", "name": "toolgate", "command": super::shell_words(argv)})
}

/// Reads Gemini CLI's hook stdin.
///
/// `BeforeTool` and `AfterTool` are tool calls; any other event is one
/// toolgate has no part in. After the call, what the model will be shown is
/// the result: the error's message when the tool failed (Gemini CLI shows
/// the model `{"error": message}`), else `llmContent` (text, or the text of
/// its parts for an MCP tool). A shell command that exits non-zero is not a
/// failure to Gemini CLI (the exit code is in the text), and reaches the
/// post chain like any other.
fn read(obj: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
    let s = |k: &str| string_field(obj, k);
    let name = s("hook_event_name").ok_or(ReadAgentInputError::Missing("hook_event_name"))?;
    let cwd = s("cwd");
    let event = match name.as_str() {
        "BeforeTool" => Event::PreToolUse,
        "AfterTool" => Event::PostToolUse,
        _ => {
            return Ok(AgentCall {
                hook_event_name: name,
                request: None,
                cwd,
                timeout: None,
            });
        }
    };
    let tool = s("tool_name").ok_or(ReadAgentInputError::Missing("tool_name"))?;
    let input = match obj.get("tool_input") {
        Some(input @ Value::Object(_)) => input.clone(),
        Some(_) => {
            return Err(ReadAgentInputError::Invalid {
                field: "tool_input",
                expected: "an object",
            });
        }
        None => return Err(ReadAgentInputError::Missing("tool_input")),
    };
    let result = match event {
        Event::PreToolUse => None,
        Event::PostToolUse => Some(tool_result(obj.get("tool_response"))?),
    };
    Ok(AgentCall {
        hook_event_name: name,
        request: Some(Request {
            event,
            tool,
            input,
            result,
            session_id: s("session_id"),
            turn_id: None,
            tool_call_id: None,
            cwd: cwd.clone(),
        }),
        cwd,
        timeout: None,
    })
}

/// The result a `tool_response` (`{llmContent, returnDisplay, error?}`)
/// shows the model.
fn tool_result(response: Option<&Value>) -> Result<ToolResult, ReadAgentInputError> {
    let invalid = ReadAgentInputError::Invalid {
        field: "tool_response",
        expected: "an object with `llmContent`",
    };
    let Some(Value::Object(response)) = response else {
        return Err(match response {
            None => ReadAgentInputError::Missing("tool_response"),
            Some(_) => invalid,
        });
    };
    match response.get("error") {
        None | Some(Value::Null) => {}
        Some(error) => {
            let message = error
                .get("message")
                .cloned()
                .unwrap_or_else(|| error.clone());
            return Ok(ToolResult::error(message));
        }
    }
    let content = response.get("llmContent").ok_or(invalid)?;
    Ok(ToolResult::ok(content_text(content)))
}

/// `llmContent` as the text the model reads: a string as it is; parts
/// (`[{"text": …}]`, as MCP tools answer) as their texts joined, when every
/// part is text; anything else as it is.
fn content_text(content: &Value) -> Value {
    let part_text = |part: &Value| part.get("text").and_then(Value::as_str).map(str::to_owned);
    match content {
        Value::Array(parts) => parts
            .iter()
            .map(part_text)
            .collect::<Option<Vec<_>>>()
            .map_or_else(|| content.clone(), |texts| json!(texts.concat())),
        Value::Object(_) => part_text(content).map_or_else(|| content.clone(), |t| json!(t)),
        _ => content.clone(),
    }
}

/// The answer for an outcome (see the module's list).
fn render(outcome: &Outcome) -> Option<Value> {
    let event = match outcome.event {
        Event::PreToolUse => "BeforeTool",
        Event::PostToolUse => "AfterTool",
    };
    let mut top = Map::new();
    let mut specific = Map::new();
    let context = outcome.context.as_deref();
    let deny = |top: &mut Map<String, Value>, reason: String| {
        top.insert("decision".into(), json!("deny"));
        top.insert("reason".into(), json!(reason));
    };
    match (&outcome.event, &outcome.decision) {
        (_, Decision::Allow) | (Event::PostToolUse, Decision::Modify { .. }) => {}
        (Event::PreToolUse, Decision::Deny { reason }) => deny(&mut top, reason.clone()),
        (Event::PreToolUse, Decision::Modify { input }) => {
            specific.insert("tool_input".into(), input.clone());
        }
        (Event::PreToolUse, Decision::Replace { result }) => {
            deny(&mut top, answered_for_the_tool(&result.output));
        }
        // A denial after the call is all Gemini CLI shows the model: the
        // context would be dropped with the output, so it joins the reason.
        (Event::PostToolUse, Decision::Deny { reason }) => {
            deny(&mut top, with_context(withheld(reason), context));
        }
        (Event::PostToolUse, Decision::Replace { result }) => deny(
            &mut top,
            with_context(
                format!(
                    "toolgate replaced this tool's output: {}",
                    output_text(&result.output)
                ),
                context,
            ),
        ),
    }
    if let Some(context) = context
        && !top.contains_key("decision")
    {
        specific.insert("additionalContext".into(), json!(context));
    }
    if !specific.is_empty() {
        specific.insert("hookEventName".into(), json!(event));
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

fn with_context(reason: String, context: Option<&str>) -> String {
    match context {
        Some(context) => format!("{reason}\n\n{context}"),
        None => reason,
    }
}

/// Whether Gemini CLI's trustedFolders.json (`{"<path>": "TRUST_FOLDER" |
/// "TRUST_PARENT" | "DO_NOT_TRUST"}`) trusts `root`: as Gemini CLI decides
/// it, the longest rule whose folder contains `root` wins, and
/// `TRUST_PARENT` stands for the rule path's parent.
fn folder_trusted(file: &Value, root: &Path) -> bool {
    let Some(rules) = file.as_object() else {
        return false;
    };
    let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let root = real(root);
    let mut best: Option<(usize, &str)> = None;
    for (rule, level) in rules {
        let Some(level) = level.as_str() else {
            continue;
        };
        let rule_path = PathBuf::from(rule);
        let folder = match level {
            "TRUST_PARENT" => rule_path.parent().map(Path::to_path_buf),
            _ => Some(rule_path.clone()),
        };
        let Some(folder) = folder else {
            continue;
        };
        if root.starts_with(real(&folder)) && best.is_none_or(|(len, _)| rule.len() > len) {
            best = Some((rule.len(), level));
        }
    }
    matches!(best, Some((_, "TRUST_FOLDER" | "TRUST_PARENT")))
}

/// `toolgate gemini --help`: where Gemini CLI reads its hooks, and what it
/// needs before it runs them.
const HELP: &str = r#"Install it by absolute path in ~/.gemini/settings.json, or a project's
.gemini/settings.json, for BeforeTool and AfterTool:

{
  "hooks": {
    "BeforeTool": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "name": "toolgate",
            "command": "/usr/local/bin/toolgate gemini"
          }
        ]
      }
    ]
  }
}

and the same entry under "AfterTool". Gemini CLI runs hooks only in a
folder it trusts (~/.gemini/trustedFolders.json, or
GEMINI_CLI_TRUST_WORKSPACE=true for headless runs), the user's hooks
included. Its `timeout` is in milliseconds (default 60000); toolgate
answers within 50 s. The README's "Gemini CLI" section lists what each
answer becomes.

Example:
  toolgate gemini < examples/demo/gemini-pre-force-push.json"#;
