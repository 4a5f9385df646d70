//! `toolgate replay` through the real binary: wire-v1 recordings, Claude Code
//! transcripts, malformed lines reported and skipped, and the bundled demo.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;

fn replay(file: &Path, workspace: &Path, json_out: bool) -> Output {
    crate::support::trust(workspace);
    let mut cmd = toolgate();
    cmd.arg("replay")
        .arg(file)
        .arg("--workspace")
        .arg(workspace);
    if json_out {
        cmd.arg("--json");
    }
    cmd.env("TOOLGATE_CONFIG_DIR", workspace.join("no-global"))
        .output()
        .unwrap()
}

#[test]
fn a_wire_v1_recording_is_replayed_with_malformed_lines_reported() {
    let fx = Fixture::new();
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no writes"})),
    );
    fx.workspace_hooks(json!([{"name": "no-writes", "command": [&deny], "tools": ["write_file"]}]));
    let file = fx.dir.path().join("calls.jsonl");
    std::fs::write(
        &file,
        [
            r#"{"event":"pre_tool_use","tool":"read_file","input":{"path":"a"}}"#,
            "",
            "{oops",
            r#"{"event":"pre_tool_use","tool":"write_file","input":{"path":"b"}}"#,
            r#"{"event":"pre_tool_use","tool":"write_file"}"#,
            r#"{"hello":"world"}"#,
            r#"{"event":"post_tool_use","tool":"read_file","input":{},"result":{"output":"x","is_error":false}}"#,
        ]
        .join("\n"),
    )
    .unwrap();
    let out = replay(&file, &fx.workspace(), true);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let decisions: Vec<_> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_u64().unwrap(),
                r["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [(1, "allow".into()), (4, "deny".into()), (7, "allow".into())]
    );
    assert_eq!(v["rows"][1]["decided_by"], "no-writes");
    assert_eq!(v["totals"], json!({"allow": 2, "deny": 1}));
    let skipped: Vec<u64> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["line"].as_u64().unwrap())
        .collect();
    assert_eq!(
        skipped,
        [3, 5, 6],
        "each bad line is reported by number: {}",
        v["skipped"]
    );
    assert!(
        v["skipped"][1]["reason"]
            .as_str()
            .unwrap()
            .contains("input")
    );
}

#[test]
fn a_claude_code_transcript_feeds_pre_and_post_events() {
    let fx = Fixture::new();
    let rewrite = fx.script(
        "rw.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if req["event"] == "pre_tool_use" and req["input"].get("command") == "ls":
    print(json.dumps({"decision": "modify", "input": {"command": "ls -1"}}))
elif req["event"] == "post_tool_use":
    # Post sees the final input and the recorded result.
    print(json.dumps({"decision": "deny", "reason": "post saw %s -> %s" % (req["input"]["command"], req["result"]["output"])}))
else:
    print(json.dumps({"decision": "allow"}))
"#,
    );
    fx.workspace_hooks(
        json!([{"name": "rw", "command": [&rewrite], "event": ["pre_tool_use", "post_tool_use"]}]),
    );
    let lines = [
        json!({"type": "user", "message": {"role": "user", "content": "list files"}}),
        json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "ok"}, {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "a.txt"}]}]}}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "pwd"}}]}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "zzz", "content": "?"}]}}),
    ];
    let file = fx.dir.path().join("transcript.jsonl");
    std::fs::write(
        &file,
        lines
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let out = replay(&file, &fx.workspace(), true);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{v}");
    assert_eq!(
        (rows[0]["event"].as_str(), rows[0]["decision"].as_str()),
        (Some("pre_tool_use"), Some("modify"))
    );
    assert_eq!(rows[1]["event"], "post_tool_use");
    assert_eq!(rows[1]["reason"], "post saw ls -1 -> a.txt");
    // t2 has no recorded result: pre only.
    assert_eq!(
        (rows[2]["input"].as_str(), rows[2]["decision"].as_str()),
        (Some("pwd"), Some("allow"))
    );
    assert_eq!(v["skipped"][0]["line"], 5);
}

