//! GitHub Copilot CLI's hook protocol: camelCase events (`preToolUse`,
//! `postToolUse`, `postToolUseFailure`) in `.github/hooks/*.json`,
//! `~/.copilot/hooks/*.json` or the `hooks` of `~/.copilot/settings.json`.
//!
//! # Why it needs a dialect of its own
//!
//! Copilot CLI copied the idea of Claude Code's hooks, not their envelope:
//! its stdin names no event (`{"toolName", "toolArgs", "cwd", …}`, plus
//! `toolResult` after a call and `error` after a failed one), and it reads
//! flat fields (`permissionDecision`, `modifiedArgs`, `modifiedResult`,
//! `additionalContext`), never `hookSpecificOutput`. What each answer
//! becomes, as the real CLI (1.0.102, against a mock model) was seen to do:
//!
//! - a pass prints nothing: `permissionDecision: "allow"` would switch off
//!   the user's own rules (a `--deny-tool` rule, the approval a call needs)
//!   for the call, which toolgate's allow ("no objection") must not do;
//! - `modify` is `modifiedArgs` alone: Copilot replaces the whole argument
//!   object and, without a decision beside it, still applies its own
//!   permission rules to the rewritten call;
//! - a chain's `ask` is Copilot's own `permissionDecision: "ask"` with the
//!   reason: a "Hook permission request" in its terminal, whatever its
//!   permission flags (`--allow-all-tools`, `--yolo`), and a refusal whose
//!   reason the model reads in `-p`; an ask about a rewritten call is
//!   refused instead;
//! - a pre `replace` cannot be expressed (a hook cannot answer for a tool):
//!   it becomes a denial whose reason carries the replacement;
//! - after a call, `modifiedResult` replaces what the model is shown: a post
//!   `replace` is the replacement's text, a post `deny` the reason, marked
//!   `denied`;
//! - after a failed call (`postToolUseFailure`) Copilot honours only
//!   `additionalContext`: a deny or replace there can only tell the model to
//!   disregard the error it was already shown.
//!
//! Copilot blocks a call whose `preToolUse` hook exits non-zero, cannot start
//! or crashes ("hook errored"), but lets it through when the hook outlives
//! its `timeoutSec` (30 s by default), and ignores every failure of a
//! `postToolUse` hook. So toolgate's own failure is a refusal printed with
//! exit 0 ([`Copilot::blocked`]), read on both sides, and its deadline stays
//! inside Copilot's timeout.
//!
//! Tools are named as Copilot's own Claude-compatible hook mode names them
//! (`bash` is `Bash`, `view` is `Read`, …; [`CLAUDE_NAMES`]), so a policy
//! written for Claude Code's tools, and a hook imported from Copilot's
//! PascalCase settings, see the names they expect; the arguments keep
//! Copilot's names (`path`, `file_text`), as in that mode.

use super::{
    AgentCall, Blocked, Dialect, Help, Import, Install, Layout, McpConfig, McpShape,
    ReadAgentInputError, UserDir, answered_for_the_tool, needs_a_person_about_a_rewrite,
    output_text, string_field, withheld,
};
use super::{Call, TrustCheck, TrustStep};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::import::Imported;
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// GitHub Copilot CLI.
pub(super) struct Copilot;

/// The events toolgate reads, as Copilot spells them.
const PRE: &str = "preToolUse";
const POST: &str = "postToolUse";
const FAILURE: &str = "postToolUseFailure";

/// Copilot's tool names and the names its Claude-compatible (PascalCase)
/// hook mode gives them (1.0.102, all 17 built-in tools observed; the others
/// and MCP tools, `<server>-<tool>`, keep their names).
pub(crate) const CLAUDE_NAMES: [(&str, &str); 7] = [
    ("bash", "Bash"),
    ("view", "Read"),
    ("create", "Write"),
    ("edit", "Edit"),
    ("grep", "Grep"),
    ("glob", "Glob"),
    ("task", "Agent"),
];

/// The name a tool goes by in toolgate's chain.
fn tool_name(copilot: &str) -> String {
    CLAUDE_NAMES
        .iter()
        .find(|(native, _)| *native == copilot)
        .map_or(copilot, |(_, claude)| claude)
        .to_owned()
}

