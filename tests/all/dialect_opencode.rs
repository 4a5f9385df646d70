//! `toolgate opencode`: what the binary answers toolgate's OpenCode plugin
//! (integrations/opencode/toolgate.js) for each outcome, and when it cannot
//! evaluate. The plugin applies these answers as they are; what OpenCode
//! then shows the model is pinned live in `live/opencode.rs`.

use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Layout, Outward};

/// `toolgate opencode` in the fixture's workspace, with `input` on stdin.
fn opencode(fx: &Fixture, input: &Value) -> std::process::Output {
    let mut cmd = toolgate();
    cmd.arg("opencode")
        .current_dir(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global());
    run_with_stdin(&mut cmd, &input.to_string())
}

fn before(fx: &Fixture, args: Value) -> Value {
    json!({"event": "tool.execute.before", "tool": "bash", "sessionID": "ses_1",
           "callID": "call_1", "args": args, "directory": fx.workspace()})
}

fn after(fx: &Fixture, args: Value, output: Value) -> Value {
    json!({"event": "tool.execute.after", "tool": "bash", "sessionID": "ses_1",
           "callID": "call_1", "args": args, "output": output, "directory": fx.workspace()})
}

/// The answer on stdout of a run that exited 0.
fn answered(out: &std::process::Output) -> Value {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    stdout_json(out)
}

/// A workspace hook answering each command (pre) or output (post) as the
/// test says, recording what it was asked.
fn answering_hooks(fx: &Fixture) {
    let seen = fx.marker("seen-post.json");
    let pre = fx.script(
        "pre.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
c = req["input"].get("command", "")
answers = {
    "deny": {"decision": "deny", "reason": "no deleting files here", "context": "ask first"},
    "modify": {"decision": "modify", "input": {"command": "echo rewritten"}, "context": "rewritten by toolgate"},
    "modify-to-text": {"decision": "modify", "input": "echo rewritten"},
    "replace": {"decision": "replace", "result": {"output": "answered by toolgate", "is_error": False}},
    "context": {"decision": "allow", "context": "mind the rules"},
}
print(json.dumps(answers.get(c, {"decision": "allow"})))
"#,
    );
    let post = fx.script(
        "post.py",
        &r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
open(SEEN, "a").write(json.dumps(req["result"]) + "\n")
out = req["result"]["output"]
if "SECRET" in out:
    answer = {"decision": "deny", "reason": "the output held a secret"}
elif "long" in out:
    answer = {"decision": "replace", "result": {"output": "trimmed", "is_error": False}, "context": "shortened"}
else:
    answer = {"decision": "allow"}
print(json.dumps(answer))
"#
        .replace("SEEN", &format!("{:?}", seen.display().to_string())),
    );
    fx.workspace_hooks(json!([
        {"name": "pre", "command": [&pre]},
        {"name": "post", "command": [&post], "event": "post_tool_use"},
    ]));
    fx.unconfine("post");
    trust(&fx.workspace());
}

#[test]
fn each_pre_answer_is_what_the_plugin_applies() {
    let fx = Fixture::new();
    answering_hooks(&fx);
    let ask = |command: &str| answered(&opencode(&fx, &before(&fx, json!({"command": command}))));
    assert_eq!(ask("ls"), json!({"action": "allow"}));
    // The context of a refusal goes with it: no result follows it.
    assert_eq!(
        ask("deny"),
        json!({"action": "deny", "message": "no deleting files here\n\nask first"})
    );
    assert_eq!(
        ask("modify"),
        json!({"action": "modify", "args": {"command": "echo rewritten"}, "context": "rewritten by toolgate"})
    );
    // OpenCode runs a tool on an object of arguments only.
    let refused = ask("modify-to-text");
    assert_eq!(refused["action"], "deny", "{refused}");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("not an object of arguments"),
        "{refused}"
    );
    // OpenCode cannot skip a tool and show a result instead.
    assert_eq!(
        ask("replace"),
        json!({"action": "deny", "message": "toolgate answered for the tool instead of running it: answered by toolgate"})
    );
    assert_eq!(
        ask("context"),
        json!({"action": "allow", "context": "mind the rules"})
    );
}

