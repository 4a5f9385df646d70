//! Editing an agent's hook settings: what `toolgate install`, `uninstall`
//! and `doctor` do to (and read from) the file the agent loads its hooks
//! from, with every agent's part taken from its [`Install`] spec.
//!
//! # One engine, a module per settings format
//!
//! The three commands share one engine, [`Wiring`]: which entries are
//! toolgate's, what `install` writes, how an entry found differs from it.
//! What differs between agents is the format of the file, and each format
//! is a module implementing `Format` (install, uninstall, entries):
//! `hook_lists` for the JSON files with `hooks.<event>` lists (six agents,
//! flat or in matcher groups) and `plugin_file` for a file that is wholly
//! toolgate's (OpenCode's plugin). `json` is the order-keeping value both
//! read into. A new agent whose file is one of these formats adds nothing
//! here; a new format is a module and one arm of `format`.
//!
//! # Why its own JSON value
//!
//! A settings file is the user's: beside hooks it holds permissions, an
//! environment, a model, whatever the agent reads. An edit must change
//! toolgate's entries and nothing else — not the user's other hooks, not the
//! order of their keys, and never leave a second toolgate entry beside a
//! stale one (two entries run toolgate twice per call). serde_json's `Value`
//! sorts keys unless its `preserve_order` feature is on, and that feature
//! would change the key order of every JSON toolgate prints (agents'
//! answers, `--json` outputs, the snapshots). So a settings file is read
//! into [`Json`], a value that keeps its keys in the file's order, and only
//! toolgate's entries in it are touched. Duplicate keys are refused, as in
//! every JSON toolgate reads (`strict_json`): the agent would see only one of
//! them, and an edit cannot tell which. A file with comments is refused too:
//! the agents these layouts belong to read plain JSON, and a rewrite would
//! drop the comments.
//!
//! # Which handlers are toolgate's
//!
//! Those that run a program named `toolgate`, or `toolgate-hook` (the lean
//! client: `LEAN_CLIENT`), or this very binary, with the agent's subcommand as its first argument, read from the fields the
//! agent's own handler puts a command in (`command`, or `command` plus
//! `args`, …: found by asking the spec's `handler` for a probe command). A
//! user's hook that only mentions toolgate (`audit.sh --about toolgate`) is
//! not toolgate's, and is never touched.

mod hook_lists;
mod json;
mod mcp_servers;
mod mcp_toml;
mod plugin_file;
pub mod seat;

use super::{AgentHook, Install, Layout, Outward, TrustCheck};
use crate::safe_fs::ReadFileError;
use hook_lists::HookLists;
use json::parse;
pub use mcp_servers::{
    McpServer, McpState, guard_mcp_servers, local_mcp_servers, mcp_servers, unguard_mcp_servers,
};
use plugin_file::PluginFile;
use serde_json::Value;
use std::path::Path;

/// The most of a settings file toolgate reads.
pub const MAX_SETTINGS_BYTES: u64 = 4 << 20;

