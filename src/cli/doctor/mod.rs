//! `toolgate doctor`: is every installed agent wired so that toolgate
//! actually guards it?
//!
//! # Why
//!
//! Most agents let a call through when their hook is missing, fails or
//! times out, and none of them says so where the user looks. A moved
//! binary, an entry written before the agent had a fail-closed switch, an
//! event left out, an agent upgraded past what toolgate was tested with, a
//! trust step never taken (Codex skips hooks nobody reviewed): each leaves
//! the agent unguarded while everything looks installed. Doctor reads the
//! same entries `install` writes (`toolgate::agent::Wiring`), from each
//! agent's spec, and says for each problem what fixes it. It runs nothing
//! a project chose: a binary inside the project is not asked its version.

mod mcp;
mod mods;
mod versions;
mod wiring;

use super::install::{Place, read, this_toolgate};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Entry, Outward, Wiring, trust_done};
pub(crate) use versions::agent_version;
use wiring::check_agent;

/// Check every agent's toolgate wiring
///
/// For every agent, in the user's settings and the project's: whether
/// toolgate is installed and for which events, whether each entry runs
/// this toolgate and is what `toolgate install` writes now (the fail-closed
/// switch where the agent has one), the agent's version against the
/// releases toolgate was tested with (`<agent> --version`, found on PATH),
/// and the agent's own trust step; for Claude Code, every mod it would load
/// here (`claude plugin list`/`validate`, else its files), one that can
/// answer around toolgate being a problem. Each problem comes with its fix.
#[derive(clap::Args)]
#[command(
    after_help = "Exit status: 0 when no problem was found, 1 otherwise. An agent toolgate \
    is not installed for has none, unless its settings file cannot be read.\n\n\
    Examples:\n  \
    toolgate doctor\n  \
    toolgate doctor --project ~/src/app --json"
)]
pub(crate) struct Args {
    /// Print one JSON object (a stable format for scripts) instead of lines.
    #[arg(long)]
    json: bool,
    /// The project whose settings are checked (default: the current
    /// directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

/// Everything doctor found: the `--json` format.
#[derive(Serialize)]
struct Report {
    /// This toolgate's canonical path.
    toolgate: String,
    /// Its version.
    version: &'static str,
    /// The project checked.
    project: String,
    /// Whether no agent has a problem.
    ok: bool,
    agents: Vec<AgentReport>,
}

#[derive(Serialize)]
struct AgentReport {
    agent: &'static str,
    /// Installed in at least one scope.
    installed: bool,
    /// Whether the agent would actually call toolgate: installed, no
    /// setting that turns its hooks off, its own trust step not known to
    /// be undone.
    called: bool,
    scopes: Vec<ScopeReport>,
    cli: CliReport,
    /// The agent's own trust step, when it has one (and toolgate is
    /// installed).
    trust: Option<TrustReport>,
    problems: Vec<Problem>,
    /// Reminders that do not make doctor fail.
    notes: Vec<String>,
    /// The agent's configured MCP servers, each guarded by `toolgate mcp`
    /// or not.
    mcp_servers: Vec<McpServerReport>,
    /// Claude Code's mods: each one it would load, and toolgate's own.
    #[serde(skip_serializing_if = "Option::is_none")]
    mods: Option<mods::ModsReport>,
}

#[derive(Serialize)]
struct McpServerReport {
    /// `local` (Claude Code's per-project servers in the user's file),
    /// `project` or `user`.
    scope: mcp::McpScope,
    file: String,
    name: String,
    /// `guarded` (through `toolgate mcp`), `unguarded` or `skipped` (a
    /// remote server, or one toolgate cannot put itself in front of).
    state: &'static str,
    /// The server's own command and arguments.
    command: Vec<String>,
    /// Why it is skipped.
    why: Option<String>,
    /// The scope whose server of the same name the agent runs instead
    /// (its precedence: local, then project, then user).
    #[serde(skip_serializing_if = "Option::is_none")]
    overridden_by: Option<mcp::McpScope>,
}

#[derive(Serialize)]
struct ScopeReport {
    /// `user` or `project`.
    scope: &'static str,
    file: String,
    /// `installed`, `partial`, `not-installed`, `no-file` or `unreadable`.
    status: &'static str,
    /// The events toolgate has an entry for.
    events: Vec<String>,
    /// The events the agent's spec lists that have none.
    missing_events: Vec<String>,
    entries: Vec<EntryReport>,
    /// Why the file could not be read.
    error: Option<String>,
}

#[derive(Serialize)]
struct EntryReport {
    event: String,
    command: Vec<String>,
    binary: BinaryReport,
    /// Whether it is what `toolgate install` writes now.
    current: bool,
    /// How it differs from that.
    differs: Vec<String>,
}

#[derive(Serialize)]
struct BinaryReport {
    path: String,
    exists: bool,
    this_toolgate: bool,
    /// Its `--version`, when it is another binary doctor could ask.
    version: Option<String>,
}

#[derive(Serialize)]
struct CliReport {
    command: &'static str,
    /// Where it was found on PATH.
    path: Option<String>,
    version: Option<String>,
    /// Whether `version` is one of `tested_versions` (`null`: unknown).
    tested: Option<bool>,
    tested_versions: &'static [&'static str],
}

