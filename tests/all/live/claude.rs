//! Live: the real Claude Code CLI (pinned in tests/agents/versions.env,
//! installed from npm by tests/agents/install.sh) with `toolgate claude-code`
//! as its hook, against a mock of the model API on 127.0.0.1. Each test
//! scripts the model's tool calls, runs `claude -p` in a temporary
//! workspace, and asserts on what the model was shown (the requests the mock
//! received) and on what happened on disk. What these tests show is what the
//! README's "Coming from Claude Code" section says; nothing more.

use super::*;
use crate::mock_model::{MockModel, result_text};
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn claude_bin() -> PathBuf {
    agent_bin("CLAUDE_CODE_VERSION", "claude")
}

/// What one `claude -p` run did.
struct Run {
    mock: MockModel,
    /// Claude Code's `--output-format json` result.
    result: Value,
}

impl Run {
    fn tool_results(&self) -> Vec<Value> {
        self.mock.tool_results()
    }

    fn only_result(&self) -> Value {
        let results = self.tool_results();
        assert_eq!(results.len(), 1, "{results:#?}");
        results[0].clone()
    }

    fn permission_denials(&self) -> Vec<Value> {
        self.result["permission_denials"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

/// Installs `toolgate claude-code` (by absolute path) as the workspace's
/// hook for every tool event, then runs Claude Code on `calls`.
fn claude(fx: &Fixture, calls: Vec<Value>, allow_bash: bool) -> Run {
    let command = format!("{} claude-code", env!("CARGO_BIN_EXE_toolgate"));
    claude_with(
        fx,
        json!({"type": "command", "command": command}),
        calls,
        allow_bash,
    )
}

/// Runs Claude Code with `handler` as the hook for every tool event.
fn claude_with(fx: &Fixture, handler: Value, calls: Vec<Value>, allow_bash: bool) -> Run {
    let hook = json!([{"matcher": "*", "hooks": [handler]}]);
    let settings =
        json!({"hooks": {"PreToolUse": hook, "PostToolUse": hook, "PostToolUseFailure": hook}});
    std::fs::create_dir_all(fx.workspace().join(".claude")).unwrap();
    std::fs::write(
        fx.workspace().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let home = fx.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mock = MockModel::anthropic(calls);
    // The user trusted this workspace's hooks (the gate has its own tests).
    crate::support::trust(&fx.workspace());
    let mut cmd = Command::new(claude_bin());
    hermetic(&mut cmd)
        .args([
            "-p",
            "run the scripted tool calls",
            "--output-format",
            "json",
        ])
        .current_dir(fx.workspace())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if allow_bash {
        cmd.args(["--allowedTools", "Bash,Read"]);
    }
    let child = cmd.spawn().expect("claude starts");
    let out = finish_within(child, Duration::from_secs(180), "claude");
    let result = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON result ({e}, {}):\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    Run { mock, result }
}

#[test]
fn live_claude_pre_deny_blocks_the_command_and_the_model_reads_the_reason() {
    let fx = Fixture::new();
    std::fs::write(fx.workspace().join("keep.txt"), "precious").unwrap();
    let guard = py_hook(
        &fx,
        "guard.py",
        "if 'rm ' in req['input']['command']:\n    answer = {'decision': 'deny', 'reason': 'no deleting files here'}",
    );
    fx.workspace_hooks(json!([{"name": "no-rm", "command": [&guard]}]));
    let run = claude(&fx, vec![bash("rm -f keep.txt")], true);
    let result = run.only_result();
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result_text(&result).contains("no deleting files here"),
        "{result}"
    );
    assert!(fx.workspace().join("keep.txt").exists(), "the command ran");
}

#[test]
fn live_claude_modify_runs_the_rewritten_command_without_granting_permission() {
    let fx = Fixture::new();
    let rewriter = py_hook(
        &fx,
        "rewrite.py",
        "if 'rewritten' not in req['input']['command']:\n    answer = {'decision': 'modify', 'input': dict(req['input'], command='echo rewritten > out.txt')}",
    );
    fx.workspace_hooks(json!([{"name": "rewriter", "command": [&rewriter]}]));
    let out = fx.workspace().join("out.txt");

    // Bash allowed by the agent's own rules: the rewritten command runs.
    let run = claude(&fx, vec![bash("echo original > out.txt")], true);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "rewritten\n");
    assert_eq!(run.only_result()["is_error"], false);

    // Not allowed: the rewrite did not approve it; Claude Code's permission
    // rules still refused the (rewritten) call.
    std::fs::remove_file(&out).unwrap();
    let run = claude(&fx, vec![bash("echo original > out.txt")], false);
    assert!(!out.exists(), "a rewrite must not grant permission");
    let denials = run.permission_denials();
    assert_eq!(denials.len(), 1, "{:#}", run.result);
    assert_eq!(
        denials[0]["tool_input"]["command"],
        "echo rewritten > out.txt"
    );
}

#[test]
fn live_claude_context_reaches_the_model() {
    let fx = Fixture::new();
    let advisor = py_hook(
        &fx,
        "advise.py",
        "answer = {'decision': 'allow', 'context': 'toolgate-context-marker: prefer ls -1'}",
    );
    fx.workspace_hooks(json!([{"name": "advisor", "command": [&advisor]}]));
    let run = claude(&fx, vec![bash("ls")], true);
    assert!(
        run.mock
            .user_texts()
            .iter()
            .any(|t| t.contains("toolgate-context-marker: prefer ls -1")),
        "{:#?}",
        run.mock.user_texts()
    );
}

#[test]
fn live_claude_pre_replace_answers_for_the_tool_without_running_it() {
    let fx = Fixture::new();
    let cache = py_hook(
        &fx,
        "cache.py",
        "answer = {'decision': 'replace', 'result': {'output': 'cached listing: a b c', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([{"name": "cache", "command": [&cache]}]));
    let run = claude(&fx, vec![bash("touch ran.txt")], true);
    assert!(!fx.workspace().join("ran.txt").exists(), "the tool ran");
    assert!(result_text(&run.only_result()).contains("cached listing: a b c"));
}

#[test]
fn live_claude_post_replace_reaches_the_model_in_the_tools_own_shape() {
    let fx = Fixture::new();
    // Live, a post hook sees Claude Code's Bash result object; it answers a
    // plain string, which toolgate puts into Bash's shape.
    let redactor = py_hook(
        &fx,
        "redact.py",
        "out = req['result']['output']\nif 'SECRET' in out['stdout']:\n    answer = {'decision': 'replace', 'result': {'output': out['stdout'].replace('SECRET=abc', '[redacted]'), 'is_error': False}}",
    );
    fx.workspace_hooks(
        json!([{"name": "redactor", "command": [&redactor], "event": "post_tool_use"}]),
    );
    let run = claude(&fx, vec![bash("echo SECRET=abc")], true);
    let result = run.only_result();
    assert_eq!(result_text(&result), "[redacted]", "{result}");
    assert_eq!(result["is_error"], false);
}

#[test]
fn live_claude_post_deny_withholds_the_output_and_shows_the_reason_as_an_error() {
    let fx = Fixture::new();
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "if 'SECRET' in json.dumps(req['result']):\n    answer = {'decision': 'deny', 'reason': 'the output held a secret'}",
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&dlp], "event": "post_tool_use"}]));
    let run = claude(&fx, vec![bash("echo SECRET=abc")], true);
    let result = run.only_result();
    assert_eq!(result["is_error"], true, "{result}");
    let text = result_text(&result);
    assert!(text.contains("the output held a secret"), "{text}");
    assert!(!text.contains("SECRET=abc"), "{text}");
    assert!(
        !run.mock
            .user_texts()
            .iter()
            .any(|t| t.contains("SECRET=abc")),
        "the secret reached the model"
    );
}

