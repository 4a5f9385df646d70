//! Live: Qwen Code (`qwen -p`, approval mode `yolo`: under `-p` the default
//! mode refuses a shell call before any hook runs) against the mock chat
//! completions API, with `toolgate qwen-code` installed by absolute path in
//! the user's ~/.qwen/settings.json for PreToolUse, PostToolUse,
//! PostToolUseFailure and PostToolBatch. It runs in a subdirectory of the
//! workspace: Qwen Code exports CLAUDE_PROJECT_DIR as that directory, not
//! the project root, so toolgate must walk up to the `.toolgate/`.
//!
//! One Qwen Code session makes several scripted calls (one per model turn),
//! so each test covers several rows of the conformance table.

use super::conformance::{Row, saw_live};
use super::*;
use crate::mock_model::{MockModel, once_each};
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn qwen_bin() -> PathBuf {
    agent_bin("QWEN_CODE_VERSION", "qwen")
}

/// Qwen Code's shell tool call for `command`.
fn shell(command: &str) -> Value {
    json!({"name": "run_shell_command", "input": {"command": command}})
}

/// `toolgate qwen-code` by absolute path, with `env` set for it by Qwen Code.
fn toolgate_handler(env: Value) -> Value {
    let command = format!("{} qwen-code", env!("CARGO_BIN_EXE_toolgate"));
    json!({"type": "command", "command": command, "env": env})
}

/// The settings' `hooks`: `pre` before the call, `post` for every event
/// after it — as `toolgate install qwen-code` writes them.
fn hooks(pre: Value, post: Value) -> Value {
    let entry = |handler: &Value| json!([{"matcher": "*", "hooks": [handler]}]);
    json!({
        "PreToolUse": entry(&pre),
        "PostToolUse": entry(&post),
        "PostToolUseFailure": entry(&post),
        "PostToolBatch": entry(&post),
    })
}

/// Runs `qwen -p` in `<workspace>/sub` with these settings `hooks`, the
/// model making `calls` one per turn; returns the mock, whose requests are
/// what the model was shown.
fn qwen_with(fx: &Fixture, hooks: Value, calls: Vec<Value>) -> MockModel {
    qwen_env(fx, hooks, json!({}), calls, &[])
}