#[derive(Serialize)]
struct TrustReport {
    /// What the user must do.
    step: &'static str,
    /// Whether toolgate can tell if it is done.
    checked: bool,
    /// Whether it is done (`null`: toolgate cannot tell).
    done: Option<bool>,
    error: Option<String>,
}

#[derive(Serialize)]
struct Problem {
    problem: String,
    fix: String,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = this_toolgate()?;
    let root = match args.project {
        Some(dir) => dir,
        None => std::env::current_dir()?,
    };
    let root = root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("project {}: {e}", root.display()))?;
    let home = super::env::dir("HOME");
    let agents = Outward::ALL
        .iter()
        .map(|&agent| check_agent(agent, &exe, &root, home.as_deref()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = Report {
        toolgate: exe,
        version: env!("CARGO_PKG_VERSION"),
        project: root.display().to_string(),
        ok: agents.iter().all(|a| a.problems.is_empty()),
        agents,
    };
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(super::EXIT_ERROR)
    })
}

fn print_report(report: &Report) {
    use super::colour::decision;
    outln!("toolgate {} ({})", report.toolgate, report.version);
    outln!("project  {}", report.project);
    let mut count = 0;
    for agent in &report.agents {
        outln!("");
        let state = if agent.called {
            decision("allow", "installed")
        } else if agent.installed {
            decision(
                "deny",
                "installed, but the agent will not call it (see below)",
            )
        } else {
            "not installed".to_owned()
        };
        outln!("{}: {state}", agent.agent);
        for scope in &agent.scopes {
            let what = match scope.status {
                "installed" => scope.events.join(", "),
                "partial" => format!(
                    "{}; missing {}",
                    scope.events.join(", "),
                    scope.missing_events.join(", ")
                ),
                "not-installed" => "no toolgate entry".to_owned(),
                "no-file" => "no file".to_owned(),
                _ => scope.error.clone().unwrap_or_default(),
            };
            outln!("  {:<8} {}: {what}", scope.scope, scope.file);
        }
        let cli = &agent.cli;
        let version = match (&cli.path, &cli.version, cli.tested) {
            (None, _, _) => format!("{}: not found on PATH", cli.command),
            (Some(path), None, _) => format!("{} ({path}): version unknown", cli.command),
            (Some(path), Some(v), Some(true)) => format!("{} {v} ({path}): tested", cli.command),
            (Some(path), Some(v), _) => format!(
                "{} {v} ({path}): not tested; tested are {}",
                cli.command,
                cli.tested_versions.join(", ")
            ),
        };
        outln!("  {:<8} {version}", "agent");
        if let Some(trust) = &agent.trust
            && trust.done == Some(true)
        {
            outln!("  {:<8} done", "trust");
        }
        for problem in &agent.problems {
            count += 1;
            outln!("  {} {}", decision("deny", "problem "), problem.problem);
            outln!("  {:<8} {}", "fix", problem.fix);
        }
        agent.mcp_servers.iter().for_each(print_mcp_server);
        for note in &agent.notes {
            outln!("  {:<8} {note}", "note");
        }
    }
    outln!("");
    match count {
        0 => outln!("no problems"),
        1 => outln!("1 problem: its fix is above"),
        n => outln!("{n} problems: each fix is above"),
    }
}

/// One MCP server's line: guarded or not, and whether another scope's
/// server of its name runs instead.
fn print_mcp_server(server: &McpServerReport) {
    use crate::cli::colour::decision;
    let state = match server.state {
        "guarded" => decision("allow", "guarded"),
        "unguarded" => decision("deny", "not guarded"),
        _ => server.why.clone().unwrap_or_default(),
    };
    let instead = server.overridden_by.map_or_else(String::new, |by| {
        format!(" (not run: the {by} scope's wins)")
    });
    outln!(
        "  {:<8} {} ({}, {}): {state}{instead}",
        "mcp",
        toolgate::text::sanitize(&server.name),
        server.scope,
        server.file
    );
}
