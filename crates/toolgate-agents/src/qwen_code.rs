//! Qwen Code's hook protocol (0.24.4): Claude Code's settings and stdin, but
//! far fewer answers honoured — so its own renderer, not Claude Code's.
//!
//! Why not `toolgate claude-code` unchanged: run live against Qwen Code, the
//! Claude Code answers failed open in four places. Qwen Code ignores
//! `updatedInput` (the unrewritten call ran), ignores `updatedToolOutput` and
//! a post `decision: block`, ignores everything but `additionalContext` on
//! `PostToolUseFailure` (a failed command's secret reached the model), and
//! ignores exit 2 after the call (toolgate's own failure there showed the
//! output). It also exports `CLAUDE_PROJECT_DIR` as its working directory,
//! not a project root, so reading it as one missed a repository's
//! `.toolgate/` when Qwen Code ran in a subdirectory. What it does honour,
//! and what each answer therefore becomes:
//!
//! - before the call, `permissionDecision: "deny"` + reason: the model reads
//!   the bare reason as the tool's result. A `modify` cannot be applied, so
//!   it is refused with the rewritten input in the reason (the model may
//!   make that call itself, which Qwen Code's permission step and toolgate
//!   then judge afresh); a pre `replace` is refused with the replacement as
//!   the reason. Context before the call is dropped by Qwen Code even beside
//!   a deny, so it is folded into the reason there, and printed (for a
//!   release that reads it) on an allow.
//! - after a successful call, top-level `continue: false` + `stopReason`:
//!   the tool's result becomes exactly `stopReason` and the agent goes on
//!   (it is not stopped). A `replace` is its replacement, a `deny` the
//!   reason it was withheld. Context beside a stop is dropped, so it is
//!   folded into `stopReason`; alone it is `additionalContext`, appended to
//!   the result.
//! - after a failed call (`PostToolUseFailure`: a non-zero exit is a failure,
//!   and no `PostToolUse` fires) only `additionalContext` is honoured: a
//!   `deny` or `replace` can only tell the model to disregard the output.
//!   The output is withheld one step later, at `PostToolBatch`, whose stop
//!   replaces the result of the batch's last call: toolgate judges that
//!   call again there and stops on a deny or replace.
//! - a chain's `ask` is Qwen Code's own `permissionDecision: "ask"` with
//!   the reason: a confirmation in its terminal, a refusal with the reason
//!   in `-p` (checked live, and in its code: the ask is bounced to a
//!   confirmation only when the session is interactive).
//! - toolgate's own failure is a stop on stdout ([`QwenCode::blocked`]):
//!   exit 2 is honoured only before the call.
//!
//! A hook that is missing, crashes, prints anything else or outlives its
//! timeout lets the call through, and Qwen Code has no switch to change
//! that; its wait for any hook is capped at 60 s (15 s for `PostToolBatch`)
//! whatever `timeout` says, so toolgate answers well inside both.

use super::claude_code::read_envelope;
use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, HookSwitch, Import, Install, Layout,
    McpConfig, McpShape, ReadAgentInputError, Role, Setting, Source, TrustStep, UserDir,
    answered_for_the_tool, needs_a_person_about_a_rewrite, output_text, string_field, withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Qwen Code.
pub(super) struct QwenCode;

/// The event after a batch of calls resolves, the only one whose answer can
/// withhold a failed call's output.
const POST_TOOL_BATCH: &str = "PostToolBatch";

/// How long Qwen Code waits for a `PostToolBatch` hook, whatever its
/// `timeout` (`POST_TOOL_BATCH_HOOK_TIMEOUT_MS`).
const POST_TOOL_BATCH_TIMEOUT: Duration = Duration::from_secs(15);

/// Qwen Code's hook events (0.24.4, read from its settings schema), and
/// what each is to toolgate. A name outside this set is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
enum QwenEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PostToolBatch,
    PermissionRequest,
    PermissionDenied,
    Notification,
    UserPromptSubmit,
    UserPromptExpansion,
    SessionStart,
    SessionEnd,
    SessionDelete,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    InstructionsLoaded,
    MessageDisplay,
    TodoCreated,
    TodoCompleted,
}

