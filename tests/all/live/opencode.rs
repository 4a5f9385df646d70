//! Live: OpenCode (`opencode run`) against a mock chat-completions API, with
//! toolgate's plugin (integrations/opencode/toolgate.js) in the project's
//! `.opencode/plugin/`, as `toolgate install opencode` writes it: naming this
//! build of `toolgate` by absolute path. Each test scripts the model's tool
//! calls in one session and asserts on the `tool` messages the model was
//! sent and on what happened on disk.
//!
//! Hermetic: OpenCode npm-installs `@opencode-ai/plugin` into every config
//! directory at startup unless it finds it installed; each is pre-seeded so
//! it finds nothing to do (no network, no minute of retries offline).

use super::conformance::{Row, saw_live};
use super::*;
use crate::mock_model::MockModel;
use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn opencode_bin() -> PathBuf {
    agent_bin("OPENCODE_VERSION", "opencode")
}

/// The plugin as shipped.
fn shipped_plugin() -> String {
    std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("integrations/opencode/toolgate.js"),
    )
    .unwrap()
}

/// The plugin naming `binary`, as install writes it.
fn plugin_for(binary: &str) -> String {
    let line = "const TOOLGATE = \"toolgate\"; // toolgate-binary";
    let text = shipped_plugin();
    assert!(
        text.contains(line),
        "the plugin names its binary on one line"
    );
    text.replacen(
        line,
        &format!("const TOOLGATE = {}; // toolgate-binary", json!(binary)),
        1,
    )
}

/// OpenCode's `permission` rule that refuses every call while toolgate's
/// plugin is not loaded (the plugin lifts it).
fn sentinel() -> Value {
    json!({"*": "deny", "toolgate plugin not loaded": "deny"})
}

/// How toolgate's plugin is wired into a run.
enum Plugin {
    /// `.opencode/plugin/toolgate.js` with this text.
    File(String),
    /// An `opencode.json` `plugin` entry: the shipped file, these options.
    Configured(Value),
}

/// Runs `opencode run` in the workspace on `calls` (`{"name", "input"}`),
/// with `permission` in its opencode.json.
fn opencode(fx: &Fixture, plugin: Plugin, permission: Value, calls: Vec<Value>) -> MockModel {
    opencode_with(fx, plugin, permission, json!({}), calls)
}

/// [`opencode`], with `more` added to its opencode.json.
fn opencode_with(
    fx: &Fixture,
    plugin: Plugin,
    permission: Value,
    more: Value,
    calls: Vec<Value>,
) -> MockModel {
    let ws = fx.workspace();
    let config_home = fx.dir.path().join("opencode-config");
    let mock = MockModel::chat(calls);
    let mut config = json!({
        "$schema": "https://opencode.ai/config.json",
        "provider": {"mock": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Mock",
            "options": {"baseURL": format!("{}/v1", mock.base_url()), "apiKey": "dummy"},
            "models": {"mock-model": {"name": "Mock"}}}},
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "autoupdate": false,
        "share": "disabled",
        "permission": permission,
    });
    if let (Some(config), Some(more)) = (config.as_object_mut(), more.as_object()) {
        config.extend(more.clone());
    }
    match plugin {
        Plugin::File(text) => {
            std::fs::create_dir_all(ws.join(".opencode/plugin")).unwrap();
            std::fs::write(ws.join(".opencode/plugin/toolgate.js"), text).unwrap();
        }
        Plugin::Configured(options) => {
            let file = fx.dir.path().join("toolgate.js");
            std::fs::write(&file, shipped_plugin()).unwrap();
            config["plugin"] = json!([[format!("file://{}", file.display()), options]]);
        }
    }
    std::fs::write(ws.join("opencode.json"), config.to_string()).unwrap();
    for dir in [ws.join(".opencode"), config_home.join("opencode")] {
        seed_plugin_dependency(&dir);
    }
    crate::support::trust(&ws);
    let mut cmd = Command::new(opencode_bin());
    hermetic(&mut cmd)
        .args(["run", "run the scripted tool calls"])
        .current_dir(&ws)
        // `opencode run` takes its project from $PWD, not from its cwd.
        .env("PWD", &ws)
        .env("XDG_CONFIG_HOME", &config_home)
        .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
        .env("OPENCODE_DISABLE_MODELS_FETCH", "1")
        .env("OPENCODE_DISABLE_LSP_DOWNLOAD", "1")
        .env("OPENCODE_DISABLE_SHARE", "1")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("opencode starts");
    let out = finish_within(child, Duration::from_secs(120), "opencode");
    // OpenCode exits 0 whatever its plugins did.
    assert!(
        out.status.success(),
        "opencode failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    mock
}

