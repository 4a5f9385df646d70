//! The subprocess binding with real processes: wire v1 on stdin/stdout,
//! supervision, and every failure kind — each failing closed by default and
//! obeying `on_failure: allow`.

use crate::support::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use toolgate::{Decision, FailureKind, Outcome, Request, Step, ToolResult};

/// Runs a one-hook workspace whose hook is `body`, once with the default
/// policy and once with `on_failure: allow`, and checks both.
async fn fails_closed_and_obeys_allow(body: &str, timeout_ms: u64, kind: FailureKind) -> Outcome {
    let fx = Fixture::new();
    let hook = fx.script("hook.sh", body);
    fx.workspace_hooks(json!([{"name": "h", "command": [&hook], "timeout_ms": timeout_ms}]));
    let closed = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", json!({"command": "ls"})))
        .await;
    let rec = record(&closed, "h");
    assert_eq!(rec.step, Step::Failed, "{rec:#?}");
    let failure = rec.failure.as_ref().unwrap();
    assert_eq!(failure.kind, kind, "{failure:#?}");
    assert!(
        !closed.may_proceed(),
        "a {kind} failure must deny by default"
    );

    fx.workspace_hooks(
        json!([{"name": "h", "command": [&hook], "timeout_ms": timeout_ms, "on_failure": "allow"}]),
    );
    let open = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", json!({"command": "ls"})))
        .await;
    assert_eq!(
        open.decision,
        Decision::Allow,
        "on_failure: allow lets a {kind} failure through"
    );
    assert!(
        record(&open, "h")
            .warning
            .as_ref()
            .unwrap()
            .contains("failed open")
    );
    closed
}

/// Whether a process is still running (a zombie counts as not running).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X"))
        }
        Err(_) => false,
    }
}

/// Whether a process stops running within a second. A SIGKILLed process
/// closes its pipes (which is what the supervisor waits for) a moment before
/// it turns into a zombie, so a check right after the call can still see it.
fn stops_running(pid: u32) -> bool {
    let until = Instant::now() + Duration::from_secs(1);
    while running(pid) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// The parent of a process, if it exists.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit(')')
        .next()?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

fn pids_in(diagnostics: &Option<String>) -> Vec<u32> {
    diagnostics
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("pid=")?.parse().ok())
        .collect()
}

#[tokio::test]
async fn request_reaches_the_hook_in_wire_v1_exactly() {
    let fx = Fixture::new();
    let dump = fx.marker("request.json");
    let hook = fx.script(
        "dump.sh",
        &format!(
            "#!/bin/sh\ncat > '{}'\necho '{{\"decision\":\"allow\"}}'\n",
            dump.display()
        ),
    );
    fx.workspace_hooks(json!([{"name": "dumper", "command": [&hook], "event": ["pre_tool_use", "post_tool_use"], "config": {"limit": 3, "list": ["a"]}}]));
    // The evidence is a file outside the hook's scratch folder.
    fx.unconfine("dumper");
    let runner = fx.runner();
    let mut request = Request::pre("shell", json!({"command": "ls -la"}));
    request.session_id = Some("sess".into());
    request.turn_id = Some("turn".into());
    request.tool_call_id = Some("call".into());
    request.cwd = Some("/repo".into());
    runner.pre_tool_use(&request).await;
    let sent: Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"schema": 1, "event": "pre_tool_use", "hook": "dumper", "tool": "shell",
               "input": {"command": "ls -la"}, "session_id": "sess", "turn_id": "turn",
               "tool_call_id": "call", "cwd": "/repo", "config": {"limit": 3, "list": ["a"]}})
    );

    runner
        .post_tool_use(&Request::post(
            "shell",
            json!({"command": "ls"}),
            ToolResult::error("boom"),
        ))
        .await;
    let sent: Value = serde_json::from_slice(&std::fs::read(&dump).unwrap()).unwrap();
    assert_eq!(
        sent,
        json!({"schema": 1, "event": "post_tool_use", "hook": "dumper", "tool": "shell",
               "input": {"command": "ls"}, "result": {"output": "boom", "is_error": true},
               "config": {"limit": 3, "list": ["a"]}})
    );
}

