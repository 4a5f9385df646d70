//! The decision log (`$TOOLGATE_DECISION_LOG`, `toolgate log`) and
//! `TOOLGATE_LOG`'s trace, through the real binary: what a failing hook
//! wrote reaches the log from an agent command, the server logs what it
//! answers and the caller does not log it again, the file is private and
//! refused where it is not safe (the decision unchanged), rotation keeps
//! its bound, and concurrent writers leave whole lines only.

use crate::serve::Server;
use crate::support::{Fixture, run_with_stdin, stderr, stdout_json, toolgate};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A global hook that fails as a Python guard does: a traceback on stderr,
/// exit 1.
const CRASHING: &str = "#!/bin/sh\ncat >/dev/null\n\
    printf 'Traceback (most recent call last):\\n  File \"guard.py\", line 3\\nValueError: boom in the guard\\n' >&2\n\
    exit 1\n";

/// A global hook that allows, saying so on stderr.
const ALLOWING: &str =
    "#!/bin/sh\ncat >/dev/null\necho 'looked at it' >&2\necho '{\"decision\":\"allow\"}'\n";

fn fixture(script: &str) -> Fixture {
    let fx = Fixture::new();
    let guard = fx.global_script("guard.sh", script);
    fx.global_hooks(json!([{"name": "guard", "command": [guard]}]));
    fx
}

/// Where the tests put the log: a directory of the fixture's own, outside
/// the workspace.
fn log_path(fx: &Fixture) -> PathBuf {
    fx.dir.path().join("logs/decisions.jsonl")
}

fn claude_input(fx: &Fixture, tool: &str) -> String {
    json!({
        "session_id": "s-1",
        "transcript_path": "/nonexistent",
        "cwd": fx.workspace(),
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": {"command": "git status"},
        "tool_use_id": "toolu_1",
    })
    .to_string()
}

fn check_request(tool: &str) -> String {
    json!({"event": "pre_tool_use", "tool": tool, "input": {"command": "ls"}}).to_string()
}

/// `toolgate check` in `fx` (its cwd the fixture's folder) with the log at
/// `log`; its decision (without the timings) and stderr.
fn check_logging(fx: &Fixture, log: &Path, tool: &str) -> (Value, String) {
    let out = run_with_stdin(
        toolgate()
            .current_dir(fx.dir.path())
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", log),
        &check_request(tool),
    );
    let answer = stdout_json(&out);
    let decision = json!({
        "exit": out.status.code(),
        "decision": answer["decision"],
        "reason": answer["reason"],
        "decided_by": answer["decided_by"],
    });
    (decision, stderr(&out))
}

/// Every line of the log and its rotations, parsed; fails on a line that
/// is not one whole JSON object.
fn lines_of(files: &[PathBuf]) -> Vec<Value> {
    files
        .iter()
        .filter(|f| f.exists())
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{} ends in a partial line",
                f.display()
            );
            text.lines()
                .map(|l| {
                    serde_json::from_str::<Value>(l).unwrap_or_else(|e| {
                        panic!("{}: a line that is not JSON ({e}): {l:.200}", f.display())
                    })
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn rotated(log: &Path, n: u32) -> PathBuf {
    PathBuf::from(format!("{}.{n}", log.display()))
}

#[test]
fn a_failing_hooks_stderr_reaches_the_log_through_claude_code() {
    let fx = fixture(CRASHING);
    let log = log_path(&fx);
    let out = run_with_stdin(
        toolgate()
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log),
        &claude_input(&fx, "Bash"),
    );
    // The agent is told as before; the traceback is not in its answer.
    let answer = stdout_json(&out);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(!answer.to_string().contains("ValueError"), "{answer}");
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the log is private: {mode:o}");
    let lines = lines_of(&[log]);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["via"], "claude-code");
    assert_eq!(line["served"], false);
    assert_eq!(line["tool"], "Bash");
    assert_eq!(line["event"], "pre_tool_use");
    assert_eq!(line["decision"], "deny");
    assert_eq!(line["decided_by"], "guard");
    assert_eq!(line["session_id"], "s-1");
    assert_eq!(
        Path::new(line["workspace"].as_str().unwrap()),
        fx.workspace()
    );
    let run = &line["runs"][0];
    assert_eq!(run["name"], "guard");
    assert_eq!(run["failure"]["kind"], "exited_non_zero");
    let diagnostics = run["diagnostics"].as_str().unwrap();
    assert!(
        diagnostics.contains("ValueError: boom in the guard"),
        "{diagnostics}"
    );
}

