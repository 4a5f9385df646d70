//! Guests built by real toolchains (`guest-examples/*/build.sh`), run through
//! the real `toolgate` binary. These never skip: a guest that has not been
//! built fails the test with the command that builds it.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The built component of a guest example, or a failure naming the command
/// that builds it.
pub(crate) fn built(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("guest-examples")
        .join(name);
    let wasm = dir.join("out").join(format!("{name}.wasm"));
    assert!(
        wasm.exists(),
        "guest example {name} is not built: run `guest-examples/{name}/build.sh` \
         (or `./test.sh`, which builds every guest and then runs `cargo test`)"
    );
    wasm
}

fn check(fx: &Fixture, input: Value) -> (Option<i32>, Value) {
    check_request(
        fx,
        json!({"event": "pre_tool_use", "tool": "shell", "input": input}),
    )
}

/// The hook could not decide (its own error), and the call was blocked for
/// it: exit 3, never the 2 of a decided deny.
fn assert_fails_closed_with_guest_error(code: Option<i32>, v: &Value, message: &str) {
    assert_eq!(code, Some(3), "{v}");
    assert_eq!(v["runs"][0]["failure"]["kind"], "guest_error", "{v}");
    let got = v["runs"][0]["failure"]["message"]
        .as_str()
        .unwrap_or_default();
    assert!(got.contains(message), "{v}");
}

fn check_request(fx: &Fixture, request: Value) -> (Option<i32>, Value) {
    check_in(&fx.workspace(), &fx.global(), &request.to_string())
}

/// An argv hook that turns `--force` into `--force-with-lease`.
const LEASE_REWRITER: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
cmd = req["input"].get("command", "")
new = " ".join("--force-with-lease" if w == "--force" else w for w in cmd.split())
if new != cmd:
    print(json.dumps({"decision": "modify", "input": dict(req["input"], command=new),
                      "context": "--force was softened to --force-with-lease"}))
else:
    print(json.dumps({"decision": "allow"}))
"#;

#[test]
fn rust_guest_denies_force_push_in_a_chain_with_an_argv_hook() {
    let wasm = built("rust-deny-force-push");
    let fx = Fixture::new();
    let rewriter = fx.script("lease.py", LEASE_REWRITER);
    let chain = |config: Value| {
        json!([
            {"name": "lease-rewriter", "command": [&rewriter], "tools": ["shell"]},
            {"name": "no-force-push", "wasm": &wasm, "config": config}
        ])
    };
    fx.workspace_hooks(chain(json!({})));

    // The argv hook runs first and rewrites; the component sees the rewrite
    // (--force-with-lease is allowed) and lets the modified call through.
    let (code, v) = check(&fx, json!({"command": "git push --force origin main"}));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["decision"], "modify");
    assert_eq!(
        v["input"]["command"],
        "git push --force-with-lease origin main"
    );
    let runs: Vec<_> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].clone(),
                r["binding"].clone(),
                r["verdict"].clone(),
            )
        })
        .collect();
    assert_eq!(
        runs,
        [
            (
                json!("lease-rewriter"),
                json!("subprocess"),
                json!("modify")
            ),
            (json!("no-force-push"), json!("wasm"), json!("allow")),
        ]
    );
    assert!(v["runs"][1]["fuel_used"].as_u64().unwrap() > 0);

    // Forms the rewriter does not touch are denied by the component.
    for command in [
        "git push origin +main",
        "git push -f origin main",
        "cd repo && git push -fu origin x",
    ] {
        let (code, v) = check(&fx, json!({"command": command}));
        assert_eq!(code, Some(2), "{command}: {v}");
        assert_eq!(v["decided_by"], "no-force-push");
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .contains("rewrites shared history")
        );
    }

    // The hook's config reaches the component: leases denied too.
    fx.workspace_hooks(chain(json!({"allow_force_with_lease": false})));
    let (code, v) = check(&fx, json!({"command": "git push --force origin main"}));
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(v["decided_by"], "no-force-push");
    assert_eq!(v["context"], "--force was softened to --force-with-lease");

    // Everything else is allowed.
    for command in ["git push origin main", "ls -la", "git stash list"] {
        let (code, v) = check(&fx, json!({"command": command}));
        assert_eq!(
            (code, v["decision"].as_str()),
            (Some(0), Some("allow")),
            "{command}: {v}"
        );
    }
}