/// [`qwen_with`], with `more` added to the user's settings and these
/// variables set for Qwen Code.
fn qwen_env(
    fx: &Fixture,
    hooks: Value,
    more: Value,
    calls: Vec<Value>,
    env: &[(&str, &std::path::Path)],
) -> MockModel {
    let mock = MockModel::chat(calls);
    let mut cmd = qwen_command(fx, hooks, more, &mock, &["-p", "run the scripted commands"]);
    cmd.envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("qwen starts");
    let out = finish_within(child, Duration::from_secs(180), "qwen");
    assert!(
        out.status.success(),
        "qwen failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    mock
}

/// Qwen Code (approval mode `yolo`) with `args`, in `<workspace>/sub`,
/// against `mock`, with these settings `hooks` and `more` in the user's
/// settings.
fn qwen_command(
    fx: &Fixture,
    hooks: Value,
    more: Value,
    mock: &MockModel,
    args: &[&str],
) -> Command {
    let home = fx.dir.path().join("home");
    std::fs::create_dir_all(home.join(".qwen")).unwrap();
    let mut settings = json!({
        "security": {"auth": {"selectedType": "openai"}},
        "model": {"name": "mock"},
        "hooks": hooks,
    });
    if let (Some(settings), Some(more)) = (settings.as_object_mut(), more.as_object()) {
        settings.extend(more.clone());
    }
    std::fs::write(home.join(".qwen/settings.json"), settings.to_string()).unwrap();
    let sub = fx.workspace().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    // The user trusted this workspace's hooks (the gate has its own tests).
    crate::support::trust(&fx.workspace());
    let mut cmd = Command::new(qwen_bin());
    hermetic(&mut cmd)
        .args(args)
        .args(["--approval-mode", "yolo"])
        .current_dir(&sub)
        .env("HOME", &home)
        .env("OPENAI_BASE_URL", format!("{}/v1", mock.base_url()))
        .env("OPENAI_API_KEY", "sk-test")
        .env("OPENAI_MODEL", "mock")
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env_remove("QWEN_CODE_SYSTEM_SETTINGS_PATH")
        .env_remove("QWEN_CODE_SYSTEM_DEFAULTS_PATH");
    cmd
}

/// [`qwen_with`] with toolgate as the hook for every event.
fn qwen(fx: &Fixture, calls: Vec<Value>) -> MockModel {
    let handler = toolgate_handler(json!({}));
    qwen_with(fx, hooks(handler.clone(), handler), calls)
}

/// Records a live cell of this agent's column in the conformance table.
fn saw(row: Row, summary: &str, model_saw: Option<&str>) {
    saw_live("Qwen Code", "QWEN_CODE_VERSION", row, summary, model_saw);
}

/// The tool results the model was shown, one per scripted call, in order:
/// the `tool` messages of the last model call (the whole conversation).
/// Unlike `MockModel::tool_messages`, equal results are kept apart.
fn results(mock: &MockModel, calls: usize) -> Vec<String> {
    let requests = mock.requests();
    let last = requests.last().expect("the model was called");
    let shown: Vec<String> = last["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            parts => parts
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect();
    assert_eq!(shown.len(), calls, "{shown:#?}");
    // Every earlier model call saw a prefix of the same results.
    assert_eq!(once_each(shown.clone()), mock.tool_messages());
    shown
}

#[test]
fn live_qwen_each_answer_decides_what_the_model_sees() {
    let fx = Fixture::new();
    std::fs::write(fx.workspace().join("keep.txt"), "precious").unwrap();
    let guard = py_hook(
        &fx,
        "guard.py",
        "if 'rm ' in req['input']['command']:\n    answer = {'decision': 'deny', 'reason': 'no deleting files here'}",
    );
    let rewriter = py_hook(
        &fx,
        "rewrite.py",
        "if 'original' in req['input']['command']:\n    answer = {'decision': 'modify', 'input': dict(req['input'], command='echo rewritten > out.txt')}",
    );
    let advisor = py_hook(
        &fx,
        "advise.py",
        "if 'advise' in req['input']['command']:\n    answer = {'decision': 'allow', 'context': 'toolgate-context-marker: ' + req['event']}",
    );
    let cache = py_hook(
        &fx,
        "cache.py",
        "if 'answer-for-me' in req['input']['command']:\n    answer = {'decision': 'replace', 'result': {'output': 'cached listing: a b c', 'is_error': False}}",
    );
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "out = req['result']['output']\nif 'SECRET' in out:\n    answer = {'decision': 'deny', 'reason': 'the output held a secret'}\nelif 'long' in out:\n    answer = {'decision': 'replace', 'result': {'output': 'trimmed', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([
        {"name": "no-rm", "command": [&guard]},
        {"name": "rewriter", "command": [&rewriter]},
        {"name": "advisor", "command": [&advisor], "event": ["pre_tool_use", "post_tool_use"]},
        {"name": "cache", "command": [&cache]},
        {"name": "dlp", "command": [&dlp], "event": "post_tool_use"},
    ]));
    let calls = [
        "rm -f ../keep.txt",
        "echo original > out.txt",
        "echo advise",
        "echo answer-for-me > cached.txt",
        "echo long output",
        "echo SECRET=abc",
        "echo SECRET=abc; exit 3",
    ];
    let mock = qwen(&fx, calls.iter().map(|c| shell(c)).collect());
    let shown = results(&mock, calls.len());
    let sub = fx.workspace().join("sub");

    assert_eq!(shown[0], "no deleting files here");
    assert!(fx.workspace().join("keep.txt").exists(), "the command ran");
    saw(
        Row::Deny,
        "blocked; the model reads the bare reason",
        Some(&shown[0]),
    );

    // Qwen Code ignores `updatedInput`, so toolgate refuses the call and
    // names the rewrite; neither command ran.
    assert!(!sub.join("out.txt").exists(), "a command ran");
    assert!(
        shown[1].contains("Qwen Code cannot apply a rewrite")
            && shown[1].contains("echo rewritten > out.txt"),
        "{}",
        shown[1]
    );
    saw(
        Row::Modify,
        "refused with the rewritten input in the reason (Qwen Code ignores `updatedInput`; its own approval runs before the hook, on the original call)",
        Some(&shown[1]),
    );

    // Context after the call is appended to the result; before it, Qwen
    // Code drops it.
    assert!(
        shown[2].ends_with("\n\ntoolgate-context-marker: post_tool_use"),
        "{}",
        shown[2]
    );
    assert!(
        !mock
            .message_texts()
            .iter()
            .any(|t| t.contains("toolgate-context-marker: pre_tool_use")),
        "Qwen Code now shows context before the call: use it"
    );
    saw(
        Row::Context,
        "after the call: appended to the result; before it: dropped by Qwen Code",
        Some("toolgate-context-marker: post_tool_use"),
    );

    assert!(!sub.join("cached.txt").exists(), "the tool ran");
    assert_eq!(
        shown[3],
        "toolgate answered for the tool instead of running it: cached listing: a b c"
    );
    saw(
        Row::PreReplace,
        "refused; the replacement is the reason",
        Some(&shown[3]),
    );

    assert_eq!(shown[4], "trimmed");
    saw(
        Row::PostReplace,
        "`continue: false` + the replacement as `stopReason`: the model reads only it",
        Some(&shown[4]),
    );

    assert_eq!(
        shown[5],
        "toolgate withheld the output of this call: the output held a secret"
    );
    saw(
        Row::PostDeny,
        "`continue: false`: the model reads only the reason (the agent goes on)",
        Some(&shown[5]),
    );

    // A non-zero exit is PostToolUseFailure, where Qwen Code honours only
    // context; toolgate withholds the output at PostToolBatch.
    assert_eq!(shown[6], shown[5]);
    for text in mock.message_texts() {
        assert!(!text.contains("SECRET=abc"), "the secret reached the model");
    }
    saw(
        Row::FailedCall,
        "PostToolUseFailure honours only context; the output is withheld at PostToolBatch",
        Some(&shown[6]),
    );
}