/// Why an agent's settings file cannot be read or edited. Errors say what is
/// wrong and where, never what the file holds (a project's settings may be
/// a symlink to a secret).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EditSettingsError {
    /// The file could not be read (not a regular file, too large, …).
    #[error(transparent)]
    File(ReadFileError),
    /// Not UTF-8 text.
    #[error("is not UTF-8 text")]
    NotUtf8,
    /// JSON with comments.
    #[error(
        "has a comment at line {line}, column {column}: toolgate edits plain JSON only (a \
         rewrite would drop the comments); remove them, or add toolgate's entries by hand"
    )]
    Comment {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// Not JSON.
    #[error("is not valid JSON at line {line}, column {column}: {what}")]
    NotJson {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What is wrong, quoting nothing of the file.
        what: String,
    },
    /// Not TOML.
    #[error("is not valid TOML at line {line}, column {column}")]
    NotToml {
        /// 1-based line (0: unknown).
        line: usize,
        /// 1-based column (0: unknown).
        column: usize,
    },
    /// JSON, but not an object.
    #[error("is not a JSON object")]
    NotAnObject,
    /// A key toolgate edits under has the wrong type.
    #[error("has `{key}` that is not {expected}; toolgate edits nothing it cannot read")]
    Shape {
        /// The key, dotted (`hooks.PreToolUse`).
        key: String,
        /// What it should be.
        expected: &'static str,
    },
    /// The edited value could not be written as JSON.
    #[error("cannot be written back as JSON")]
    Render(#[source] serde_json::Error),
}

/// Reads a settings file as toolgate reads every file it did not write: a
/// regular file (never a FIFO or a device), at most [`MAX_SETTINGS_BYTES`],
/// UTF-8. `None` when there is no file.
pub fn read_settings(path: &Path) -> Result<Option<String>, EditSettingsError> {
    match crate::safe_fs::read_identified(path, MAX_SETTINGS_BYTES) {
        Ok((bytes, _)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| EditSettingsError::NotUtf8),
        Err(ReadFileError::NotFound) => Ok(None),
        Err(e) => Err(EditSettingsError::File(e)),
    }
}

/// Whether the agent's own trust step is recorded as done for `root`, in
/// its file under `home` (a missing file is read as JSON `null`).
pub fn trust_done(check: &TrustCheck, home: &Path, root: &Path) -> Result<bool, EditSettingsError> {
    let value = match read_settings(&home.join(check.file))? {
        Some(text) if !text.trim().is_empty() => parse(&text)?.to_value(),
        _ => Value::Null,
    };
    Ok((check.done)(&value, root))
}

/// What an edit makes of a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// It already says what the edit would: nothing to write.
    Unchanged,
    /// Its new text.
    Write(String),
    /// Remove it (a layout whose whole file is toolgate's).
    Delete,
}

/// One toolgate entry found in a settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The agent event it is under.
    pub event: String,
    /// The command it runs: toolgate's path, the agent's subcommand, and
    /// any further arguments.
    pub argv: Vec<String>,
    /// How it differs from the entry `install` writes for the same command
    /// (empty: it is the current one), one line each.
    pub differs: Vec<String>,
}

/// Toolgate wired into one agent: the entries `install` writes, `uninstall`
/// removes and `doctor` reads, for this toolgate binary.
#[derive(Debug, Clone)]
pub struct Wiring {
    agent: Outward,
    exe: String,
    /// The URL of the server whose http hook to write instead of the
    /// command (`install <agent> --http`).
    http: Option<String>,
}

impl Wiring {
    /// `agent`'s wiring to the toolgate at `exe` (an absolute, canonical
    /// path).
    pub fn new(agent: Outward, exe: impl Into<String>) -> Self {
        Wiring {
            agent,
            exe: exe.into(),
            http: None,
        }
    }

    /// The wiring that writes the agent's http hook for the server at
    /// `url` instead of the command (only for an agent whose
    /// [`Install::http`] is set).
    pub fn over_http(mut self, url: impl Into<String>) -> Self {
        self.http = Some(url.into());
        self
    }

    /// What an entry runs: this toolgate, as the agent's hook; or, over
    /// HTTP, the server's URL alone.
    pub fn argv(&self) -> Vec<String> {
        match &self.http {
            Some(url) => vec![url.clone()],
            None => vec![self.exe.clone(), self.agent.name().to_owned()],
        }
    }

    /// Whether `url` is a toolgate server's http hook for this agent: a
    /// loopback IP literal, the agent's path.
    pub(super) fn is_toolgates_url(&self, url: &str) -> bool {
        let Some(rest) = url.strip_prefix("http://") else {
            return false;
        };
        let Some((authority, path)) = rest.split_once('/') else {
            return false;
        };
        path == self.agent.name()
            && authority
                .parse::<std::net::SocketAddr>()
                .is_ok_and(|addr| addr.ip().is_loopback())
    }

    /// The settings `text` (`None`: no file yet) with toolgate's entries
    /// for every event the agent's spec lists, replacing any stale one
    /// (another toolgate path, an older handler) in place, and removing
    /// toolgate's entries from events the spec no longer lists.
    pub fn install(&self, text: Option<&str>) -> Result<Edit, EditSettingsError> {
        let spec = self.agent.install();
        format(spec.layout).install(self, &spec, text)
    }

    /// The settings `text` without toolgate's entries for this agent, and
    /// without the event lists and groups that removing them emptied.
    pub fn uninstall(&self, text: &str) -> Result<Edit, EditSettingsError> {
        let spec = self.agent.install();
        format(spec.layout).uninstall(self, &spec, text)
    }

