//! The `toolgate` binary: its contracts (stdin/stdout shapes, exit codes,
//! config discovery) through the real executable.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

/// Runs `toolgate check` with the fixture's global dir and workspace.
fn check(fx: &Fixture, args: &[&str], stdin: &str) -> Output {
    fx.trust();
    run_with_stdin(
        toolgate()
            .arg("check")
            .arg("--workspace")
            .arg(fx.workspace())
            .args(args)
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        stdin,
    )
}

const PRE_SHELL: &str = r#"{"event":"pre_tool_use","tool":"shell","input":{"command":"ls"}}"#;

#[test]
fn check_allow_exits_0_with_the_runs() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    fx.workspace_hooks(json!([{"name": "a", "command": [&allow]}]));
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["decision"], "allow");
    assert_eq!(v["runs"][0]["name"], "a");
    assert_eq!(v["runs"][0]["source"], "workspace");
    assert_eq!(v["runs"][0]["binding"], "subprocess");
}

#[test]
fn check_deny_exits_2_with_the_reason() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "not today", "context": "ask first"})),
    );
    fx.workspace_hooks(json!([{"name": "d", "command": [&deny]}]));
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(out.status.code(), Some(2));
    let v = stdout_json(&out);
    assert_eq!(
        (v["decision"].as_str(), v["reason"].as_str()),
        (Some("deny"), Some("not today"))
    );
    assert_eq!(v["context"], "ask first");
    assert_eq!(v["decided_by"], "d");
}

#[test]
fn check_modify_exits_0_with_the_final_input() {
    let fx = Fixture::new();
    let trace = fx.script("trace.py", TRACE_HOOK);
    fx.workspace_hooks(
        json!([{"name": "t1", "command": [&trace]}, {"name": "t2", "command": [&trace]}]),
    );
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["decision"], "modify");
    assert_eq!(v["input"], json!({"command": "ls", "trace": ["t1", "t2"]}));
}

#[test]
fn check_pre_replace_exits_0_with_the_result_after_the_post_chain() {
    let fx = Fixture::new();
    let replace = fx.script("r.sh", &answer_script(&json!({"decision": "replace", "result": {"output": "secret=hunter2", "is_error": false}})));
    let redact = fx.script(
        "redact.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
out = req["result"]["output"].replace("hunter2", "***")
print(json.dumps({"decision": "replace", "result": {"output": out}}))
"#,
    );
    fx.workspace_hooks(json!([
        {"name": "replacer", "command": [&replace]},
        {"name": "redactor", "command": [&redact], "event": "post_tool_use"}
    ]));
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["decision"], "replace");
    assert_eq!(
        v["result"],
        json!({"output": "secret=***", "is_error": false})
    );
}

#[test]
fn check_post_event_reads_the_result() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "leaks"})),
    );
    fx.workspace_hooks(json!([{"name": "dlp", "command": [&deny], "event": "post_tool_use"}]));
    let out = check(
        &fx,
        &[],
        r#"{"event":"post_tool_use","tool":"shell","input":{},"result":{"output":"AKIA...","is_error":false}}"#,
    );
    assert_eq!(out.status.code(), Some(2));
    let v = stdout_json(&out);
    assert_eq!(v["reason"], "leaks");
    assert_eq!(
        v["result"]["is_error"], true,
        "what the model is shown is a failure"
    );
}

#[test]
fn check_flags_override_the_request() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "writes"})),
    );
    fx.workspace_hooks(json!([{"name": "w", "command": [&deny], "tools": ["write_file"]}]));
    let out = check(&fx, &["--tool", "write_file"], PRE_SHELL);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let out = check(
        &fx,
        &["--event", "pre_tool_use", "--tool", "shell"],
        r#"{"input": {}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn check_accepts_a_full_wire_v1_request() {
    let fx = Fixture::new();
    let out = check(
        &fx,
        &[],
        r#"{"schema":1,"event":"pre_tool_use","hook":"x","tool":"shell","input":{},"session_id":"s","turn_id":"t","tool_call_id":"c","cwd":"/","config":{}}"#,
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["decision"], "allow");
}