impl AgentEvent for QwenEvent {
    fn role(self) -> Role {
        use QwenEvent as E;
        match self {
            E::PreToolUse => Role::Judged(Call::Before),
            E::PostToolUse => Role::Judged(Call::After),
            E::PostToolUseFailure => Role::Judged(Call::AfterFailure),
            // Read by `read_batch`: the batch's last call, judged again.
            E::PostToolBatch => Role::Judged(Call::After),
            // Each carries a call; what Qwen Code does with an answer to
            // them is not pinned live, so they are refused, not judged.
            E::PermissionRequest | E::PermissionDenied => Role::ToolCallNotJudged,
            E::Notification
            | E::UserPromptSubmit
            | E::UserPromptExpansion
            | E::SessionStart
            | E::SessionEnd
            | E::SessionDelete
            | E::Stop
            | E::StopFailure
            | E::SubagentStart
            | E::SubagentStop
            | E::PreCompact
            | E::PostCompact
            | E::InstructionsLoaded
            | E::MessageDisplay
            | E::TodoCreated
            | E::TodoCompleted => Role::NoToolCall,
        }
    }
}

impl Dialect for QwenCode {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        if string_field(input, "hook_event_name").as_deref() == Some(POST_TOOL_BATCH) {
            return read_batch(input);
        }
        let mut call = read_envelope::<QwenEvent>(input)?;
        // Qwen Code's `tool_response` is `{llmContent, returnDisplay}`; the
        // model is shown `llmContent`, so that is what the post chain judges.
        if let Some(Request {
            result: Some(result),
            ..
        }) = &mut call.request
            && let Some(shown) = result.output.get("llmContent").cloned()
        {
            result.output = shown;
        }
        Ok(call)
    }

    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value> {
        let context = outcome.context.as_deref();
        let answer = match (outcome.event, hook_event_name) {
            (Event::PreToolUse | Event::ListTools, _) => pre(&outcome.decision, context),
            (Event::PostToolUse, "PostToolUseFailure") => after_failure(&outcome.decision, context),
            (Event::PostToolUse, POST_TOOL_BATCH) => after_batch(&outcome.decision),
            (Event::PostToolUse, _) => post(&outcome.decision, context),
        };
        answer.map(|mut answer| {
            if let Some(specific) = answer
                .get_mut("hookSpecificOutput")
                .and_then(Value::as_object_mut)
            {
                specific.insert("hookEventName".into(), json!(hook_event_name));
            }
            answer
        })
    }

    /// A stop on stdout, exit 0: before the call Qwen Code reads it as a
    /// refusal (`decision: block`), after it as the result the model is
    /// shown (`continue: false`). Exit 2 would be honoured only before the
    /// call; it remains the fallback when stdout cannot be written.
    fn blocked(&self, reason: &str) -> Blocked {
        Blocked {
            stdout: Some(stop_and_block(reason)),
            stderr: reason.to_owned(),
            exit: 0,
        }
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Qwen Code hook: read its stdin, run the chain, answer with what Qwen \
                    Code honours",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        // Qwen Code exports CLAUDE_PROJECT_DIR (and QWEN_PROJECT_DIR) as its
        // working directory, not a project root: toolgate walks up from the
        // call's cwd instead.
        None
    }

    fn default_hook_timeout(&self) -> Duration {
        // A command hook's default, and the cap on any hook wait.
        Duration::from_secs(60)
    }

    fn install(&self) -> Install {
        Install {
            switches: &[HookSwitch {
                setting: Setting::Flag {
                    pointer: "/disableAllHooks",
                    off_when: true,
                },
                // 0.24.4's `mergeSettings`: its system defaults, the
                // user's, the project's when the folder is trusted, then
                // the system's, which wins.
                read_from: &[
                    Source::System {
                        path: "/etc/qwen-code/system-defaults.json",
                        var: Some("QWEN_CODE_SYSTEM_DEFAULTS_PATH"),
                        root_owned: false,
                    },
                    Source::User,
                    Source::Project,
                    Source::System {
                        path: "/etc/qwen-code/settings.json",
                        var: Some("QWEN_CODE_SYSTEM_SETTINGS_PATH"),
                        root_owned: false,
                    },
                ],
                effect: "Qwen Code runs no hook at all, toolgate's included: every call goes \
                         through unguarded",
                shown_live_by: Some(
                    "live_qwen_disable_all_hooks_skips_toolgate_and_doctor_says_so",
                ),
            }],
            user_file: ".qwen/settings.json",
            user_dir: UserDir::Var {
                var: "QWEN_HOME",
                dir: ".qwen",
            },
            project_file: ".qwen/settings.json",
            events: &[
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                POST_TOOL_BATCH,
            ],
            layout: Layout::Grouped { handler },
            timeout: None,
            agent_cli: "qwen",
            tested_versions: &["0.24.4"],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".qwen/settings.json",
                user_dir: UserDir::Var {
                    var: "QWEN_HOME",
                    dir: ".qwen",
                },
                shadowed_by: &[],
                project_file: Some(".qwen/settings.json"),
                shape: McpShape::McpServers,
                per_project: false,
            },
            trust: Some(TrustStep {
                fix: "only where Qwen Code's folder trust is on (security.folderTrust.enabled): \
                      trust the project folder in Qwen Code (recorded in \
                      ~/.qwen/trustedFolders.json); a project's .qwen/settings.json hooks do not \
                      load in an untrusted folder, without a word in `qwen -p` (user settings \
                      always load)",
                check: None,
                project_only: true,
            }),
        }
    }

    fn import(&self) -> Import {
        Import::Unsupported(
            "importing Qwen Code's settings is not supported yet (its matchers also match tool \
             aliases such as Bash for run_shell_command, and search their regex anywhere in the \
             name); write hooks.json by hand, or run `toolgate qwen-code` as Qwen Code's hook",
        )
    }
}