#[tokio::test]
async fn every_answer_shape_of_wire_v1_is_understood() {
    let fx = Fixture::new();
    let cases = [
        (
            json!({"decision": "allow", "context": "fine", "future_field": 1}),
            Decision::Allow,
        ),
        (
            json!({"decision": "deny", "reason": "no"}),
            Decision::Deny {
                reason: "no".into(),
            },
        ),
        (
            json!({"decision": "modify", "input": {"command": "ls -i"}}),
            Decision::Modify {
                input: json!({"command": "ls -i"}),
            },
        ),
        (
            json!({"decision": "replace", "result": {"output": {"files": []}, "is_error": false}}),
            Decision::Replace {
                result: ToolResult::ok(json!({"files": []})),
            },
        ),
    ];
    for (i, (answer, expected)) in cases.into_iter().enumerate() {
        let hook = fx.script(&format!("a{i}.sh"), &answer_script(&answer));
        fx.workspace_hooks(json!([{"name": "h", "command": [&hook]}]));
        let outcome = fx
            .runner()
            .pre_tool_use(&Request::pre("t", json!({})))
            .await;
        assert_eq!(outcome.decision, expected, "answer {answer}");
    }
}

#[tokio::test]
async fn a_deny_without_a_reason_still_denies_even_when_failing_open() {
    let fx = Fixture::new();
    let hook = fx.script(
        "deny.sh",
        &answer_script(&json!({"decision": "deny", "context": 5})),
    );
    fx.workspace_hooks(json!([{"name": "h", "command": [&hook], "on_failure": "allow"}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    assert!(
        matches!(outcome.decision, Decision::Deny { .. }),
        "{:?}",
        outcome.decision
    );
}

#[tokio::test]
async fn tool_input_reaches_the_hook_as_inert_data() {
    let fx = Fixture::new();
    let pwned = fx.marker("pwned");
    let received = fx.marker("received.json");
    let hook = fx.script(
        "echo.py",
        &format!(
            r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
open({:?}, "w").write(json.dumps(req["input"]))
print(json.dumps({{"decision": "allow"}}))
"#,
            received.display().to_string()
        ),
    );
    fx.workspace_hooks(json!([{"name": "echo", "command": [&hook, "--tool", "shell"]}]));
    fx.unconfine("echo");
    let hostile = json!({
        "command": format!("$(touch {0}) ; rm -rf {0}.dir ; `touch {0}` \n touch {0} && echo ' \" \\", pwned.display()),
        "path": "--help",
    });
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("shell", hostile.clone()))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(
        !pwned.exists(),
        "nothing in the tool input may run as shell syntax"
    );
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&received).unwrap()).unwrap();
    assert_eq!(got, hostile, "the hook receives the input byte for byte");
}

