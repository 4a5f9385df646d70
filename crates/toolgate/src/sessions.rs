//! Where hooks' session state is kept between calls
//! (`toolgate_contract::session` says what the state is).
//!
//! # Two stores, one contract
//!
//! A long-lived process (`toolgate serve`, a harness that embeds the chain)
//! keeps state in memory: [`MemoryStore`], the default of every
//! [`HookRunner`](crate::HookRunner). A one-shot run (an agent spawning
//! `toolgate hook` per call) has no memory between calls, so it keeps state
//! in files: [`FileStore`], one file per session in a directory of the
//! user's own (the binary uses `$XDG_STATE_HOME/toolgate/sessions`).
//! Both are bounded and expire sessions after
//! [`STATE_TTL`](toolgate_contract::session::STATE_TTL) without a write.
//!
//! # Why writes are merged under a lock, not replaced
//!
//! Agents run tool calls in parallel (Claude Code's parallel reads), so two
//! one-shot processes can answer calls of one session at once. Each hook's
//! writes are applied key by key to what is stored *now*, under an
//! exclusive `flock` on the session's file, so neither process loses the
//! other's writes (a guard that records "a secret was read" must not have
//! that erased by a concurrent call that recorded nothing).
//!
//! # Why the directory and files are checked before anything is read
//!
//! Other users on the machine are attackers: a state file another user
//! could write would let them clear a guard's memory (or plant some). The
//! directory must be the user's and private (0700) and each file the
//! user's, 0600, not a symlink; otherwise the store is unavailable, and a
//! hook that asks for its state is told why (a guard that depends on it
//! fails closed). A sandboxed hook is the user's uid too: confinement does
//! not grant it the state directory, so only toolgate itself reads these
//! files.

use crate::safe_fs::{PrivateDirError, private_dir};
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime};
use toolgate_contract::session::{self, STATE_TTL, SessionState, StateChanges};

/// The most sessions a store keeps at once; past it the least recently
/// written are dropped first. Sessions are cheap to lose (a guard then
/// knows less), so the bound is about memory and disk, not correctness.
pub const MAX_SESSIONS: usize = 1024;
/// The largest session file read: every hook's state is bounded, so a
/// bigger file is not one toolgate wrote.
const MAX_FILE_BYTES: u64 = 1 << 20;
/// The file format this build writes and reads.
const FILE_SCHEMA: u32 = 1;

/// Where hooks' session state is kept. `scope` names one hook (its layer,
/// name and what runs), `session` the agent's session id; a store never
/// hands one scope's or one session's state to another.
pub trait SessionStore: Send + Sync {
    /// What `scope` keeps in `session` (empty if nothing, or expired).
    fn load(&self, scope: &str, session: &str) -> Result<SessionState, SessionStoreError>;
    /// Applies a hook's writes to what is kept now, within the bounds of
    /// `toolgate_contract::session`.
    fn commit(
        &self,
        scope: &str,
        session: &str,
        changes: &StateChanges,
    ) -> Result<(), SessionStoreError>;
}

/// Why a session store could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SessionStoreError {
    /// The directory is missing and cannot be made, or is not private.
    #[error("session state directory: {0}")]
    Dir(#[from] PrivateDirError),
    /// A session file could not be opened, read, locked or written.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
    /// A session file is not the user's own private regular file.
    #[error("{}: {why}; remove it (toolgate will not read or write it)", path.display())]
    NotPrivate {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// A session file is not what toolgate writes.
    #[error("{}: {detail}; remove it to start the session's state afresh", path.display())]
    Damaged {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        detail: String,
    },
    /// There is no store (see [`NoStore`]).
    #[error("no session store: {0}")]
    Missing(String),
    /// The writes would take the hook's state past a bound.
    #[error(transparent)]
    Bound(#[from] session::StateWriteError),
}

/// Sessions kept in memory: the default for a runner, and the server's.
#[derive(Debug, Default)]
pub struct MemoryStore {
    sessions: Mutex<HashMap<String, Kept>>,
}

/// One session's state in memory.
#[derive(Debug)]
struct Kept {
    scopes: HashMap<String, SessionState>,
    written: Instant,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl SessionStore for MemoryStore {
    fn load(&self, scope: &str, session: &str) -> Result<SessionState, SessionStoreError> {
        let sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        Ok(sessions
            .get(session)
            .filter(|kept| kept.written.elapsed() < STATE_TTL)
            .and_then(|kept| kept.scopes.get(scope).cloned())
            .unwrap_or_default())
    }

    fn commit(
        &self,
        scope: &str,
        session: &str,
        changes: &StateChanges,
    ) -> Result<(), SessionStoreError> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        sessions.retain(|_, kept| kept.written.elapsed() < STATE_TTL);
        if !sessions.contains_key(session) && sessions.len() >= MAX_SESSIONS {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, kept)| kept.written)
                .map(|(id, _)| id.clone());
            if let Some(oldest) = oldest {
                sessions.remove(&oldest);
            }
        }
        let kept = sessions.entry(session.to_owned()).or_insert_with(|| Kept {
            scopes: HashMap::new(),
            written: Instant::now(),
        });
        let next = session::apply(
            kept.scopes.get(scope).unwrap_or(&SessionState::new()),
            changes,
        )?;
        kept.scopes.insert(scope.to_owned(), next);
        kept.written = Instant::now();
        Ok(())
    }
}

