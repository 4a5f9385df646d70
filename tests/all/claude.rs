//! Claude Code's protocol, inward: hooks written in Claude Code's style (bash
//! exit-2 blockers, Python JSON deciders, rewriters, output replacers) run
//! unmodified inside the chain.

use crate::support::*;
use serde_json::{Value, json};
use toolgate::{Decision, FailureKind, Request, ToolResult};

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
elif data["hook_event_name"] == "PreToolUse" and cmd.startswith("npm install") and "--ignore-scripts" not in cmd:
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
        outcome.decision,
        Decision::Deny {
            reason: "Destructive command blocked by policy".into()
        }
    );
    // Exit 0 with nothing on stdout is an allow in Claude Code's protocol.
    let outcome = runner
        .pre_tool_use(&Request::pre("Bash", json!({"command": "ls"})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
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
        outcome.decision,
        Decision::Deny {
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
        outcome.decision,
        Decision::Modify {
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
        outcome.decision,
        Decision::Replace {
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
                outcome.decision,
                Decision::Deny {
                    reason: reason.into()
                },
                "{answer}"
            ),
            None => assert_eq!(outcome.decision, Decision::Allow, "{answer}"),
        }
    }
}

/// A Claude Code hook's `ask` is toolgate's `ask` (the agent's own
/// confirmation where a person is watching, a denial saying so elsewhere);
/// `defer` is a denial. Neither is ever an allow, even from a hook that
/// fails open: they are answers, not failures.
#[tokio::test]
async fn ask_is_toolgates_ask_and_defer_a_denial_never_a_silent_allow() {
    let fx = Fixture::new();
    for decision in ["ask", "defer"] {
        let answer = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision, "permissionDecisionReason": "touches prod"}});
        let hook = fx.script("ask.sh", &answer_script(&answer));
        let mut h = cc_hook("h", &hook);
        h["on_failure"] = json!("allow");
        fx.workspace_hooks(json!([h]));
        let outcome = fx
            .runner()
            .pre_tool_use(&Request::pre("Bash", json!({})))
            .await;
        match (decision, &outcome.decision) {
            ("ask", Decision::Ask { reason, .. }) => assert_eq!(reason, "touches prod"),
            ("defer", Decision::Deny { reason }) => assert!(
                reason.contains("person") && reason.contains("touches prod"),
                "{reason}"
            ),
            (_, other) => panic!("{decision}: {other:?}"),
        }
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
    assert_eq!(outcome.decision, Decision::Allow);
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
    assert_eq!(outcome.decision, Decision::Allow);
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
    assert_eq!(outcome.decision, Decision::Allow);
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
    fx.unconfine("h");
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

// ---- outward: `toolgate claude-code` / `toolgate codex` through the binary ----

use std::process::Output;

fn agent(fx: &Fixture, dialect: &str, input: Value, env_project: bool) -> Output {
    fx.trust();
    let run = |input: &Value| {
        let mut cmd = toolgate();
        cmd.arg(dialect)
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CALLS_DIR", fx.calls_dir())
            .env_remove("CLAUDE_PROJECT_DIR");
        if env_project {
            cmd.env("CLAUDE_PROJECT_DIR", fx.workspace());
        }
        run_with_stdin(&mut cmd, &input.to_string())
    };
    // Claude Code asks about a call before it reports its result: a result
    // alone would be one toolgate never saw (tamper evidence).
    if dialect == "claude-code"
        && let Some(pre) = pre_of(&input)
    {
        run(&pre);
    }
    run(&input)
}

fn pre_input(fx: &Fixture, command: &str) -> Value {
    json!({"session_id": "s", "transcript_path": "/tmp/t.jsonl", "cwd": fx.workspace(),
           "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
           "tool_input": {"command": command}, "tool_use_id": "toolu_1"})
}

