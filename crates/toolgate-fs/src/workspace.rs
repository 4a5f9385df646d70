//! Finding the workspace: the nearest ancestor with a `.toolgate/`, the
//! way git finds `.git`, with stops that keep a planted `.toolgate/` from
//! configuring someone else's agent.

use serde::Serialize;
use std::path::{Path, PathBuf};

/// How the workspace was found, for `toolgate hooks` and the agent commands.
#[derive(Clone, Debug, Serialize)]
pub struct FoundWorkspace {
    /// The workspace root: where `.toolgate/` was found, or the start
    /// directory when none was.
    pub root: PathBuf,
    /// Whether a `.toolgate/` was found.
    pub found: bool,
    /// Why the walk ended, in words.
    pub how: String,
}

/// The nearest directory at or above `start` that has a `.toolgate/`.
///
/// The walk stops (without a workspace) at the first of:
/// - a repository root (a directory with `.git`): hooks for a repository
///   come from the repository, not from whatever folder holds it;
/// - the user's home directory (`home`, checked itself; the binary passes
///   `$HOME`): nothing above it is the user's project;
/// - a directory another user could write: owned by someone other than the
///   current user or root, or writable by group or others, sticky or not. A
///   `.toolgate/` that another user creates in a shared folder (`/tmp` is
///   root's, mode 1777) must not configure this user's agent, so the walk
///   never moves into such a folder. (The loader then refuses a `.toolgate/`
///   or hooks.json that is not the user's or root's, however the workspace
///   was named: `safe_fs::beneath`.)
/// - the filesystem root.
///
/// When nothing is found the start directory is the workspace (with no
/// workspace hooks), and `how` says where the walk stopped.
pub fn find_workspace(start: &Path, home: Option<&Path>) -> FoundWorkspace {
    let start = absolute(start);
    let home = home.map(absolute);
    let mut dir = start.as_path();
    loop {
        if dir.join(".toolgate").is_dir() {
            return FoundWorkspace {
                root: dir.to_owned(),
                found: true,
                how: if dir == start {
                    "the working directory has .toolgate/".into()
                } else {
                    format!("nearest ancestor of {} with .toolgate/", start.display())
                },
            };
        }
        let stop = if dir.join(".git").exists() {
            Some(format!("stopped at the repository root {}", dir.display()))
        } else if home.as_deref() == Some(dir) {
            Some(format!("stopped at the home directory {}", dir.display()))
        } else {
            None
        };
        let parent = dir.parent();
        let foreign = parent.and_then(|p| {
            let why = crate::foreign_writer(&std::fs::metadata(p).ok()?)?;
            Some(format!(
                "stopped below {}, which {why}: another user could plant a .toolgate/ there",
                p.display()
            ))
        });
        match (stop.or(foreign), parent) {
            (Some(how), _) => return not_found(start, how),
            (None, None) => return not_found(start, "stopped at the filesystem root".into()),
            (None, Some(parent)) => dir = parent,
        }
    }
}

fn not_found(start: PathBuf, how: String) -> FoundWorkspace {
    FoundWorkspace {
        how: format!("no .toolgate/ found ({how})"),
        root: start,
        found: false,
    }
}

/// `path` made absolute against the working directory (lexically: no
/// symlink is resolved), or as given when there is none.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}