/// No store at all: every read and write fails with the reason given (a
/// one-shot run with no state directory). A hook that depends on its state
/// is told, rather than handed a memory that forgets at exit.
#[derive(Debug)]
pub struct NoStore(pub String);

impl SessionStore for NoStore {
    fn load(&self, _scope: &str, _session: &str) -> Result<SessionState, SessionStoreError> {
        Err(SessionStoreError::Missing(self.0.clone()))
    }

    fn commit(&self, _: &str, _: &str, _: &StateChanges) -> Result<(), SessionStoreError> {
        Err(SessionStoreError::Missing(self.0.clone()))
    }
}

/// Sessions kept in files, for one-shot runs: one file per session, named
/// by a digest of its id, in a private directory.
#[derive(Clone, Debug)]
pub struct FileStore {
    dir: PathBuf,
}

/// A session file's contents.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionFile {
    schema: u32,
    scopes: BTreeMap<String, SessionState>,
}

impl FileStore {
    /// A store in `dir` (made 0700 when first written).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        FileStore { dir: dir.into() }
    }

    /// The file that keeps `session`.
    fn path(&self, session: &str) -> PathBuf {
        let digest = blake3::hash(session.as_bytes()).to_hex();
        self.dir.join(format!("{}.json", &digest[..32]))
    }

    /// Opens (or, for a write, creates) a session's file: the user's own,
    /// 0600, not a symlink.
    fn open(&self, path: &Path, create: bool) -> Result<Option<std::fs::File>, SessionStoreError> {
        let io = |error| SessionStoreError::Io {
            path: path.to_owned(),
            error,
        };
        // A read of a store never written finds nothing, and makes nothing.
        if !create
            && std::fs::symlink_metadata(&self.dir)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            return Ok(None);
        }
        private_dir(&self.dir)?;
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .write(create)
            .create(create)
            .mode(0o600)
            .custom_flags(nix::libc::O_NOFOLLOW)
            .open(path);
        let file = match opened {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(SessionStoreError::NotPrivate {
                path: path.to_owned(),
                why: "not a regular file".into(),
            });
        }
        crate::safe_fs::owned_by_me(&meta, 0o077).map_err(|why| SessionStoreError::NotPrivate {
            path: path.to_owned(),
            why: why.to_string(),
        })?;
        Ok(Some(file))
    }

    /// What a locked file holds; an expired one holds nothing.
    fn read(path: &Path, file: &mut std::fs::File) -> Result<SessionFile, SessionStoreError> {
        let meta = file.metadata().map_err(|error| SessionStoreError::Io {
            path: path.to_owned(),
            error,
        })?;
        let expired = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_some_and(|age| age >= STATE_TTL);
        if meta.len() == 0 || expired {
            return Ok(SessionFile {
                schema: FILE_SCHEMA,
                scopes: BTreeMap::new(),
            });
        }
        let damaged = |detail: String| SessionStoreError::Damaged {
            path: path.to_owned(),
            detail,
        };
        if meta.len() > MAX_FILE_BYTES {
            return Err(damaged(format!(
                "{} bytes, more than toolgate ever writes",
                meta.len()
            )));
        }
        let mut text = Vec::new();
        file.read_to_end(&mut text)
            .map_err(|error| SessionStoreError::Io {
                path: path.to_owned(),
                error,
            })?;
        let kept: SessionFile = serde_json::from_slice(&text)
            .map_err(|e| damaged(format!("not a session file ({e})")))?;
        if kept.schema != FILE_SCHEMA {
            return Err(damaged(format!(
                "schema {} (this build reads {FILE_SCHEMA})",
                kept.schema
            )));
        }
        Ok(kept)
    }

    /// Drops expired session files, and past [`MAX_SESSIONS`] the least
    /// recently written: run when a new session's file is made.
    fn sweep(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .collect();
        files.sort();
        let now = SystemTime::now();
        // Room for the one about to be made.
        let excess = (files.len() + 1).saturating_sub(MAX_SESSIONS);
        for (i, (modified, path)) in files.iter().enumerate() {
            let expired = now
                .duration_since(*modified)
                .is_ok_and(|age| age >= STATE_TTL);
            if i < excess || expired {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

impl SessionStore for FileStore {
    fn load(&self, scope: &str, session: &str) -> Result<SessionState, SessionStoreError> {
        let path = self.path(session);
        let Some(mut file) = self.open(&path, false)? else {
            return Ok(SessionState::new());
        };
        file.lock_shared().map_err(|error| SessionStoreError::Io {
            path: path.clone(),
            error,
        })?;
        let mut kept = Self::read(&path, &mut file)?;
        Ok(kept.scopes.remove(scope).unwrap_or_default())
    }

    fn commit(
        &self,
        scope: &str,
        session: &str,
        changes: &StateChanges,
    ) -> Result<(), SessionStoreError> {
        let path = self.path(session);
        let new = std::fs::symlink_metadata(&path).is_err();
        if new {
            self.sweep();
        }
        let io = |error| SessionStoreError::Io {
            path: path.clone(),
            error,
        };
        let Some(mut file) = self.open(&path, true)? else {
            return Ok(());
        };
        file.lock().map_err(io)?;
        let mut kept = Self::read(&path, &mut file)?;
        let next = session::apply(
            kept.scopes.get(scope).unwrap_or(&SessionState::new()),
            changes,
        )?;
        if next.is_empty() {
            kept.scopes.remove(scope);
        } else {
            kept.scopes.insert(scope.to_owned(), next);
        }
        kept.schema = FILE_SCHEMA;
        let text = serde_json::to_vec(&kept).unwrap_or_default();
        file.set_len(0).map_err(io)?;
        file.rewind().map_err(io)?;
        file.write_all(&text).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn one(key: &str, value: Option<&str>) -> StateChanges {
        [(key.to_owned(), value.map(str::to_owned))].into()
    }

    fn stores(dir: &Path) -> Vec<Box<dyn SessionStore>> {
        vec![
            Box::new(MemoryStore::new()),
            Box::new(FileStore::new(dir.join("sessions"))),
        ]
    }

    #[test]
    fn a_scope_never_reads_another_scopes_or_another_sessions_state() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            store
                .commit("global:taint", "s1", &one("tainted", Some("1")))
                .unwrap();
            assert_eq!(store.load("global:taint", "s1").unwrap()["tainted"], "1");
            assert!(store.load("global:taint", "s2").unwrap().is_empty());
            assert!(store.load("workspace:taint", "s1").unwrap().is_empty());
        }
    }

    #[test]
    fn writes_merge_key_by_key_and_a_removal_removes() {
        let dir = tempfile::tempdir().unwrap();
        for store in stores(dir.path()) {
            store.commit("h", "s", &one("a", Some("1"))).unwrap();
            store.commit("h", "s", &one("b", Some("2"))).unwrap();
            store.commit("h", "s", &one("a", None)).unwrap();
            let kept = store.load("h", "s").unwrap();
            assert_eq!(kept, [("b".to_owned(), "2".to_owned())].into());
        }
    }

    #[test]
    fn a_write_past_a_bound_is_refused_and_keeps_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let big = "v".repeat(session::MAX_STATE_BYTES);
        for store in stores(dir.path()) {
            assert!(matches!(
                store.commit("h", "s", &one("a", Some(&big))),
                Err(SessionStoreError::Bound(_))
            ));
            assert!(store.load("h", "s").unwrap().is_empty());
        }
    }

    #[test]
    fn a_state_file_others_could_read_or_a_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("sessions"));
        store.commit("h", "s", &one("a", Some("1"))).unwrap();
        let path = store.path("s");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            store.load("h", "s"),
            Err(SessionStoreError::NotPrivate { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        assert!(store.commit("h", "s", &one("a", Some("1"))).is_err());
        assert!(!dir.path().join("elsewhere").exists());
        let open = FileStore::new(dir.path().join("open"));
        std::fs::create_dir(dir.path().join("open")).unwrap();
        std::fs::set_permissions(
            dir.path().join("open"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert!(matches!(
            open.load("h", "s"),
            Err(SessionStoreError::Dir(_))
        ));
    }

    #[test]
    fn a_damaged_state_file_is_an_error_not_an_empty_state() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::new(dir.path().join("sessions"));
        store.commit("h", "s", &one("a", Some("1"))).unwrap();
        std::fs::write(store.path("s"), b"{not json").unwrap();
        assert!(matches!(
            store.load("h", "s"),
            Err(SessionStoreError::Damaged { .. })
        ));
    }

    #[test]
    fn the_memory_store_keeps_at_most_max_sessions() {
        let store = MemoryStore::new();
        for i in 0..=MAX_SESSIONS {
            store
                .commit("h", &format!("s{i}"), &one("a", Some("1")))
                .unwrap();
        }
        assert_eq!(store.sessions.lock().unwrap().len(), MAX_SESSIONS);
        assert!(store.load("h", "s0").unwrap().is_empty());
        assert_eq!(
            store.load("h", &format!("s{MAX_SESSIONS}")).unwrap()["a"],
            "1"
        );
    }
}
