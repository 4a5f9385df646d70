//! `install --mcp` and `uninstall --mcp`: run each of an agent's MCP
//! servers through `toolgate mcp`, or directly again. Apart from the
//! hooks' install because the MCP config is another file, found another
//! way (its own variable, files that may shadow it), and rewritten entry
//! by entry rather than given toolgate's own entry.

use super::{Place, Target, agent, apply, read, this_toolgate};
use anyhow::{Context, anyhow, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate::agent::AgentHook as _;
use toolgate::agent::{
    Edit, McpConfig, McpShape, McpState, Outward, guard_mcp_servers, unguard_mcp_servers,
};

/// The agent's MCP config file for this scope: for the user's, where the
/// agent's variable moves it when that is set. Refuses where the agent
/// may read its servers from another file that exists (Claude Code's
/// legacy `.config.json`): a rewrite of a file the agent does not read
/// guards nothing, and toolgate does not guess which it reads.
pub(crate) fn mcp_place(agent: Outward, project: Option<&Path>) -> anyhow::Result<Place> {
    let (user_file, user_dir, shadowed_by, project_file) = match agent.install().mcp {
        McpConfig::Servers {
            user_file,
            user_dir,
            shadowed_by,
            project_file,
            ..
        } => (user_file, user_dir, shadowed_by, project_file),
        McpConfig::NotYet(why) => bail!("{agent}: {why}"),
    };
    match project {
        None => {
            let home = super::super::env::dir("HOME")
                .ok_or_else(|| anyhow!("HOME is not set: cannot find the user's MCP config"))?;
            let file = moved_by(user_dir, &home, user_file)
                .ok_or_else(|| anyhow!("{agent}: its MCP user_file is not under its user_dir"))?;
            for other in shadowed_by {
                let other = moved_by(agent.install().user_dir, &home, other).ok_or_else(|| {
                    anyhow!("{agent}: a file shadowing its MCP config is not under its user_dir")
                })?;
                if std::fs::symlink_metadata(&other).is_ok() {
                    bail!(
                        "{agent} may read its MCP servers from {} (an older release's config file) \
                         instead of {}, and toolgate cannot tell which it reads: it changes \
                         neither. Merge the older file into the newer one and remove it, then \
                         run this again",
                        other.display(),
                        file.display()
                    );
                }
            }
            Ok(Place {
                file,
                project: None,
            })
        }
        Some(root) => {
            let file = project_file
                .ok_or_else(|| anyhow!("{agent} has no project MCP config: leave out --project"))?;
            let root = root
                .canonicalize()
                .with_context(|| format!("project {}", root.display()))?;
            Ok(Place {
                file: root.join(file),
                project: Some(root),
            })
        }
    }
}

/// `file` (relative to `$HOME`) where `dir`'s variable moves it, when set.
pub(super) fn moved_by(dir: toolgate::agent::UserDir, home: &Path, file: &str) -> Option<PathBuf> {
    let moved = match dir {
        toolgate::agent::UserDir::Home => None,
        toolgate::agent::UserDir::Var { var: agent_var, .. } => super::super::env::dir(agent_var),
    };
    dir.resolve(home, file, moved.as_deref())
}

/// How the agent's MCP config lays out a server.
pub(crate) fn mcp_shape(agent: Outward) -> anyhow::Result<McpShape> {
    match agent.install().mcp {
        McpConfig::Servers { shape, .. } => Ok(shape),
        McpConfig::NotYet(why) => bail!("{agent}: {why}"),
    }
}

/// Whether the agent's user MCP file also keeps servers per project
/// (Claude Code's local scope).
pub(crate) fn mcp_per_project(agent: Outward) -> bool {
    match agent.install().mcp {
        McpConfig::Servers { per_project, .. } => per_project,
        McpConfig::NotYet(_) => false,
    }
}

/// `install --mcp` (`guard`) and `uninstall --mcp`.
pub(super) fn mcp(target: &Target, guard: bool) -> anyhow::Result<ExitCode> {
    let agent = agent(&target.agent)?;
    let place = mcp_place(agent, target.project.as_deref())?;
    place.refuse_links()?;
    let file = place.file.display().to_string();
    let old = read(&place.file)?;
    let named = |e: toolgate::agent::EditSettingsError| anyhow!("{file}: {e}");
    let shape = mcp_shape(agent)?;
    // The user's file holds the user's servers and, for Claude Code, each
    // project's local ones (the default scope of `claude mcp add`, and the
    // one that wins a name): all of them are the user's, all are guarded.
    let per_project = target.project.is_none() && mcp_per_project(agent);
    let (edit, servers) = if guard {
        guard_mcp_servers(old.as_deref(), shape, &this_toolgate()?, per_project).map_err(named)?
    } else {
        match &old {
            Some(text) => unguard_mcp_servers(text, shape, per_project).map_err(named)?,
            None => (Edit::Unchanged, Vec::new()),
        }
    };
    if servers.is_empty() {
        eprintln!("no MCP servers in {file}: nothing to do");
        return Ok(ExitCode::SUCCESS);
    }
    let written = apply(&place.file, old.as_deref(), &edit, target.dry_run)?;
    let mut review = Vec::new();
    for server in &servers {
        let name = match &server.project {
            Some(project) => format!(
                "{} (local to {})",
                toolgate::text::sanitize(&server.name),
                toolgate::text::sanitize(project)
            ),
            None => toolgate::text::sanitize(&server.name),
        };
        match &server.state {
            McpState::Guarded { server: command } => {
                eprintln!("  {name}: through toolgate mcp");
                let words: Vec<String> = command
                    .iter()
                    .map(|w| shlex::try_quote(w).map_or_else(|_| w.clone(), |q| q.into_owned()))
                    .collect();
                review.push(format!(
                    "toolgate mcp trust --name {} -- {}",
                    server.name,
                    toolgate::text::sanitize(&words.join(" "))
                ));
            }
            McpState::Unguarded { .. } => eprintln!("  {name}: runs directly"),
            McpState::Skipped(why) => eprintln!("  {name}: left as it is ({why})"),
        }
    }
    match (guard, written, edit == Edit::Unchanged) {
        (_, _, true) => eprintln!("{file}: nothing changed"),
        (true, true, _) => {
            eprintln!("{agent}'s MCP servers in {file} now run through toolgate mcp")
        }
        (false, true, _) => eprintln!("{agent}'s MCP servers in {file} run directly again"),
        (_, false, false) => {}
    }
    if guard && !review.is_empty() {
        eprintln!(
            "next: approve each server's tools (until then the agent is shown none of them):"
        );
        for line in review {
            eprintln!("  {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
