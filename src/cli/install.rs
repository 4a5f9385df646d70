//! `toolgate install <agent>` and `toolgate uninstall <agent>`: write (or
//! remove) toolgate's entries in the agent's own hook settings.
//!
//! # Why a command, and why this careful
//!
//! Pasting a settings snippet by hand is where wiring goes wrong without a
//! word: a relative path the agent does not find (most agents then let every
//! call through), a missing fail-closed switch, an entry under one event
//! but not the others, a second entry beside a stale one. What to write
//! comes from the agent's dialect (`Outward::install`), and editing the JSON
//! from `toolgate::agent::Wiring`; this file only decides where, and writes
//! as a user expects of a tool that edits their settings: nothing when
//! nothing changes, a backup of the previous file, an atomic rename (an
//! agent starting meanwhile reads the old file or the new one, never half of
//! one), the file's mode kept, and never through a symlink (a project is
//! someone's repository: a link in it may point anywhere).

use anyhow::{Context, anyhow, bail};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Edit, Layout, Outward, Wiring, read_settings};

mod claude_mod;
mod mcp;
use mcp::{mcp, moved_by};
pub(crate) use mcp::{mcp_per_project, mcp_place, mcp_shape};

/// Which agent, and which of its settings files.
#[derive(clap::Args)]
pub(crate) struct Target {
    /// The agent.
    #[arg(value_name = "AGENT", value_parser = super::import::agent_names())]
    agent: String,
    /// The project's settings (in DIR, default the current directory)
    /// instead of the user's.
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = ".")]
    project: Option<PathBuf>,
    /// Print the change as a unified diff, and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Install toolgate as an agent's hook
///
/// Writes toolgate's entry (this binary's absolute path, the agent's
/// fail-closed switch where it has one) for every event toolgate handles
/// into the agent's settings: the user's (~/.claude/settings.json, …), or a
/// project's with --project. The rest of the file is kept as it is; an
/// entry of an older or moved toolgate is replaced in place; the previous
/// file is kept beside it as <file>.toolgate-bak. Running it again changes
/// nothing. While `toolgate serve` runs, the entry of an agent that spawns
/// a command per call runs the lean client `toolgate-hook` beside this
/// binary instead (it forwards to the server, and runs toolgate when none
/// answers).
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate install claude-code\n  \
    toolgate install codex --dry-run\n  \
    toolgate install claude-code --project ~/src/app\n  \
    toolgate install claude-code --http     # for a running `toolgate serve --http`\n  \
    toolgate install claude-code --mod      # and toolgate's mod, seated outermost\n\n\
    `toolgate <agent> --help` shows the entry; `toolgate doctor` checks it.")]
pub(crate) struct InstallArgs {
    #[command(flatten)]
    target: Target,
    /// Write the agent's http hook for a running `toolgate serve --http`
    /// instead of the command (Claude Code; the user's settings only): no
    /// process per call. Claude Code reads the server's secret from
    /// $TOOLGATE_HTTP_TOKEN.
    #[arg(long)]
    http: bool,
    /// The server's URL for --http or --mod [default: the running server's]
    #[arg(long, value_name = "URL")]
    http_url: Option<String>,
    /// Claude Code: also install toolgate's own mod, seated outermost
    /// (first in the user's `prependPlugins`), so no other mod can answer
    /// a call around toolgate; it asks the same `toolgate serve --http` as
    /// the http hooks, which --mod writes too (the user's settings only).
    #[arg(long = "mod", conflicts_with = "mcp")]
    with_mod: bool,
    /// Instead of the hooks, run each of the agent's local MCP servers
    /// through `toolgate mcp` (its MCP config: ~/.claude.json or .mcp.json,
    /// the mcpServers of Gemini CLI's and Qwen Code's settings, Cursor's
    /// and Copilot CLI's mcp files, OpenCode's opencode.json, Codex's
    /// config.toml). Then approve each server's tools with
    /// `toolgate mcp trust`, as the command prints.
    #[arg(long, conflicts_with = "http")]
    mcp: bool,
}

/// Remove toolgate from an agent's hook settings
///
/// Removes exactly toolgate's entries for the agent (handlers that run a
/// program named toolgate with the agent's subcommand), and the event lists
/// and groups that this empties; the user's own hooks stay. The previous
/// file is kept beside it as <file>.toolgate-bak.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate uninstall claude-code\n  \
    toolgate uninstall codex --project --dry-run")]
pub(crate) struct UninstallArgs {
    #[command(flatten)]
    target: Target,
    /// Instead of the hooks, run the agent's MCP servers directly again
    /// (undoes `install --mcp`).
    #[arg(long)]
    mcp: bool,
    /// Claude Code: also remove toolgate's mod and its `prependPlugins`
    /// seat (undoes `install --mod`).
    #[arg(long = "mod", conflicts_with = "mcp")]
    with_mod: bool,
}