/// Reads a `PostToolBatch` input: the batch's last call, when it failed, as
/// a post request (its `error` text is what the model is shown). Only the
/// last call's result can be replaced, and a successful call was judged at
/// `PostToolUse` already, so anything else is not toolgate's to evaluate.
fn read_batch(obj: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
    let calls = obj
        .get("tool_calls")
        .ok_or(ReadAgentInputError::Missing("tool_calls"))?
        .as_array()
        .ok_or(ReadAgentInputError::Invalid {
            field: "tool_calls",
            expected: "an array",
        })?;
    let cwd = string_field(obj, "cwd");
    let last = calls.last().and_then(Value::as_object);
    // A call refused before it ran (by a hook, or Qwen Code's permission
    // step) is an error too, with nothing to withhold.
    let failed = last.filter(|c| {
        c.get("status").and_then(Value::as_str) == Some("error")
            && c.get("tool_response")
                .and_then(|r| r.get("error_type"))
                .and_then(Value::as_str)
                != Some("execution_denied")
    });
    let request = match failed {
        None => None,
        Some(call) => {
            let tool = string_field(call, "tool_name")
                .ok_or(ReadAgentInputError::Missing("tool_calls[].tool_name"))?;
            let input = call
                .get("tool_input")
                .cloned()
                .ok_or(ReadAgentInputError::Missing("tool_calls[].tool_input"))?;
            let error = call
                .get("tool_response")
                .and_then(|r| r.get("error"))
                .cloned()
                .unwrap_or(Value::Null);
            Some(Request {
                event: Event::PostToolUse,
                tool,
                input,
                result: Some(ToolResult::error(error)),
                session_id: string_field(obj, "session_id"),
                turn_id: None,
                tool_call_id: string_field(call, "tool_call_id"),
                cwd: cwd.clone(),
            })
        }
    };
    Ok(AgentCall {
        hook_event_name: POST_TOOL_BATCH.to_owned(),
        request,
        cwd,
        timeout: Some(POST_TOOL_BATCH_TIMEOUT),
    })
}

/// `reason` with the context after it, for the answers where Qwen Code
/// shows a reason but drops `additionalContext`.
fn with_context(reason: &str, context: Option<&str>) -> String {
    match context {
        Some(context) => format!("{reason}\n\n{context}"),
        None => reason.to_owned(),
    }
}

fn deny(reason: &str, context: Option<&str>) -> Value {
    json!({"hookSpecificOutput": {
        "permissionDecision": "deny",
        "permissionDecisionReason": with_context(reason, context),
    }})
}

fn context_only(context: Option<&str>) -> Option<Value> {
    context.map(|context| json!({"hookSpecificOutput": {"additionalContext": context}}))
}

