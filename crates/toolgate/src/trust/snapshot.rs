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

use crate::safe_fs::{OwnershipError, PrivateDirError, ReadFileError, private_dir};
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

/// Why a folder could not be listed as a pinned tree.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ListTreeError {
    /// A folder or file in it could not be read.
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A symlink, which a copy would not follow.
    #[error(
        "{} is a symlink; a pinned tree holds regular files only (copy the file in)",
        path.display()
    )]
    Symlink { path: PathBuf },
    /// Past [`MAX_TREE_FILES`].
    #[error(
        "{} holds more than {MAX_TREE_FILES} files; toolgate pins and copies the whole \
         folder a hook's code lives in: give the hook a folder of its own",
        dir.display()
    )]
    TooManyFiles { dir: PathBuf },
    /// A FIFO, socket or device.
    #[error("{} is not a regular file; a pinned tree holds regular files only", path.display())]
    NotRegular { path: PathBuf },
}

/// Why the private copy of a pinned tree could not be made or used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MaterializeError {
    /// The snapshot store is not the user's own private folder.
    #[error(transparent)]
    Store(#[from] PrivateDirError),
    /// A snapshot that is there is not the user's own.
    #[error("the snapshot {} {why}", dir.display())]
    NotMine { dir: PathBuf, why: OwnershipError },
    /// Something other than a folder is where the snapshot belongs.
    #[error("{} is not a snapshot folder", path.display())]
    NotAFolder { path: PathBuf },
    /// No temporary folder for the copy.
    #[error("a snapshot cannot be made in {}: {error}", store.display())]
    Temporary {
        store: PathBuf,
        error: std::io::Error,
    },
    /// An entry's path leaves the workspace.
    #[error("{} is not a path inside the workspace", rel.display())]
    Outside { rel: PathBuf },
    /// Reading a pinned file.
    #[error("{} {}", rel.display(), crate::text::error_chain(error))]
    Read { rel: PathBuf, error: ReadFileError },
    /// A pinned file's bytes are no longer the ones trusted.
    #[error("{} changed while it was copied (it is not what was trusted)", rel.display())]
    Changed { rel: PathBuf },
    /// Writing, sealing or listing the copy.
    #[error("{}: {error}", path.display())]
    Write {
        path: PathBuf,
        error: std::io::Error,
    },
    /// Moving the finished copy into place.
    #[error("the snapshot {} cannot be made: {error}", dir.display())]
    Rename { dir: PathBuf, error: std::io::Error },
}

/// Whether a name is bytecode, which a tree leaves out.
pub(crate) fn is_bytecode(name: &str) -> bool {
    name == "__pycache__" || name.ends_with(".pyc") || name.ends_with(".pyo")
}

/// Lists the regular files under `dir` (relative to `root`), in path order,
/// leaving bytecode out. Refuses symlinks, special files, and a tree past
/// the bounds.
pub(crate) fn list(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ListTreeError> {
    let mut stack = vec![dir.to_owned()];
    while let Some(rel) = stack.pop() {
        let abs = root.join(&rel);
        let mut names: Vec<_> = std::fs::read_dir(&abs)
            .map_err(|error| ListTreeError::Read {
                path: rel.clone(),
                error,
            })?
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
            let meta = std::fs::symlink_metadata(root.join(&child)).map_err(|error| {
                ListTreeError::Read {
                    path: child.clone(),
                    error,
                }
            })?;
            let kind = meta.file_type();
            if kind.is_symlink() {
                return Err(ListTreeError::Symlink { path: child });
            } else if kind.is_dir() {
                stack.push(child);
            } else if kind.is_file() {
                out.push(child);
                if out.len() > MAX_TREE_FILES {
                    return Err(ListTreeError::TooManyFiles {
                        dir: dir.to_owned(),
                    });
                }
            } else {
                return Err(ListTreeError::NotRegular { path: child });
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
pub(crate) fn materialize(
    store: &Path,
    root: &Path,
    entries: &[Entry],
) -> Result<PathBuf, MaterializeError> {
    private_dir(store)?;
    let key = key(entries);
    let done = store.join(&key);
    if let Ok(meta) = std::fs::symlink_metadata(&done) {
        if meta.is_dir() {
            crate::safe_fs::owned_by_me(&meta, 0o022).map_err(|why| MaterializeError::NotMine {
                dir: done.clone(),
                why,
            })?;
            return Ok(done);
        }
        return Err(MaterializeError::NotAFolder { path: done });
    }
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .tempdir_in(store)
        .map_err(|error| MaterializeError::Temporary {
            store: store.to_owned(),
            error,
        })?
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
        Err(error) => {
            remove(&tmp);
            Err(MaterializeError::Rename { dir: done, error })
        }
    }
}

/// A write into the copy at `path` failed.
fn write_failed(path: &Path) -> impl FnOnce(std::io::Error) -> MaterializeError + '_ {
    move |error| MaterializeError::Write {
        path: path.to_owned(),
        error,
    }
}

fn copy_all(root: &Path, tmp: &Path, entries: &[Entry]) -> Result<(), MaterializeError> {
    for entry in entries {
        if entry
            .rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return Err(MaterializeError::Outside {
                rel: entry.rel.clone(),
            });
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
                .map_err(write_failed(parent))?;
        }
        let (bytes, _) = crate::safe_fs::read_identified(&root.join(&entry.rel), MAX_TREE_BYTES)
            .map_err(|error| MaterializeError::Read {
                rel: entry.rel.clone(),
                error,
            })?;
        let digest = format!("blake3:{}", blake3::hash(&bytes).to_hex());
        if digest != entry.digest {
            return Err(MaterializeError::Changed {
                rel: entry.rel.clone(),
            });
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&to)
            .and_then(|mut f| f.write_all(&bytes).map(|()| f))
            .map_err(write_failed(&to))?;
        file.flush().map_err(write_failed(&to))?;
        let mode = if entry.executable { 0o500 } else { 0o400 };
        std::fs::set_permissions(&to, std::fs::Permissions::from_mode(mode))
            .map_err(write_failed(&to))?;
    }
    Ok(())
}

/// Makes every folder under `dir` (and `dir`) read-only.
fn seal(dir: &Path) -> Result<(), MaterializeError> {
    for entry in std::fs::read_dir(dir).map_err(write_failed(dir))? {
        let entry = entry.map_err(write_failed(dir))?;
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            seal(&entry.path())?;
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o500)).map_err(write_failed(dir))
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