/// One scope's settings file for an agent.
pub(crate) struct Place {
    /// The file.
    pub(crate) file: PathBuf,
    /// The project's root (canonical); `None` for the user's settings.
    pub(crate) project: Option<PathBuf>,
}

impl Place {
    /// The user's settings file for `agent`: `$HOME/<user_file>`, or
    /// where the agent's variable moves it when that is set (the agent
    /// reads it there, so `install` writes it there).
    pub(crate) fn user(agent: Outward) -> anyhow::Result<Place> {
        let home = super::env::dir("HOME")
            .ok_or_else(|| anyhow!("HOME is not set: cannot find the user's settings"))?;
        let spec = agent.install();
        let file = moved_by(spec.user_dir, &home, spec.user_file)
            .ok_or_else(|| anyhow!("{agent}: its user_file is not under its user_dir"))?;
        Ok(Place {
            file,
            project: None,
        })
    }

    /// The settings file for `agent` in the project at `root`.
    pub(crate) fn project(agent: Outward, root: &Path) -> anyhow::Result<Place> {
        let root = root
            .canonicalize()
            .with_context(|| format!("project {}", root.display()))?;
        if !root.is_dir() {
            bail!("project {} is not a directory", root.display());
        }
        Ok(Place {
            file: root.join(agent.install().project_file),
            project: Some(root),
        })
    }

    fn of(agent: Outward, project: Option<&Path>) -> anyhow::Result<Place> {
        match project {
            Some(root) => Place::project(agent, root),
            None => Place::user(agent),
        }
    }

    /// `toolgate install <agent>` for this scope: the fix doctor prints.
    pub(crate) fn install_command(&self, agent: Outward) -> String {
        match &self.project {
            None => format!("toolgate install {agent}"),
            Some(root) => {
                let root = root.to_string_lossy();
                let root = shlex::try_quote(&root).unwrap_or(root.clone());
                format!("toolgate install {agent} --project {root}")
            }
        }
    }

    /// Refuses a settings file that is a symlink, and, in a project, a
    /// folder on the way to it that is one.
    fn refuse_links(&self) -> anyhow::Result<()> {
        let mut on_the_way = vec![self.file.as_path()];
        if let Some(root) = &self.project {
            on_the_way.extend(
                self.file
                    .ancestors()
                    .skip(1)
                    .take_while(|dir| *dir != root.as_path()),
            );
        }
        for path in on_the_way {
            if let Ok(meta) = std::fs::symlink_metadata(path)
                && meta.file_type().is_symlink()
            {
                let to = std::fs::read_link(path)
                    .map(|to| format!(" (to {})", to.display()))
                    .unwrap_or_default();
                bail!(
                    "{} is a symlink{to}: toolgate does not write through a symlink; edit the \
                     file it points to yourself (`toolgate <agent> --help` shows the entry), or \
                     replace the link with a file",
                    path.display()
                );
            }
        }
        Ok(())
    }
}

/// This toolgate's absolute, canonical path: what an entry runs.
pub(crate) fn this_toolgate() -> anyhow::Result<String> {
    let exe = std::env::current_exe()
        .and_then(|exe| exe.canonicalize())
        .context("cannot tell where this toolgate is")?;
    exe.to_str()
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("this toolgate's path {} is not UTF-8", exe.display()))
}

/// The lean client beside this toolgate, when an entry for `agent` should
/// run it: the agent spawns a command per call (not a plugin of its own),
/// `toolgate serve` is running (so the lean client's forward is what
/// happens), and the client is installed beside this binary. `None`: the
/// entry runs this toolgate.
///
/// The lean client starts in a fraction of the full binary's time and only
/// forwards; without a server it runs this toolgate itself, so an entry
/// written while a server ran keeps working when it stops, only slower.
fn lean_client(agent: Outward) -> anyhow::Result<Option<String>> {
    // Each layout says whether the agent spawns a command per call: a new
    // one must be placed here, never fall into either side unseen.
    match agent.install().layout {
        Layout::Plugin { .. } => return Ok(None),
        Layout::Grouped { .. } | Layout::Flat { .. } => {}
    }
    let exe = this_toolgate()?;
    let lean = Path::new(&exe).with_file_name(toolgate::agent::LEAN_CLIENT);
    if !lean.is_file() || super::client::query_status().is_none() {
        return Ok(None);
    }
    Ok(lean.to_str().map(str::to_owned))
}

/// The agent `name` (clap checked it is one).
pub(crate) fn agent(name: &str) -> anyhow::Result<Outward> {
    name.parse().map_err(|_| anyhow!("unknown agent {name:?}"))
}

