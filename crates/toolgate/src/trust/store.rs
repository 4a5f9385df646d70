//! The trust store: one record per workspace, in a directory only the user
//! can read or write.

use super::{Manifest, TrustError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The record format this build writes and reads.
const RECORD_SCHEMA: u32 = 2;
/// The most of a record read: 1 MiB.
const MAX_RECORD_BYTES: u64 = 1 << 20;
/// The largest file whose text a record keeps (see [`Kept`]).
pub const MAX_KEPT_TEXT: u64 = 64 << 10;
/// The most text one record keeps, all files together: a record is read
/// on every load of the workspace, so it stays small.
const MAX_KEPT_TOTAL: usize = 128 << 10;

/// Where trust is recorded: a directory of the user's own (the binary uses
/// `$XDG_STATE_HOME/toolgate/trust`, else `~/.local/state/toolgate/trust`).
/// It must be the user's, mode 0700, with records 0600, and never inside
/// the workspace being judged; anything else is refused, and a refused
/// store trusts nothing.
#[derive(Clone, Debug)]
pub struct TrustStore {
    dir: PathBuf,
}

/// What was recorded when the user trusted a workspace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    /// The record format.
    pub schema: u32,
    /// The digest of [`Record::manifest`] the user confirmed.
    pub digest: String,
    /// When, in seconds since the Unix epoch.
    pub trusted_at: u64,
    /// What was trusted.
    #[serde(flatten)]
    pub manifest: Manifest,
    /// What was kept of the files it pins, by digest, so the next review
    /// can show what changed (not part of [`Record::digest`]: it is what
    /// was shown, not what is trusted; a text that does not hash to its
    /// digest is dropped when the record is read).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kept: BTreeMap<String, Kept>,
}

/// What a record keeps of one pinned file: its size, and the text of a
/// small text file (hooks.json, a script: at most [`MAX_KEPT_TEXT`], UTF-8
/// without NUL), so a review can show a diff rather than only "changed".
/// Only digests are trusted; this is for the eyes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// Its size in bytes.
    pub size: u64,
    /// Its text, when it is a small text file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl Kept {
    /// What a record keeps of `bytes`.
    pub(crate) fn of(bytes: &[u8]) -> Kept {
        let text = (bytes.len() as u64 <= MAX_KEPT_TEXT && !bytes.contains(&0))
            .then(|| std::str::from_utf8(bytes).ok().map(str::to_owned))
            .flatten();
        Kept {
            size: bytes.len() as u64,
            text,
        }
    }
}

/// A record's text as the store reads it: strict JSON (no repeated key), this
/// build's schema, for this workspace, its digest matching what it records.
/// Errors name the file and what is wrong, never the text.
pub(crate) fn parse_record(text: &[u8], root: &Path, path: &Path) -> Result<Record, TrustError> {
    let refuse = |why: String| TrustError::Record {
        path: path.to_owned(),
        why,
    };
    crate::strict_json::parse(text).map_err(|e| refuse(e.to_string()))?;
    // Read from the text (checked above for repeated keys), not the value, so
    // a shape error has a position; and said without serde's quotes of the
    // value (found by the property tests, tests/all/props.rs).
    let mut record: Record = serde_json::from_slice(text).map_err(|e| {
        refuse(format!(
            "not a trust record {}",
            crate::strict_json::shape_error(&e)
        ))
    })?;
    if record.schema != RECORD_SCHEMA {
        return Err(refuse(format!(
            "record schema {} (this build reads {RECORD_SCHEMA})",
            record.schema
        )));
    }
    if record.manifest.workspace != root {
        // Not the path it records: that is the record's text.
        return Err(refuse("it records another workspace, not this one".into()));
    }
    if record.digest != record.manifest.digest() {
        return Err(refuse(
            "its digest does not match what it records (edited by hand?)".into(),
        ));
    }
    for (digest, kept) in &mut record.kept {
        if kept
            .text
            .as_ref()
            .is_some_and(|t| format!("blake3:{}", blake3::hash(t.as_bytes()).to_hex()) != *digest)
        {
            kept.text = None;
        }
    }
    Ok(record)
}

