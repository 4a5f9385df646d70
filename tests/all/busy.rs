//! Back-pressure: past `--max-in-flight` the server answers `busy` instead
//! of taking a call, and every caller still gets its call decided, by the
//! same chain, in its own process. Through the real binary, its socket and
//! its HTTP listener.

use crate::serve::Server;
use crate::serve_http::{claude_pre, post};
use crate::support::{Fixture, run_with_stdin, stderr, toolgate_hook};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};
use toolgate::serve::VERSION;

/// A global config with a slow hook for the tool `Slow` (it sleeps
/// `seconds`, then allows) and a guard that denies every `Bash` call.
fn slow_and_guard(seconds: &str) -> Fixture {
    let fx = Fixture::new();
    let slow = fx.global_script(
        "slow.sh",
        &format!("#!/bin/sh\ncat >/dev/null\nsleep {seconds}\necho '{{\"decision\":\"allow\"}}'\n"),
    );
    let guard = fx.global_script(
        "guard.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"deny\",\"reason\":\"the guard says no\"}'\n",
    );
    fx.global_hooks(json!([
        {"name": "slow", "command": [slow], "tools": ["Slow"]},
        {"name": "guard", "command": [guard], "tools": ["Bash"]},
    ]));
    fx
}

/// A `check` evaluation of `tool` for the server's socket.
fn evaluate(fx: &Fixture, id: usize, tool: &str) -> String {
    let input =
        json!({"event": "pre_tool_use", "tool": tool, "input": {"command": "ls"}}).to_string();
    let mut line = json!({"id": id, "version": VERSION, "op": "evaluate", "mode": "check",
                          "workspace": fx.workspace(), "input": input,
                          "context": {"global": fx.global()}})
    .to_string();
    line.push('\n');
    line
}

