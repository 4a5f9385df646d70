//! Editing an agent's hook settings: what `toolgate install`, `uninstall`
//! and `doctor` do to (and read from) the file the agent loads its hooks
//! from, with every agent's part taken from its [`Install`] spec.
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

use super::{AgentHook, Install, Layout, Outward, TrustCheck};
use crate::safe_fs::ReadFileError;
use crate::strict_json::JsonError;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};
use std::fmt;
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
    fn is_toolgates_url(&self, url: &str) -> bool {
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
    fn runs_toolgate(&self, argv: &[String]) -> bool {
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

/// A plugin file the agent loads by itself (OpenCode): the whole file is
/// toolgate's, recognised by the line naming its binary
/// (`const TOOLGATE = "<path>"; // toolgate-binary`). A file at that path
/// without the line is someone else's, and is never overwritten or removed.
struct PluginFile {
    source: fn(&[String]) -> String,
}

/// The end of the line of toolgate's plugin that names its binary.
const PLUGIN_BINARY_MARK: &str = "; // toolgate-binary";

impl PluginFile {
    /// The binary toolgate's plugin `text` runs; `None` when `text` is not
    /// toolgate's plugin.
    fn binary(text: &str) -> Option<String> {
        text.lines().find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("const TOOLGATE = ")?
                .strip_suffix(PLUGIN_BINARY_MARK)?;
            serde_json::from_str::<String>(value).ok()
        })
    }

    fn not_toolgates() -> EditSettingsError {
        EditSettingsError::Shape {
            key: "const TOOLGATE".into(),
            expected: "toolgate's plugin (the file is someone else's)",
        }
    }
}

impl Format for PluginFile {
    fn install(
        &self,
        wiring: &Wiring,
        _spec: &Install,
        text: Option<&str>,
    ) -> Result<Edit, EditSettingsError> {
        let wanted = (self.source)(&wiring.argv());
        match text {
            Some(text) if text == wanted => Ok(Edit::Unchanged),
            Some(text) if Self::binary(text).is_none() => Err(Self::not_toolgates()),
            _ => Ok(Edit::Write(wanted)),
        }
    }

    fn uninstall(
        &self,
        _wiring: &Wiring,
        _spec: &Install,
        text: &str,
    ) -> Result<Edit, EditSettingsError> {
        Ok(match Self::binary(text) {
            Some(_) => Edit::Delete,
            None => Edit::Unchanged,
        })
    }

    fn entries(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Vec<Entry>, EditSettingsError> {
        let Some(binary) = Self::binary(text) else {
            return Ok(Vec::new());
        };
        let argv = vec![binary, wiring.agent.name().to_owned()];
        let differs = if text == (self.source)(&argv) {
            Vec::new()
        } else {
            vec!["the plugin file is not the one this toolgate installs".to_owned()]
        };
        Ok(spec
            .events
            .iter()
            .map(|event| Entry {
                event: (*event).to_owned(),
                argv: argv.clone(),
                differs: differs.clone(),
            })
            .collect())
    }
}

/// The matcher of the group toolgate writes: every tool.
const EVERY_TOOL: &str = "*";

/// A JSON settings file with `hooks.<event>`: a list of handlers (`Flat`,
/// beside `"version": 1`) or of groups `{"matcher", "hooks": [handler]}`
/// (`Grouped`).
struct HookLists {
    handler: fn(&[String]) -> Value,
    grouped: bool,
}

/// Where toolgate's handlers were in one event's list.
struct Removed {
    /// Where a replacement goes: where the first one was.
    at: usize,
}

impl HookLists {
    /// The handler install writes for `argv`, with the spec's timeout.
    fn handler_for(&self, argv: &[String], timeout: Option<u64>) -> Value {
        let mut handler = (self.handler)(argv);
        if let (Some(timeout), Value::Object(fields)) = (timeout, &mut handler) {
            fields
                .entry("timeout")
                .or_insert_with(|| Value::from(timeout));
        }
        handler
    }

    /// The handler install writes for what `argv` runs (a URL alone: the
    /// agent's http hook).
    fn wanted(&self, spec: &Install, argv: &[String]) -> Value {
        match (argv, spec.http) {
            ([url], Some(http)) if url.starts_with("http://") => (http.handler)(url),
            _ => self.handler_for(argv, spec.timeout),
        }
    }

    /// The list item install writes for `handler`.
    fn item_for(&self, handler: &Value) -> Json {
        let handler = Json::from_value(handler);
        if self.grouped {
            Json::Object(vec![
                ("matcher".into(), Json::String(EVERY_TOOL.into())),
                ("hooks".into(), Json::Array(vec![handler])),
            ])
        } else {
            handler
        }
    }

