//! The gate before each call of a workspace hook that needs trust: it
//! refuses a hook that was not trusted, and computes a trusted hook's pin
//! again so an edit after the load is caught at the next call.
//!
//! # Why a decider around a decider
//!
//! The gate wraps the hook's own decider ([`guard`]), so the chain never
//! learns that trust exists: a refusal is a deny verdict, or under the
//! operator's `untrusted_hooks: skip` an `Answer::NotRun` the chain records;
//! otherwise a `NotTrusted` failure, which denies whatever `on_failure` says.
//! Its check (hashing up to 256 MiB per file) runs on the blocking pool and
//! inside the chain's deadline, where every consultation runs.

use super::admit::Unconfinable;
use super::pin::HookPin;
use super::{Pinning, UntrustedPolicy, difference};
use crate::binding::{Answer, Decider, Reply};
use crate::contract::HookRequest;
use crate::failure::HookFailure;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Stands before one workspace command hook: refuses it, or checks its pin
/// again just before each call.
pub(crate) struct Gate {
    pub(super) policy: UntrustedPolicy,
    pub(super) hook: String,
    pub(super) root: PathBuf,
    pub(super) check: Check,
}

/// What the gate does before each call.
pub(super) enum Check {
    Refuse(String),
    /// Trusted, but its private copy could not be made (a full disk, a
    /// read-only store): blocked whatever the untrusted-hook policy, since
    /// skipping it would let the call through without the guard the user
    /// trusted.
    Unavailable(String),
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
            Check::Unavailable(why) => {
                return Err(Refusal {
                    policy: UntrustedPolicy::Deny,
                    reason: format!(
                        "toolgate: workspace hook `{}` is trusted but cannot run here ({why}), \
                         so this call is blocked; it is tried again at the next call",
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
        // A refusal is toolgate's, not the hook's: a failure that always
        // denies (a `check` exit 3, never a deny the hook decided).
        match refusal.policy {
            UntrustedPolicy::Deny => Answer::Failed(HookFailure::NotTrusted {
                reason: refusal.reason,
            }),
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
