//! The agent's MCP servers, as doctor reports them: every scope the agent
//! reads them from, in its own precedence, each guarded or not.
//!
//! # Why apart from the hooks' wiring
//!
//! The MCP config is other files read other ways (Claude Code's local
//! scope sits inside its user file, per project), and what matters is not
//! only each entry but which of several same-named entries the agent runs:
//! a guarded user server that an unguarded local one overrides is a
//! problem though every entry reads fine on its own.

use super::wiring::Problems;
use super::*;
use toolgate::agent::{McpServer, McpState, local_mcp_servers, mcp_servers};

/// Where an agent keeps an MCP server, in its precedence: a scope earlier
/// in the list wins a name (Claude Code's order; the derived `Ord` is that
/// precedence, so a new scope must be placed in it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum McpScope {
    /// Claude Code's per-project servers in the user's file.
    Local,
    /// The project's config.
    Project,
    /// The user's config.
    User,
}

impl std::fmt::Display for McpScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            McpScope::Local => "local",
            McpScope::Project => "project",
            McpScope::User => "user",
        })
    }
}

/// The agent's MCP servers in every scope it reads them from, in its own
/// precedence (Claude Code: the local scope — `projects["<root>"]` in its
/// user file, the default of `claude mcp add` — then the project's
/// `.mcp.json`, then the user's), each guarded or not, and whether a
/// server of the same name in a scope that wins takes its place; a note
/// for the unguarded ones and for a config that cannot be read, and a
/// problem for a guarded server another scope's unguarded one overrides
/// (the user ran `install --mcp` and believes it guarded).
pub(super) fn servers(
    agent: Outward,
    root: &Path,
    notes: &mut Vec<String>,
    problems: &mut Problems,
) -> Vec<McpServerReport> {
    let mut found = listed(agent, root, notes);
    overrides(agent, root, &mut found, problems);
    for scope in [McpScope::Local, McpScope::User, McpScope::Project] {
        let n = found
            .iter()
            .filter(|s| s.scope == scope && s.state == "unguarded")
            .count();
        if n > 0 {
            let project = match scope {
                McpScope::Project => format!(" --project {}", root.display()),
                McpScope::Local | McpScope::User => String::new(),
            };
            let whose = match scope {
                McpScope::Local => {
                    "this project's local scope (Claude Code's `projects` in the user's file)"
                        .to_owned()
                }
                McpScope::Project | McpScope::User => format!("the {scope}'s config"),
            };
            notes.push(format!(
                "{n} MCP server(s) in {whose} run without toolgate: \
                 `toolgate install {agent} --mcp{project}` runs them through `toolgate mcp`"
            ));
        }
    }
    found
}

/// Every server in every scope, as the files have them.
fn listed(agent: Outward, root: &Path, notes: &mut Vec<String>) -> Vec<McpServerReport> {
    let mut found = Vec::new();
    let mut places = Vec::new();
    let Ok(shape) = super::super::install::mcp_shape(agent) else {
        return found;
    };
    let per_project = super::super::install::mcp_per_project(agent);
    match super::super::install::mcp_place(agent, None) {
        Ok(user) => places.push((McpScope::User, user)),
        // The user's servers cannot be told apart (Claude Code's legacy
        // file beside its config): said, not skipped in silence.
        Err(e) => notes.push(format!("MCP config: {e:#}")),
    }
    if let Ok(project) = super::super::install::mcp_place(agent, Some(root))
        && !places.iter().any(|(_, p)| p.file == project.file)
    {
        places.push((McpScope::Project, project));
    }
    // The key Claude Code files a project's local servers under: the
    // project's root as an absolute path, as it resolved it.
    let key = root
        .canonicalize()
        .unwrap_or_else(|_| root.to_owned())
        .display()
        .to_string();
    for (scope, place) in places {
        let file = place.file.display().to_string();
        let read_all = |text: String| {
            let mut listed: Vec<(McpScope, McpServer)> = Vec::new();
            if scope == McpScope::User && per_project {
                for server in local_mcp_servers(&text, shape)? {
                    if server.project.as_deref() == Some(key.as_str()) {
                        listed.push((McpScope::Local, server));
                    }
                }
            }
            listed.extend(mcp_servers(&text, shape)?.into_iter().map(|s| (scope, s)));
            Ok::<_, toolgate::agent::EditSettingsError>(listed)
        };
        let listed = match read(&place.file).map(|text| text.map(read_all)) {
            Ok(None) => continue,
            Ok(Some(Ok(listed))) => listed,
            Ok(Some(Err(e))) => {
                notes.push(format!("MCP config {file}: {e}"));
                continue;
            }
            Err(e) => {
                notes.push(format!("MCP config: {e}"));
                continue;
            }
        };
        for (scope, server) in listed {
            let (state, command, why) = match server.state {
                McpState::Guarded { server } => ("guarded", server, None),
                McpState::Unguarded { server } => ("unguarded", server, None),
                McpState::Skipped(why) => ("skipped", Vec::new(), Some(why)),
            };
            let file = match scope {
                McpScope::Local => format!("{file} projects[{key:?}]"),
                McpScope::Project | McpScope::User => file.clone(),
            };
            found.push(McpServerReport {
                scope,
                file,
                name: server.name,
                state,
                command,
                why,
                overridden_by: None,
            });
        }
    }
    found
}

/// Marks each server a same-named one in a scope that wins takes the
/// place of; a guarded one an unguarded one overrides is a problem.
fn overrides(agent: Outward, root: &Path, found: &mut [McpServerReport], problems: &mut Problems) {
    let all: Vec<(String, McpScope, &'static str)> = found
        .iter()
        .map(|s| (s.name.clone(), s.scope, s.state))
        .collect();
    for server in found.iter_mut() {
        let winner = all
            .iter()
            .filter(|(name, scope, _)| *name == server.name && *scope < server.scope)
            .min_by_key(|(_, scope, _)| *scope);
        let Some((_, scope, state)) = winner else {
            continue;
        };
        server.overridden_by = Some(*scope);
        if server.state == "guarded" && *state != "guarded" {
            let name = toolgate::text::sanitize(&server.name);
            problems.add(
                format!(
                    "the MCP server `{name}` of the {} scope is guarded, but {agent} runs the \
                     {scope} scope's `{name}` in its place, which is not",
                    server.scope,
                ),
                String::new(),
                format!(
                    "`toolgate install {agent} --mcp`{}",
                    match scope {
                        McpScope::Project => format!(" --project {}", root.display()),
                        McpScope::Local | McpScope::User => String::new(),
                    }
                ),
            );
        }
    }
}