#[test]
fn toolgate_as_a_claude_code_hook_answers_in_its_format() {
    let fx = Fixture::new();
    let decide = fx.script(
        "decide.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
cmd = req["input"].get("command", "")
if "force" in cmd:
    print(json.dumps({"decision": "deny", "reason": "no force pushes"}))
elif cmd == "ls":
    print(json.dumps({"decision": "modify", "input": {"command": "ls -la"}, "context": "listing in long form"}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.workspace_hooks(json!([{"name": "policy", "command": [&decide]}, {"name": "wasm-guard", "wasm": crate::guests::path("allow")}]));

    let out = agent(
        &fx,
        "claude-code",
        pre_input(&fx, "git push --force"),
        false,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout_json(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "no force pushes"}})
    );

    let out = agent(&fx, "claude-code", pre_input(&fx, "ls"), false);
    assert_eq!(
        stdout_json(&out),
        // No permission decision: the rewrite does not approve the call.
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "updatedInput": {"command": "ls -la"}, "additionalContext": "listing in long form"}})
    );

    // A plain allow says nothing: Claude Code's own permission rules still apply.
    let out = agent(&fx, "claude-code", pre_input(&fx, "echo hi"), false);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Events toolgate has no part in pass through silently.
    let out = agent(
        &fx,
        "claude-code",
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "hi"}),
        false,
    );
    assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(0), true));
}

#[test]
fn post_replace_and_deny_map_to_claude_code_and_codex() {
    let fx = Fixture::new();
    let post = fx.script(
        "post.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
out = json.dumps(req["result"]["output"])
if "SECRET" in out:
    print(json.dumps({"decision": "replace", "result": {"output": "[redacted]", "is_error": False}}))
elif "malware" in out:
    print(json.dumps({"decision": "deny", "reason": "the output looks malicious"}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&post], "event": "post_tool_use"}]));
    // Claude Code's Bash result, as the live tests see it.
    let post_input = |response: &str| {
        json!({"session_id": "s", "cwd": "/elsewhere", "hook_event_name": "PostToolUse", "tool_name": "Bash",
               "tool_input": {"command": "env"}, "tool_use_id": "t",
               "tool_response": {"stdout": response, "stderr": "warn", "interrupted": false, "isImage": false}})
    };
    // The workspace comes from CLAUDE_PROJECT_DIR here, not the call's cwd.
    // A string replacement goes into Bash's own shape (Claude Code ignores
    // one that does not fit the tool's output schema).
    let out = agent(&fx, "claude-code", post_input("KEY=SECRET"), true);
    assert_eq!(
        stdout_json(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput":
               {"stdout": "[redacted]", "stderr": "", "interrupted": false, "isImage": false}}})
    );
    // A deny withholds the output: an interrupted command whose stderr is
    // the reason, which the model sees as an error.
    let out = agent(&fx, "claude-code", post_input("malware!"), true);
    assert_eq!(
        stdout_json(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput":
               {"stdout": "", "stderr": "toolgate withheld the output of this call: the output looks malicious",
                "interrupted": true, "isImage": false}}})
    );
    // A tool whose output shape toolgate cannot fill: the agent is stopped
    // before the model sees the output.
    let mut odd = post_input("malware!");
    odd["tool_response"] = json!({"matches": ["malware!"]});
    let out = agent(&fx, "claude-code", odd, true);
    let v = stdout_json(&out);
    assert_eq!(v["continue"], false, "{v}");
    assert!(
        v["stopReason"]
            .as_str()
            .unwrap()
            .contains("the output looks malicious")
    );

    // Codex has no output replacement in its strict schema: block with the replacement.
    let out = agent(&fx, "codex", post_input("KEY=SECRET"), true);
    let v = stdout_json(&out);
    assert_eq!(v["decision"], "block");
    assert!(v["reason"].as_str().unwrap().contains("[redacted]"));
    assert_eq!(v.as_object().unwrap().len(), 2, "only known fields: {v}");
}

