//! The suite's `toolgate` reads nothing of the user's: a test that passed
//! because of a developer's global config, compile cache, trust store or
//! running server (or failed because of them) would say nothing about the
//! code. [`support::hermetic`](crate::support::hermetic) gives every command
//! that runs the binary an environment of its own; this module proves it by
//! running the same commands in a clean and in a hostile environment.

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What a few commands answer through the suite's helpers, one `PROBE` line
/// each, paths inside the fixture and the run's own directory written as
/// `<fx>` and `<run>`. Only [`a_hostile_home_changes_no_result`] runs it, in
/// a test process of its own whose environment it sets.
#[test]
#[ignore = "run by hermetic::a_hostile_home_changes_no_result, in the environment it sets"]
fn probe() {
    let fx = Fixture::new();
    let context = fx.script(
        "context.sh",
        &answer_script(&json!({"decision": "allow", "context": "from the workspace"})),
    );
    fx.workspace_hooks(json!([
        {"name": "ws", "command": [context]},
        {"name": "guest", "wasm": crate::guests::path("allow")}
    ]));
    fx.trust();
    let ws = fx.workspace();
    let request = r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"}}"#;
    let agent_input = json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": ws,
        "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    .to_string();
    let runs: [(&str, std::process::Command, &str); 5] = [
        (
            "check",
            with(toolgate().arg("check").arg("--workspace").arg(&ws)),
            request,
        ),
        (
            "claude-code",
            with(toolgate().arg("claude-code")),
            &agent_input,
        ),
        (
            "codex",
            with(toolgate().arg("codex").arg("--workspace").arg(&ws)),
            &agent_input,
        ),
        (
            "hooks",
            with(toolgate().arg("hooks").arg("--workspace").arg(&ws)),
            "",
        ),
        (
            "trust status",
            with(toolgate().args(["trust", "status", "--workspace"]).arg(&ws)),
            "",
        ),
    ];
    // The run's own directory: what the helper gave the commands.
    let run = state_home()
        .parent()
        .expect("the run's directory")
        .to_owned();
    let paths = [(fx.dir.path().to_owned(), "<fx>"), (run, "<run>")];
    let varying = regex::Regex::new(r#"("duration_us":|trusted )\d+|(blake3:)[0-9a-f]+"#).unwrap();
    for (name, mut cmd, stdin) in runs {
        let out = run_with_stdin(&mut cmd, stdin);
        let shown = |bytes: &[u8]| {
            let mut text = String::from_utf8_lossy(bytes).into_owned();
            for (path, name) in &paths {
                text = text.replace(&path.display().to_string(), name);
            }
            // Timings vary from run to run, and digests cover the paths.
            varying.replace_all(&text, "${1}${2}0").into_owned()
        };
        let line = json!({
            "command": name,
            "code": out.status.code(),
            "stdout": shown(&out.stdout),
            "stderr": shown(&out.stderr),
        });
        println!("PROBE {line}");
    }
}

/// Moves a configured command out of the builder it was configured through.
fn with(cmd: &mut std::process::Command) -> std::process::Command {
    std::mem::replace(cmd, std::process::Command::new("true"))
}

/// Runs [`probe`] in a test process of its own with `env` on top of this
/// one's environment (`None`: unset); its results, by command.
fn probe_in(env: &BTreeMap<&str, Option<PathBuf>>) -> BTreeMap<String, Value> {
    let out_dir = tempfile::tempdir().unwrap();
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args(["--ignored", "--exact", "hermetic::probe", "--nocapture"])
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(out_dir.path().join("out")).unwrap())
        .stderr(std::fs::File::create(out_dir.path().join("err")).unwrap());
    for (key, value) in env {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let mut child = cmd.spawn().expect("the test binary runs");
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > std::time::Duration::from_secs(300) {
            let _ = child.kill();
            panic!("the probe still runs after 300 s: a command waited on the environment");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let out = std::fs::read_to_string(out_dir.path().join("out")).unwrap();
    let err = std::fs::read_to_string(out_dir.path().join("err")).unwrap();
    assert!(
        status.success(),
        "the probe failed ({status}):\n{out}\n{err}"
    );
    let results: BTreeMap<String, Value> = out
        .lines()
        .filter_map(|l| l.strip_prefix("PROBE "))
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a probe line is JSON");
            (v["command"].as_str().unwrap().to_owned(), v)
        })
        .collect();
    assert_eq!(results.len(), 5, "{out}\n{err}");
    results
}

