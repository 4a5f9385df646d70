//! Live: the real agent CLIs (pinned in tests/agents/versions.env, installed
//! from npm by tests/agents/install.sh), each with `toolgate <agent>` as its
//! hook, against a mock of its model API on 127.0.0.1 (`mock_model`). One
//! module per agent; what they observe is recorded in the conformance table
//! (`conformance`), which the README's table is generated from.

mod claude;
mod claude_mods;
mod codex;
pub(crate) mod conformance;
mod copilot;
mod gemini;
mod opencode;
mod qwen;

use crate::support::*;
use serde_json::{Value, json};
use std::path::PathBuf;
use toolgate::agent::AgentHook as _;

/// The version pinned under `var` in tests/agents/versions.env (the
/// agents) or tests/agents/mcp-versions.env (the MCP servers and client).
pub(crate) fn pinned(var: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents");
    ["versions.env", "mcp-versions.env"]
        .iter()
        .find_map(|file| {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            text.lines()
                .find_map(|line| line.strip_prefix(var)?.strip_prefix('='))
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("{} pins no {var}", dir.display()))
}

/// The agent CLI `bin` pinned under `var`, as tests/agents/install.sh
/// installs it: `<cache>/<var>-<version>/node_modules/.bin/<bin>`.
pub(crate) fn agent_bin(var: &str, bin: &str) -> PathBuf {
    let version = pinned(var);
    let path = agents_cache()
        .join(format!("{var}-{version}"))
        .join("node_modules/.bin")
        .join(bin);
    assert!(
        path.exists(),
        "{bin} {version} ({var}) is not installed at {}: run tests/agents/install.sh \
         (./test.sh does it)",
        path.display()
    );
    path
}

/// `toolgate doctor --json --project <project>`'s report on `agent`, run
/// with `home` as HOME, `fx`'s global config and these variables, started
/// by the program `wrap` names (empty: directly).
pub(crate) fn doctor_report(
    agent: &str,
    project: &std::path::Path,
    home: &std::path::Path,
    fx: &Fixture,
    env: &[(&str, &std::path::Path)],
    wrap: &[String],
) -> Value {
    let toolgate = env!("CARGO_BIN_EXE_toolgate");
    let mut cmd = match wrap.split_first() {
        None => std::process::Command::new(toolgate),
        Some((program, args)) => {
            let mut cmd = std::process::Command::new(program);
            cmd.args(args).arg(toolgate);
            cmd
        }
    };
    let out = hermetic(&mut cmd)
        .args(["doctor", "--json", "--project"])
        .arg(project)
        .env("HOME", home)
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "doctor printed no JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == agent)
        .cloned()
        .unwrap_or_else(|| panic!("{report:#}"))
}

/// The argv that starts a program in a private mount namespace whose
/// `/etc` is the machine's with `upper` laid over it (overlayfs): what
/// the program reads of `/etc/<agent>` is the test's, and nothing
/// outside the namespace sees it (the other tests run beside this one).
/// Root maps to itself; another user gets a user namespace of its own.
pub(crate) fn etc_overlay(fx: &Fixture, upper: &std::path::Path) -> Vec<String> {
    let work = fx.dir.path().join("etc-work");
    std::fs::create_dir_all(upper).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let root = is_root();
    let mut argv = vec!["unshare".to_owned()];
    if !root {
        argv.push("--map-root-user".into());
    }
    argv.extend(["--mount", "--propagation", "private", "sh", "-c"].map(String::from));
    argv.push(format!(
        "mount -t overlay overlay -o lowerdir=/etc,upperdir={},workdir={} /etc && exec \"$@\"",
        upper.display(),
        work.display()
    ));
    argv.push("sh".into());
    argv
}

/// Whether the tests run as root.
pub(crate) fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// A workspace hook (`no-touch`) that denies any command with `touch` in
/// it: a guard whose absence shows as a file the command made.
pub(crate) fn no_touch_guard(fx: &Fixture) {
    let guard = py_hook(
        fx,
        "guard.py",
        "if 'touch' in req['input'].get('command', ''):\n    answer = {'decision': 'deny', 'reason': 'no touching'}",
    );
    fx.workspace_hooks(json!([{"name": "no-touch", "command": [&guard]}]));
}

/// That a run and doctor agree: the guarded command `ran` (the agent
/// skipped toolgate) exactly when doctor says the agent will not call
/// it, naming `off_by`, the file that turned it off.
pub(crate) fn doctor_agrees(label: &str, ran: bool, report: &Value, off_by: Option<PathBuf>) {
    match off_by {
        None => {
            assert!(!ran, "{label}: the agent skipped toolgate");
            assert_eq!(report["called"], true, "{label}: {report:#}");
        }
        Some(file) => {
            assert!(ran, "{label}: the agent ran toolgate");
            assert_eq!(report["called"], false, "{label}: {report:#}");
            let problems = report["problems"].to_string();
            let file = file.display().to_string();
            assert!(
                problems.contains(&format!("{file}: ")),
                "{label}: doctor does not name {file}: {problems}"
            );
        }
    }
}

/// Where tests/agents/install.sh put the agent CLIs.
pub(crate) fn agents_cache() -> PathBuf {
    std::env::var_os("TOOLGATE_AGENT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/.cache"))
}