#[test]
fn a_shown_replacement_that_does_not_fit_the_tools_shape_is_reshaped_or_stops_the_agent() {
    // The operator's redactor replaces a secret; a later workspace hook
    // replaces that again with JSON of another shape. Claude Code shows the
    // ORIGINAL output when `updatedToolOutput` does not fit the tool's
    // schema, so toolgate must reshape the replacement or stop the agent.
    let fx = Fixture::new();
    let redactor = fx.global_script(
        "redact.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if "SECRET" in json.dumps(req["result"]["output"]):
    print(json.dumps({"decision": "replace", "result": {"output": "[redacted]", "is_error": False}}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.global_hooks(
        json!([{"name": "redactor", "command": [&redactor], "event": "post_tool_use"}]),
    );
    let reshaper = fx.script(
        "reshape.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
out = req["result"]["output"]
shapes = {"object": {"summary": out}, "array": [out], "number": 7,
          "blocks": [{"type": "text", "text": out}]}
if out == "[redacted]":
    print(json.dumps({"decision": "replace",
                      "result": {"output": shapes[req["input"]["shape"]], "is_error": False}}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.workspace_hooks(
        json!([{"name": "reshaper", "command": [&reshaper], "event": "post_tool_use"}]),
    );
    let answer = |tool: &str, response: Value, shape: &str| {
        let input = json!({"session_id": "s", "cwd": "/elsewhere", "hook_event_name": "PostToolUse",
                           "tool_name": tool, "tool_input": {"shape": shape}, "tool_use_id": "t",
                           "tool_response": response});
        let out = agent(&fx, "claude-code", input, true);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let v = stdout_json(&out);
        assert!(
            !v.to_string().contains("SECRET"),
            "the original got through: {v}"
        );
        v
    };
    let shown = |output: Value| json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": output}});
    let bash = json!({"stdout": "KEY=SECRET", "stderr": "SECRET too", "interrupted": false, "isImage": false});
    let bash_with = |stdout: &str| json!({"stdout": stdout, "stderr": "", "interrupted": false, "isImage": false});
    // An object-shaped tool: JSON of any other shape is shown as text in its
    // text field.
    for (shape, text) in [
        ("object", r#"{"summary":"[redacted]"}"#),
        ("array", r#"["[redacted]"]"#),
        ("number", "7"),
    ] {
        assert_eq!(
            answer("Bash", bash.clone(), shape),
            shown(bash_with(text)),
            "{shape}"
        );
    }
    // A string-shaped tool: a JSON replacement is shown as its text.
    assert_eq!(
        answer("mcp__vault__read", json!("KEY=SECRET"), "object"),
        shown(json!(r#"{"summary":"[redacted]"}"#))
    );
    // A replacement in the tool's own shape goes through as it is.
    let blocks = json!([{"type": "text", "text": "KEY=SECRET"}]);
    assert_eq!(
        answer("mcp__vault__read", blocks.clone(), "blocks"),
        shown(json!([{"type": "text", "text": "[redacted]"}]))
    );
    // One that does not fit a shape toolgate cannot fill: the agent stops.
    let no_text_field = json!({"matches": ["KEY=SECRET"]});
    for (response, shape) in [(blocks, "object"), (no_text_field, "object")] {
        let v = answer("mcp__vault__read", response.clone(), shape);
        assert_eq!(v["continue"], false, "{response} / {shape}: {v}");
        assert!(v.get("hookSpecificOutput").is_none(), "{v}");
    }
}

#[test]
fn toolgates_own_failure_blocks_the_call() {
    let fx = Fixture::new();
    fx.workspace_raw(
        r#"{"schema": 1, "hooks": [{"name": "x", "command": ["x"], "timeout_ms": -1}]}"#,
    );
    for dialect in ["claude-code", "codex"] {
        let out = agent(&fx, dialect, pre_input(&fx, "ls"), false);
        assert_eq!(out.status.code(), Some(2), "{dialect}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("blocked") && err.contains("timeout_ms"),
            "{err}"
        );
    }
    let out = agent(&fx, "claude-code", json!("not an object"), false);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn import_carries_claude_code_settings_over_and_lists_the_rest() {
    let fx = Fixture::new();
    let project = fx.dir.path().join("project");
    std::fs::create_dir_all(project.join(".claude/hooks")).unwrap();
    write_executable(&project.join(".claude/hooks/block.sh"), BASH_BLOCKER);
    std::fs::write(
        project.join(".claude/hooks/ok.py"),
        "import sys; sys.exit(0)\n",
    )
    .unwrap();
    let settings = json!({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/block.sh", "timeout": 5},
                    {"type": "command", "command": "python3", "args": ["-u", ".claude/hooks/ok.py"]},
                    {"type": "http", "url": "https://example.invalid/hook"},
                    {"type": "command", "command": "true", "if": "Bash(git *)"}
                ]},
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "echo ok", "async": true}]}
            ],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "prompt", "prompt": "check it"}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo hi"}]}]
        }
    });
    std::fs::write(project.join(".claude/settings.json"), settings.to_string()).unwrap();
    let out = succeeded(
        toolgate()
            .args(["import", "claude-code"])
            .arg(project.join(".claude/settings.json")),
    );
    let report = String::from_utf8_lossy(&out.stderr);
    for needle in [
        "wrote 2 hook(s)",
        "`http` handler",
        "`if` rule",
        "`async` hook",
        "`prompt` handler",
        "UserPromptSubmit",
        "non-blocking error",
    ] {
        assert!(report.contains(needle), "missing {needle:?} in\n{report}");
    }
    let written: Value = serde_json::from_str(
        &std::fs::read_to_string(project.join(".toolgate/hooks.json")).unwrap(),
    )
    .unwrap();
    let hooks = written["hooks"].as_array().unwrap();
    assert_eq!(hooks[0]["command"], json!([".claude/hooks/block.sh"]));
    assert_eq!(
        (hooks[0]["timeout_ms"].as_u64(), hooks[0]["tools"].clone()),
        (Some(5000), json!(["Bash"]))
    );
    assert_eq!(
        hooks[1]["command"],
        json!(["python3", "-u", ".claude/hooks/ok.py"])
    );
    assert_eq!(hooks[1]["timeout_ms"], 60000);
    assert!(hooks.iter().all(|h| h["protocol"] == "claude-code"));

    // The imported chain loads and the unmodified script still blocks.
    let runner = toolgate::HookRunner::builder()
        .config({
            crate::support::trust(&project);
            crate::support::loader(&project).load().unwrap()
        })
        .build();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let outcome =
        rt.block_on(runner.pre_tool_use(&Request::pre("Bash", json!({"command": "rm -rf /"}))));
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: "Destructive command blocked by policy".into()
        }
    );

    // Importing again does not clobber the file without --force.
    let again = toolgate()
        .args(["import", "claude-code"])
        .arg(project.join(".claude/settings.json"))
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stderr).contains("--force"));
}

