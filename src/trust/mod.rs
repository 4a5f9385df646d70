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

mod closed;
mod pin;
mod snapshot;
mod store;

pub use pin::{FilePin, HookPin, Role};
pub use snapshot::{MAX_TREE_BYTES, MAX_TREE_FILES};
pub use store::{Record, TrustStore};

pub(crate) use pin::CommandInputs;

/// Whether this kernel can confine command hooks (Landlock ABI 6 or newer),
/// or why not.
pub fn confinement_available() -> Result<(), String> {
    crate::binding::command::confine::available().map_err(|e| e.to_string())
}

/// How the operator's global config confines workspace hooks.
#[derive(Debug)]
pub(crate) struct Confinement<'a> {
    /// `require_confinement`.
    pub(crate) required: bool,
    /// `unconfined_workspace_hooks`: (canonical root, hook name).
    pub(crate) unconfined: &'a [(PathBuf, String)],
}

use crate::binding::BindingSpec;
use crate::config::HookSpec;
use serde::{Deserialize, Serialize};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
    /// The workspace's config does not load.
    #[error("the workspace config does not load")]
    Config(#[source] crate::ConfigError),
    /// The workspace has no hooks.json.
    #[error("{} has no {}", workspace.display(), crate::config::WORKSPACE_FILE)]
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
    pub(crate) fn confinement(&self) -> Result<(), String> {
        match &self.no_landlock {
            Some(why) => Err(why.clone()),
            None => confinement_available(),
        }
    }
}

/// The canonical form of a workspace root (as given, when it cannot be
/// resolved).
pub(crate) fn canonical_root(root: &Path) -> PathBuf {
    root.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(root).unwrap_or_else(|_| root.to_owned()))
}

/// Judges a workspace's freshly loaded hooks: each command hook gets its
/// [`TrustState`] and a gate that checks the pin again before every call;
/// each wasm hook is marked sandboxed. Returns the trust record it
/// consulted, if any, with the identity of what it read there.
pub(crate) fn admit(
    hooks: &mut [HookSpec],
    config_digest: &str,
    root: &Path,
    ctx: &TrustCtx,
    policy: UntrustedPolicy,
    confinement: &Confinement<'_>,
) -> Option<(PathBuf, Option<crate::safe_fs::FileIdentity>)> {
    if !hooks
        .iter()
        .any(|h| matches!(h.binding, BindingSpec::Subprocess(_)))
    {
        for hook in hooks.iter_mut() {
            hook.trust = Some(TrustState::Sandboxed);
        }
        return None;
    }
    let mut consulted = None;
    let record = match &ctx.store {
        None => Err("no trust store was configured by the program embedding toolgate".to_owned()),
        Some(store) => {
            let (read, identity) = store.read_identified(root);
            consulted = Some((store.record_path(root), identity));
            match read {
                Ok(Some(record)) => Ok(record),
                Ok(None) => Err("never trusted on this machine".to_owned()),
                Err(e) => Err(crate::text::error_chain(&e)),
            }
        }
    };
    for hook in hooks.iter_mut() {
        let BindingSpec::Subprocess(spec) = &mut hook.binding else {
            hook.trust = Some(TrustState::Sandboxed);
            continue;
        };
        let inputs = CommandInputs::of(spec, &hook.name, root, ctx.search_path.as_deref());
        // A hook that cannot be pinned says so first: trusting it would not help.
        let judged = inputs.pin().and_then(|pinned| {
            let now = &pinned.pin;
            let record = record.as_ref().map_err(Clone::clone)?;
            if record.manifest.config != config_digest {
                return Err("hooks.json changed since it was trusted".to_owned());
            }
            let trusted = record
                .manifest
                .hooks
                .iter()
                .find(|p| p.name == hook.name)
                .ok_or_else(|| "not among the hooks that were trusted".to_owned())?;
            if let Some(what) = difference(trusted, now) {
                return Err(what);
            }
            // Run from a private copy of exactly the bytes trusted: the
            // copy is hashed as it is made.
            let store = ctx
                .store
                .as_ref()
                .ok_or_else(|| "no trust store".to_owned())?;
            let base = snapshot::materialize(&store.snapshot_dir(), root, &pinned.entries)
                .map_err(|e| e.to_string())?;
            Ok((pinned, base))
        });
        let (state, check) = match judged {
            Ok((pinned, base)) => {
                // Spawn what was pinned: the interpreter from the path it
                // was found at (no later `PATH` lookup), the code from the
                // snapshot.
                spec.run = Some(pinned.launch.command(&base));
                let unconfined = confinement
                    .unconfined
                    .iter()
                    .any(|(ws, name)| ws == root && *name == hook.name);
                spec.sandbox = Some(sandbox(ctx, root, !unconfined, confinement.required));
                let check = match (ctx.confinement(), unconfined, confinement.required) {
                    // It would run unconfined and the operator said it must
                    // not: deny its calls, whatever its `on_failure`.
                    (Err(why), false, true) => Check::Unconfinable(why),
                    // Confined; or relaxed by the operator; or unconfinable
                    // and allowed to run so (each run record says so).
                    (Ok(()), _, _) | (Err(_), true, _) | (Err(_), false, false) => {
                        Check::Verify(Box::new((inputs, pinned.pin)))
                    }
                };
                (TrustState::Trusted, check)
            }
            Err(reason) => (
                TrustState::Untrusted {
                    reason: reason.clone(),
                    policy,
                },
                Check::Refuse(reason),
            ),
        };
        hook.trust = Some(state);
        hook.gate = Some(Arc::new(Gate {
            policy,
            hook: hook.name.clone(),
            root: root.to_owned(),
            check,
        }));
    }
    consulted
}