#[test]
fn check_exits_1_on_a_bad_request_and_says_why() {
    let fx = Fixture::new();
    for (stdin, says) in [
        ("not json", "not a valid wire v1 object"),
        (r#"{"event":"pre_tool_use","tool":"shell"}"#, "no `input`"),
        (r#"{"event":"pre_tool_use","input":{}}"#, "no `tool`"),
        (
            r#"{"event":"during","tool":"shell","input":{}}"#,
            "unknown event",
        ),
        (
            r#"{"schema":2,"event":"pre_tool_use","tool":"shell","input":{}}"#,
            "schema 2",
        ),
        (
            r#"{"event":"post_tool_use","tool":"shell","input":{}}"#,
            "needs `result`",
        ),
        (
            r#"{"event":"pre_tool_use","tool":"shell","input":{},"inptu":{}}"#,
            "unknown field `inptu`",
        ),
    ] {
        let out = check(&fx, &[], stdin);
        assert_eq!(out.status.code(), Some(1), "{stdin}");
        assert!(out.stdout.is_empty(), "nothing on stdout for {stdin}");
        assert!(
            stderr(&out).contains(says),
            "expected {says:?} for {stdin}, got {}",
            stderr(&out)
        );
    }
}

#[test]
fn check_exits_1_on_a_bad_config_naming_file_hook_and_field() {
    let fx = Fixture::new();
    let path = fx
        .workspace_raw(r#"{"schema":1,"hooks":[{"name":"guard","command":["x"],"timeout_ms":0}]}"#);
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(
        err.contains("hooks[0] (\"guard\")") && err.contains("`timeout_ms`"),
        "{err}"
    );
}

#[test]
fn check_reads_the_global_config_from_toolgate_config_dir_and_xdg() {
    let fx = Fixture::new();
    let trace = fx.global_script("trace.py", TRACE_HOOK);
    let wtrace = fx.script("trace.py", TRACE_HOOK);
    fx.global_hooks(json!([{"name": "global", "command": [&trace]}]));
    fx.workspace_hooks(json!([{"name": "workspace", "command": [&wtrace]}]));
    let out = check(&fx, &[], PRE_SHELL);
    assert_eq!(
        stdout_json(&out)["input"]["trace"],
        json!(["global", "workspace"]),
        "global runs first"
    );

    // $XDG_CONFIG_HOME/toolgate when TOOLGATE_CONFIG_DIR is unset.
    let xdg = fx.dir.path().join("xdg");
    std::fs::create_dir_all(&xdg).unwrap();
    std::os::unix::fs::symlink(fx.global(), xdg.join("toolgate")).unwrap();
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env_remove("TOOLGATE_CONFIG_DIR")
            .env("XDG_CONFIG_HOME", &xdg),
        PRE_SHELL,
    );
    assert_eq!(
        stdout_json(&out)["input"]["trace"],
        json!(["global", "workspace"])
    );
    assert_eq!(stdout_json(&out)["runs"][0]["source"], "global");
}

#[test]
fn check_runs_relative_hooks_from_any_current_directory() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "r"})),
    );
    fx.workspace_hooks(json!([{"name": "d", "command": [&deny]}]));
    // Trusted: an untrusted hook blocks too, but as a failure (exit 3),
    // which once passed for this deny.
    fx.trust();
    let out = run_with_stdin(
        toolgate()
            .current_dir("/")
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        PRE_SHELL,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

#[test]
fn hooks_lists_in_consultation_order_with_where_each_came_from() {
    let fx = Fixture::new();
    let g = fx.global_script("g.sh", "#!/bin/sh\n");
    let w = fx.script("w.sh", "#!/bin/sh\n");
    fx.global_hooks(json!([{"name": "operator-guard", "command": [&g], "event": ["pre_tool_use", "post_tool_use"]}]));
    fx.workspace_hooks(json!([{"name": "repo-guard", "command": [&w], "matcher": "Edit|Write", "timeout_ms": 1500, "on_failure": "allow"}]));
    let out = toolgate()
        .args(["hooks", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let table = String::from_utf8(out.stdout).unwrap();
    let (op, repo) = (
        table.find("operator-guard").unwrap(),
        table.find("repo-guard").unwrap(),
    );
    assert!(op < repo, "global before workspace:\n{table}");
    for needle in [
        "global",
        "workspace",
        "subprocess",
        "pre_tool_use, post_tool_use",
        "/Edit|Write/",
        "1500 ms",
        "allow",
        "hooks.json (read)",
    ] {
        assert!(table.contains(needle), "missing {needle:?} in\n{table}");
    }

    let out = toolgate()
        .args(["hooks", "--json", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hooks"][0]["name"], "operator-guard");
    assert_eq!(v["hooks"][0]["source"], "global");
    assert_eq!(v["hooks"][1]["matcher"], "Edit|Write");
    assert_eq!(v["hooks"][1]["binding"], "subprocess");
    assert_eq!(v["hooks"][1]["on_failure"], "allow");
    assert!(
        v["hooks"][1]["file"]
            .as_str()
            .unwrap()
            .ends_with(".toolgate/hooks.json")
    );
    // The managed layer (not present here), the global config, the workspace's.
    assert_eq!(v["files"].as_array().unwrap().len(), 3);
}

#[test]
fn hooks_check_validates_and_exits_non_zero_on_any_problem() {
    let fx = Fixture::new();
    let w = fx.script("w.sh", "#!/bin/sh\n");
    fx.workspace_hooks(json!([{"name": "fine", "command": [&w]}]));
    let run = |fx: &Fixture| {
        toolgate()
            .args(["hooks", "--check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .output()
            .unwrap()
    };
    let out = run(&fx);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("ok: 1 hooks (0 managed, 0 global, 1 workspace; workspace ")
    );

    fx.global_hooks(json!([{"name": "typo", "command": [&w], "evnt": "pre_tool_use"}]));
    let out = run(&fx);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out)
            .contains("hooks[0] (\"typo\"): field `evnt`: unknown field (did you mean `event`?)"),
        "{}",
        stderr(&out)
    );

    // A bare program that is not on PATH would fail every call: --check says so.
    fx.global_hooks(json!([]));
    fx.workspace_hooks(json!([{"name": "ghost", "command": ["toolgate-test-no-such-program"]}]));
    let out = run(&fx);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("not on PATH"), "{}", stderr(&out));
}

#[test]
fn every_command_has_help_with_an_example() {
    for args in [&["--help"][..], &["check", "--help"], &["hooks", "--help"]] {
        let out = toolgate().args(args).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(
            help.contains("Example"),
            "{args:?} help has no example:\n{help}"
        );
    }
}

#[test]
fn the_readme_quick_start_denies_the_force_push() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo");
    let stdin = std::fs::read_to_string(demo.join("force-push.json")).unwrap();
    let empty = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let toolgate = || {
        let mut cmd = toolgate();
        cmd.env("TOOLGATE_CONFIG_DIR", empty.path())
            .env("XDG_STATE_HOME", state.path());
        cmd
    };
    // A new user's first call: the demo's command hooks are not trusted
    // yet (blocked as a failure, exit 3, not a hook's deny); the reason
    // says what to run.
    let out = run_with_stdin(toolgate().args(["check", "--workspace"]).arg(&demo), &stdin);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let reason = stdout_json(&out)["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("toolgate trust --workspace"), "{reason}");
    // The README's trust step, as a script does it: review, then confirm
    // the digest the review printed.
    let review = toolgate()
        .args(["trust", "--workspace"])
        .arg(&demo)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&review.stdout).into_owned();
    let digest = text
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .expect("the review prints the digest")
        .to_owned();
    crate::support::succeeded(
        toolgate()
            .args(["trust", "--workspace"])
            .arg(&demo)
            .args(["--yes", &digest]),
    );
    let out = run_with_stdin(toolgate().args(["check", "--workspace"]).arg(&demo), &stdin);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["decided_by"], "no-force-push");
    for (file, decision) in [
        ("rm-rf.json", "modify"),
        ("write-env.json", "deny"),
        ("big-output.json", "replace"),
    ] {
        let stdin = std::fs::read_to_string(demo.join(file)).unwrap();
        let out = run_with_stdin(
            toolgate()
                .args(["check", "--workspace"])
                .arg(&demo)
                .env("TOOLGATE_CONFIG_DIR", empty.path()),
            &stdin,
        );
        assert_eq!(
            stdout_json(&out)["decision"],
            decision,
            "{file}: {}",
            stderr(&out)
        );
    }
    // The README's demo command: every demo fixture passes.
    let out = toolgate()
        .args(["test", "--workspace"])
        .arg(&demo)
        .arg(demo.join("tests"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert!(
        text.contains("test result: ok. 5 passed; 0 failed"),
        "{text}"
    );
}

fn hooks_json(fx: &Fixture, cache: &Path) -> Value {
    let out = toolgate()
        .args(["hooks", "--json", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_CACHE_DIR", cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_compile_cache_is_used_and_never_trusted_blindly() {
    let fx = Fixture::new();
    let cache = fx.dir.path().join("cache");
    fx.workspace_hooks(json!([{"name": "g", "wasm": crate::guests::path("deny")}]));
    let outcome = |fx: &Fixture| hooks_json(fx, &cache)["hooks"][0]["component"]["cache"].clone();

    assert_eq!(outcome(&fx), "miss", "first load compiles");
    assert_eq!(outcome(&fx), "hit", "second load deserializes");
    let mut entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert_eq!(
        entries.len(),
        2,
        "the artifact and its metadata: {entries:?}"
    );
    let entry = &entries[0];
    assert_eq!(entry.extension().unwrap(), "cwasm");
    assert_eq!(entries[1], entry.with_extension("meta"));

    // `toolgate check` with a warm cache decides as usual.
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_CACHE_DIR", &cache),
        PRE_SHELL,
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));

    // A flipped byte in the compiled code: detected, deleted, rebuilt.
    let mut bytes = std::fs::read(entry).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(entry, &bytes).unwrap();
    assert_eq!(outcome(&fx), "rebuilt");
    assert_eq!(outcome(&fx), "hit");

    // A truncated entry, and a file that is not an entry at all.
    let len = std::fs::metadata(entry).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(entry)
        .unwrap()
        .set_len(len / 3)
        .unwrap();
    assert_eq!(outcome(&fx), "rebuilt");
    std::fs::write(entry, b"not a cache entry").unwrap();
    assert_eq!(outcome(&fx), "rebuilt");
    assert_eq!(outcome(&fx), "hit");

    // A different component is a different key.
    fx.workspace_hooks(json!([{"name": "g", "wasm": crate::guests::path("allow")}]));
    assert_eq!(outcome(&fx), "miss");
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        4,
        "two entries, each an artifact and its metadata"
    );
}

#[test]
fn an_unusable_cache_dir_still_loads_components() {
    let fx = Fixture::new();
    let file = fx.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    fx.workspace_hooks(json!([{"name": "g", "wasm": crate::guests::path("allow")}]));
    let v = hooks_json(&fx, &file.join("cache"));
    assert_eq!(v["hooks"][0]["component"]["cache"], "uncached");
}

#[test]
fn hooks_shows_wasm_hooks_with_fuel_and_memory() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "sandboxed", "wasm": crate::guests::path("allow"), "fuel": 5000000, "memory_mb": 16}]));
    let out = toolgate()
        .args(["hooks", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    let table = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "sandboxed",
        "wasm",
        "fuel 5000000, 16 MiB",
        "allow.wasm",
        "no WASI imports",
        "1000 ms",
    ] {
        assert!(table.contains(needle), "missing {needle:?} in\n{table}");
    }
    let v = hooks_json(&fx, &fx.dir.path().join("cache"));
    let hook = &v["hooks"][0];
    assert_eq!(
        (
            hook["binding"].as_str(),
            hook["fuel"].as_u64(),
            hook["memory_mb"].as_u64()
        ),
        (Some("wasm"), Some(5000000), Some(16))
    );
}