/// Claude Code 2.1.197's matchers, as the real CLI was seen to apply them
/// (a hook per matcher, one Bash call): a name or `|`-list of names is exact;
/// anything else is a regex searched for anywhere in the tool name.
#[tokio::test]
async fn imported_matchers_select_the_same_tools_claude_code_does() {
    use toolgate::agent::{Matcher, translate_matcher};
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "m"})),
    );
    let tools = [
        "Bash",
        "Edit",
        "Write",
        "NotebookEdit",
        "mcp__github__pr",
        "x_mcp__y",
        "Read",
    ];
    for (matcher, matched) in [
        ("*", &tools[..]),
        ("", &tools[..]),
        ("Bash", &["Bash"][..]),
        ("Bas", &[][..]),
        ("bash", &[][..]),
        ("Edit|Write", &["Edit", "Write"][..]),
        ("Foo|Bas", &[][..]),
        ("^mcp__", &["mcp__github__pr"][..]),
        ("mcp__.*", &["mcp__github__pr", "x_mcp__y"][..]),
        ("as.", &["Bash"][..]),
        ("h$", &["Bash"][..]),
        ("^ash", &[][..]),
        ("Edit$", &["Edit", "NotebookEdit"][..]),
        ("(Read)", &["Read"][..]),
    ] {
        let mut hook = json!({"name": "m", "command": [&deny]});
        match translate_matcher(matcher) {
            Matcher::All => {}
            Matcher::Tools(names) => hook["tools"] = json!(names),
            Matcher::Regex(pattern) => hook["matcher"] = json!(pattern),
            Matcher::Unsupported(why) => panic!("{matcher:?}: {why}"),
        }
        fx.workspace_hooks(json!([hook]));
        let runner = fx.runner();
        for tool in tools {
            let outcome = runner.pre_tool_use(&Request::pre(tool, json!({}))).await;
            assert_eq!(
                !outcome.may_proceed(),
                matched.contains(&tool),
                "matcher {matcher:?} on {tool}"
            );
        }
    }
    // A JavaScript regex Rust's engine does not have is reported, not guessed.
    assert!(matches!(
        translate_matcher("(?!Bash).*"),
        Matcher::Unsupported(_)
    ));
    assert!(matches!(
        translate_matcher("a)|(b"),
        Matcher::Unsupported(_)
    ));
}