    /// The fields of a handler that hold its command (strings) and its
    /// arguments (arrays): where the spec's handler puts a probe command,
    /// and `command` / `args` always.
    fn command_fields(&self) -> (Vec<String>, Vec<String>) {
        const PROBE: &str = "toolgate-probe";
        let probe = (self.handler)(&[format!("/{PROBE}/toolgate"), PROBE.to_owned()]);
        let mut strings = vec!["command".to_owned()];
        let mut arrays = vec!["args".to_owned()];
        if let Value::Object(fields) = probe {
            for (key, value) in fields {
                match value {
                    Value::String(s) if s.contains(PROBE) => strings.push(key),
                    Value::Array(items)
                        if items
                            .iter()
                            .any(|i| i.as_str().is_some_and(|s| s.contains(PROBE))) =>
                    {
                        arrays.push(key)
                    }
                    _ => {}
                }
            }
        }
        (strings, arrays)
    }

    /// The command `handler` runs, if it is toolgate's for this agent.
    fn ours(&self, wiring: &Wiring, handler: &Json) -> Option<Vec<String>> {
        let Json::Object(fields) = handler else {
            return None;
        };
        if handler.get("type") == Some(&Json::String("http".into())) {
            return match handler.get("url") {
                Some(Json::String(url)) if wiring.is_toolgates_url(url) => Some(vec![url.clone()]),
                _ => None,
            };
        }
        let (strings, arrays) = self.command_fields();
        let args: Vec<Vec<String>> = fields
            .iter()
            .filter(|(key, _)| arrays.contains(key))
            .filter_map(|(_, value)| value.strings())
            .collect();
        fields
            .iter()
            .filter(|(key, _)| strings.contains(key))
            .filter_map(|(_, value)| match value {
                Json::String(command) => Some(command),
                _ => None,
            })
            .flat_map(|command| {
                let split = shlex::split(command);
                let with_args = args.iter().map(move |args| {
                    std::iter::once(command.clone())
                        .chain(args.iter().cloned())
                        .collect::<Vec<_>>()
                });
                split.into_iter().chain(with_args)
            })
            .find(|argv| wiring.runs_toolgate(argv))
    }

    /// The handlers of one list item: the item itself (`Flat`), or the
    /// group's `hooks` (`Grouped`; none when the group has no such list).
    fn handlers<'a>(&self, item: &'a Json) -> &'a [Json] {
        if !self.grouped {
            return std::slice::from_ref(item);
        }
        match item.get("hooks") {
            Some(Json::Array(handlers)) => handlers,
            _ => &[],
        }
    }

    /// Removes toolgate's handlers from one event's list, and the groups
    /// that emptied; `None` when there were none.
    fn remove_ours(&self, wiring: &Wiring, items: &mut Vec<Json>) -> Option<Removed> {
        let mut removed = None;
        for item in std::mem::take(items) {
            if !self.grouped {
                if self.ours(wiring, &item).is_some() {
                    removed.get_or_insert(Removed { at: items.len() });
                } else {
                    items.push(item);
                }
                continue;
            }
            let mut group = item;
            let Some(Json::Array(handlers)) = group.get_mut("hooks") else {
                items.push(group);
                continue;
            };
            let before = handlers.len();
            handlers.retain(|h| self.ours(wiring, h).is_none());
            if handlers.len() == before {
                items.push(group);
            } else if handlers.is_empty() {
                removed.get_or_insert(Removed { at: items.len() });
            } else {
                items.push(group);
                removed.get_or_insert(Removed { at: items.len() });
            }
        }
        removed
    }

    /// Removes toolgate's handlers from every event's list but those in
    /// `except`, and the lists that emptied (a list the user left empty
    /// stays); whether any list emptied.
    fn remove_from_events(
        &self,
        wiring: &Wiring,
        hooks: &mut Vec<(String, Json)>,
        except: &[&str],
    ) -> bool {
        let mut emptied = Vec::new();
        for (event, items) in hooks.iter_mut() {
            if let Json::Array(items) = items
                && !except.contains(&event.as_str())
                && self.remove_ours(wiring, items).is_some()
                && items.is_empty()
            {
                emptied.push(event.clone());
            }
        }
        hooks.retain(|(event, _)| !emptied.contains(event));
        !emptied.is_empty()
    }

    /// Whether `items` holds toolgate's entry exactly once, as install
    /// writes it (other keys of its group are the user's).
    fn is_current(&self, wiring: &Wiring, items: &[Json], handler: &Value) -> bool {
        let mut found = items.iter().flat_map(|item| {
            self.handlers(item)
                .iter()
                .filter(|h| self.ours(wiring, h).is_some())
                .map(move |h| (item, h))
        });
        let (Some((item, found_handler)), None) = (found.next(), found.next()) else {
            return false;
        };
        let matcher_ok =
            !self.grouped || item.get("matcher") == Some(&Json::String(EVERY_TOOL.into()));
        matcher_ok && found_handler.to_value() == *handler
    }
}

