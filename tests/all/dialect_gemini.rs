//! `toolgate gemini`, without the agent: Gemini CLI's hook stdin in (the
//! envelopes below are the ones Gemini CLI 0.61.0 sent live), each answer
//! out in the form Gemini CLI honours (tests/all/live/gemini.rs shows what
//! the model then reads).

use crate::support::*;
use serde_json::{Value, json};
use std::process::Output;
use toolgate::agent::AgentHook as _;

fn gemini(fx: &Fixture, input: Value) -> Output {
    fx.trust();
    let mut cmd = toolgate();
    cmd.arg("gemini").env("TOOLGATE_CONFIG_DIR", fx.global());
    run_with_stdin(&mut cmd, &input.to_string())
}

fn before(fx: &Fixture, tool: &str, input: Value) -> Value {
    json!({"session_id": "s", "transcript_path": "/tmp/s.jsonl", "cwd": fx.workspace(),
           "hook_event_name": "BeforeTool", "timestamp": "2026-12-01T11:18:44.208Z",
           "tool_name": tool, "tool_input": input})
}

fn after(fx: &Fixture, tool: &str, input: Value, response: Value) -> Value {
    let mut v = before(fx, tool, input);
    v["hook_event_name"] = json!("AfterTool");
    v["tool_response"] = response;
    v
}

fn shell_response(text: &str) -> Value {
    json!({"llmContent": format!("<untrusted_context>\nOutput: {text}\nProcess Group PGID: 1\n</untrusted_context>"),
           "returnDisplay": text})
}

/// A wire-v1 hook that writes what it was asked to `saw.json` in the
/// workspace and answers by the command (or output) it sees.
fn policy(fx: &Fixture) {
    let decide = fx.script(
        "decide.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
res = req.get("result")
cmd = req["input"].get("command", "")
out = json.dumps(res["output"]) if res else ""
if res is None and "force" in cmd:
    a = {"decision": "deny", "reason": "no force pushes"}
elif res is None and cmd == "ls":
    a = {"decision": "modify", "input": {"command": "ls -la"}, "context": "listing in long form"}
elif res is None and cmd == "cached":
    a = {"decision": "replace", "result": {"output": "a b c", "is_error": False}}
elif res is not None and "SECRET" in out:
    a = {"decision": "deny", "reason": "it held a secret", "context": "disregard it"}
elif res is not None and "long" in out:
    a = {"decision": "replace", "result": {"output": "short", "is_error": False}}
elif res is not None and "note" in out:
    a = {"decision": "allow", "context": "a note for the model"}
elif res is not None and res["is_error"]:
    a = {"decision": "deny", "reason": "saw an error: " + out}
else:
    a = {"decision": "allow"}
print(json.dumps(a))
"#,
    );
    fx.workspace_hooks(json!([{"name": "policy", "command": [&decide], "event": ["pre_tool_use", "post_tool_use"]}]));
}

fn answer(out: &Output) -> Value {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    if out.stdout.is_empty() {
        Value::Null
    } else {
        stdout_json(out)
    }
}

#[test]
fn before_the_call_each_decision_is_gemini_clis_own_answer() {
    let fx = Fixture::new();
    policy(&fx);
    let run = |cmd: &str| {
        answer(&gemini(
            &fx,
            before(&fx, "run_shell_command", json!({"command": cmd})),
        ))
    };
    assert_eq!(
        run("git push --force"),
        json!({"decision": "deny", "reason": "no force pushes"})
    );
    // The complete input, and the context as Gemini CLI names it (it
    // ignores context before the call; sent anyway).
    assert_eq!(
        run("ls"),
        json!({"hookSpecificOutput": {"hookEventName": "BeforeTool",
               "tool_input": {"command": "ls -la"}, "additionalContext": "listing in long form"}})
    );
    assert_eq!(
        run("cached"),
        json!({"decision": "deny",
               "reason": "toolgate answered for the tool instead of running it: a b c"})
    );
    // An allow says nothing: Gemini CLI's own policy still decides.
    assert_eq!(run("echo hi"), Value::Null);
    // Never Claude Code's `permissionDecision`, which Gemini CLI ignores.
    for cmd in ["git push --force", "ls", "cached"] {
        assert!(!run(cmd).to_string().contains("permissionDecision"));
    }
}

