//! `toolgate trust`: review a workspace's hooks and record that the user
//! trusts exactly them; `trust status`, `trust revoke`.
//!
//! Recording asks on a terminal. For automation, `--yes DIGEST` records only
//! if DIGEST is the digest of what is there now: there is deliberately no
//! flag that trusts whatever happens to be there.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use toolgate::Config;
use toolgate::trust::{Change, FilePin, HookPin, Kept, Review, TrustState, TrustStore};

/// Review a workspace's hooks and record that you trust them.
///
/// A workspace's command hooks run only after you trusted exactly what runs:
/// the hooks.json bytes, each command's argv, and the content of the
/// program, script and `trust_files` it runs from the workspace. This shows
/// all of it (and what changed since you last trusted it), then asks.
#[derive(clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  \
    toolgate trust --workspace examples/demo\n  \
    toolgate trust status --workspace examples/demo\n  \
    toolgate trust revoke --workspace examples/demo\n\n\
    For automation, after reviewing: toolgate trust --yes blake3:<digest shown>\n\
    Trust is recorded in $XDG_STATE_HOME/toolgate/trust (else\n\
    ~/.local/state/toolgate/trust), 0700, never in a workspace."
)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// The workspace [default: the nearest ancestor of the working
    /// directory with a .toolgate/].
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// Record without asking, only if DIGEST (as printed by a review) is
    /// the digest of what is there now.
    #[arg(long, value_name = "DIGEST")]
    yes: Option<String>,
}

