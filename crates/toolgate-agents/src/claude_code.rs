//! Claude Code's hook protocol, and the shared renderer of the agents that
//! copied it (Codex, `codex.rs`).
//!
//! Claude Code reads a hook's answer from its stdout (exit 0) and blocks a
//! call on exit 2, showing the model stderr; any other exit code, a missing
//! command or a timeout is a non-blocking error and the call goes through —
//! unless the handler says `"onFailure": "block"` (2.1.295 and later; live,
//! 2.1.332 blocks, 2.1.197 ignores the field). So toolgate's own failure is
//! exit 2 ([`Blocked::exit_two`]), toolgate is installed with `onFailure:
//! "block"` in the exec form (`command` + `args`, no shell: both pinned
//! releases run it) so that a toolgate that is missing, crashes or hangs
//! blocks the call where the release allows, and everything below decides
//! what each answer becomes.

use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, HookSwitch, HttpHook, Import, Install,
    Layout, McpConfig, McpShape, ReadAgentInputError, Role, Setting, Source, Unjudged, UserDir,
    answered_for_the_tool, classify, needs_a_person, output_text, string_field, withheld,
};
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::event_name;
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

mod shape;
use shape::{in_shape, withheld_in_shape};

/// Claude Code.
pub(super) struct ClaudeCode;

impl Dialect for ClaudeCode {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        read_envelope::<ClaudeEvent>(input)
    }

    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value> {
        if hook_event_name.parse() == Ok(ClaudeEvent::PermissionRequest) {
            return permission(&outcome.decision);
        }
        render(outcome, hook_event_name, Rules::CLAUDE_CODE)
    }

    fn blocked(&self, reason: &str) -> Blocked {
        Blocked::exit_two(reason)
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Claude Code hook: read its stdin, run the chain, answer in its format",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        Some("CLAUDE_PROJECT_DIR")
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(600)
    }

    fn install(&self) -> Install {
        Install {
            switches: &[
                HookSwitch {
                    setting: Setting::Flag {
                        pointer: "/disableAllHooks",
                        off_when: true,
                    },
                    read_from: &[
                        Source::User,
                        Source::Project,
                        Source::InProject(".claude/settings.local.json"),
                        MANAGED,
                        MANAGED_DROP_INS,
                    ],
                    effect: "Claude Code runs no hook at all, toolgate's included: every call \
                             goes through unguarded",
                    shown_live_by: Some(
                        "live_claude_disable_all_hooks_skips_toolgate_and_doctor_says_so",
                    ),
                },
                HookSwitch {
                    setting: Setting::Flag {
                        pointer: "/allowManagedHooksOnly",
                        off_when: true,
                    },
                    // Honoured from managed settings only.
                    read_from: &[MANAGED, MANAGED_DROP_INS],
                    effect: "Claude Code runs only the hooks of its managed settings: toolgate's, \
                             in the user's or the project's settings, is skipped and every call \
                             goes through unguarded",
                    shown_live_by: Some(
                        "live_claude_managed_settings_that_turn_hooks_off_skip_toolgate_and_doctor_says_so",
                    ),
                },
            ],
            user_file: ".claude/settings.json",
            user_dir: UserDir::Var {
                var: "CLAUDE_CONFIG_DIR",
                dir: ".claude",
            },
            project_file: ".claude/settings.json",
            events: &["PreToolUse", "PostToolUse", "PostToolUseFailure"],
            layout: Layout::Grouped { handler },
            timeout: None,
            agent_cli: "claude",
            tested_versions: &["2.1.197", "2.1.332"],
            trust: None,
            http: Some(HttpHook {
                handler: http_handler,
                blocks_when_down_from: "2.1.295",
                token_var: TOKEN_VAR,
            }),
            mcp: McpConfig::Servers {
                user_file: ".claude.json",
                user_dir: UserDir::Var {
                    var: "CLAUDE_CONFIG_DIR",
                    dir: "",
                },
                shadowed_by: &[".claude/.config.json"],
                project_file: Some(".mcp.json"),
                shape: McpShape::McpServers,
                per_project: true,
            },
        }
    }

    fn import(&self) -> Import {
        Import::Settings(crate::import::import_settings)
    }
}

/// The handler toolgate writes into Claude Code's settings for `argv`: the
/// exec form (`command` is the program, `args` the rest, no shell), and
/// `onFailure: "block"`, on the handler (on the matcher it is ignored).
fn handler(argv: &[String]) -> Value {
    let (program, args) = argv
        .split_first()
        .map_or(("", &[][..]), |(p, a)| (p.as_str(), a));
    json!({"type": "command", "command": program, "args": args, "onFailure": "block"})
}