/// Makes OpenCode's startup install of `@opencode-ai/plugin` in `dir` a no-op:
/// it installs when `node_modules/` is missing or the lock file lacks a
/// dependency. toolgate's plugin imports nothing from it.
fn seed_plugin_dependency(dir: &Path) {
    std::fs::create_dir_all(dir.join("node_modules")).unwrap();
    let deps = json!({"@opencode-ai/plugin": pinned("OPENCODE_VERSION")});
    std::fs::write(
        dir.join("package.json"),
        json!({"dependencies": deps}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("package-lock.json"),
        json!({"lockfileVersion": 3, "packages": {"": {"dependencies": deps}}}).to_string(),
    )
    .unwrap();
}

fn shell(command: &str) -> Value {
    json!({"name": "bash", "input": {"command": command}})
}

/// Records a live cell of this agent's column in the conformance table.
fn saw(row: Row, summary: &str, model_saw: Option<&str>) {
    saw_live("OpenCode", "OPENCODE_VERSION", row, summary, model_saw);
}

/// The `tool` messages the model was sent, one per call, in order.
fn model_saw(mock: &MockModel, calls: usize) -> Vec<String> {
    let shown = mock.tool_messages();
    assert_eq!(shown.len(), calls, "{shown:#?}");
    shown
}

#[test]
fn live_opencode_every_answer_reaches_the_model_as_the_plugin_applies_it() {
    let fx = Fixture::new();
    let ws = fx.workspace();
    std::fs::write(ws.join("keep.txt"), "precious").unwrap();
    let guard = py_hook(
        &fx,
        "guard.py",
        "c = req['input'].get('command', '')\n\
         if 'rm ' in c:\n    answer = {'decision': 'deny', 'reason': 'no deleting files here'}\n\
         elif 'echo original' in c:\n    answer = {'decision': 'modify', 'input': dict(req['input'], command='echo rewritten > out.txt'), 'context': 'toolgate-context-marker: rewritten'}\n\
         elif 'PERMTEST' in c:\n    answer = {'decision': 'modify', 'input': dict(req['input'], command='echo forbidden-by-opencode > perm.txt')}\n\
         elif 'PREREPLACE' in c:\n    answer = {'decision': 'replace', 'result': {'output': 'answered by toolgate', 'is_error': False}}",
    );
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "out = req['result']['output']\n\
         if 'SECRET' in out:\n    answer = {'decision': 'deny', 'reason': 'the output held a secret'}\n\
         elif 'long' in out:\n    answer = {'decision': 'replace', 'result': {'output': 'trimmed', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([
        {"name": "guard", "command": [&guard], "tools": ["bash"]},
        {"name": "wasm-guard", "wasm": crate::guests::path("deny"), "tools": ["write"]},
        {"name": "dlp", "command": [&dlp], "event": "post_tool_use", "tools": ["bash"]},
    ]));
    let calls = vec![
        shell("rm -f keep.txt"),
        shell("echo original > out.txt"),
        shell("echo PERMTEST"),
        shell("echo SECRET=abc; exit 3"),
        shell("echo long output"),
        shell("echo PREREPLACE > pre.txt"),
        json!({"name": "write", "input": {"filePath": ws.join("w.txt"), "content": "x\n"}}),
    ];
    // OpenCode's own rule for the rewrite, and the sentinel the plugin lifts
    // (had it not, every call would be refused).
    let permission = json!({"bash": {"*": "allow", "echo forbidden*": "deny"}, "*": sentinel()});
    let mock = opencode(
        &fx,
        Plugin::File(plugin_for(env!("CARGO_BIN_EXE_toolgate"))),
        permission,
        calls,
    );
    let shown = model_saw(&mock, 7);

    assert_eq!(shown[0], "no deleting files here");
    assert!(ws.join("keep.txt").exists(), "the command ran");
    saw(
        Row::Deny,
        "the tool does not run; the model reads the reason as its result",
        Some(&shown[0]),
    );

    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).unwrap(),
        "rewritten\n"
    );
    assert!(
        shown[1].ends_with("\n\ntoolgate-context-marker: rewritten"),
        "{:?}",
        shown[1]
    );
    assert!(
        shown[2].contains("prevents you from using this specific tool call")
            && shown[2].contains("echo forbidden*"),
        "{}",
        shown[2]
    );
    assert!(
        !ws.join("perm.txt").exists(),
        "OpenCode ran a rewrite it denies"
    );
    saw(
        Row::Modify,
        "the rewrite runs; OpenCode's own permission rules judge the rewrite",
        None,
    );
    saw(
        Row::Context,
        "appended to the tool's result",
        Some("toolgate-context-marker: rewritten"),
    );

    assert_eq!(
        shown[3],
        "toolgate withheld the output of this call: the output held a secret"
    );
    saw(
        Row::PostDeny,
        "the model reads only the reason",
        Some(&shown[3]),
    );
    saw(
        Row::FailedCall,
        "goes through the post chain; a tool that errors gets no post hook",
        None,
    );
    assert_eq!(shown[4], "trimmed");
    saw(
        Row::PostReplace,
        "the model reads only the replacement",
        Some(&shown[4]),
    );
    assert_eq!(
        shown[5],
        "toolgate answered for the tool instead of running it: answered by toolgate"
    );
    assert!(!ws.join("pre.txt").exists(), "the tool ran");
    saw(
        Row::PreReplace,
        "refused; the model reads the replacement as the reason",
        Some(&shown[5]),
    );
    assert_eq!(shown[6], "no force-pushing from a sandbox");
    assert!(!ws.join("w.txt").exists(), "the write ran");
    saw(
        Row::WasmGuard,
        "the tool does not run; the model reads the reason",
        Some(&shown[6]),
    );
}