    /// Toolgate's entries for this agent in the settings `text`, in file
    /// order.
    pub fn entries(&self, text: &str) -> Result<Vec<Entry>, EditSettingsError> {
        let spec = self.agent.install();
        format(spec.layout).entries(self, &spec, text)
    }

    /// Whether `argv` runs toolgate as this agent's hook.
    pub(super) fn runs_toolgate(&self, argv: &[String]) -> bool {
        let [program, subcommand, ..] = argv else {
            return false;
        };
        subcommand == self.agent.name()
            && (*program == self.exe
                || Path::new(program)
                    .file_name()
                    .is_some_and(|name| name == "toolgate" || name == super::LEAN_CLIENT))
    }
}

/// What one layout's file is, for install, uninstall and doctor. A new
/// [`Layout`] is one arm in [`format`] and an implementation of this.
trait Format {
    fn install(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: Option<&str>,
    ) -> Result<Edit, EditSettingsError>;
    fn uninstall(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Edit, EditSettingsError>;
    fn entries(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Vec<Entry>, EditSettingsError>;
}

/// The one place layouts are told apart.
fn format(layout: Layout) -> Box<dyn Format> {
    match layout {
        Layout::Grouped { handler } => Box::new(HookLists {
            handler,
            grouped: true,
        }),
        Layout::Flat { handler } => Box::new(HookLists {
            handler,
            grouped: false,
        }),
        Layout::Plugin { source } => Box::new(PluginFile { source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wiring() -> Wiring {
        Wiring::new(Outward::ClaudeCode, "/opt/tg/toolgate")
    }

    fn written(edit: Edit) -> String {
        match edit {
            Edit::Write(text) => text,
            other => panic!("expected a write, got {other:?}"),
        }
    }

    fn events() -> &'static [&'static str] {
        Outward::ClaudeCode.install().events
    }

    #[test]
    fn install_keeps_the_users_keys_in_their_order_and_their_hooks() {
        let text = r#"{
    "zeta": 1,
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "mine.sh"}]}]
    },
    "alpha": {"b": 2, "a": 1}
}"#;
        let out = written(wiring().install(Some(text)).unwrap());
        let zeta = out.find("\"zeta\"").unwrap();
        let hooks = out.find("\"hooks\"").unwrap();
        let alpha = out.find("\"alpha\"").unwrap();
        assert!(zeta < hooks && hooks < alpha, "{out}");
        assert!(
            out.find("\"b\"").unwrap() < out.find("\"a\"").unwrap(),
            "{out}"
        );
        assert!(out.contains("mine.sh"), "{out}");
        assert!(
            out.starts_with("{\n    \"zeta\""),
            "the file's indent: {out}"
        );
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        for event in events() {
            let handler = &value["hooks"][event].as_array().unwrap().last().unwrap()["hooks"][0];
            assert_eq!(handler["command"], "/opt/tg/toolgate");
            assert_eq!(handler["args"], json!(["claude-code"]));
        }
    }

    #[test]
    fn a_second_install_changes_nothing() {
        let once = written(wiring().install(None).unwrap());
        assert_eq!(wiring().install(Some(&once)).unwrap(), Edit::Unchanged);
    }

    #[test]
    fn a_stale_entry_is_replaced_in_place_not_added_to() {
        let text = json!({"hooks": {"PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "a.sh"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "/old/toolgate claude-code"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "z.sh"}]}
        ]}})
        .to_string();
        let out: Value =
            serde_json::from_str(&written(wiring().install(Some(&text)).unwrap())).unwrap();
        let commands: Vec<&str> = out["hooks"]["PreToolUse"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["hooks"][0]["command"].as_str().unwrap())
            .collect();
        assert_eq!(commands, ["a.sh", "/opt/tg/toolgate", "z.sh"]);
    }

    #[test]
    fn uninstall_removes_only_toolgates_entries_and_what_it_emptied() {
        let mine = json!({"type": "command", "command": "/bin/audit --about toolgate claude-code"});
        let echo = json!({"type": "command", "command": "echo toolgate claude-code"});
        let text = json!({"keep": true, "hooks": {
            "PreToolUse": [
                {"matcher": "*", "hooks": [mine, {"type": "command", "command": "/x/toolgate claude-code"}]},
                {"matcher": "*", "hooks": [{"type": "command", "command": "/x/toolgate claude-code"}]}
            ],
            "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "'/y y/toolgate' claude-code --deadline-ms 9"}]}],
            "Stop": [{"hooks": [echo]}],
            "Empty": []
        }})
        .to_string();
        let out: Value =
            serde_json::from_str(&written(wiring().uninstall(&text).unwrap())).unwrap();
        assert_eq!(
            out,
            json!({"keep": true, "hooks": {
                "PreToolUse": [{"matcher": "*", "hooks": [mine]}],
                "Stop": [{"hooks": [echo]}],
                "Empty": []
            }})
        );
    }

    #[test]
    fn uninstalling_what_install_wrote_leaves_the_file_as_it_was() {
        let text = "{\n  \"model\": \"x\"\n}\n";
        let installed = written(wiring().install(Some(text)).unwrap());
        assert_eq!(written(wiring().uninstall(&installed).unwrap()), text);
    }

    #[test]
    fn exec_form_and_shell_form_handlers_are_recognised() {
        // Claude Code's entry is the exec form with `onFailure`: one without
        // it, or in the shell form, is toolgate's, and differs.
        let text = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": "/z/toolgate", "args": ["claude-code"]},
            {"type": "command", "command": "/z/toolgate claude-code", "onFailure": "block"}
        ]}]}})
        .to_string();
        let entries = wiring().entries(&text).unwrap();
        assert_eq!(entries.len(), 2);
        for entry in &entries {
            assert_eq!(entry.argv, ["/z/toolgate", "claude-code"]);
        }
        assert!(
            entries[0].differs.iter().any(|d| d.contains("`onFailure`")),
            "{:?}",
            entries[0].differs
        );
        assert!(
            entries[1].differs.iter().any(|d| d.contains("`args`")),
            "{:?}",
            entries[1].differs
        );
    }

    #[test]
    fn entries_say_how_an_entry_differs_from_what_install_writes() {
        let text = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "/opt/tg/toolgate claude-code", "extra": 1}
        ]}]}})
        .to_string();
        let entries = wiring().entries(&text).unwrap();
        let differs = entries[0].differs.join("\n");
        assert!(differs.contains("`extra` is set"), "{differs}");
        assert!(differs.contains("`matcher` is \"Bash\""), "{differs}");
        let current = written(wiring().install(None).unwrap());
        assert!(
            wiring()
                .entries(&current)
                .unwrap()
                .iter()
                .all(|e| e.differs.is_empty())
        );
    }

    #[test]
    fn unreadable_settings_are_refused_with_where_and_what() {
        let cases = [
            ("{\n  // mine\n  \"a\": 1\n}", "comment at line 2"),
            ("{\"a\": 1 /* x */}", "comment at line 1"),
            ("{\"a\": }", "not valid JSON at line 1"),
            ("[1]", "not a JSON object"),
            ("{\"hooks\": []}", "`hooks` that is not an object"),
            (
                "{\"hooks\": {\"PreToolUse\": {}}}",
                "`hooks.PreToolUse` that is not an array",
            ),
            ("{\"a\": 1, \"a\": 2}", "duplicate key"),
        ];
        for (text, want) in cases {
            let e = wiring().install(Some(text)).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn a_flat_layout_writes_handlers_beside_a_version() {
        fn handler(argv: &[String]) -> Value {
            json!({"type": "command", "bash": crate::shell_words(argv)})
        }
        let flat = HookLists {
            handler,
            grouped: false,
        };
        let spec = Install {
            switches: &[],
            layout: Layout::Flat { handler },
            timeout: Some(30),
            ..Outward::ClaudeCode.install()
        };
        let out = written(flat.install(&wiring(), &spec, None).unwrap());
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["version"], 1);
        assert_eq!(
            value["hooks"]["PreToolUse"],
            json!([{"type": "command", "bash": "/opt/tg/toolgate claude-code", "timeout": 30}])
        );
        assert_eq!(
            flat.install(&wiring(), &spec, Some(&out)).unwrap(),
            Edit::Unchanged
        );
        let entries = flat.entries(&wiring(), &spec, &out).unwrap();
        assert_eq!(entries.len(), events().len());
    }
}