/// Claude Code's managed settings on Linux (2.1.197, 2.1.332: a fixed
/// path, no variable moves it), read after every other file.
const MANAGED: Source = Source::System {
    path: "/etc/claude-code/managed-settings.json",
    var: None,
    root_owned: false,
};

/// The drop-in folder beside it, read after it in name order.
const MANAGED_DROP_INS: Source = Source::SystemDropIns {
    dir: "/etc/claude-code/managed-settings.d",
};

/// The variable Claude Code reads `toolgate serve --http`'s secret from.
const TOKEN_VAR: &str = "TOOLGATE_HTTP_TOKEN";

/// The http hook toolgate writes for a server at `url`: the secret from
/// [`TOKEN_VAR`] (Claude Code interpolates only the variables
/// `allowedEnvVars` names, so the secret is in no settings file), and
/// `onFailure: "block"` on the handler. Live: 2.1.332 then blocks when the
/// server is down, answers a non-2xx status or no JSON, or times out;
/// 2.1.197 lets the call through in each case.
fn http_handler(url: &str) -> Value {
    json!({"type": "http", "url": url,
           "headers": {"Authorization": format!("Bearer ${TOKEN_VAR}")},
           "allowedEnvVars": [TOKEN_VAR], "onFailure": "block"})
}

/// `toolgate claude-code --help`: where Claude Code reads its hooks, and an
/// entry that pastes as valid JSON (short lines: nothing is wrapped inside a
/// string on an 80-column terminal).
const HELP: &str = r#"Install it by absolute path in ~/.claude/settings.json, or a project's
.claude/settings.json, for PreToolUse, PostToolUse and PostToolUseFailure:

{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/toolgate",
            "args": ["claude-code"],
            "onFailure": "block"
          }
        ]
      }
    ]
  }
}

and the same entry under "PostToolUse" and "PostToolUseFailure". "args"
runs toolgate without a shell. "onFailure": "block" (Claude Code 2.1.295
and later; older releases ignore it) blocks the call when toolgate is
missing, crashes or outlives the hook's timeout: without it, or on an
older release, such a call goes through unguarded. The book's "Coming
from Claude Code / Codex" lists what each answer becomes.

The path above is this toolgate's own. `toolgate install claude-code`
writes the entries for you; `toolgate doctor` checks them.

Example:
  toolgate claude-code < examples/demo/claude-pre-force-push.json"#;

/// What differs between the agents that share this renderer.
#[derive(Clone, Copy)]
pub(super) struct Rules {
    /// `updatedInput` needs `permissionDecision: allow` beside it (Codex's
    /// schema); without it the agent's own permission rules still apply.
    pub(super) modify_with_allow: bool,
    /// A post `deny` or `replace` can rewrite the output
    /// (`updatedToolOutput`); otherwise it is `decision: block` with the
    /// reason, which the model sees instead of the output (Codex).
    pub(super) post_rewrites_output: bool,
    /// `permissionDecision: ask` is a confirmation the agent shows a person
    /// (Claude Code); otherwise an `ask` is a refusal that says one was
    /// needed (Codex's schema has no `ask`, and output it cannot read is a
    /// hook error that lets the call through).
    pub(super) asks: bool,
}

impl Rules {
    const CLAUDE_CODE: Rules = Rules {
        modify_with_allow: false,
        post_rewrites_output: true,
        asks: true,
    };
}

/// Claude Code's hook events: every one its releases 2.1.197 and 2.1.332
/// list in their settings schema (read from the binaries), and what each is
/// to toolgate ([`AgentEvent::role`]). A name outside this set is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
pub(super) enum ClaudeEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    PermissionRequest,
    PermissionDenied,
    PostToolBatch,
    PreSkillShellCommand,
    Notification,
    UserPromptSubmit,
    UserPromptExpansion,
    SessionStart,
    SessionEnd,
    Stop,
    StopFailure,
    SubagentStart,
    SubagentStop,
    PreCompact,
    PostCompact,
    PreModelSwitch,
    PostModelSwitch,
    Setup,
    TeammateIdle,
    TaskCreated,
    TaskCompleted,
    Elicitation,
    ElicitationResult,
    ConfigChange,
    WorktreeCreate,
    WorktreeRemove,
    InstructionsLoaded,
    CwdChanged,
    FileChanged,
    DirectoryAdded,
    MessageDisplay,
}

