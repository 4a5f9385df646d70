//! Workspace trust: a repository's commands run only after the user pinned
//! exactly what runs.
//!
//! # Why a gate, and what it pins
//!
//! A workspace's `.toolgate/hooks.json` is repository data. Without a gate,
//! cloning a repository and letting an agent make one tool call runs
//! programs the repository chose. So a workspace `command` hook runs only
//! when the user has reviewed and recorded ([`TrustStore`]) exactly this:
//!
//! - the workspace's canonical root (a moved workspace is a new one: direnv
//!   had to add the path to its hash after trusting content alone);
//! - the hooks.json bytes (any edit revokes every command hook's trust);
//! - per command hook: its argv, read closed-world (`closed`): toolgate
//!   names every workspace file the command executes or loads as code, or
//!   refuses the hook at review time, saying what it could not see. Codex
//!   and Gemini CLI pin the command line only, which misses the payload:
//!   `python3 hook.py` stays the same string while hook.py changes; and the
//!   first version of this gate pinned a *guess* of the script by skipping
//!   options, which the repository could steer (issue 21);
//! - the tree the hook's code runs from (`snapshot`): the folder of its
//!   script or program, recursively, and its `trust_files`, every file by
//!   content digest;
//! - the interpreter outside the workspace (`python3` on `PATH`) by resolved
//!   path, not bytes (pinning a system binary's bytes churns on every
//!   upgrade), and only when neither it nor its directory can be written by
//!   anyone but their owner (root or the user);
//! - wasm hooks by component digest, for the review only: they are sandboxed
//!   and can only decide, so they run without trust.
//!
//! What is **not** pinned: what a trusted hook reads from the workspace as
//! data (including a path it opens relative to its working directory).
//! SECURITY.md says so too.
//!
//! # Where trust lives, and who can grant it
//!
//! In the user's state directory, 0700 with 0600 records, checked like ssh's
//! StrictModes and refused otherwise (a refused store trusts nothing). The
//! library takes the store as an option ([`crate::config::Loader::trust`]);
//! the binary uses `$XDG_STATE_HOME/toolgate/trust`. A workspace config can
//! neither name the store nor choose what happens to untrusted hooks (both
//! are refused fields there), and a store inside the workspace being judged
//! is refused: git reads `safe.directory` only from protected config for
//! the same reason.
//!
//! # When trust is missing or stale
//!
//! The hook never runs. By default the call is **denied** with a reason that
//! says what to run (`toolgate trust --workspace …`); the operator's global
//! config may say `"untrusted_hooks": "skip"`, and then the run record says
//! it was skipped and why (never a silent skip: that is the most common
//! complaint about Codex's trust). Global hooks and in-process interceptors
//! are the operator's and host's own and need no trust.
//!
//! # The pinned bytes are what runs
//!
//! A trusted hook runs from a private, read-only, content-addressed copy of
//! its tree, made from exactly the bytes that were hashed (`snapshot`), with
//! the workspace root as its working directory: an edit after trust, or
//! during a call, changes the workspace, not what runs. The first version
//! verified the files in place just before each spawn and let the
//! interpreter open them by path; a rename loop won 6–12 of 40 calls in that
//! window here (the interpreter's start-up is in it: SECURITY.md §12). A copy of one file
//! breaks sibling imports and script-relative paths; a copy of the tree does
//! not. The pin is still computed again before each spawn, so an edit is
//! reported (and the hook denied) at the next call rather than silently
//! ignored.
//!
//! # Confined
//!
//! A trusted hook is still a repository's program: it runs confined
//! (`binding::command::confine`: Landlock, no network, writes only to a
//! scratch folder, a scrubbed environment) unless the operator's global
//! config relaxes it; `require_confinement` refuses it where the kernel
//! cannot confine.

mod admit;
mod closed;
mod gate;
mod pin;
mod snapshot;
mod store;

pub use pin::{FilePin, HookPin, Role};
pub use snapshot::{MAX_TREE_BYTES, MAX_TREE_FILES};
pub(crate) use store::parse_record;
pub use store::{Kept, MAX_KEPT_TEXT, Record, TrustStore};

pub(crate) use admit::{Admission, Unconfinable, confine_global, difference, run_from_snapshot};
pub(crate) use closed::interpreter_script;
pub(crate) use gate::{Gate, guard};
pub(crate) use pin::{Pinning, pin_of};

/// Whether this kernel can confine command hooks (Landlock ABI 6 or newer),
/// or why not.
pub fn confinement_available() -> Result<(), ConfinementUnavailable> {
    crate::binding::command::confine::available()
        .map_err(|e| ConfinementUnavailable(Unconfinable::Kernel(e)))
}

/// Why this kernel cannot confine command hooks.
#[derive(Clone, Debug, thiserror::Error)]
#[error(transparent)]
pub struct ConfinementUnavailable(Unconfinable);

/// How the operator's global config confines workspace hooks.
#[derive(Clone, Debug)]
pub(crate) struct Confinement {
    /// `require_confinement`.
    pub(crate) required: bool,
    /// `unconfined_workspace_hooks`: (canonical root, hook name).
    pub(crate) unconfined: Vec<(PathBuf, String)>,
    /// `confined_reads`: what a confined hook may also read.
    pub(crate) reads: Vec<PathBuf>,
    /// `confined_env`: what is set in a confined hook's environment.
    pub(crate) env: Vec<(String, String)>,
}

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What happens to a workspace command hook that is not trusted: the
/// operator's choice (`untrusted_hooks` in the global config).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    strum::Display,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum UntrustedPolicy {
    /// The calls it applies to are denied, with what to run (the default:
    /// fail closed, never silent).
    #[default]
    Deny,
    /// It is not run; its run record says so and why.
    Skip,
}

