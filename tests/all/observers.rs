//! The outcome seam: every host that answers a call tells the same
//! observers the same thing. One denied call to an MCP tool through each
//! of the five hosts — `check` and an agent command one-shot, the server
//! over its socket and over HTTP, and `toolgate mcp` — leaves decision-log
//! records equal but for the host (`via`, `served`) and time; and the
//! three a running server hears of (socket, HTTP, the proxy's tally) are
//! counted in its metrics alike, by hook and by MCP server and tool.

use crate::mcp::{in_fixture, policy, text_of};
use crate::mcp_stateless::{approved_raw_server, call_t};
use crate::serve::Server;
use crate::support::{Fixture, run_with_stdin, stderr, stdout_json, toolgate};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// What differs by host, by time, and by place in the chain of records.
const HOST_ONLY: [&str; 10] = [
    "via",
    "served",
    "time",
    "pid",
    "duration_us",
    "seq",
    "prev",
    "hash",
    "session_id",
    "tool_call_id",
];

/// A record without what [`HOST_ONLY`] names (and its runs' durations).
fn shape(line: &Value) -> Value {
    let mut kept = line.clone();
    kept.as_object_mut()
        .unwrap()
        .retain(|k, _| !HOST_ONLY.contains(&k.as_str()));
    for run in kept["runs"].as_array_mut().unwrap() {
        run.as_object_mut().unwrap().remove("duration_us");
    }
    kept
}

/// The proxy, asked one call with `env`, kept alive until `done` says so
/// (its tally goes to the server from a thread of its own).
fn through_the_proxy(
    fx: &Fixture,
    server: &[String],
    env: &[(&str, &Path)],
    done: impl Fn() -> bool,
) -> Value {
    let mut child = in_fixture(fx)
        .env_remove("TOOLGATE_SERVER")
        .envs(env.iter().copied())
        .args(["mcp", "--name", "raw", "--"])
        .args(server)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", call_t(1, json!({"a": 1}))).unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let started = Instant::now();
    while !done() && started.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
}

/// The value of the series `series` (with its labels, as exposed) in the
/// metrics text, 0 when absent.
fn count(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn one_call_through_every_host_leaves_the_same_record_and_each_served_one_is_counted() {
    let fx = Fixture::new();
    fx.global_hooks(json!([policy(
        &fx,
        "pre",
        "pre_tool_use",
        r#"
return {"decision": "deny", "reason": "not today"}"#
    )]));
    let log = fx.dir.path().join("logs/decisions.jsonl");
    let upstream = approved_raw_server(
        &fx,
        "logged",
        "{'content': [{'type': 'text', 'text': 'REACHED'}]}",
    );
    let (config, log_env) = (fx.global(), log.clone());
    let server = Server::start_http_with(
        |serve| {
            serve
                .env("TOOLGATE_CONFIG_DIR", &config)
                .env("TOOLGATE_DECISION_LOG", &log_env);
        },
        &["--metrics", "127.0.0.1:0"],
    );
    let metrics_addr = server
        .said_after("toolgate serve: metrics on http://")
        .trim_end_matches("/metrics")
        .to_owned();
    let metrics = || {
        crate::serve_http::raw(
            &metrics_addr,
            format!("GET /metrics HTTP/1.1\r\nHost: {metrics_addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .body
    };
    let check_input =
        json!({"event": "pre_tool_use", "tool": "mcp__raw__t", "input": {"a": 1}}).to_string();
    let claude_input = json!({"session_id": "s", "transcript_path": "/dev/null",
        "cwd": fx.workspace(), "hook_event_name": "PreToolUse", "tool_name": "mcp__raw__t",
        "tool_use_id": "toolu_1", "tool_input": {"a": 1}})
    .to_string();

    // `check` run by `command`: one-shot, or asking the server.
    let check = |mut command: std::process::Command| {
        let out = run_with_stdin(
            command
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_DECISION_LOG", &log),
            &check_input,
        );
        assert_eq!(stdout_json(&out)["decision"], "deny", "{}", stderr(&out));
    };
    // 1. `check`, one-shot (toolgate() finds no server).
    check(toolgate());
    // 2. An agent command, one-shot.
    let out = run_with_stdin(
        toolgate()
            .arg("claude-code")
            .current_dir(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log),
        &claude_input,
    );
    assert_eq!(
        stdout_json(&out)["hookSpecificOutput"]["permissionDecision"],
        "deny",
        "{}",
        stderr(&out)
    );
    // 3. The server, over its socket.
    check(server.client());
    // 4. The server, over HTTP (Claude Code's http hook).
    let reply = crate::serve_http::post(server.http.as_deref().unwrap(), &claude_input);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    // 5. `toolgate mcp`, which tallies to the running server.
    let tool_series = r#"toolgate_tool_decisions_total{server="raw",tool="t",decision="deny"}"#;
    let answer = through_the_proxy(
        &fx,
        &upstream,
        &[
            ("TOOLGATE_DECISION_LOG", &log),
            ("TOOLGATE_SOCKET", server.socket()),
        ],
        || count(&metrics(), tool_series) >= 3,
    );
    assert_eq!(
        text_of(&answer["result"]),
        "toolgate: call blocked: not today"
    );

    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "one record per host:\n{text}");
    let hosts: Vec<(&str, bool)> = lines
        .iter()
        .map(|l| (l["via"].as_str().unwrap(), l["served"].as_bool().unwrap()))
        .collect();
    assert_eq!(
        hosts,
        [
            ("check", false),
            ("claude-code", false),
            ("check", true),
            ("claude-code", true),
            ("mcp", false),
        ],
        "{text}"
    );
    for line in &lines[1..] {
        assert_eq!(shape(line), shape(&lines[0]), "\n{line}\n{}", lines[0]);
    }

    // What the server heard of (socket, HTTP, the proxy's tally) is counted
    // alike; the one-shot calls never reached it.
    let text = metrics();
    assert_eq!(count(&text, tool_series), 3, "{text}");
    assert_eq!(
        count(
            &text,
            r#"toolgate_decisions_total{hook="pre",decision="deny",source="global"}"#
        ),
        3,
        "{text}"
    );
}

#[test]
fn a_tally_from_a_sender_with_another_configuration_or_of_an_unknown_kind_is_refused() {
    // Counting is not deciding, but the metrics are the operator's: a
    // sender started with another configuration is refused as its call
    // would be, and a kind no build counts is not read at all.
    let fx = Fixture::new();
    let config = fx.global();
    let server = Server::start_with(|serve| {
        serve.env("TOOLGATE_CONFIG_DIR", &config);
    });
    let tally = json!({"tool": "mcp__raw__t", "decision": "deny"});
    let other = json!({"id": 1, "version": 1, "op": "tally", "tally": tally,
        "context": {"global": "/elsewhere"}});
    let answers = server.exchange(&[other.to_string()], 1);
    assert!(
        answers[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("global config")),
        "{answers:?}"
    );
    let unknown = json!({"id": 2, "version": 1, "op": "tally",
        "tally": {"tool": "t", "decision": "maybe"}});
    let answers = server.exchange(&[unknown.to_string()], 1);
    assert!(
        answers[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not a request this server answers")),
        "{answers:?}"
    );
}
