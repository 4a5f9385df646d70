//! The on-disk compile cache.
//!
//! # Why
//!
//! Cranelift compiles a tiny component in milliseconds and a CPython or
//! SpiderMonkey component in tens of seconds. A CLI invoked once per tool call
//! (`toolgate check`) cannot pay that every time, so compiled artifacts are
//! kept on disk and deserialized (tens of microseconds for a small component).
//!
//! # Key
//!
//! An entry is keyed by the BLAKE3 hash of the component's bytes, the wasmtime
//! version, and wasmtime's own compatibility hash of the engine configuration
//! (target, tunables, enabled features). Change any of them and the key
//! changes: a stale artifact is never looked up.
//!
//! # Trusted only after checking, like ssh's StrictModes
//!
//! `Component::deserialize_file` is `unsafe`: it maps the entry as native
//! code and runs it. Whoever can write an entry can run code as the user the
//! next time any hook loads. So an entry is used only when:
//!
//! - the cache directory is a real directory (not a symlink), owned by the
//!   current user, and not writable by group or others; its parent is owned
//!   by the user or root and not group/other-writable unless sticky (`/tmp`);
//! - the entry's two files (`<key>.cwasm`, the artifact, and `<key>.meta`)
//!   are regular files (opened without following symlinks), owned by the
//!   user, and not writable by group or others;
//! - the `.meta` names the key the entry is looked up under: an entry copied
//!   over another component's key is refused, not run for the wrong guest;
//! - the artifact's length matches, and its integrity digest matches.
//!
//! A directory that fails these checks is not used at all (nothing is read
//! from or written to it); an entry that fails the ownership checks is left
//! alone. Either way the component is compiled in memory (`uncached`) and
//! the hook's load carries a warning that `toolgate hooks` and every run
//! record show, saying what to fix. A corrupt, truncated, substituted or
//! incompatible entry in a trusted directory is deleted and recompiled
//! (`rebuilt`).
//!
//! # Integrity without reading the whole artifact
//!
//! A guest with a language runtime compiles to tens of MB; hashing all of it
//! on every load of a one-shot process costs more than the call. The digest
//! in `.meta` covers the whole artifact when it is at most
//! [`FULL_DIGEST_LIMIT`]; above that it covers the length, the first and last
//! 64 KiB (the object header and the section table, where wasmtime reads its
//! version and engine check) and 32 4-KiB blocks spread evenly through the
//! file. This detects truncation, a file swapped for another and most
//! corruption; it does not detect a flipped byte between samples. That is an
//! accepted gap, not a trust boundary: the ownership checks above are what
//! keep other users out, and a process running as the user could as well
//! edit the user's shell profile. The artifact is then mapped, not read
//! (`deserialize_file`).
//!
//! # Location
//!
//! Wherever the embedding program says (`WasmOptions::cache_dir`; the
//! `toolgate` binary uses `$TOOLGATE_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/toolgate/wasm`, else `~/.cache/toolgate/wasm`). With no
//! directory, or one that cannot be used, components are compiled in memory
//! each time (with a debug log), which is slower but correct.

use crate::compile::{Progress, compile_component, precompile};
use crate::safe_fs::{FileIdentity, OwnershipError};
use std::fs::File;
use std::hash::Hash;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"TGMETA02";
/// Artifacts up to this size are digested whole.
pub(crate) const FULL_DIGEST_LIMIT: u64 = 1 << 20;
const EDGE: u64 = 64 << 10;
const BLOCK: u64 = 4 << 10;
const BLOCKS: u64 = 32;

/// How a component was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheOutcome {
    /// Deserialized from a valid cache entry.
    Hit,
    /// Compiled and written to the cache.
    Miss,
    /// An entry existed but was corrupt or incompatible: deleted, recompiled.
    Rebuilt,
    /// Compiled without using the cache: no usable directory, or a
    /// directory or entry that failed the trust checks (see the load's
    /// warning).
    Uncached,
}

/// A component and how it was obtained.
pub(crate) struct ObtainedComponent {
    pub(crate) component: Component,
    pub(crate) outcome: CacheOutcome,
    /// For the operator: the cache was not trusted, or an entry was refused.
    pub(crate) warning: Option<String>,
}

/// Feeds `Hash` output into BLAKE3 so wasmtime's compatibility hash can be
/// part of a stable, collision-resistant key.
struct Blake3Hasher(blake3::Hasher);