#[test]
fn python_guest_guards_input_size_with_context() {
    let wasm = built("python-size-guard");
    let fx = Fixture::new();
    let trace = fx.script("trace.py", TRACE_HOOK);
    fx.workspace_hooks(json!([
        {"name": "size", "wasm": &wasm, "config": {"max_input_bytes": 120, "max_write_lines": 3, "ask_over_bytes": 105}},
        {"name": "after", "command": [&trace]}
    ]));
    // Small: allowed, and the argv hook after it runs.
    let (code, v) = check(&fx, json!({"command": "ls"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("modify")),
        "{v}"
    );
    assert_eq!(v["runs"][0]["binding"], "wasm");
    assert!(v["runs"][0]["fuel_used"].as_u64().unwrap() > 0);
    // Over half the budget: allowed with advisory context.
    let (code, v) = check(&fx, json!({"command": "x".repeat(70)}));
    assert_eq!(code, Some(0), "{v}");
    assert!(
        v["context"]
            .as_str()
            .unwrap()
            .contains("of 120 allowed bytes"),
        "{v}"
    );
    // Between what a person confirms and the limit: the Python SDK's `ask`.
    // The argv hook's trace grows the input past it, so the guard asks in
    // the second round, and the person is asked about the rewritten input.
    let (code, v) = check(&fx, json!({"command": "x".repeat(80)}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(2), Some("ask")),
        "{v}"
    );
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("input is 112 bytes, over the 105 a person confirms"),
        "{v}"
    );
    assert_eq!(v["input"]["trace"], json!(["after"]), "{v}");
    // Over the budget: denied, and the hook after it never runs.
    let (code, v) = check(&fx, json!({"command": "x".repeat(300)}));
    assert_eq!(code, Some(2), "{v}");
    assert_eq!(v["decided_by"], "size");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("the limit here is 120")
    );
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    // Config-driven line limit on writes.
    let (code, v) = check(&fx, json!({"content": "a\nb\nc\nd"}));
    assert_eq!(code, Some(2), "{v}");
    assert!(v["reason"].as_str().unwrap().contains("3-line limit"));
}

#[test]
fn python_guest_error_is_a_guest_error_failure() {
    let wasm = built("python-size-guard");
    let fx = Fixture::new();
    // A config the guard cannot use: int("lots") raises inside check(); the SDK
    // turns it into the guest's err(), which fails closed.
    fx.workspace_hooks(
        json!([{"name": "size", "wasm": &wasm, "config": {"max_input_bytes": "lots"}}]),
    );
    let (code, v) = check(&fx, json!({"command": "ls"}));
    assert_fails_closed_with_guest_error(code, &v, "ValueError");
}

#[test]
fn js_guest_rewrites_destructive_commands_with_context() {
    let wasm = built("js-command-rewriter");
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "rewriter", "wasm": &wasm}]));
    for (command, rewritten, why) in [
        (
            "rm -rf build dist",
            "mkdir -p .trash && mv build dist .trash/",
            ".trash/",
        ),
        ("git clean -fdx", "git clean -ndx", "dry run"),
        (
            "kubectl delete pod web-1",
            "kubectl delete pod web-1 --dry-run=client",
            "--dry-run=client",
        ),
    ] {
        let (code, v) = check(&fx, json!({"command": command, "description": "x"}));
        assert_eq!(
            (code, v["decision"].as_str()),
            (Some(0), Some("modify")),
            "{command}: {v}"
        );
        assert_eq!(
            v["input"],
            json!({"command": rewritten, "description": "x"}),
            "{command}"
        );
        assert!(v["context"].as_str().unwrap().contains(why), "{v}");
        assert_eq!(v["runs"][0]["binding"], "wasm");
    }
    let (code, v) = check(&fx, json!({"command": "ls -la"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("allow")),
        "{v}"
    );
    // What no rewrite makes reversible is a person's: the JS SDK's `ask`.
    let (code, v) = check(&fx, json!({"command": "terraform apply -auto-approve"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(2), Some("ask")),
        "{v}"
    );
    assert_eq!(
        v["reason"],
        "`terraform apply -auto-approve` changes real infrastructure; a person confirms it"
    );
}

#[test]
fn a_chain_mixes_rust_js_python_go_c_guests_and_an_argv_hook() {
    let (rust, js, python, go, c) = (
        built("rust-deny-force-push"),
        built("js-command-rewriter"),
        built("python-size-guard"),
        built("go-path-guard"),
        built("c-tool-allowlist"),
    );
    let fx = Fixture::new();
    let trace = fx.script("trace.py", TRACE_HOOK);
    fx.global_hooks(json!([
        {"name": "size", "wasm": &python, "config": {"max_input_bytes": 4096}},
        {"name": "allowlist", "wasm": &c, "config": {"allowed": ["shell", "Write"]}}
    ]));
    fx.workspace_hooks(json!([
        {"name": "rewriter", "wasm": &js},
        {"name": "argv-trace", "command": [&trace]},
        {"name": "no-force-push", "wasm": &rust},
        {"name": "paths", "wasm": &go}
    ]));
    // Python (global) allows, JS rewrites, the argv hook sees the rewrite and
    // appends to it, Rust allows the result: order and threading across
    // three languages and two bindings. Each rewrite is judged again by
    // every hook before it (Python and C twice more, JS once more).
    let (code, v) = check(&fx, json!({"command": "rm -rf target"}));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(
        v["input"],
        json!({"command": "mkdir -p .trash && mv target .trash/", "trace": ["argv-trace"]})
    );
    let ran: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        ran,
        [
            "size",
            "allowlist",
            "rewriter", // round 1: rewrites rm -rf
            "size",
            "allowlist",
            "argv-trace", // round 2: appends its trace
            "size",
            "allowlist",
            "rewriter", // round 3: everyone before it agrees
            "no-force-push",
            "paths"
        ]
    );
    // A force-push passes Python and JS untouched and is denied by Rust.
    let (code, v) = check(&fx, json!({"command": "git push -f origin main"}));
    assert_eq!(
        (code, v["decided_by"].as_str()),
        (Some(2), Some("no-force-push")),
        "{v}"
    );
    // An oversized input is denied by the first hook; nothing after it runs.
    let (code, v) = check(&fx, json!({"command": "x".repeat(5000)}));
    assert_eq!(
        (code, v["decided_by"].as_str()),
        (Some(2), Some("size")),
        "{v}"
    );
    assert_eq!(v["runs"].as_array().unwrap().len(), 1);
    // C denies a tool off its list before any workspace hook runs; Go denies
    // a write outside the workspace after every other hook allowed it.
    let mut fetch = write("x");
    fetch["tool"] = json!("WebFetch");
    let (code, v) = check_request(&fx, fetch);
    assert_eq!(
        (code, v["decided_by"].as_str()),
        (Some(2), Some("allowlist")),
        "{v}"
    );
    let (code, v) = check_request(&fx, write("../../etc/hosts"));
    assert_eq!(
        (code, v["decided_by"].as_str()),
        (Some(2), Some("paths")),
        "{v}"
    );
    // Six hooks, and the three before the argv hook judged its trace again.
    assert_eq!(v["runs"].as_array().unwrap().len(), 9);
}