/// Sends `line` on a new connection and reads the first answer line: the
/// connection (to read on) and that line.
fn first_line(server: &Server, line: &str) -> (BufReader<UnixStream>, Value) {
    let stream = UnixStream::connect(server.socket()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    (&stream).write_all(line.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    (reader, serde_json::from_str(&first).unwrap())
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// What one of the thousand clients got.
#[derive(Debug, PartialEq)]
enum Got {
    /// Acknowledged, then this answer.
    Taken(Value),
    /// `busy` instead of the ack.
    Busy(Value),
}

/// A thousand clients at once against a server that evaluates four calls
/// at a time, each call a second long: the server takes some, answers every
/// other `busy` at once, holds no queue (it evaluated exactly the calls it
/// took), and is left as it was: nothing in flight, no descriptor kept.
#[test]
fn past_max_in_flight_a_thousand_clients_are_each_taken_or_told_busy_and_none_is_queued() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    // A thousand connections held at once: this process's own descriptors.
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    let fx = slow_and_guard("1");
    let mut cmd = crate::support::toolgate();
    cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    let server = Server::start_as(cmd, &["--max-in-flight", "4"]);
    // Loaded (its one workspace), then its descriptors counted.
    let (mut warm, _) = first_line(&server, &evaluate(&fx, 0, "Bash"));
    warm.read_line(&mut String::new()).unwrap();
    drop(warm);
    let fds_before = open_fds(server.pid());

    const CLIENTS: usize = 1000;
    let start = std::sync::Arc::new(std::sync::Barrier::new(CLIENTS));
    let lines: Vec<String> = (1..=CLIENTS).map(|i| evaluate(&fx, i, "Slow")).collect();
    let got: Vec<Got> = std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .iter()
            .map(|line| {
                let start = start.clone();
                let server = &server;
                std::thread::Builder::new()
                    .stack_size(128 * 1024)
                    .spawn_scoped(s, move || {
                        start.wait();
                        let (mut reader, first) = first_line(server, line);
                        if first.get("busy").is_some() {
                            return Got::Busy(first);
                        }
                        assert_eq!(first["ack"], true, "neither ack nor busy: {first}");
                        let mut answer = String::new();
                        reader.read_line(&mut answer).unwrap();
                        Got::Taken(serde_json::from_str(&answer).unwrap())
                    })
                    .unwrap()
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });

    let taken: Vec<&Value> = got
        .iter()
        .filter_map(|g| match g {
            Got::Taken(v) => Some(v),
            Got::Busy(_) => None,
        })
        .collect();
    let busy: Vec<&Value> = got
        .iter()
        .filter_map(|g| match g {
            Got::Busy(v) => Some(v),
            Got::Taken(_) => None,
        })
        .collect();
    assert_eq!(taken.len() + busy.len(), CLIENTS);
    assert!(!taken.is_empty(), "the server took no call");
    assert!(
        !busy.is_empty(),
        "four slots, a thousand one-second calls, and no busy"
    );
    for answer in &taken {
        assert_eq!(answer["exit"], 0, "a taken call is answered: {answer}");
        assert_eq!(answer["stdout"]["decision"], "allow", "{answer}");
    }
    for b in &busy {
        assert_eq!(b["busy"]["limit"], 4, "{b}");
        assert!(b["busy"]["in_flight"].as_u64().unwrap() <= 4, "{b}");
        assert!(b.get("error").is_none() && b.get("ack").is_none(), "{b}");
    }
    // It evaluated exactly what it took (plus the warm-up): nothing queued
    // behind the slots, and each busy answer counted.
    let status = server.status();
    assert_eq!(status["requests"], taken.len() + 1, "{status}");
    assert_eq!(status["busy"], busy.len(), "{status}");
    assert_eq!(status["in_flight"], 0, "{status}");
    assert_eq!(status["max_in_flight"], 4, "{status}");
    // Every connection closed: back to the descriptors it had.
    let settled = Instant::now();
    while open_fds(server.pid()) > fds_before && settled.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        open_fds(server.pid()) <= fds_before,
        "{} descriptors open, {fds_before} before the thousand clients",
        open_fds(server.pid())
    );
}

/// The agent's own command (the full binary and the lean client) told
/// `busy` decides the call itself: the guard's deny, in Claude Code's
/// form, with nothing on stderr (load is not a fault), and the server
/// counts it as busy, not as a request.
#[test]
fn an_agent_command_told_busy_evaluates_the_call_itself_with_the_same_answer() {
    let fx = slow_and_guard("5");
    let mut cmd = crate::support::toolgate();
    cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
    let server = Server::start_as(cmd, &["--max-in-flight", "1"]);
    // The one slot, held by a five-second call.
    let (_held, ack) = first_line(&server, &evaluate(&fx, 1, "Slow"));
    assert_eq!(ack["ack"], true, "{ack}");
    let input = claude_pre(&fx.workspace(), "rm -rf /");
    for (name, mut command) in [("toolgate", server.client()), ("lean", toolgate_hook())] {
        command
            .env_remove("TOOLGATE_SERVER")
            .env("TOOLGATE_SOCKET", server.socket())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace());
        let out = run_with_stdin(&mut command, &input);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{name}: {answer}"
        );
        assert!(
            answer.to_string().contains("the guard says no"),
            "{name}: {answer}"
        );
        assert!(stderr(&out).is_empty(), "{name}: {}", stderr(&out));
    }
    let status = server.status();
    assert_eq!(status["busy"], 2, "{status}");
    assert_eq!(
        status["requests"], 0,
        "only the held call, not yet answered: {status}"
    );
    assert_eq!(status["in_flight"], 1, "{status}");
}

/// Over HTTP there is no caller to hand a call back to (Claude Code has
/// no fallback): a call past the limit waits for a slot and is then
/// answered by the chain, never let through and never refused for load
/// while its deadline lasts.
#[test]
fn an_http_call_past_the_limit_waits_for_a_slot_and_is_answered() {
    let fx = slow_and_guard("1");
    let server = Server::start_http_with(
        |cmd| {
            cmd.env("TOOLGATE_CONFIG_DIR", fx.global());
        },
        &["--max-in-flight", "1"],
    );
    let (mut held, ack) = first_line(&server, &evaluate(&fx, 1, "Slow"));
    assert_eq!(ack["ack"], true, "{ack}");
    let reply = post(
        server.http.as_deref().unwrap(),
        &claude_pre(&fx.workspace(), "rm -rf /"),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer: Value = serde_json::from_str(&reply.body).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(reply.body.contains("the guard says no"), "{}", reply.body);
    // The held call was answered before the HTTP call had its slot.
    let mut line = String::new();
    held.read_line(&mut line).unwrap();
    assert!(line.contains("\"allow\""), "{line}");
    let status = server.status();
    assert_eq!(status["busy"], 0, "a wait is not busy: {status}");
    assert_eq!(status["requests"], 2, "{status}");
}
