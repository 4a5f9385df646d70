//! Claude Code's settings entry: what `toolgate install claude-code` writes
//! (the dialect's `Install`) is what `toolgate claude-code --help` tells a
//! user to paste, and both are the entry the live tests run on both pinned
//! releases (tests/all/live/claude.rs): the exec form, fail-closed.

use serde_json::{Value, json};
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Layout, Outward};

/// The handler the install spec writes for `argv`.
fn installed(argv: &[&str]) -> Value {
    let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
    match Outward::ClaudeCode.install().layout {
        Layout::Grouped { handler } => handler(&argv),
        Layout::Flat { .. } | Layout::Plugin { .. } => {
            panic!("Claude Code groups its handlers under matchers")
        }
    }
}

#[test]
fn claude_code_is_installed_in_the_exec_form_and_fails_closed() {
    assert_eq!(
        installed(&["/opt/tool gate/toolgate", "claude-code"]),
        json!({"type": "command", "command": "/opt/tool gate/toolgate",
               "args": ["claude-code"], "onFailure": "block"}),
        "no shell: a path with a space stays one word"
    );
    assert_eq!(
        installed(&[
            "/usr/local/bin/toolgate",
            "claude-code",
            "--deadline-ms",
            "25000"
        ])["args"],
        json!(["claude-code", "--deadline-ms", "25000"])
    );
}

#[test]
fn claude_code_help_shows_the_handler_install_writes() {
    let help = Outward::ClaudeCode.help().after_help;
    let start = help.find("{\n").expect("a JSON block");
    let end = help.rfind("\n}").expect("a JSON block") + 2;
    let entry: Value = serde_json::from_str(&help[start..end]).expect("the entry parses");
    assert_eq!(
        entry["hooks"]["PreToolUse"][0]["hooks"][0],
        installed(&["/usr/local/bin/toolgate", "claude-code"])
    );
    let install = Outward::ClaudeCode.install();
    assert_eq!(
        install.events,
        ["PreToolUse", "PostToolUse", "PostToolUseFailure"]
    );
    // Claude Code's own default hook timeout (600 s, both releases) is kept.
    assert_eq!(install.timeout, None);
}