impl Dialect for Copilot {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        // Claude-style (PascalCase) events hand a hook Claude Code's envelope;
        // read as this one it would look like no tool call at all and pass.
        if input.contains_key("hook_event_name") {
            return Err(ReadAgentInputError::Invalid {
                field: "hook_event_name",
                expected: "absent (`toolgate copilot` answers Copilot's camelCase events; \
                           for PascalCase ones install `toolgate claude-code`)",
            });
        }
        let cwd = string_field(input, "cwd");
        // Copilot names no event: the fields say which one it is. Its
        // events without a tool call (`sessionStart`, `userPromptSubmitted`,
        // `agentStop`, …) carry no field named `tool…`; an input that does
        // but is none of the three shapes below is an event toolgate does
        // not know, refused (it could be a tool call in a new shape).
        let call = if input.contains_key("toolResult") {
            Call::After
        } else if input.contains_key("error") {
            Call::AfterFailure
        } else if input.contains_key("toolArgs") {
            Call::Before
        } else if let Some(field) = input.keys().find(|k| k.starts_with("tool")) {
            return Err(ReadAgentInputError::UnknownEvent(format!(
                "(unnamed, with `{}` but no `toolArgs` or `toolResult`)",
                super::shown_event(field)
            )));
        } else {
            return Ok(AgentCall {
                hook_event_name: "other".into(),
                request: None,
                cwd,
                timeout: None,
            });
        };
        let event = match call {
            Call::Before => PRE,
            Call::After => POST,
            Call::AfterFailure => FAILURE,
        };
        let tool =
            string_field(input, "toolName").ok_or(ReadAgentInputError::Missing("toolName"))?;
        let args = match input.get("toolArgs") {
            Some(Value::Object(args)) => Value::Object(args.clone()),
            // Copilot's docs once gave it as a JSON string.
            Some(Value::String(text)) => match serde_json::from_str(text) {
                Ok(Value::Object(args)) => Value::Object(args),
                _ => {
                    return Err(ReadAgentInputError::Invalid {
                        field: "toolArgs",
                        expected: "a JSON object",
                    });
                }
            },
            Some(Value::Null) | None => json!({}),
            Some(_) => {
                return Err(ReadAgentInputError::Invalid {
                    field: "toolArgs",
                    expected: "a JSON object",
                });
            }
        };
        let result = match call {
            Call::After => Some(read_result(input)?),
            // What the model is shown for a failed call is the error text.
            Call::AfterFailure => Some(ToolResult::error(
                input.get("error").cloned().unwrap_or(Value::Null),
            )),
            Call::Before => None,
        };
        Ok(AgentCall {
            hook_event_name: event.into(),
            request: Some(Request {
                event: call.event(),
                tool: tool_name(&tool),
                input: args,
                result,
                session_id: string_field(input, "sessionId"),
                turn_id: None,
                tool_call_id: None,
                cwd: cwd.clone(),
            }),
            cwd,
            timeout: None,
        })
    }

    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value> {
        let mut answer = Map::new();
        let decision = &outcome.decision;
        let mut context = outcome.context.clone();
        match (outcome.event, hook_event_name) {
            (Event::PreToolUse | Event::ListTools, _) => before(&mut answer, decision),
            (Event::PostToolUse, FAILURE) => {
                let said = match decision {
                    // Never after the call (the chain makes it a failure).
                    Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => None,
                    Decision::Deny { reason } => Some(format!(
                        "{}; disregard the error shown for it",
                        withheld(reason)
                    )),
                    Decision::Replace { result } => Some(format!(
                        "toolgate replaced the output of this call; disregard it and use this \
                         instead: {}",
                        output_text(&result.output)
                    )),
                };
                if let Some(said) = said {
                    context = Some(match context {
                        Some(c) => format!("{said}\n{c}"),
                        None => said,
                    });
                }
            }
            (Event::PostToolUse, _) => match decision {
                Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => {}
                Decision::Deny { reason } => {
                    answer.insert("modifiedResult".into(), shown("denied", &withheld(reason)));
                }
                Decision::Replace { result } => {
                    let kind = if result.is_error {
                        "failure"
                    } else {
                        "success"
                    };
                    answer.insert(
                        "modifiedResult".into(),
                        shown(kind, &output_text(&result.output)),
                    );
                }
            },
        }
        if let Some(context) = context {
            answer.insert("additionalContext".into(), json!(context));
        }
        (!answer.is_empty()).then_some(Value::Object(answer))
    }

    fn blocked(&self, reason: &str) -> Blocked {
        // Exit 0, so Copilot reads it: before the call the decision blocks
        // it; after it (where a failing hook is ignored) the result withholds
        // the output. Each side ignores the other's field.
        Blocked {
            stdout: Some(json!({
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
                "modifiedResult": shown("denied", reason),
            })),
            stderr: reason.to_owned(),
            exit: 0,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a GitHub Copilot CLI hook: read its stdin, run the chain, answer in its \
                    format",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        Some("COPILOT_PROJECT_DIR")
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(30)
    }

    fn install(&self) -> Install {
        Install {
            // None that works: 1.0.102 lists `disableAllHooks`, but runs
            // toolgate's hook with it set in every file it might read it from
            // (live_copilot_runs_toolgate_despite_disable_all_hooks_in_every_file_it_might_read).
            switches: &[],
            user_file: ".copilot/hooks/toolgate.json",
            user_dir: UserDir::Var {
                var: "COPILOT_HOME",
                dir: ".copilot",
            },
            project_file: ".github/hooks/toolgate.json",
            events: &[PRE, POST, FAILURE],
            layout: Layout::Flat { handler },
            timeout: None,
            agent_cli: "copilot",
            tested_versions: &["1.0.102"],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".copilot/mcp-config.json",
                user_dir: UserDir::Var {
                    var: "COPILOT_HOME",
                    dir: ".copilot",
                },
                shadowed_by: &[],
                project_file: None,
                shape: McpShape::McpServers,
                per_project: false,
            },
            trust: Some(TrustStep {
                fix: "a project's .github/hooks load only in a folder Copilot CLI trusts: run \
                      `copilot` there once and trust the folder (or add it to `trustedFolders` \
                      in ~/.copilot/config.json); hooks in ~/.copilot/hooks need no trust",
                check: Some(TrustCheck {
                    file: ".copilot/config.json",
                    done: folder_trusted,
                }),
                project_only: true,
            }),
        }
    }

    fn import(&self) -> Import {
        Import::Settings(import_settings)
    }
}