#[test]
fn live_qwen_a_wasm_guard_and_toolgates_own_failure_block_the_call() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    let mock = qwen(&fx, vec![shell("touch ran.txt")]);
    let shown = results(&mock, 1);
    assert_eq!(shown[0], "no force-pushing from a sandbox");
    assert!(!fx.workspace().join("sub/ran.txt").exists());
    saw(
        Row::WasmGuard,
        "blocked; the model reads the reason",
        Some(&shown[0]),
    );

    // Before the call: a broken config.
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let mock = qwen(&fx, vec![shell("touch ran.txt")]);
    let before = results(&mock, 1).remove(0);
    assert!(
        before.starts_with("toolgate could not evaluate this call, so it is blocked"),
        "{before}"
    );
    assert!(!fx.workspace().join("sub/ran.txt").exists());

    // After the call: toolgate fails (a panic, injected) on every post
    // event; Qwen Code ignores exit 2 there, so the stop is on stdout.
    std::fs::remove_file(fx.workspace().join(".toolgate/hooks.json")).unwrap();
    let failing = toolgate_handler(json!({"TOOLGATE_DEBUG_FAULT": "panic"}));
    let mock = qwen_with(
        &fx,
        hooks(toolgate_handler(json!({})), failing),
        vec![shell("echo SECRET=abc"), shell("echo SECRET=abc; exit 3")],
    );
    let after = results(&mock, 2);
    for text in &after {
        assert_eq!(
            text,
            "toolgate failed (a bug: injected by TOOLGATE_DEBUG_FAULT), so this call is blocked",
            "{after:#?}"
        );
    }
    // A hang: toolgate's watchdog answers the same stop before Qwen Code's
    // own timeout (which would let the call through).
    let hanging = json!({
        "type": "command",
        "command": format!("{} qwen-code --deadline-ms 1500", env!("CARGO_BIN_EXE_toolgate")),
        "env": {"TOOLGATE_DEBUG_FAULT": "hang"},
    });
    let mock = qwen_with(
        &fx,
        hooks(hanging.clone(), hanging),
        vec![shell("touch ran.txt")],
    );
    let hung = results(&mock, 1).remove(0);
    assert!(
        hung.starts_with("toolgate did not finish within its deadline (1500 ms"),
        "{hung}"
    );
    assert!(!fx.workspace().join("sub/ran.txt").exists());
    saw(
        Row::OwnFailure,
        "a stop on stdout (exit 2 counts only before the call): refused before it, output withheld after it; a hang is answered before Qwen Code's timeout",
        Some("toolgate could not evaluate this call, so it is blocked"),
    );
}