impl std::hash::Hasher for Blake3Hasher {
    fn finish(&self) -> u64 {
        let bytes = self.0.finalize();
        u64::from_le_bytes(bytes.as_bytes()[..8].try_into().unwrap_or_default())
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

/// The cache key for `component_hash` under `engine`.
pub(crate) fn key(engine: &Engine, component_hash: &blake3::Hash) -> String {
    let mut h = Blake3Hasher(blake3::Hasher::new());
    h.0.update(component_hash.as_bytes());
    h.0.update(wasmtime_version().as_bytes());
    engine.precompile_compatibility_hash().hash(&mut h);
    h.0.finalize().to_hex().to_string()
}

/// The wasmtime version this build links.
pub fn wasmtime_version() -> &'static str {
    // Kept in step with Cargo.toml by the test `cache_key_names_the_linked_wasmtime`.
    "48.0.10"
}

/// The stat index: a component file's identity (device, inode, size, mtime
/// and ctime) recorded with its content hash, so a one-shot process finds
/// its cache entry without reading and hashing tens of MB of component on
/// every call. Sound because a user cannot set ctime: any write, rename
/// over or `touch` of the file changes it (or its inode), and the entry is
/// then simply not used. The identity recorded is the one the bytes were
/// read under (`safe_fs::read_identified`: taken from the descriptor before
/// reading, checked after), never a later `stat`: a file swapped in while
/// the component compiled would otherwise be recorded with the old
/// content's hash and answer with the old guard for as long as it stays.
/// An identity within [`RACY`] of the file's last change (or whose change is
/// ahead of the clock: its age cannot be told) is not recorded at
/// all (git's "racily clean" problem: a second write within the same clock
/// tick would keep the old stamp).
const STAT_MAGIC: &[u8; 8] = b"TGSTAT01";
const RACY: std::time::Duration = std::time::Duration::from_secs(2);

fn index_path(dir: &Path, canonical: &Path) -> PathBuf {
    let key = blake3::hash(canonical.as_os_str().as_encoded_bytes()).to_hex();
    dir.join(format!("{}.stat", &key[..32]))
}

/// The content hash of the component at `path`, if the stat index in `dir`
/// recorded it and the file has not changed since; with the identity it
/// was found under.
pub(crate) fn known_hash(dir: &Path, path: &Path) -> Option<(blake3::Hash, FileIdentity)> {
    trusted_dir(dir).ok()?;
    let canonical = path.canonicalize().ok()?;
    let identity = FileIdentity::of_path(&canonical)?;
    let (mut file, _) = open_owned(&index_path(dir, &canonical)).ok()?;
    let mut bytes = Vec::with_capacity(8 + 56 + 32);
    Read::by_ref(&mut file)
        .take(256)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() != 8 + 56 + 32 || &bytes[..8] != STAT_MAGIC {
        return None;
    }
    let recorded: Vec<i64> = bytes[8..64]
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
        .collect();
    if recorded != identity.words() {
        return None;
    }
    let hash: [u8; 32] = bytes[64..].try_into().ok()?;
    Some((blake3::Hash::from_bytes(hash), identity))
}

/// Records `hash` as the content of the component at `path` whose bytes
/// were read as `identity` (see [`known_hash`]), unless it changed too
/// recently to tell.
pub(crate) fn remember_hash(dir: &Path, path: &Path, identity: &FileIdentity, hash: &blake3::Hash) {
    let Ok(canonical) = path.canonicalize() else {
        return;
    };
    // Settled only when this clock shows the change at least RACY ago. A
    // change *ahead* of the clock (the wall clock jumped back since the
    // write, or the file's ctime came from a server whose clock is ahead)
    // has no age to tell: `duration_since` fails, and that is not "old
    // enough" — the file may have been written a moment ago, twice in one
    // tick. It was read as old enough before, recording a racy stamp (and
    // with it the first write's content hash) whenever the clock was behind.
    let settled = std::time::SystemTime::now()
        .duration_since(identity.changed_at())
        .is_ok_and(|age| age >= RACY);
    if !settled || trusted_dir(dir).is_err() {
        return;
    }
    let write = || -> std::io::Result<()> {
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        tmp.write_all(STAT_MAGIC)?;
        for n in identity.words() {
            tmp.write_all(&n.to_le_bytes())?;
        }
        tmp.write_all(hash.as_bytes())?;
        tmp.persist(index_path(dir, &canonical))
            .map_err(|e| e.error)?;
        Ok(())
    };
    if let Err(e) = write() {
        tracing::debug!(
            "could not record the stat index for {}: {e}",
            path.display()
        );
    }
}

/// A cache hit for the component whose content hash is `hash`, if there is
/// a trusted, intact entry; nothing is compiled or written.
pub(crate) fn load_hit(engine: &Engine, dir: &Path, hash: &blake3::Hash) -> Option<Component> {
    let key = key(engine, hash);
    let artifact = dir.join(format!("{key}.cwasm"));
    check_entry(&artifact, &dir.join(format!("{key}.meta")), &key).ok()?;
    // SAFETY: as in `use_entry`: the directory (checked by `known_hash`) and both
    // entry files passed the ownership and permission checks, the entry was
    // written for this key, and its length and digest match.
    #[allow(unsafe_code)]
    let mapped = unsafe { Component::deserialize_file(engine, &artifact) };
    mapped.ok()
}

/// Loads `bytes` as a component, through the cache in `dir` if given.
pub(crate) fn load(
    engine: &Engine,
    dir: Option<&Path>,
    bytes: &[u8],
    progress: Progress<'_>,
) -> wasmtime::Result<ObtainedComponent> {
    let compile = |outcome, warning| {
        Ok(ObtainedComponent {
            component: compile_component(engine, bytes, progress)?,
            outcome,
            warning,
        })
    };
    let Some(dir) = dir else {
        return compile(CacheOutcome::Uncached, None);
    };
    if let Err(reason) = trusted_dir(dir) {
        return compile(
            CacheOutcome::Uncached,
            Some(format!(
                "compile cache {} not used: {reason}; compiled in memory instead",
                dir.display()
            )),
        );
    }
    let key = key(engine, &blake3::hash(bytes));
    let artifact = dir.join(format!("{key}.cwasm"));
    let meta = dir.join(format!("{key}.meta"));
    let (outcome, warning) = match use_entry(engine, &artifact, &meta, &key) {
        EntryUse::Hit(component) => {
            return Ok(ObtainedComponent {
                component,
                outcome: CacheOutcome::Hit,
                warning: None,
            });
        }
        EntryUse::Untrusted(reason) => {
            return compile(
                CacheOutcome::Uncached,
                Some(format!(
                    "compile cache entry {} not used: {reason}; compiled in memory instead \
                     (remove the entry to let toolgate rewrite it)",
                    artifact.display()
                )),
            );
        }
        EntryUse::Compile(outcome, warning) => (outcome, warning),
    };
    Ok(ObtainedComponent {
        component: compile_and_map(engine, bytes, progress, (&artifact, &meta, &key))?,
        outcome,
        warning,
    })
}

/// Compiles `bytes` to the entry at `(artifact, meta, key)` and maps it.
///
/// Compiled to the artifact, written, and mapped back as a hit is: the
/// code is then file-backed (page cache, shared with every process that
/// maps the entry, reclaimable) instead of anonymous memory the process
/// holds for as long as the component is loaded. A server that compiled
/// six guests in memory held ~300 MiB of anonymous code and heap; from
/// their entries, the same guests map ~110 MiB of file pages.
fn compile_and_map(
    engine: &Engine,
    bytes: &[u8],
    progress: Progress<'_>,
    (artifact, meta, key): (&Path, &Path, &str),
) -> wasmtime::Result<Component> {
    let compiled = precompile(engine, bytes, progress)?;
    let written = store(artifact, meta, key, &compiled);
    drop(compiled);
    match written {
        Ok(()) => match use_entry(engine, artifact, meta, key) {
            EntryUse::Hit(component) => return Ok(component),
            EntryUse::Compile(..) | EntryUse::Untrusted(_) => {
                tracing::debug!(
                    "the entry just written at {} did not map",
                    artifact.display()
                );
            }
        },
        Err(e) => tracing::debug!("could not write cache entry {}: {e}", artifact.display()),
    }
    // Not written or not mapped (a full disk, say): compiled again, in
    // memory, as without a cache.
    compile_component(engine, bytes, None)
}

/// What the entry for a key is good for.
enum EntryUse {
    /// A trusted, intact entry, mapped.
    Hit(Component),
    /// None there (`Miss`), or one deleted as corrupt, substituted or
    /// incompatible (`Rebuilt`, with a warning when it was written for
    /// another component): compile and write it.
    Compile(CacheOutcome, Option<String>),
    /// One that failed an ownership or permission check: left alone.
    Untrusted(String),
}

/// Checks the entry at `artifact` and `meta` for `key` and maps it if it
/// passes; deletes it if it is corrupt or wasmtime refuses it.
fn use_entry(engine: &Engine, artifact: &Path, meta: &Path, key: &str) -> EntryUse {
    match check_entry(artifact, meta, key) {
        Ok(()) => {
            // SAFETY: the directory and both files passed the ownership and
            // permission checks (only this user could have written them), the
            // entry was written for this key (component hash, wasmtime
            // version, engine configuration), and its length and digest
            // match. wasmtime itself refuses an artifact from another version
            // or configuration with an error, handled below.
            // The crate's one `unsafe`: mapping a compiled artifact is how a
            // cache hit avoids recompiling, and the checks above are what
            // make it sound. `unsafe_code` is denied everywhere else.
            #[allow(unsafe_code)]
            let mapped = unsafe { Component::deserialize_file(engine, artifact) };
            match mapped {
                Ok(component) => return EntryUse::Hit(component),
                Err(e) => tracing::debug!("cache entry {} unusable: {e}", artifact.display()),
            }
            remove(artifact, meta);
            EntryUse::Compile(CacheOutcome::Rebuilt, None)
        }
        Err(Entry::Missing) => EntryUse::Compile(CacheOutcome::Miss, None),
        Err(Entry::Untrusted(reason)) => EntryUse::Untrusted(reason),
        Err(Entry::Corrupt(reason)) => {
            tracing::debug!("cache entry {} refused: {reason}", artifact.display());
            let warning = (reason == WRONG_KEY).then(|| {
                format!(
                    "compile cache entry {} was written for another component; refused and rebuilt",
                    artifact.display()
                )
            });
            remove(artifact, meta);
            EntryUse::Compile(CacheOutcome::Rebuilt, warning)
        }
    }
}

const WRONG_KEY: &str = "its metadata names another key";

enum Entry {
    Missing,
    /// Failed an ownership or permission check: left alone.
    Untrusted(String),
    /// Truncated, corrupted, or substituted: deleted and rebuilt.
    Corrupt(&'static str),
}

fn remove(artifact: &Path, meta: &Path) {
    let _ = std::fs::remove_file(meta);
    let _ = std::fs::remove_file(artifact);
}

/// Opens an entry file without following a symlink and checks it is a
/// regular file the user owns and only the user can write.
fn open_owned(path: &Path) -> Result<(File, std::fs::Metadata), Entry> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Entry::Missing,
            _ if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                Entry::Untrusted(format!("{} is a symlink", path.display()))
            }
            _ => Entry::Untrusted(format!("{} cannot be opened: {e}", path.display())),
        })?;
    let meta = file
        .metadata()
        .map_err(|e| Entry::Untrusted(format!("{}: {e}", path.display())))?;
    if !meta.file_type().is_file() {
        return Err(Entry::Untrusted(format!(
            "{} is not a regular file",
            path.display()
        )));
    }
    owned_and_private(&meta)
        .map_err(|why| Entry::Untrusted(format!("{} {why}", path.display())))?;
    Ok((file, meta))
}

