//! `toolgate install`, `uninstall` and `doctor`, driven through the real
//! binary with a temporary `HOME`: what they write into an agent's settings
//! (and what they leave alone), what they refuse, and what doctor says.
//! One live test runs the real Claude Code on settings `install` wrote.

use crate::support::*;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Layout, Outward};

/// A temporary home and project.
struct Env {
    dir: tempfile::TempDir,
}

impl Env {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        Env { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("project").canonicalize().unwrap()
    }

    /// The agent's user settings file.
    fn user_file(&self, agent: Outward) -> PathBuf {
        self.home().join(agent.install().user_file)
    }

    /// `toolgate args…` with this home, in the project.
    fn toolgate(&self, args: &[&str]) -> Output {
        home_only(&mut toolgate())
            .args(args)
            .env("HOME", self.home())
            .current_dir(self.project())
            .output()
            .unwrap()
    }

    /// Writes `text` as the agent's user settings.
    fn write_settings(&self, agent: Outward, text: &str) -> PathBuf {
        let file = self.user_file(agent);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        file
    }

    /// `toolgate doctor --json` with `path` as `PATH` (where it finds the
    /// agents' CLIs).
    /// `toolgate args` with the agent's variable `var` set to `value`.
    fn toolgate_with(&self, var: &str, value: &Path, args: &[&str]) -> Output {
        home_only(&mut toolgate())
            .args(args)
            .env("HOME", self.home())
            .env("PATH", "/usr/bin:/bin")
            .env(var, value)
            .current_dir(self.project())
            .output()
            .unwrap()
    }

    fn doctor_json(&self, path: &str) -> (Option<i32>, Value) {
        let out = home_only(&mut toolgate())
            .args(["doctor", "--json"])
            .env("HOME", self.home())
            .env("PATH", path)
            .current_dir(self.project())
            .output()
            .unwrap();
        (out.status.code(), stdout_json(&out))
    }
}

/// `cmd` without the variables that move an agent's user settings away
/// from `$HOME` (the suite sets `XDG_CONFIG_HOME` for every command).
fn home_only(cmd: &mut Command) -> &mut Command {
    for &agent in Outward::ALL {
        if let toolgate::agent::UserDir::Var { var, .. } = agent.install().user_dir {
            cmd.env_remove(var);
        }
    }
    cmd
}

fn ok(out: &Output) -> &Output {
    assert!(
        out.status.success(),
        "{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// This toolgate's canonical path, as an entry names it.
fn exe() -> String {
    toolgate_path()
}

/// The handler `install` writes for `agent`, running `program`.
fn handler(agent: Outward, program: &str) -> Value {
    let argv = [program.to_owned(), agent.name().to_owned()];
    match agent.install().layout {
        Layout::Grouped { handler } | Layout::Flat { handler } => handler(&argv),
        Layout::Plugin { .. } => panic!("{agent} installs a plugin file, not a handler"),
    }
}

fn group(handler: Value) -> Value {
    json!({"matcher": "*", "hooks": [handler]})
}

/// The files in `dir`, by name.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn doctor_agent(report: &Value, agent: Outward) -> &Value {
    report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == agent.name())
        .unwrap()
}

