//! Shadow mode (issue 40): a hook in `"mode": "shadow"` runs as it would,
//! its verdict recorded in the run record, the decision log and the
//! metrics, and the call goes on as if it were absent. Each test tries to
//! make a shadow hook change a call: by denying, rewriting, failing,
//! eating the chain's deadline, or adding context for the model. The
//! managed-layer rules are in `managed.rs`, where the real managed layer is.

use crate::support::{Fixture, run_with_stdin, stderr, stdout_json, toolgate};
use serde_json::{Value, json};
use std::path::Path;

const REQUEST: &str = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"}}"#;

/// A global hook script answering with `body` after reading the request.
fn answering(fx: &Fixture, name: &str, body: &str) -> String {
    fx.global_script(name, &format!("#!/bin/sh\ncat >/dev/null\n{body}\n"))
}

/// Writes the global hooks.json as `config`.
fn global_raw(fx: &Fixture, config: &Value) {
    std::fs::write(fx.global().join("hooks.json"), config.to_string()).unwrap();
}

fn check(fx: &Fixture, log: Option<&Path>) -> (Option<i32>, Value) {
    let mut cmd = toolgate();
    cmd.args(["check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global());
    if let Some(log) = log {
        cmd.env("TOOLGATE_DECISION_LOG", log);
    }
    let out = run_with_stdin(&mut cmd, REQUEST);
    assert!(!stderr(&out).contains("warning"), "{}", stderr(&out));
    (out.status.code(), stdout_json(&out))
}

#[test]
fn a_shadow_deny_is_recorded_everywhere_and_the_call_proceeds() {
    let fx = Fixture::new();
    let deny = answering(
        &fx,
        "deny.sh",
        r#"echo '{"decision":"deny","reason":"too risky"}'"#,
    );
    let allow = answering(&fx, "allow.sh", r#"echo '{"decision":"allow"}'"#);
    fx.global_hooks(json!([
        {"name": "candidate", "command": [deny], "mode": "shadow"},
        {"name": "current", "command": [allow]},
    ]));
    let log = fx.dir.path().join("logs/decisions.jsonl");
    for _ in 0..3 {
        let (code, answer) = check(&fx, Some(&log));
        assert_eq!(code, Some(0), "{answer}");
        assert_eq!(answer["decision"], "allow");
        assert_eq!(answer["decided_by"], Value::Null);
        assert_eq!(
            answer["shadow"],
            json!({"would": "deny", "by": "candidate"})
        );
        assert_eq!(answer["runs"][0]["shadow"], true);
        assert_eq!(answer["runs"][0]["verdict"], "deny");
        assert_eq!(answer["runs"][0]["reason"], "too risky");
        assert_eq!(answer["runs"][1].get("shadow"), None);
    }
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["decision"], "allow");
    assert_eq!(
        record["shadow"],
        json!({"would": "deny", "by": "candidate"})
    );
    // What the shadow policy would have denied, per hook.
    let out = crate::support::succeeded(
        toolgate()
            .args(["log", "--shadow", "--json", "--all", "--file"])
            .arg(&log),
    );
    let counts: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        counts,
        json!([{"hook": "candidate", "source": "global", "runs": 3, "would_deny": 3,
                "would_ask": 0, "would_modify": 0, "would_replace": 0, "would_fail": 0}])
    );
    let out = crate::support::succeeded(
        toolgate()
            .args(["log", "--shadow", "--all", "--file"])
            .arg(&log),
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("candidate") && table.contains("3 (100.0%)"),
        "{table}"
    );
}

#[test]
fn a_shadow_rewrite_is_not_applied_and_later_hooks_see_the_real_input() {
    let fx = Fixture::new();
    let rewrite = answering(
        &fx,
        "rewrite.sh",
        r#"echo '{"decision":"modify","input":{"command":"rm -rf /"}}'"#,
    );
    // Denies unless it is asked about the call's own input.
    let judge = fx.global_script(
        "judge.sh",
        "#!/bin/sh\nif grep -q '\"command\":\"ls\"'; then echo '{\"decision\":\"allow\"}'; \
         else echo '{\"decision\":\"deny\",\"reason\":\"saw a rewrite\"}'; fi\n",
    );
    fx.global_hooks(json!([
        {"name": "rewriter", "command": [rewrite], "mode": "shadow"},
        {"name": "judge", "command": [judge]},
    ]));
    let (code, answer) = check(&fx, None);
    assert_eq!(code, Some(0), "{answer}");
    assert_eq!(answer["decision"], "allow", "not modify: {answer}");
    assert_eq!(answer.get("input"), None);
    assert_eq!(
        answer["shadow"],
        json!({"would": "modify", "by": "rewriter"})
    );
    assert_eq!(
        answer["runs"].as_array().unwrap().len(),
        2,
        "no second round"
    );
}

#[test]
fn a_shadow_hooks_failure_never_blocks_nor_eats_the_chains_deadline() {
    let fx = Fixture::new();
    let crash = answering(&fx, "crash.sh", "echo boom >&2; exit 1");
    let slow = answering(&fx, "slow.sh", "sleep 2");
    let allow_late = answering(&fx, "late.sh", r#"sleep 0.3; echo '{"decision":"allow"}'"#);
    global_raw(
        &fx,
        &json!({
            "schema": 1,
            "chain_timeout_ms": 1000,
            "hooks": [
                {"name": "crashes", "command": [crash], "mode": "shadow"},
                {"name": "hangs", "command": [slow], "mode": "shadow", "timeout_ms": 900},
                {"name": "enforcing", "command": [allow_late]},
            ],
        }),
    );
    let (code, answer) = check(&fx, None);
    assert_eq!(code, Some(0), "{answer}");
    assert_eq!(answer["decision"], "allow");
    let runs = answer["runs"].as_array().unwrap();
    assert_eq!(runs[0]["verdict"], "failed");
    assert_eq!(runs[1]["verdict"], "failed");
    assert_eq!(runs[1]["failure"]["kind"], "timed_out", "{answer}");
    assert_eq!(
        runs[2]["verdict"], "allow",
        "the enforcing hook had its time: {answer}"
    );
    assert_eq!(answer["shadow"], json!({"would": "deny", "by": "crashes"}));
}

/// A slow shadow hook turned an allowed call into a block: the chain's
/// deadline was moved on by what it took, but the process's watchdog
/// (fixed to the agent's own hook timeout) was not, so the enforcing hook
/// after it ran past the watchdog. A shadow hook now runs beside the
/// chain: the enforcing hook has all its time, the call is allowed, and
/// the shadow's answer is still recorded.
///
/// The times: `--deadline-ms 5000` gives the chain 4 s before the
/// watchdog at 5 s. The shadow hook takes 3 s and the enforcing one 2.5 s:
/// in sequence 5.5 s (past the watchdog), side by side 3 s.
#[test]
fn a_slow_shadow_hook_never_turns_an_allowed_call_into_a_block_by_time() {
    let fx = Fixture::new();
    let slow = answering(
        &fx,
        "slow.sh",
        r#"sleep 3; echo '{"decision":"deny","reason":"would block"}'"#,
    );
    let allow_late = answering(&fx, "late.sh", r#"sleep 2.5; echo '{"decision":"allow"}'"#);
    global_raw(
        &fx,
        &json!({
            "schema": 1,
            "chain_timeout_ms": 30000,
            "hooks": [
                {"name": "trial", "command": [slow], "mode": "shadow", "timeout_ms": 20000},
                {"name": "enforcing", "command": [allow_late], "timeout_ms": 20000},
            ],
        }),
    );
    let log = fx.marker("decisions.jsonl");
    let call = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "cwd": fx.workspace(), "session_id": "s"})
    .to_string();
    let mut cmd = toolgate();
    cmd.args(["claude-code", "--deadline-ms", "5000"])
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("CLAUDE_PROJECT_DIR", fx.workspace())
        .env("TOOLGATE_DECISION_LOG", &log);
    let out = run_with_stdin(&mut cmd, &call);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        !printed.contains("deny") && !stderr(&out).contains("blocked"),
        "a shadow hook's time blocked the call: {printed} {}",
        stderr(&out)
    );
    // The shadow's answer is recorded, in chain order, as a shadow.
    let record: Value = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .last()
        .map(|l| serde_json::from_str(l).unwrap())
        .unwrap();
    let runs = record["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{record}"));
    assert_eq!(runs[0]["name"], "trial", "{record}");
    assert_eq!(runs[0]["shadow"], true, "{record}");
    assert_eq!(runs[0]["verdict"], "deny", "{record}");
    assert_eq!(runs[1]["name"], "enforcing", "{record}");
}