#[test]
fn the_cache_key_names_the_linked_wasmtime() {
    let lock =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("\nname = \"wasmtime\"\n"))
        .and_then(|p| p.lines().find_map(|l| l.strip_prefix("version = \"")))
        .map(|v| v.trim_end_matches('"'))
        .unwrap();
    assert_eq!(toolgate::wasm::wasmtime_version(), version);
}

#[test]
fn either_allocator_can_be_forced_and_runs_the_same_guests() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "c", "wasm": crate::guests::path("counter")}, {"name": "g", "wasm": crate::guests::path("deny")}]));
    // One-shot commands default to on-demand allocation; either can be forced.
    for (setting, kind) in [
        (None, "on_demand"),
        (Some("pooling"), "pooling"),
        (Some("on-demand"), "on_demand"),
    ] {
        let mut cmd = toolgate();
        cmd.args(["hooks", "--json", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global());
        if let Some(s) = setting {
            cmd.env("TOOLGATE_WASM_ALLOCATOR", s);
        } else {
            cmd.env_remove("TOOLGATE_WASM_ALLOCATOR");
        }
        let v: Value = serde_json::from_slice(&cmd.output().unwrap().stdout).unwrap();
        assert_eq!(v["wasm_engine"]["allocator"]["kind"], kind, "{v}");

        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global());
        if let Some(s) = setting {
            cmd.env("TOOLGATE_WASM_ALLOCATOR", s);
        }
        let out = run_with_stdin(&mut cmd, PRE_SHELL);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(stdout_json(&out)["decided_by"], "g");
    }
}