/// Whether the file at `path` is there (`false`: missing), and when it is,
/// that it is a regular file (not followed through a symlink) the user owns
/// and only the user can write: the `oci/` area's files are used only then.
pub(super) fn owned_file(path: &Path) -> Result<bool, String> {
    match open_owned(path) {
        Ok(_) => Ok(true),
        Err(Entry::Missing) => Ok(false),
        Err(Entry::Untrusted(why)) => Err(why),
        Err(Entry::Corrupt(why)) => Err(why.to_owned()),
    }
}

/// The StrictModes rule for one file or directory: owned by the current
/// user, not writable by group or others.
fn owned_and_private(meta: &std::fs::Metadata) -> Result<(), OwnershipError> {
    crate::safe_fs::owned_by_me(meta, 0o022)
}

/// Why the cache directory is not used (it says "it": the warning names
/// the directory first).
#[derive(Debug, thiserror::Error)]
pub(super) enum CacheDirError {
    #[error("it cannot be created: {0}")]
    Create(std::io::Error),
    #[error("it cannot be read: {0}")]
    Stat(std::io::Error),
    #[error("it is a symlink (point TOOLGATE_CACHE_DIR at the real directory)")]
    Symlink,
    #[error("it is not a directory")]
    NotADirectory,
    #[error("it {0}")]
    NotPrivate(OwnershipError),
    #[error("its parent {0}, so another user could replace the cache directory")]
    ParentReplaceable(OwnershipError),
}