#[test]
fn each_post_answer_is_what_the_plugin_applies_and_a_failed_command_is_an_error() {
    let fx = Fixture::new();
    answering_hooks(&fx);
    let args = json!({"command": "echo SECRET=abc; exit 3"});
    // OpenCode's bash result: the exit code only in metadata.
    let output = json!({"title": "echo", "output": "SECRET=abc\n",
                        "metadata": {"output": "SECRET=abc\n", "exit": 3, "truncated": false}});
    assert_eq!(
        answered(&opencode(&fx, &after(&fx, args, output))),
        json!({"action": "deny", "message": "toolgate withheld the output of this call: the output held a secret"})
    );
    let output = json!({"title": "echo", "output": "long output", "metadata": {"exit": 0}});
    assert_eq!(
        answered(&opencode(&fx, &after(&fx, json!({"command": "x"}), output))),
        json!({"action": "replace", "output": "trimmed", "context": "shortened"})
    );
    // An MCP tool's result is its content; the post chain sees its text.
    let output =
        json!({"content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]});
    assert_eq!(
        answered(&opencode(&fx, &after(&fx, json!({"text": "x"}), output))),
        json!({"action": "allow"})
    );
    let seen: Vec<Value> = std::fs::read_to_string(fx.marker("seen-post.json"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        seen,
        [
            json!({"output": "SECRET=abc\n", "is_error": true}),
            json!({"output": "long output", "is_error": false}),
            json!({"output": "one\ntwo", "is_error": false}),
        ]
    );
}

#[test]
fn what_toolgate_cannot_evaluate_is_a_refusal_on_stdout_and_exit_2() {
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    trust(&fx.workspace());
    let out = opencode(&fx, &before(&fx, json!({"command": "ls"})));
    assert_eq!(out.status.code(), Some(2));
    let answer = stdout_json(&out);
    assert_eq!(answer["action"], "deny");
    let message = answer["message"].as_str().unwrap();
    assert!(
        message.starts_with("toolgate could not evaluate this call, so it is blocked: "),
        "{message}"
    );
    assert_eq!(stderr(&out).trim(), message);
    // An input that is not the plugin's.
    let out = opencode(
        &fx,
        &json!({"event": "tool.execute.after", "tool": "bash", "args": {}}),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stdout_json(&out)["message"]
            .as_str()
            .unwrap()
            .contains("no `output`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_event_the_plugin_never_sends_is_refused_not_let_through() {
    let fx = Fixture::new();
    answering_hooks(&fx);
    let out = opencode(
        &fx,
        &json!({"event": "tool.execute.during", "tool": "bash", "args": {"command": "rm -rf /"}}),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let answer = stdout_json(&out);
    assert_eq!(answer["action"], "deny", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("does not know the agent event `tool.execute.during`"),
        "{answer}"
    );
}

#[test]
fn the_plugins_deadline_shortens_toolgates() {
    let fx = Fixture::new();
    let slow = fx.script(
        "slow.sh",
        "#!/bin/sh\nsleep 20\necho '{\"decision\": \"allow\"}'\n",
    );
    fx.workspace_hooks(json!([{"name": "slow", "command": [&slow], "timeout_ms": 30000}]));
    trust(&fx.workspace());
    let mut input = before(&fx, json!({"command": "ls"}));
    input["timeout_ms"] = json!(2000);
    let started = Instant::now();
    let out = opencode(&fx, &input);
    // Answered inside the plugin's 2 s, and as a refusal (the chain's own
    // deadline stopped the hook: a failed hook denies).
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let answer = stdout_json(&out);
    assert_eq!(answer["action"], "deny", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("past its deadline"),
        "{answer}"
    );
}

#[test]
fn install_writes_the_shipped_plugin_naming_this_binary() {
    let spec = Outward::OpenCode.install();
    assert_eq!(spec.user_file, ".config/opencode/plugin/toolgate.js");
    assert_eq!(spec.project_file, ".opencode/plugin/toolgate.js");
    let Layout::Plugin { source } = spec.layout else {
        panic!("{:?}", spec.layout);
    };
    let binary = "/opt/tool \"gate\"/toolgate";
    let text = source(&[binary.to_owned(), "opencode".to_owned()]);
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/opencode/toolgate.js"),
    )
    .unwrap();
    let line = "const TOOLGATE = \"toolgate\"; // toolgate-binary";
    assert!(shipped.contains(line));
    assert_eq!(
        text,
        shipped.replace(
            line,
            r#"const TOOLGATE = "/opt/tool \"gate\"/toolgate"; // toolgate-binary"#
        )
    );
    assert_eq!(
        spec.tested_versions,
        [crate::live::pinned("OPENCODE_VERSION")]
    );
}