#[test]
fn c_guest_enforces_a_tool_allowlist_from_its_config() {
    let wasm = built("c-tool-allowlist");
    let fx = Fixture::new();
    fx.workspace_hooks(json!([{"name": "allowlist", "wasm": &wasm, "config": {"allowed": ["Read", "Grep", "shell"]}}]));
    let (code, v) = check(&fx, json!({"command": "ls"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("allow")),
        "{v}"
    );
    // `shell` is allowed; a tool that is a prefix or suffix of an allowed one is not.
    for tool in ["Bash", "Rea", "GrepX", "WebFetch"] {
        let out = run_with_stdin(
            toolgate()
                .args(["check", "--tool", tool, "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global()),
            r#"{"event":"pre_tool_use","tool":"x","input":{}}"#,
        );
        let v = stdout_json(&out);
        assert_eq!(out.status.code(), Some(2), "{tool}: {v}");
        assert!(
            v["reason"]
                .as_str()
                .unwrap()
                .contains(&format!("`{tool}` is not on")),
            "{v}"
        );
    }
    // An allowed tool in `confirm` is a person's: the C SDK's `tg_ask`.
    fx.workspace_hooks(json!([{"name": "allowlist", "wasm": &wasm,
                               "config": {"allowed": ["Read", "shell"], "confirm": ["shell"]}}]));
    let (code, v) = check(&fx, json!({"command": "ls"}));
    assert_eq!(
        (code, v["decision"].as_str(), v["reason"].as_str()),
        (
            Some(2),
            Some("ask"),
            Some("the tool `shell` needs a person's confirmation in this workspace.")
        ),
        "{v}"
    );
    // Without an allowlist it cannot decide, and fails closed.
    fx.workspace_hooks(json!([{"name": "allowlist", "wasm": &wasm}]));
    let (code, v) = check(&fx, json!({"command": "ls"}));
    assert_fails_closed_with_guest_error(code, &v, "needs an \"allowed\" list");
}

fn post_shell(stdout: &str) -> Value {
    json!({"event": "post_tool_use", "tool": "shell", "input": {"command": "cat creds"},
           "result": {"output": {"stdout": stdout, "exit_code": 0}, "is_error": false}})
}

#[test]
fn rust_guest_redacts_secrets_from_tool_output() {
    let wasm = built("rust-redact-secrets");
    let fx = Fixture::new();
    fx.workspace_hooks(json!([
        {"name": "redact", "wasm": &wasm, "event": "post_tool_use",
         "config": {"extra_patterns": ["sk-[A-Za-z0-9]{20,}"]}}
    ]));
    let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    let stdout = format!(
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\\ntoken: ghp_{}\\n{key}\\nopenai sk-{}\\nbuild ok",
        "a1".repeat(18),
        "Z9".repeat(12)
    )
    .replace("\\n", "\n");
    let (code, v) = check_request(&fx, post_shell(&stdout));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("replace")),
        "{v}"
    );
    let shown = v["result"]["output"]["stdout"].as_str().unwrap();
    assert_eq!(
        shown,
        "aws_access_key_id = [REDACTED AWS access key id]\ntoken: [REDACTED GitHub token]\n\
         [REDACTED private key]\nopenai [REDACTED configured pattern]\nbuild ok"
    );
    // The rest of the output's shape is kept; the model is told why.
    assert_eq!(v["result"]["output"]["exit_code"], 0);
    assert_eq!(v["result"]["is_error"], false);
    let context = v["context"].as_str().unwrap();
    for what in [
        "AWS access key id",
        "GitHub token",
        "private key",
        "configured pattern",
    ] {
        assert!(context.contains(what), "{context}");
    }

    // Clean output and the pre event are allowed untouched.
    let (code, v) = check_request(&fx, post_shell("compiled 3 crates"));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("allow")),
        "{v}"
    );
    fx.workspace_hooks(json!([{"name": "redact", "wasm": &wasm}]));
    let (code, v) = check(&fx, json!({"command": "cat AKIAIOSFODNN7EXAMPLE"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("allow")),
        "{v}"
    );

    // A configured pattern that is not a regex fails closed, naming it.
    fx.workspace_hooks(json!([
        {"name": "redact", "wasm": &wasm, "event": "post_tool_use",
         "config": {"extra_patterns": ["(unclosed"]}}
    ]));
    let (code, v) = check_request(&fx, post_shell("ok"));
    assert_fails_closed_with_guest_error(code, &v, "(unclosed");
}