impl TrustStore {
    /// A store in `dir` (created 0700 on the first record).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        TrustStore { dir: dir.into() }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where trusted hooks' snapshots are kept (see `snapshot`).
    pub(crate) fn snapshot_dir(&self) -> PathBuf {
        self.dir.join("snapshots")
    }

    /// Where confined hooks get their per-call scratch folders.
    pub(crate) fn scratch_dir(&self) -> PathBuf {
        self.dir.join("scratch")
    }

    /// The record file for a workspace: named by the digest of its
    /// canonical root, so a moved workspace has no record.
    pub fn record_path(&self, root: &Path) -> PathBuf {
        let key = blake3::hash(root.as_os_str().as_encoded_bytes()).to_hex();
        self.dir.join(format!("{}.json", &key[..32]))
    }

    /// Checks the directory: the user's own, 0700, not a symlink, its parent
    /// not replaceable by others, and not inside `root`.
    fn check(&self, root: &Path, create: bool) -> Result<(), TrustError> {
        let refuse = |why: String| TrustError::Store {
            dir: self.dir.clone(),
            why,
        };
        if create && std::fs::symlink_metadata(&self.dir).is_err() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&self.dir)
                .map_err(|e| refuse(format!("it cannot be created: {e}")))?;
        }
        let meta = match std::fs::symlink_metadata(&self.dir) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(TrustError::NoStore {
                    dir: self.dir.clone(),
                });
            }
            Err(e) => return Err(refuse(format!("it cannot be read: {e}"))),
        };
        if meta.file_type().is_symlink() {
            return Err(refuse("it is a symlink".into()));
        }
        if !meta.is_dir() {
            return Err(refuse("it is not a directory".into()));
        }
        crate::safe_fs::owned_by_me(&meta, 0o077).map_err(|why| refuse(format!("it {why}")))?;
        let canonical = self
            .dir
            .canonicalize()
            .map_err(|e| refuse(format!("it cannot be resolved: {e}")))?;
        if canonical.starts_with(root) {
            return Err(refuse(format!(
                "it is inside the workspace {} (trust must live outside what it judges)",
                root.display()
            )));
        }
        if let Some(parent) = canonical.parent() {
            crate::safe_fs::owner_only(parent, true).map_err(|why| {
                refuse(format!(
                    "its parent {why}, so another user could replace it"
                ))
            })?;
        }
        Ok(())
    }

    /// Checks the store as [`TrustStore::read`] does before it reads a
    /// record, without reading one: a few `stat`s, for a long-lived process
    /// to repeat on every call. A chmod of the store changes no record, so
    /// watching the record alone would miss it. A store that does not exist
    /// yet passes (it holds no trust to refuse).
    pub fn check_dir(&self, root: &Path) -> Result<(), TrustError> {
        match self.check(root, false) {
            Err(TrustError::NoStore { .. }) => Ok(()),
            other => other,
        }
    }

    /// The record for `root`, if the user trusted it.
    pub fn read(&self, root: &Path) -> Result<Option<Record>, TrustError> {
        self.read_identified(root).0
    }

    /// [`TrustStore::read`], with the identity of the record file judged:
    /// the one its bytes were read under (taken from the descriptor before
    /// reading, checked after; a record that changes meanwhile is read
    /// again, see `safe_fs`), or when it could not be read, what its path
    /// held before the attempt (so a program that keeps the answer notices
    /// the fix). `None`: there is no record.
    pub(crate) fn read_identified(
        &self,
        root: &Path,
    ) -> (
        Result<Option<Record>, TrustError>,
        Option<crate::safe_fs::FileIdentity>,
    ) {
        let path = self.record_path(root);
        let before = crate::safe_fs::FileIdentity::of_path(&path);
        match self.read_record(root, &path) {
            Ok(Some((record, identity))) => (Ok(Some(record)), Some(identity)),
            Ok(None) => (Ok(None), None),
            Err(e) => (Err(e), before),
        }
    }

    fn read_record(
        &self,
        root: &Path,
        path: &Path,
    ) -> Result<Option<(Record, crate::safe_fs::FileIdentity)>, TrustError> {
        match self.check(root, false) {
            Err(TrustError::NoStore { .. }) => return Ok(None),
            other => other?,
        }
        let refuse = |why: String| TrustError::Record {
            path: path.to_owned(),
            why,
        };
        let mut attempts = 0;
        let (text, identity) = loop {
            let file = match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
                .open(path)
            {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                    return Err(refuse("it is a symlink".into()));
                }
                Err(e) => return Err(refuse(format!("it cannot be opened: {e}"))),
            };
            let meta = file
                .metadata()
                .map_err(|e| refuse(format!("it cannot be read: {e}")))?;
            if !meta.is_file() {
                return Err(refuse("it is not a regular file".into()));
            }
            crate::safe_fs::owned_by_me(&meta, 0o077).map_err(|why| refuse(format!("it {why}")))?;
            let identity = crate::safe_fs::FileIdentity::of(&meta);
            let mut text = Vec::new();
            use std::io::Read;
            (&file)
                .take(MAX_RECORD_BYTES + 1)
                .read_to_end(&mut text)
                .map_err(|e| refuse(format!("it cannot be read: {e}")))?;
            if text.len() as u64 > MAX_RECORD_BYTES {
                return Err(refuse("it is larger than 1 MiB".into()));
            }
            if identity.still(&file, path, false) {
                break (text, identity);
            }
            attempts += 1;
            if attempts == crate::safe_fs::READ_ATTEMPTS {
                return Err(refuse(format!(
                    "it changed while it was read, {attempts} times in a row"
                )));
            }
        };
        let record = parse_record(&text, root, path)?;
        Ok(Some((record, identity)))
    }

    /// Records `manifest` as trusted (replacing any earlier record for its
    /// workspace), written 0600 and renamed into place, with what is `kept`
    /// of its files as far as the bounds allow (texts first to go, then
    /// sizes: a record too large to read would trust nothing).
    pub(crate) fn write(
        &self,
        manifest: &Manifest,
        kept: &BTreeMap<String, Kept>,
    ) -> Result<PathBuf, TrustError> {
        self.check(&manifest.workspace, true)?;
        let path = self.record_path(&manifest.workspace);
        let mut total = 0;
        let kept: BTreeMap<String, Kept> = kept
            .iter()
            .map(|(digest, k)| {
                let mut k = k.clone();
                let len = k.text.as_ref().map_or(0, String::len);
                if total + len > MAX_KEPT_TOTAL {
                    k.text = None;
                } else {
                    total += len;
                }
                (digest.clone(), k)
            })
            .collect();
        let mut record = Record {
            schema: RECORD_SCHEMA,
            digest: manifest.digest(),
            trusted_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            manifest: manifest.clone(),
            kept,
        };
        let size = |r: &Record| serde_json::to_vec_pretty(r).map_or(0, |t| t.len() as u64);
        if size(&record) > MAX_RECORD_BYTES {
            record.kept.values_mut().for_each(|k| k.text = None);
        }
        if size(&record) > MAX_RECORD_BYTES {
            record.kept.clear();
        }
        let write = || -> std::io::Result<()> {
            // tempfile creates its files 0600.
            let mut tmp = tempfile::NamedTempFile::new_in(&self.dir)?;
            let text = serde_json::to_vec_pretty(&record).map_err(std::io::Error::other)?;
            tmp.write_all(&text)?;
            tmp.as_file().sync_data()?;
            tmp.persist(&path).map_err(|e| e.error)?;
            Ok(())
        };
        write().map_err(|source| TrustError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Forgets `root`. Returns whether there was a record.
    pub(crate) fn remove(&self, root: &Path) -> Result<bool, TrustError> {
        match self.check(root, false) {
            Err(TrustError::NoStore { .. }) => return Ok(false),
            other => other?,
        }
        let path = self.record_path(root);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(TrustError::Write { path, source }),
        }
    }
}