/// The result the model is shown becomes `text`.
fn stop(text: &str) -> Value {
    json!({"continue": false, "stopReason": text})
}

/// A stop that is also a refusal before the call.
fn stop_and_block(reason: &str) -> Value {
    json!({"decision": "block", "reason": reason, "continue": false, "stopReason": reason})
}

/// Before the call.
fn pre(decision: &Decision, context: Option<&str>) -> Option<Value> {
    match decision {
        // Qwen Code 0.24.4 drops pre context; printed for a release that
        // reads it.
        Decision::Allow => context_only(context),
        Decision::Deny { reason } => Some(deny(reason, context)),
        Decision::Modify { input } => Some(deny(
            &format!(
                "toolgate would run this call rewritten, and Qwen Code cannot apply a rewrite, \
                 so it was not run; the rewritten input: {input}"
            ),
            context,
        )),
        Decision::Replace { result } => Some(deny(&answered_for_the_tool(&result.output), context)),
        // Qwen Code's own `ask`: its terminal asks the person (live,
        // 0.24.4: yes runs the call, no does not), and where nobody can
        // answer (`-p`, any approval mode) it refuses the call and the model
        // reads the reason. A rewrite cannot ride along (Qwen Code applies
        // none), so an ask about a rewritten call is refused as a `modify`
        // is.
        Decision::Ask {
            reason,
            input: None,
        } => Some(json!({"hookSpecificOutput": {
            "permissionDecision": "ask",
            "permissionDecisionReason": with_context(reason, context),
        }})),
        Decision::Ask {
            reason,
            input: Some(input),
        } => Some(deny(
            &needs_a_person_about_a_rewrite(reason, input, ", which Qwen Code cannot apply"),
            context,
        )),
    }
}

/// After a successful call.
fn post(decision: &Decision, context: Option<&str>) -> Option<Value> {
    match decision {
        // An `ask` never comes after the call (the chain makes it a failure).
        Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => context_only(context),
        Decision::Deny { reason } => Some(stop(&with_context(&withheld(reason), context))),
        Decision::Replace { result } => {
            Some(stop(&with_context(&output_text(&result.output), context)))
        }
    }
}

/// After a failed call: context is all Qwen Code reads here.
fn after_failure(decision: &Decision, context: Option<&str>) -> Option<Value> {
    let note = match decision {
        Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => {
            return context_only(context);
        }
        Decision::Deny { reason } => format!("{}; disregard it", withheld(reason)),
        Decision::Replace { result } => format!(
            "toolgate replaced the output of this call; disregard it and use this instead: {}",
            output_text(&result.output)
        ),
    };
    context_only(Some(&with_context(&note, context)))
}

/// After a batch whose last call failed: a deny or replace withholds its
/// output. Context was given at `PostToolUseFailure`, so it is not repeated.
fn after_batch(decision: &Decision) -> Option<Value> {
    match decision {
        Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => None,
        Decision::Deny { reason } => Some(stop(&withheld(reason))),
        Decision::Replace { result } => Some(stop(&output_text(&result.output))),
    }
}

/// The handler toolgate writes into Qwen Code's settings for `argv`: a
/// shell command line (Qwen Code runs `command` with `bash -c`; it has no
/// exec form and no fail-closed switch).
fn handler(argv: &[String]) -> Value {
    json!({"type": "command", "command": super::shell_words(argv)})
}

/// `toolgate qwen-code --help`: where Qwen Code reads its hooks.
const HELP: &str = r#"Install it by absolute path (a hook command that is not found lets calls
through, and Qwen Code has no fail-closed switch) in ~/.qwen/settings.json,
or a project's .qwen/settings.json, for PreToolUse, PostToolUse,
PostToolUseFailure and PostToolBatch:

{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/toolgate qwen-code"
          }
        ]
      }
    ]
  }
}

and the same entry under "PostToolUse", "PostToolUseFailure" and
"PostToolBatch" (the only event that can withhold a failed call's output).
Qwen Code names its tools run_shell_command, read_file, edit, write_file...
The book's "Qwen Code" section lists what each answer becomes.

Example:
  toolgate qwen-code < examples/demo/claude-pre-force-push.json"#;