#[test]
fn the_bundled_demo_session_replays_every_binding() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = replay(
        &root.join("examples/demo/session.jsonl"),
        &root.join("examples/demo"),
        true,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let by: Vec<(String, String)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["decision"] != "allow")
        .map(|r| {
            (
                r["decided_by"].as_str().unwrap().to_owned(),
                r["decision"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("safer-rm", "modify"),         // native argv hook
        ("protect-secrets", "deny"),    // Claude Code-style bash hook, unmodified
        ("no-network", "deny"),         // sandboxed wasm guard (WAT)
        ("big-output-note", "replace"), // post: long output trimmed
        ("protected-paths", "deny"),
        ("no-force-push", "deny"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(by, expected);
    assert_eq!(v["calls"], 10);
    assert_eq!(
        v["skipped"].as_array().unwrap().len(),
        1,
        "the demo has one corrupted line"
    );

    // The human table names the deciding hooks and the totals.
    let out = replay(
        &root.join("examples/demo/session.jsonl"),
        &root.join("examples/demo"),
        false,
    );
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        table.contains("10 calls, 16 events: 10 allow, 4 deny, 1 modify, 1 replace"),
        "{table}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("session.jsonl:7: skipped"));
}

/// A post hook sees the same `result.output` in a replayed transcript as it
/// does live: Claude Code's structured result (kept in the transcript as
/// `toolUseResult`), or the model's text for a failed call.
#[test]
fn a_replayed_post_hook_sees_the_output_shape_it_sees_live() {
    let fx = Fixture::new();
    let echo = fx.script(
        "echo.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
print(json.dumps({"decision": "deny", "reason": json.dumps(req["result"], sort_keys=True)}))
"#,
    );
    fx.workspace_hooks(json!([{"name": "echo", "command": [&echo], "event": "post_tool_use"}]));
    let bash = json!({"stdout": "a.txt", "stderr": "", "interrupted": false, "isImage": false});
    let lines = [
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
        json!({"type": "user", "toolUseResult": bash, "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}]}}),
        json!({"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "false"}}]}}),
        json!({"type": "user", "toolUseResult": "Error: Exit code 1", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Exit code 1", "is_error": true}]}}),
    ];
    let file = fx.dir.path().join("transcript.jsonl");
    std::fs::write(&file, lines.map(|l| l.to_string()).join("\n")).unwrap();
    let v: Value = serde_json::from_slice(&replay(&file, &fx.workspace(), true).stdout).unwrap();
    let posts: Vec<Value> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "post_tool_use")
        .map(|r| serde_json::from_str(r["reason"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(posts[0], json!({"output": bash, "is_error": false}));
    assert_eq!(posts[1], json!({"output": "Exit code 1", "is_error": true}));
}

/// Each `--json` row carries the chain's run records, in the shape
/// `toolgate check` prints as `runs`: the same request replayed and checked
/// gives the same records (but for their timings).
#[test]
fn replay_json_rows_carry_the_runs_check_prints() {
    let fx = Fixture::new();
    let allow = fx.script("allow.sh", &answer_script(&json!({"decision": "allow"})));
    let deny = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "reason": "no writes"})),
    );
    fx.workspace_hooks(json!([
        {"name": "looks", "command": [&allow]},
        {"name": "no-writes", "command": [&deny], "tools": ["write_file"]},
    ]));
    let calls = [
        r#"{"event":"pre_tool_use","tool":"read_file","input":{"path":"a"}}"#,
        r#"{"event":"pre_tool_use","tool":"write_file","input":{"path":"b"}}"#,
    ];
    let file = fx.dir.path().join("calls.jsonl");
    std::fs::write(&file, calls.join("\n")).unwrap();
    let out = replay(&file, &fx.workspace(), true);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let untimed = |runs: &Value| -> Value {
        let mut runs = runs.clone();
        for run in runs.as_array_mut().expect("runs is an array") {
            run.as_object_mut().unwrap().remove("duration_us");
        }
        runs
    };
    let names = |runs: &Value| -> Vec<String> {
        runs.as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&v["rows"][0]["runs"]), ["looks"]);
    assert_eq!(names(&v["rows"][1]["runs"]), ["looks", "no-writes"]);
    assert_eq!(v["rows"][1]["runs"][1]["verdict"], "deny");
    for (row, call) in v["rows"].as_array().unwrap().iter().zip(calls) {
        let (_, checked) = check_in(&fx.workspace(), &fx.workspace().join("no-global"), call);
        assert_eq!(untimed(&row["runs"]), untimed(&checked["runs"]), "{call}");
    }
}
