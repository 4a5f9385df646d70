//! Live: GitHub Copilot CLI (`copilot -p`) against a mock chat-completions
//! API (Copilot's bring-your-own-model mode, `COPILOT_PROVIDER_BASE_URL`,
//! offline: no GitHub sign-in, no network), with `toolgate copilot`
//! installed as the user's hook (`~/.copilot/hooks/toolgate.json`, the exec
//! form) by absolute path. One Copilot session runs several scripted tool
//! calls where it can, to keep the module short.

use super::conformance::{Row, saw_live};
use super::*;
use crate::mock_model::MockModel;
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn copilot_bin() -> PathBuf {
    agent_bin("COPILOT_VERSION", "copilot")
}

/// Where tests/agents/install.sh unpacked Copilot's program (it unpacks
/// ~235 MB on first run, into a fresh cache per run otherwise).
fn package_cache() -> PathBuf {
    let bin = copilot_bin();
    // <prefix>/node_modules/.bin/copilot
    let prefix = bin.ancestors().nth(3).expect("the prefix").to_path_buf();
    prefix.join("pkg-cache")
}

/// The handler that runs `toolgate copilot`, as `toolgate install` writes it.
fn toolgate_handler(extra: &[&str]) -> Value {
    let mut args = vec!["copilot"];
    args.extend(extra);
    json!({"type": "command", "exec": env!("CARGO_BIN_EXE_toolgate"), "args": args, "timeoutSec": 30})
}

/// A scripted `bash` call.
fn sh(command: &str) -> Value {
    json!({"name": "bash", "input": {"command": command, "description": "scripted"}})
}

/// Runs `copilot -p` in the workspace on `calls` with `handler` as the hook
/// for every tool event; `flags` are Copilot's permission flags.
fn copilot_with(fx: &Fixture, handler: Value, calls: Vec<Value>, flags: &[&str]) -> MockModel {
    copilot_env(fx, handler, calls, flags, &[])
}

fn copilot_env(
    fx: &Fixture,
    handler: Value,
    calls: Vec<Value>,
    flags: &[&str],
    env: &[(&str, &str)],
) -> MockModel {
    let mock = MockModel::chat(calls);
    let mut cmd = copilot_command(fx, handler, &mock, &["-p", "run the scripted commands"]);
    cmd.args(flags)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("copilot starts");
    let out = finish_within(child, Duration::from_secs(120), "copilot");
    assert!(
        out.status.success(),
        "copilot failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    mock
}

/// Copilot CLI with `args`, in the workspace, against `mock`, with
/// `handler` as the hook for every tool event.
fn copilot_command(fx: &Fixture, handler: Value, mock: &MockModel, args: &[&str]) -> Command {
    let home = fx.dir.path().join("copilot-home");
    let hooks = home.join(".copilot/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let events = json!({"preToolUse": [handler], "postToolUse": [handler],
        "postToolUseFailure": [handler]});
    std::fs::write(
        hooks.join("toolgate.json"),
        json!({"version": 1, "hooks": events}).to_string(),
    )
    .unwrap();
    crate::support::trust(&fx.workspace());
    let mut cmd = Command::new(copilot_bin());
    hermetic(&mut cmd)
        .args(args)
        .arg("--no-auto-update")
        .current_dir(fx.workspace())
        .env("HOME", &home)
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env("COPILOT_PKG_CACHE_HOME", package_cache())
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("{}/v1", mock.base_url()),
        )
        .env("COPILOT_PROVIDER_API_KEY", "dummy")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("TOOLGATE_CONFIG_DIR", fx.global());
    cmd
}

/// `toolgate copilot` as the hook, every tool allowed by Copilot's rules.
fn copilot(fx: &Fixture, calls: Vec<Value>) -> MockModel {
    copilot_with(fx, toolgate_handler(&[]), calls, &["--allow-all-tools"])
}

/// Records a live cell of this agent's column in the conformance table.
fn saw(row: Row, summary: &str, model_saw: Option<&str>) {
    saw_live(
        "GitHub Copilot CLI",
        "COPILOT_VERSION",
        row,
        summary,
        model_saw,
    );
}