#[test]
fn live_opencode_blocks_the_call_when_toolgate_cannot_answer() {
    // A broken workspace config: toolgate answers, with its own failure.
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let mock = opencode(
        &fx,
        Plugin::File(plugin_for(env!("CARGO_BIN_EXE_toolgate"))),
        json!({}),
        vec![shell("touch ran.txt")],
    );
    let shown = model_saw(&mock, 1);
    assert!(
        shown[0].starts_with("toolgate could not evaluate this call, so it is blocked: "),
        "{}",
        shown[0]
    );
    assert!(!fx.workspace().join("ran.txt").exists());
    saw(
        Row::OwnFailure,
        "blocked; the model reads toolgate's reason",
        Some("toolgate could not evaluate this call, so it is blocked"),
    );

    // A toolgate that crashes, hangs past the plugin's deadline, or prints
    // garbage (the plugin's options name it: an opencode.json entry).
    let fx = Fixture::new();
    fx.script(
        "toolgate",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *CRASH*) kill -SEGV $$ ;;\n  *HANG*) sleep 30 ;;\n  *) echo 'not an answer' ;;\nesac\n",
    );
    let broken = fx.workspace().join("hooks/toolgate").display().to_string();
    let mock = opencode(
        &fx,
        Plugin::Configured(json!({"toolgate": broken, "deadline_ms": 2000})),
        json!({}),
        vec![
            shell("echo CRASH > crash.txt"),
            shell("echo HANG > hang.txt"),
            shell("echo GARBAGE > garbage.txt"),
        ],
    );
    let shown = model_saw(&mock, 3);
    let blocked = "toolgate could not evaluate this call, so it is blocked: ";
    assert_eq!(shown[0], format!("{blocked}{broken} exited 139"));
    assert_eq!(
        shown[1],
        format!("{blocked}{broken} did not answer within 2000 ms")
    );
    assert_eq!(
        shown[2],
        format!("{blocked}{broken} did not answer with one JSON answer: not an answer\n")
    );
    for file in ["crash.txt", "hang.txt", "garbage.txt"] {
        assert!(!fx.workspace().join(file).exists(), "{file}");
    }

    // No toolgate at all.
    let fx = Fixture::new();
    let mock = opencode(
        &fx,
        Plugin::File(plugin_for("/nonexistent/toolgate")),
        json!({}),
        vec![shell("touch ran.txt")],
    );
    let shown = model_saw(&mock, 1);
    assert!(
        shown[0].starts_with(&format!(
            "{blocked}/nonexistent/toolgate cannot be started: "
        )),
        "{}",
        shown[0]
    );
    assert!(!fx.workspace().join("ran.txt").exists());
    saw(
        Row::Missing,
        "the plugin blocks the call; the model reads why",
        Some("toolgate could not evaluate this call, so it is blocked"),
    );
}