#[test]
fn live_qwen_lets_the_call_through_when_its_hook_is_missing_crashes_or_times_out() {
    // Qwen Code has no fail-closed switch: each of these is a non-blocking
    // error, and the call runs unguarded.
    for (what, handler) in failing_hooks("qwen-code") {
        let fx = Fixture::new();
        qwen_with(
            &fx,
            hooks(handler.clone(), handler),
            vec![shell("touch ran.txt")],
        );
        assert!(fx.workspace().join("sub/ran.txt").exists(), "{what}");
    }
    saw(
        Row::Missing,
        "the call runs unguarded (Qwen Code has no fail-closed switch)",
        None,
    );
}

/// Settings written, each where, and the file that must turn toolgate
/// off (`None`: the agent calls it).
type Case<'a, T> = (&'a [(At, T)], Option<At>);

/// Where [`live_qwen_disable_all_hooks_skips_toolgate_and_doctor_says_so`]
/// writes `disableAllHooks`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum At {
    User,
    /// `.qwen/settings.json` in the folder Qwen Code starts in.
    Project,
    /// The file `QWEN_CODE_SYSTEM_SETTINGS_PATH` names.
    System,
}

/// Issue 40: `disableAllHooks`, set in the real Qwen Code in the user's,
/// the project's and the system's settings, each overriding the one
/// before as Qwen Code merges them: the guard that blocks `touch` is
/// skipped exactly when `doctor` says the agent will not call toolgate,
/// naming the file that decides.
#[test]
fn live_qwen_disable_all_hooks_skips_toolgate_and_doctor_says_so() {
    use toolgate::agent::AgentHook as _;
    let switch = toolgate::agent::Outward::QwenCode.install().switches[0];
    assert_eq!(
        switch.shown_live_by,
        Some("live_qwen_disable_all_hooks_skips_toolgate_and_doctor_says_so")
    );
    let cases: [Case<'_, bool>; 6] = [
        (&[], None),
        (&[(At::User, true)], Some(At::User)),
        (&[(At::User, true), (At::Project, false)], None),
        (&[(At::Project, true)], Some(At::Project)),
        (
            &[(At::Project, false), (At::System, true)],
            Some(At::System),
        ),
        (&[(At::User, true), (At::System, false)], None),
    ];
    for (set, off_by) in cases {
        let fx = Fixture::new();
        no_touch_guard(&fx);
        let sub = fx.workspace().join("sub");
        let home = fx.dir.path().join("home");
        let system = fx.dir.path().join("etc/settings.json");
        let path = |at: At| match at {
            At::User => home.join(".qwen/settings.json"),
            At::Project => sub.join(".qwen/settings.json"),
            At::System => system.clone(),
        };
        let mut user = json!({});
        for (at, value) in set {
            if *at == At::User {
                user["disableAllHooks"] = json!(value);
            } else {
                let file = path(*at);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, json!({"disableAllHooks": value}).to_string()).unwrap();
            }
        }
        let env: [(&str, &std::path::Path); 1] = [("QWEN_CODE_SYSTEM_SETTINGS_PATH", &system)];
        let handler = toolgate_handler(json!({}));
        let calls = vec![shell("touch ran.txt")];
        qwen_env(&fx, hooks(handler.clone(), handler), user, calls, &env);
        let ran = sub.join("ran.txt").exists();
        let report = doctor_report("qwen-code", &sub, &home, &fx, &env, &[]);
        doctor_agrees(&format!("{set:?}"), ran, &report, off_by.map(path));
    }
}

/// `toolgate mcp` between Qwen Code and server-everything, as its
/// `mcpServers` entry: each verdict of the chain reaches the model (a deny,
/// a modify, a replace, a rewritten result), and the tools the user did not
/// approve or a `list_tools` hook hid are never offered. Qwen Code names
/// an MCP tool as Claude Code does, `mcp__<server>__<tool>`.
#[test]
fn live_qwen_mcp_tools_are_guarded_through_toolgate_mcp() {
    use crate::mcp::{LIVE_CALLS, assert_live_verdicts, judged_fixture, live_server};
    let fx = judged_fixture();
    let (argv, env) = live_server(&fx);
    let calls = crate::mcp::live_calls(|tool| format!("mcp__everything__{tool}"));
    let mock = qwen_with_mcp(&fx, "everything", &argv, &env, calls);
    let told: String = mock.requests().iter().map(Value::to_string).collect();
    assert_live_verdicts(
        "Qwen Code",
        &results(&mock, LIVE_CALLS.len()),
        &told,
        "mcp__everything__echo",
    );
}