#[derive(clap::Subcommand)]
enum Action {
    /// Show each workspace hook's trust state, and the recorded digest.
    #[command(after_help = "Examples:\n  \
        toolgate trust status --workspace examples/demo\n  \
        toolgate trust status --json | jq '.hooks[].trust'")]
    Status {
        /// The workspace [default: as for `trust`].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Forget a workspace: its command hooks stop running until trusted again.
    #[command(after_help = "Example:\n  \
        toolgate trust revoke --workspace examples/demo")]
    Revoke {
        /// The workspace [default: as for `trust`].
        #[arg(long, value_name = "DIR")]
        workspace: Option<PathBuf>,
    },
}

fn store() -> anyhow::Result<TrustStore> {
    super::env::trust_store()
        .context("no state directory to keep trust in: set XDG_STATE_HOME or HOME")
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.action {
        None => trust(args.workspace, args.yes),
        Some(Action::Status { workspace, json }) => status(workspace, json),
        Some(Action::Revoke { workspace }) => {
            let ws = super::workspace(workspace)?;
            let store = store()?;
            let root = one(&ws.root.display().to_string());
            if toolgate::trust::revoke(&ws.root, &store)? {
                outln!("revoked: {root}'s command hooks no longer run");
            } else {
                outln!("{root} was not trusted; nothing to revoke");
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn one(text: &str) -> String {
    toolgate::text::one_line(text)
}

/// The workspace's own config, loaded for review (the global config plays
/// no part in what is trusted).
fn review(workspace: Option<PathBuf>) -> anyhow::Result<(Config, Review, TrustStore)> {
    let ws = super::workspace(workspace)?;
    let store = store()?;
    let mut loader = Config::loader()
        .workspace(&ws.root)
        .wasm(super::env::wasm(true))
        .trust(store.clone());
    if let Some(path) = super::env::search_path() {
        loader = loader.search_path(path);
    }
    let config = loader.load().map_err(|e| {
        anyhow::anyhow!("the workspace config does not load, so it cannot be trusted:\n{e}")
    })?;
    let review = Review::of(&config, &store, super::env::search_path().as_deref())?;
    Ok((config, review, store))
}

fn trust(workspace: Option<PathBuf>, yes: Option<String>) -> anyhow::Result<ExitCode> {
    use std::io::IsTerminal;
    let (_, review, store) = review(workspace)?;
    print_review(&review, &store);
    let commands = review.needs_trust.iter().filter(|n| **n).count();
    if commands == 0 {
        outln!("no command hooks: wasm hooks run sandboxed without trust; nothing to record");
        return Ok(ExitCode::SUCCESS);
    }
    let unchanged = review.previous.is_some()
        && !review.config_changed
        && review.removed.is_empty()
        && review.changes.iter().all(|c| *c == Change::Same);
    let root = one(&review.manifest.workspace.display().to_string());
    let confirmed = match yes {
        Some(digest) => digest,
        None if unchanged => {
            outln!("already trusted: nothing changed since");
            return Ok(ExitCode::SUCCESS);
        }
        None if std::io::stdin().is_terminal() => {
            eprint!("Trust {} in {root}? [y/N] ", hooks_phrase(commands, true));
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            if !matches!(line.trim(), "y" | "Y" | "yes" | "YES" | "Yes") {
                outln!("not trusted; nothing recorded");
                return Ok(ExitCode::from(super::EXIT_ERROR));
            }
            review.digest.clone()
        }
        None => anyhow::bail!(
            "nothing recorded: stdin is not a terminal, so toolgate cannot ask. After reviewing \
             the above, run: toolgate trust --workspace {root} --yes {}",
            review.digest
        ),
    };
    let path = review.record(&store, &confirmed)?;
    outln!(
        "trusted: {} in {root} (recorded in {})",
        hooks_phrase(commands, false),
        one(&path.display().to_string())
    );
    Ok(ExitCode::SUCCESS)
}

fn hooks_phrase(n: usize, asking: bool) -> String {
    match (n, asking) {
        (1, true) => "this command hook".to_owned(),
        (1, false) => "1 command hook".to_owned(),
        (n, true) => format!("these {n} command hooks"),
        (n, false) => format!("{n} command hooks"),
    }
}

fn short(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algo, hex)) if hex.len() > 16 => format!("{algo}:{}…", &hex[..16]),
        _ => digest.to_owned(),
    }
}

fn file_line(file: &FilePin, root: &std::path::Path) -> String {
    let shown = |p: &std::path::Path| {
        p.strip_prefix(root)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    let place = match (&file.path, &file.digest) {
        (None, _) => "not found (pinned as absent)".to_owned(),
        (Some(p), Some(d)) => format!("{}  {}", shown(p), short(d)),
        (Some(p), None) => {
            let target = file
                .target
                .as_ref()
                .map(|t| format!(" → {}", t.display()))
                .unwrap_or_default();
            format!(
                "{}{target}; outside the workspace: pinned by path",
                p.display()
            )
        }
    };
    one(&format!(
        "    {:<10}{:?} = {place}",
        file.role.to_string(),
        file.written
    ))
}

fn print_review(review: &Review, store: &TrustStore) {
    let m = &review.manifest;
    outln!("workspace   {}", one(&m.workspace.display().to_string()));
    outln!(
        "hooks.json  {}{}",
        short(&m.config),
        match (&review.previous, review.config_changed) {
            (None, _) => "",
            (Some(_), true) => "  (changed since trusted)",
            (Some(_), false) => "  (as trusted)",
        }
    );
    if let (Some(previous), true) = (&review.previous, review.config_changed) {
        let before = Some(previous.manifest.config.as_str());
        for line in changed_file(
            ".toolgate/hooks.json",
            before,
            Some(&m.config),
            previous,
            review,
        ) {
            outln!("{line}");
        }
    }
    outln!("trust store {}", one(&store.dir().display().to_string()));
    if let Some(problem) = &review.store_problem {
        outln!("warning: {}", one(problem));
    }
    outln!("");
    for ((hook, change), needs_trust) in
        m.hooks.iter().zip(&review.changes).zip(&review.needs_trust)
    {
        let (mark, note) = match change {
            Change::New => ("+", "new".to_owned()),
            Change::Changed { what } => ("~", what.clone()),
            _ => ("=", "as trusted".to_owned()),
        };
        let kind = if *needs_trust {
            "command".to_owned()
        } else {
            format!("{}: sandboxed, runs without trust", hook.binding)
        };
        outln!("{mark} {} ({kind}; {})", one(&hook.name), one(&note));
        if let Some(argv) = &hook.argv {
            outln!(
                "    {:<10}{}",
                "argv",
                one(&serde_json::to_string(argv).unwrap_or_default())
            );
        }
        for file in &hook.files {
            outln!("{}", file_line(file, &m.workspace));
        }
        if let (Change::Changed { .. }, Some(previous)) = (change, &review.previous)
            && let Some(before) = previous.manifest.hooks.iter().find(|p| p.name == hook.name)
        {
            for line in changed_files(before, hook, previous, review) {
                outln!("{line}");
            }
        }
    }
    for name in &review.removed {
        outln!("- {} (no longer in hooks.json)", one(name));
    }
    outln!("");
    outln!("digest: {}", review.digest);
}

/// The most lines of one file's diff shown in a review.
const MAX_DIFF_LINES: usize = 200;

/// What changed in each file a hook pins by content, since `before` was
/// trusted: a diff for a text file whose trusted text the record kept,
/// else both digests and sizes.
fn changed_files(
    before: &HookPin,
    now: &HookPin,
    previous: &toolgate::trust::Record,
    review: &Review,
) -> Vec<String> {
    let mut lines = Vec::new();
    let root = &review.manifest.workspace;
    let label = |f: &FilePin| {
        f.path
            .as_ref()
            .and_then(|p| p.strip_prefix(root).ok())
            .map_or_else(|| f.written.clone(), |p| p.display().to_string())
    };
    let same = |a: &FilePin, b: &FilePin| a.role == b.role && a.written == b.written;
    for file in &now.files {
        let old = before.files.iter().find(|b| same(b, file));
        let old_digest = old.and_then(|o| o.digest.as_deref());
        if old.is_some() && old_digest == file.digest.as_deref() {
            continue;
        }
        if old.is_none() && file.digest.is_none() {
            continue;
        }
        lines.extend(changed_file(
            &label(file),
            old_digest,
            file.digest.as_deref(),
            previous,
            review,
        ));
    }
    for file in &before.files {
        if file.digest.is_some() && !now.files.iter().any(|n| same(n, file)) {
            lines.extend(changed_file(
                &label(file),
                file.digest.as_deref(),
                None,
                previous,
                review,
            ));
        }
    }
    lines
}

/// A side's text: empty when there is no file, `None` when it is not known.
fn kept_text<'a>(kept: Option<&'a Kept>, digest: Option<&str>) -> Option<&'a str> {
    match (kept, digest) {
        (_, None) => Some(""),
        (Some(k), Some(_)) => k.text.as_deref(),
        (None, Some(_)) => None,
    }
}

/// One file's change: `before` as the record kept it, `after` as read
/// now (a missing side is a file added or removed).
fn changed_file(
    label: &str,
    before: Option<&str>,
    after: Option<&str>,
    previous: &toolgate::trust::Record,
    review: &Review,
) -> Vec<String> {
    let old = before.and_then(|d| previous.kept.get(d));
    let new = after.and_then(|d| review.kept.get(d));
    let verb = match (before, after) {
        (None, _) => "added",
        (_, None) => "removed",
        _ => "changed",
    };
    let head = one(&format!("    {verb:<10}{label}"));
    match (kept_text(old, before), kept_text(new, after)) {
        (Some(old_text), Some(new_text)) => {
            let diff = similar::TextDiff::from_lines(old_text, new_text);
            let unified = diff
                .unified_diff()
                .context_radius(3)
                .header(&format!("{label} (trusted)"), &format!("{label} (now)"))
                .to_string();
            let mut lines = vec![head];
            let all: Vec<&str> = unified.lines().collect();
            for line in all.iter().take(MAX_DIFF_LINES) {
                lines.push(format!("      {}", toolgate::text::sanitize(line)));
            }
            if all.len() > MAX_DIFF_LINES {
                lines.push(format!(
                    "      … {} more lines of diff",
                    all.len() - MAX_DIFF_LINES
                ));
            }
            lines
        }
        _ => {
            let side = |k: Option<&Kept>, d: Option<&str>| match (k, d) {
                (_, None) => "nothing".to_owned(),
                (Some(k), Some(d)) => format!("{} ({} bytes)", short(d), k.size),
                (None, Some(d)) => format!("{} (size not recorded)", short(d)),
            };
            vec![one(&format!(
                "{head}: {} → {}",
                side(old, before),
                side(new, after)
            ))]
        }
    }
}

fn status(workspace: Option<PathBuf>, json: bool) -> anyhow::Result<ExitCode> {
    let ws = super::workspace(workspace)?;
    let store = store()?;
    let config = super::env::load(&ws.root, true)?;
    let review = Review::of(&config, &store, super::env::search_path().as_deref());
    let (current, problem) = match &review {
        Ok(r) => (Some(r.digest.clone()), None),
        Err(e) => (None, Some(toolgate::text::error_chain(e))),
    };
    let record = review.as_ref().ok().and_then(|r| r.previous.as_ref());
    let hooks: Vec<serde_json::Value> = config
        .hooks()
        .iter()
        .filter(|h| h.source == toolgate::Source::Workspace)
        .map(|h| {
            serde_json::json!({
                "name": h.name,
                "binding": h.binding_kind(),
                "trust": h.trust,
            })
        })
        .collect();
    if json {
        let out = serde_json::json!({
            "workspace": config.workspace_config().map(|(root, _)| root),
            "store": store.dir(),
            "policy": config.untrusted_policy(),
            "current_digest": current,
            "recorded": record.map(|r| serde_json::json!({
                "digest": r.digest,
                "trusted_at": r.trusted_at,
            })),
            "problem": problem,
            "hooks": hooks,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::SUCCESS);
    }
    outln!("workspace {}", one(&ws.root.display().to_string()));
    match record {
        Some(r) => outln!(
            "trusted {} ({}){}",
            ago(r.trusted_at),
            short(&r.digest),
            if current.as_deref() == Some(r.digest.as_str()) {
                ", unchanged since"
            } else {
                "; it has changed since"
            }
        ),
        None => outln!("never trusted on this machine"),
    }
    if let Some(problem) = &problem {
        outln!("problem: {}", one(problem));
    }
    let mut table = super::table(&["hook", "binding", "trust"]);
    for hook in config
        .hooks()
        .iter()
        .filter(|h| h.source == toolgate::Source::Workspace)
    {
        let state = match &hook.trust {
            Some(TrustState::Trusted) => "trusted".to_owned(),
            Some(TrustState::Untrusted { reason, policy }) => {
                format!("UNTRUSTED ({policy}): {reason}")
            }
            Some(TrustState::Sandboxed) => "sandboxed: runs without trust".to_owned(),
            _ => "-".to_owned(),
        };
        table.add_row([
            one(&hook.name),
            hook.binding_kind().to_string(),
            one(&state),
        ]);
    }
    outln!("{table}");
    Ok(ExitCode::SUCCESS)
}

fn ago(at: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let s = now.saturating_sub(at);
    match s {
        0..120 => format!("{s} s ago"),
        120..7200 => format!("{} min ago", s / 60),
        7200..172_800 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}