#[tokio::test]
async fn relative_program_resolves_against_the_config_root_and_runs_there() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.workspace().join("hooks")).unwrap();
    write_executable(
        &fx.workspace().join("hooks/where.sh"),
        "#!/bin/sh\ncat >/dev/null\nprintf '{\"decision\":\"deny\",\"reason\":\"%s\"}' \"$(pwd)\"\n",
    );
    fx.workspace_hooks(json!([{"name": "where", "command": ["hooks/where.sh"]}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    let root = fx.workspace().canonicalize().unwrap();
    assert_eq!(
        outcome.decision,
        Decision::Deny {
            reason: root.display().to_string()
        }
    );
}

#[tokio::test]
async fn stdin_is_written_concurrently_with_reading_output() {
    // Answers first, then reads a request far larger than a pipe buffer: a
    // host that wrote all of stdin before reading stdout would deadlock.
    let big = "x".repeat(4 * 1024 * 1024);
    let fx = Fixture::new();
    let hook = fx.script(
        "early.sh",
        "#!/bin/sh\nhead -c 200000 /dev/zero | tr '\\0' ' '\necho '{\"decision\":\"allow\"}'\ncat > /dev/null\n",
    );
    fx.workspace_hooks(json!([{"name": "early", "command": [&hook], "timeout_ms": 20000}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({"blob": big})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow, "{:#?}", outcome.runs);

    // A hook that never reads its stdin is fine too (EPIPE is ignored).
    let hook = fx.script("deaf.sh", "#!/bin/sh\necho '{\"decision\":\"allow\"}'\n");
    fx.workspace_hooks(json!([{"name": "deaf", "command": [&hook]}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({"blob": "y".repeat(1 << 20)})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow, "{:#?}", outcome.runs);
}

#[tokio::test]
async fn hang_times_out_and_the_process_is_reaped() {
    let started = Instant::now();
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\necho pid=$$ >&2\nexec sleep 30\n",
        300,
        FailureKind::TimedOut,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "two runs took {:?}",
        started.elapsed()
    );
    let rec = record(&outcome, "h");
    assert!(
        rec.failure
            .as_ref()
            .unwrap()
            .message
            .contains("terminated with SIGTERM")
    );
    let pids = pids_in(&rec.diagnostics);
    assert_eq!(pids.len(), 1, "{:?}", rec.diagnostics);
    assert!(stops_running(pids[0]), "the timed-out hook is gone");
    assert_ne!(
        parent(pids[0]),
        Some(std::process::id()),
        "no zombie of ours is left"
    );
}

#[tokio::test]
async fn ignoring_sigterm_gets_sigkill_after_the_grace_period() {
    let started = Instant::now();
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\ntrap '' TERM\necho pid=$$ >&2\nsleep 30 &\necho pid=$! >&2\nwait\nwait\n",
        300,
        FailureKind::TimedOut,
    )
    .await;
    let elapsed = started.elapsed();
    // Two runs, each at least timeout + grace.
    assert!(
        elapsed >= 2 * (Duration::from_millis(300) + toolgate::limits::KILL_GRACE),
        "{elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    let rec = record(&outcome, "h");
    assert!(
        rec.failure.as_ref().unwrap().message.contains("SIGKILL"),
        "{:?}",
        rec.failure
    );
    for pid in pids_in(&rec.diagnostics) {
        assert!(
            stops_running(pid),
            "process {pid} of the hook's group survived"
        );
    }
}

#[tokio::test]
async fn a_grandchild_holding_stdout_cannot_hold_the_call() {
    let fx = Fixture::new();
    // Answers, exits at once, but leaves a background process holding stdout.
    let hook = fx.script(
        "bg.sh",
        "#!/bin/sh\ncat >/dev/null\nsleep 30 &\necho pid=$! >&2\necho '{\"decision\":\"allow\"}'\n",
    );
    fx.workspace_hooks(json!([{"name": "bg", "command": [&hook], "timeout_ms": 20000}]));
    let started = Instant::now();
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "held for {:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome.decision,
        Decision::Allow,
        "the hook did answer before it exited"
    );
    let rec = record(&outcome, "bg");
    assert!(
        rec.warning
            .as_ref()
            .unwrap()
            .contains("kept its stdout/stderr open"),
        "{rec:#?}"
    );
    let pids = pids_in(&rec.diagnostics);
    assert_eq!(pids.len(), 1);
    assert!(
        stops_running(pids[0]),
        "the grandchild was killed with the group"
    );

    // The same, while the hook itself never answers: its deadline still holds.
    let hook = fx.script("bg-hang.sh", "#!/bin/sh\nsleep 30 &\nsleep 30\n");
    fx.workspace_hooks(json!([{"name": "bg-hang", "command": [&hook], "timeout_ms": 300}]));
    let started = Instant::now();
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "held for {:?}",
        started.elapsed()
    );
    assert_eq!(failure_kind(&outcome, "bg-hang"), FailureKind::TimedOut);
}

#[tokio::test]
async fn exiting_non_zero_is_a_failure_whatever_it_printed() {
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\necho '{\"decision\":\"allow\"}'\nexit 3\n",
        5000,
        FailureKind::ExitedNonZero,
    )
    .await;
    assert!(failure_message(&outcome, "h").contains("exit code 3"));
}

#[tokio::test]
async fn being_killed_by_a_signal_is_exiting_non_zero() {
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\nkill -SEGV $$\n",
        5000,
        FailureKind::ExitedNonZero,
    )
    .await;
    assert!(failure_message(&outcome, "h").contains("SIGSEGV"));
}

#[tokio::test]
async fn printing_nothing_is_empty_output() {
    fails_closed_and_obeys_allow(
        "#!/bin/sh\ncat >/dev/null\nexit 0\n",
        5000,
        FailureKind::EmptyOutput,
    )
    .await;
}

#[tokio::test]
async fn printing_non_json_is_not_a_decision() {
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\necho 'looks fine to me'\n",
        5000,
        FailureKind::NotADecision,
    )
    .await;
    assert!(failure_message(&outcome, "h").contains("looks fine to me"));
}

