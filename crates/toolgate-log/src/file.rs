//! Appending to the log file: the checks on its path, one open file per
//! process, the lock, rotation, and where the chain stands — everything
//! the parent module's "What makes the file safe to append to" and "Many
//! writers at once" promise, apart from what a line says.

use super::{KEEP, LOCK_WAIT, chain};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Why the log was not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refused {
    #[error("the path is not absolute")]
    Relative,
    #[error("it is inside the workspace {}", .0.display())]
    InWorkspace(PathBuf),
    #[error("its directory {} {}", .0.display(), .1)]
    Directory(PathBuf, String),
    #[error("it is a symlink")]
    Symlink,
    #[error("it is not a regular file")]
    NotAFile,
    #[error("it belongs to uid {owner}, not to uid {me}")]
    NotMine { owner: u32, me: u32 },
    #[error("it is writable by group or others (mode {0:o})")]
    Writable(u32),
    #[error("another writer held it for longer than {} ms", LOCK_WAIT.as_millis())]
    Busy,
    #[error("it kept being rotated under this writer")]
    Rotating,
    #[error("{0}: {1}")]
    Io(&'static str, #[source] std::io::Error),
}

/// A log this process has open: the server appends many records, and
/// after the first each skips the path's checks and the `open` (measured:
/// they were most of a record's cost). Kept with the workspaces already
/// checked not to hold it.
struct Open {
    /// The log's path, its directory resolved.
    path: PathBuf,
    /// The open log; `None` between a rotation or a refusal and the next
    /// record.
    file: Option<File>,
    /// Workspaces (as given) the log was checked to be outside of.
    outside: Vec<PathBuf>,
    /// The open file's identity, and where this process left the chain:
    /// when the file still ends where this process's last record did, no
    /// other writer came between, and the head need not be read again.
    last: Option<Last>,
}

/// See [`Open::last`].
struct Last {
    ino: u64,
    dev: u64,
    end: u64,
    head: chain::Head,
}

/// The logs this process has open, by the path it was given. Appends in
/// one process take turns here: they share one open file, and `flock`
/// does not keep two holders of one open file apart.
static OPEN: std::sync::Mutex<Vec<(PathBuf, Open)>> = std::sync::Mutex::new(Vec::new());

/// Appends the line `next` makes from where the chain stands (and how
/// many bytes of a partial record were cut) to the log at `path`, rotating
/// it past `max`, if the file and its directory pass the checks in the
/// module docs; returns the new head.
/// A record written (or nothing to write): what the writer must say (a
/// rotation another user's file stood in the way of: the record is
/// written all the same, past the size limit, never dropped).
pub(crate) struct Appended {
    pub(crate) notes: Vec<String>,
}

pub(crate) fn append(
    path: &Path,
    workspace: Option<&Path>,
    next: &mut dyn FnMut(&chain::Head, u64) -> String,
    max: u64,
) -> Result<Appended, Refused> {
    let mut open = OPEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let at = match open.iter().position(|(p, _)| p == path) {
        Some(at) => at,
        None => {
            let checked = Open {
                path: checked_path(path, workspace)?,
                file: None,
                outside: workspace.into_iter().map(Path::to_owned).collect(),
                last: None,
            };
            open.push((path.to_owned(), checked));
            open.len() - 1
        }
    };
    let entry = &mut open[at].1;
    if let Some(workspace) = workspace
        && !entry.outside.iter().any(|w| w == workspace)
    {
        checked_path(path, Some(workspace))?;
        entry.outside.push(workspace.to_owned());
    }
    let appended = append_to(entry, next, max);
    if appended.is_err() {
        // Checked again, opened again, next time; and a lock a waiting
        // thread takes after giving up is let go with the last descriptor.
        open.swap_remove(at);
    }
    appended
}

/// The log's path with its directory resolved, after the checks in the
/// module docs (and, given a workspace, that the log is not inside it).
fn checked_path(path: &Path, workspace: Option<&Path>) -> Result<PathBuf, Refused> {
    if !path.is_absolute() {
        return Err(Refused::Relative);
    }
    // Before anything is created: the nearest folder of the path that
    // exists, as the kernel resolves it.
    if let Some(Ok(root)) = workspace.map(Path::canonicalize)
        && path
            .ancestors()
            .skip(1)
            .find_map(|a| a.canonicalize().ok())
            .is_some_and(|a| a.starts_with(&root))
    {
        return Err(Refused::InWorkspace(root));
    }
    let dir = directory(path)?;
    match path.file_name() {
        Some(name) => Ok(dir.join(name)),
        None => Err(Refused::NotAFile),
    }
}

/// The append itself, on the log `entry` names.
///
/// Why one function: the steps between taking the file's lock and letting
/// it go (is it still the file at the path, where its chain stands, rotate
/// or write, what is known of it after) read in one place, so that no path
/// out of it leaves the lock held or the cached head stale.
fn append_to(
    entry: &mut Open,
    next: &mut dyn FnMut(&chain::Head, u64) -> String,
    max: u64,
) -> Result<Appended, Refused> {
    let path = &entry.path;
    let started = Instant::now();
    let mut notes = Vec::new();
    // A few times at most: each retry means another writer rotated the
    // file while this one waited for it.
    for _ in 0..16 {
        let file = match entry.file.take() {
            Some(file) => file,
            None => {
                entry.last = None;
                open(path)?
            }
        };
        lock(&file, started)?;
        // Still the file at `path`? A writer that rotated it while this one
        // waited has renamed it to `.1`. The path's own metadata, once the
        // file is known, gives its length too: one call, not two.
        let now = std::fs::symlink_metadata(path).ok();
        let known = entry.last.as_ref().is_some_and(|l| {
            now.as_ref()
                .is_some_and(|m| m.ino() == l.ino && m.dev() == l.dev)
        });
        let (ino, dev, len) = match (&now, known) {
            (Some(m), true) => (m.ino(), m.dev(), m.len()),
            (Some(m), false) => {
                let held = file
                    .metadata()
                    .map_err(|e| Refused::Io("cannot inspect it", e))?;
                if m.ino() != held.ino() || m.dev() != held.dev() {
                    entry.last = None;
                    continue;
                }
                (held.ino(), held.dev(), held.len())
            }
            (None, _) => {
                entry.last = None;
                continue;
            }
        };
        let (head, torn) = match &entry.last {
            Some(last) if known && last.end == len => (last.head.clone(), 0),
            _ => {
                let previous = numbered(path, 1);
                let previous = match not_ours(&previous) {
                    None => Some(previous.as_path()),
                    Some(why) => {
                        notes.push(format!(
                            "{} is not this user's ({why}): the chain is not continued from it",
                            previous.display()
                        ));
                        None
                    }
                };
                chain::head(&file, len, previous)
                    .map_err(|e| Refused::Io("cannot read where its chain stands", e))?
            }
        };
        let line = next(&head, torn);
        if line.is_empty() {
            // Nothing to write: the head, and what is known of it, stay.
            let _ = file.unlock();
            entry.file = Some(file);
            return Ok(Appended { notes });
        }
        let len = len - torn;
        if len > 0 && len + line.len() as u64 > max {
            match rotate(path) {
                Ok(note) => {
                    notes.extend(note);
                    entry.last = None;
                    // The lock goes with the old file; the next turn opens
                    // a new one.
                    continue;
                }
                // Not rotated (another user's file where a rotated one
                // goes): the record is written here all the same, past
                // the limit. A record is never dropped for a rotation.
                Err(why) => notes.push(format!(
                    "{} was not rotated ({why}); this record is appended past its size limit",
                    path.display()
                )),
            }
        }
        let written = (&file)
            .write_all(line.as_bytes())
            .map_err(|e| Refused::Io("cannot write", e));
        let _ = file.unlock();
        written?;
        let head = chain::Head {
            seq: head.seq + 1,
            hash: sealed_hash(&line),
        };
        entry.last = Some(Last {
            ino,
            dev,
            end: len + line.len() as u64,
            head: head.clone(),
        });
        entry.file = Some(file);
        return Ok(Appended { notes });
    }
    Err(Refused::Rotating)
}

/// Why the file at `path` (beside the log: a rotated one) is not this
/// user's to read or rename, or `None` when it is, or does not exist.
/// In a shared sticky folder another user may create `<log>.1`: a chain
/// continued from it, a `toolgate log` that shows it, or a rotation that
/// fails on it (a sticky folder refuses the rename over another user's
/// file) are each that user's word in this user's log.
pub(crate) fn not_ours(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.file_type().is_file() {
        return Some("it is not a regular file".into());
    }
    toolgate_fs::owned_by_me(&meta, 0o022)
        .err()
        .map(|why| why.to_string())
}

/// The log's directory, canonical: created `0700` when missing, and refused
/// when another user owns it or could change it.
fn directory(path: &Path) -> Result<PathBuf, Refused> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Refused::Io("cannot create its directory", e))?;
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| Refused::Io("cannot resolve its directory", e))?;
    let meta =
        std::fs::metadata(&dir).map_err(|e| Refused::Io("cannot inspect its directory", e))?;
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me && meta.uid() != 0 {
        return Err(Refused::Directory(
            dir,
            format!("belongs to uid {}", meta.uid()),
        ));
    }
    // Sticky (`/tmp`): others may write there but not replace this user's
    // file.
    if meta.mode() & 0o022 != 0 && meta.mode() & 0o1000 == 0 {
        return Err(Refused::Directory(
            dir,
            format!(
                "is writable by group or others (mode {:o})",
                meta.mode() & 0o7777
            ),
        ));
    }
    Ok(dir)
}

