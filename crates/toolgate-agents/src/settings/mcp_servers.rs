//! An agent's MCP servers, run through `toolgate mcp`: what `toolgate
//! install <agent> --mcp` writes, `uninstall --mcp` restores and `doctor`
//! reads, in the `mcpServers` object most agents keep (Claude Code, Gemini
//! CLI, Qwen Code, Cursor, Copilot CLI: a `command` and its `args`) or
//! OpenCode's `mcp` object (a `command` array of both).
//!
//! A local server's entry runs a command; guarding it makes the entry run
//! toolgate instead, with the server's own command after `--`:
//! `{"command": "/abs/toolgate", "args": ["mcp", "--name", NAME, "--",
//! COMMAND, ARGS...]}` (OpenCode: one `command` array of all of it). Everything else in the entry (`env`, `cwd`,
//! `timeout`, the agent's own keys) stays, so the server is started as
//! before, by toolgate. Undoing it puts the command and args back from
//! what follows `--`, so nothing is stored elsewhere and the edit is its
//! own record.
//!
//! What is not wrapped, and said: a remote server (`url`, `httpUrl`, a
//! `type` of `http` or `sse`: `toolgate mcp` proxies stdio only), and a
//! server whose name could not be a tool name's part (`toolgate mcp`
//! refuses it).

use super::json::{Json, indent_of, parse, render};
use super::{Edit, EditSettingsError};
use crate::McpShape;

/// The key the servers are under.
fn key(shape: McpShape) -> &'static str {
    match shape {
        McpShape::McpServers => "mcpServers",
        McpShape::CommandArray => "mcp",
        McpShape::Toml => "mcp_servers",
    }
}

/// One server in the file, and how it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpServer {
    /// Its name (the `mcpServers` key).
    pub name: String,
    /// The project it is kept for, in a file that keeps servers per
    /// project (Claude Code's `projects["<root>"].mcpServers`, its local
    /// scope); `None`: the file's own `mcpServers`.
    pub project: Option<String>,
    /// How it stands.
    pub state: McpState,
}

/// How a configured MCP server stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpState {
    /// It runs through `toolgate mcp`: its own command, as the proxy runs it.
    Guarded {
        /// The server's command and arguments (after `--`).
        server: Vec<String>,
    },
    /// It runs directly: its command and arguments.
    Unguarded {
        /// The command and arguments.
        server: Vec<String>,
    },
    /// Not a local server toolgate can put itself in front of: why.
    Skipped(String),
}

/// The servers `text` (an agent's MCP config) lists, in its order.
///
/// # Errors
///
/// [`EditSettingsError`] when the file is not JSON, or `mcpServers` is
/// not an object.
pub fn mcp_servers(text: &str, shape: McpShape) -> Result<Vec<McpServer>, EditSettingsError> {
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    if shape == McpShape::Toml {
        return super::mcp_toml::mcp_servers(text);
    }
    let json = parse(text)?;
    let Some(servers) = servers_of(&json, shape)? else {
        return Ok(Vec::new());
    };
    Ok(servers
        .iter()
        .map(|(name, entry)| McpServer {
            name: name.clone(),
            project: None,
            state: state_of(name, entry, shape),
        })
        .collect())
}

/// The servers `text` keeps per project (`projects["<root>"].mcpServers`,
/// Claude Code's local scope), each with its project, in the file's order.
///
/// # Errors
///
/// [`EditSettingsError`] when the file is not JSON, or `projects`, a
/// project or its `mcpServers` is not an object.
pub fn local_mcp_servers(text: &str, shape: McpShape) -> Result<Vec<McpServer>, EditSettingsError> {
    if text.trim().is_empty() || shape == McpShape::Toml {
        return Ok(Vec::new());
    }
    let json = parse(text)?;
    let mut found = Vec::new();
    for (project, servers) in projects_of(&json, shape)? {
        for (name, entry) in servers {
            found.push(McpServer {
                name: name.clone(),
                project: Some(project.clone()),
                state: state_of(name, entry, shape),
            });
        }
    }
    Ok(found)
}

/// A project's path and its servers' entries, as the file has them.
type ProjectServers<'a> = (&'a String, &'a Vec<(String, Json)>);

/// Each project of `json` that keeps servers, and its servers.
fn projects_of(json: &Json, shape: McpShape) -> Result<Vec<ProjectServers<'_>>, EditSettingsError> {
    let projects = match json.get("projects") {
        None => return Ok(Vec::new()),
        Some(Json::Object(projects)) => projects,
        Some(_) => {
            return Err(EditSettingsError::Shape {
                key: "projects".into(),
                expected: "an object",
            });
        }
    };
    let mut out = Vec::new();
    for (project, entry) in projects {
        match entry.get(key(shape)) {
            None => {}
            Some(Json::Object(servers)) => out.push((project, servers)),
            Some(_) => {
                return Err(EditSettingsError::Shape {
                    key: format!("projects[{project:?}].{}", key(shape)),
                    expected: "an object",
                });
            }
        }
    }
    Ok(out)
}