#[test]
fn after_the_call_a_denial_is_what_the_model_reads_instead_of_the_output() {
    let fx = Fixture::new();
    policy(&fx);
    let run = |response: Value| {
        answer(&gemini(
            &fx,
            after(&fx, "run_shell_command", json!({"command": "x"}), response),
        ))
    };
    // The context would be dropped with the output: it joins the reason.
    assert_eq!(
        run(shell_response("SECRET=abc\nExit Code: 3")),
        json!({"decision": "deny",
               "reason": "toolgate withheld the output of this call: it held a secret\n\ndisregard it"})
    );
    assert_eq!(
        run(shell_response("long output")),
        json!({"decision": "deny", "reason": "toolgate replaced this tool's output: short"})
    );
    assert_eq!(
        run(shell_response("a note")),
        json!({"hookSpecificOutput": {"hookEventName": "AfterTool",
               "additionalContext": "a note for the model"}})
    );
    assert_eq!(run(shell_response("fine")), Value::Null);
}

#[test]
fn after_the_call_the_hooks_see_what_the_model_would_read() {
    let fx = Fixture::new();
    policy(&fx);
    // A failed tool: the error's message, as an error.
    let out = answer(&gemini(
        &fx,
        after(
            &fx,
            "read_file",
            json!({"file_path": "nope.txt"}),
            json!({"llmContent": "Could not read file because no file was found at the specified path.",
                   "returnDisplay": "File not found.",
                   "error": {"message": "File not found: /w/nope.txt", "type": "file_not_found"}}),
        ),
    ));
    assert_eq!(
        out["reason"],
        "toolgate withheld the output of this call: saw an error: \"File not found: /w/nope.txt\""
    );
    // An MCP tool answers in parts: the hook sees their text.
    let out = answer(&gemini(
        &fx,
        after(
            &fx,
            "mcp_github_echo_text",
            json!({"text": "x"}),
            json!({"llmContent": [{"text": "<untrusted_context>\nSECRET\n</untrusted_context>"}],
                   "returnDisplay": "SECRET"}),
        ),
    ));
    assert_eq!(out["decision"], "deny", "{out}");
}

#[test]
fn other_events_pass_and_toolgates_own_failure_blocks_both_ways() {
    let fx = Fixture::new();
    policy(&fx);
    for event in [
        json!({"hook_event_name": "BeforeAgent", "prompt": "hi"}),
        json!({"hook_event_name": "SessionStart", "source": "startup"}),
    ] {
        let out = gemini(&fx, event);
        assert_eq!((out.status.code(), out.stdout.is_empty()), (Some(0), true));
    }
    // Unreadable input, and a broken config: a JSON denial on stdout (which
    // Gemini CLI reads first) and exit 2 with the reason on stderr (which
    // blocks if stdout does not reach it).
    let bad_input = gemini(
        &fx,
        json!({"hook_event_name": "BeforeTool", "tool_name": "x"}),
    );
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let bad_config = gemini(
        &fx,
        before(&fx, "run_shell_command", json!({"command": "ls"})),
    );
    for out in [bad_input, bad_config] {
        assert_eq!(out.status.code(), Some(2));
        let answer = stdout_json(&out);
        assert_eq!(answer["decision"], "deny");
        let reason = answer["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("toolgate could not evaluate this call"),
            "{reason}"
        );
        assert!(String::from_utf8_lossy(&out.stderr).contains(reason));
    }
}