/// `toolgate mcp` between Qwen Code and a server that speaks both MCP eras
/// (the official Python SDK's): each verdict reaches the model. Qwen Code
/// 0.24.4 bundles an SDK that knows 2026-07-28, but its client opens with
/// `initialize` at 2025-11-25, which the server accepts: the session is a
/// handshake one (read from the server's side of the wire).
#[test]
fn live_qwen_mcp_to_a_server_of_both_eras_is_judged_and_speaks_the_handshake() {
    use crate::mcp_stateless::{judged, live_sdk_calls, spoken, tapped_sdk_proxy};
    let fx = judged();
    let (argv, env, wire) = tapped_sdk_proxy(&fx);
    let (calls, expected) = live_sdk_calls(|tool| format!("mcp__py__{tool}"));
    let mock = qwen_with_mcp(&fx, "py", &argv, &env, calls);
    let shown = results(&mock, 4);
    for (i, expected) in expected.iter().enumerate() {
        assert!(shown[i].contains(expected), "call {i}: {shown:#?}");
    }
    let (messages, revision) = spoken(&wire);
    assert_eq!(revision, "2025-11-25", "{messages:#?}");
}

/// [`qwen_env`] with one trusted MCP server, `name`: `argv` run with `env`.
fn qwen_with_mcp(
    fx: &Fixture,
    name: &str,
    argv: &[String],
    env: &Value,
    calls: Vec<Value>,
) -> MockModel {
    let entry = json!({"command": argv[0], "args": &argv[1..], "trust": true, "env": env});
    qwen_env(
        fx,
        json!({}),
        json!({"mcpServers": {name: entry}}),
        calls,
        &[],
    )
}

/// Runs Qwen Code's terminal interface (approval mode `yolo`, so that
/// only a hook asks) on a pseudo-terminal, scripted to make `calls`; once
/// the screen shows `needle`, types `keys`. Returns whether it saw the
/// needle, and the screen's text.
fn qwen_terminal(fx: &Fixture, calls: Vec<Value>, needle: &str, keys: &str) -> (bool, String) {
    let handler = toolgate_handler(json!({}));
    let mock = MockModel::chat(calls);
    let cmd = qwen_command(
        fx,
        hooks(handler.clone(), handler),
        json!({}),
        &mock,
        &["-i", "run the scripted commands"],
    );
    in_a_terminal(&cmd, &fx.dir.path().join("screen.txt"), needle, keys)
}

#[test]
fn live_qwen_an_ask_in_headless_mode_refuses_the_call_and_the_model_reads_why() {
    // `-p` has nobody to ask: Qwen Code refuses the call (in approval mode
    // `yolo` too) and the model reads the reason.
    let fx = Fixture::new();
    asking_guard(&fx);
    let mock = qwen(&fx, vec![shell("touch made.txt")]);
    let shown = results(&mock, 1);
    assert!(
        !fx.workspace().join("sub/made.txt").exists(),
        "the command ran"
    );
    assert_eq!(shown[0], "creating files needs a person here");
    saw(
        Row::Ask,
        "its own `ask`: a confirmation in its terminal (also in `yolo`); in `-p` the call is refused and the model reads the bare reason",
        Some(&shown[0]),
    );
}

#[test]
fn live_qwen_an_ask_is_a_confirmation_in_its_terminal_even_in_yolo_and_the_call_runs_only_on_yes() {
    for (keys, yes) in [("\\r", true), ("\\x1b", false)] {
        let fx = Fixture::new();
        asking_guard(&fx);
        let seen = qwen_terminal(
            &fx,
            vec![shell("touch made.txt")],
            "creating files needs a person here",
            keys,
        );
        let ran = fx.workspace().join("sub/made.txt").exists();
        confirmed_only_on_yes(seen, &["Doyouwanttoproceed?", "Yes,allowonce"], ran, yes);
    }
}