/// The `tool` messages the model was shown, in order.
fn tool_messages(mock: &MockModel, n: usize) -> Vec<String> {
    let shown = mock.tool_messages();
    assert_eq!(shown.len(), n, "{shown:#?}");
    shown
}

#[test]
fn live_copilot_pre_deny_modify_and_context() {
    let fx = Fixture::new();
    let seen = fx.marker("pre-saw.json");
    let guard = py_hook(
        &fx,
        "guard.py",
        &format!(
            "open({:?}, 'a').write(json.dumps(req) + '\\n')\n\
             cmd = req['input'].get('command', '')\n\
             if 'rm ' in cmd:\n    answer = {{'decision': 'deny', 'reason': 'no deleting files here'}}\n\
             elif 'original' in cmd:\n    answer = {{'decision': 'modify', 'input': {{'command': 'echo rewritten > out.txt; echo REWRITTEN'}}}}\n\
             elif cmd == 'ls':\n    answer = {{'decision': 'allow', 'context': 'toolgate-context-marker: prefer ls -1'}}",
            seen.display().to_string()
        ),
    );
    fx.workspace_hooks(json!([{"name": "guard", "command": [&guard]}]));
    fx.unconfine("guard");
    std::fs::write(fx.workspace().join("keep.txt"), "precious").unwrap();
    let mock = copilot(
        &fx,
        vec![
            sh("rm -f keep.txt"),
            sh("echo original > out.txt"),
            sh("ls"),
        ],
    );
    let shown = tool_messages(&mock, 3);
    assert_eq!(
        shown[0],
        "Denied by preToolUse hook: no deleting files here"
    );
    assert!(fx.workspace().join("keep.txt").exists(), "the command ran");
    saw(
        Row::Deny,
        "blocked; the model reads the reason",
        Some(&shown[0]),
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace().join("out.txt")).unwrap(),
        "rewritten\n"
    );
    assert!(shown[1].starts_with("REWRITTEN"), "{}", shown[1]);
    let texts = mock.message_texts();
    let context = "Additional context from preToolUse hook:\ntoolgate-context-marker: prefer ls -1";
    assert!(texts.iter().any(|t| t == context), "{texts:#?}");
    saw(
        Row::Context,
        "a user message after the tool's result",
        Some(context),
    );
    // Copilot names the tool `bash`; toolgate calls it `Bash`, as Copilot's
    // own Claude-compatible mode does, and Copilot passes no call id.
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&seen)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(first["tool"], "Bash", "{first}");
    assert_eq!(first["input"]["command"], "rm -f keep.txt", "{first}");

    // The rewrite did not approve the call: Copilot's own rules still
    // refuse a rewritten command they deny.
    let mock = copilot_with(
        &fx,
        toolgate_handler(&[]),
        vec![sh("echo original > out.txt")],
        &["--allow-all-tools", "--deny-tool", "shell(echo)"],
    );
    let shown = tool_messages(&mock, 1);
    assert!(
        shown[0].contains("denied due to the following rules"),
        "{shown:#?}"
    );
    saw(
        Row::Modify,
        "the rewritten call runs; Copilot still applies its own permission rules to it",
        None,
    );
}

