//! Agent events toolgate does not know: refused in the agent's blocking
//! form, naming the event, whether toolgate answers itself, through a
//! running server, or over HTTP; never silence and exit 0. Known events
//! without a tool call keep their silence. Each test guards with a hook
//! that allows everything, so a block can only come from the refusal.

use crate::serve::Server;
use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use toolgate::agent::AgentHook as _;
use toolgate::agent::Outward;

/// A global hook that allows every call.
fn allow_all() -> Fixture {
    let fx = Fixture::new();
    let allow = fx.global_script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    fx.global_hooks(json!([{"name": "allow-all", "command": [allow]}]));
    fx
}

/// `dialect`'s hook input for an event named `name` that carries a shell
/// call, in the agent's envelope (an exhaustive match: a new agent says
/// what its input is). Copilot CLI names no event: its "unknown event" is a
/// tool field in none of the shapes it sends.
fn unknown_event(dialect: Outward, cwd: &Path, name: &str) -> Value {
    let command = json!({"command": "rm -rf ~"});
    match dialect {
        Outward::ClaudeCode
        | Outward::Codex
        | Outward::QwenCode
        | Outward::Gemini
        | Outward::Cursor => json!({"session_id": "s", "cwd": cwd, "hook_event_name": name,
            "tool_name": "Bash", "tool_input": command}),
        Outward::Copilot => json!({"sessionId": "s", "timestamp": 1, "cwd": cwd,
            "toolName": "bash", "toolCalls": [command]}),
        Outward::OpenCode => json!({"event": name, "directory": cwd, "tool": "bash",
            "args": command}),
    }
}

/// The name the refusal quotes for `dialect`'s unknown event `name`.
fn quoted(dialect: Outward, name: &str) -> String {
    match dialect {
        Outward::Copilot => "toolCalls".to_owned(),
        Outward::ClaudeCode
        | Outward::Codex
        | Outward::QwenCode
        | Outward::Gemini
        | Outward::Cursor
        | Outward::OpenCode => name.to_owned(),
    }
}

/// `(code, stdout, stderr)` is `dialect`'s block (its exit code, and its
/// JSON on stdout where it reads one) whose reason says toolgate does not
/// know the event `name`.
fn assert_refused(
    dialect: Outward,
    name: &str,
    (code, stdout, stderr): (Option<i32>, String, String),
) {
    let block = dialect.blocked("x");
    assert_eq!(
        code,
        Some(i32::from(block.exit)),
        "{dialect}: {stdout} {stderr}"
    );
    if let Some(want) = block.stdout {
        let got: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{dialect}: stdout is not JSON ({e}): {stdout:?}"));
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
        assert_eq!(keys(&got), keys(&want), "{dialect}: {got}");
    } else {
        assert!(stdout.trim().is_empty(), "{dialect}: {stdout}");
    }
    let said = format!("{stdout}{stderr}");
    let name = quoted(dialect, name);
    assert!(
        said.contains("does not know the agent event") && said.contains(&name),
        "{dialect}: the refusal names `{name}`: {said}"
    );
}

/// `toolgate`, answering by itself (no server) with `fx`'s configuration.
fn alone(fx: &Fixture) -> std::process::Command {
    let mut cmd = toolgate();
    cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
        .env_remove("TOOLGATE_SOCKET")
        .current_dir(fx.workspace());
    cmd
}

fn ran(
    cmd: &mut std::process::Command,
    dialect: Outward,
    input: &Value,
) -> (Option<i32>, String, String) {
    let out = run_with_stdin(cmd.arg(dialect.name()), &input.to_string());
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr(&out),
    )
}

#[test]
fn an_unknown_event_carrying_a_tool_call_is_refused_in_every_dialect() {
    let fx = allow_all();
    for &dialect in Outward::ALL {
        for name in ["PreToolUseBatch", "ToolCall"] {
            let input = unknown_event(dialect, &fx.workspace(), name);
            let answer = ran(&mut alone(&fx), dialect, &input);
            assert_refused(dialect, name, answer);
        }
    }
}