impl Format for HookLists {
    fn install(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: Option<&str>,
    ) -> Result<Edit, EditSettingsError> {
        let (mut root, indent) = match text {
            Some(text) if !text.trim().is_empty() => (parse(text)?, indent_of(text)),
            _ => (Json::Object(Vec::new()), "  ".to_owned()),
        };
        let before = root.clone();
        let Json::Object(fields) = &mut root else {
            return Err(EditSettingsError::NotAnObject);
        };
        if !self.grouped && !fields.iter().any(|(k, _)| k == "version") {
            fields.insert(0, ("version".into(), Json::Number(1.into())));
        }
        let hooks = hooks_of(field_at(fields, "hooks", Json::Object(Vec::new())), spec)?;
        let handler = self.wanted(spec, &wiring.argv());
        // Events the spec no longer lists lose toolgate's entries.
        self.remove_from_events(wiring, hooks, spec.events);
        for event in spec.events {
            let key = format!("hooks.{event}");
            let items = field_at(hooks, event, Json::Array(Vec::new()));
            let Json::Array(items) = items else {
                return Err(EditSettingsError::Shape {
                    key,
                    expected: "an array",
                });
            };
            if self.is_current(wiring, items, &handler) {
                continue;
            }
            let at = self
                .remove_ours(wiring, items)
                .map_or(items.len(), |removed| removed.at);
            items.insert(at, self.item_for(&handler));
        }
        if root == before {
            return Ok(Edit::Unchanged);
        }
        render(&root, &indent).map(Edit::Write)
    }

    fn uninstall(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Edit, EditSettingsError> {
        if text.trim().is_empty() {
            return Ok(Edit::Unchanged);
        }
        let mut root = parse(text)?;
        let before = root.clone();
        let Json::Object(fields) = &mut root else {
            return Err(EditSettingsError::NotAnObject);
        };
        let Some((_, hooks)) = fields.iter_mut().find(|(k, _)| k == "hooks") else {
            return Ok(Edit::Unchanged);
        };
        let hooks = hooks_of(hooks, spec)?;
        let emptied = self.remove_from_events(wiring, hooks, &[]);
        if hooks.is_empty() && emptied {
            fields.retain(|(k, _)| k != "hooks");
        }
        if root == before {
            return Ok(Edit::Unchanged);
        }
        render(&root, &indent_of(text)).map(Edit::Write)
    }

    fn entries(
        &self,
        wiring: &Wiring,
        spec: &Install,
        text: &str,
    ) -> Result<Vec<Entry>, EditSettingsError> {
        if text.trim().is_empty() {
            return Ok(Vec::new());
        }
        let root = parse(text)?;
        let Json::Object(_) = root else {
            return Err(EditSettingsError::NotAnObject);
        };
        let mut root = root;
        let Some(hooks) = root.get_mut("hooks") else {
            return Ok(Vec::new());
        };
        let hooks = &*hooks_of(hooks, spec)?;
        let mut entries = Vec::new();
        for (event, items) in hooks {
            let Json::Array(items) = items else { continue };
            for item in items {
                for handler in self.handlers(item) {
                    let Some(argv) = self.ours(wiring, handler) else {
                        continue;
                    };
                    let wanted = self.wanted(spec, &argv);
                    let mut differs = differences(&handler.to_value(), &wanted);
                    if self.grouped && item.get("matcher") != Some(&Json::String(EVERY_TOOL.into()))
                    {
                        let now = item
                            .get("matcher")
                            .map_or("none".into(), |m| m.to_value().to_string());
                        differs.push(format!(
                            "its group's `matcher` is {now}, install writes \"{EVERY_TOOL}\" \
                             (every tool)"
                        ));
                    }
                    entries.push(Entry {
                        event: event.clone(),
                        argv,
                        differs,
                    });
                }
            }
        }
        Ok(entries)
    }
}

/// The `hooks` object of a settings file, checked as far as toolgate
/// reads it: an object whose lists for the spec's events are lists.
fn hooks_of<'a>(
    hooks: &'a mut Json,
    spec: &Install,
) -> Result<&'a mut Vec<(String, Json)>, EditSettingsError> {
    let Json::Object(hooks) = hooks else {
        return Err(EditSettingsError::Shape {
            key: "hooks".into(),
            expected: "an object",
        });
    };
    match hooks.iter().find(|(event, items)| {
        spec.events.contains(&event.as_str()) && !matches!(items, Json::Array(_))
    }) {
        Some((event, _)) => Err(EditSettingsError::Shape {
            key: format!("hooks.{event}"),
            expected: "an array",
        }),
        None => Ok(hooks),
    }
}