/// Opens (or creates, `0600`) the log for appending, never through a
/// symlink, and checks what it opened.
fn open(path: &Path) -> Result<File, Refused> {
    // Read too: the chain's writer reads where the chain stands.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK | nix::libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(nix::libc::ELOOP) => Refused::Symlink,
            _ => Refused::Io("cannot open it", e),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Refused::Io("cannot inspect it", e))?;
    if !meta.file_type().is_file() {
        return Err(Refused::NotAFile);
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(Refused::NotMine {
            owner: meta.uid(),
            me,
        });
    }
    if meta.mode() & 0o022 != 0 {
        return Err(Refused::Writable(meta.mode() & 0o7777));
    }
    Ok(file)
}

/// An exclusive lock on `file`, waited for until [`LOCK_WAIT`] after
/// `started`.
///
/// Waited for in the kernel (a blocking `flock` on a thread of its own),
/// not by polling: under load a poller can keep missing the short moments
/// the lock is free. A thread whose wait is given up on still gets the lock
/// later; it then lets go at once (its descriptor is the last one left to
/// the file). Both descriptors share one open file, so the lock the thread
/// takes is this one's.
fn lock(file: &File, started: Instant) -> Result<(), Refused> {
    match file.try_lock() {
        Ok(()) => return Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => {}
        Err(std::fs::TryLockError::Error(e)) => return Err(Refused::Io("cannot lock it", e)),
    }
    let waiting = file
        .try_clone()
        .map_err(|e| Refused::Io("cannot lock it", e))?;
    let (locked, got) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("toolgate-log-lock".into())
        .spawn(move || {
            let _ = locked.send(waiting.lock());
        })
        .map_err(|e| Refused::Io("cannot wait for its lock", e))?;
    match got.recv_timeout(LOCK_WAIT.saturating_sub(started.elapsed())) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(Refused::Io("cannot lock it", e)),
        Err(_) => Err(Refused::Busy),
    }
}