impl AgentEvent for ClaudeEvent {
    fn role(self) -> Role {
        use ClaudeEvent as E;
        match self {
            E::PreToolUse => Role::Judged(Call::Before),
            // A call whose tool failed (a command that exited non-zero) goes
            // through the post chain too, with `is_error: true`: otherwise a
            // redactor never sees `echo SECRET; exit 3`.
            E::PostToolUse => Role::Judged(Call::After),
            E::PostToolUseFailure => Role::Judged(Call::AfterFailure),
            // Judged as the call it asks permission for; answered in its own
            // form ([`permission`]), pinned live.
            E::PermissionRequest => Role::Judged(Call::Before),
            // Each carries one or more tool calls (a denied one, a batch's
            // results, a skill's shell command) that toolgate does not judge
            // there: refused rather than waved through.
            E::PermissionDenied | E::PostToolBatch | E::PreSkillShellCommand => {
                Role::ToolCallNotJudged
            }
            E::Notification
            | E::UserPromptSubmit
            | E::UserPromptExpansion
            | E::SessionStart
            | E::SessionEnd
            | E::Stop
            | E::StopFailure
            | E::SubagentStart
            | E::SubagentStop
            | E::PreCompact
            | E::PostCompact
            | E::PreModelSwitch
            | E::PostModelSwitch
            | E::Setup
            | E::TeammateIdle
            | E::TaskCreated
            | E::TaskCompleted
            | E::Elicitation
            | E::ElicitationResult
            | E::ConfigChange
            | E::WorktreeCreate
            | E::WorktreeRemove
            | E::InstructionsLoaded
            | E::CwdChanged
            | E::FileChanged
            | E::DirectoryAdded
            | E::MessageDisplay => Role::NoToolCall,
        }
    }
}