#[test]
fn live_claude_post_deny_on_a_tool_toolgate_cannot_reshape_stops_the_agent() {
    // Read's result has no text field toolgate can fill, so a post deny is
    // `continue: false`: Claude Code stops before the model sees the output.
    let fx = Fixture::new();
    let secret = fx.workspace().join("secret.txt");
    std::fs::write(&secret, "SECRET=abc\n").unwrap();
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "if 'SECRET' in json.dumps(req['result']):\n    answer = {'decision': 'deny', 'reason': 'the file held a secret'}",
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&dlp], "event": "post_tool_use"}]));
    let read = json!({"name": "Read", "input": {"file_path": secret}});
    let run = claude(&fx, vec![read], true);
    assert_eq!(
        run.result["terminal_reason"], "hook_stopped",
        "{:#}",
        run.result
    );
    for body in run.mock.requests() {
        assert!(
            !body.to_string().contains("SECRET=abc"),
            "the secret reached the model"
        );
    }
}

#[test]
fn live_claude_a_failing_command_goes_through_the_post_chain() {
    let fx = Fixture::new();
    let seen = fx.marker("post-saw.json");
    let dlp = py_hook(
        &fx,
        "dlp.py",
        &format!(
            "open({:?}, 'w').write(json.dumps(req['result']))\nif 'SECRET' in json.dumps(req['result']):\n    answer = {{'decision': 'deny', 'reason': 'the output held a secret', 'context': 'disregard that output'}}",
            seen.display().to_string()
        ),
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&dlp], "event": "post_tool_use"}]));
    // Its evidence is a file outside its scratch folder.
    fx.unconfine("dlp");
    let run = claude(&fx, vec![bash("echo SECRET=abc; exit 3")], true);
    // The post chain ran, and saw the failure as a failure.
    let saw: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(saw["is_error"], true, "{saw}");
    assert!(
        saw["output"].as_str().unwrap().contains("SECRET=abc"),
        "{saw}"
    );
    // The model is told the output is withheld, with the hook's context...
    let texts = run.mock.user_texts();
    assert!(
        texts
            .iter()
            .any(|t| t
                .contains("toolgate withheld the output of this call: the output held a secret")),
        "{texts:#?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("disregard that output")),
        "{texts:#?}"
    );
    // ...but Claude Code 2.1.197 shows a failed call's output whatever a hook
    // answers (no replacement, no stop): README says so. If a release starts
    // honouring it, this line fails and toolgate should use it.
    assert!(result_text(&run.only_result()).contains("SECRET=abc"));
}