/// Creates the cache directory (0700) if needed, then applies the checks in
/// the module docs to it and its parent. The `oci/` area applies it to
/// each of its directories too.
pub(super) fn trusted_dir(dir: &Path) -> Result<(), CacheDirError> {
    use std::os::unix::fs::DirBuilderExt;
    if std::fs::symlink_metadata(dir).is_err() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(CacheDirError::Create)?;
    }
    let meta = std::fs::symlink_metadata(dir).map_err(CacheDirError::Stat)?;
    if meta.file_type().is_symlink() {
        return Err(CacheDirError::Symlink);
    }
    if !meta.is_dir() {
        return Err(CacheDirError::NotADirectory);
    }
    owned_and_private(&meta).map_err(CacheDirError::NotPrivate)?;
    let parent = std::path::absolute(dir)
        .ok()
        .and_then(|d| d.parent().map(Path::to_owned))
        .unwrap_or_else(|| PathBuf::from("/"));
    crate::safe_fs::owner_only(&parent, true).map_err(CacheDirError::ParentReplaceable)
}

fn check_entry(artifact: &Path, meta_path: &Path, key: &str) -> Result<(), Entry> {
    let (mut meta_file, _) = open_owned(meta_path)?;
    let (art_file, art_meta) = match open_owned(artifact) {
        Ok(opened) => opened,
        Err(Entry::Missing) => return Err(Entry::Corrupt("the artifact is missing")),
        Err(other) => return Err(other),
    };
    let mut header = Vec::with_capacity(MAGIC.len() + 64 + 8 + 32);
    Read::by_ref(&mut meta_file)
        .take(1024)
        .read_to_end(&mut header)
        .map_err(|_| Entry::Corrupt("the metadata cannot be read"))?;
    if header.len() != MAGIC.len() + 64 + 8 + 32 || &header[..MAGIC.len()] != MAGIC {
        return Err(Entry::Corrupt("the metadata is not toolgate's"));
    }
    let (stored_key, rest) = header[MAGIC.len()..].split_at(64);
    if stored_key != key.as_bytes() {
        return Err(Entry::Corrupt(WRONG_KEY));
    }
    let (len, digest) = rest.split_at(8);
    let len = u64::from_le_bytes(len.try_into().unwrap_or_default());
    if art_meta.len() != len {
        return Err(Entry::Corrupt("the artifact's length does not match"));
    }
    match digest_of(&art_file, len) {
        Ok(d) if d.as_bytes() == digest => Ok(()),
        _ => Err(Entry::Corrupt("the artifact's digest does not match")),
    }
}