/// The pool's memory slots hold the largest `memory_mb` of the hooks read
/// before it was made (at least the default), not the 4 GiB any hook may
/// ask for; and a hook with that budget runs in it.
#[test]
fn the_pools_memory_slots_are_sized_from_the_hooks_it_was_made_for() {
    for (memory_mb, slot) in [(None, 128), (Some(64), 128), (Some(512), 512)] {
        let fx = Fixture::new();
        let mut hook = json!({"name": "g", "wasm": crate::guests::path("deny")});
        if let Some(mb) = memory_mb {
            hook["memory_mb"] = json!(mb);
        }
        fx.workspace_hooks(json!([hook]));
        let mut cmd = toolgate();
        cmd.args(["hooks", "--json", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_WASM_ALLOCATOR", "pooling");
        let v: Value = serde_json::from_slice(&cmd.output().unwrap().stdout).unwrap();
        assert_eq!(v["wasm_engine"]["allocator"]["kind"], "pooling", "{v}");
        assert_eq!(
            v["wasm_engine"]["pool_memory_slot_mb"], slot,
            "{memory_mb:?}: {v}"
        );

        let mut cmd = toolgate();
        cmd.args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_WASM_ALLOCATOR", "pooling");
        let out = run_with_stdin(&mut cmd, PRE_SHELL);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        assert_eq!(stdout_json(&out)["decided_by"], "g");
    }
}

/// A deny-everything workspace hook, for seeing whether a workspace was used.
fn denying_workspace(fx: &Fixture) {
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "the workspace's hook ran"})),
    );
    fx.workspace_hooks(json!([{"name": "d", "command": [&deny]}]));
}