/// The value under `key` in `fields`, added as `empty` (at the end) when
/// missing.
fn field_at<'a>(fields: &'a mut Vec<(String, Json)>, key: &str, empty: Json) -> &'a mut Json {
    let index = match fields.iter().position(|(k, _)| k == key) {
        Some(index) => index,
        None => {
            fields.push((key.to_owned(), empty));
            fields.len() - 1
        }
    };
    &mut fields[index].1
}

/// How the handler `found` differs from `wanted`, key by key.
fn differences(found: &Value, wanted: &Value) -> Vec<String> {
    let (Value::Object(found), Value::Object(wanted)) = (found, wanted) else {
        return if found == wanted {
            Vec::new()
        } else {
            vec![format!("it is {found}, install writes {wanted}")]
        };
    };
    let mut out = Vec::new();
    for (key, want) in wanted {
        match found.get(key) {
            None => out.push(format!("`{key}` is missing (install writes {want})")),
            Some(have) if have != want => {
                out.push(format!("`{key}` is {have}, install writes {want}"))
            }
            Some(_) => {}
        }
    }
    for key in found.keys().filter(|k| !wanted.contains_key(*k)) {
        out.push(format!("`{key}` is set, install writes none"));
    }
    out
}

/// Parses a settings file, telling a comment from other invalid JSON.
fn parse(text: &str) -> Result<Json, EditSettingsError> {
    let mut de = serde_json::Deserializer::from_str(text);
    Json::deserialize(&mut de)
        .and_then(|json| de.end().map(|()| json))
        .map_err(|e| {
            if comment_at(text, e.line(), e.column()) {
                EditSettingsError::Comment {
                    line: e.line(),
                    column: e.column(),
                }
            } else {
                let JsonError { line, column, what } = JsonError::from_serde(&e);
                EditSettingsError::NotJson { line, column, what }
            }
        })
}

/// Whether a `//` or `/*` starts at (or just before) the 1-based position
/// serde_json reported an error at.
fn comment_at(text: &str, line: usize, column: usize) -> bool {
    let Some(line) = text.lines().nth(line.saturating_sub(1)) else {
        return false;
    };
    let chars: Vec<char> = line.chars().collect();
    let starts =
        |i: usize| chars.get(i) == Some(&'/') && matches!(chars.get(i + 1), Some('/' | '*'));
    column.checked_sub(1).is_some_and(starts) || column.checked_sub(2).is_some_and(starts)
}

/// The indentation the file uses (its first indented line's), else two
/// spaces.
fn indent_of(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|line| {
            line.chars()
                .take_while(|c| *c == ' ' || *c == '\t')
                .collect::<String>()
        })
        .find(|indent| !indent.is_empty())
        .unwrap_or_else(|| "  ".to_owned())
}

/// `json` as pretty JSON with `indent`, ending in a newline.
fn render(json: &Json, indent: &str) -> Result<String, EditSettingsError> {
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    json.serialize(&mut serializer)
        .map_err(EditSettingsError::Render)?;
    out.push(b'\n');
    // Serialized from `str`s and numbers: always UTF-8.
    String::from_utf8(out).map_err(|_| EditSettingsError::NotUtf8)
}

/// A JSON value that keeps its objects' keys in order (see the module
/// docs).
#[derive(Debug, Clone, PartialEq)]
enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    fn from_value(value: &Value) -> Json {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from_value).collect()),
            Value::Object(fields) => Json::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), Json::from_value(v)))
                    .collect(),
            ),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.clone()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(fields) => Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(fields) => fields.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An array of strings, as strings.
    fn strings(&self) -> Option<Vec<String>> {
        match self {
            Json::Array(items) => items
                .iter()
                .map(|i| match i {
                    Json::String(s) => Some(s.clone()),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(fields) => {
                let mut map = s.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut fields: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value()?;
            if fields.iter().any(|(k, _)| *k == key) {
                return Err(de::Error::custom("duplicate key"));
            }
            fields.push((key, value));
        }
        Ok(Json::Object(fields))
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
