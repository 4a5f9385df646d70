//! Live: the real Claude Code CLI (pinned in tests/agents/versions.env,
//! installed from npm by tests/agents/install.sh) with `toolgate claude-code`
//! as its hook, against a mock of the model API on 127.0.0.1. Each test
//! scripts the model's tool calls, runs `claude -p` in a temporary
//! workspace, and asserts on what the model was shown (the requests the mock
//! received) and on what happened on disk. What these tests show is what the
//! README's "Coming from Claude Code" section says; nothing more.

use crate::mock_model::{MockModel, result_text};
use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

fn agents_cache() -> PathBuf {
    std::env::var_os("TOOLGATE_AGENT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/.cache"))
}

/// The Claude Code CLI under test: `$TOOLGATE_CLAUDE_CODE_BIN` (the second
/// pinned release, see tests/agents/install.sh), else the cache's.
fn claude_bin() -> PathBuf {
    let bin = std::env::var_os("TOOLGATE_CLAUDE_CODE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| agents_cache().join("node_modules/.bin/claude"));
    assert!(
        bin.exists(),
        "the Claude Code CLI is not installed at {}: run tests/agents/install.sh \
         (./test.sh does it)",
        bin.display()
    );
    bin
}

/// The release under test, from `claude --version` ("2.1.332 (Claude Code)").
fn claude_version() -> (u32, u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let out = Command::new(claude_bin())
            .arg("--version")
            .output()
            .expect("claude --version runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let parts: Vec<u32> = text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .split('.')
            .map(|p| p.parse().unwrap_or_else(|_| panic!("a version: {text:?}")))
            .collect();
        assert_eq!(parts.len(), 3, "a version: {text:?}");
        (parts[0], parts[1], parts[2])
    })
}

/// Whether the release honours `"onFailure": "block"` on a command handler
/// (since 2.1.295; live: 2.1.197 ignores it, 2.1.332 honours it).
fn honours_on_failure() -> bool {
    claude_version() >= (2, 1, 295)
}

/// toolgate as `toolgate claude-code --help` tells a user to install it: by
/// absolute path, in the exec form (no shell), fail-closed.
fn toolgate_handler() -> Value {
    json!({"type": "command", "command": env!("CARGO_BIN_EXE_toolgate"),
           "args": ["claude-code"], "onFailure": "block"})
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
    claude_with(fx, toolgate_handler(), calls, allow_bash)
}

/// Runs Claude Code with `handler` as the hook for every tool event.
fn claude_with(fx: &Fixture, handler: Value, calls: Vec<Value>, allow_bash: bool) -> Run {
    claude_with_hooks(fx, [handler.clone(), handler.clone(), handler], calls, allow_bash)
}