/// A workspace hook's standing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TrustState {
    /// A command hook that matches what the user trusted.
    Trusted,
    /// A command hook that does not; it will not run.
    Untrusted {
        /// Why, in words.
        reason: String,
        /// What its calls get instead.
        policy: UntrustedPolicy,
    },
    /// A wasm hook: sandboxed, it runs without trust.
    Sandboxed,
}

/// Everything the user reviews and records for one workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The workspace's canonical root.
    pub workspace: PathBuf,
    /// The digest of its hooks.json bytes.
    pub config: String,
    /// Each hook, in file order.
    pub hooks: Vec<HookPin>,
}

impl Manifest {
    /// The digest the user confirms (`toolgate trust --yes DIGEST`).
    pub fn digest(&self) -> String {
        let bytes = serde_json::to_vec(self).unwrap_or_default();
        format!("blake3:{}", blake3::hash(&bytes).to_hex())
    }
}

/// Why trust could not be read, reviewed or recorded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrustError {
    /// The store directory is not the user's own and private.
    #[error("the trust store {}: {why}", dir.display())]
    Store {
        /// The directory.
        dir: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// No store exists yet (nothing was ever trusted).
    #[error("the trust store {} does not exist", dir.display())]
    NoStore {
        /// The directory.
        dir: PathBuf,
    },
    /// A record is unusable.
    #[error("the trust record {}: {why}", path.display())]
    Record {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A record could not be written or removed.
    #[error("writing the trust record {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The workspace has no hooks.json.
    #[error("{} has no .toolgate/hooks.json", workspace.display())]
    NoConfig {
        /// The workspace.
        workspace: PathBuf,
    },
    /// Some hook cannot be pinned (a program others can write).
    #[error("these hooks cannot be trusted:\n  {}", problems.join("\n  "))]
    Unpinnable {
        /// One line per hook.
        problems: Vec<String>,
    },
    /// The digest confirmed is not the digest of what is there now.
    #[error(
        "the workspace's digest is {actual}, not {expected}: what is there is not what \
         was reviewed; review it again"
    )]
    DigestMismatch {
        /// What the caller confirmed.
        expected: String,
        /// What the workspace has now.
        actual: String,
    },
}

/// What the loader needs to judge a workspace's hooks.
#[derive(Clone, Debug, Default)]
pub(crate) struct TrustCtx {
    pub(crate) store: Option<TrustStore>,
    pub(crate) search_path: Option<std::ffi::OsString>,
    /// Set by the host: treat this kernel as having no Landlock, for this
    /// reason (the binary's tests of the no-Landlock path).
    pub(crate) no_landlock: Option<String>,
}

impl TrustCtx {
    /// Whether hooks can be confined here, or why not.
    pub(crate) fn confinement(&self) -> Result<(), Unconfinable> {
        match &self.no_landlock {
            Some(why) => Err(Unconfinable::Declared(why.clone())),
            None => crate::binding::command::confine::available().map_err(Unconfinable::Kernel),
        }
    }
}

/// The canonical form of a workspace root (as given, when it cannot be
/// resolved).
pub(crate) fn canonical_root(root: &Path) -> PathBuf {
    root.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(root).unwrap_or_else(|_| root.to_owned()))
}

/// One hook's part in a review.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Change {
    /// Not in the previous record (or there is none).
    New,
    /// Different from the previous record: what differs.
    Changed {
        /// In words.
        what: String,
    },
    /// As recorded.
    Same,
}

/// What `toolgate trust` shows before asking.
#[derive(Clone, Debug, Serialize)]
pub struct Review {
    /// What would be recorded.
    pub manifest: Manifest,
    /// Its digest: what `--yes` must repeat.
    pub digest: String,
    /// Each hook in the manifest against the previous record.
    pub changes: Vec<Change>,
    /// For each hook in the manifest: whether it runs only when trusted
    /// (its binding says so: a command does, a component does not).
    pub needs_trust: Vec<bool>,
    /// Hooks in the previous record that are gone.
    pub removed: Vec<String>,
    /// Whether the hooks.json bytes differ from the previous record.
    pub config_changed: bool,
    /// The previous record, if any.
    pub previous: Option<Record>,
    /// Why the previous record could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_problem: Option<String>,
    /// What is kept now of the files it pins (hooks.json and each file
    /// with a digest), by digest: recorded with it, and the "after" of a
    /// diff against [`Record::kept`].
    #[serde(skip)]
    pub kept: std::collections::BTreeMap<String, Kept>,
}

impl Review {
    /// Records this review as trusted, if `expected` is its digest.
    pub fn record(&self, store: &TrustStore, expected: &str) -> Result<PathBuf, TrustError> {
        if expected != self.digest {
            return Err(TrustError::DigestMismatch {
                expected: expected.to_owned(),
                actual: self.digest.clone(),
            });
        }
        store.write(&self.manifest, &self.kept)
    }
}

/// Forgets a workspace. Returns whether it had been trusted.
pub fn revoke(workspace: &Path, store: &TrustStore) -> Result<bool, TrustError> {
    store.remove(&canonical_root(workspace))
}

#[cfg(test)]
mod tests;