/// Confines the global command hooks whose config asks (`"confine": true`):
/// the operator's own hooks run unconfined unless they say so.
pub(crate) fn confine_global(hooks: &mut [HookSpec], ctx: &TrustCtx, required: bool) {
    for hook in hooks {
        match &mut hook.binding {
            BindingSpec::Subprocess(spec) if spec.confine => {
                spec.sandbox = Some(sandbox(ctx, Path::new("/nonexistent"), true, required));
            }
            BindingSpec::Subprocess(_) | BindingSpec::Wasm(_) => {}
        }
    }
}

/// A command hook's sandbox (see `binding::command::confine`): `PATH`
/// without empty, relative or `root` entries; scratch folders in the trust
/// store.
fn sandbox(
    ctx: &TrustCtx,
    root: &Path,
    landlock: bool,
    required: bool,
) -> crate::binding::command::confine::Sandbox {
    crate::binding::command::confine::Sandbox {
        path: pin::sanitized_path(ctx.search_path.as_deref(), root)
            .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        scratch: ctx
            .store
            .as_ref()
            .map(TrustStore::scratch_dir)
            .unwrap_or_else(std::env::temp_dir),
        landlock,
        required,
        unavailable: ctx.no_landlock.clone(),
    }
}

/// What differs between a trusted pin and today's, in words; `None` when
/// they are the same.
fn difference(trusted: &HookPin, now: &HookPin) -> Option<String> {
    if trusted == now {
        return None;
    }
    if trusted.argv != now.argv || trusted.binding != now.binding {
        return Some("its command changed since it was trusted".into());
    }
    for file in &now.files {
        let before = trusted
            .files
            .iter()
            .find(|f| f.role == file.role && f.written == file.written);
        match before {
            None => return Some(format!("{} {} is new", file.role, file.written)),
            Some(b) if b.path != file.path || b.target != file.target => {
                let now = file
                    .path
                    .as_ref()
                    .map_or("nothing".into(), |p| p.display().to_string());
                return Some(format!(
                    "{} {} now resolves to {now}, not to what was trusted",
                    file.role, file.written
                ));
            }
            Some(b) if b.digest != file.digest => {
                return Some(format!(
                    "{} {} changed since it was trusted",
                    file.role, file.written
                ));
            }
            Some(_) => {}
        }
    }
    Some("what it runs changed since it was trusted".into())
}

/// Stands before one workspace command hook: refuses it, or checks its pin
/// again just before each call.
pub(crate) struct Gate {
    policy: UntrustedPolicy,
    hook: String,
    root: PathBuf,
    check: Check,
}

enum Check {
    Refuse(String),
    Verify(Box<(CommandInputs, HookPin)>),
    /// Trusted, but it cannot be confined here and the operator requires it.
    Unconfinable(String),
}