fn servers_of(
    json: &Json,
    shape: McpShape,
) -> Result<Option<&Vec<(String, Json)>>, EditSettingsError> {
    if !matches!(json, Json::Object(_)) {
        return Err(EditSettingsError::NotAnObject);
    }
    match json.get(key(shape)) {
        None => Ok(None),
        Some(Json::Object(servers)) => Ok(Some(servers)),
        Some(_) => Err(EditSettingsError::Shape {
            key: key(shape).into(),
            expected: "an object",
        }),
    }
}

/// A local server's command and arguments, or why it is not one.
fn command_of(entry: &Json, shape: McpShape) -> Result<Vec<String>, String> {
    let remote = ["url", "httpUrl", "serverUrl"]
        .iter()
        .any(|key| entry.get(key).is_some())
        || matches!(entry.get("type"), Some(Json::String(t)) if t != "stdio" && t != "local");
    if remote {
        return Err("a remote server: `toolgate mcp` proxies stdio servers only".into());
    }
    match shape {
        McpShape::McpServers => {
            let Some(Json::String(command)) = entry.get("command") else {
                return Err("no `command` to run".into());
            };
            let mut argv = vec![command.clone()];
            match entry.get("args") {
                None => {}
                Some(args) => argv.extend(
                    args.strings()
                        .ok_or_else(|| "`args` is not a list of strings".to_owned())?,
                ),
            }
            Ok(argv)
        }
        McpShape::CommandArray => match entry.get("command").and_then(Json::strings) {
            Some(argv) if !argv.is_empty() => Ok(argv),
            _ => Err("`command` is not a list of strings".into()),
        },
        McpShape::Toml => Err("a TOML table, read by `mcp_toml`".into()),
    }
}

/// Makes an entry run `argv`.
fn set_command(entry: &mut Json, shape: McpShape, argv: &[String]) {
    match shape {
        McpShape::McpServers => {
            set_key(entry, "command", Json::String(argv[0].clone()));
            set_key(entry, "args", strings(&argv[1..]));
        }
        McpShape::CommandArray => set_key(entry, "command", strings(argv)),
        // Never reached: TOML is rewritten by `mcp_toml`.
        McpShape::Toml => {}
    }
}

/// Whether `name` can be the `<server>` of `mcp__<server>__<tool>`.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn state_of(name: &str, entry: &Json, shape: McpShape) -> McpState {
    state_from(name, command_of(entry, shape))
}

/// How a server stands, from its command (or why it has none to wrap).
pub(super) fn state_from(name: &str, argv: Result<Vec<String>, String>) -> McpState {
    let argv = match argv {
        Ok(argv) => argv,
        Err(why) => return McpState::Skipped(why),
    };
    if let Some(server) = wrapped(&argv[0], &argv[1..]) {
        return McpState::Guarded { server };
    }
    if !valid_name(name) {
        return McpState::Skipped(
            "its name is not ASCII letters, digits, `_` or `-`, which a tool name needs".into(),
        );
    }
    McpState::Unguarded { server: argv }
}

/// The command that runs an unguarded server `name` through the toolgate
/// at `exe`.
pub(super) fn guarded_argv(exe: &str, name: &str, state: &McpState) -> Option<Vec<String>> {
    match state {
        McpState::Unguarded { server } => {
            let mut argv = vec![
                exe.to_owned(),
                "mcp".into(),
                "--name".into(),
                name.to_owned(),
                "--".into(),
            ];
            argv.extend(server.iter().cloned());
            Some(argv)
        }
        McpState::Guarded { .. } | McpState::Skipped(_) => None,
    }
}

/// The server's own command, when `command args` runs it through
/// `toolgate mcp` (a program named toolgate, `mcp`, `--name N`, `--`).
fn wrapped(command: &str, args: &[String]) -> Option<Vec<String>> {
    let program = std::path::Path::new(command).file_name()?.to_str()?;
    if program != "toolgate" || args.first().map(String::as_str) != Some("mcp") {
        return None;
    }
    let dashes = args.iter().position(|a| a == "--")?;
    let server = args[dashes + 1..].to_vec();
    (!server.is_empty()).then_some(server)
}

/// Sets `key` of an object entry, keeping its place (or appending it).
fn set_key(entry: &mut Json, key: &str, value: Json) {
    if let Json::Object(fields) = entry {
        match fields.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => *old = value,
            None => fields.push((key.to_owned(), value)),
        }
    }
}

fn strings(items: &[String]) -> Json {
    Json::Array(items.iter().cloned().map(Json::String).collect())
}