fn codex_call(cwd: &Path) -> String {
    json!({"hook_event_name": "PreToolUse", "tool_name": "Bash", "session_id": "s",
           "turn_id": "t1", "tool_input": {"command": "ls"}, "cwd": cwd})
    .to_string()
}

#[test]
fn without_a_project_dir_the_agent_finds_the_workspace_above_its_cwd() {
    let fx = Fixture::new();
    denying_workspace(&fx);
    let deep = fx.workspace().join("src/deep");
    std::fs::create_dir_all(&deep).unwrap();
    let out = run_with_stdin(
        toolgate()
            .arg("codex")
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env_remove("CLAUDE_PROJECT_DIR"),
        &codex_call(&deep),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
}

#[test]
fn the_workspace_walk_stops_at_a_repository_root() {
    let fx = Fixture::new();
    denying_workspace(&fx);
    // A repository inside the folder that has the .toolgate/: its hooks are
    // not the repository's.
    let repo = fx.workspace().join("vendor/other-repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let out = run_with_stdin(
        toolgate()
            .arg("codex")
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env_remove("CLAUDE_PROJECT_DIR"),
        &codex_call(&repo.join("src")),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let found = toolgate::config::find_workspace(&repo.join("src"), None);
    assert!(!found.found);
    assert!(found.how.contains("repository root"), "{}", found.how);
}

#[test]
fn the_workspace_walk_stops_at_home_and_below_another_users_folder() {
    // A .toolgate/ above the home directory does not configure the agent.
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.dir.path().join(".toolgate")).unwrap();
    let project = fx.dir.path().join("home/project");
    std::fs::create_dir_all(&project).unwrap();
    let out = succeeded(
        toolgate()
            .args(["hooks", "--json"])
            .current_dir(&project)
            .env("HOME", fx.dir.path().join("home"))
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
    );
    let v = stdout_json(&out);
    assert_eq!(v["workspace"]["found"], false, "{v}");
    assert!(
        v["workspace"]["how"]
            .as_str()
            .unwrap()
            .contains("home directory"),
        "{v}"
    );

    // Nor does one in a folder another user owns (a planted /tmp/.toolgate).
    let fx = Fixture::new();
    let shared = fx.dir.path().join("shared");
    std::fs::create_dir_all(shared.join(".toolgate")).unwrap();
    std::fs::create_dir_all(shared.join("mine/src")).unwrap();
    chown_to_nobody(&shared);
    let found = toolgate::config::find_workspace(&shared.join("mine/src"), None);
    assert!(!found.found, "{found:?}");
    assert!(
        found.how.contains("owned by uid 65534") && found.how.contains("another user could plant"),
        "{}",
        found.how
    );
}

#[test]
fn hooks_says_which_workspace_it_found() {
    let fx = Fixture::new();
    denying_workspace(&fx);
    let deep = fx.workspace().join("src");
    std::fs::create_dir_all(&deep).unwrap();
    let out = succeeded(
        toolgate()
            .arg("hooks")
            .current_dir(&deep)
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let ws = fx.workspace().canonicalize().unwrap();
    assert!(
        text.contains(&format!("workspace: {} (nearest ancestor of", ws.display()))
            || text.contains(&format!(
                "workspace: {} (nearest ancestor of",
                fx.workspace().display()
            )),
        "{text}"
    );
    let out = succeeded(
        toolgate()
            .args(["hooks", "--json"])
            .current_dir(&deep)
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
    );
    let v = stdout_json(&out);
    assert_eq!(v["workspace"]["found"], true, "{v}");
    assert_eq!(v["hooks"][0]["name"], "d");
    // A workspace that does not exist is an error, not "ok: 0 hooks".
    let out = toolgate()
        .args([
            "hooks",
            "--check",
            "--workspace",
            "/nonexistent/toolgate-ws",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

/// A one-shot `check` loads only the hooks that apply to its call: a
/// component for another tool is not compiled or mapped (here it would not
/// even load), while `hooks --check` and a call it applies to still see it.
/// Its fields are checked either way, names included.
#[test]
fn a_one_shot_call_loads_only_the_hooks_that_apply_to_it() {
    let fx = Fixture::new();
    std::fs::write(fx.workspace().join("broken.wasm"), b"\0asm not really").unwrap();
    // The shared test guest lives outside the workspace: copy it in.
    let guest = crate::guests::path("allow");
    std::fs::create_dir_all(fx.workspace().join("g")).unwrap();
    std::fs::copy(&guest, fx.workspace().join("g/allow.wasm")).unwrap();
    let config = |extra: Value| {
        let mut hooks = vec![
            json!({"name": "other", "wasm": "broken.wasm", "tools": ["Other"]}),
            json!({"name": "all", "wasm": "g/allow.wasm"}),
        ];
        if !extra.is_null() {
            hooks.push(extra);
        }
        fx.workspace_raw(&json!({"schema": 1, "hooks": hooks}).to_string());
    };
    config(Value::Null);
    let out = check(&fx, &["--tool", "Bash"], PRE_SHELL);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["runs"].as_array().unwrap().len(), 1);
    let out = check(&fx, &["--tool", "Other"], PRE_SHELL);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("broken.wasm"), "{}", stderr(&out));
    let out = toolgate()
        .args(["hooks", "--check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // A hook left out still counts for the duplicate-name rule.
    config(json!({"name": "other", "wasm": "g/allow.wasm"}));
    let out = check(&fx, &["--tool", "Bash"], PRE_SHELL);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("same name"), "{}", stderr(&out));
}

/// The exit-code table (cli/mod.rs): a usage error is 64 for every command
/// and never 2, which `check` keeps for a decided deny; `--help` and
/// `--version` are 0.
#[test]
fn usage_errors_exit_64_and_help_exits_0() {
    for args in [
        &["check", "--evnt", "x"][..],
        &["check", "--json"],
        &["test", "--bogus"],
        &["hooks", "--nope"],
        &["test", "--hooks", "a.json", "--workspace", "."],
        &["no-such-command"],
        &[],
    ] {
        let out = run_with_stdin(toolgate().args(args), PRE_SHELL);
        assert_eq!(out.status.code(), Some(64), "{args:?}: {}", stderr(&out));
    }
    for args in [
        &["--help"][..],
        &["--version"],
        &["check", "--help"],
        &["test", "--help"],
    ] {
        let out = toolgate().args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    // An agent command keeps its agent's convention: to Claude Code exit 2
    // blocks the call, where 64 would let it through.
    let out = run_with_stdin(toolgate().args(["claude-code", "--bogus"]), "{}");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `check`'s codes, one per meaning: 0 allow, 2 a hook decided to deny, 3
/// blocked because a hook failed (a crash is never reported as a deny), 1
/// toolgate could not evaluate. The same through a server:
/// `serve::check_exits_with_the_same_codes_through_a_server`.
#[test]
fn check_exits_0_allow_2_deny_3_hook_failed_1_bad_request() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no"})),
    );
    let crash = fx.script("crash.sh", "#!/bin/sh\nexit 7\n");
    fx.workspace_hooks(json!([
        {"name": "denier", "command": [&deny], "tools": ["deny_me"]},
        {"name": "crasher", "command": [&crash], "tools": ["crash_me"]},
        {"name": "trapper", "wasm": crate::guests::path("unreachable"), "tools": ["trap_me"]}
    ]));
    let call = |tool: &str| format!(r#"{{"tool":"{tool}","input":{{}}}}"#);
    for (stdin, code, kind) in [
        (call("ls"), 0, None),
        (call("deny_me"), 2, None),
        (call("crash_me"), 3, Some("exited_non_zero")),
        (call("trap_me"), 3, Some("trap")),
    ] {
        let out = check(&fx, &[], &stdin);
        assert_eq!(out.status.code(), Some(code), "{stdin}: {}", stderr(&out));
        let v = stdout_json(&out);
        if let Some(kind) = kind {
            assert_eq!(v["decision"], "deny", "still blocked: {v}");
            assert_eq!(v["runs"][0]["failure"]["kind"], kind, "{v}");
        }
    }
    let out = check(&fx, &[], "not json");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
}

/// A workspace hook toolgate will not run (not trusted) blocks the call as
/// a failure, exit 3, whatever its own `on_failure`: the workspace does not
/// choose to wave its untrusted hooks through.
#[test]
fn an_untrusted_hook_is_a_failure_that_always_denies() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    fx.workspace_hooks(json!([{"name": "a", "command": [&allow], "on_failure": "allow"}]));
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        PRE_SHELL,
    );
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let v = stdout_json(&out);
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("toolgate trust --workspace"),
        "the reason still says what to run: {v}"
    );
    assert_eq!(v["runs"][0]["verdict"], "failed", "{v}");
    assert_eq!(v["runs"][0]["failure"]["kind"], "not_trusted", "{v}");
    assert_eq!(v["runs"][0]["failure"]["on_failure"], "deny", "{v}");
}

/// hooks.json's `event` defaults to `pre_tool_use`; so does a request's.
#[test]
fn check_takes_a_request_without_event_as_pre_tool_use() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no"})),
    );
    fx.workspace_hooks(json!([{"name": "d", "command": [&deny]}]));
    let out = check(&fx, &[], r#"{"tool":"shell","input":{"command":"ls"}}"#);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(stdout_json(&out)["runs"][0]["event"], "pre_tool_use");
}

/// `toolgate test` judges each fixture on the outcome: a hook that failed is
/// `failed`, so a fixture expecting `deny` fails with why, and only one
/// expecting the failure passes. Exit 100 on a failed fixture, 0 when all
/// pass, 1 when a fixture cannot be read (naming the file and the field).
#[test]
fn toolgate_test_never_counts_a_failed_hook_as_a_deny() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no"})),
    );
    let crash = fx.script("crash.sh", "#!/bin/sh\necho boom >&2\nexit 7\n");
    fx.workspace_hooks(json!([
        {"name": "denier", "command": [&deny], "tools": ["deny_me"]},
        {"name": "crasher", "command": [&crash], "tools": ["crash_me"]}
    ]));
    fx.trust();
    let dir = tempfile::tempdir().unwrap();
    let fixture = |name: &str, tool: &str, expect: Value| {
        let text = json!({"request": {"tool": tool, "input": {}}, "expect": expect});
        std::fs::write(dir.path().join(name), text.to_string()).unwrap();
    };
    fixture("allow.json", "ls", json!({"decision": "allow"}));
    fixture(
        "deny.json",
        "deny_me",
        json!({"decision": "deny", "decided_by": "denier", "reason": "^no$"}),
    );
    fixture(
        "crash-expected.json",
        "crash_me",
        json!({"decision": "failed", "failure": "exited_non_zero", "message": "exit"}),
    );
    fixture(
        "crash-as-deny.json",
        "crash_me",
        json!({"decision": "deny"}),
    );
    let test = |args: &[&str]| {
        toolgate()
            .arg("test")
            .args(args)
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .output()
            .unwrap()
    };
    let ws = fx.workspace();
    let ws = ws.to_str().unwrap();
    let fixtures = dir.path().to_str().unwrap();
    let out = test(&["--workspace", ws, fixtures]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(100), "{text}{}", stderr(&out));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("ok   {fixtures}/allow.json"), "{text}");
    assert!(
        lines[1].starts_with(&format!(
            "FAIL {fixtures}/crash-as-deny.json: expected deny, got failed: hook `crasher` \
             failed (exited_non_zero), which is not a deny"
        )),
        "{text}"
    );
    assert_eq!(
        lines[2],
        format!("ok   {fixtures}/crash-expected.json"),
        "{text}"
    );
    assert_eq!(lines[3], format!("ok   {fixtures}/deny.json"), "{text}");
    assert!(
        lines[5].starts_with("test result: FAILED. 3 passed; 1 failed; finished in "),
        "{text}"
    );
    // --json: every fixture, its outcome with the runs, pass or fail.
    let out = test(&["--workspace", ws, "--json", fixtures]);
    assert_eq!(out.status.code(), Some(100));
    let v = stdout_json(&out);
    assert_eq!(
        (v["passed"].as_u64(), v["failed"].as_u64()),
        (Some(3), Some(1)),
        "{v}"
    );
    let failed = &v["fixtures"][1];
    assert_eq!(failed["passed"], false, "{v}");
    assert_eq!(
        (failed["expected"].as_str(), failed["got"].as_str()),
        (Some("deny"), Some("failed"))
    );
    assert_eq!(
        failed["outcome"]["runs"][0]["failure"]["kind"],
        "exited_non_zero"
    );
    assert!(
        failed["problems"][0]
            .as_str()
            .unwrap()
            .contains("not a deny"),
        "{v}"
    );
    // Without the wrong one, all pass; one file runs alone.
    std::fs::remove_file(dir.path().join("crash-as-deny.json")).unwrap();
    let out = test(&["--workspace", ws, fixtures]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("test result: ok. 3 passed; 0 failed"));
    // --hooks runs only that file (no global hooks, no trust needed).
    let hooks = dir.path().join("only.hooks.json");
    std::fs::write(
        &hooks,
        json!({"schema": 1, "hooks": [{"name": "denier", "command": [fx.workspace().join(&deny)]}]})
            .to_string(),
    )
    .unwrap();
    let deny_fixture = format!("{fixtures}/deny.json");
    let out = test(&["--hooks", hooks.to_str().unwrap(), &deny_fixture]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        stderr(&out)
    );
    // A fixture that cannot be read: exit 1, the file and the field named.
    fixture(
        "typo.json",
        "ls",
        json!({"decision": "allow", "reasn": "x"}),
    );
    let out = test(&["--workspace", ws, fixtures]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(
        said.contains("typo.json") && said.contains("unknown field `reasn`"),
        "{said}"
    );
}