#[test]
fn live_opencode_runs_unguarded_without_its_plugin_unless_the_sentinel_refuses() {
    // A plugin file that does not parse: OpenCode skips it without a word.
    let broken = format!("{}\n}} this is not javascript\n", shipped_plugin());
    let fx = Fixture::new();
    let mock = opencode(
        &fx,
        Plugin::File(broken.clone()),
        json!({}),
        vec![shell("touch ran.txt")],
    );
    model_saw(&mock, 1);
    assert!(
        fx.workspace().join("ran.txt").exists(),
        "the call was guarded"
    );

    // With the sentinel rule in its permissions, OpenCode refuses it.
    let fx = Fixture::new();
    let mock = opencode(
        &fx,
        Plugin::File(broken),
        json!({"*": sentinel()}),
        vec![shell("touch ran.txt")],
    );
    let shown = model_saw(&mock, 1);
    assert!(
        shown[0].contains("prevents you from using this specific tool call")
            && shown[0].contains("toolgate plugin not loaded"),
        "{}",
        shown[0]
    );
    assert!(!fx.workspace().join("ran.txt").exists(), "the call ran");
}

/// `toolgate mcp` between OpenCode and server-everything, as a local
/// server of its `mcp` config: each verdict of the chain reaches the model
/// (a deny, a modify, a replace, a rewritten result), and the tools the
/// user did not approve or a `list_tools` hook hid are never offered.
/// OpenCode names an MCP tool `<server>_<tool>`.
#[test]
fn live_opencode_mcp_tools_are_guarded_through_toolgate_mcp() {
    use crate::mcp::{LIVE_CALLS, assert_live_verdicts, judged_fixture, live_server};
    let fx = judged_fixture();
    let (argv, env) = live_server(&fx);
    let more = json!({"mcp": {"everything": {"type": "local", "command": argv,
        "environment": env, "enabled": true}}});
    let calls = crate::mcp::live_calls(|tool| format!("everything_{tool}"));
    let mock = opencode_with(
        &fx,
        Plugin::File(plugin_for(env!("CARGO_BIN_EXE_toolgate"))),
        json!({"*": "allow"}),
        more,
        calls,
    );
    let told: String = mock.requests().iter().map(Value::to_string).collect();
    assert_live_verdicts(
        "OpenCode",
        &model_saw(&mock, LIVE_CALLS.len()),
        &told,
        "everything_echo",
    );
}
