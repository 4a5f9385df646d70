//! Claude Code's protocol, inward: hooks written in Claude Code's style (bash
//! exit-2 blockers, Python JSON deciders, rewriters, output replacers) run
//! unmodified inside the chain.

use crate::support::*;
use serde_json::{Value, json};
use toolgate::{FailureKind, Request, ToolResult, Verdict};

fn cc_hook(name: &str, script: &str) -> Value {
    json!({"name": name, "command": [script], "protocol": "claude-code", "event": ["pre_tool_use", "post_tool_use"]})
}

const BASH_BLOCKER: &str = r#"#!/usr/bin/env bash
# A Claude Code PreToolUse hook: exit 2 blocks, stderr is the reason.
input=$(cat)
if grep -q 'rm -rf' <<<"$input"; then
  echo "Destructive command blocked by policy" >&2
  exit 2
fi
exit 0
"#;

const PY_DECIDER: &str = r#"#!/usr/bin/env python3
import json, sys
data = json.load(sys.stdin)
cmd = data.get("tool_input", {}).get("command", "")
if data["hook_event_name"] == "PreToolUse" and "curl" in cmd:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny", "permissionDecisionReason": "No network from the shell",
        "additionalContext": "use the fetch tool instead"}}))
elif data["hook_event_name"] == "PreToolUse" and cmd.startswith("npm install"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "allow", "updatedInput": dict(data["tool_input"], command=cmd + " --ignore-scripts")}}))
elif data["hook_event_name"] == "PostToolUse" and "SECRET" in json.dumps(data.get("tool_response")):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
        "updatedToolOutput": "[output redacted: it contained a secret]"}}))
sys.exit(0)
"#;

#[tokio::test]
async fn a_bash_exit_2_blocker_denies_with_its_stderr() {
    let fx = Fixture::new();
    let hook = fx.script("block.sh", BASH_BLOCKER);
    fx.workspace_hooks(json!([cc_hook("blocker", &hook)]));
    let runner = fx.runner();
    let outcome = runner
        .pre_tool_use(&Request::pre("Bash", json!({"command": "rm -rf /"})))
        .await;
    assert_eq!(
        outcome.verdict,
        Verdict::Deny {
            reason: "Destructive command blocked by policy".into()
        }
    );
    // Exit 0 with nothing on stdout is an allow in Claude Code's protocol.
    let outcome = runner
        .pre_tool_use(&Request::pre("Bash", json!({"command": "ls"})))
        .await;
    assert_eq!(outcome.verdict, Verdict::Allow);
}

#[tokio::test]
async fn a_python_json_decider_denies_rewrites_and_replaces_output() {
    let fx = Fixture::new();
    let hook = fx.script("decide.py", PY_DECIDER);
    let trace = fx.script("trace.py", TRACE_HOOK);
    fx.workspace_hooks(
        json!([cc_hook("decider", &hook), {"name": "native-after", "command": [&trace]}]),
    );
    let runner = fx.runner();

    let outcome = runner
        .pre_tool_use(&Request::pre(
            "Bash",
            json!({"command": "curl evil.example"}),
        ))
        .await;
    assert_eq!(
        outcome.verdict,
        Verdict::Deny {
            reason: "No network from the shell".into()
        }
    );
    assert_eq!(
        outcome.context.as_deref(),
        Some("use the fetch tool instead")
    );

    // updatedInput threads to the native hook after it.
    let outcome = runner
        .pre_tool_use(&Request::pre(
            "Bash",
            json!({"command": "npm install left-pad"}),
        ))
        .await;
    assert_eq!(
        outcome.verdict,
        Verdict::Modify {
            input: json!({"command": "npm install left-pad --ignore-scripts", "trace": ["native-after"]})
        }
    );

    let outcome = runner
        .post_tool_use(&Request::post(
            "Bash",
            json!({"command": "env"}),
            ToolResult::ok("API=SECRET123"),
        ))
        .await;
    assert_eq!(
        outcome.verdict,
        Verdict::Replace {
            result: ToolResult::ok("[output redacted: it contained a secret]")
        }
    );
}

#[tokio::test]
async fn legacy_decisions_and_post_blocks_are_understood() {
    let fx = Fixture::new();
    for (answer, event, expected) in [
        (
            json!({"decision": "block", "reason": "legacy no"}),
            "pre",
            Some("legacy no"),
        ),
        (json!({"decision": "approve"}), "pre", None),
        (
            json!({"decision": "block", "reason": "bad output"}),
            "post",
            Some("bad output"),
        ),
        (
            json!({"continue": false, "stopReason": "session over"}),
            "pre",
            Some("session over"),
        ),
    ] {
        let hook = fx.script("legacy.sh", &answer_script(&answer));
        fx.workspace_hooks(json!([cc_hook("h", &hook)]));
        let runner = fx.runner();
        let outcome = if event == "pre" {
            runner.pre_tool_use(&Request::pre("Bash", json!({}))).await
        } else {
            runner
                .post_tool_use(&Request::post("Bash", json!({}), ToolResult::ok("x")))
                .await
        };
        match expected {
            Some(reason) => assert_eq!(
                outcome.verdict,
                Verdict::Deny {
                    reason: reason.into()
                },
                "{answer}"
            ),
            None => assert_eq!(outcome.verdict, Verdict::Allow, "{answer}"),
        }
    }
}