#[test]
fn the_workspace_is_found_above_the_directory_gemini_cli_started_in() {
    // Gemini CLI sets GEMINI_PROJECT_DIR (and CLAUDE_PROJECT_DIR) to the
    // directory it started in; toolgate walks up from the cwd instead.
    let fx = Fixture::new();
    policy(&fx);
    let sub = fx.workspace().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let mut input = before(
        &fx,
        "run_shell_command",
        json!({"command": "git push --force"}),
    );
    input["cwd"] = json!(sub);
    fx.trust();
    let mut cmd = toolgate();
    cmd.arg("gemini")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("GEMINI_PROJECT_DIR", &sub)
        .env("CLAUDE_PROJECT_DIR", &sub);
    let out = run_with_stdin(&mut cmd, &input.to_string());
    assert_eq!(answer(&out)["reason"], "no force pushes");
}

#[test]
fn doctor_reads_gemini_clis_trusted_folders_as_gemini_cli_does() {
    let install = toolgate::agent::Outward::Gemini.install();
    assert_eq!(
        (install.user_file, install.project_file, install.events),
        (
            ".gemini/settings.json",
            ".gemini/settings.json",
            &["BeforeTool", "AfterTool"][..]
        )
    );
    let check = install.trust.and_then(|t| t.check).expect("a trust check");
    assert_eq!(check.file, ".gemini/trustedFolders.json");
    let fx = Fixture::new();
    let root = fx.workspace().canonicalize().unwrap();
    let parent = root.parent().unwrap();
    let s = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let trusted = |rules: Value| (check.done)(&rules, &root);
    assert!(trusted(json!({s(&root): "TRUST_FOLDER"})));
    // An ancestor trusted covers the project; the longest rule wins.
    assert!(trusted(json!({s(parent): "TRUST_FOLDER"})));
    assert!(!trusted(
        json!({s(parent): "TRUST_FOLDER", s(&root): "DO_NOT_TRUST"})
    ));
    assert!(trusted(
        json!({s(parent): "DO_NOT_TRUST", s(&root): "TRUST_FOLDER"})
    ));
    // TRUST_PARENT trusts the folder that holds the rule's path.
    assert!(trusted(json!({s(&root.join("some-file")): "TRUST_PARENT"})));
    assert!(!trusted(json!({s(&root.join("sub")): "TRUST_FOLDER"})));
    assert!(!trusted(json!({})));
    assert!(!trusted(json!("not an object")));
    // The handler it writes: a shell string Gemini CLI runs with bash, named.
    let toolgate::agent::Layout::Grouped { handler } = install.layout else {
        panic!("Gemini CLI groups handlers under matchers");
    };
    assert_eq!(
        handler(&["/opt/my tools/toolgate".into(), "gemini".into()]),
        json!({"type": "command", "name": "toolgate", "command": "'/opt/my tools/toolgate' gemini"})
    );
}

/// Writes Gemini CLI settings with `hooks` into the workspace, imports them
/// (`toolgate import gemini`); [`gemini`] trusts the result before a call.
fn import_into(fx: &Fixture, hooks: Value) -> Output {
    let dir = fx.workspace().join(".gemini");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({"hooks": hooks}).to_string(),
    )
    .unwrap();
    let _ = std::fs::remove_file(fx.workspace().join(".toolgate/hooks.json"));
    succeeded(
        toolgate()
            .args(["import", "gemini"])
            .arg(dir.join("settings.json")),
    )
}

/// A Gemini CLI hook script in the workspace's .gemini/hooks/, named in
/// settings the way Gemini CLI users do.
fn gemini_script(fx: &Fixture, name: &str, body: &str) -> String {
    let path = fx.workspace().join(".gemini/hooks").join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    write_executable(&path, body);
    format!("$GEMINI_PROJECT_DIR/.gemini/hooks/{name}")
}