/// Runs every local server of `text` through the toolgate at `exe`; what
/// each then is.
///
/// # Errors
///
/// [`EditSettingsError`] when the file is not JSON or `mcpServers` is not
/// an object.
///
/// `per_project`: the file also keeps servers per project (Claude Code's
/// local scope), and those are guarded too: they are the user's, in the
/// user's file, and they win over the user's server of the same name.
pub fn guard_mcp_servers(
    text: Option<&str>,
    shape: McpShape,
    exe: &str,
    per_project: bool,
) -> Result<(Edit, Vec<McpServer>), EditSettingsError> {
    if shape == McpShape::Toml {
        return super::mcp_toml::guard(text, exe);
    }
    rewrite(text, shape, per_project, |name, state| {
        guarded_argv(exe, name, state)
    })
}

/// Runs every server of `text` that runs through `toolgate mcp` directly
/// again; what each then is.
///
/// # Errors
///
/// As [`guard_mcp_servers`].
pub fn unguard_mcp_servers(
    text: &str,
    shape: McpShape,
    per_project: bool,
) -> Result<(Edit, Vec<McpServer>), EditSettingsError> {
    let unguard = |_: &str, state: &McpState| match state {
        McpState::Guarded { server } => Some(server.clone()),
        McpState::Unguarded { .. } | McpState::Skipped(_) => None,
    };
    if shape == McpShape::Toml {
        return super::mcp_toml::rewrite(Some(text), unguard);
    }
    rewrite(Some(text), shape, per_project, unguard)
}