#[test]
fn live_copilot_pre_replace_refuses_the_call_with_the_replacement() {
    let fx = Fixture::new();
    let cache = py_hook(
        &fx,
        "cache.py",
        "answer = {'decision': 'replace', 'result': {'output': 'cached listing: a b c', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([{"name": "cache", "command": [&cache]}]));
    let mock = copilot(&fx, vec![sh("touch ran.txt")]);
    let shown = tool_messages(&mock, 1);
    assert!(!fx.workspace().join("ran.txt").exists(), "the tool ran");
    assert_eq!(
        shown[0],
        "Denied by preToolUse hook: toolgate answered for the tool instead of running it: \
         cached listing: a b c"
    );
    saw(
        Row::PreReplace,
        "refused; the reason carries the replacement (a hook cannot answer for a tool)",
        Some(&shown[0]),
    );
}

#[test]
fn live_copilot_post_deny_and_replace_decide_what_the_model_sees() {
    let fx = Fixture::new();
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "out = req['result']['output']\nif 'SECRET' in out:\n    answer = {'decision': 'deny', 'reason': 'the output held a secret'}\nelif 'long' in out:\n    answer = {'decision': 'replace', 'result': {'output': 'trimmed', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&dlp], "event": "post_tool_use"}]));
    // A command that exits non-zero is a successful call to Copilot (its
    // exit code is in the text): it goes through the post chain too.
    let mock = copilot(
        &fx,
        vec![sh("echo SECRET=abc; exit 3"), sh("echo long output")],
    );
    let shown = tool_messages(&mock, 2);
    assert_eq!(
        shown[0],
        "toolgate withheld the output of this call: the output held a secret"
    );
    saw(
        Row::PostDeny,
        "the model reads only the reason (modifiedResult)",
        Some(&shown[0]),
    );
    saw(
        Row::FailedCall,
        "a non-zero exit is a success to Copilot: it goes through the post chain; deny and \
         replace work",
        None,
    );
    assert_eq!(shown[1], "trimmed");
    saw(
        Row::PostReplace,
        "the model reads only the replacement (modifiedResult)",
        Some(&shown[1]),
    );
}

#[test]
fn live_copilot_a_wasm_guard_and_toolgates_own_failure_block_the_call() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    let mock = copilot(&fx, vec![sh("touch ran.txt")]);
    let shown_ = tool_messages(&mock, 1);
    assert_eq!(
        shown_[0],
        "Denied by preToolUse hook: no force-pushing from a sandbox"
    );
    assert!(!fx.workspace().join("ran.txt").exists());
    saw(
        Row::WasmGuard,
        "blocked; the model reads the reason",
        Some(&shown_[0]),
    );

    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let mock = copilot(&fx, vec![sh("touch ran.txt")]);
    let shown_ = tool_messages(&mock, 1);
    let prefix =
        "Denied by preToolUse hook: toolgate could not evaluate this call, so it is blocked";
    assert!(shown_[0].starts_with(prefix), "{shown_:#?}");
    assert!(!fx.workspace().join("ran.txt").exists());
    saw(
        Row::OwnFailure,
        "a refusal printed with exit 0: blocked; the model reads toolgate's reason",
        Some(prefix),
    );
}

#[test]
fn live_copilot_blocks_when_its_hook_is_missing_or_crashes_but_not_when_it_hangs() {
    let errored = "Denied by preToolUse hook from";
    for (what, handler) in [
        (
            "missing",
            json!({"type": "command", "exec": "/nonexistent/toolgate", "args": ["copilot"]}),
        ),
        (
            "crashed",
            json!({"type": "command", "exec": "sh", "args": ["-c", "exit 1"]}),
        ),
    ] {
        let fx = Fixture::new();
        let mock = copilot_with(
            &fx,
            handler,
            vec![sh("touch ran.txt")],
            &["--allow-all-tools"],
        );
        let shown = tool_messages(&mock, 1);
        assert!(
            shown[0].starts_with(errored) && shown[0].ends_with("(hook errored)"),
            "{what}: {shown:#?}"
        );
        assert!(!fx.workspace().join("ran.txt").exists(), "{what}");
    }
    // A hook that outlives its timeoutSec is let through…
    let fx = Fixture::new();
    copilot_with(
        &fx,
        json!({"type": "command", "exec": "sleep", "args": ["20"], "timeoutSec": 1}),
        vec![sh("touch ran.txt")],
        &["--allow-all-tools"],
    );
    assert!(fx.workspace().join("ran.txt").exists(), "timed out");
    // …so toolgate answers first: hung (a fault injected in debug builds),
    // its own deadline blocks the call before Copilot's timeout.
    let fx = Fixture::new();
    let mut handler = toolgate_handler(&["--deadline-ms", "1000"]);
    handler["timeoutSec"] = json!(10);
    let mock = copilot_env(
        &fx,
        handler,
        vec![sh("touch ran.txt")],
        &["--allow-all-tools"],
        &[("TOOLGATE_DEBUG_FAULT", "hang")],
    );
    let shown = tool_messages(&mock, 1);
    assert!(
        shown[0]
            .starts_with("Denied by preToolUse hook: toolgate did not finish within its deadline"),
        "{shown:#?}"
    );
    assert!(!fx.workspace().join("ran.txt").exists(), "hung toolgate");
    saw(
        Row::Missing,
        "missing or crashing: blocked (\"hook errored\"); a hook past timeoutSec is let \
         through, so toolgate's own deadline answers \"blocked\" first",
        Some(errored),
    );
}