/// What the user's settings file holds now (`None`: no file), read safely.
pub(crate) fn read(file: &Path) -> anyhow::Result<Option<String>> {
    read_settings(file).map_err(|e| anyhow!("{}: {e}", file.display()))
}

/// A [`Target`] resolved: the agent, its settings file (checked for
/// links) and what it holds now.
struct Opened {
    agent: Outward,
    file: PathBuf,
    old: Option<String>,
    wiring: Wiring,
    dry_run: bool,
}

impl Target {
    fn open(self) -> anyhow::Result<Opened> {
        self.open_with(None)
    }

    /// Opened for writing the http hook for the server at `url` instead of
    /// the command, when given.
    fn open_with(self, url: Option<String>) -> anyhow::Result<Opened> {
        let agent = agent(&self.agent)?;
        let place = Place::of(agent, self.project.as_deref())?;
        place.refuse_links()?;
        Ok(Opened {
            agent,
            old: read(&place.file)?,
            file: place.file,
            wiring: match url {
                Some(url) => Wiring::new(agent, this_toolgate()?).over_http(url),
                None => Wiring::new(agent, this_toolgate()?),
            },
            dry_run: self.dry_run,
        })
    }
}

impl Opened {
    /// An edit's error, naming the file.
    fn named(&self, e: toolgate::agent::EditSettingsError) -> anyhow::Error {
        anyhow!("{}: {e}", self.file.display())
    }
}