/// Hook handlers that fail in the three ways an agent forgives: a command
/// that is not there, one that crashes, one that outlives its `timeout`.
pub(crate) fn failing_hooks(agent: &str) -> [(&'static str, Value); 3] {
    [
        (
            "missing",
            json!({"type": "command", "command": format!("/nonexistent/toolgate {agent}")}),
        ),
        (
            "crashed",
            json!({"type": "command", "command": "sh -c 'exit 1'"}),
        ),
        (
            "timed out",
            json!({"type": "command", "command": "sleep 30", "timeout": 1}),
        ),
    ]
}

pub(crate) fn bash(command: &str) -> Value {
    json!({"name": "Bash", "input": {"command": command, "description": "scripted"}})
}

/// A wire-v1 python hook from a body that sets `answer` from `req`.
/// Runs `agent` (a command built as for a headless run, its program,
/// arguments, variables and folder) on a pseudo-terminal through
/// `tests/agents/pty-drive.py`: once the screen shows `needle`, types
/// `keys`, reads on for a few seconds, and stops it. Returns whether it saw
/// the needle, and the screen's text (also kept in `screen`).
pub(crate) fn in_a_terminal(
    agent: &std::process::Command,
    screen: &std::path::Path,
    needle: &str,
    keys: &str,
) -> (bool, String) {
    let driver = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/pty-drive.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(driver)
        .arg(screen)
        .args([needle, keys, "90", "10", "--"])
        .arg(agent.get_program())
        .args(agent.get_args())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (key, value) in agent.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    // A terminal that draws, whatever the headless runs were given.
    cmd.env("TERM", "xterm-256color");
    if let Some(dir) = agent.get_current_dir() {
        cmd.current_dir(dir);
    }
    // The agent gets the PATH its headless runs get, whatever a python3
    // shim (pyenv) puts in front of it for the driver.
    let path = agent
        .get_envs()
        .find(|(k, _)| *k == "PATH")
        .and_then(|(_, v)| v.map(|v| v.to_owned()))
        .or_else(|| std::env::var_os("PATH"));
    if let Some(path) = path {
        cmd.env("PTY_DRIVE_PATH", path);
    }
    let child = cmd.spawn().expect("the terminal driver starts");
    let out = finish_within(child, std::time::Duration::from_secs(150), "pty-drive");
    let said: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "the driver printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let text = std::fs::read_to_string(screen).unwrap_or_default();
    (said["saw"] == true, text)
}

/// A workspace guard that answers `ask` for a call that touches a file
/// ("creating files needs a person here"): what a person is asked about.
pub(crate) fn asking_guard(fx: &Fixture) {
    let guard = py_hook(
        fx,
        "ask.py",
        "if 'touch' in json.dumps(req['input']):\n    answer = {'decision': 'ask', 'reason': 'creating files needs a person here'}",
    );
    fx.workspace_hooks(json!([{"name": "asker", "command": [&guard]}]));
}

/// Asserts that a terminal run showed a confirmation (`saw` its reason
/// and every one of `markers`), and that the call ran exactly when the
/// person said yes.
pub(crate) fn confirmed_only_on_yes(
    (saw, screen): (bool, String),
    markers: &[&str],
    ran: bool,
    yes: bool,
) {
    let flat: String = screen.split_whitespace().collect();
    assert!(
        saw && markers.iter().all(|m| flat.contains(m)),
        "no confirmation with the reason on the screen:\n{screen}"
    );
    assert_eq!(
        ran,
        yes,
        "answered {}, and the call {}:\n{screen}",
        if yes { "yes" } else { "no" },
        if ran { "ran" } else { "did not run" }
    );
}

pub(crate) fn py_hook(fx: &Fixture, name: &str, body: &str) -> String {
    fx.script(
        name,
        &format!(
            "#!/usr/bin/env python3\nimport json, sys\nreq = json.load(sys.stdin)\nanswer = {{\"decision\": \"allow\"}}\n{body}\nprint(json.dumps(answer))\n"
        ),
    )
}

#[test]
fn each_agents_tested_versions_are_the_releases_pinned_for_its_live_tests() {
    // `toolgate doctor` compares an agent's version with its dialect's
    // `tested_versions`; those must be what the live tests run.
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/agents/versions.env");
    let pinned: std::collections::BTreeSet<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(_, v)| v.trim().to_owned()))
        .collect();
    let claimed: std::collections::BTreeSet<String> = toolgate::agent::Outward::ALL
        .iter()
        .flat_map(|agent| agent.install().tested_versions.iter())
        .map(|v| (*v).to_owned())
        .collect();
    assert_eq!(claimed, pinned);
}

