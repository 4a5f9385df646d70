//! Codex's hook protocol: Claude Code's envelope (it copied the event names,
//! `tool_input` and `hookSpecificOutput`) with a strict output schema — no
//! `ask`, no unknown fields, `updatedInput` only beside `allow`, no output
//! replacement. Blocking is exit 2 with the reason on stderr, as in Claude
//! Code; a missing, crashing or timed-out hook lets the call through
//! (0.171.0, pinned by the live tests).

use super::claude_code::{Rules, read_envelope, render};
use super::{
    AgentCall, AgentEvent, Blocked, Call, Dialect, Help, Import, Install, Layout, McpConfig,
    McpShape, ReadAgentInputError, Role, TrustStep, UserDir,
};
use crate::outcome::Outcome;
use serde_json::{Map, Value, json};
use std::time::Duration;

/// Codex.
pub(super) struct Codex;

const RULES: Rules = Rules {
    modify_with_allow: true,
    post_rewrites_output: false,
    asks: false,
};

/// Codex's hook events (0.171.0, read from its binary), and what each is to
/// toolgate. A name outside this set is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::EnumString)]
pub(super) enum CodexEvent {
    PreToolUse,
    PostToolUse,
    PermissionRequest,
    SessionStart,
    SessionEnd,
    UserPromptSubmit,
    Stop,
    PreCompact,
    PostCompact,
    SubagentStart,
    SubagentStop,
    Notification,
}

impl AgentEvent for CodexEvent {
    fn role(self) -> Role {
        use CodexEvent as E;
        match self {
            E::PreToolUse => Role::Judged(Call::Before),
            E::PostToolUse => Role::Judged(Call::After),
            // Carries the call it asks permission for; what Codex does with
            // each answer to it is not pinned live, so it is refused, not
            // judged.
            E::PermissionRequest => Role::ToolCallNotJudged,
            E::SessionStart
            | E::SessionEnd
            | E::UserPromptSubmit
            | E::Stop
            | E::PreCompact
            | E::PostCompact
            | E::SubagentStart
            | E::SubagentStop
            | E::Notification => Role::NoToolCall,
        }
    }
}

impl Dialect for Codex {
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError> {
        read_envelope::<CodexEvent>(input)
    }

    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value> {
        render(outcome, hook_event_name, RULES)
    }

    fn blocked(&self, reason: &str) -> Blocked {
        Blocked::exit_two(reason)
    }

    fn help(&self) -> Help {
        Help {
            about: "Be a Codex hook: read its stdin, run the chain, answer in Codex's stricter \
                    output schema",
            after_help: HELP.to_owned(),
        }
    }

    fn project_var(&self) -> Option<&'static str> {
        // Codex sets none; a user who sets Claude Code's still names the
        // workspace with it, as before.
        Some("CLAUDE_PROJECT_DIR")
    }

    fn default_hook_timeout(&self) -> Duration {
        Duration::from_secs(600)
    }

    fn install(&self) -> Install {
        Install {
            // None toolgate found in 0.171.0 (its `/hooks` review is the
            // trust step, checked apart).
            switches: &[],
            user_file: ".codex/hooks.json",
            user_dir: UserDir::Var {
                var: "CODEX_HOME",
                dir: ".codex",
            },
            project_file: ".codex/hooks.json",
            events: &["PreToolUse", "PostToolUse"],
            layout: Layout::Grouped { handler },
            timeout: None,
            agent_cli: "codex",
            tested_versions: &["0.171.0"],
            http: None,
            mcp: McpConfig::Servers {
                user_file: ".codex/config.toml",
                user_dir: UserDir::Var {
                    var: "CODEX_HOME",
                    dir: ".codex",
                },
                shadowed_by: &[],
                project_file: None,
                shape: McpShape::Toml,
                per_project: false,
            },
            trust: Some(TrustStep {
                fix: "open /hooks in the Codex TUI once and trust toolgate's entries: Codex skips \
                      hooks nobody reviewed, without a word in `codex exec`",
                check: None,
                project_only: false,
            }),
        }
    }

    fn import(&self) -> Import {
        Import::Unsupported(
            "importing Codex's hooks.json is not supported yet (its matchers have not been \
             observed live); write hooks.json by hand, or run `toolgate codex` as Codex's hook",
        )
    }
}

/// The handler toolgate writes into Codex's hooks.json for `argv`.
fn handler(argv: &[String]) -> Value {
    json!({"type": "command", "command": super::shell_words(argv)})
}

/// `toolgate codex --help`: where Codex reads its hooks, and that it skips
/// hooks nobody trusted.
const HELP: &str = r#"Install it by absolute path (a hook command that is not found lets calls
through) in ~/.codex/hooks.json (or $CODEX_HOME/hooks.json) for PreToolUse
and PostToolUse, then trust it once in Codex's /hooks: Codex skips hooks
nobody reviewed, without a word in `codex exec`.

{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/local/bin/toolgate codex"
          }
        ]
      }
    ]
  }
}

and the same entry under "PostToolUse". The book's "Coming from Claude
Code / Codex" lists what each answer becomes.

Example:
  toolgate codex < examples/demo/claude-pre-force-push.json"#;
