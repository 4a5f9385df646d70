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

pub(crate) use pin::{CommandInputs, PinError, Pinned, Pinning, pin_of};

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

use crate::binding::{Answer, BindingConfig, BindingSpec, Decider, Reply, WorkspaceTrust};
use crate::contract::{HookRequest, Verdict};
use serde::{Deserialize, Serialize};
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

/// Why command hooks cannot be confined here.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum Unconfinable {
    /// The host said so (`Loader::without_landlock`), with its reason.
    #[error("{0}")]
    Declared(String),
    /// The kernel's probe failed.
    #[error(transparent)]
    Kernel(crate::binding::command::confine::ConfineError),
}

/// Why a workspace has no usable trust record: read once per load and
/// shared by every hook that needs it.
#[derive(Clone, Debug, thiserror::Error)]
pub(crate) enum NoRecord {
    /// The embedding program gave no store.
    #[error("no trust store was configured by the program embedding toolgate")]
    NoStore,
    /// The store has no record for this workspace.
    #[error("never trusted on this machine")]
    Never,
    /// The store or its record could not be read.
    #[error("{}", crate::text::error_chain(.0.as_ref()))]
    Unreadable(Arc<TrustError>),
}

/// Why a workspace hook is not trusted: the reason its calls are refused
/// with, and what a listing shows.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Distrust {
    /// What it runs cannot be pinned.
    #[error(transparent)]
    Unpinnable(#[from] PinError),
    /// No usable trust record.
    #[error(transparent)]
    Record(#[from] NoRecord),
    /// hooks.json is not the bytes that were trusted.
    #[error("hooks.json changed since it was trusted")]
    ConfigChanged,
    /// The record does not name this hook.
    #[error("not among the hooks that were trusted")]
    NotAmong,
    /// What it pins now differs from what was trusted.
    #[error("{0}")]
    Changed(String),
    /// Its snapshot could not be made.
    #[error(transparent)]
    Snapshot(#[from] snapshot::MaterializeError),
}

/// The canonical form of a workspace root (as given, when it cannot be
/// resolved).
pub(crate) fn canonical_root(root: &Path) -> PathBuf {
    root.canonicalize()
        .unwrap_or_else(|_| std::path::absolute(root).unwrap_or_else(|_| root.to_owned()))
}

/// Judges one workspace's freshly loaded hooks, one at a time
/// ([`Admission::judge`]). The trust record is read once, and only when
/// some hook needs trust (a workspace of components never consults it).
pub(crate) struct Admission<'a> {
    pub(crate) config_digest: &'a str,
    /// The canonical workspace root.
    pub(crate) root: &'a Path,
    pub(crate) ctx: &'a TrustCtx,
    pub(crate) policy: UntrustedPolicy,
    pub(crate) confinement: Confinement<'a>,
    record: std::cell::OnceCell<Result<Record, NoRecord>>,
    consulted: std::cell::Cell<Option<Consulted>>,
}

/// The trust record a load consulted, with the identity of what it read
/// there.
pub(crate) type Consulted = (PathBuf, Option<crate::safe_fs::FileIdentity>);

/// What [`Admission::judge`] found for one hook.
pub(crate) struct Judged {
    /// Its standing, for listings.
    pub(crate) state: TrustState,
    /// The gate its calls pass first (wrap its decider with [`guard`]);
    /// `None` for a hook that runs without trust.
    pub(crate) gate: Option<Arc<Gate>>,
    /// For a trusted program: how to run it from its snapshot, confined.
    pub(crate) run: Option<Run>,
}

/// How a trusted workspace program runs: the interpreter from the path it
/// was found at (no later `PATH` lookup), the code from the snapshot, in its
/// sandbox.
pub(crate) struct Run {
    pub(crate) launch: (PathBuf, Vec<String>),
    pub(crate) sandbox: crate::binding::command::confine::Sandbox,
}

impl<'a> Admission<'a> {
    pub(crate) fn new(
        config_digest: &'a str,
        root: &'a Path,
        ctx: &'a TrustCtx,
        policy: UntrustedPolicy,
        confinement: Confinement<'a>,
    ) -> Self {
        Admission {
            config_digest,
            root,
            ctx,
            policy,
            confinement,
            record: std::cell::OnceCell::new(),
            consulted: std::cell::Cell::new(None),
        }
    }

    /// The trust record consulted, if one was.
    pub(crate) fn consulted(self) -> Option<Consulted> {
        self.consulted.into_inner()
    }

    fn record(&self) -> Result<&Record, NoRecord> {
        let read = self.record.get_or_init(|| match &self.ctx.store {
            None => Err(NoRecord::NoStore),
            Some(store) => {
                let (read, identity) = store.read_identified(self.root);
                self.consulted
                    .set(Some((store.record_path(self.root), identity)));
                match read {
                    Ok(Some(record)) => Ok(record),
                    Ok(None) => Err(NoRecord::Never),
                    Err(e) => Err(NoRecord::Unreadable(Arc::new(e))),
                }
            }
        });
        read.as_ref().map_err(Clone::clone)
    }

    /// Judges one hook by what its binding says it needs
    /// ([`WorkspaceTrust`]): a sandboxed one runs; any other runs only when
    /// what it pins now is what the user trusted, and is gated before every
    /// call.
    pub(crate) fn judge(&self, name: &str, binding: &dyn BindingConfig) -> Judged {
        let pinning = match binding.workspace_trust() {
            WorkspaceTrust::Sandboxed { .. } => {
                return Judged {
                    state: TrustState::Sandboxed,
                    gate: None,
                    run: None,
                };
            }
            WorkspaceTrust::Program {
                argv,
                program,
                trust_files,
            } => Pinning::Program(CommandInputs {
                name: name.to_owned(),
                argv: argv.to_vec(),
                program: program.to_owned(),
                trust_files: trust_files.to_vec(),
                root: self.root.to_owned(),
                search_path: self.ctx.search_path.clone(),
            }),
            WorkspaceTrust::Exact { target, files } => Pinning::Exact {
                name: name.to_owned(),
                kind: binding.kind().as_str(),
                target,
                files,
            },
        };
        // A hook that cannot be pinned says so first: trusting it would not help.
        let judged = pinning.pin().map_err(Distrust::from).and_then(|pinned| {
            let record = self.record()?;
            if record.manifest.config != self.config_digest {
                return Err(Distrust::ConfigChanged);
            }
            let trusted = record
                .manifest
                .hooks
                .iter()
                .find(|p| p.name == name)
                .ok_or(Distrust::NotAmong)?;
            match difference(trusted, &pinned.pin) {
                Some(what) => Err(Distrust::Changed(what)),
                None => Ok(pinned),
            }
        });
        let (state, check, run) = match judged.and_then(|pinned| self.arm(name, pinned)) {
            Ok((pin, Armed::Verify, run)) => (
                TrustState::Trusted,
                Check::Verify(Box::new((pinning, pin))),
                run,
            ),
            Ok((_, Armed::Unconfinable(why), run)) => {
                (TrustState::Trusted, Check::Unconfinable(why), run)
            }
            Err(distrust) => {
                let reason = distrust.to_string();
                (
                    TrustState::Untrusted {
                        reason: reason.clone(),
                        policy: self.policy,
                    },
                    Check::Refuse(reason),
                    None,
                )
            }
        };
        Judged {
            state,
            gate: Some(Arc::new(Gate {
                policy: self.policy,
                hook: name.to_owned(),
                root: self.root.to_owned(),
                check,
            })),
            run,
        }
    }

    /// What a trusted hook runs from and how its calls are checked: a
    /// program from a private copy of exactly the bytes trusted (the copy
    /// is hashed as it is made), confined unless the operator relaxed it.
    fn arm(&self, name: &str, pinned: Pinned) -> Result<(HookPin, Armed, Option<Run>), Distrust> {
        let Some(launch) = pinned.launch else {
            return Ok((pinned.pin, Armed::Verify, None));
        };
        let store = self.ctx.store.as_ref().ok_or(NoRecord::NoStore)?;
        let base = snapshot::materialize(&store.snapshot_dir(), self.root, &pinned.entries)?;
        let unconfined = self
            .confinement
            .unconfined
            .iter()
            .any(|(ws, hook)| ws == self.root && hook == name);
        let required = self.confinement.required;
        let run = Run {
            launch: launch.command(&base),
            sandbox: sandbox(self.ctx, self.root, !unconfined, required),
        };
        let armed = match (self.ctx.confinement(), unconfined, required) {
            // It would run unconfined and the operator said it must not:
            // deny its calls, whatever its `on_failure`.
            (Err(why), false, true) => Armed::Unconfinable(why),
            // Confined; or relaxed by the operator; or unconfinable and
            // allowed to run so (each run record says so).
            (Ok(()), _, _) | (Err(_), true, _) | (Err(_), false, false) => Armed::Verify,
        };
        Ok((pinned.pin, armed, Some(run)))
    }
}

/// How a trusted hook's calls are checked.
enum Armed {
    /// Its pin again, before each call.
    Verify,
    /// Refused: it cannot be confined here and the operator requires it.
    Unconfinable(Unconfinable),
}

/// Confines the global command hooks whose config asks (`"confine": true`):
/// the operator's own hooks run unconfined unless they say so.
pub(crate) fn confine_global(binding: &mut BindingSpec, ctx: &TrustCtx, required: bool) {
    match binding {
        BindingSpec::Subprocess(spec) if spec.confine => {
            spec.sandbox = Some(sandbox(ctx, Path::new("/nonexistent"), true, required));
        }
        BindingSpec::Subprocess(_) | BindingSpec::Wasm(_) => {}
    }
}

/// Applies a judgement to the hook's binding: a trusted program runs from
/// its snapshot, in its sandbox.
pub(crate) fn arm(binding: &mut BindingSpec, run: Option<Run>) {
    match (binding, run) {
        (BindingSpec::Subprocess(spec), Some(run)) => {
            spec.run = Some(run.launch);
            spec.sandbox = Some(run.sandbox);
        }
        (BindingSpec::Subprocess(_) | BindingSpec::Wasm(_), _) => {}
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
pub(crate) fn difference(trusted: &HookPin, now: &HookPin) -> Option<String> {
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
    Verify(Box<(Pinning, HookPin)>),
    /// Trusted, but it cannot be confined here and the operator requires it.
    Unconfinable(Unconfinable),
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
                Err(why) => why.to_string(),
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

/// Wraps a workspace hook's decider in its trust gate.
pub(crate) fn guard(gate: Arc<Gate>, inner: Arc<dyn Decider>) -> Arc<dyn Decider> {
    Arc::new(Guarded { gate, inner })
}

/// A workspace hook's decider behind its gate. The gate's check computes
/// the pin again (hashing files of up to 256 MiB), so it runs on the
/// blocking pool, and as part of the consultation: inside the chain's
/// deadline, never stalling an async worker of a server. The first version
/// ran it in the chain before the deadline started, on the worker.
struct Guarded {
    gate: Arc<Gate>,
    inner: Arc<dyn Decider>,
}

#[async_trait::async_trait]
impl Decider for Guarded {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let gate = self.gate.clone();
        let refusal = match tokio::task::spawn_blocking(move || gate.admit()).await {
            Ok(Ok(())) => return self.inner.decide(request).await,
            Ok(Err(refusal)) => refusal,
            // The check itself panicked: nothing says the hook may run, so
            // it does not, whatever the policy (a skip would let the call
            // go on without the guard the operator configured).
            Err(join) => Refusal {
                policy: UntrustedPolicy::Deny,
                reason: format!(
                    "toolgate: the trust check of workspace hook `{}` failed ({join}), so this \
                     call is blocked",
                    self.gate.hook
                ),
            },
        };
        tracing::warn!(hook = %self.gate.hook, "{}", crate::text::one_line(&refusal.reason));
        // Its own `on_failure` does not apply: the workspace does not choose
        // what its untrusted hooks get.
        match refusal.policy {
            UntrustedPolicy::Deny => Answer::Decided(Verdict::deny(refusal.reason)),
            UntrustedPolicy::Skip => Answer::NotRun {
                reason: refusal.reason,
            },
        }
        .into()
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
        store.write(&self.manifest)
    }
}

/// Forgets a workspace. Returns whether it had been trusted.
pub fn revoke(workspace: &Path, store: &TrustStore) -> Result<bool, TrustError> {
    store.remove(&canonical_root(workspace))
}

#[cfg(test)]
mod tests;