#[test]
fn the_server_logs_a_call_it_answers_and_the_caller_does_not_log_it_again() {
    let fx = fixture(CRASHING);
    let log = log_path(&fx);
    // The log is the server's own (a request never names where the server
    // writes), the same as its callers'.
    let server = Server::start_with(|cmd| {
        cmd.env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log);
    });
    for (call, client) in [server.client(), {
        let mut lean = crate::support::toolgate_hook();
        lean.env_remove("TOOLGATE_SERVER")
            .env("TOOLGATE_SOCKET", server.socket());
        lean
    }]
    .into_iter()
    .enumerate()
    {
        let mut client = client;
        // Two calls (the same question about one call is answered once:
        // the server gives its first answer again, unlogged).
        let mut input: Value = serde_json::from_str(&claude_input(&fx, "Bash")).unwrap();
        input["tool_use_id"] = json!(format!("toolu_{call}"));
        let out = run_with_stdin(
            client
                .args(["claude-code", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_DECISION_LOG", &log),
            &input.to_string(),
        );
        assert_eq!(
            stdout_json(&out)["hookSpecificOutput"]["permissionDecision"],
            "deny",
            "{}",
            stderr(&out)
        );
    }
    let lines = lines_of(std::slice::from_ref(&log));
    assert_eq!(lines.len(), 2, "one line per call, not two: {lines:#?}");
    for line in &lines {
        assert_eq!(line["served"], true, "{line}");
        assert_eq!(line["via"], "claude-code");
        assert_eq!(line["pid"], server.pid());
        assert!(
            line["runs"][0]["diagnostics"]
                .as_str()
                .unwrap()
                .contains("ValueError: boom in the guard"),
            "{line}"
        );
    }
}

#[test]
fn a_log_path_that_is_not_safe_is_refused_with_a_warning_and_the_decision_stands() {
    let fx = fixture(CRASHING);
    let (expected, _) = check_logging(&fx, Path::new(""), "Bash");
    assert_eq!(expected["decision"], "deny", "{expected}");
    let dir = fx.dir.path();
    let elsewhere = dir.join("elsewhere.txt");
    std::fs::write(&elsewhere, "mine\n").unwrap();

    let symlink = dir.join("link.jsonl");
    std::os::unix::fs::symlink(&elsewhere, &symlink).unwrap();

    let open = dir.join("open/decisions.jsonl");
    std::fs::create_dir_all(open.parent().unwrap()).unwrap();
    std::fs::write(&open, "").unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o622)).unwrap();

    let shared = dir.join("shared/decisions.jsonl");
    std::fs::create_dir_all(shared.parent().unwrap()).unwrap();
    std::fs::set_permissions(
        shared.parent().unwrap(),
        std::fs::Permissions::from_mode(0o775),
    )
    .unwrap();

    let theirs = dir.join("theirs/decisions.jsonl");
    std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
    std::fs::write(&theirs, "").unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o600)).unwrap();
    crate::support::chown_to_nobody(&theirs);

    let inside = fx.workspace().join("logs/decisions.jsonl");
    let relative = PathBuf::from("decisions.jsonl");

    for (path, why) in [
        (&symlink, "it is a symlink"),
        (&open, "writable by group or others"),
        (&shared, "is writable by group or others"),
        (&theirs, "belongs to uid 65534"),
        (&inside, "inside the workspace"),
        (&relative, "not absolute"),
    ] {
        let (stdout, stderr) = check_logging(&fx, path, "Bash");
        assert_eq!(stdout, expected, "{}: the decision changed", path.display());
        assert!(
            stderr.contains("toolgate: warning: the decision log") && stderr.contains(why),
            "{}: {stderr}",
            path.display()
        );
    }
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(&open).unwrap(), "");
    assert!(!shared.exists());
    assert!(!fx.workspace().join("logs").exists());
    assert!(!fx.dir.path().join("decisions.jsonl").exists());
}