/// Whether Copilot CLI's config lists `project` (or a folder above it) in
/// `trustedFolders`.
fn folder_trusted(config: &Value, project: &std::path::Path) -> bool {
    config["trustedFolders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|folder| project.starts_with(folder))
}

/// Before the call: what Copilot reads from `answer` for `decision`.
fn before(answer: &mut Map<String, Value>, decision: &Decision) {
    match decision {
        Decision::Allow => {}
        Decision::Deny { reason } => deny(answer, reason),
        // Without a decision Copilot still applies its own rules.
        Decision::Modify { input } => {
            answer.insert("modifiedArgs".into(), input.clone());
        }
        Decision::Replace { result } => {
            deny(answer, &answered_for_the_tool(&result.output));
        }
        // Copilot's own `ask`: a "Hook permission request" in its
        // terminal, whatever its permission flags (live, 1.0.102: yes
        // runs the call, no does not); in `-p` it refuses the call
        // ("unable to ask user for confirmation") and the model reads the
        // reason. An ask about a rewritten call is refused: whether
        // Copilot would show and run the rewrite beside an `ask` was not
        // seen, and a person approving the original call would undo a
        // guard's rewrite.
        Decision::Ask {
            reason,
            input: None,
        } => {
            answer.insert("permissionDecision".into(), json!("ask"));
            answer.insert("permissionDecisionReason".into(), json!(reason));
        }
        Decision::Ask {
            reason,
            input: Some(input),
        } => deny(answer, &needs_a_person_about_a_rewrite(reason, input, "")),
    }
}

/// A decision that blocks the call, with its reason.
fn deny(answer: &mut Map<String, Value>, reason: &str) {
    answer.insert("permissionDecision".into(), json!("deny"));
    answer.insert("permissionDecisionReason".into(), json!(reason));
}

/// A `modifiedResult`: what the model is shown instead of the output.
fn shown(result_type: &str, text: &str) -> Value {
    json!({"resultType": result_type, "textResultForLlm": text})
}

/// A call's `toolResult`: the text the model is shown, failed unless
/// Copilot says `success`.
fn read_result(input: &Map<String, Value>) -> Result<ToolResult, ReadAgentInputError> {
    let invalid = ReadAgentInputError::Invalid {
        field: "toolResult",
        expected: "an object with `textResultForLlm`",
    };
    let Some(Value::Object(result)) = input.get("toolResult") else {
        return Err(invalid);
    };
    let text = result
        .get("textResultForLlm")
        .cloned()
        .unwrap_or(Value::String(String::new()));
    Ok(match result.get("resultType").and_then(Value::as_str) {
        Some("success") | None => ToolResult::ok(text),
        Some(_) => ToolResult::error(text),
    })
}

/// The handler toolgate writes into Copilot's hooks for `argv`: the exec form
/// (no shell; Copilot passes `args` as they are), and no `matcher` — `"*"`
/// is not a regex to Copilot, which then skips the hook without a word.
fn handler(argv: &[String]) -> Value {
    let (program, args) = argv
        .split_first()
        .map_or(("toolgate", &[][..]), |(p, a)| (p.as_str(), a));
    json!({"type": "command", "exec": program, "args": args, "timeoutSec": 30})
}

/// `toolgate copilot --help`.
const HELP: &str = r#"Install it by absolute path in ~/.copilot/hooks/toolgate.json (any hooks
folder file; no trust step), or a project's .github/hooks/toolgate.json
(loaded only in a trusted folder: `copilot --trust-folder`, or the folder in
~/.copilot/config.json's trustedFolders):

{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {
        "type": "command",
        "exec": "/usr/local/bin/toolgate",
        "args": ["copilot"],
        "timeoutSec": 30
      }
    ]
  }
}

