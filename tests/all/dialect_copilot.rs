//! `toolgate copilot` through the binary: Copilot CLI's stdin in (the
//! shapes the live runs showed: no event name, `toolArgs`, `toolResult`,
//! `error`), its flat answers out; and `toolgate import copilot`.

use crate::support::*;
use serde_json::{Value, json};
use std::process::Output;

fn copilot(fx: &Fixture, input: Value) -> Output {
    fx.trust();
    let mut cmd = toolgate();
    cmd.arg("copilot")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("COPILOT_PROJECT_DIR", fx.workspace());
    run_with_stdin(&mut cmd, &input.to_string())
}

fn pre(command: &str) -> Value {
    json!({"sessionId": "s", "timestamp": 1_796_123_927_192u64, "cwd": "/elsewhere",
           "toolName": "bash", "toolArgs": {"command": command, "description": "d"}})
}

fn post(text: &str) -> Value {
    let mut v = pre("env");
    v["toolResult"] = json!({"resultType": "success", "textResultForLlm": text});
    v
}

fn policy(fx: &Fixture) {
    let decide = fx.script(
        "decide.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
assert req["tool"] == "Bash", req
if req["event"] == "pre_tool_use":
    cmd = req["input"].get("command", "")
    if "force" in cmd:
        answer = {"decision": "deny", "reason": "no force pushes", "context": "said why"}
    elif cmd == "ls":
        answer = {"decision": "modify", "input": {"command": "ls -la"}, "context": "long form"}
    elif cmd == "ask-me":
        answer = {"decision": "ask", "reason": "a person decides this"}
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
fn toolgate_as_a_copilot_hook_answers_in_its_format() {
    let fx = Fixture::new();
    policy(&fx);
    let ok = |out: &Output| {
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout_json(out)
    };
    assert_eq!(
        ok(&copilot(&fx, pre("git push --force"))),
        json!({"permissionDecision": "deny", "permissionDecisionReason": "no force pushes",
               "additionalContext": "said why"})
    );
    // No decision beside the rewrite: Copilot's own rules still apply.
    assert_eq!(
        ok(&copilot(&fx, pre("ls"))),
        json!({"modifiedArgs": {"command": "ls -la"}, "additionalContext": "long form"})
    );
    // The replacement went through the post chain, which added context.
    assert_eq!(
        ok(&copilot(&fx, pre("cached"))),
        json!({"permissionDecision": "deny", "permissionDecisionReason":
               "toolgate answered for the tool instead of running it: a b c",
               "additionalContext": "looked at it"})
    );
    // A pass says nothing: `allow` would switch off the user's own rules.
    let out = copilot(&fx, pre("echo hi"));
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(0), true));
    // toolArgs as a JSON string is read too.
    let mut stringly = pre("x");
    stringly["toolArgs"] = json!("{\"command\": \"git push --force\"}");
    assert_eq!(ok(&copilot(&fx, stringly))["permissionDecision"], "deny");

    assert_eq!(
        ok(&copilot(&fx, post("KEY=SECRET"))),
        json!({"modifiedResult": {"resultType": "denied", "textResultForLlm":
               "toolgate withheld the output of this call: a secret"}})
    );
    assert_eq!(
        ok(&copilot(&fx, post("long output"))),
        json!({"modifiedResult": {"resultType": "success", "textResultForLlm": "trimmed"}})
    );
    assert_eq!(
        ok(&copilot(&fx, post("fine"))),
        json!({"additionalContext": "looked at it"})
    );
    // After a failed call only context is honoured: the deny says so there.
    let mut failed = pre("cat missing");
    failed["error"] = json!("SECRET in the error");
    let v = ok(&copilot(&fx, failed));
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    assert!(
        v["additionalContext"]
            .as_str()
            .unwrap()
            .starts_with("toolgate withheld the output of this call: a secret; disregard"),
        "{v}"
    );
    // Events toolgate has no part in (sessionStart) pass silently.
    let out = copilot(
        &fx,
        json!({"sessionId": "s", "timestamp": 1, "cwd": "/", "source": "new"}),
    );
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(0), true));
}

#[test]
fn an_ask_is_copilots_own_ask_unless_it_carries_a_rewrite() {
    // Its own `ask`: a confirmation in its terminal, a refusal with the
    // reason in `-p` (live::copilot).
    let fx = Fixture::new();
    policy(&fx);
    let out = copilot(&fx, pre("ask-me"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout_json(&out),
        json!({"permissionDecision": "ask", "permissionDecisionReason": "a person decides this"})
    );
    // About a rewritten call: refused, saying both.
    let fx = Fixture::new();
    rewrite_then_ask(&fx);
    let said = stdout_json(&copilot(&fx, pre("echo original")));
    assert_eq!(said["permissionDecision"], "deny", "{said}");
    let reason = said["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("needs a person's confirmation")
            && reason.contains("a person decides this")
            && reason.contains("echo rewritten"),
        "{reason}"
    );
}

#[test]
fn toolgates_own_failure_refuses_the_call_on_both_sides_with_exit_0() {
    let fx = Fixture::new();
    fx.workspace_raw(r#"{"schema": 1, "hooks": [oops]}"#);
    let out = copilot(&fx, pre("ls"));
    assert_eq!(out.status.code(), Some(0));
    let v = stdout_json(&out);
    assert_eq!(v["permissionDecision"], "deny", "{v}");
    assert_eq!(v["modifiedResult"]["resultType"], "denied", "{v}");
    assert!(
        v["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .starts_with("toolgate could not evaluate this call"),
        "{v}"
    );
    // A Claude-style (PascalCase) envelope is refused, not read as no call.
    let fx = Fixture::new();
    let out = copilot(
        &fx,
        json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}),
    );
    assert_eq!(stdout_json(&out)["permissionDecision"], "deny");
}

#[test]
fn import_carries_copilots_claude_style_hooks_and_lists_the_camel_case_ones() {
    let fx = Fixture::new();
    let project = fx.dir.path().join("project");
    std::fs::create_dir_all(project.join(".github/hooks")).unwrap();
    let settings = json!({"version": 1, "hooks": {
        "preToolUse": [{"type": "command", "bash": "./scripts/check.sh", "timeoutSec": 15}],
        "PreToolUse": [{"matcher": "bash|view", "hooks": [
            {"type": "command", "command": "python3", "args": ["-u", "guard.py"], "timeoutSec": 5}]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "python3", "args": ["audit.py"]}]}]
    }});
    let file = project.join(".github/hooks/toolgate.json");
    std::fs::write(&file, settings.to_string()).unwrap();
    let out = succeeded(
        toolgate()
            .args(["import", "copilot"])
            .arg(&file)
            .args(["-o", "-"]),
    );
    let hooks: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = hooks["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "{hooks:#?}");
    let on = |event: &str| {
        hooks
            .iter()
            .find(|h| h["event"] == event)
            .unwrap_or_else(|| panic!("no {event} hook: {hooks:#?}"))
    };
    // Copilot's names become the Claude-style ones its PascalCase mode uses.
    let pre = on("pre_tool_use");
    assert_eq!(pre["tools"], json!(["Bash", "Read"]), "{hooks:#?}");
    assert_eq!(pre["timeout_ms"], 5000);
    assert_eq!(pre["protocol"], "claude-code");
    // Copilot's default timeout, 30 s, where none is given.
    assert_eq!(on("post_tool_use")["timeout_ms"], 30000);
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains("preToolUse: 1 hook(s)"), "{report}");
    assert!(report.contains("trusted folder"), "{report}");
}