#[test]
fn rotation_keeps_the_log_and_its_three_predecessors_within_the_bound() {
    let fx = fixture(ALLOWING);
    let log = log_path(&fx);
    let bound = 3000;
    for i in 0..30 {
        let out = run_with_stdin(
            toolgate()
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_DECISION_LOG", &log)
                .env("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", bound.to_string()),
            &check_request(&format!("tool-{i}")),
        );
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let files: Vec<PathBuf> = [rotated(&log, 3), rotated(&log, 2), rotated(&log, 1), log]
        .into_iter()
        .collect();
    for f in &files {
        let len = std::fs::metadata(f)
            .unwrap_or_else(|e| panic!("{}: {e}", f.display()))
            .len();
        assert!(len <= bound, "{} holds {len} bytes", f.display());
    }
    assert!(!rotated(&files[3], 4).exists(), "only three are kept");
    let lines = lines_of(&files);
    assert!(lines.len() < 30, "the oldest were dropped: {}", lines.len());
    let tools: Vec<&str> = lines.iter().map(|l| l["tool"].as_str().unwrap()).collect();
    let expected: Vec<String> = (30 - lines.len()..30)
        .map(|i| format!("tool-{i}"))
        .collect();
    assert_eq!(tools, expected, "the newest are kept, in order");
}

/// `writers` processes each making `calls` calls in a row, all logging to
/// `log`; every command must succeed. Returns how many lines were dropped
/// because another writer held the lock past its wait (a loaded machine
/// may do that; it is a warning, never a partial line), and fails on any
/// other warning.
fn write_concurrently(
    fx: &Fixture,
    log: &Path,
    writers: usize,
    calls: usize,
    bound: Option<u64>,
) -> usize {
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                scope.spawn(move || {
                    let mut busy = 0;
                    for c in 0..calls {
                        let mut cmd = toolgate();
                        cmd.args(["check", "--workspace"])
                            .arg(fx.workspace())
                            .env("TOOLGATE_CONFIG_DIR", fx.global())
                            .env("TOOLGATE_DECISION_LOG", log);
                        if let Some(bound) = bound {
                            cmd.env("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", bound.to_string());
                        }
                        let out = run_with_stdin(&mut cmd, &check_request(&format!("w{w}-c{c}")));
                        assert!(out.status.success(), "{}", stderr(&out));
                        let said = stderr(&out);
                        if said.contains("another writer held it") {
                            busy += 1;
                        } else {
                            assert!(!said.contains("warning"), "a line was not written: {said}");
                        }
                    }
                    busy
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// A hook whose stderr makes each line longer than `PIPE_BUF` (4 KiB), past
/// which one `write` to a file is not promised to land whole.
const LONG_STDERR: &str = "#!/bin/sh\ncat >/dev/null\n\
    i=0; while [ $i -lt 80 ]; do echo \"line $i of a long diagnostic, long enough to matter.....\" >&2; i=$((i+1)); done\n\
    echo '{\"decision\":\"allow\"}'\n";

#[test]
fn concurrent_writers_leave_only_whole_lines() {
    let fx = fixture(LONG_STDERR);
    let log = log_path(&fx);
    let busy = write_concurrently(&fx, &log, 8, 50, None);
    let lines = lines_of(std::slice::from_ref(&log));
    assert_eq!(lines.len() + busy, 400, "{busy} dropped as busy");
    assert!(busy < 40, "{busy} of 400 lines dropped as busy");
    let mut tools: Vec<String> = lines
        .iter()
        .map(|l| l["tool"].as_str().unwrap().to_owned())
        .collect();
    tools.sort();
    tools.dedup();
    assert_eq!(tools.len(), lines.len(), "every call once");
    let longest = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(str::len)
        .max()
        .unwrap();
    assert!(
        longest > 4096,
        "the lines are longer than PIPE_BUF: {longest}"
    );
}

#[test]
fn concurrent_writers_rotating_keep_whole_lines_and_the_bound() {
    let fx = fixture(LONG_STDERR);
    let log = log_path(&fx);
    // About twenty lines a file: a few rotations while eight write.
    let bound = 100_000;
    write_concurrently(&fx, &log, 8, 25, Some(bound));
    // Eight writers at once, rotating: still one chain, through every file.
    let verified = toolgate()
        .args(["log", "verify", "--file"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    let files = [rotated(&log, 3), rotated(&log, 2), rotated(&log, 1), log];
    for f in &files {
        let len = std::fs::metadata(f).unwrap().len();
        assert!(len <= bound, "{} holds {len} bytes", f.display());
    }
    assert!(!lines_of(&files).is_empty());
}

#[test]
fn toolgate_log_shows_the_last_calls_as_a_table_and_as_json() {
    let fx = fixture(CRASHING);
    let log = log_path(&fx);
    for tool in ["first", "second", "third"] {
        check_logging(&fx, &log, tool);
    }
    let table = crate::support::succeeded(
        toolgate()
            .args(["log", "-n", "2"])
            .env("TOOLGATE_DECISION_LOG", &log)
            .env("COLUMNS", "200"),
    );
    let table = String::from_utf8_lossy(&table.stdout);
    for column in [
        "time (UTC)",
        "agent",
        "tool",
        "decision",
        "decided by",
        "why",
    ] {
        assert!(table.contains(column), "{table}");
    }
    assert!(!table.contains("first") && table.contains("second") && table.contains("third"));
    assert!(
        table.contains("guard: exited_non_zero: ValueError: boom in the guard"),
        "{table}"
    );
    let json = crate::support::succeeded(
        toolgate()
            .args(["log", "--json", "-n", "2", "--file"])
            .arg(&log),
    );
    let calls: Vec<Value> = String::from_utf8(json.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["tool"], "second");
    assert_eq!(calls[1]["tool"], "third");
    assert_eq!(calls[1]["via"], "check");
    assert_eq!(calls[1]["runs"][0]["failure"]["kind"], "exited_non_zero");
    // Without a log named, it says how to name one.
    let out = toolgate().arg("log").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("TOOLGATE_DECISION_LOG"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn toolgate_log_debug_traces_the_chain() {
    let fx = fixture(ALLOWING);
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_LOG", "debug"),
        &check_request("Bash"),
    );
    let trace = stderr(&out);
    for said in [
        "chain starts",
        "tool=Bash",
        "consulting hook=guard",
        "answered hook=guard",
        "duration_us=",
        "chain decided decision=\"allow\"",
    ] {
        assert!(trace.contains(said), "{said:?} not in:\n{trace}");
    }
    // Its stderr only at `trace`.
    assert!(!trace.contains("looked at it"), "{trace}");
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_LOG", "trace"),
        &check_request("Bash"),
    );
    assert!(stderr(&out).contains("looked at it"), "{}", stderr(&out));
}

#[test]
fn a_call_toolgate_could_not_evaluate_is_logged_as_an_error() {
    let fx = fixture(ALLOWING);
    fx.workspace_raw(r#"{"schema": 1, "hooks": [{"name": "x", "wasm": 7}]}"#);
    let log = log_path(&fx);
    let out = run_with_stdin(
        toolgate()
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global())
            .env("TOOLGATE_DECISION_LOG", &log),
        &claude_input(&fx, "Bash"),
    );
    // Blocked, as before.
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let lines = lines_of(std::slice::from_ref(&log));
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["decision"], "error");
    assert_eq!(lines[0]["tool"], "Bash");
    let error = lines[0]["error"].as_str().unwrap();
    assert!(error.contains("hooks.json"), "{error}");
    let table = crate::support::succeeded(
        toolgate()
            .arg("log")
            .env("TOOLGATE_DECISION_LOG", &log)
            .env("COLUMNS", "300"),
    );
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(
        table.contains("error") && table.contains("hooks.json"),
        "{table}"
    );
}