pub(crate) fn install(args: InstallArgs) -> anyhow::Result<ExitCode> {
    if args.mcp {
        return mcp(&args.target, true);
    }
    if args.with_mod && agent(&args.target.agent)? != Outward::ClaudeCode {
        bail!("--mod is for Claude Code: only it runs mods");
    }
    if args.http_url.is_some() && !args.http && !args.with_mod {
        bail!("--http-url names the server for --http or --mod: give one of them");
    }
    let url = if args.http || args.with_mod {
        Some(http_url(&args.target, args.http_url)?)
    } else {
        None
    };
    let mod_url = url.clone().filter(|_| args.with_mod);
    let dry_run = args.target.dry_run;
    let over_http = url.is_some();
    let mut at = args.target.open_with(url)?;
    if !over_http && let Some(lean) = lean_client(at.agent)? {
        eprintln!(
            "toolgate serve is running: the entry runs the lean client {lean}, which forwards \
             each call to it (and runs toolgate beside it when no server answers)"
        );
        at.wiring = Wiring::new(at.agent, lean);
    }
    let (agent, file) = (at.agent, at.file.display());
    let spec = agent.install();
    let events = spec.events.join(", ");
    let edit = at
        .wiring
        .install(at.old.as_deref())
        .map_err(|e| at.named(e))?;
    if edit == Edit::Unchanged {
        eprintln!(
            "toolgate is already installed for {agent} in {file} ({events}): nothing changed"
        );
    } else {
        let current = at.wiring.argv();
        let stale = match &at.old {
            Some(text) => at.wiring.entries(text).map_err(|e| at.named(e))?,
            None => Vec::new(),
        }
        .into_iter()
        .filter(|entry| entry.argv != current || !entry.differs.is_empty())
        .count();
        if apply(&at.file, at.old.as_deref(), &edit, at.dry_run)? {
            eprintln!("installed toolgate for {agent} in {file} ({events})");
            if stale > 0 {
                eprintln!(
                    "replaced {stale} stale toolgate entr{} (another path or an older handler)",
                    if stale == 1 { "y" } else { "ies" }
                );
            }
        }
    }
    if let Some(trust) = spec.trust {
        eprintln!("next: {}", trust.fix);
    }
    if let (true, Some(http)) = (over_http, spec.http) {
        let path = toolgate_loopback::token_path()
            .map_or("$XDG_STATE_HOME/toolgate/http-token".into(), |p| {
                p.display().to_string()
            });
        eprintln!(
            "next: give {agent} the server's secret in its environment, e.g. in your shell's \
             profile:\n  export {}=\"$(cat {path})\"\n\
             (it stays in that 0600 file; the settings name only the variable)",
            http.token_var
        );
    }
    if let Some(url) = mod_url {
        claude_mod::install(&url, dry_run)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The server URL `install --http` writes, after refusing what cannot be
/// guarded that way.
fn http_url(target: &Target, given: Option<String>) -> anyhow::Result<String> {
    let agent = agent(&target.agent)?;
    let Some(http) = agent.install().http else {
        bail!("{agent} has no http hooks: install it without --http");
    };
    if target.project.is_some() {
        bail!(
            "--http writes the user's settings only: the server and its secret are the user's, \
             and a project's settings are shared with whoever clones it"
        );
    }
    // A release that lets the call through when the server is down is not
    // fail-closed over HTTP (live: 2.1.197).
    match super::doctor::agent_version(agent) {
        Some(version) if older(&version, http.blocks_when_down_from) => bail!(
            "{agent} {version} lets a call through when the http hook's server does not \
             answer (from {} on it blocks); upgrade it, or install the command hook (without \
             --http)",
            http.blocks_when_down_from
        ),
        Some(_) => {}
        None => eprintln!(
            "warning: {} is not on PATH, so its version was not checked: a release before {} \
             lets a call through when the http hook's server does not answer",
            agent.install().agent_cli,
            http.blocks_when_down_from
        ),
    }
    let url = match given {
        Some(url) => url,
        None => toolgate_server::http::running_url().ok_or_else(|| {
            anyhow!(
                "no toolgate server answers HTTP: start `toolgate serve --http 127.0.0.1:PORT` \
                 first, or give --http-url"
            )
        })?,
    };
    let base = url.trim_end_matches('/');
    let base = base
        .strip_suffix(&format!("/{agent}"))
        .unwrap_or(base)
        .to_owned();
    let addr = base
        .strip_prefix("http://")
        .ok_or_else(|| anyhow!("--http-url {url}: not an http:// URL"))?;
    toolgate_loopback::parse_addr(addr)?;
    Ok(format!("{base}/{agent}"))
}

/// Whether version `a` is older than `b` (`x.y.z`).
fn older(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parts(a) < parts(b)
}

pub(crate) fn uninstall(args: UninstallArgs) -> anyhow::Result<ExitCode> {
    if args.mcp {
        return mcp(&args.target, false);
    }
    if args.with_mod {
        if agent(&args.target.agent)? != Outward::ClaudeCode {
            bail!("--mod is for Claude Code: only it runs mods");
        }
        claude_mod::uninstall(args.target.dry_run)?;
    }
    let at = args.target.open()?;
    let (agent, file) = (at.agent, at.file.display());
    let Some(old) = &at.old else {
        eprintln!("nothing to uninstall: {file} does not exist");
        return Ok(ExitCode::SUCCESS);
    };
    let edit = at.wiring.uninstall(old).map_err(|e| at.named(e))?;
    if edit == Edit::Unchanged {
        eprintln!("nothing to uninstall: {file} has no toolgate entry for {agent}");
    } else if apply(&at.file, Some(old), &edit, at.dry_run)? {
        eprintln!("removed toolgate's entries for {agent} from {file}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Carries out `edit` on `file` (which held `old`): with `dry_run`, prints
/// the diff and writes nothing (false); otherwise keeps `old` as the backup
/// and writes or removes the file (true).
fn apply(file: &Path, old: Option<&str>, edit: &Edit, dry_run: bool) -> anyhow::Result<bool> {
    let new = match edit {
        Edit::Unchanged => return Ok(false),
        Edit::Write(text) => Some(text.as_str()),
        Edit::Delete => None,
    };
    if dry_run {
        let name = file.display().to_string();
        let diff = similar::TextDiff::from_lines(old.unwrap_or(""), new.unwrap_or(""))
            .unified_diff()
            .header(
                if old.is_some() { &name } else { "/dev/null" },
                if new.is_some() { &name } else { "/dev/null" },
            )
            .to_string();
        print!("{}", toolgate::text::sanitize(&diff));
        eprintln!("dry run: nothing written to {}", file.display());
        return Ok(false);
    }
    let dir = file
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mode = std::fs::symlink_metadata(file)
        .ok()
        .map(|meta| std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777);
    if let Some(old) = old {
        let backup = backup_of(file);
        write_atomically(&backup, old, mode.unwrap_or(0o600))?;
        eprintln!("the previous file is kept as {}", backup.display());
    }
    match new {
        Some(text) => write_atomically(file, text, mode.unwrap_or(0o644))?,
        None => std::fs::remove_file(file)
            .with_context(|| format!("cannot remove {}", file.display()))?,
    }
    Ok(true)
}

/// Where the previous version of `file` is kept.
fn backup_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".toolgate-bak");
    PathBuf::from(name)
}

/// Writes `text` to `path` through a temporary file in the same folder,
/// renamed over it (which replaces a symlink there, never follows it), with
/// `mode`.
fn write_atomically(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let cannot = || format!("cannot write {}", path.display());
    let mut temp = tempfile::Builder::new()
        .prefix(".toolgate-")
        .tempfile_in(dir)
        .with_context(cannot)?;
    temp.write_all(text.as_bytes()).with_context(cannot)?;
    temp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(cannot)?;
    temp.as_file().sync_all().with_context(cannot)?;
    temp.persist(path)
        .map_err(|e| e.error)
        .with_context(cannot)?;
    Ok(())
}