#[test]
fn a_permission_request_is_never_granted_and_a_rewrite_or_replacement_refuses_it() {
    let cases = [
        (json!({"decision": "allow"}), None),
        (
            json!({"decision": "deny", "reason": "not here"}),
            Some("not here"),
        ),
        (
            json!({"decision": "modify", "input": {"command": "ls"}}),
            Some("toolgate would rewrite this call's input"),
        ),
        (
            json!({"decision": "replace", "result": {"output": "cached", "is_error": false}}),
            Some("toolgate answered for the tool instead of running it: cached"),
        ),
    ];
    for (answer, refused) in cases {
        let fx = Fixture::new();
        let hook = fx.script("answer.sh", &answer_script(&answer));
        fx.workspace_hooks(json!([{"name": "a", "command": [hook]}]));
        let mut input = pre_input(&fx, "rm -rf build");
        input["hook_event_name"] = json!("PermissionRequest");
        let out = agent(&fx, "claude-code", input, true);
        assert_eq!(out.status.code(), Some(0), "{answer}: {}", stderr(&out));
        let Some(reason) = refused else {
            assert!(
                out.stdout.is_empty(),
                "{answer}: an allow granted something"
            );
            continue;
        };
        let said = stdout_json(&out);
        let specific = &said["hookSpecificOutput"];
        assert_eq!(specific["hookEventName"], "PermissionRequest", "{said}");
        assert_eq!(specific["decision"]["behavior"], "deny", "{answer}: {said}");
        let message = specific["decision"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(reason), "{answer}: {message}");
    }
}

/// `ask` is Claude Code's own `ask`, with the rewrite a person would
/// confirm; Codex's schema has no `ask` (output it cannot read lets the
/// call through), so there it is a refusal that says a person was needed.
#[test]
fn an_ask_is_claude_codes_confirmation_and_codexs_refusal_with_the_reason() {
    let fx = Fixture::new();
    let ask = fx.script(
        "ask.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if "push" in req["input"]["command"]:
    print(json.dumps({"decision": "ask", "reason": "pushes need a person"}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    let tame = fx.script(
        "tame.sh",
        &answer_script(&json!({"decision": "modify", "input": {"command": "git push"}})),
    );
    fx.workspace_hooks(json!([
        {"name": "asker", "command": [&ask]},
        {"name": "tame", "command": [&tame]},
    ]));
    let out = agent(&fx, "claude-code", pre_input(&fx, "git push -f"), false);
    assert_eq!(
        stdout_json(&out),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
               "permissionDecision": "ask", "permissionDecisionReason": "pushes need a person",
               "updatedInput": {"command": "git push"}}})
    );
    let out = agent(&fx, "codex", pre_input(&fx, "git push -f"), false);
    let said = stdout_json(&out);
    let specific = &said["hookSpecificOutput"];
    assert_eq!(specific["permissionDecision"], "deny", "{said}");
    let reason = specific["permissionDecisionReason"].as_str().unwrap();
    assert!(
        reason.contains("confirmation") && reason.contains("pushes need a person"),
        "{reason}"
    );
}