fn write(path: &str) -> Value {
    json!({"event": "pre_tool_use", "tool": "Write", "cwd": "/work/app",
           "input": {"file_path": path, "content": "x"}})
}

#[test]
fn go_guest_guards_write_paths_resolving_dot_dot() {
    let wasm = built("go-path-guard");
    let fx = Fixture::new();
    fx.workspace_hooks(json!([
        {"name": "paths", "wasm": &wasm, "config": {"home": "/home/me", "allow_paths": ["/tmp/scratch"]}}
    ]));
    for allowed in [
        "src/main.rs",
        "/work/app/docs/x.md",
        "a/../b.txt",
        "/tmp/scratch/out.log",
    ] {
        let (code, v) = check_request(&fx, write(allowed));
        assert_eq!(
            (code, v["decision"].as_str()),
            (Some(0), Some("allow")),
            "{allowed}: {v}"
        );
    }
    for (denied, because) in [
        ("../other/x", "outside the workspace /work/app"),
        ("src/../../../etc/passwd", "resolves to /etc/passwd"),
        ("/work/application/x", "outside the workspace"),
        (".env", "\".env\" is protected"),
        ("config/.env.production", "\".env\" is protected"),
        (".git/hooks/pre-commit", "\".git\" is protected"),
        ("~/.ssh/authorized_keys", "\".ssh\" is protected"),
    ] {
        let (code, v) = check_request(&fx, write(denied));
        assert_eq!(
            (code, v["decided_by"].as_str()),
            (Some(2), Some("paths")),
            "{denied}: {v}"
        );
        let reason = v["reason"].as_str().unwrap();
        assert!(reason.contains(because), "{denied}: {reason}");
    }
    // A CI workflow is a person's to approve: the Go SDK's `Ask`.
    let (code, v) = check_request(&fx, write(".github/workflows/ci.yml"));
    assert_eq!(
        (code, v["decision"].as_str(), v["decided_by"].as_str()),
        (Some(2), Some("ask"), Some("paths")),
        "{v}"
    );
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("\".github\", which a person reviews")
    );
    // Tools that do not write, and the post event, are not its business.
    let (code, v) = check(&fx, json!({"command": "cat .env"}));
    assert_eq!(
        (code, v["decision"].as_str()),
        (Some(0), Some("allow")),
        "{v}"
    );
    // Without a workspace it cannot decide, and the SDK reports the Go error.
    let mut no_cwd = write("src/main.rs");
    no_cwd.as_object_mut().unwrap().remove("cwd");
    let (code, v) = check_request(&fx, no_cwd);
    assert_fails_closed_with_guest_error(code, &v, "no absolute workspace");
}