#[test]
fn imported_matchers_select_the_tools_gemini_cli_selects() {
    // What Gemini CLI 0.61.0 ran, live, for each matcher (findings: one run
    // with every matcher, tools run_shell_command and read_file).
    let live = [
        ("*", true, true),
        ("", true, true),
        (".*", true, true),
        ("run_shell_command", true, false),
        ("run_shell_command|write_file", true, false),
        ("^(run_shell_command)$", true, false),
        ("run_shell", true, false),
        ("shell", true, false),
        ("^run_shell$", false, false),
        ("RUN_SHELL_COMMAND", false, false),
        ("Bash", false, false),
        ("mcp__github__.*", false, false),
        ("*foo", false, false),
        ("read_.*", false, true),
    ];
    let fx = Fixture::new();
    let deny = gemini_script(
        &fx,
        "deny.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"deny\",\"reason\":\"matched\"}'\n",
    );
    for (matcher, shell, read) in live {
        import_into(
            &fx,
            json!({"BeforeTool": [{"matcher": matcher, "hooks": [{"type": "command", "command": deny}]}]}),
        );
        for (tool, expected) in [("run_shell_command", shell), ("read_file", read)] {
            let out = answer(&gemini(
                &fx,
                before(&fx, tool, json!({"command": "ls", "file_path": "a"})),
            ));
            assert_eq!(
                out["decision"] == "deny",
                expected,
                "{matcher:?} on {tool}: {out}"
            );
        }
    }
}

#[test]
fn imported_gemini_hooks_answer_by_gemini_clis_rules_inside_the_chain() {
    let fx = Fixture::new();
    let blocker = gemini_script(
        &fx,
        "block.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'rm -rf'*) echo 'Destructive command blocked' >&2; exit 2;; esac\nexit 0\n",
    );
    let decider = gemini_script(
        &fx,
        "decide.py",
        r#"#!/usr/bin/env python3
import json, os, sys
d = json.load(sys.stdin)
assert d["hook_event_name"] in ("BeforeTool", "AfterTool"), d
assert os.environ["GEMINI_PROJECT_DIR"], "no GEMINI_PROJECT_DIR"
cmd = d["tool_input"].get("command", "")
if d["hook_event_name"] == "BeforeTool" and "curl" in cmd:
    print(json.dumps({"decision": "deny", "reason": "No network from the shell"}))
elif d["hook_event_name"] == "BeforeTool" and cmd.startswith("npm install"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "BeforeTool",
        "tool_input": dict(d["tool_input"], command=cmd + " --ignore-scripts")}}))
elif d["hook_event_name"] == "BeforeTool" and cmd == "ask":
    print(json.dumps({"decision": "ask"}))
elif d["hook_event_name"] == "BeforeTool" and cmd == "warn":
    print("just a warning", file=sys.stderr); sys.exit(1)
elif d["hook_event_name"] == "AfterTool" and "SECRET" in d["tool_response"]["llmContent"]:
    print(json.dumps({"decision": "deny", "reason": "output held a secret"}))