#[tokio::test]
async fn printing_two_answers_is_not_a_decision() {
    fails_closed_and_obeys_allow(
        "#!/bin/sh\necho '{\"decision\":\"allow\"}'\necho '{\"decision\":\"deny\"}'\n",
        5000,
        FailureKind::NotADecision,
    )
    .await;
}

#[tokio::test]
async fn printing_an_unknown_decision_is_not_a_decision() {
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\necho '{\"decision\":\"maybe\"}'\n",
        5000,
        FailureKind::NotADecision,
    )
    .await;
    assert!(failure_message(&outcome, "h").contains("\"maybe\""));
}

#[tokio::test]
async fn modify_or_replace_without_its_payload_is_not_a_decision() {
    fails_closed_and_obeys_allow(
        "#!/bin/sh\necho '{\"decision\":\"modify\"}'\n",
        5000,
        FailureKind::NotADecision,
    )
    .await;
    fails_closed_and_obeys_allow(
        "#!/bin/sh\necho '{\"decision\":\"replace\",\"result\":\"x\"}'\n",
        5000,
        FailureKind::NotADecision,
    )
    .await;
}

#[tokio::test]
async fn flooding_stdout_is_oversized_output_with_bounded_memory() {
    let started = Instant::now();
    // Never stops printing; only the cap ends it.
    let outcome = fails_closed_and_obeys_allow(
        "#!/bin/sh\nexec yes '{\"decision\":\"allow\"}'\n",
        20000,
        FailureKind::OversizedOutput,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let message = &failure_message(&outcome, "h");
    assert!(
        message.contains(&toolgate::limits::STDOUT_CAP.to_string()),
        "{message}"
    );
}

#[tokio::test]
async fn flooding_stderr_is_captured_bounded_and_the_answer_still_counts() {
    let fx = Fixture::new();
    let hook = fx.script(
        "noisy.sh",
        "#!/bin/sh\nhead -c 50000000 /dev/zero | tr '\\0' 'e' >&2\necho '{\"decision\":\"allow\"}'\n",
    );
    fx.workspace_hooks(json!([{"name": "noisy", "command": [&hook], "timeout_ms": 30000}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    assert_eq!(outcome.decision, Decision::Allow);
    let diagnostics = record(&outcome, "noisy").diagnostics.clone().unwrap();
    assert!(
        diagnostics.len() < toolgate::limits::STDERR_CAP + 200,
        "{} bytes kept",
        diagnostics.len()
    );
    assert!(diagnostics.contains("stderr truncated"));
}

#[tokio::test]
async fn terminal_control_sequences_in_stderr_are_neutralised() {
    let fx = Fixture::new();
    let hook = fx.script("esc.sh", "#!/bin/sh\nprintf '\\033]0;pwned\\007\\033[2Jhello\\n' >&2\necho '{\"decision\":\"allow\"}'\n");
    fx.workspace_hooks(json!([{"name": "esc", "command": [&hook]}]));
    let outcome = fx
        .runner()
        .pre_tool_use(&Request::pre("t", json!({})))
        .await;
    let diagnostics = record(&outcome, "esc").diagnostics.clone().unwrap();
    assert!(
        !diagnostics.contains('\u{1b}') && !diagnostics.contains('\u{7}'),
        "{diagnostics:?}"
    );
    assert!(diagnostics.contains("hello"));
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_failure() {
    let fx = Fixture::new();
    for on_failure in ["deny", "allow"] {
        // A global hook: a workspace hook naming a missing program cannot
        // even be trusted (trust.rs); the binding's failure is what is tested.
        fx.global_hooks(json!([{"name": "h", "command": ["toolgate-test-no-such-program"], "on_failure": on_failure}]));
        let outcome = fx
            .runner()
            .pre_tool_use(&Request::pre("t", json!({})))
            .await;
        let rec = record(&outcome, "h");
        assert_eq!(rec.failure.as_ref().unwrap().kind, FailureKind::SpawnFailed);
        assert_eq!(outcome.may_proceed(), on_failure == "allow");
    }
}

#[tokio::test]
async fn a_program_that_is_not_executable_is_a_spawn_failure() {
    let fx = Fixture::new();
    std::fs::write(
        fx.global().join("plain.sh"),
        "#!/bin/sh\necho '{\"decision\":\"allow\"}'\n",
    )
    .unwrap();
    for on_failure in ["deny", "allow"] {
        fx.global_hooks(
            json!([{"name": "h", "command": ["./plain.sh"], "on_failure": on_failure}]),
        );
        let outcome = fx
            .runner()
            .pre_tool_use(&Request::pre("t", json!({})))
            .await;
        let failure = record(&outcome, "h").failure.clone().unwrap();
        assert_eq!(failure.kind, FailureKind::SpawnFailed);
        assert!(
            failure.message.to_lowercase().contains("permission denied"),
            "{}",
            failure.message
        );
        assert_eq!(outcome.may_proceed(), on_failure == "allow");
    }
}

#[tokio::test]
async fn the_next_call_to_a_hook_that_failed_works() {
    let fx = Fixture::new();
    // Fails on the first call only.
    let flag = fx.marker("failed-once");
    let hook = fx.script(
        "flaky.sh",
        &format!(
            "#!/bin/sh\ncat >/dev/null\nif [ ! -e '{0}' ]; then touch '{0}'; exec sleep 30; fi\necho '{{\"decision\":\"allow\"}}'\n",
            flag.display()
        ),
    );
    fx.workspace_hooks(json!([{"name": "flaky", "command": [&hook], "timeout_ms": 300}]));
    fx.unconfine("flaky");
    let runner = fx.runner();
    let first = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert!(!first.may_proceed());
    let second = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    assert_eq!(second.decision, Decision::Allow);
}

#[tokio::test]
async fn concurrent_calls_through_one_runner_stay_independent() {
    let fx = Fixture::new();
    let echo = fx.script(
        "echo.py",
        r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
print(json.dumps({"decision": "deny", "reason": str(req["input"]["n"])}))
"#,
    );
    fx.workspace_hooks(json!([{"name": "echo", "command": [&echo]}]));
    let runner = fx.runner();
    let calls = (0..8).map(|n| {
        let runner = runner.clone();
        tokio::spawn(async move {
            (
                n,
                runner
                    .pre_tool_use(&Request::pre("t", json!({"n": n})))
                    .await,
            )
        })
    });
    for call in calls {
        let (n, outcome) = call.await.unwrap();
        assert_eq!(
            outcome.decision,
            Decision::Deny {
                reason: n.to_string()
            }
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn waiting_for_a_hook_never_blocks_the_async_runtime() {
    // One thread runs both the chain and a ticker: if waiting for the hook
    // blocked that thread, the ticker could not tick while the hook sleeps.
    let fx = Fixture::new();
    let hook = fx.script(
        "slow.sh",
        "#!/bin/sh\ncat >/dev/null\nsleep 0.5\necho '{\"decision\":\"allow\"}'\n",
    );
    fx.workspace_hooks(json!([{"name": "slow", "command": [&hook]}]));
    let runner = fx.runner();
    let ticker = tokio::spawn(async {
        let mut ticks = 0u32;
        loop {
            tokio::time::sleep(Duration::from_millis(10)).await;
            ticks += 1;
            if ticks == 1_000 {
                return ticks;
            }
        }
    });
    let started = Instant::now();
    let outcome = runner.pre_tool_use(&Request::pre("t", json!({}))).await;
    let waited = started.elapsed();
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(!ticker.is_finished());
    ticker.abort();
    // The hook took at least 0.5 s; the runtime stayed free the whole time.
    assert!(waited >= Duration::from_millis(500));
}
