//! Guests built by real toolchains (`guest-examples/*/build.sh`), run through
//! the real `toolgate` binary. These never skip: a guest that has not been
//! built fails the test with the command that builds it.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built component of a guest example, or a failure naming the command
/// that builds it.
pub fn built(name: &str) -> PathBuf {
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
    let request = json!({"event": "pre_tool_use", "tool": "shell", "input": input});
    let out = run_with_stdin(
        Command::new(env!("CARGO_BIN_EXE_toolgate"))
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        &request.to_string(),
    );
    (out.status.code(), stdout_json(&out))
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