/// Makes each server `change` gives a command for run it (with
/// `per_project`, each project's servers too).
fn rewrite(
    text: Option<&str>,
    shape: McpShape,
    per_project: bool,
    change: impl Fn(&str, &McpState) -> Option<Vec<String>>,
) -> Result<(Edit, Vec<McpServer>), EditSettingsError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        return Ok((Edit::Unchanged, Vec::new()));
    };
    let mut json = parse(text)?;
    let top = servers_of(&json, shape)?.is_some();
    let local = per_project && !projects_of(&json, shape)?.is_empty();
    if !top && !local {
        return Ok((Edit::Unchanged, Vec::new()));
    }
    let mut changed = false;
    let mut each = |servers: &mut Vec<(String, Json)>| {
        for (name, entry) in servers.iter_mut() {
            if let Some(argv) = change(name, &state_of(name, entry, shape)) {
                set_command(entry, shape, &argv);
                changed = true;
            }
        }
    };
    if let Some(Json::Object(servers)) = json.get_mut(key(shape)) {
        each(servers);
    }
    if per_project && let Some(Json::Object(projects)) = json.get_mut("projects") {
        for (_, project) in projects.iter_mut() {
            if let Some(Json::Object(servers)) = project.get_mut(key(shape)) {
                each(servers);
            }
        }
    }
    let rendered = render(&json, &indent_of(text))?;
    let mut servers = mcp_servers(&rendered, shape)?;
    if per_project {
        servers.extend(local_mcp_servers(&rendered, shape)?);
    }
    Ok((
        if changed {
            Edit::Write(rendered)
        } else {
            Edit::Unchanged
        },
        servers,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{
  "theme": "dark",
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/src"], "env": {"A": "1"}},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp"},
    "bad name": {"command": "x"},
    "bare": {"command": "/usr/bin/server"}
  }
}
"#;

    fn text(edit: &Edit) -> &str {
        match edit {
            Edit::Write(text) => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn guarding_wraps_each_local_server_keeps_the_rest_and_undoing_restores_the_file() {
        let (edit, servers) = guard_mcp_servers(
            Some(CONFIG),
            McpShape::McpServers,
            "/opt/bin/toolgate",
            false,
        )
        .unwrap();
        let guarded = text(&edit);
        let value: serde_json::Value = serde_json::from_str(guarded).unwrap();
        assert_eq!(value["mcpServers"]["fs"]["command"], "/opt/bin/toolgate");
        assert_eq!(
            value["mcpServers"]["fs"]["args"],
            serde_json::json!([
                "mcp",
                "--name",
                "fs",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem",
                "/src"
            ])
        );
        assert_eq!(value["mcpServers"]["fs"]["env"]["A"], "1");
        assert_eq!(value["mcpServers"]["bare"]["args"][4], "/usr/bin/server");
        assert_eq!(value["theme"], "dark");
        let states: Vec<_> = servers
            .iter()
            .map(|s| (s.name.as_str(), &s.state))
            .collect();
        assert!(matches!(states[0], ("fs", McpState::Guarded { .. })));
        assert!(matches!(states[1], ("remote", McpState::Skipped(_))));
        assert!(matches!(states[2], ("bad name", McpState::Skipped(_))));
        // Again: nothing to do.
        assert_eq!(
            guard_mcp_servers(
                Some(guarded),
                McpShape::McpServers,
                "/opt/bin/toolgate",
                false
            )
            .unwrap()
            .0,
            Edit::Unchanged
        );
        // Undone: the file as it was, but for the `args` a bare entry gained.
        let (undone, _) = unguard_mcp_servers(guarded, McpShape::McpServers, false).unwrap();
        let undone: serde_json::Value = serde_json::from_str(text(&undone)).unwrap();
        let mut before: serde_json::Value = serde_json::from_str(CONFIG).unwrap();
        before["mcpServers"]["bare"]["args"] = serde_json::json!([]);
        assert_eq!(undone, before);
    }

    #[test]
    fn opencodes_command_array_is_wrapped_and_restored_whole() {
        let config = r#"{"mcp": {"fs": {"type": "local", "command": ["npx", "-y", "server-fs"], "enabled": true},
                                "web": {"type": "remote", "url": "https://x"}}}"#;
        let (edit, servers) =
            guard_mcp_servers(Some(config), McpShape::CommandArray, "/t/toolgate", false).unwrap();
        let value: serde_json::Value = serde_json::from_str(text(&edit)).unwrap();
        assert_eq!(
            value["mcp"]["fs"]["command"],
            serde_json::json!([
                "/t/toolgate",
                "mcp",
                "--name",
                "fs",
                "--",
                "npx",
                "-y",
                "server-fs"
            ])
        );
        assert!(value["mcp"]["fs"].get("args").is_none());
        assert!(matches!(servers[1].state, McpState::Skipped(_)));
        let (undone, _) = unguard_mcp_servers(text(&edit), McpShape::CommandArray, false).unwrap();
        let undone: serde_json::Value = serde_json::from_str(text(&undone)).unwrap();
        assert_eq!(
            undone,
            serde_json::from_str::<serde_json::Value>(config).unwrap()
        );
    }

    #[test]
    fn a_file_without_servers_is_left_alone_and_a_wrong_shape_is_refused() {
        assert_eq!(
            guard_mcp_servers(None, McpShape::McpServers, "/t", false)
                .unwrap()
                .0,
            Edit::Unchanged
        );
        assert_eq!(
            guard_mcp_servers(Some("{\"a\": 1}"), McpShape::McpServers, "/t", false)
                .unwrap()
                .0,
            Edit::Unchanged
        );
        assert!(matches!(
            guard_mcp_servers(
                Some("{\"mcpServers\": []}"),
                McpShape::McpServers,
                "/t",
                false
            ),
            Err(EditSettingsError::Shape { .. })
        ));
    }

    /// Claude Code's local scope (`projects["<root>"].mcpServers`, the
    /// default of `claude mcp add`) is the user's too: guarded with the
    /// user's servers, read back with its project, and undone.
    #[test]
    fn a_files_per_project_servers_are_guarded_and_read_with_their_project() {
        let config = r#"{
  "mcpServers": {"u": {"command": "/usr/bin/u", "args": ["x"]}},
  "projects": {
    "/src/app": {"allowedTools": [], "mcpServers": {"loc": {"type": "stdio", "command": "/bin/echo", "args": ["local"]}}},
    "/src/other": {"allowedTools": []}
  }
}
"#;
        let local = local_mcp_servers(config, McpShape::McpServers).unwrap();
        assert_eq!(local.len(), 1);
        assert_eq!(local[0].project.as_deref(), Some("/src/app"));
        assert!(matches!(local[0].state, McpState::Unguarded { .. }));
        // Without per-project, the local server is left as it is.
        let (edit, servers) = guard_mcp_servers(
            Some(config),
            McpShape::McpServers,
            "/opt/bin/toolgate",
            false,
        )
        .unwrap();
        assert_eq!(servers.len(), 1);
        assert!(text(&edit).contains(r#""args": ["local"]"#) || text(&edit).contains("\"local\""));
        let (edit, servers) = guard_mcp_servers(
            Some(config),
            McpShape::McpServers,
            "/opt/bin/toolgate",
            true,
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let guarded = text(&edit).to_owned();
        let value: serde_json::Value = serde_json::from_str(&guarded).unwrap();
        assert_eq!(
            value["projects"]["/src/app"]["mcpServers"]["loc"]["args"],
            serde_json::json!(["mcp", "--name", "loc", "--", "/bin/echo", "local"])
        );
        assert_eq!(
            value["projects"]["/src/other"],
            serde_json::json!({"allowedTools": []})
        );
        let (undone, _) = unguard_mcp_servers(&guarded, McpShape::McpServers, true).unwrap();
        let undone: serde_json::Value = serde_json::from_str(text(&undone)).unwrap();
        assert_eq!(
            undone,
            serde_json::from_str::<serde_json::Value>(config).unwrap()
        );
    }
}