#[test]
fn an_unknown_event_is_refused_through_a_running_server_and_the_lean_client() {
    let fx = allow_all();
    let server = Server::start_for(&fx);
    for &dialect in Outward::ALL {
        let input = unknown_event(dialect, &fx.workspace(), "PreToolUseBatch");
        for mut cmd in [toolgate(), toolgate_hook()] {
            let answer = ran(
                cmd.env_remove("TOOLGATE_SERVER")
                    .env("TOOLGATE_SOCKET", server.socket())
                    .env("TOOLGATE_CONFIG_DIR", fx.global())
                    .current_dir(fx.workspace()),
                dialect,
                &input,
            );
            assert_refused(dialect, "PreToolUseBatch", answer);
        }
    }
}

#[test]
fn an_unknown_event_is_refused_over_http_in_the_form_claude_code_blocks_on() {
    let fx = allow_all();
    let server = Server::start_http(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    });
    let addr = server.http.clone().unwrap();
    for name in ["PreToolUseBatch", "PostToolBatch", "PreSkillShellCommand"] {
        let input = unknown_event(Outward::ClaudeCode, &fx.workspace(), name);
        let reply = crate::serve_http::post(&addr, &input.to_string());
        assert_eq!(reply.status, 200, "{name}: {}", reply.body);
        let answer = reply.json();
        assert_eq!(answer["decision"], "block", "{name}: {answer}");
        assert!(
            answer["reason"].as_str().unwrap_or_default().contains(name),
            "{answer}"
        );
    }
}

#[test]
fn a_known_event_carrying_a_call_toolgate_does_not_judge_is_refused() {
    let fx = allow_all();
    // Each carries a tool call (a batch's results, a skill's shell command,
    // a denied call, Cursor's per-kind shell event) toolgate does not judge
    // there.
    let cases = [
        (Outward::ClaudeCode, "PostToolBatch"),
        (Outward::ClaudeCode, "PreSkillShellCommand"),
        (Outward::ClaudeCode, "PermissionDenied"),
        (Outward::Codex, "PermissionRequest"),
        (Outward::QwenCode, "PermissionRequest"),
        (Outward::Cursor, "beforeShellExecution"),
    ];
    for (dialect, name) in cases {
        let input = unknown_event(dialect, &fx.workspace(), name);
        let (code, stdout, stderr) = ran(&mut alone(&fx), dialect, &input);
        let block = dialect.blocked("x");
        assert_eq!(
            code,
            Some(i32::from(block.exit)),
            "{dialect} {name}: {stdout} {stderr}"
        );
        let said = format!("{stdout}{stderr}");
        assert!(
            said.contains(&format!("does not judge the agent event `{name}`")),
            "{dialect} {name}: {said}"
        );
    }
}

#[test]
fn known_events_without_a_tool_call_keep_their_silence() {
    let fx = allow_all();
    let cases = [
        (
            Outward::ClaudeCode,
            json!({"hook_event_name": "SessionStart", "source": "startup"}),
        ),
        (
            Outward::ClaudeCode,
            json!({"hook_event_name": "Stop", "stop_hook_active": false}),
        ),
        (
            Outward::Codex,
            json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}),
        ),
        (
            Outward::QwenCode,
            json!({"hook_event_name": "Notification", "message": "hi"}),
        ),
        (
            Outward::Gemini,
            json!({"hook_event_name": "BeforeModel", "llm_request": {}}),
        ),
        (
            Outward::Cursor,
            json!({"hook_event_name": "beforeSubmitPrompt", "prompt": "hi"}),
        ),
        (
            Outward::Copilot,
            json!({"timestamp": 1, "cwd": "/", "prompt": "hi"}),
        ),
    ];
    for (dialect, input) in cases {
        let (code, stdout, stderr) = ran(&mut alone(&fx), dialect, &input);
        assert_eq!(
            (code, stdout.as_str()),
            (Some(0), ""),
            "{dialect} {input}: {stderr}"
        );
    }
}

#[test]
fn a_permission_request_toolgate_cannot_evaluate_is_refused_in_its_own_form_over_http() {
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let server = Server::start_http(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    });
    let addr = server.http.clone().unwrap();
    let input = unknown_event(Outward::ClaudeCode, &fx.workspace(), "PermissionRequest");
    let answer = crate::serve_http::post(&addr, &input.to_string()).json();
    let specific = &answer["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], "PermissionRequest", "{answer}");
    assert_eq!(specific["decision"]["behavior"], "deny", "{answer}");
    assert!(
        specific["decision"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("toolgate could not evaluate this call"),
        "{answer}"
    );
}