elif d["hook_event_name"] == "AfterTool":
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "checked"}}))
"#,
    );
    let group = |cmd: &str| json!([{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": cmd}]}]);
    let mut pre = group(&blocker);
    pre.as_array_mut()
        .unwrap()
        .extend(group(&decider).as_array().unwrap().clone());
    import_into(
        &fx,
        json!({"BeforeTool": pre, "AfterTool": group(&decider)}),
    );
    let run = |input: Value| answer(&gemini(&fx, input));
    let shell = |cmd: &str| before(&fx, "run_shell_command", json!({"command": cmd}));
    assert_eq!(
        run(shell("rm -rf /"))["reason"],
        "Destructive command blocked"
    );
    assert_eq!(run(shell("curl x"))["reason"], "No network from the shell");
    assert_eq!(
        run(shell("npm install left-pad"))["hookSpecificOutput"]["tool_input"],
        json!({"command": "npm install left-pad --ignore-scripts"})
    );
    // Where Gemini CLI would wait for a person, or let a warning through,
    // toolgate's chain denies.
    assert!(
        run(shell("ask"))["reason"]
            .as_str()
            .unwrap()
            .contains("person's confirmation")
    );
    assert_eq!(run(shell("warn"))["decision"], "deny");
    assert_eq!(run(shell("ls")), Value::Null);
    let post = |text: &str| {
        after(
            &fx,
            "run_shell_command",
            json!({"command": "x"}),
            shell_response(text),
        )
    };
    assert_eq!(
        run(post("SECRET=abc"))["reason"],
        "toolgate withheld the output of this call: output held a secret"
    );
    assert_eq!(
        run(post("fine"))["hookSpecificOutput"]["additionalContext"],
        "checked"
    );
}

#[test]
fn import_lists_what_it_cannot_carry_over() {
    let fx = Fixture::new();
    let out = import_into(
        &fx,
        json!({
            "BeforeTool": [
                {"matcher": "(?<!x)write_file", "hooks": [{"type": "command", "command": "/bin/true"}]},
                {"hooks": [{"type": "command", "command": "echo hi", "env": {"X": "1"}, "timeout": 30}]}
            ],
            "BeforeAgent": [{"hooks": [{"type": "command", "command": "x"}]}]
        }),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    for expected in [
        "BeforeAgent: 1 hook definition(s) — toolgate has no BeforeAgent event",
        "uses lookaround or backreferences",
        "its `env`",
        "runs as [\"bash\", \"-c\", …]",
        "toolgate trust",
    ] {
        assert!(said.contains(expected), "{expected:?} in {said}");
    }
    let hooks: Value = serde_json::from_str(
        &std::fs::read_to_string(fx.workspace().join(".toolgate/hooks.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        hooks["hooks"],
        json!([{"name": "pre-1-0-hi", "command": ["bash", "-c", "echo hi"], "protocol": "gemini",
                "event": "pre_tool_use", "timeout_ms": 30}])
    );
}

#[test]
fn install_writes_gemini_clis_settings_and_doctor_checks_its_trusted_folders() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    let project = project.canonicalize().unwrap();
    let settings = home.join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    // The user's own settings and hooks stay.
    std::fs::write(
        &settings,
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
               "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "/usr/bin/mine"}]}]}})
        .to_string(),
    )
    .unwrap();
    let run = |args: &[&str]| {
        toolgate()
            .args(args)
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .current_dir(&project)
            .output()
            .unwrap()
    };
    let out = run(&["install", "gemini"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        written["security"]["auth"]["selectedType"],
        "gemini-api-key"
    );
    let before = written["hooks"]["BeforeTool"].as_array().unwrap();
    assert_eq!(before[0]["hooks"][0]["command"], "/usr/bin/mine");
    let ours = &before.last().unwrap()["hooks"][0];
    assert_eq!(ours["type"], "command");
    assert_eq!(ours["name"], "toolgate");
    assert_eq!(
        ours["command"],
        format!("{} gemini", env!("CARGO_BIN_EXE_toolgate"))
    );
    assert!(written["hooks"]["AfterTool"].is_array());

    let doctor = || {
        let out = run(&["doctor", "--json"]);
        let report = stdout_json(&out);
        let gemini = report["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "gemini")
            .unwrap()
            .clone();
        (out.status.code(), gemini)
    };
    // Not trusted yet: Gemini CLI would run none of it, and doctor says how
    // to fix that.
    let (code, gemini) = doctor();
    assert_ne!(code, Some(0), "{gemini:#}");
    assert_eq!(gemini["trust"]["done"], false, "{gemini:#}");
    assert!(
        gemini["problems"]
            .to_string()
            .contains("trustedFolders.json"),
        "{gemini:#}"
    );
    // Trusted as Gemini CLI records it (an ancestor counts).
    std::fs::write(
        home.join(".gemini/trustedFolders.json"),
        json!({dir.path().canonicalize().unwrap().to_string_lossy(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let (_, gemini) = doctor();
    assert_eq!(gemini["trust"]["done"], true, "{gemini:#}");
    assert_eq!(gemini["problems"], json!([]), "{gemini:#}");
}
