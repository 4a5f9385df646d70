//! What a person meets in the first hour: help that pastes, tables that fit,
//! errors that say what to do, progress for long work, colour only where it
//! is wanted, and files a person reads in the order they read them.

use crate::support::*;
use serde_json::{Value, json};
use std::path::Path;

fn help(args: &[&str], columns: &str) -> String {
    let out = succeeded(
        toolgate()
            .args(args)
            .arg("--help")
            .env("COLUMNS", columns)
            .env("NO_COLOR", "1"),
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Runs `command` with a terminal for its stdin, stdout and stderr
/// (`script` from util-linux), stdin at its end; what the terminal showed.
fn on_a_terminal(command: &str, dir: &Path, envs: &[(&str, &Path)]) -> String {
    let mut cmd = std::process::Command::new("script");
    hermetic(&mut cmd)
        .args(["-qec", command, "/dev/null"])
        .current_dir(dir)
        .stdin(std::process::Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("script (util-linux) runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const COMMANDS: &[&[&str]] = &[
    &[],
    &["check"],
    &["hooks"],
    &["replay"],
    &["claude-code"],
    &["codex"],
    &["import", "claude-code"],
    &["new"],
    &["dev"],
    &["log"],
    &["bench"],
    &["trust"],
    &["trust", "status"],
    &["trust", "revoke"],
    &["serve"],
    &["push"],
    &["test"],
];

/// The part of a help after the options: the examples and notes a person
/// copies from.
fn after_options(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("Example") || l.starts_with("Install"))
        .unwrap_or(lines.len());
    lines[start..].join("\n")
}

#[test]
fn help_examples_are_never_wrapped_at_80_columns_and_their_json_parses() {
    for args in COMMANDS {
        let narrow = after_options(&help(args, "80"));
        let wide = after_options(&help(args, "400"));
        assert!(!narrow.is_empty(), "{args:?} has no examples");
        assert_eq!(
            narrow, wide,
            "{args:?}: an example is wrapped at 80 columns"
        );
        // Every JSON block (from a line `{` to a line `}`) and every JSON
        // line of a heredoc parses as pasted.
        let mut block: Option<String> = None;
        for line in narrow.lines() {
            if line == "{" {
                block = Some(String::new());
            }
            if let Some(b) = block.as_mut() {
                b.push_str(line);
                b.push('\n');
            }
            if line == "}" {
                let text = block.take().unwrap();
                serde_json::from_str::<Value>(&text)
                    .unwrap_or_else(|e| panic!("{args:?}: {e}:\n{text}"));
            }
            if line.starts_with("{\"") {
                serde_json::from_str::<Value>(line)
                    .unwrap_or_else(|e| panic!("{args:?}: {e}: {line}"));
            }
        }
    }
}

#[test]
fn agent_help_names_the_running_binarys_real_path_for_every_agent() {
    let exe = toolgate_path();
    for agent in [
        "claude-code",
        "codex",
        "gemini",
        "qwen-code",
        "copilot",
        "cursor",
        "opencode",
    ] {
        let text = help(&[agent], "100");
        assert!(text.contains(&exe), "{agent}: {text}");
        assert!(!text.contains("/usr/local/bin/toolgate"), "{agent}: {text}");
    }
}

#[test]
fn each_agent_commands_help_names_its_own_agent_and_file() {
    let claude = help(&["claude-code"], "100");
    assert!(claude.contains("~/.claude/settings.json"), "{claude}");
    // The exec form (no shell) and fail-closed, as `toolgate install` writes
    // it, naming this binary's real path (not one where nothing is installed).
    let exe = toolgate_path();
    assert!(
        claude.contains(&format!("\"command\": \"{exe}\"")),
        "{claude}"
    );
    assert!(!claude.contains("/usr/local/bin/toolgate"), "{claude}");
    assert!(claude.contains("toolgate install claude-code"), "{claude}");
    assert!(claude.contains("\"args\": [\"claude-code\"]"), "{claude}");
    assert!(claude.contains("\"onFailure\": \"block\""), "{claude}");
    assert!(
        !claude.contains("~/.codex") && !claude.contains("toolgate codex"),
        "{claude}"
    );
    let codex = help(&["codex"], "100");
    assert!(codex.contains("~/.codex/hooks.json"), "{codex}");
    assert!(
        codex.contains(&format!("\"command\": \"{exe} codex\"")),
        "{codex}"
    );
    assert!(codex.contains("/hooks"), "how to trust it: {codex}");
    assert!(!codex.contains(".claude/settings.json"), "{codex}");
}

#[test]
fn tables_fit_an_80_column_terminal() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let demo = root.join("examples/demo");
    for args in [
        vec!["hooks", "--workspace", demo.to_str().unwrap()],
        vec![
            "replay",
            root.join("examples/demo/session.jsonl").to_str().unwrap(),
            "--workspace",
            demo.to_str().unwrap(),
        ],
    ] {
        let out = succeeded(toolgate().args(&args).env("COLUMNS", "80"));
        let text = String::from_utf8(out.stdout).unwrap();
        let table: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(['│', '┌', '└', '╞', '├']))
            .collect();
        assert!(table.len() > 3, "{text}");
        for line in table {
            assert!(
                line.chars().count() <= 80,
                "{args:?}: {} columns: {line}",
                line.chars().count()
            );
        }
        // `--json` has every field whole.
    }
}

#[test]
fn a_request_that_is_not_json_is_said_to_come_from_stdin_once() {
    let out = run_with_stdin(
        toolgate()
            .args(["check", "--workspace", "examples/demo"])
            .current_dir(env!("CARGO_MANIFEST_DIR")),
        "not json",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("the request on stdin"), "{err}");
    assert_eq!(err.matches("line 1, column").count(), 1, "said once: {err}");
}

#[test]
fn a_terminal_with_nothing_piped_gets_a_hint_not_a_silent_wait() {
    let text = on_a_terminal(
        &format!(
            "{} check --workspace examples/demo",
            env!("CARGO_BIN_EXE_toolgate")
        ),
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &[],
    );
    assert!(text.contains("reading the request from stdin"), "{text}");
    assert!(
        text.contains("toolgate check < examples/demo/force-push.json"),
        "{text}"
    );
}

#[test]
fn a_first_compile_says_so_on_a_terminal_and_not_when_piped() {
    let fx = Fixture::new();
    let wat = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo/hooks/no_network.wat");
    std::fs::copy(&wat, fx.workspace().join("guard.wat")).unwrap();
    fx.workspace_hooks(json!([{"name": "g", "wasm": "guard.wat"}]));
    let cache = tempfile::tempdir().unwrap();
    let command = format!(
        "{} hooks --check --workspace {}",
        env!("CARGO_BIN_EXE_toolgate"),
        fx.workspace().display()
    );
    let global = fx.global();
    let on_terminal = |cache: &Path| {
        on_a_terminal(
            &command,
            &fx.workspace(),
            &[
                ("TOOLGATE_CACHE_DIR", cache),
                ("TOOLGATE_CONFIG_DIR", &global),
            ],
        )
    };
    let first = on_terminal(cache.path());
    assert!(
        first.contains("compiling ") && first.contains("guard.wat"),
        "{first}"
    );
    assert!(
        first.contains("compiled ") && first.contains(" s"),
        "{first}"
    );
    let second = on_terminal(cache.path());
    assert!(
        !second.contains("compiling"),
        "a cache hit says nothing: {second}"
    );
    let fresh = tempfile::tempdir().unwrap();
    let piped = succeeded(
        toolgate()
            .args(["hooks", "--check", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CACHE_DIR", fresh.path())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
    );
    assert!(!stderr(&piped).contains("compiling"), "{}", stderr(&piped));
}

#[test]
fn a_missing_workspace_is_an_error_for_every_command() {
    for args in [
        vec!["hooks"],
        vec!["hooks", "--check"],
        vec!["hooks", "--json"],
        vec!["replay", "examples/demo/session.jsonl"],
    ] {
        let out = toolgate()
            .args(&args)
            .args(["--workspace", "/nonexistent/toolgate-ws"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&out).contains("is not a directory"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let out = run_with_stdin(
        toolgate().args(["check", "--workspace", "/nonexistent/toolgate-ws"]),
        r#"{"event":"pre_tool_use","tool":"t","input":{}}"#,
    );
    assert_eq!(out.status.code(), Some(1));
    let out = run_with_stdin(
        toolgate().args(["claude-code", "--workspace", "/nonexistent/toolgate-ws"]),
        r#"{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{}}"#,
    );
    assert_eq!(out.status.code(), Some(2), "the agent blocks the call");
}

#[test]
fn hooks_check_reports_a_missing_program_and_one_not_on_path_together() {
    let fx = Fixture::new();
    fx.workspace_hooks(json!([
        {"name": "a", "command": ["./missing.py"]},
        {"name": "b", "command": ["no-such-program-anywhere"]},
        {"name": "c", "command": ["sh"], "fuel": 5}
    ]));
    let out = toolgate()
        .args(["hooks", "--check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("hooks[0] (\"a\"): field `command`: program \"./missing.py\" not found"),
        "{err}"
    );
    assert!(
        err.contains(
            "hooks[1] (\"b\"): field `command`: program \"no-such-program-anywhere\" is not on PATH"
        ),
        "{err}"
    );
    assert!(err.contains("hooks[2] (\"c\"): field `fuel`"), "{err}");
}

#[test]
fn import_writes_schema_first_and_each_hook_name_first() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./g.sh"}]}]}})
            .to_string(),
    )
    .unwrap();
    let out = succeeded(
        toolgate()
            .args(["import", "claude-code"])
            .arg(&settings)
            .args(["-o", "-"]),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .filter(|k| ["schema", "hooks", "name", "command", "event", "timeout_ms"].contains(k))
        .collect();
    assert_eq!(
        keys,
        ["schema", "hooks", "name", "command", "event", "timeout_ms"],
        "{text}"
    );
}

#[test]
fn colour_only_on_a_terminal_or_when_forced_and_never_with_no_color() {
    crate::support::trust(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/demo"));
    let demo = [
        "replay",
        "examples/demo/session.jsonl",
        "--workspace",
        "examples/demo",
    ];
    let run = |vars: &[(&str, &str)]| {
        let mut cmd = toolgate();
        cmd.args(demo)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        String::from_utf8(succeeded(&mut cmd).stdout).unwrap()
    };
    assert!(!run(&[]).contains('\u{1b}'), "piped: no colour");
    let forced = run(&[("CLICOLOR_FORCE", "1")]);
    assert!(forced.contains("\u{1b}[31m4 deny\u{1b}[0m"), "{forced}");
    assert!(!run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\u{1b}'));
}

#[test]
fn the_rust_scaffold_ships_the_lock_file_its_example_is_built_with() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("lock-check");
    succeeded(toolgate().args(["new", "--lang", "rust"]).arg(&project));
    let lock = std::fs::read_to_string(project.join("Cargo.lock")).expect("a Cargo.lock");
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("guest-examples/rust-deny-force-push/Cargo.lock"),
    )
    .unwrap();
    assert_eq!(
        lock,
        example.replace("name = \"rust-deny-force-push\"", "name = \"lock-check\"")
    );
}

#[test]
fn a_file_that_is_not_a_component_gets_one_line_saying_what_it_is() {
    let fx = Fixture::new();
    std::fs::write(
        fx.workspace().join("notes.wasm"),
        "these are notes\n\u{1}\u{2}",
    )
    .unwrap();
    // A core module: the 8-byte preamble of WebAssembly version 1.
    std::fs::write(fx.workspace().join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    fx.workspace_hooks(json!([
        {"name": "notes", "wasm": "notes.wasm"},
        {"name": "core", "wasm": "core.wasm"}
    ]));
    let out = toolgate()
        .args(["hooks", "--check", "--workspace"])
        .arg(fx.workspace())
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 2, "one line each: {err}");
    assert!(
        lines[0].contains("(\"notes\")") && lines[0].contains("not a WebAssembly component"),
        "{err}"
    );
    assert!(
        !err.contains("these are notes") && !err.contains("[116,"),
        "no content, no byte dump: {err}"
    );
    assert!(
        lines[1].contains("(\"core\")") && lines[1].contains("core WebAssembly module"),
        "{err}"
    );
    assert!(
        lines[1].contains("wasm-tools component new"),
        "the command that makes it a component: {err}"
    );
}