#[test]
fn a_shadow_hooks_context_never_reaches_the_model() {
    let fx = Fixture::new();
    let advise = answering(
        &fx,
        "advise.sh",
        r#"echo '{"decision":"allow","context":"SHADOW CONTEXT"}'"#,
    );
    fx.global_hooks(json!([{"name": "advisor", "command": [advise], "mode": "shadow"}]));
    let (code, answer) = check(&fx, None);
    assert_eq!(code, Some(0));
    assert_eq!(answer.get("context"), None, "{answer}");
    assert_eq!(answer.get("shadow"), None, "an allow changes nothing");
}

#[test]
fn a_files_mode_shadow_puts_each_of_its_hooks_in_shadow() {
    let fx = Fixture::new();
    let deny = answering(
        &fx,
        "deny.sh",
        r#"echo '{"decision":"deny","reason":"no"}'"#,
    );
    global_raw(
        &fx,
        &json!({"schema": 1, "mode": "shadow", "hooks": [
            {"name": "one", "command": [deny]},
            {"name": "two", "command": [deny]},
        ]}),
    );
    let (code, answer) = check(&fx, None);
    assert_eq!(code, Some(0), "{answer}");
    assert_eq!(answer["runs"][0]["shadow"], true);
    assert_eq!(answer["runs"][1]["shadow"], true);
    let hooks = crate::support::succeeded(
        toolgate()
            .args(["hooks", "--json", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
    );
    let text = String::from_utf8_lossy(&hooks.stdout);
    assert!(
        text.contains("\"mode\":\"shadow\"") || text.contains("\"mode\": \"shadow\""),
        "{text}"
    );
    // A mode nobody knows is a config error naming the file and field.
    global_raw(
        &fx,
        &json!({"schema": 1, "hooks": [{"name": "x", "command": [deny], "mode": "dry-run"}]}),
    );
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        REQUEST,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("mode") && stderr(&out).contains("unknown mode \"dry-run\""),
        "{}",
        stderr(&out)
    );
}