/// Every agent but Claude Code refuses an `ask` (none of them was shown
/// to confirm one here), with the reason and the word that a person's
/// confirmation was needed: never an allow, never silence.
#[test]
fn an_ask_is_the_agents_own_where_a_person_is_really_asked_and_a_refusal_elsewhere() {
    use toolgate::agent::{Outward, render_outcome};
    let outcome = toolgate::Outcome {
        event: toolgate::Event::PreToolUse,
        decision: Decision::Ask {
            reason: "pushes need a person".into(),
            input: None,
        },
        decided_by: Some("asker".into()),
        shown: None,
        tool_result: None,
        context: None,
        runs: Vec::new(),
    };
    for &agent in Outward::ALL {
        let event = match agent {
            Outward::Gemini | Outward::QwenCode => "BeforeTool",
            Outward::Copilot => "preToolUse",
            Outward::Cursor => "beforeShellExecution",
            Outward::OpenCode => "tool.execute.before",
            Outward::ClaudeCode | Outward::Codex => "PreToolUse",
        };
        let said = render_outcome(&outcome, agent, event)
            .unwrap_or_else(|| panic!("{agent:?} said nothing"))
            .to_string();
        assert!(said.contains("pushes need a person"), "{agent:?}: {said}");
        // Each agent's answer was checked live (docs/agents.md): its own
        // `ask` only where every mode of it asks a person or refuses.
        match agent {
            Outward::ClaudeCode | Outward::QwenCode | Outward::Copilot => {
                assert!(
                    said.contains(r#""permissionDecision":"ask""#),
                    "{agent:?}: {said}"
                )
            }
            Outward::Codex | Outward::Gemini | Outward::Cursor | Outward::OpenCode => assert!(
                said.contains("confirmation") && !said.contains(r#""ask""#),
                "{agent:?}: {said}"
            ),
        }
    }
}

/// Claude Code's hook input for call `id` of session `s-t`: `event` of
/// `Bash` running `command`.
fn call_input(fx: &Fixture, event: &str, id: &str, command: &str) -> Value {
    let mut input = json!({"session_id": "s-t", "transcript_path": "/tmp/t.jsonl",
        "cwd": fx.workspace(), "hook_event_name": event, "tool_name": "Bash",
        "tool_input": {"command": command}, "tool_use_id": id});
    match event {
        "PostToolUse" => {
            input["tool_response"] = json!({"stdout": "THE-OUTPUT", "stderr": "",
                "interrupted": false, "isImage": false});
        }
        "PostToolUseFailure" => input["error"] = json!("THE-ERROR"),
        _ => {}
    }
    input
}

#[test]
fn a_result_for_a_call_toolgate_denied_or_never_saw_is_withheld_across_processes() {
    let fx = Fixture::new();
    let guard = fx.script(
        "guard.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if req["event"] == "pre_tool_use" and "touch" in req["input"]["command"]:
    print(json.dumps({"decision": "deny", "reason": "no touching"}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.workspace_hooks(json!([{"name": "guard", "command": [&guard]},
                               {"name": "post", "command": [&guard], "event": "post_tool_use"}]));
    fx.trust();
    let log = fx.dir.path().join("decisions.jsonl");
    let calls = fx.calls_dir();
    let global = fx.global();
    let server = crate::serve::Server::start_with(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", &global)
            .env("TOOLGATE_CALLS_DIR", &calls)
            .env("TOOLGATE_DECISION_LOG", &log);
    });
    // The pre in a process of its own, the post answered by the server:
    // one session, one record.
    let one_shot = |input: Value| {
        let mut cmd = toolgate();
        cmd.args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CALLS_DIR", fx.calls_dir())
            .env("TOOLGATE_DECISION_LOG", &log);
        run_with_stdin(&mut cmd, &input.to_string())
    };
    let served = |input: Value| {
        let mut cmd = server.client();
        cmd.args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CALLS_DIR", fx.calls_dir())
            .env("TOOLGATE_DECISION_LOG", &log);
        let out = run_with_stdin(&mut cmd, &input.to_string());
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    one_shot(call_input(&fx, "PreToolUse", "a", "ls"));
    let shown = served(call_input(&fx, "PostToolUse", "a", "ls"));
    assert!(!shown.contains("ran it past"), "allowed, then ran: {shown}");
    let denied = one_shot(call_input(&fx, "PreToolUse", "b", "touch x"));
    assert_eq!(denied.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&denied.stdout).contains("no touching"));
    let shown = served(call_input(&fx, "PostToolUse", "b", "touch x"));
    assert!(
        shown.contains("toolgate refused this call before it ran, and it ran anyway")
            && !shown.contains("THE-OUTPUT"),
        "{shown}"
    );
    let shown = served(call_input(&fx, "PostToolUse", "c", "ls"));
    assert!(
        shown.contains("toolgate was never asked about this call before it ran")
            && !shown.contains("THE-OUTPUT"),
        "{shown}"
    );
    // Another session's record is not this one's.
    let mut other = call_input(&fx, "PostToolUse", "a", "ls");
    other["session_id"] = json!("another");
    assert!(served(other).contains("never asked"));
    // A failed call reads as failed whoever refused it: no evidence.
    let shown = served(call_input(&fx, "PostToolUseFailure", "d", "ls"));
    assert!(!shown.contains("ran it past"), "{shown}");
    // A permission request about a call the server judged is answered in
    // its own shape, never with the answer remembered for the call.
    assert!(served(call_input(&fx, "PreToolUse", "e", "touch y")).contains("no touching"));
    let asked: Value = serde_json::from_str(&served(call_input(
        &fx,
        "PermissionRequest",
        "e",
        "touch y",
    )))
    .unwrap();
    assert_eq!(
        asked["hookSpecificOutput"]["hookEventName"], "PermissionRequest",
        "{asked}"
    );
    assert_eq!(asked["hookSpecificOutput"]["decision"]["behavior"], "deny");
    // The evidence in the decision log, once each.
    let tamper: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|l| Some(format!("{} {}", l["tool_call_id"], l.get("tamper")?)))
        .collect();
    assert_eq!(
        tamper,
        [
            r#""b" "ran_after_deny""#,
            r#""c" "never_judged""#,
            r#""a" "never_judged""#
        ]
    );
}
