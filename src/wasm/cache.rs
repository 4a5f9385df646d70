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
//! # Never trusted blindly
//!
//! `Component::deserialize` is `unsafe`: it maps the bytes as native code. An
//! entry is a header (magic, BLAKE3 of the payload) followed by wasmtime's
//! artifact. On load the hash is checked before deserializing; a truncated,
//! corrupted or foreign file is deleted and the component recompiled. Entries
//! are written to a temporary file and renamed into place, so a concurrent
//! reader never sees half a file. The checksum detects corruption, not a
//! deliberate forgery: the cache directory is trusted like the toolgate binary
//! itself, and is created private (0700).
//!
//! # Location
//!
//! `$TOOLGATE_CACHE_DIR`, else `$XDG_CACHE_HOME/toolgate/wasm`, else
//! `~/.cache/toolgate/wasm`. If no directory can be used, components are
//! compiled in memory each time (with a debug log), which is slower but
//! correct.

use std::hash::Hash;
use std::io::Write;
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

const MAGIC: &[u8; 8] = b"TGWASM01";
const HEADER: usize = MAGIC.len() + 32;

/// Where the cache lives, per the module docs.
pub fn default_dir() -> Option<PathBuf> {
    let non_empty = crate::config::env_dir;
    non_empty("TOOLGATE_CACHE_DIR")
        .or_else(|| non_empty("XDG_CACHE_HOME").map(|d| d.join("toolgate").join("wasm")))
        .or_else(|| non_empty("HOME").map(|h| h.join(".cache").join("toolgate").join("wasm")))
}

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
    /// Compiled without a usable cache directory.
    Uncached,
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
    "48.0.8"
}

/// Loads `bytes` as a component, through the cache in `dir` if given.
pub(crate) fn load(
    engine: &Engine,
    dir: Option<&Path>,
    bytes: &[u8],
) -> wasmtime::Result<(Component, CacheOutcome)> {
    let hash = blake3::hash(bytes);
    let Some(dir) = dir.filter(|d| ensure_dir(d)) else {
        return Ok((Component::new(engine, bytes)?, CacheOutcome::Uncached));
    };
    let path = dir.join(format!("{}.cwasm", key(engine, &hash)));
    let mut outcome = CacheOutcome::Miss;
    if let Ok(entry) = std::fs::read(&path) {
        match verify(&entry) {
            Some(artifact) => {
                // SAFETY: the artifact is one this process's wasmtime wrote for
                // an engine with this exact configuration (the key says so) and
                // its checksum matches, so it is not truncated or corrupted.
                // wasmtime itself rejects artifacts from another version or
                // configuration with an error, handled below.
                match unsafe { Component::deserialize(engine, artifact) } {
                    Ok(component) => return Ok((component, CacheOutcome::Hit)),
                    Err(e) => tracing::debug!("cache entry {} unusable: {e}", path.display()),
                }
            }
            None => tracing::debug!("cache entry {} is corrupt", path.display()),
        }
        let _ = std::fs::remove_file(&path);
        outcome = CacheOutcome::Rebuilt;
    }
    let component = Component::new(engine, bytes)?;
    if let Err(e) = store(&path, &component.serialize()?) {
        tracing::debug!("could not write cache entry {}: {e}", path.display());
    }
    Ok((component, outcome))
}

fn verify(entry: &[u8]) -> Option<&[u8]> {
    if entry.len() < HEADER || &entry[..MAGIC.len()] != MAGIC {
        return None;
    }
    let (header, artifact) = entry.split_at(HEADER);
    let expected = &header[MAGIC.len()..];
    (blake3::hash(artifact).as_bytes() == expected).then_some(artifact)
}

fn store(path: &Path, artifact: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(MAGIC)?;
    tmp.write_all(blake3::hash(artifact).as_bytes())?;
    tmp.write_all(artifact)?;
    tmp.as_file().sync_data()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn ensure_dir(dir: &Path) -> bool {
    use std::os::unix::fs::DirBuilderExt;
    if dir.is_dir() {
        return true;
    }
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(
                "compile cache disabled: cannot create {}: {e}",
                dir.display()
            );
            false
        }
    }
}
