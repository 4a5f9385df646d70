//! `toolgate cursor` against Cursor's documented hook schema
//! (cursor.com/docs/hooks): Cursor's CLI is on no registry the tests can
//! reach, so these are its conformance cells, marked not verified live.

use crate::live::conformance::{Cell, Row, record};
use crate::support::*;
use serde_json::{Value, json};
use std::process::Output;

fn cursor(fx: &Fixture, input: Value) -> Output {
    fx.trust();
    let mut cmd = toolgate();
    cmd.arg("cursor")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("CURSOR_PROJECT_DIR", fx.workspace());
    let out = run_with_stdin(&mut cmd, &input.to_string());
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The common fields every Cursor hook gets, and the event's own.
fn input(event: &str, tool: &str, tool_input: Value, extra: Value) -> Value {
    let mut v = json!({"conversation_id": "c", "generation_id": "g", "model": "default",
        "hook_event_name": event, "cursor_version": "1.7.2", "workspace_roots": ["/elsewhere"],
        "user_email": null, "transcript_path": null, "tool_name": tool, "tool_input": tool_input,
        "tool_use_id": "abc123", "cwd": ""});
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v
}

fn shell(command: &str) -> Value {
    input(
        "preToolUse",
        "Shell",
        json!({"command": command, "working_directory": "/project"}),
        json!({}),
    )
}

fn post_shell(stdout: &str) -> Value {
    let output = json!({"exitCode": 0, "stdout": stdout}).to_string();
    input(
        "postToolUse",
        "Shell",
        json!({"command": "env"}),
        json!({"tool_output": output, "duration": 5}),
    )
}

fn saw(row: Row, summary: &str, model_saw: Option<&str>) {
    record(
        "Cursor (documented schema)",
        row,
        Cell {
            summary,
            model_saw,
            live: false,
        },
    );
}

fn policy(fx: &Fixture) {
    let decide = fx.script(
        "decide.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if req["event"] == "pre_tool_use":
    cmd = req["input"].get("command", "")
    if "force" in cmd:
        answer = {"decision": "deny", "reason": "no force pushes"}
    elif cmd == "ls":
        answer = {"decision": "modify", "input": {"command": "ls -la"}, "context": "long form"}
    elif cmd == "cached":
        answer = {"decision": "replace", "result": {"output": "a b c", "is_error": False}}
    else:
        answer = {"decision": "allow"}
else:
    out = json.dumps(req["result"]["output"])
    if "SECRET" in out:
        answer = {"decision": "deny", "reason": "a secret"}
    elif "long" in out:
        answer = {"decision": "replace", "result": {"output": "trimmed", "is_error": False}}
    else:
        answer = {"decision": "allow", "context": "looked at it"}
print(json.dumps(answer))
"#,
    );
    fx.workspace_hooks(json!([{"name": "policy", "command": [&decide],
                                "event": ["pre_tool_use", "post_tool_use"]}]));
}

#[test]
fn toolgate_as_a_cursor_hook_answers_in_its_documented_format() {
    let fx = Fixture::new();
    policy(&fx);
    let deny = stdout_json(&cursor(&fx, shell("git push --force")));
    assert_eq!(
        deny,
        json!({"permission": "deny", "user_message": "no force pushes", "agent_message": "no force pushes"})
    );
    saw(
        Row::Deny,
        "permission: deny; the reason in user_message and agent_message",
        Some("no force pushes"),
    );
    let modify = stdout_json(&cursor(&fx, shell("ls")));
    assert_eq!(
        modify,
        json!({"permission": "allow", "updated_input": {"command": "ls -la"}})
    );
    saw(
        Row::Modify,
        "updated_input beside permission: allow (context dropped: preToolUse takes none)",
        None,
    );
    saw(
        Row::Context,
        "after a call: additional_context; before one, no field (dropped)",
        Some("looked at it"),
    );
    let replace = stdout_json(&cursor(&fx, shell("cached")));
    assert_eq!(replace["permission"], "deny");
    let reason = "toolgate answered for the tool instead of running it: a b c";
    assert!(
        replace["agent_message"]
            .as_str()
            .unwrap()
            .starts_with(reason),
        "{replace}"
    );
    saw(
        Row::PreReplace,
        "refused; the reason carries the replacement",
        Some(reason),
    );
    // Every answer is printed: with failClosed, an empty answer blocks.
    assert_eq!(
        stdout_json(&cursor(&fx, shell("echo hi"))),
        json!({"permission": "allow"})
    );

    // After the call: only an MCP tool's output can be replaced; the model
    // is also told, for the tools whose output cannot be.
    let v = stdout_json(&cursor(&fx, post_shell("KEY=SECRET")));
    assert_eq!(
        v["updated_mcp_tool_output"],
        json!({"content": [{"type": "text", "text": "toolgate withheld the output of this call: a secret"}]})
    );
    assert!(
        v["additional_context"]
            .as_str()
            .unwrap()
            .contains("disregard the output"),
        "{v}"
    );
    saw(
        Row::PostDeny,
        "MCP tools: output replaced by the reason; other tools: only additional_context telling \
         the model to disregard it",
        Some("toolgate withheld the output of this call: a secret"),
    );
    let v = stdout_json(&cursor(&fx, post_shell("long output")));
    assert_eq!(
        v["updated_mcp_tool_output"],
        json!({"content": [{"type": "text", "text": "trimmed"}]})
    );
    saw(
        Row::PostReplace,
        "MCP tools: updated_mcp_tool_output; other tools: only additional_context",
        Some("trimmed"),
    );
    assert_eq!(
        stdout_json(&cursor(&fx, post_shell("fine"))),
        json!({"additional_context": "looked at it"})
    );
    // After a failed call Cursor reads no answer.
    let failed = input(
        "postToolUseFailure",
        "Shell",
        json!({"command": "false"}),
        json!({"error_message": "exit 1", "failure_type": "error", "duration": 1, "is_interrupt": false}),
    );
    assert_eq!(stdout_json(&cursor(&fx, failed)), json!({}));
    saw(
        Row::FailedCall,
        "postToolUseFailure takes no answer: the post chain runs, nothing is honoured",
        None,
    );
    // Events toolgate has no part in pass silently.
    let out = cursor(
        &fx,
        json!({"hook_event_name": "stop", "status": "completed", "loop_count": 0}),
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn a_wasm_guard_and_toolgates_own_failure_refuse_the_call() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    let v = stdout_json(&cursor(&fx, shell("ls")));
    assert_eq!(v["permission"], "deny");
    assert_eq!(v["agent_message"], "no force-pushing from a sandbox");
    saw(
        Row::WasmGuard,
        "permission: deny with the reason",
        Some("no force-pushing from a sandbox"),
    );

    fx.workspace_raw(r#"{"schema": 1, "hooks": [oops]}"#);
    let v = stdout_json(&cursor(&fx, shell("ls")));
    assert_eq!(v["permission"], "deny", "{v}");
    let prefix = "toolgate could not evaluate this call, so it is blocked";
    assert!(
        v["agent_message"].as_str().unwrap().starts_with(prefix),
        "{v}"
    );
    saw(
        Row::OwnFailure,
        "permission: deny printed with exit 0",
        Some(prefix),
    );
    saw(
        Row::Missing,
        "installed with failClosed: true, which Cursor documents as blocking a hook that \
         crashes, times out or prints invalid JSON",
        None,
    );
}

#[test]
fn install_spec_fails_closed_and_import_lists_what_it_cannot_run() {
    let fx = Fixture::new();
    let file = fx.dir.path().join("hooks.json");
    let settings = json!({"version": 1, "hooks": {
        "preToolUse": [{"command": ".cursor/hooks/guard.sh", "matcher": "Shell", "failClosed": true}],
        "beforeShellExecution": [{"command": "./audit.sh"}]}});
    std::fs::write(&file, settings.to_string()).unwrap();
    let out = succeeded(
        toolgate()
            .args(["import", "cursor"])
            .arg(&file)
            .args(["-o", "-"]),
    );
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(
        report.contains("preToolUse[0]: \".cursor/hooks/guard.sh\", matcher \"Shell\""),
        "{report}"
    );
    assert!(report.contains("beforeShellExecution[0]"), "{report}");
    assert!(report.contains("trusted workspace"), "{report}");
}