/// A global config that denies every call.
fn deny_everything(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let hook = answer_script(&json!({"decision": "deny", "reason": "the user's own config"}));
    write_executable(&dir.join("deny.sh"), &hook);
    let config = json!({"schema": 1, "hooks": [{"name": "users-own", "command": ["./deny.sh"]}]});
    std::fs::write(dir.join("hooks.json"), config.to_string()).unwrap();
}

/// A developer's machine at its worst: for every variable the binary reads
/// (but `PATH` and `TMPDIR`), a value that would change what it answers.
struct Hostile {
    dir: tempfile::TempDir,
    /// A process listening where a server would, counting who connects.
    socket: std::os::unix::net::UnixListener,
    env: BTreeMap<&'static str, Option<PathBuf>>,
}

impl Hostile {
    fn new() -> Hostile {
        let dir = tempfile::tempdir().unwrap();
        let at = |p: &str| dir.path().join(p);
        // A home whose config denies everything, whose compile cache is a
        // symlink (refused, with a warning) and whose trust store is a file.
        deny_everything(&at("home/.config/toolgate"));
        deny_everything(&at("xdg-config/toolgate"));
        deny_everything(&at("config"));
        for link in [
            "home/.cache/toolgate/wasm",
            "xdg-cache/toolgate/wasm",
            "cache",
        ] {
            std::fs::create_dir_all(at(link).parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(dir.path(), at(link)).unwrap();
        }
        for store in ["home/.local/state/toolgate/trust", "state/toolgate/trust"] {
            std::fs::create_dir_all(at(store).parent().unwrap()).unwrap();
            std::fs::write(at(store), "not a trust store").unwrap();
        }
        // A server socket where both the default and TOOLGATE_SOCKET point.
        std::fs::create_dir_all(at("run/toolgate")).unwrap();
        let socket = std::os::unix::net::UnixListener::bind(at("run/toolgate/serve.sock"))
            .expect("a listening socket");
        socket.set_nonblocking(true).unwrap();
        // A project (Claude Code's variable) whose own hook denies everything.
        std::fs::create_dir_all(at("project/.toolgate")).unwrap();
        std::fs::copy(
            crate::guests::path("deny"),
            at("project/.toolgate/deny.wasm"),
        )
        .unwrap();
        std::fs::write(
            at("project/.toolgate/hooks.json"),
            json!({"schema": 1, "hooks": [{"name": "project", "wasm": "deny.wasm"}]}).to_string(),
        )
        .unwrap();
        std::fs::create_dir_all(at("pause")).unwrap();
        let value = |v: &str| Some(PathBuf::from(v));
        let env = BTreeMap::from([
            ("HOME", Some(at("home"))),
            ("XDG_CONFIG_HOME", Some(at("xdg-config"))),
            ("TOOLGATE_CONFIG_DIR", Some(at("config"))),
            // Honoured only for root, who is not the attacker; for root (CI)
            // it names a folder that is not there: no managed layer. That
            // anyone else's value is ignored is tests/all/managed.rs.
            ("TOOLGATE_MANAGED_DIR", Some(at("managed-absent"))),
            // Credentials for `toolgate push` only: nothing else reads them.
            ("TOOLGATE_REGISTRY_USER", value("attacker")),
            ("TOOLGATE_REGISTRY_PASSWORD", value("hunter2")),
            ("XDG_CACHE_HOME", Some(at("xdg-cache"))),
            ("TOOLGATE_CACHE_DIR", Some(at("cache"))),
            ("XDG_STATE_HOME", Some(at("state"))),
            ("XDG_DATA_HOME", Some(at("data"))),
            ("XDG_RUNTIME_DIR", Some(at("run"))),
            ("TOOLGATE_SERVER", value("on")),
            ("TOOLGATE_SOCKET", Some(at("run/toolgate/serve.sock"))),
            ("TOOLGATE_LOG", value("trace")),
            ("TOOLGATE_DECISION_LOG", Some(at("decisions.jsonl"))),
            ("TOOLGATE_CALLS_DIR", Some(at("calls"))),
            ("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", value("1")),
            ("TOOLGATE_WASM_ALLOCATOR", value("pooling")),
            ("TOOLGATE_DEBUG_FAULT", value("panic")),
            ("TOOLGATE_DEBUG_PAUSE_AFTER_READ", Some(at("pause"))),
            ("TOOLGATE_DEBUG_HTTP_HEADER_TIMEOUT_MS", value("1")),
            ("CLAUDE_PROJECT_DIR", Some(at("project"))),
            ("COPILOT_PROJECT_DIR", Some(at("project"))),
            ("CURSOR_PROJECT_DIR", Some(at("project"))),
            // Where install and doctor read the agents' settings.
            ("CLAUDE_CONFIG_DIR", Some(at("agent-dirs/claude"))),
            ("CODEX_HOME", Some(at("agent-dirs/codex"))),
            ("GEMINI_CLI_HOME", Some(at("agent-dirs/gemini"))),
            ("QWEN_HOME", Some(at("agent-dirs/qwen"))),
            ("COPILOT_HOME", Some(at("agent-dirs/copilot"))),
            (
                "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
                Some(at("agent-dirs/gemini-system.json")),
            ),
            (
                "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                Some(at("agent-dirs/gemini-defaults.json")),
            ),
            (
                "QWEN_CODE_SYSTEM_SETTINGS_PATH",
                Some(at("agent-dirs/qwen-system.json")),
            ),
            (
                "QWEN_CODE_SYSTEM_DEFAULTS_PATH",
                Some(at("agent-dirs/qwen-defaults.json")),
            ),
            // Unset, so CLICOLOR_FORCE colours piped output.
            ("NO_COLOR", None),
            ("CLICOLOR_FORCE", value("1")),
            ("COLUMNS", value("30")),
        ]);
        Hostile { dir, socket, env }
    }

    /// How many connected to the socket.
    fn connections(&self) -> usize {
        std::iter::from_fn(|| self.socket.accept().ok()).count()
    }
}

#[test]
fn a_hostile_home_changes_no_result() {
    let hostile = Hostile::new();
    // Every variable the binary reads has a hostile value here.
    for (key, given) in BINARY_ENV {
        assert!(
            *given == Given::Inherited || hostile.env.contains_key(key),
            "{key} has no hostile value in this test"
        );
    }
    let clean = probe_in(&BTreeMap::new());
    let dirty = probe_in(&hostile.env);
    for (command, result) in &clean {
        assert_eq!(
            result, &dirty[command],
            "{command} answered differently in a hostile environment"
        );
    }
    assert_eq!(
        hostile.connections(),
        0,
        "a command asked the user's server"
    );
    assert!(
        !hostile.dir.path().join("pause/reached").exists(),
        "a command paused on the user's fault switch"
    );
    assert!(
        !hostile.dir.path().join("decisions.jsonl").exists(),
        "a command wrote to the user's decision log"
    );
    // And what both answered is the fixture's: its hooks, not the user's.
    let check: Value = serde_json::from_str(clean["check"]["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(clean["check"]["code"], 0, "{}", clean["check"]);
    assert_eq!(check["decision"], "allow");
    assert_eq!(check["context"], "from the workspace");
    for agent in ["claude-code", "codex"] {
        let answer = &clean[agent];
        assert_eq!(answer["code"], 0, "{answer}");
        let text = answer["stdout"].as_str().unwrap();
        assert!(text.contains("from the workspace"), "{agent}: {text}");
    }
    let hooks = clean["hooks"]["stdout"].as_str().unwrap();
    assert!(
        hooks.contains("ws") && hooks.contains("guest") && !hooks.contains("users-own"),
        "{hooks}"
    );
    let status = clean["trust status"]["stdout"].as_str().unwrap();
    assert!(status.contains("trusted"), "{status}");
}