#[test]
fn install_wires_every_agent_for_every_event_and_doctor_finds_it_current() {
    let env = Env::new();
    for &agent in Outward::ALL {
        let out = env.toolgate(&["install", agent.name()]);
        ok(&out);
        let file = env.user_file(agent);
        assert!(file.is_file(), "{agent}: {} not written", file.display());
        let first = std::fs::read(&file).unwrap();
        // Idempotent: the second run changes nothing, byte for byte.
        let again = env.toolgate(&["install", agent.name()]);
        assert!(
            stderr(ok(&again)).contains("nothing changed"),
            "{}",
            stderr(&again)
        );
        assert_eq!(std::fs::read(&file).unwrap(), first, "{agent}");
        assert!(
            !names(file.parent().unwrap())
                .iter()
                .any(|n| n.ends_with(".toolgate-bak")),
            "nothing was there before: no backup"
        );
    }
    // The trust steps doctor can check, done as the user does them: Gemini
    // CLI's trusted folders (tests/all/dialect_gemini.rs checks the rest).
    std::fs::write(
        env.home().join(".gemini/trustedFolders.json"),
        json!({env.project().to_string_lossy(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let (code, report) = env.doctor_json("/usr/bin:/bin");
    for &agent in Outward::ALL {
        let found = doctor_agent(&report, agent);
        assert_eq!(found["installed"], true, "{found:#}");
        let user = &found["scopes"][0];
        assert_eq!(user["status"], "installed", "{found:#}");
        for entry in user["entries"].as_array().unwrap() {
            assert_eq!(entry["current"], true, "{entry:#}");
            assert_eq!(entry["binary"]["this_toolgate"], true, "{entry:#}");
            assert_eq!(entry["command"], json!([exe(), agent.name()]));
        }
        let events: Vec<&str> = user["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        assert_eq!(events, agent.install().events, "{agent}");
    }
    // No agent CLI on that PATH: nothing is wrong, its version is a note.
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["ok"], true);
}

#[test]
fn install_merges_into_the_users_settings_keeping_their_hooks_and_key_order() {
    let env = Env::new();
    let agent = Outward::ClaudeCode;
    let mine = json!({"type": "command", "command": "/usr/local/bin/my-audit.sh"});
    let original = format!(
        "{{\n    \"zeta\": {{\"b\": 1, \"a\": 2}},\n    \"hooks\": {{\n        \"PreToolUse\": [{}],\n        \"Stop\": [{}]\n    }},\n    \"alpha\": [1, 2.5, \"x\"]\n}}\n",
        json!({"matcher": "Bash", "hooks": [mine]}),
        json!({"hooks": [mine]}),
    );
    let file = env.write_settings(agent, &original);
    ok(&env.toolgate(&["install", "claude-code"]));
    let text = std::fs::read_to_string(&file).unwrap();
    // The user's keys stay where they were, nested ones too.
    let at = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle}: {text}"))
    };
    assert!(
        at("\"zeta\"") < at("\"hooks\"") && at("\"hooks\"") < at("\"alpha\""),
        "{text}"
    );
    assert!(at("\"b\"") < at("\"a\""), "{text}");
    assert!(
        text.starts_with("{\n    \"zeta\""),
        "the file's indent is kept: {text}"
    );
    let value = read_json(&file);
    assert_eq!(value["zeta"], json!({"b": 1, "a": 2}));
    assert_eq!(value["alpha"], json!([1, 2.5, "x"]));
    assert_eq!(value["hooks"]["Stop"], json!([{"hooks": [mine]}]));
    let ours = group(handler(agent, &exe()));
    assert_eq!(
        value["hooks"]["PreToolUse"],
        json!([{"matcher": "Bash", "hooks": [mine]}, ours])
    );
    for event in agent.install().events {
        assert!(
            value["hooks"][event].as_array().unwrap().contains(&ours),
            "{event}: {value:#}"
        );
    }
    // The previous file is kept, byte for byte; no temporary file is left.
    assert_eq!(
        std::fs::read_to_string(file.with_extension("json.toolgate-bak")).unwrap(),
        original
    );
    assert_eq!(
        names(file.parent().unwrap()),
        ["settings.json", "settings.json.toolgate-bak"]
    );
}

#[test]
fn install_keeps_the_settings_files_mode() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let file = env.write_settings(Outward::ClaudeCode, "{}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    ok(&env.toolgate(&["install", "claude-code"]));
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_stale_toolgate_entry_is_replaced_in_place_not_doubled() {
    let env = Env::new();
    let agent = Outward::ClaudeCode;
    let stale = group(json!({"type": "command", "command": "/old/place/toolgate claude-code"}));
    let other = group(json!({"type": "command", "command": "/bin/true"}));
    let file = env.write_settings(
        agent,
        &json!({"hooks": {"PreToolUse": [stale, other]}}).to_string(),
    );
    let out = env.toolgate(&["install", "claude-code"]);
    assert!(stderr(ok(&out)).contains("replaced"), "{}", stderr(&out));
    let value = read_json(&file);
    assert_eq!(
        value["hooks"]["PreToolUse"],
        json!([group(handler(agent, &exe())), other]),
        "in the stale entry's place, once"
    );
}

#[test]
fn dry_run_prints_a_unified_diff_and_writes_nothing() {
    let env = Env::new();
    let original = "{\n  \"model\": \"x\"\n}\n";
    let file = env.write_settings(Outward::ClaudeCode, original);
    let out = env.toolgate(&["install", "claude-code", "--dry-run"]);
    let diff = String::from_utf8(ok(&out).stdout.clone()).unwrap();
    let name = file.display().to_string();
    assert!(
        diff.starts_with(&format!("--- {name}\n+++ {name}\n@@")),
        "{diff}"
    );
    assert!(
        diff.lines()
            .any(|l| l.starts_with('+') && l.contains(&format!("\"command\": \"{}\"", exe()))),
        "{diff}"
    );
    assert!(
        diff.contains("\n {\n-  \"model\": \"x\"\n+  \"model\": \"x\",\n"),
        "context and changed lines: {diff}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
    assert_eq!(names(file.parent().unwrap()), ["settings.json"]);
    // Uninstalling from a file with nothing of toolgate's: nothing to do.
    let out = env.toolgate(&["uninstall", "claude-code", "--dry-run"]);
    assert!(ok(&out).stdout.is_empty());
    assert!(
        stderr(&out).contains("nothing to uninstall"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn unreadable_settings_are_refused_naming_the_file_and_nothing_is_written() {
    let cases = [
        ("{\"model\": ", "is not valid JSON at line 1"),
        (
            "{\n  // my settings\n  \"model\": \"x\"\n}",
            "has a comment at line 2",
        ),
        ("[]", "is not a JSON object"),
        ("{\"hooks\": [1]}", "`hooks` that is not an object"),
        (
            "{\"hooks\": {\"PreToolUse\": {\"matcher\": \"*\"}}}",
            "`hooks.PreToolUse` that is not an array",
        ),
        ("{\"hooks\": {}, \"hooks\": {}}", "duplicate key"),
    ];
    for (text, why) in cases {
        let env = Env::new();
        let file = env.write_settings(Outward::ClaudeCode, text);
        for command in ["install", "uninstall"] {
            let out = env.toolgate(&[command, "claude-code"]);
            assert_eq!(out.status.code(), Some(1), "{command} {text}");
            let err = stderr(&out);
            assert!(
                err.contains(&file.display().to_string()) && err.contains(why),
                "{command} {text}: {err}"
            );
            assert_eq!(std::fs::read_to_string(&file).unwrap(), text);
            assert_eq!(names(file.parent().unwrap()), ["settings.json"]);
        }
    }
}

#[test]
fn a_settings_file_or_project_folder_that_is_a_symlink_is_not_written_through() {
    let env = Env::new();
    let target = env.dir.path().join("elsewhere.json");
    std::fs::write(&target, "{}").unwrap();
    let file = env.user_file(Outward::ClaudeCode);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &file).unwrap();
    for command in ["install", "uninstall"] {
        let out = env.toolgate(&[command, "claude-code"]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        assert!(stderr(&out).contains("is a symlink"), "{}", stderr(&out));
    }
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "{}");
    // In a project (anyone's repository), a linked folder on the way too.
    let outside = env.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let project_file = Path::new(Outward::ClaudeCode.install().project_file);
    let linked = env.project().join(project_file.parent().unwrap());
    std::os::unix::fs::symlink(&outside, &linked).unwrap();
    let out = env.toolgate(&["install", "claude-code", "--project"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a symlink"), "{}", stderr(&out));
    assert!(names(&outside).is_empty(), "written through the link");
}

#[test]
fn project_scope_writes_the_projects_settings_only() {
    let env = Env::new();
    let agent = Outward::ClaudeCode;
    let other = env.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    ok(&env.toolgate(&["install", "claude-code", "--project"]));
    ok(&env.toolgate(&[
        "install",
        "claude-code",
        "--project",
        other.to_str().unwrap(),
    ]));
    for root in [env.project(), other] {
        let value = read_json(&root.join(agent.install().project_file));
        assert_eq!(
            value["hooks"]["PreToolUse"],
            json!([group(handler(agent, &exe()))])
        );
    }
    assert!(!env.user_file(agent).exists());
}

#[test]
fn uninstall_removes_only_toolgates_entries_and_what_that_emptied() {
    let env = Env::new();
    let agent = Outward::ClaudeCode;
    // The user's own hooks, two of which name toolgate without running it.
    let audit =
        json!({"type": "command", "command": "/usr/bin/audit --about toolgate claude-code"});
    let echo = json!({"type": "command", "command": "echo toolgate claude-code"});
    let original = json!({
        "model": "x",
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [audit]}],
            "Stop": [{"hooks": [echo]}]
        }
    })
    .to_string();
    let file = env.write_settings(agent, &original);
    ok(&env.toolgate(&["install", "claude-code"]));
    // An older toolgate's entry sharing a group with the user's hook.
    let mut value = read_json(&file);
    value["hooks"]["PostToolUse"] = json!([{"matcher": "*", "hooks": [
        echo,
        {"type": "command", "command": "/old/toolgate claude-code --deadline-ms 5000"}
    ]}]);
    std::fs::write(&file, value.to_string()).unwrap();
    let out = env.toolgate(&["uninstall", "claude-code"]);
    assert!(stderr(ok(&out)).contains("removed"), "{}", stderr(&out));
    assert_eq!(
        read_json(&file),
        json!({
            "model": "x",
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [audit]}],
                "Stop": [{"hooks": [echo]}],
                "PostToolUse": [{"matcher": "*", "hooks": [echo]}]
            }
        })
    );
    assert_eq!(
        read_json(&file.with_extension("json.toolgate-bak")),
        value,
        "the backup is the file as it was"
    );
    let again = env.toolgate(&["uninstall", "claude-code"]);
    assert!(stderr(ok(&again)).contains("nothing to uninstall"));
}

/// A fake agent CLI on a PATH of its own that prints `version`.
fn agent_on_path(env: &Env, cli: &str, version: &str) -> String {
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_executable(
        &bin.join(cli),
        &format!("#!/bin/sh\necho '{version} (fake)'\n"),
    );
    format!("{}:/usr/bin:/bin", bin.display())
}

#[test]
fn doctor_says_what_is_wrong_with_an_installed_agent_and_how_to_fix_it() {
    let env = Env::new();
    let agent = Outward::ClaudeCode;
    let spec = agent.install();
    ok(&env.toolgate(&["install", "claude-code"]));
    let path = agent_on_path(&env, spec.agent_cli, spec.tested_versions[0]);
    let (code, report) = env.doctor_json(&path);
    assert_eq!(code, Some(0), "{report:#}");
    let cli = &doctor_agent(&report, agent)["cli"];
    assert_eq!(cli["version"], spec.tested_versions[0]);
    assert_eq!(cli["tested"], true);

    // A moved binary, an event dropped, another toolgate, an old handler.
    let other = env.dir.path().join("old/toolgate");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    write_executable(&other, "#!/bin/sh\necho 'toolgate 0.0.1'\n");
    let file = env.user_file(agent);
    let mut value = read_json(&file);
    let events = spec.events;
    value["hooks"][events[0]] = json!([group(handler(agent, "/gone/toolgate"))]);
    value["hooks"][events[1]] = json!([group(handler(agent, other.to_str().unwrap()))]);
    let mut old_shape = handler(agent, &exe());
    old_shape["statusMessage"] = json!("old");
    value["hooks"][events[2]] = json!([group(old_shape)]);
    std::fs::write(&file, value.to_string()).unwrap();
    let path = agent_on_path(&env, spec.agent_cli, "999.0.1");
    let (code, report) = env.doctor_json(&path);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["ok"], false);
    let found = doctor_agent(&report, agent);
    let problems: Vec<String> = found["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| format!("{} => {}", p["problem"], p["fix"]))
        .collect();
    let all = problems.join("\n");
    for want in [
        "runs /gone/toolgate, which does not exist".to_owned(),
        format!(
            "runs {} (toolgate 0.0.1), not this toolgate",
            other.display()
        ),
        "`statusMessage` is set, install writes none".to_owned(),
        "999.0.1 is not a release toolgate was tested with".to_owned(),
    ] {
        assert!(all.contains(&want), "{want}:\n{all}");
    }
    assert!(
        problems
            .iter()
            .filter(|p| !p.contains("999.0.1"))
            .all(|p| p.ends_with("=> \"toolgate install claude-code\"")),
        "{all}"
    );
    // The fix fixes it (the version aside).
    ok(&env.toolgate(&["install", "claude-code"]));
    let (_, report) = env.doctor_json(&path);
    let problems = doctor_agent(&report, agent)["problems"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(problems.len(), 1, "{problems:#?}");

    // An event with no entry at all.
    let mut value = read_json(&file);
    value["hooks"].as_object_mut().unwrap().remove(events[0]);
    std::fs::write(&file, value.to_string()).unwrap();
    let (code, report) = env.doctor_json("/usr/bin:/bin");
    assert_eq!(code, Some(1));
    let user = &doctor_agent(&report, agent)["scopes"][0];
    assert_eq!(user["status"], "partial");
    assert_eq!(user["missing_events"], json!([events[0]]));
}

#[test]
fn doctor_json_has_a_stable_shape() {
    let env = Env::new();
    ok(&env.toolgate(&["install", "codex"]));
    let (_, report) = env.doctor_json("/usr/bin:/bin");
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let sorted = |list: &[&str]| {
        let mut list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        list.sort();
        list
    };
    assert_eq!(
        keys(&report),
        sorted(&["toolgate", "version", "project", "ok", "agents"])
    );
    assert_eq!(report["toolgate"], exe());
    let names: Vec<&str> = report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        Outward::ALL.iter().map(|a| a.name()).collect::<Vec<_>>()
    );
    let codex = doctor_agent(&report, Outward::Codex);
    assert_eq!(
        keys(codex),
        sorted(&[
            "agent",
            "installed",
            "called",
            "scopes",
            "cli",
            "trust",
            "mcp_servers",
            "problems",
            "notes"
        ])
    );
    assert_eq!(
        keys(&codex["scopes"][0]),
        sorted(&[
            "scope",
            "file",
            "status",
            "events",
            "missing_events",
            "entries",
            "error"
        ])
    );
    assert_eq!(
        keys(&codex["scopes"][0]["entries"][0]),
        sorted(&["event", "command", "binary", "current", "differs"])
    );
    assert_eq!(
        keys(&codex["scopes"][0]["entries"][0]["binary"]),
        sorted(&["path", "exists", "this_toolgate", "version"])
    );
    assert_eq!(
        keys(&codex["cli"]),
        sorted(&["command", "path", "version", "tested", "tested_versions"])
    );
    assert_eq!(codex["scopes"][1]["scope"], "project");
    assert_eq!(codex["scopes"][1]["status"], "no-file");
    // An agent whose trust step toolgate cannot check: a reminder.
    if let Some(step) = Outward::Codex.install().trust {
        assert_eq!(
            codex["trust"],
            json!({"step": step.fix, "checked": step.check.is_some(), "done": null, "error": null})
        );
        assert!(
            codex["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().contains(step.fix)),
            "{codex:#}"
        );
    }
}

#[test]
fn doctor_prints_each_problem_with_its_fix() {
    let env = Env::new();
    let file = env.write_settings(
        Outward::ClaudeCode,
        &json!({"hooks": {"PreToolUse": [group(json!({"type": "command", "command": "toolgate claude-code"}))]}})
            .to_string(),
    );
    let out = toolgate()
        .args(["doctor"])
        .env("HOME", env.home())
        .env("PATH", "/usr/bin:/bin")
        .current_dir(env.project())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(&format!(
            "problem  {}: runs toolgate, not an absolute path",
            file.display()
        )),
        "{text}"
    );
    assert!(
        text.contains("  fix      toolgate install claude-code\n"),
        "{text}"
    );
    assert!(text.contains("codex: not installed"), "{text}");
}

/// The live proof that what `install` writes is what the agent runs: the
/// real Claude Code, in a project `toolgate install --project` wired, with
/// a workspace hook that denies, never runs the command.
#[test]
fn live_claude_runs_the_hook_install_wrote_and_is_blocked() {
    use crate::mock_model::{MockModel, result_text};
    let claude = crate::live::agent_bin("CLAUDE_CODE_VERSION", "claude");
    let fx = Fixture::new();
    let guard = crate::live::py_hook(
        &fx,
        "guard.py",
        "answer = {'decision': 'deny', 'reason': 'installed and denying'}",
    );
    fx.workspace_hooks(json!([{"name": "no", "command": [&guard]}]));
    crate::support::trust(&fx.workspace());
    let home = fx.dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let install = toolgate()
        .args(["install", "claude-code", "--project"])
        .arg(fx.workspace())
        .env("HOME", &home)
        .output()
        .unwrap();
    ok(&install);
    let marker = fx.marker("ran.txt");
    let mock = MockModel::anthropic(vec![crate::live::bash(&format!(
        "touch {}",
        marker.display()
    ))]);
    let mut cmd = Command::new(claude);
    hermetic(&mut cmd)
        .args([
            "-p",
            "run the scripted tool calls",
            "--output-format",
            "json",
        ])
        .args(["--allowedTools", "Bash"])
        .current_dir(fx.workspace())
        .env("HOME", &home)
        .env("ANTHROPIC_BASE_URL", mock.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = cmd.spawn().expect("claude starts");
    let out = finish_within(child, std::time::Duration::from_secs(180), "claude");
    let results = mock.tool_results();
    assert_eq!(
        results.len(),
        1,
        "{results:#?}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        result_text(&results[0]).contains("installed and denying"),
        "{results:#?}"
    );
    assert!(!marker.exists(), "the command ran");
}

/// While `toolgate serve` runs, an agent that spawns a command gets the
/// lean client beside toolgate (said, and shown by `--dry-run`); OpenCode's
/// plugin keeps the full binary; doctor takes the lean client for this
/// toolgate; without a server, install writes toolgate again, in place.
#[test]
fn with_a_server_running_install_writes_the_lean_client_for_agents_that_spawn_a_command() {
    let env = Env::new();
    let socket = env.dir.path().join("run/serve.sock");
    let mut server = toolgate()
        .args(["serve", "--socket"])
        .arg(&socket)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let lean = Path::new(&exe())
        .with_file_name(toolgate::agent::LEAN_CLIENT)
        .to_str()
        .unwrap()
        .to_owned();
    let with_server = |args: &[&str]| {
        home_only(&mut toolgate())
            .args(args)
            .env("HOME", env.home())
            .env_remove("TOOLGATE_SERVER")
            .env("TOOLGATE_SOCKET", &socket)
            .current_dir(env.project())
            .output()
            .unwrap()
    };
    for &agent in Outward::ALL {
        let plugin = matches!(agent.install().layout, Layout::Plugin { .. });
        let runs = if plugin { exe() } else { lean.clone() };
        let dry = with_server(&["install", agent.name(), "--dry-run"]);
        let diff = String::from_utf8_lossy(&ok(&dry).stdout).into_owned();
        assert!(diff.contains(&runs), "{agent}: {diff}");
        assert!(!env.user_file(agent).exists(), "{agent}: a dry run wrote");
        let out = with_server(&["install", agent.name()]);
        assert_eq!(
            stderr(ok(&out)).contains("runs the lean client"),
            !plugin,
            "{agent}: {}",
            stderr(&out)
        );
        let text = std::fs::read_to_string(env.user_file(agent)).unwrap();
        assert!(text.contains(&runs), "{agent}: {text}");
        if !plugin {
            assert!(!text.contains(&format!("{}\"", exe())), "{agent}: {text}");
        }
    }
    // Gemini CLI's own trust step, done as the user does it.
    std::fs::write(
        env.home().join(".gemini/trustedFolders.json"),
        json!({env.project().to_string_lossy(): "TRUST_FOLDER"}).to_string(),
    )
    .unwrap();
    let (code, report) = env.doctor_json("/usr/bin:/bin");
    assert_eq!(code, Some(0), "{report:#}");
    for &agent in Outward::ALL {
        let user = &doctor_agent(&report, agent)["scopes"][0];
        assert_eq!(user["status"], "installed", "{user:#}");
        for entry in user["entries"].as_array().unwrap() {
            assert_eq!(entry["binary"]["this_toolgate"], true, "{entry:#}");
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    // No server: the full binary again, replacing the lean entry in place.
    let agent = Outward::ClaudeCode;
    ok(&env.toolgate(&["install", agent.name()]));
    let settings = read_json(&env.user_file(agent));
    for event in agent.install().events {
        assert_eq!(
            settings["hooks"][event],
            json!([group(handler(agent, &exe()))]),
            "{event}"
        );
    }
    // An entry running the lean client is toolgate's to uninstall.
    let agent = Outward::Codex;
    ok(&env.toolgate(&["uninstall", agent.name()]));
    let text = std::fs::read_to_string(env.user_file(agent)).unwrap_or_default();
    assert!(!text.contains(toolgate::agent::LEAN_CLIENT), "{text}");
}

/// `install --mcp` runs each local MCP server of an agent's config
/// through `toolgate mcp`, the entry as the client will start it works,
/// doctor lists each server guarded or not, and `uninstall --mcp` puts the
/// file back.
#[test]
fn install_mcp_runs_each_local_server_through_toolgate_and_uninstall_undoes_it() {
    let env = Env::new();
    let everything = crate::mcp::everything();
    let config = json!({
        "mcpServers": {
            "everything": {"command": everything, "args": ["stdio"], "env": {"X": "1"}},
            "remote": {"type": "http", "url": "https://mcp.example.com/mcp"}
        },
        "numStartups": 3
    });
    let file = env.home().join(".claude.json");
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let (_, report) = env.doctor_json("/nonexistent");
    let listed = &doctor_agent(&report, Outward::ClaudeCode)["mcp_servers"];
    assert_eq!(listed[0]["state"], "unguarded", "{listed}");
    assert_eq!(listed[1]["state"], "skipped", "{listed}");

    let out = env.toolgate(&["install", "claude-code", "--mcp"]);
    let said = stderr(ok(&out));
    assert!(
        said.contains("toolgate mcp trust --name everything -- "),
        "{said}"
    );
    let wrapped = read_json(&file);
    let entry = &wrapped["mcpServers"]["everything"];
    assert_eq!(entry["command"], exe());
    assert_eq!(
        entry["args"],
        json!(["mcp", "--name", "everything", "--", everything, "stdio"])
    );
    assert_eq!(entry["env"]["X"], "1");
    assert_eq!(
        wrapped["mcpServers"]["remote"],
        config["mcpServers"]["remote"]
    );
    assert_eq!(wrapped["numStartups"], 3);
    let (_, report) = env.doctor_json("/nonexistent");
    let listed = &doctor_agent(&report, Outward::ClaudeCode)["mcp_servers"];
    assert_eq!(listed[0]["state"], "guarded", "{listed}");
    assert_eq!(listed[0]["command"], json!([everything, "stdio"]));
    // Again: nothing changes.
    let again = env.toolgate(&["install", "claude-code", "--mcp"]);
    assert!(stderr(ok(&again)).contains("nothing changed"));

    // The entry, started as the client starts it, is the proxy: until the
    // user approves the tools, it lists none.
    let mut cmd = Command::new(entry["command"].as_str().unwrap());
    hermetic(&mut cmd);
    cmd.args(
        entry["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap()),
    )
    .env("HOME", env.home())
    .env("XDG_STATE_HOME", env.dir.path().join("state"))
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::{BufRead, Write};
        let mut stdin = child.stdin.take().unwrap();
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#).unwrap();
        writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
        let listed = lines
            .by_ref()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .find(|m| m["id"] == 2)
            .expect("an answer to tools/list");
        assert_eq!(listed["result"]["tools"], json!([]), "{listed}");
    }
    let _ = child.kill();
    let _ = child.wait();

    let out = env.toolgate(&["uninstall", "claude-code", "--mcp"]);
    ok(&out);
    assert_eq!(read_json(&file), config);
}

#[test]
fn install_mcp_rewrites_codexs_toml_keeping_its_comments_and_uninstall_restores_it() {
    let env = Env::new();
    let file = env.home().join(".codex/config.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let config = "# mine\nmodel = \"gpt-5\"\n\n[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\"-y\", \"server-fs\"]\n";
    std::fs::write(&file, config).unwrap();
    ok(&env.toolgate(&["install", "codex", "--mcp"]));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("# mine\n"), "{text}");
    assert!(
        text.contains(&format!(r#"command = "{}""#, exe()))
            && text.contains(r#"args = ["mcp", "--name", "fs", "--", "npx", "-y", "server-fs"]"#),
        "{text}"
    );
    let (_, report) = env.doctor_json("/nonexistent");
    assert_eq!(
        doctor_agent(&report, Outward::Codex)["mcp_servers"][0]["state"],
        "guarded"
    );
    ok(&env.toolgate(&["uninstall", "codex", "--mcp"]));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), config);
}

#[test]
fn install_mcp_rewrites_opencodes_command_arrays_in_a_project_and_uninstall_restores_them() {
    let env = Env::new();
    let config = json!({"$schema": "https://opencode.ai/config.json", "mcp": {
        "fs": {"type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "."], "enabled": true}
    }});
    let file = env.project().join("opencode.json");
    std::fs::write(&file, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    let project = env.project();
    let project = project.to_str().unwrap();
    ok(&env.toolgate(&["install", "opencode", "--mcp", "--project", project]));
    assert_eq!(
        read_json(&file)["mcp"]["fs"]["command"],
        json!([
            exe(),
            "mcp",
            "--name",
            "fs",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "."
        ])
    );
    let (_, report) = env.doctor_json("/nonexistent");
    let listed = &doctor_agent(&report, Outward::OpenCode)["mcp_servers"];
    assert_eq!(listed[0]["state"], "guarded", "{listed}");
    assert_eq!(listed[0]["scope"], "project", "{listed}");
    ok(&env.toolgate(&["uninstall", "opencode", "--mcp", "--project", project]));
    assert_eq!(read_json(&file), config);
}

/// Closed world: a settings file Claude Code reads `disableAllHooks` from
/// that doctor cannot read might set it, so doctor says it cannot tell,
/// and does not call the agent guarded.
#[test]
fn doctor_cannot_tell_from_an_unreadable_settings_file_and_says_so() {
    let env = Env::new();
    ok(&env.toolgate(&["install", "claude-code"]));
    let (_, report) = env.doctor_json("/usr/bin:/bin");
    assert_eq!(doctor_agent(&report, Outward::ClaudeCode)["called"], true);
    let local = env.project().join(".claude/settings.local.json");
    std::fs::create_dir_all(local.parent().unwrap()).unwrap();
    std::fs::write(&local, "{\"disableAllHooks\": tru").unwrap();
    let (code, report) = env.doctor_json("/usr/bin:/bin");
    assert_eq!(code, Some(1));
    let claude = doctor_agent(&report, Outward::ClaudeCode);
    assert_eq!(claude["called"], false, "{claude:#}");
    let problems = claude["problems"].to_string();
    assert!(
        problems.contains("cannot tell whether disableAllHooks turns the agent's hooks off"),
        "{problems}"
    );
    std::fs::write(&local, "{\"disableAllHooks\": true}").unwrap();
    let (_, report) = env.doctor_json("/usr/bin:/bin");
    let problems = doctor_agent(&report, Outward::ClaudeCode)["problems"].to_string();
    assert!(problems.contains("disableAllHooks is true"), "{problems}");
}

/// Issue 40: a settings file the agent does not read. Where an agent's
/// variable moves its user settings (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
/// `GEMINI_CLI_HOME`, `QWEN_HOME`, `COPILOT_HOME`, `XDG_CONFIG_HOME`),
/// `install` writes where the agent reads, and `doctor` flags toolgate's
/// entries left in `$HOME`'s file as guarding nothing, until the
/// `uninstall` its fix names removes them.
#[test]
fn install_follows_the_variable_that_moves_an_agents_settings_and_doctor_flags_the_file_left_behind()
 {
    let env = Env::new();
    let moved = env.dir.path().join("moved");
    for &agent in Outward::ALL {
        let spec = agent.install();
        let toolgate::agent::UserDir::Var { var, .. } = spec.user_dir else {
            continue;
        };
        ok(&env.toolgate(&["install", agent.name()]));
        let left = env.user_file(agent);
        assert!(left.is_file(), "{agent}");
        let with_var = |args: &[&str]| env.toolgate_with(var, &moved, args);
        let report = stdout_json(&with_var(&["doctor", "--json"]));
        let problems = doctor_agent(&report, agent)["problems"].to_string();
        assert!(
            problems.contains(&format!(
                "{}: toolgate's entries here are not read: {var} is set",
                left.display()
            )),
            "{agent}: {problems}"
        );
        assert_eq!(doctor_agent(&report, agent)["called"], false, "{agent}");
        ok(&with_var(&["install", agent.name()]));
        let read = spec
            .user_dir
            .resolve(&env.home(), spec.user_file, Some(&moved))
            .unwrap();
        assert_ne!(read, left, "{agent}");
        assert!(read.is_file(), "{agent}: {} not written", read.display());
        let report = stdout_json(&with_var(&["doctor", "--json"]));
        assert_eq!(doctor_agent(&report, agent)["installed"], true, "{agent}");
        ok(&env.toolgate(&["uninstall", agent.name()]));
        let report = stdout_json(&with_var(&["doctor", "--json"]));
        let problems = doctor_agent(&report, agent)["problems"].to_string();
        assert!(!problems.contains("not read"), "{agent}: {problems}");
    }
}

/// A server entry in `shape`, as an agent's MCP config holds it.
fn mcp_config(shape: toolgate::agent::McpShape, program: &str) -> String {
    use toolgate::agent::McpShape;
    match shape {
        McpShape::McpServers => {
            json!({"mcpServers": {"fs": {"command": program, "args": ["a"]}}}).to_string()
        }
        McpShape::CommandArray => {
            json!({"mcp": {"fs": {"type": "local", "command": [program, "a"]}}}).to_string()
        }
        McpShape::Toml => format!("[mcp_servers.fs]\ncommand = \"{program}\"\nargs = [\"a\"]\n"),
    }
}

/// Issue 39 with issue 40's variables: where an agent's variable moves
/// the file it reads its MCP servers from (`CLAUDE_CONFIG_DIR` moves
/// `~/.claude.json` to `$CLAUDE_CONFIG_DIR/.claude.json`, `CODEX_HOME`,
/// `GEMINI_CLI_HOME`, `QWEN_HOME`, `COPILOT_HOME`, `XDG_CONFIG_HOME`),
/// `install --mcp` rewrites the moved file and never `$HOME`'s, doctor
/// lists the moved file's servers, and `uninstall --mcp` restores it.
#[test]
fn install_mcp_rewrites_the_file_the_agents_variable_moves_its_servers_to() {
    use toolgate::agent::{McpConfig, UserDir};
    let env = Env::new();
    let moved = env.dir.path().join("moved");
    let mut seen = 0;
    for &agent in Outward::ALL {
        let McpConfig::Servers {
            user_file,
            user_dir: user_dir @ UserDir::Var { var, .. },
            shape,
            ..
        } = agent.install().mcp
        else {
            continue;
        };
        seen += 1;
        let read = user_dir
            .resolve(&env.home(), user_file, Some(&moved))
            .unwrap();
        let unread = env.home().join(user_file);
        assert_ne!(read, unread, "{agent}");
        std::fs::create_dir_all(read.parent().unwrap()).unwrap();
        let config = mcp_config(shape, "/usr/bin/mcp-fs");
        std::fs::write(&read, &config).unwrap();
        let with_var = |args: &[&str]| env.toolgate_with(var, &moved, args);
        ok(&with_var(&["install", agent.name(), "--mcp"]));
        let text = std::fs::read_to_string(&read).unwrap();
        assert!(
            text.contains("\"--name\"") || text.contains("--name"),
            "{agent}: {text}"
        );
        assert!(text.contains(&exe()), "{agent}: {text}");
        assert!(!unread.exists(), "{agent}: {} written", unread.display());
        let report = stdout_json(&with_var(&["doctor", "--json"]));
        let listed = &doctor_agent(&report, agent)["mcp_servers"];
        assert_eq!(listed[0]["state"], "guarded", "{agent}: {listed}");
        assert_eq!(listed[0]["file"], read.display().to_string(), "{agent}");
        ok(&with_var(&["uninstall", agent.name(), "--mcp"]));
        let back = std::fs::read_to_string(&read).unwrap();
        match shape {
            toolgate::agent::McpShape::Toml => assert_eq!(back, config, "{agent}"),
            _ => assert_eq!(
                read_json(&read),
                serde_json::from_str::<Value>(&config).unwrap()
            ),
        }
    }
    assert_eq!(seen, 6, "every agent but Cursor has a variable");
}

/// Claude Code reads its global config, MCP servers included, from a
/// legacy `.config.json` in its config folder when that exists (2.1.197:
/// always; 2.1.332: by a rule on its size, mode and the newer file's).
/// toolgate cannot tell which file it reads, so `install --mcp` changes
/// neither and says why, and doctor says the same.
#[test]
fn install_mcp_refuses_to_guess_when_claude_codes_legacy_config_may_be_read_instead() {
    let env = Env::new();
    let file = env.home().join(".claude.json");
    let config = mcp_config(toolgate::agent::McpShape::McpServers, "/usr/bin/mcp-fs");
    std::fs::write(&file, &config).unwrap();
    let legacy = env.home().join(".claude/.config.json");
    std::fs::create_dir_all(legacy.parent().unwrap()).unwrap();
    std::fs::write(&legacy, &config).unwrap();
    let out = env.toolgate(&["install", "claude-code", "--mcp"]);
    assert!(!out.status.success());
    let said = stderr(&out);
    assert!(
        said.contains(&legacy.display().to_string())
            && said.contains("toolgate cannot tell which it reads"),
        "{said}"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), config);
    assert_eq!(std::fs::read_to_string(&legacy).unwrap(), config);
    let (_, report) = env.doctor_json("/nonexistent");
    let claude = doctor_agent(&report, Outward::ClaudeCode);
    assert!(
        claude
            .to_string()
            .contains("toolgate cannot tell which it reads"),
        "{claude:#}"
    );
    std::fs::remove_file(&legacy).unwrap();
    ok(&env.toolgate(&["install", "claude-code", "--mcp"]));
    assert!(std::fs::read_to_string(&file).unwrap().contains("--name"));
}

// ---- Claude Code's mods: toolgate's own, and doctor reading others' ----

/// `toolgate install claude-code --mod` for a server at a fixed address.
fn install_mod(env: &Env, args: &[&str]) -> Output {
    let mut all = vec![
        "claude-code",
        "--mod",
        "--http-url",
        "http://127.0.0.1:8787",
    ];
    all.extend_from_slice(args);
    let mut cmd = vec!["install"];
    cmd.extend(all);
    env.toolgate(&cmd)
}

/// A mod named `name` whose module is `source`, in `dir/<name>`.
fn mod_in(dir: &Path, name: &str, source: &str) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(folder.join(".claude-plugin")).unwrap();
    std::fs::create_dir_all(folder.join("hooks")).unwrap();
    std::fs::write(
        folder.join(".claude-plugin/plugin.json"),
        json!({"name": name}).to_string(),
    )
    .unwrap();
    std::fs::write(
        folder.join("hooks/hooks.json"),
        json!({"modules": ["./mod.js"]}).to_string(),
    )
    .unwrap();
    std::fs::write(folder.join("hooks/mod.js"), source).unwrap();
    folder
}

#[test]
fn install_mod_writes_toolgates_mod_and_seats_it_first_and_uninstall_takes_both_back() {
    let env = Env::new();
    env.write_settings(
        Outward::ClaudeCode,
        r#"{"model": "x", "prependPlugins": ["mine@market"]}"#,
    );
    ok(&install_mod(&env, &[]));
    let folder = env.home().join(".claude/skills/toolgate");
    assert_eq!(
        std::fs::read_to_string(folder.join("hooks/mod.js")).unwrap(),
        toolgate::agent::claude_mod::MOD_JS
    );
    let config = std::fs::read_to_string(folder.join("hooks/config.js")).unwrap();
    assert!(
        config.contains(r#"SERVER_URL = "http://127.0.0.1:8787/claude-code""#),
        "{config}"
    );
    let manifest = read_json(&folder.join(".claude-plugin/plugin.json"));
    assert_eq!(manifest["name"], "toolgate");
    let settings = read_json(&env.user_file(Outward::ClaudeCode));
    assert_eq!(
        settings["prependPlugins"],
        json!(["toolgate@skills-dir", "mine@market"])
    );
    assert_eq!(settings["model"], "x");
    // The http hooks beside it, as --http writes them.
    assert_eq!(
        settings["hooks"]["PreToolUse"][0]["hooks"][0]["url"],
        "http://127.0.0.1:8787/claude-code"
    );
    // Again: nothing changes.
    let before = std::fs::read_to_string(env.user_file(Outward::ClaudeCode)).unwrap();
    let out = install_mod(&env, &[]);
    ok(&out);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already first in prependPlugins"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(env.user_file(Outward::ClaudeCode)).unwrap(),
        before
    );
    ok(&env.toolgate(&["uninstall", "claude-code", "--mod"]));
    assert!(!folder.exists(), "the mod's folder is left");
    let settings = read_json(&env.user_file(Outward::ClaudeCode));
    assert_eq!(settings["prependPlugins"], json!(["mine@market"]));
    assert!(settings.get("hooks").is_none(), "{settings}");
}

#[test]
fn install_mod_refuses_another_agent_a_project_and_a_linked_skills_folder() {
    let env = Env::new();
    let out = env.toolgate(&[
        "install",
        "codex",
        "--mod",
        "--http-url",
        "http://127.0.0.1:1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--mod is for Claude Code"));
    let out = install_mod(&env, &["--project"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the user's settings only"));
    // A link on the way could send the mod (code Claude Code runs) anywhere.
    let elsewhere = env.dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, env.home().join(".claude/skills")).unwrap();
    let out = install_mod(&env, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is a symlink"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_dir(&elsewhere).unwrap().next().is_none());
}

/// The Claude Code part of `doctor --json` without Claude Code on PATH
/// (doctor reads the files).
fn claude_doctor(env: &Env) -> (Option<i32>, Value) {
    let (code, report) = env.doctor_json("/usr/bin:/bin");
    let claude = report["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "claude-code")
        .cloned()
        .unwrap();
    (code, claude)
}

#[test]
fn doctor_names_a_mod_that_can_switch_toolgate_off_and_stops_claiming_it_is_called() {
    let env = Env::new();
    ok(&env.toolgate(&["install", "claude-code"]));
    let (code, report) = claude_doctor(&env);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["called"], true);
    assert_eq!(report["mods"]["found_by"], "files");
    // A harmless mod is listed and is no problem.
    mod_in(
        &env.home().join(".claude/skills"),
        "panel",
        r#"export function register(on) { on("ui.render", ($, e, next) => next(e)); }"#,
    );
    // The repository's own, and one whose event is computed.
    mod_in(
        &env.project().join(".claude/skills"),
        "answerer",
        r#"export function register(hook) { hook("classic.PreToolUse", () => ({ allow: true })); }"#,
    );
    mod_in(
        &env.home().join(".claude/skills"),
        "sly",
        r#"export function register(on) { const ev = ["tool", "call"].join("."); on(ev, () => ({})); }"#,
    );
    let (code, report) = claude_doctor(&env);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["called"], false, "{report:#}");
    let mods = report["mods"]["mods"].as_array().unwrap();
    let by_id = |id: &str| mods.iter().find(|m| m["id"] == id).unwrap().clone();
    assert_eq!(by_id("panel@skills-dir")["ahead_of_toolgate"], false);
    assert_eq!(by_id("panel@skills-dir")["events"], json!(["ui.render"]));
    assert_eq!(by_id("answerer@skills-dir")["scope"], "project");
    assert_eq!(
        by_id("answerer@skills-dir")["bypassing"],
        json!(["classic.PreToolUse"])
    );
    assert!(
        by_id("sly@skills-dir")["error"]
            .as_str()
            .unwrap()
            .contains("not a string literal")
    );
    let problems = report["problems"].to_string();
    for name in ["skills/answerer: ", "skills/sly: "] {
        assert!(problems.contains(name), "{name}: {problems}");
    }
    assert!(!problems.contains("skills/panel"), "{problems}");
    assert!(
        problems.contains("toolgate install claude-code --mod"),
        "{problems}"
    );
}

#[test]
fn doctor_with_toolgates_mod_seated_outermost_reports_other_mods_beneath_it_and_no_problem() {
    let env = Env::new();
    ok(&install_mod(&env, &[]));
    mod_in(
        &env.home().join(".claude/skills"),
        "answerer",
        r#"export function register(on) { on("tool.check", () => ({ decision: "allow" })); }"#,
    );
    // (No server answers here: doctor says so, and that is all it says.)
    let (_, report) = claude_doctor(&env);
    assert_eq!(report["called"], true, "{report:#}");
    assert!(
        !report["problems"].to_string().contains("skills/"),
        "{report:#}"
    );
    let toolgate = &report["mods"]["toolgate"];
    assert_eq!(toolgate["installed"], true);
    assert_eq!(toolgate["current"], true);
    assert_eq!(toolgate["seat"], "outermost");
    let mods = report["mods"]["mods"].as_array().unwrap();
    assert_eq!(mods.len(), 1, "{mods:#?}");
    assert_eq!(mods[0]["bypassing"], json!(["tool.check"]));
    assert_eq!(mods[0]["ahead_of_toolgate"], false);
    // Another mod listed first takes the outermost seat: a problem.
    let file = env.user_file(Outward::ClaudeCode);
    let mut settings = read_json(&file);
    settings["prependPlugins"] = json!(["answerer@skills-dir", "toolgate@skills-dir"]);
    std::fs::write(&file, settings.to_string()).unwrap();
    let (code, report) = claude_doctor(&env);
    assert_eq!(code, Some(1), "{report:#}");
    assert!(
        report["problems"].to_string().contains("skills/answerer: "),
        "{report:#}"
    );
    assert_eq!(report["mods"]["toolgate"]["seat"], "prepend");
    assert_eq!(report["called"], false);
    // And an edited mod is not this toolgate's.
    ok(&install_mod(&env, &[]));
    std::fs::write(
        env.home().join(".claude/skills/toolgate/hooks/mod.js"),
        "export function register(on) {}",
    )
    .unwrap();
    let (code, report) = claude_doctor(&env);
    assert_eq!(code, Some(1));
    assert!(
        report["problems"]
            .to_string()
            .contains("is not this toolgate's mod"),
        "{report:#}"
    );
}

#[test]
fn doctor_counts_a_mod_whose_hooks_file_it_cannot_read_as_one_that_can_switch_toolgate_off() {
    // Closed world: neither a hooks.json doctor cannot parse nor a missing
    // manifest reads as "not a mod".
    let env = Env::new();
    ok(&env.toolgate(&["install", "claude-code"]));
    let folder = env.home().join(".claude/skills/unreadable");
    std::fs::create_dir_all(folder.join("hooks")).unwrap();
    std::fs::write(
        folder.join("hooks/hooks.json"),
        "{\n  // a comment Claude Code may forgive\n  \"modules\": [\"./mod.js\"]\n}",
    )
    .unwrap();
    let odd = mod_in(
        &env.home().join(".claude/skills"),
        "odd",
        "export function register(on) {}",
    );
    std::fs::write(odd.join("hooks/hooks.json"), r#"{"modules": "./mod.js"}"#).unwrap();
    let (code, report) = claude_doctor(&env);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["called"], false);
    let mods = report["mods"]["mods"].as_array().unwrap();
    let by_id = |id: &str| {
        mods.iter()
            .find(|m| m["id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed: {mods:#?}"))
            .clone()
    };
    assert!(
        by_id("unreadable@skills-dir")["error"]
            .as_str()
            .unwrap()
            .contains("not JSON doctor can read")
    );
    assert!(
        by_id("odd@skills-dir")["error"]
            .as_str()
            .unwrap()
            .contains("`modules` is not a list of paths")
    );
    let problems = report["problems"].to_string();
    for name in ["skills/unreadable: ", "skills/odd: "] {
        assert!(problems.contains(name), "{name}: {problems}");
    }
}