/// The hook events a pinned release of `agent` lists, read from its own
/// program: Claude Code's binary holds its event list as a JSON array;
/// Gemini CLI's and Qwen Code's settings schemas name one `… Hooks` array
/// per event.
fn listed_events(var: &str) -> Vec<String> {
    let root = agents_cache().join(format!("{var}-{}", pinned(var)));
    let files = |dir: &str| -> Vec<PathBuf> {
        let dir = root.join(dir);
        std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e} (run tests/agents/install.sh)", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "js"))
            .collect()
    };
    let (texts, pattern): (Vec<PathBuf>, &str) = match var {
        "CLAUDE_CODE_VERSION" | "CLAUDE_CODE_NEWEST_VERSION" => (
            vec![root.join("node_modules/@anthropic-ai/claude-code-linux-x64/claude")],
            r#"\["PreToolUse"(?:,"[A-Za-z]+")+\]"#,
        ),
        "GEMINI_CLI_VERSION" => (
            files("node_modules/@google/gemini-cli/bundle"),
            r#"([A-Z][A-Za-z]+): \{\s*type: "array",\s*label: "[^"]* Hooks""#,
        ),
        "QWEN_CODE_VERSION" => (
            files("node_modules/@qwen-code/qwen-code/chunks"),
            r#"([A-Z][A-Za-z]+): \{\s*type: "array",\s*label: "[^"]* Hooks""#,
        ),
        other => panic!("no event list is read for {other}"),
    };
    let re = regex::bytes::Regex::new(pattern).unwrap();
    let mut names = std::collections::BTreeSet::new();
    for file in texts {
        let bytes = std::fs::read(&file).unwrap();
        for found in re.captures_iter(&bytes) {
            match found.get(1) {
                Some(name) => {
                    names.insert(String::from_utf8_lossy(name.as_bytes()).into_owned());
                }
                None => {
                    let array: Vec<String> = serde_json::from_slice(&found[0]).unwrap();
                    names.extend(array);
                }
            }
        }
    }
    names.into_iter().collect()
}

#[test]
fn every_event_a_pinned_release_lists_is_one_its_dialect_knows() {
    use toolgate::agent::{Outward, read_agent_input};
    let agents = [
        ("CLAUDE_CODE_VERSION", Outward::ClaudeCode),
        ("CLAUDE_CODE_NEWEST_VERSION", Outward::ClaudeCode),
        ("GEMINI_CLI_VERSION", Outward::Gemini),
        ("QWEN_CODE_VERSION", Outward::QwenCode),
    ];
    for (var, dialect) in agents {
        let events = listed_events(var);
        assert!(events.len() >= 10, "{var}: read only {events:?}");
        for event in &events {
            let input = serde_json::json!({"hook_event_name": event, "cwd": "/tmp"});
            let read = read_agent_input(input.to_string().as_bytes(), dialect);
            if let Err(e) = read {
                assert!(
                    !e.to_string().contains("does not know"),
                    "{var} {} lists `{event}`, which `toolgate {dialect}` does not know: \
                     place it in the dialect's event set",
                    pinned(var)
                );
            }
        }
    }
}
