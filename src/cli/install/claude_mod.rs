//! `toolgate install claude-code --mod`: toolgate's own Claude Code mod,
//! written into the user's skills folder and seated outermost.
//!
//! # Why the mod and the classic hooks both
//!
//! The mod is the judge: seated first in `prependPlugins`, it hears each
//! tool call (and each other mod's process and request) before any mod a
//! repository or a marketplace brought, and no mod beneath it can answer
//! around it. The classic http hooks stay beside it (`--mod` writes them
//! too, as `--http` does), for two reasons: where the mod does not load
//! (a release before mods, an organization's `allowManagedModsOnly`, a
//! user's managed settings that set the user's `prependPlugins` aside) they
//! still guard every call; and the classic `PostToolUse` is what notices a
//! call that ran past toolgate (tamper evidence). A call is not judged
//! twice before it runs: the server remembers what it answered for each
//! call (session, call id and input), and the classic pre hook asking about
//! a call the mod already judged, unchanged, gets that answer without the
//! chain running again. After the call both judge the output (the classic
//! hook first, the mod on what is finally shown), which costs a second
//! post chain and is what lets the mod withhold an output a mod beneath it
//! changed.
//!
//! # Where
//!
//! `<claude dir>/skills/toolgate/` (Claude Code's id for it:
//! `toolgate@skills-dir`), `<claude dir>` being `$CLAUDE_CONFIG_DIR` or
//! `~/.claude`. The files are this binary's (`mod.js` is
//! `integrations/claude-code-mod/mod.js`, compiled in) plus `config.js`,
//! naming the server and its secret's file. Nothing is fetched.

use super::{Place, apply, read, write_atomically};
use anyhow::{Context, bail};
use std::path::{Path, PathBuf};
use toolgate::agent::claude_mod::{MOD_ID, MOD_NAME, mod_files};
use toolgate::agent::seat::{seat_first, unseat};
use toolgate::agent::{Edit, Outward};

/// The folder toolgate's mod is written to: `<claude dir>/skills/toolgate`.
fn mod_dir() -> anyhow::Result<PathBuf> {
    let settings = Place::user(Outward::ClaudeCode)?.file;
    let claude = settings
        .parent()
        .context("Claude Code's settings file has no folder")?;
    Ok(claude.join("skills").join(MOD_NAME))
}

/// Writes toolgate's mod for the server at `url` and seats it first in the
/// user's `prependPlugins`.
pub(super) fn install(url: &str, dry_run: bool) -> anyhow::Result<()> {
    let dir = mod_dir()?;
    refuse_links(&dir, 3)?;
    let token = toolgate_loopback::token_path()
        .context("cannot tell where the server's secret is ($XDG_STATE_HOME or HOME)")?;
    let token = token
        .to_str()
        .context("the server's secret's path is not UTF-8")?;
    let files = mod_files(env!("CARGO_PKG_VERSION"), url, token);
    let mut changed = 0;
    for (name, text) in &files {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        changed += 1;
        if dry_run {
            eprintln!("dry run: would write {}", path.display());
            continue;
        }
        let parent = path.parent().unwrap_or(&dir);
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
        refuse_links(parent, 1)?;
        write_atomically(&path, text, 0o644)?;
    }
    if changed == 0 {
        eprintln!(
            "toolgate's mod is already in {}: nothing changed",
            dir.display()
        );
    } else if !dry_run {
        eprintln!(
            "wrote toolgate's Claude Code mod to {} (it asks {url})",
            dir.display()
        );
    }
    let settings = Place::user(Outward::ClaudeCode)?;
    settings.refuse_links()?;
    let old = read(&settings.file)?;
    let edit = seat_first(old.as_deref(), MOD_ID)
        .map_err(|e| anyhow::anyhow!("{}: {e}", settings.file.display()))?;
    if edit == Edit::Unchanged {
        eprintln!(
            "{MOD_ID} is already first in prependPlugins in {}",
            settings.file.display()
        );
    } else if apply(&settings.file, old.as_deref(), &edit, dry_run)? {
        eprintln!(
            "seated it outermost: {MOD_ID} first in prependPlugins in {}",
            settings.file.display()
        );
    }
    eprintln!(
        "note: managed settings, where a machine has them, set the user's prependPlugins aside: \
         there, whoever manages them lists {MOD_ID} first in their prependPlugins (`toolgate \
         doctor` says whether the mod is seated)"
    );
    Ok(())
}

/// Removes toolgate's mod (the files install wrote, and the folders that
/// emptied) and its seat.
pub(super) fn uninstall(dry_run: bool) -> anyhow::Result<()> {
    let dir = mod_dir()?;
    refuse_links(&dir, 3)?;
    let mut removed = 0;
    for (name, _) in mod_files("", "", "") {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        removed += 1;
        if dry_run {
            eprintln!("dry run: would remove {}", path.display());
        } else {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    if !dry_run {
        // Only folders that are now empty (the user's own files stay).
        for sub in ["hooks", ".claude-plugin", ""] {
            let _ = std::fs::remove_dir(dir.join(sub));
        }
    }
    if removed > 0 && !dry_run {
        eprintln!("removed toolgate's mod from {}", dir.display());
    }
    let settings = Place::user(Outward::ClaudeCode)?;
    settings.refuse_links()?;
    if let Some(old) = read(&settings.file)? {
        let edit = unseat(&old, MOD_ID)
            .map_err(|e| anyhow::anyhow!("{}: {e}", settings.file.display()))?;
        if apply(&settings.file, Some(&old), &edit, dry_run)? {
            eprintln!(
                "removed {MOD_ID} from prependPlugins in {}",
                settings.file.display()
            );
        }
    }
    Ok(())
}

/// Refuses `dir`, or one of the `depth - 1` folders above it (the mod's
/// folder, `skills`, the Claude folder), that is a symlink: a link there
/// could send the mod (code that Claude Code runs in-process) anywhere.
fn refuse_links(dir: &Path, depth: usize) -> anyhow::Result<()> {
    for path in dir.ancestors().take(depth) {
        if let Ok(meta) = std::fs::symlink_metadata(path)
            && meta.file_type().is_symlink()
        {
            bail!(
                "{} is a symlink: toolgate does not write its mod through a symlink; replace \
                 the link with a folder",
                path.display()
            );
        }
    }
    Ok(())
}