/// A hook the gate stopped.
pub(crate) struct Refusal {
    pub(crate) policy: UntrustedPolicy,
    /// For the model (a deny) or the run record (a skip).
    pub(crate) reason: String,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("hook", &self.hook)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Gate {
    /// `Ok` when the hook may run now.
    pub(crate) fn admit(&self) -> Result<(), Refusal> {
        let why = match &self.check {
            Check::Unconfinable(why) => {
                return Err(Refusal {
                    policy: UntrustedPolicy::Deny,
                    reason: format!(
                        "toolgate: workspace hook `{}` cannot run confined here ({why}) and the \
                         global config sets require_confinement, so this call is blocked",
                        self.hook
                    ),
                });
            }
            Check::Refuse(why) => why.clone(),
            Check::Verify(pinned) => match pinned.0.pin() {
                Ok(now) => match difference(&pinned.1, &now.pin) {
                    None => return Ok(()),
                    Some(why) => why,
                },
                Err(why) => why,
            },
        };
        let command = format!("toolgate trust --workspace {}", shell_word(&self.root));
        let reason = match self.policy {
            UntrustedPolicy::Deny => format!(
                "toolgate: workspace hook `{}` is not trusted ({why}), so this call is blocked. \
                 A person must review it and run: {command}",
                self.hook
            ),
            UntrustedPolicy::Skip => {
                format!("not run: workspace hook not trusted ({why}); review it with: {command}")
            }
        };
        Err(Refusal {
            policy: self.policy,
            reason,
        })
    }
}

/// `path` as one shell word.
fn shell_word(path: &Path) -> String {
    let s = path.display().to_string();
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%".contains(c))
    {
        s
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
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
    /// Hooks in the previous record that are gone.
    pub removed: Vec<String>,
    /// Whether the hooks.json bytes differ from the previous record.
    pub config_changed: bool,
    /// The previous record, if any.
    pub previous: Option<Record>,
    /// Why the previous record could not be read, if it could not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store_problem: Option<String>,
}

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
        let mut hooks = Vec::new();
        let mut problems = Vec::new();
        for hook in config
            .hooks()
            .iter()
            .filter(|h| h.source == crate::Source::Workspace)
        {
            match pin::pin_hook(hook, &root, search_path) {
                Ok(pin) => hooks.push(pin),
                Err(why) => problems.push(format!("{}: {why}", hook.name)),
            }
        }
        if !problems.is_empty() {
            return Err(TrustError::Unpinnable { problems });
        }
        let manifest = Manifest {
            workspace: root.clone(),
            config: config_digest,
            hooks,
        };
        let (previous, store_problem) = match store.read(&root) {
            Ok(previous) => (previous, None),
            Err(e) => (None, Some(crate::text::error_chain(&e))),
        };
        let changes = manifest
            .hooks
            .iter()
            .map(|now| {
                let before = previous
                    .as_ref()
                    .and_then(|r| r.manifest.hooks.iter().find(|p| p.name == now.name));
                match before {
                    None => Change::New,
                    Some(before) => match difference(before, now) {
                        None => Change::Same,
                        Some(what) => Change::Changed { what },
                    },
                }
            })
            .collect();
        let removed = previous
            .iter()
            .flat_map(|r| &r.manifest.hooks)
            .filter(|p| !manifest.hooks.iter().any(|h| h.name == p.name))
            .map(|p| p.name.clone())
            .collect();
        let config_changed = previous
            .as_ref()
            .is_some_and(|r| r.manifest.config != manifest.config);
        Ok(Review {
            digest: manifest.digest(),
            manifest,
            changes,
            removed,
            config_changed,
            previous,
            store_problem,
        })
    }

    /// Records this review as trusted, if `expected` is its digest.
    pub fn record(&self, store: &TrustStore, expected: &str) -> Result<PathBuf, TrustError> {
        if expected != self.digest {
            return Err(TrustError::DigestMismatch {
                expected: expected.to_owned(),
                actual: self.digest.clone(),
            });
        }
        store.write(&self.manifest)
    }
}

/// Forgets a workspace. Returns whether it had been trusted.
pub fn revoke(workspace: &Path, store: &TrustStore) -> Result<bool, TrustError> {
    store.remove(&canonical_root(workspace))
}