/// Issue 40: Copilot CLI 1.0.102 lists `disableAllHooks` among its
/// settings ("Disable all hooks, both user-level and repo-level") and its
/// hook files accept it, but set in each place it could be read from, the
/// real agent still runs toolgate's hook (the guard blocks `touch`): so
/// doctor has no switch to flag for Copilot, and says the agent calls
/// toolgate. A release that starts honouring one fails here, and the
/// switch goes into its spec.
#[test]
fn live_copilot_runs_toolgate_despite_disable_all_hooks_in_every_file_it_might_read() {
    use toolgate::agent::AgentHook as _;
    assert!(
        toolgate::agent::Outward::Copilot
            .install()
            .switches
            .is_empty()
    );
    let cases: &[(&str, &str)] = &[
        ("", ""),
        (".copilot/settings.json", r#"{"disableAllHooks": true}"#),
        (".copilot/config.json", r#"{"disableAllHooks": true}"#),
        (
            ".copilot/hooks/other.json",
            r#"{"version": 1, "hooks": {}, "disableAllHooks": true}"#,
        ),
        (
            "workspace:.github/hooks/x.json",
            r#"{"version": 1, "hooks": {}, "disableAllHooks": true}"#,
        ),
        (
            "workspace:.github/copilot/settings.json",
            r#"{"disableAllHooks": true}"#,
        ),
    ];
    for (file, text) in cases {
        let fx = Fixture::new();
        no_touch_guard(&fx);
        let user_home = fx.dir.path().join("copilot-home");
        if !text.is_empty() {
            let path = match file.strip_prefix("workspace:") {
                Some(rest) => fx.workspace().join(rest),
                None => user_home.join(file),
            };
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
        }
        copilot(&fx, vec![sh("touch ran.txt")]);
        assert!(
            !fx.workspace().join("ran.txt").exists(),
            "{file}: Copilot CLI skipped toolgate: it honours disableAllHooks there now"
        );
        let report = doctor_report("copilot", &fx.workspace(), &user_home, &fx, &[], &[]);
        assert_eq!(report["called"], true, "{file}: {report:#}");
    }
}

/// `toolgate mcp` between Copilot CLI and server-everything, from the
/// `~/.copilot/mcp-config.json` that `toolgate install copilot --mcp`
/// rewrote: each verdict of the chain reaches the model (a deny, a modify,
/// a replace, a rewritten result), and the tools the user did not approve
/// or a `list_tools` hook hid are never offered.
#[test]
fn live_copilot_mcp_tools_are_guarded_through_the_entry_install_mcp_wrote() {
    use crate::mcp::{LIVE_CALLS, assert_live_verdicts, everything, judged_fixture, live_server};
    let fx = judged_fixture();
    let (_, env) = live_server(&fx);
    let home = fx.dir.path().join("copilot-home");
    std::fs::create_dir_all(home.join(".copilot")).unwrap();
    let config = home.join(".copilot/mcp-config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"everything": {"type": "local", "command": everything(),
            "args": ["stdio"], "tools": ["*"], "env": env}}})
        .to_string(),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_toolgate"))
        .args(["install", "copilot", "--mcp"])
        .env("HOME", &home)
        .env_remove("COPILOT_HOME")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let calls = crate::mcp::live_calls(|tool| format!("everything-{tool}"));
    let mock = copilot(&fx, calls);
    let told: String = mock.requests().iter().map(Value::to_string).collect();
    assert_live_verdicts(
        "GitHub Copilot CLI",
        &tool_messages(&mock, LIVE_CALLS.len()),
        &told,
        "everything-echo",
    );
}