/// The hash a sealed line carries.
fn sealed_hash(line: &str) -> String {
    chain::split_seal(line.trim_end())
        .map(|(_, h)| h.to_owned())
        .unwrap_or_default()
}

/// `path.n`: a rotated log.
fn numbered(path: &Path, n: u32) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{n}"));
    PathBuf::from(name)
}

/// `path.K-1` → `path.K`, …, `path` → `path.1`; the oldest is overwritten.
/// Only this user's files are renamed over: where `path.n` is another
/// user's, the rotation stops below it (fewer files kept, and said); where
/// `path.1` is, nothing can be rotated and the caller writes in place.
/// Returns what to say.
fn rotate(path: &Path) -> Result<Option<String>, String> {
    let numbered = |n: u32| numbered(path, n);
    let foreign = (1..=KEEP).find_map(|n| not_ours(&numbered(n)).map(|why| (n, why)));
    let keep = foreign.as_ref().map_or(KEEP, |(n, _)| n - 1);
    if let Some((n, why)) = &foreign
        && keep == 0
    {
        return Err(format!(
            "{} is not this user's: {why}",
            numbered(*n).display()
        ));
    }
    for n in (1..keep).rev() {
        match std::fs::rename(numbered(n), numbered(n + 1)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("cannot rename {}: {e}", numbered(n).display())),
        }
    }
    std::fs::rename(path, numbered(1))
        .map_err(|e| format!("cannot rename it to {}: {e}", numbered(1).display()))?;
    Ok(foreign.map(|(n, why)| {
        format!(
            "{} is not this user's ({why}): {keep} rotated file(s) of {} kept",
            numbered(n).display(),
            path.display()
        )
    }))
}

/// Files beside the log that are not this user's, and why: they are not
/// read as part of it (see [`not_ours`]).
pub fn foreign_files(path: &Path) -> Vec<(PathBuf, String)> {
    let mut found: Vec<(PathBuf, String)> = (1..=KEEP)
        .rev()
        .map(|n| numbered(path, n))
        .filter_map(|f| not_ours(&f).map(|why| (f, why)))
        .collect();
    if let Some(why) = not_ours(path) {
        found.push((path.to_owned(), why));
    }
    found
}

/// The log and its rotations, oldest first, as far as they exist.
pub fn files(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=KEEP).rev().map(|n| numbered(path, n)).collect();
    files.push(path.to_owned());
    files.retain(|f| f.is_file() && not_ours(f).is_none());
    files
}