/// Runs Claude Code with these handlers for PreToolUse, PostToolUse and
/// PostToolUseFailure.
fn claude_with_hooks(
    fx: &Fixture,
    [pre, post, failure]: [Value; 3],
    calls: Vec<Value>,
    allow_bash: bool,
) -> Run {
    let hook = |handler: Value| json!([{"matcher": "*", "hooks": [handler]}]);
    let settings = json!({"hooks": {"PreToolUse": hook(pre), "PostToolUse": hook(post),
                                    "PostToolUseFailure": hook(failure)}});
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

/// Hook handlers that fail in the three ways an agent forgives: a command
/// that is not there, one that crashes, one that outlives its `timeout`.
fn failing_hooks(agent: &str) -> [(&'static str, Value); 3] {
    [
        (
            "missing",
            json!({"type": "command", "command": format!("/nonexistent/toolgate {agent}")}),
        ),
        (
            "crashed",
            json!({"type": "command", "command": "sh -c 'exit 1'"}),
        ),
        (
            "timed out",
            json!({"type": "command", "command": "sleep 30", "timeout": 1}),
        ),
    ]
}

fn bash(command: &str) -> Value {
    json!({"name": "Bash", "input": {"command": command, "description": "scripted"}})
}

/// A wire-v1 python hook from a body that sets `answer` from `req`.
fn py_hook(fx: &Fixture, name: &str, body: &str) -> String {
    fx.script(
        name,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nanswer = {{\"decision\": \"allow\"}}\n{body}\nprint(json.dumps(answer))\n"
        ),
    )
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
    // ...but Claude Code (2.1.197, 2.1.332) shows a failed call's output
    // whatever a hook answers (no replacement, no stop): README says so. If a
    // release starts honouring it, this line fails and toolgate should use it.
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
fn live_claude_blocks_the_call_when_a_fail_closed_hook_is_missing_crashes_or_times_out() {
    // `"onFailure": "block"` on the handler, as toolgate tells users to
    // install it. Releases before 2.1.295 ignore the field (and still run the
    // hook): the call goes through, as without it.
    let mut hooks = failing_hooks("claude-code").to_vec();
    hooks.push((
        "missing (exec form)",
        json!({"type": "command", "command": "/nonexistent/toolgate", "args": ["claude-code"]}),
    ));
    for (what, mut handler) in hooks {
        handler["onFailure"] = json!("block");
        let fx = Fixture::new();
        let run = claude_with(&fx, handler, vec![bash("touch ran.txt")], true);
        let ran = fx.workspace().join("ran.txt").exists();
        if !honours_on_failure() {
            assert!(ran, "{what}: {:?} ignores onFailure", claude_version());
            continue;
        }
        assert!(!ran, "{what}: the call ran");
        let result = run.only_result();
        assert_eq!(result["is_error"], true, "{what}: {result}");
        assert!(
            result_text(&result).contains("blocking because onFailure is \"block\""),
            "{what}: {result}"
        );
        assert_eq!(run.permission_denials().len(), 1, "{what}: {:#}", run.result);
    }
}

#[test]
fn live_claude_a_fail_closed_hook_failing_after_the_call_cannot_withhold_the_output() {
    // After the call, a failure of an `onFailure: "block"` hook is what an
    // exit 2 is: an error shown next to the output, never instead of it. So
    // a post hook (toolgate's own failure included) cannot keep an output
    // from the model by failing.
    let fx = Fixture::new();
    let crash = json!({"type": "command", "command": "sh -c 'exit 1'", "onFailure": "block"});
    let run = claude_with_hooks(
        &fx,
        [toolgate_handler(), crash.clone(), crash],
        vec![bash("echo SECRET=abc")],
        true,
    );
    let result = run.only_result();
    assert_eq!(result_text(&result), "SECRET=abc", "{result}");
    let texts = run.mock.user_texts();
    let noted = texts
        .iter()
        .any(|t| t.contains("PostToolUse:Bash hook blocking error") && t.contains("onFailure"));
    assert_eq!(noted, honours_on_failure(), "{texts:#?}");
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

// ---------------------------------------------------------------------------
// Codex: `codex exec` against a mock Responses API, toolgate installed as the
// user's hook (CODEX_HOME/hooks.json) by absolute path, started in a
// subdirectory of the workspace (Codex sets no project variable: toolgate
// walks up to the `.toolgate/`).

fn codex_bin() -> PathBuf {
    let bin = agents_cache().join("node_modules/.bin/codex");
    assert!(
        bin.exists(),
        "the Codex CLI is not installed at {}: run tests/agents/install.sh (./test.sh does it)",
        bin.display()
    );
    bin
}

/// Runs `codex exec` in `<workspace>/sub` on `calls` (shell commands, as
/// Codex's `exec_command` tool). `trusted`: whether hooks run without the
/// `/hooks` review (`--dangerously-bypass-hook-trust`, the flag Codex gives
/// automation that vets its hooks itself).
fn codex(fx: &Fixture, commands: &[&str], trusted: bool) -> MockModel {
    let command = format!("{} codex", env!("CARGO_BIN_EXE_toolgate"));
    codex_with(
        fx,
        json!({"type": "command", "command": command}),
        commands,
        trusted,
    )
}

fn codex_with(fx: &Fixture, handler: Value, commands: &[&str], trusted: bool) -> MockModel {
    let home = fx.dir.path().join("codex-home");
    std::fs::create_dir_all(&home).unwrap();
    let hook = json!([{"matcher": "*", "hooks": [handler]}]);
    std::fs::write(
        home.join("hooks.json"),
        json!({"hooks": {"PreToolUse": hook, "PostToolUse": hook}}).to_string(),
    )
    .unwrap();
    let sub = fx.workspace().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let calls = commands
        .iter()
        .map(|c| json!({"name": "exec_command", "input": {"cmd": c}}))
        .collect();
    let mock = MockModel::openai(calls);
    crate::support::trust(&fx.workspace());
    let provider = format!(
        "model_providers.mock={{name=\"mock\",base_url=\"{}/v1\",env_key=\"OPENAI_API_KEY\",wire_api=\"responses\"}}",
        mock.base_url()
    );
    let mut cmd = Command::new(codex_bin());
    hermetic(&mut cmd)
        .args([
            "exec",
            "--skip-git-repo-check",
            "--sandbox",
            "danger-full-access",
        ])
        .args([
            "-c",
            "model_provider=\"mock\"",
            "-c",
            &provider,
            "-c",
            "model=\"gpt-5\"",
        ]);
    if trusted {
        cmd.arg("--dangerously-bypass-hook-trust");
    }
    cmd.arg("run the scripted commands")
        .current_dir(&sub)
        .env("CODEX_HOME", &home)
        .env("HOME", &home)
        .env("OPENAI_API_KEY", "sk-test")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("codex starts");
    let out = finish_within(child, Duration::from_secs(180), "codex");
    assert!(
        out.status.success(),
        "codex failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    mock
}

fn only_output(mock: &MockModel) -> String {
    let outputs = mock.function_outputs();
    assert_eq!(outputs.len(), 1, "{outputs:#?}");
    outputs[0].clone()
}

#[test]
fn live_codex_pre_deny_blocks_the_command_and_passes_the_turn_id() {
    let fx = Fixture::new();
    let seen = fx.marker("pre-saw.json");
    let guard = py_hook(
        &fx,
        "guard.py",
        &format!(
            "open({:?}, 'w').write(json.dumps(req))\nif 'rm ' in req['input']['command']:\n    answer = {{'decision': 'deny', 'reason': 'no deleting files here'}}",
            seen.display().to_string()
        ),
    );
    fx.workspace_hooks(json!([{"name": "no-rm", "command": [&guard]}]));
    // Its evidence is a file outside its scratch folder.
    fx.unconfine("no-rm");
    std::fs::write(fx.workspace().join("keep.txt"), "precious").unwrap();
    let mock = codex(&fx, &["rm -f ../keep.txt"], true);
    assert!(only_output(&mock).contains("no deleting files here"));
    assert!(fx.workspace().join("keep.txt").exists(), "the command ran");
    // Codex calls its shell tool `Bash` in hooks, and sends a turn id.
    let req: Value = serde_json::from_str(&std::fs::read_to_string(&seen).unwrap()).unwrap();
    assert_eq!(req["tool"], "Bash");
    assert!(!req["turn_id"].as_str().unwrap_or("").is_empty(), "{req}");
}

#[test]
fn live_codex_runs_a_rewritten_command_and_shows_context() {
    let fx = Fixture::new();
    let rewriter = py_hook(
        &fx,
        "rewrite.py",
        "if 'rewritten' not in req['input']['command']:\n    answer = {'decision': 'modify', 'input': dict(req['input'], command='echo rewritten > out.txt'), 'context': 'toolgate-context-marker: rewritten'}",
    );
    fx.workspace_hooks(json!([{"name": "rewriter", "command": [&rewriter]}]));
    let mock = codex(&fx, &["echo original > out.txt"], true);
    let out = fx.workspace().join("sub/out.txt");
    assert_eq!(std::fs::read_to_string(out).unwrap(), "rewritten\n");
    assert!(
        mock.input_texts()
            .iter()
            .any(|t| t.contains("toolgate-context-marker: rewritten")),
        "{:#?}",
        mock.input_texts()
    );
}

#[test]
fn live_codex_post_deny_and_replace_decide_what_the_model_sees() {
    let fx = Fixture::new();
    let dlp = py_hook(
        &fx,
        "dlp.py",
        "out = req['result']['output']\nif 'SECRET' in out:\n    answer = {'decision': 'deny', 'reason': 'the output held a secret'}\nelif 'long' in out:\n    answer = {'decision': 'replace', 'result': {'output': 'trimmed', 'is_error': False}}",
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&dlp], "event": "post_tool_use"}]));
    // A failing command goes through the post chain too (Codex fires
    // PostToolUse for it).
    let mock = codex(&fx, &["echo SECRET=abc; exit 3"], true);
    let shown = only_output(&mock);
    assert!(shown.contains("the output held a secret"), "{shown}");
    assert!(!shown.contains("SECRET=abc"), "{shown}");
    let mock = codex(&fx, &["echo long output"], true);
    let shown = only_output(&mock);
    assert!(
        shown.contains("trimmed") && !shown.contains("long output"),
        "{shown}"
    );
}

#[test]
fn live_codex_a_wasm_guard_and_toolgates_own_failure_block_the_call() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    let mock = codex(&fx, &["touch ran.txt"], true);
    assert!(only_output(&mock).contains("no force-pushing from a sandbox"));
    assert!(!fx.workspace().join("sub/ran.txt").exists());

    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let mock = codex(&fx, &["touch ran.txt"], true);
    assert!(only_output(&mock).contains("toolgate could not evaluate this call"));
    assert!(!fx.workspace().join("sub/ran.txt").exists());
}

#[test]
fn live_codex_skips_hooks_nobody_trusted_without_a_word() {
    // Pinned because the README warns about it: installed but not reviewed
    // in `/hooks`, the hook never runs and the command goes through.
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "wasm-guard", "wasm": crate::guests::path("deny")}]));
    codex(&fx, &["touch ran.txt"], false);
    assert!(fx.workspace().join("sub/ran.txt").exists());
}

#[test]
fn live_codex_lets_the_call_through_when_its_hook_is_missing_crashes_or_times_out() {
    for (what, handler) in failing_hooks("codex") {
        let fx = Fixture::new();
        codex_with(&fx, handler, &["touch ran.txt"], true);
        assert!(fx.workspace().join("sub/ran.txt").exists(), "{what}");
    }
}