#[tokio::test]
async fn ask_and_defer_become_denials_never_a_silent_allow() {
    let fx = Fixture::new();
    for decision in ["ask", "defer"] {
        let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": "touches prod"}});
        let hook = fx.script("ask.sh", &answer_script(&answer));
        // Even a hook that fails open cannot turn ask/defer into an allow:
        // they are answers, not failures.
        let mut h = cc_hook("h", &hook);
        h["on_failure"] = json!("allow");
        fx.workspace_hooks(json!([h]));
        let outcome = fx
            .runner()
            .pre_tool_use(&Request::pre("Bash", json!({})))
            .await;
        let Verdict::Deny { reason } = &outcome.verdict else {
            panic!("{decision}: {:?}", outcome.verdict)
        };
        assert!(
            reason.contains("person") && reason.contains("touches prod"),
            "{reason}"
        );
    }
}

#[tokio::test]
async fn other_exit_codes_fail_closed_unlike_claude_code() {
    let fx = Fixture::new();
    let hook = fx.script("crash.sh", "#!/bin/sh\necho oops >&2\nexit 1\n");
    fx.workspace_hooks(json!([cc_hook("h", &hook)]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("Bash", json!({})))
        .await;
    assert!(!outcome.may_proceed());
    assert_eq!(failure_kind(&outcome, "h"), FailureKind::ExitedNonZero);
    assert!(failure_message(&outcome, "h").contains("non-blocking error"));

    let mut h = cc_hook("h", &hook);
    h["on_failure"] = json!("allow");
    fx.workspace_hooks(json!([h]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("Bash", json!({})))
        .await;
    assert_eq!(outcome.verdict, Verdict::Allow);
}

#[tokio::test]
async fn plain_text_and_system_messages_reach_the_operator_not_the_model() {
    let fx = Fixture::new();
    let hook = fx.script(
        "chatty.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'checked ok'\n",
    );
    fx.workspace_hooks(json!([cc_hook("h", &hook)]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("Bash", json!({})))
        .await;
    assert_eq!(outcome.verdict, Verdict::Allow);
    assert!(outcome.context.is_none());
    assert!(
        record(&outcome, "h")
            .diagnostics
            .as_ref()
            .unwrap()
            .contains("checked ok")
    );

    let hook = fx.script(
        "sys.sh",
        &answer_script(&json!({"systemMessage": "heads up"})),
    );
    fx.workspace_hooks(json!([cc_hook("h", &hook)]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("Bash", json!({})))
        .await;
    assert_eq!(outcome.verdict, Verdict::Allow);
    assert!(
        record(&outcome, "h")
            .diagnostics
            .as_ref()
            .unwrap()
            .contains("heads up")
    );

    let hook = fx.script("bad.sh", "#!/bin/sh\necho '{not json'\n");
    fx.workspace_hooks(json!([cc_hook("h", &hook)]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("Bash", json!({})))
        .await;
    assert_eq!(failure_kind(&outcome, "h"), FailureKind::NotADecision);
}

#[tokio::test]
async fn the_hook_gets_claude_codes_stdin_and_project_dir() {
    let fx = Fixture::new();
    let dump = fx.marker("cc-input.json");
    let hook = fx.script(
        "dump.sh",
        &format!(
            "#!/bin/sh\ncat > '{}'\necho \"$CLAUDE_PROJECT_DIR\" > '{}.dir'\n",
            dump.display(),
            dump.display()
        ),
    );
    fx.workspace_hooks(json!([cc_hook("h", &hook)]));
    let mut request = Request::post(
        "Write",
        json!({"file_path": "a.txt"}),
        ToolResult::ok(json!({"success": true})),
    );
    request.session_id = Some("sess-1".into());
    request.tool_call_id = Some("toolu_01".into());
    request.cwd = Some("/repo".into());
    fx.runner().post_tool_use(&request).await;
    let got: Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    assert_eq!(
        got,
        json!({"session_id": "sess-1", "cwd": "/repo", "permission_mode": "default",
               "hook_event_name": "PostToolUse", "tool_name": "Write",
               "tool_input": {"file_path": "a.txt"}, "tool_use_id": "toolu_01",
               "tool_response": {"success": true}})
    );
    let dir = std::fs::read_to_string(format!("{}.dir", dump.display())).unwrap();
    assert_eq!(dir.trim(), fx.workspace().display().to_string());
}

#[tokio::test]
async fn protocol_is_validated() {
    let fx = Fixture::new();
    let hook = fx.script("h.sh", "#!/bin/sh\n");
    fx.workspace_hooks(json!([{"name": "h", "command": [&hook], "protocol": "claude"}]));
    let err = toolgate::Config::load(None, Some(&fx.workspace())).unwrap_err();
    assert_eq!(err.problems[0].field.as_deref(), Some("protocol"));
    assert!(err.to_string().contains("\"claude-code\""));
}
