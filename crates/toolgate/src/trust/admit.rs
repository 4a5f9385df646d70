//! Admitting a workspace's hooks at load: each binding says what it needs
//! (`WorkspaceTrust`); a hook that needs trust is judged against the user's
//! record and, when trusted, armed to run from its snapshot, confined.
//!
//! # Why the binding answers and the trust layer decides
//!
//! "Does a repository's hook of this kind need trust?" is a required method
//! of every binding (`Binding::workspace_trust`), and how each answer is
//! pinned is an exhaustive match (`Pinning::of`). The first version asked
//! "is it a subprocess?" and treated anything else as sandboxed: a new
//! binding that sent tool inputs to a URL would have run from an untrusted
//! repository.

use super::gate::{Check, Gate};
use super::pin::{HookPin, Needs, PinError, Pinned, Pinning};
use super::{
    Confinement, Record, TrustCtx, TrustError, TrustState, TrustStore, UntrustedPolicy, snapshot,
};
use crate::binding::{Binding, BindingSpec};
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

impl Distrust {
    /// Whether this refusal follows from files a load records the identity
    /// of (hooks.json and the trust record: [`crate::Config::sources`]), and
    /// so holds until one of them changes. The others rest on what no stamp
    /// covers: the hook's own files (a trusted hook's gate checks them again
    /// before each call, a refused one's does not), the store's state, or a
    /// read that failed for the machine's sake (no descriptors left).
    fn settled(&self) -> bool {
        match self {
            Distrust::ConfigChanged
            | Distrust::NotAmong
            | Distrust::Record(NoRecord::Never | NoRecord::NoStore) => true,
            Distrust::Record(NoRecord::Unreadable(_))
            | Distrust::Unpinnable(_)
            | Distrust::Changed(_)
            | Distrust::Snapshot(_) => false,
        }
    }

    /// Whether the hook matched its trust record and only the machine
    /// stops it running (its private copy could not be made): not distrust,
    /// so `untrusted_hooks` does not apply and the call is blocked.
    fn trusted_but_unavailable(&self) -> bool {
        match self {
            Distrust::Snapshot(_) => true,
            Distrust::ConfigChanged
            | Distrust::NotAmong
            | Distrust::Record(_)
            | Distrust::Unpinnable(_)
            | Distrust::Changed(_) => false,
        }
    }
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
    pub(crate) confinement: Confinement,
    record: std::cell::OnceCell<Result<Record, NoRecord>>,
    consulted: std::cell::Cell<Option<Consulted>>,
    /// A hook was refused for the store's state, not for any file's bytes
    /// (see [`Admission::settled`]).
    unsettled: std::cell::Cell<bool>,
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
        confinement: Confinement,
    ) -> Self {
        Admission {
            config_digest,
            root,
            ctx,
            policy,
            confinement,
            record: std::cell::OnceCell::new(),
            consulted: std::cell::Cell::new(None),
            unsettled: std::cell::Cell::new(false),
        }
    }

    /// Whether every refusal so far rests on files a load records the
    /// identity of (hooks.json, the trust record; a trusted hook's own files
    /// are checked again before each call): see `Distrust::settled`. A hook
    /// refused because its private copy could not be made (a full disk, a
    /// read-only store) or its files could not be read (no descriptors
    /// left) is refused for the machine's state at that moment, which no
    /// file's identity records: a program that keeps the config loaded must
    /// judge it again at the next call. `toolgate serve` did not, and kept
    /// refusing a trusted hook after the disk was freed, until some file
    /// was edited.
    pub(crate) fn settled(&self) -> bool {
        !self.unsettled.get()
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
    pub(crate) fn judge(&self, name: &str, binding: &dyn Binding) -> Judged {
        let search_path = self.ctx.search_path.as_deref();
        let pinning = match Pinning::of(name, binding, self.root, search_path) {
            Needs::Trust(pinning) => pinning,
            Needs::Nothing { .. } => {
                return Judged {
                    state: TrustState::Sandboxed,
                    gate: None,
                    run: None,
                };
            }
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
                if !distrust.settled() {
                    self.unsettled.set(true);
                }
                let reason = distrust.to_string();
                // A hook that matched its trust record and cannot run for
                // the machine's sake (a full disk, a read-only store) is
                // blocked whatever `untrusted_hooks` says: under `skip` the
                // call went on without the guard the user trusted, and a
                // full disk let through what the guard denies.
                let (policy, check) = if distrust.trusted_but_unavailable() {
                    (UntrustedPolicy::Deny, Check::Unavailable(reason.clone()))
                } else {
                    (self.policy, Check::Refuse(reason.clone()))
                };
                (TrustState::Untrusted { reason, policy }, check, None)
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
            sandbox: sandbox(
                self.ctx,
                self.root,
                (!unconfined, required),
                vec![base.clone(), self.root.to_owned()],
                &self.confinement,
            ),
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
pub(crate) fn confine_global(binding: &mut BindingSpec, ctx: &TrustCtx, how: &Confinement) {
    match binding {
        BindingSpec::Subprocess(spec) if spec.confine => {
            let reads = vec![spec.cwd.clone()];
            let path = Path::new("/nonexistent");
            spec.sandbox = Some(sandbox(ctx, path, (true, how.required), reads, how));
        }
        BindingSpec::Subprocess(_) => {}
        #[cfg(feature = "wasm")]
        BindingSpec::Wasm(_) => {}
    }
}

/// Applies a judgement to the hook's binding: a trusted program runs from
/// its snapshot, in its sandbox.
pub(crate) fn run_from_snapshot(binding: &mut BindingSpec, run: Option<Run>) {
    match (binding, run) {
        (BindingSpec::Subprocess(spec), Some(run)) => {
            spec.run = Some(run.launch);
            spec.sandbox = Some(run.sandbox);
        }
        (BindingSpec::Subprocess(_), _) => {}
        #[cfg(feature = "wasm")]
        (BindingSpec::Wasm(_), _) => {}
    }
}

/// A command hook's sandbox (see `binding::command::confine`): `PATH`
/// without empty, relative or `root` entries; scratch folders in the trust
/// store.
fn sandbox(
    ctx: &TrustCtx,
    root: &Path,
    (landlock, required): (bool, bool),
    mut reads: Vec<PathBuf>,
    operator: &Confinement,
) -> crate::binding::command::confine::Sandbox {
    reads.extend(operator.reads.iter().cloned());
    crate::binding::command::confine::Sandbox {
        path: super::pin::sanitized_path(ctx.search_path.as_deref(), root)
            .unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into()),
        scratch: ctx
            .store
            .as_ref()
            .map(TrustStore::scratch_dir)
            .unwrap_or_else(std::env::temp_dir),
        landlock,
        required,
        unavailable: ctx.no_landlock.clone(),
        reads,
        env: operator
            .env
            .iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect(),
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
