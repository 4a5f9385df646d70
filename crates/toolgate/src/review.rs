//! Reviewing a workspace for trust: what `toolgate trust` shows and records.
//!
//! # Why here, above the loader
//!
//! A review reads a loaded [`Config`] (the workspace's hooks, as the loader
//! parsed them) and asks each hook's binding what it pins. The trust layer
//! sits below the loader (the loader calls its gate), so the review, which
//! needs both, is application code: the data it produces ([`Review`],
//! [`Manifest`](crate::trust::Manifest)) stays in `trust`.

use crate::contract::Source;
use crate::trust::{
    Change, HookPin, Kept, MAX_KEPT_TEXT, Manifest, Record, Review, TrustError, TrustStore,
    difference, pin_of,
};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

impl Review {
    /// Reviews the workspace whose config `config` is (loaded with
    /// [`crate::config::Loader::workspace`]), against `store`.
    pub fn of(
        config: &crate::Config,
        store: &TrustStore,
        search_path: Option<&OsStr>,
    ) -> Result<Review, TrustError> {
        let (root, config_digest) = match config.workspace_config() {
            Some((root, Some(digest))) => (root.to_owned(), digest.to_owned()),
            Some((root, None)) => {
                return Err(TrustError::NoConfig {
                    workspace: root.to_owned(),
                });
            }
            None => {
                return Err(TrustError::NoConfig {
                    workspace: PathBuf::from("(no workspace)"),
                });
            }
        };
        let (hooks, needs_trust) = pin_each(config, &root, search_path)?;
        let manifest = Manifest {
            workspace: root.clone(),
            config: config_digest,
            hooks,
        };
        let (previous, store_problem) = match store.read(&root) {
            Ok(previous) => (previous, None),
            Err(e) => (None, Some(crate::text::error_chain(&e))),
        };
        let changes = changes(&manifest, previous.as_ref());
        let removed = previous
            .iter()
            .flat_map(|r| &r.manifest.hooks)
            .filter(|p| !manifest.hooks.iter().any(|h| h.name == p.name))
            .map(|p| p.name.clone())
            .collect();
        let config_changed = previous
            .as_ref()
            .is_some_and(|r| r.manifest.config != manifest.config);
        let kept = kept(&manifest);
        Ok(Review {
            digest: manifest.digest(),
            manifest,
            changes,
            needs_trust,
            removed,
            config_changed,
            previous,
            store_problem,
            kept,
        })
    }
}

/// What a record keeps of the files `manifest` pins (hooks.json, and each
/// file pinned by digest), read now and kept only if they still hash to
/// what was pinned: the review shows these, and a record keeps them so the
/// next review can show a diff.
fn kept(manifest: &Manifest) -> BTreeMap<String, Kept> {
    let mut kept = BTreeMap::new();
    let config = manifest.workspace.join(crate::config::WORKSPACE_FILE);
    keep(&config, &manifest.config, &mut kept);
    for file in manifest.hooks.iter().flat_map(|h| &h.files) {
        if let (Some(path), Some(digest)) = (&file.path, &file.digest) {
            keep(path, digest, &mut kept);
        }
    }
    kept
}

fn keep(path: &Path, digest: &str, kept: &mut BTreeMap<String, Kept>) {
    if kept.contains_key(digest) {
        return;
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return;
    };
    if meta.len() > MAX_KEPT_TEXT {
        let size = meta.len();
        kept.insert(digest.to_owned(), Kept { size, text: None });
        return;
    }
    if let Ok((bytes, _)) = crate::safe_fs::read_identified(path, MAX_KEPT_TEXT)
        && format!("blake3:{}", blake3::hash(&bytes).to_hex()) == digest
    {
        kept.insert(digest.to_owned(), Kept::of(&bytes));
    }
}

/// Each workspace hook's pin, and whether it needs trust (its binding
/// says; nothing here infers it); every hook that cannot be pinned, at once.
fn pin_each(
    config: &crate::Config,
    root: &Path,
    search_path: Option<&OsStr>,
) -> Result<(Vec<HookPin>, Vec<bool>), TrustError> {
    let mut hooks = Vec::new();
    let mut problems = Vec::new();
    let mut needs_trust = Vec::new();
    for hook in config
        .hooks()
        .iter()
        .filter(|h| h.source == Source::Workspace)
    {
        match pin_of(&hook.name, hook.binding.as_binding(), root, search_path) {
            Ok((pin, needs)) => {
                hooks.push(pin);
                needs_trust.push(needs);
            }
            Err(why) => problems.push(format!("{}: {why}", hook.name)),
        }
    }
    if problems.is_empty() {
        Ok((hooks, needs_trust))
    } else {
        Err(TrustError::Unpinnable { problems })
    }
}

/// Each hook of `manifest` against the previous record.
fn changes(manifest: &Manifest, previous: Option<&Record>) -> Vec<Change> {
    manifest
        .hooks
        .iter()
        .map(|now| {
            let before =
                previous.and_then(|r| r.manifest.hooks.iter().find(|p| p.name == now.name));
            match before {
                None => Change::New,
                Some(before) => match difference(before, now) {
                    None => Change::Same,
                    Some(what) => Change::Changed { what },
                },
            }
        })
        .collect()
}