/// Reads Claude Code's hook stdin (Codex's and Qwen Code's are the same,
/// with their own events `E`).
pub(super) fn read_envelope<E: AgentEvent>(
    obj: &Map<String, Value>,
) -> Result<AgentCall, ReadAgentInputError> {
    let s = |k: &str| string_field(obj, k);
    let name = s("hook_event_name").ok_or(ReadAgentInputError::Missing("hook_event_name"))?;
    let cwd = s("cwd");
    let call = match classify::<E>(&name) {
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
    let tool = s("tool_name").ok_or(ReadAgentInputError::Missing("tool_name"))?;
    let input = obj
        .get("tool_input")
        .cloned()
        .ok_or(ReadAgentInputError::Missing("tool_input"))?;
    let result = match call {
        Call::Before => None,
        Call::After => Some(ToolResult::ok(
            obj.get("tool_response").cloned().unwrap_or(Value::Null),
        )),
        // What the model is shown for a failed call is the error text.
        Call::AfterFailure => Some(ToolResult::error(
            obj.get("error").cloned().unwrap_or(Value::Null),
        )),
    };
    Ok(AgentCall {
        hook_event_name: name,
        request: Some(Request {
            event: call.event(),
            tool,
            input,
            result,
            session_id: s("session_id"),
            turn_id: s("turn_id"),
            tool_call_id: s("tool_use_id"),
            cwd: cwd.clone(),
        }),
        cwd,
        timeout: None,
    })
}

/// The answer for an outcome, in Claude Code's format as `rules` shape it.
/// `hook_event_name` is the agent's event (`PostToolUseFailure` is answered
/// as itself).
///
/// What each answer becomes, and why (Claude Code 2.1.197 and 2.1.332, each
/// line pinned by a live test against both real CLIs in
/// `tests/all/live/claude.rs`):
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
pub(super) fn render(outcome: &Outcome, hook_event_name: &str, rules: Rules) -> Option<Value> {
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
        Event::PreToolUse | Event::ListTools => answer.pre(decision, rules),
        Event::PostToolUse if failure_event => answer.post_failure(decision),
        Event::PostToolUse => {
            let original = outcome.tool_result.as_ref().map(|r| &r.output);
            answer.post(decision, rules, original);
        }
    }
    let Rendered { mut top, specific } = answer;
    if specific.len() > 1 {
        top.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    (!top.is_empty()).then_some(Value::Object(top))
}

/// The answer to a `PermissionRequest` (Claude Code asks its hooks before
/// it would show the user a permission dialog), judged as the call it asks
/// for. toolgate never grants a permission (its allow means "no
/// objection"), so only a refusal is said: `behavior: deny` with the reason,
/// which the model reads. A rewrite cannot be said without granting (Claude
/// Code takes `updatedInput` only beside `allow`), and a replacement is not
/// the tool's to give here: both refuse, with the reason.
fn permission(decision: &Decision) -> Option<Value> {
    let message = match decision {
        Decision::Allow => return None,
        Decision::Deny { reason } => reason.clone(),
        Decision::Modify { .. } => "toolgate would rewrite this call's input, which a \
                                    permission request cannot carry without granting it, \
                                    so it is refused"
            .to_owned(),
        Decision::Replace { result } => answered_for_the_tool(&result.output),
        Decision::Ask { input: Some(_), .. } => "toolgate would ask a person about this call \
                                               rewritten, which a permission request cannot \
                                               carry, so it is refused"
            .to_owned(),
        // The permission dialog this request precedes is the confirmation.
        Decision::Ask { input: None, .. } => return None,
    };
    Some(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": message}}}),
    )
}

/// An answer being written: its top-level fields and its
/// `hookSpecificOutput`.
#[derive(Default)]
struct Rendered {
    top: Map<String, Value>,
    specific: Map<String, Value>,
}

impl Rendered {
    /// Before the call.
    fn pre(&mut self, decision: &Decision, rules: Rules) {
        let specific = &mut self.specific;
        match decision {
            Decision::Allow => {}
            Decision::Deny { reason } => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert("permissionDecisionReason".into(), json!(reason));
            }
            Decision::Modify { input } => {
                // Without a decision the agent's permission rules still
                // apply; Codex's schema takes `updatedInput` only beside
                // `allow`.
                if rules.modify_with_allow {
                    specific.insert("permissionDecision".into(), json!("allow"));
                }
                specific.insert("updatedInput".into(), input.clone());
            }
            Decision::Replace { result } => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert(
                    "permissionDecisionReason".into(),
                    json!(answered_for_the_tool(&result.output)),
                );
            }
            // Claude Code's own `ask`, with the rewrite the person is asked
            // about: its terminal shows a confirmation with the reason, and
            // where nobody can answer (`-p`, in every permission mode) it
            // refuses the call and the model reads the reason.
            Decision::Ask { reason, .. } if !rules.asks => {
                specific.insert("permissionDecision".into(), json!("deny"));
                specific.insert(
                    "permissionDecisionReason".into(),
                    json!(needs_a_person(reason)),
                );
            }
            Decision::Ask { reason, input } => {
                specific.insert("permissionDecision".into(), json!("ask"));
                specific.insert("permissionDecisionReason".into(), json!(reason));
                if let Some(input) = input {
                    specific.insert("updatedInput".into(), input.clone());
                }
            }
        }
    }

    /// After a call whose tool failed (`PostToolUseFailure`): only a block
    /// with a reason is honoured.
    fn post_failure(&mut self, decision: &Decision) {
        let reason = match decision {
            // Neither rewrite nor ask comes after the call (the chain makes
            // them failures).
            Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => return,
            Decision::Deny { reason } => withheld(reason),
            Decision::Replace { result } => format!(
                "toolgate replaced the output of this call; disregard it and use this instead: {}",
                output_text(&result.output)
            ),
        };
        self.block(reason);
    }

    /// After the call; `original` is the agent's `tool_response`.
    fn post(&mut self, decision: &Decision, rules: Rules, original: Option<&Value>) {
        match decision {
            Decision::Allow | Decision::Modify { .. } | Decision::Ask { .. } => {}
            Decision::Deny { reason } if !rules.post_rewrites_output => self.block(reason.clone()),
            Decision::Deny { reason } => {
                match original.and_then(|o| withheld_in_shape(o, &withheld(reason))) {
                    Some(shaped) => self.replace_output(shaped),
                    None => self.stop(&withheld(reason)),
                }
            }
            // Without an output replacement (Codex's strict schema): block
            // with the replacement as the reason, so the model sees only it.
            Decision::Replace { result } if !rules.post_rewrites_output => self.block(format!(
                "toolgate replaced this tool's output: {}",
                output_text(&result.output)
            )),
            Decision::Replace { result } => match in_shape(original, &result.output) {
                Some(shaped) => self.replace_output(shaped),
                None => self.stop(
                    "toolgate replaced the output of this call but cannot express the \
                     replacement in this tool's output shape, so the output is withheld",
                ),
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