/// `toolgate mcp` between Copilot CLI and a server that speaks both MCP
/// eras (the official Python SDK's): Copilot CLI's client probes with
/// `server/discover` before it falls back to `initialize`, so which
/// revision the session speaks is read from the server's side of the wire;
/// each verdict reaches the model either way.
#[test]
fn live_copilot_mcp_to_a_server_of_both_eras_is_judged() {
    use crate::mcp_stateless::{judged, live_sdk_calls, spoken, tapped_sdk_proxy};
    let fx = judged();
    let (argv, env, wire) = tapped_sdk_proxy(&fx);
    let home = fx.dir.path().join("copilot-home");
    std::fs::create_dir_all(home.join(".copilot")).unwrap();
    std::fs::write(
        home.join(".copilot/mcp-config.json"),
        json!({"mcpServers": {"py": {"type": "local", "command": argv[0],
            "args": &argv[1..], "tools": ["*"], "env": env}}})
        .to_string(),
    )
    .unwrap();
    let (calls, expected) = live_sdk_calls(|tool| format!("py-{tool}"));
    let mock = copilot(&fx, calls);
    let shown = tool_messages(&mock, 4);
    for (i, expected) in expected.iter().enumerate() {
        assert!(shown[i].contains(expected), "call {i}: {shown:#?}");
    }
    let (messages, revision) = spoken(&wire);
    assert_eq!(revision, "2026-07-28", "{messages:#?}");
}

/// Runs Copilot CLI's terminal interface (`-i`, every tool allowed by its
/// rules, so that only a hook asks) on a pseudo-terminal with `handler` as
/// the hook, scripted to make `calls`; once the screen shows `needle`,
/// types `keys`. Returns whether it saw the needle, and the screen's text.
fn copilot_terminal(
    fx: &Fixture,
    handler: Value,
    calls: Vec<Value>,
    needle: &str,
    keys: &str,
) -> (bool, String) {
    let mock = MockModel::chat(calls);
    let mut cmd = copilot_command(fx, handler, &mock, &["-i", "run the scripted commands"]);
    cmd.arg("--allow-all-tools");
    // A user who trusted this folder ("Yes, and remember this folder").
    let ws = fx.workspace().canonicalize().unwrap();
    std::fs::write(
        fx.dir.path().join("copilot-home/.copilot/config.json"),
        json!({"trustedFolders": [ws]}).to_string(),
    )
    .unwrap();
    in_a_terminal(&cmd, &fx.dir.path().join("screen.txt"), needle, keys)
}

#[test]
fn live_copilot_an_ask_in_prompt_mode_refuses_the_call_and_the_model_reads_why() {
    // `-p` has nobody to ask: Copilot refuses the call whatever its
    // permission flags, and the model reads the reason.
    for flags in [&["--allow-all-tools"][..], &["--yolo"][..]] {
        let fx = Fixture::new();
        asking_guard(&fx);
        let mock = copilot_with(
            &fx,
            toolgate_handler(&[]),
            vec![sh("touch made.txt")],
            flags,
        );
        assert!(
            !fx.workspace().join("made.txt").exists(),
            "{flags:?}: the command ran"
        );
        let shown = tool_messages(&mock, 1);
        assert_eq!(
            shown[0],
            "Denied by preToolUse hook (unable to ask user for confirmation): creating files needs a person here",
            "{flags:?}"
        );
        saw(
            Row::Ask,
            "its own `ask`: a \"Hook permission request\" in its terminal (also with `--allow-all-tools`); in `-p` the call is refused and the model reads the reason",
            Some(&shown[0]),
        );
    }
}

#[test]
fn live_copilot_an_ask_is_a_confirmation_in_its_terminal_even_with_every_tool_allowed() {
    for (keys, yes) in [("\\r", true), ("\\x1b", false)] {
        let fx = Fixture::new();
        asking_guard(&fx);
        let seen = copilot_terminal(
            &fx,
            toolgate_handler(&[]),
            vec![sh("touch made.txt")],
            "creating files needs a person here",
            keys,
        );
        let ran = fx.workspace().join("made.txt").exists();
        confirmed_only_on_yes(
            seen,
            &["Hookpermissionrequest", "Doyouwanttoallowthistoolcall?"],
            ran,
            yes,
        );
    }
}