and the same entry under "postToolUse" and "postToolUseFailure". Give no
"matcher": "*" is not a regex to Copilot, which then skips the hook. A
missing or crashing toolgate blocks the call; one that outlives timeoutSec
lets it through, so toolgate answers within 24 s (--deadline-ms for another
timeoutSec). The book's "GitHub Copilot CLI" section lists what each
answer becomes."#;

/// Imports Copilot CLI hook settings (a `.github/hooks/*.json` file, or
/// `settings.json` with `hooks`) into hooks.json.
///
/// Only Copilot's Claude-compatible (PascalCase) events are carried: their
/// scripts speak Claude Code's protocol, which toolgate runs unmodified, and
/// [`tool_name`] gives them the tool names Copilot gave them. A matcher
/// there is compared by Copilot with the Claude-style name and with the
/// native one (`bash` and `Bash` both matched `bash` in 1.0.102), so the
/// native names in it are translated first. camelCase events
/// (`preToolUse`, …) hand their scripts Copilot's own envelope, which
/// toolgate does not speak to a hook: they are listed as not carried.
pub(crate) fn import_settings(settings: &Value) -> Imported {
    let Some(events) = settings.get("hooks").and_then(Value::as_object) else {
        return crate::import::import_settings(settings);
    };
    let mut claude_style = Map::new();
    let mut not_carried = Vec::new();
    for (event, entries) in events {
        let n = entries.as_array().map_or(0, Vec::len);
        match event.as_str() {
            "PreToolUse" | "PostToolUse" => {
                let groups = entries
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(claude_group)
                    .collect();
                claude_style.insert(event.clone(), Value::Array(groups));
            }
            PRE | POST | FAILURE => not_carried.push(format!(
                "{event}: {n} hook(s) — Copilot hands them its own camelCase envelope \
                 (toolName, toolArgs; permissionDecision, modifiedArgs), which toolgate does \
                 not speak to a hook; install `toolgate copilot` as Copilot's hook instead and \
                 rewrite them as toolgate hooks"
            )),
            // Listed as not carried by the Claude Code import.
            _ => {
                claude_style.insert(event.clone(), entries.clone());
            }
        }
    }
    let mut out = crate::import::import_settings(&json!({"hooks": Value::Object(claude_style)}));
    out.not_carried.extend(not_carried);
    out.warnings.push(
        "Copilot loads a project's .github/hooks only in a trusted folder; toolgate runs the \
         imported hooks only once you trust the workspace (toolgate trust)"
            .into(),
    );
    out
}

/// A PascalCase-mode group as Claude Code would have it: its matcher in
/// Claude-style names, and each handler's Copilot spellings (`bash` for
/// `command`, `timeoutSec` for `timeout`, Copilot's 30 s default) in Claude
/// Code's.
fn claude_group(group: &Value) -> Value {
    let mut group = group.clone();
    if let Some(m) = group.get("matcher").and_then(Value::as_str) {
        group["matcher"] = json!(claude_matcher(m));
    }
    if let Some(handlers) = group.get_mut("hooks").and_then(Value::as_array_mut) {
        for handler in handlers.iter_mut().filter_map(Value::as_object_mut) {
            if !handler.contains_key("command")
                && let Some(bash) = handler.get("bash").cloned()
            {
                handler.insert("command".into(), bash);
            }
            if !handler.contains_key("timeout") {
                let secs = handler.get("timeoutSec").cloned().unwrap_or(json!(30));
                handler.insert("timeout".into(), secs);
            }
        }
    }
    group
}

/// A PascalCase-mode matcher in Claude-style names: Copilot matched `bash`
/// and `Bash` alike, so each native name in a `|`-list becomes its
/// Claude-style one; anything else is kept.
fn claude_matcher(matcher: &str) -> String {
    if matcher
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
    {
        matcher
            .split('|')
            .map(tool_name)
            .collect::<Vec<_>>()
            .join("|")
    } else {
        matcher.to_owned()
    }
}
