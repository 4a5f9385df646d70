//! The pinned tree of a workspace command, and the private copy it runs
//! from.
//!
//! # Why a copy, and why a tree
//!
//! Checking a file's digest and then letting the interpreter open it by
//! path leaves a window: a rename loop won 6–12 of 40 calls against the
//! first gate here, and the window includes the interpreter's start-up, not
//! "about a millisecond" (SECURITY.md §12). And pinning single
//! files misses what a script loads beside itself (`hooks/json.py`
//! shadowing the standard library, a sibling module, compiled bytecode in
//! `__pycache__`). So trust pins a **tree** — the folder the hook's code
//! lives in, recursively, plus `trust_files` — and the hook runs from a
//! **content-addressed copy** of exactly the bytes that were hashed, in the
//! user's own state directory. An edit after trust, or during the call,
//! changes the workspace, not what runs.
//!
//! The earlier objection to a copy (it breaks `__file__`, `$0` and sibling
//! imports) holds only for a copy of one file: the copy here keeps the
//! tree's layout, so a script finds its siblings beside it, and the working
//! directory stays the workspace root.
//!
//! Bytecode is never part of a tree (`__pycache__/`, `*.pyc`, `*.pyo` are
//! left out and listed as such): nobody can review it, and an unchecked-hash
//! `.pyc` runs instead of the source it claims to be. Symlinks and special
//! files in a tree are refused (a copy does not follow them, and a review
//! cannot show them), and a tree is bounded ([`MAX_TREE_FILES`],
//! [`MAX_TREE_BYTES`]).

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

/// Most files in one hook's pinned tree.
pub const MAX_TREE_FILES: usize = 2000;
/// Most bytes in one hook's pinned tree: 64 MiB.
pub const MAX_TREE_BYTES: u64 = 64 << 20;

/// One file of a pinned tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Relative to the workspace root.
    pub(crate) rel: PathBuf,
    pub(crate) digest: String,
    pub(crate) executable: bool,
}

/// Whether a name is bytecode, which a tree leaves out.
pub(crate) fn is_bytecode(name: &str) -> bool {
    name == "__pycache__" || name.ends_with(".pyc") || name.ends_with(".pyo")
}

/// Lists the regular files under `dir` (relative to `root`), in path order,
/// leaving bytecode out. Refuses symlinks, special files, and a tree past
/// the bounds.
pub(crate) fn list(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut stack = vec![dir.to_owned()];
    while let Some(rel) = stack.pop() {
        let abs = root.join(&rel);
        let mut names: Vec<_> = std::fs::read_dir(&abs)
            .map_err(|e| format!("{}: {e}", rel.display()))?
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names.into_iter().rev() {
            let lossy = name.to_string_lossy();
            if is_bytecode(&lossy) {
                continue;
            }
            let child = rel.join(&name);
            let meta = std::fs::symlink_metadata(root.join(&child))
                .map_err(|e| format!("{}: {e}", child.display()))?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(format!(
                    "{} is a symlink; a pinned tree holds regular files only (copy the file in)",
                    child.display()
                ));
            } else if kind.is_dir() {
                stack.push(child);
            } else if kind.is_file() {
                out.push(child);
                if out.len() > MAX_TREE_FILES {
                    return Err(format!(
                        "{} holds more than {MAX_TREE_FILES} files; toolgate pins and copies the \
                         whole folder a hook's code lives in: give the hook a folder of its own",
                        dir.display()
                    ));
                }
            } else {
                return Err(format!(
                    "{} is not a regular file; a pinned tree holds regular files only",
                    child.display()
                ));
            }
        }
    }
    Ok(())
}

/// The key of a tree: the digest of its entries, sorted.
pub(crate) fn key(entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.rel.cmp(&b.rel));
    sorted.dedup_by(|a, b| a.rel == b.rel);
    let mut hasher = blake3::Hasher::new();
    for e in sorted {
        hasher.update(e.rel.as_os_str().as_encoded_bytes());
        hasher.update(b"\0");
        hasher.update(e.digest.as_bytes());
        hasher.update(if e.executable { b"\0x\n" } else { b"\0-\n" });
    }
    hasher.finalize().to_hex()[..32].to_owned()
}

/// The copy of `entries` (read from `root`) under `store`, made if it is
/// not there: each file is read once, hashed as it is written, and must
/// hash to its pinned digest, so the copy holds exactly the bytes that were
/// trusted. Files are read-only, folders too.
pub(crate) fn materialize(store: &Path, root: &Path, entries: &[Entry]) -> Result<PathBuf, String> {
    private_dir(store)?;
    let key = key(entries);
    let done = store.join(&key);
    if let Ok(meta) = std::fs::symlink_metadata(&done) {
        if meta.is_dir() {
            crate::safe_fs::owned_by_me(&meta, 0o022)
                .map_err(|why| format!("the snapshot {} {why}", done.display()))?;
            return Ok(done);
        }
        return Err(format!("{} is not a snapshot folder", done.display()));
    }
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(store)
        .map_err(|e| format!("a snapshot cannot be made in {}: {e}", store.display()))?
        .keep();
    let made = copy_all(root, &tmp, entries).and_then(|()| seal(&tmp));
    if let Err(why) = made {
        remove(&tmp);
        return Err(why);
    }
    match std::fs::rename(&tmp, &done) {
        Ok(()) => Ok(done),
        // Another process made the same snapshot first: same key, same bytes.
        Err(_) if done.is_dir() => {
            remove(&tmp);
            Ok(done)
        }
        Err(e) => {
            remove(&tmp);
            Err(format!(
                "the snapshot {} cannot be made: {e}",
                done.display()
            ))
        }
    }
}

fn copy_all(root: &Path, tmp: &Path, entries: &[Entry]) -> Result<(), String> {
    for entry in entries {
        if entry
            .rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(format!(
                "{} is not a path inside the workspace",
                entry.rel.display()
            ));
        }
        let to = tmp.join(&entry.rel);
        if to.exists() {
            continue;
        }
        if let Some(parent) = to.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        let (bytes, _) = crate::safe_fs::read_identified(&root.join(&entry.rel), MAX_TREE_BYTES)
            .map_err(|e| format!("{} {}", entry.rel.display(), crate::text::error_chain(&e)))?;
        let digest = format!("blake3:{}", blake3::hash(&bytes).to_hex());
        if digest != entry.digest {
            return Err(format!(
                "{} changed while it was copied (it is not what was trusted)",
                entry.rel.display()
            ));
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&to)
            .and_then(|mut f| f.write_all(&bytes).map(|()| f))
            .map_err(|e| format!("{}: {e}", to.display()))?;
        file.flush().map_err(|e| format!("{}: {e}", to.display()))?;
        let mode = if entry.executable { 0o500 } else { 0o400 };
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    Ok(())
}

/// Makes every folder under `dir` (and `dir`) read-only.
fn seal(dir: &Path) -> Result<(), String> {
    for entry in std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))? {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            seal(&entry.path())?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500))
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Removes a (possibly sealed) tree, best effort.
fn remove(dir: &Path) {
    fn open(dir: &Path) {
        let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    open(&entry.path());
                }
            }
        }
    }
    open(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// `dir` exists, is the user's own and private (created 0700 if missing).
pub(crate) fn private_dir(dir: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("{} cannot be created: {e}", dir.display()))?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    crate::safe_fs::owned_by_me(&meta, 0o077).map_err(|why| format!("{} {why}", dir.display()))
}