/// The integrity digest described in the module docs, over an artifact of
/// `len` bytes whose ranges `read(offset, n)` returns.
fn digest(
    len: u64,
    mut read: impl FnMut(u64, u64) -> std::io::Result<Vec<u8>>,
) -> std::io::Result<blake3::Hash> {
    let mut h = blake3::Hasher::new();
    h.update(&len.to_le_bytes());
    let mut take = |offset: u64, n: u64| -> std::io::Result<()> {
        h.update(&read(offset, n)?);
        Ok(())
    };
    if len <= FULL_DIGEST_LIMIT {
        take(0, len)?;
    } else {
        take(0, EDGE)?;
        let stride = (len - 2 * EDGE) / (BLOCKS + 1);
        for i in 1..=BLOCKS {
            take(EDGE + i * stride, BLOCK.min(len - EDGE - i * stride))?;
        }
        take(len - EDGE, EDGE)?;
    }
    Ok(h.finalize())
}

/// [`digest`] of an entry on disk, reading only the sampled ranges.
fn digest_of(file: &File, len: u64) -> std::io::Result<blake3::Hash> {
    use std::os::unix::fs::FileExt;
    digest(len, |offset, n| {
        let mut buf = vec![0u8; usize::try_from(n).unwrap_or(0)];
        file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    })
}

/// Writes the artifact, then its metadata, each to a private temporary file
/// renamed into place: a reader never sees half a file, and finds the
/// metadata only once the artifact it describes is complete.
fn store(
    artifact_path: &Path,
    meta_path: &Path,
    key: &str,
    artifact: &[u8],
) -> std::io::Result<()> {
    let dir = artifact_path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(artifact)?;
    tmp.as_file().sync_data()?;
    let len = artifact.len() as u64;
    // Over the bytes in hand: the same ranges a reader samples from disk.
    let digest = digest(len, |offset, n| {
        let (from, to) = (offset as usize, (offset + n) as usize);
        Ok(artifact[from..to].to_vec())
    })?;
    tmp.persist(artifact_path).map_err(|e| e.error)?;
    let mut meta = tempfile::NamedTempFile::new_in(dir)?;
    meta.write_all(MAGIC)?;
    meta.write_all(key.as_bytes())?;
    meta.write_all(&len.to_le_bytes())?;
    meta.write_all(digest.as_bytes())?;
    meta.as_file().sync_data()?;
    meta.persist(meta_path).map_err(|e| e.error)?;
    Ok(())
}