#[test]
fn live_claude_lets_the_call_through_when_its_hook_is_missing_crashes_or_times_out() {
    // Pinned because the README's advice rests on it: install toolgate by
    // absolute path, and toolgate answers before the agent's timeout and
    // never exits with a crash code. To Claude Code each of these is a
    // non-blocking error, and the call goes through unguarded.
    for (what, handler) in failing_hooks("claude-code") {
        let fx = Fixture::new();
        claude_with(&fx, handler, vec![bash("touch ran.txt")], true);
        assert!(fx.workspace().join("ran.txt").exists(), "{what}");
    }
}

#[test]
fn live_claude_a_wasm_guard_decides() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    let run = claude(&fx, vec![bash("touch ran.txt")], true);
    assert!(!fx.workspace().join("ran.txt").exists());
    assert!(result_text(&run.only_result()).contains("no force-pushing from a sandbox"));
}

#[test]
fn live_claude_toolgates_own_failure_blocks_the_call() {
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let run = claude(&fx, vec![bash("touch ran.txt")], true);
    assert!(
        !fx.workspace().join("ran.txt").exists(),
        "a broken config let the call through"
    );
    let result = run.only_result();
    assert_eq!(result["is_error"], true);
    assert!(
        result_text(&result).contains("toolgate could not evaluate this call, so it is blocked"),
        "{result}"
    );
}

#[test]
fn live_claude_the_demo_output_trimmer_works_live() {
    let fx = Fixture::new();
    let demo =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/demo/hooks/big_output_note.py");
    std::fs::create_dir_all(fx.workspace().join("hooks")).unwrap();
    std::fs::copy(&demo, fx.workspace().join("hooks/big_output_note.py")).unwrap();
    fx.workspace_hooks(
        json!([{"name": "big-output-note", "command": ["python3", "hooks/big_output_note.py"],
                               "event": "post_tool_use", "config": {"max_chars": 200}}]),
    );
    let run = claude(&fx, vec![bash("seq 1 300")], true);
    let full: String = (1..=300).map(|n| format!("{n}\n")).collect();
    let text = result_text(&run.only_result());
    assert_eq!(text, &full[..200], "the model saw the trimmed output");
    assert!(
        run.mock
            .user_texts()
            .iter()
            .any(|t| t.contains("only the first 200 are shown")),
        "{:#?}",
        run.mock.user_texts()
    );
}
