//! The subprocess binding: an argv command, one JSON request on stdin, one
//! JSON answer on stdout.
//!
//! # Why argv and never a shell string
//!
//! A hook's command is exec'd directly from an argv array; the tool input
//! travels only on stdin as JSON. Nothing an agent puts in a tool call — `$(…)`,
//! backticks, `;`, newlines — can become shell syntax, because no shell parses
//! anything toolgate builds. Someone who wants a shell writes
//! `["sh", "-c", "…"]` and owns that choice.
//!
//! # Where it runs
//!
//! A relative program path (`./hooks/guard.py`, `bin/guard`) resolves against
//! the root of the config that declared it — the workspace root for workspace
//! hooks, the global config directory for global hooks — and the process
//! runs with that root as its working directory, so the hook sees the same
//! paths its config does. A bare name (`python3`) is looked up on `PATH`
//! (for a workspace hook, once, when trust pins it: the hook is then spawned
//! from the path pinned). A global hook inherits the environment: subprocess
//! hooks are for jobs that need the machine. A workspace hook runs only
//! after the user trusted exactly what it runs (`trust`), from the pinned
//! snapshot of its code, and **confined** (`confine`: Landlock, a scratch
//! folder, an environment that loads no other code), unless the operator's
//! global config relaxes it.
//!
//! Supervision (deadlines, process groups, output caps, reaping) is in
//! `supervise.rs`.

pub(crate) mod confine;
mod spawn;
pub(crate) use spawn::lookup;
mod spec;
mod supervise;

use crate::binding::{Decider, Metrics, Reply};
use crate::contract::HookRequest;
use crate::failure::HookFailure;
use crate::protocol::{Exit, Inward};
use crate::text::sanitize;
pub(crate) use spec::CONFIG;
pub use spec::{CommandSpec, DEFAULT_TIMEOUT_MS};
use std::path::PathBuf;
use std::time::Duration;
pub(crate) use supervise::ProcessBounds;
use toolgate_contract::{session::StateChanges, wire};

/// Stdout kept from a hook; an answer may carry a replacement tool result
/// (the contract's answer bound).
pub const STDOUT_CAP: usize = crate::contract::MAX_ANSWER_BYTES;
/// Stderr kept for the operator; the rest is read and dropped.
pub const STDERR_CAP: usize = 16 * 1024;
/// Between SIGTERM and SIGKILL when a hook outlives its deadline.
pub const KILL_GRACE: Duration = Duration::from_millis(1000);
/// How long a hook's pipes may stay open after it exited before its process
/// group is killed.
pub const DRAIN: Duration = Duration::from_millis(100);

pub(crate) fn limits(timeout: Duration) -> ProcessBounds {
    ProcessBounds {
        timeout,
        grace: KILL_GRACE,
        stdout_cap: STDOUT_CAP,
        stderr_cap: STDERR_CAP,
        drain: DRAIN,
    }
}

/// A configured argv hook, ready to run.
pub(crate) struct CommandHook {
    pub(crate) program: PathBuf,
    pub(crate) args: Vec<String>,
    pub(crate) cwd: PathBuf,
    pub(crate) limits: ProcessBounds,
    pub(crate) protocol: Inward,
    pub(crate) sandbox: Option<confine::Sandbox>,
}

impl CommandHook {
    /// The confinement for one call: its scratch folder (removed when the
    /// call ends), environment and ruleset; a warning when it cannot be
    /// confined; a failure when it must be and cannot.
    fn confine(
        &self,
    ) -> Result<Option<(tempfile::TempDir, supervise::Confined, Option<String>)>, HookFailure> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(None);
        };
        let failed = |why: Box<dyn std::error::Error + Send + Sync>| HookFailure::SpawnFailed {
            program: self.program.display().to_string(),
            source: std::io::Error::other(why),
        };
        crate::safe_fs::private_dir(&sandbox.scratch).map_err(|e| failed(e.into()))?;
        let scratch = tempfile::Builder::new()
            .prefix("call-")
            .tempdir_in(&sandbox.scratch)
            .map_err(|e| failed(format!("no scratch folder: {e}").into()))?;
        let (ruleset, warning) = if sandbox.landlock {
            let made = match &sandbox.unavailable {
                Some(why) => Err(why.clone()),
                None => confine::ruleset(
                    scratch.path(),
                    &confine::hook_reads(&sandbox.reads, &self.program, &sandbox.path),
                )
                .and_then(|fd| Ok((std::sync::Arc::new(fd), confine::network_filter()?)))
                .map_err(|e| e.to_string()),
            };
            match made {
                Ok(both) => (Some(both), None),
                Err(why) if sandbox.required => {
                    return Err(failed(
                        format!("{why}; the global config sets require_confinement").into(),
                    ));
                }
                Err(why) => (None, Some(format!("not confined: {why}"))),
            }
        } else {
            (None, None)
        };
        let set = confine::environment(&sandbox.path, scratch.path(), &sandbox.env);
        let confined = supervise::Confined { set, ruleset };
        Ok(Some((scratch, confined, warning)))
    }
}

#[async_trait::async_trait]
impl Decider for CommandHook {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let (input, envs) = match self.protocol.encode(request, &self.cwd) {
            Ok(encoded) => encoded,
            Err(failure) => return Reply::from(Err(failure)),
        };
        let (_scratch, confined, confine_warning) = match self.confine() {
            Ok(Some((scratch, confined, warning))) => (Some(scratch), Some(confined), warning),
            Ok(None) => (None, None, None),
            Err(failure) => return Reply::from(Err(failure)),
        };
        let mut ran = supervise::run(
            &self.program,
            &self.args,
            &self.cwd,
            &envs,
            &input,
            &self.limits,
            confined.as_ref(),
        )
        .await;
        if let Some(note) = confine_warning {
            ran.warning = Some(match ran.warning.take() {
                Some(w) => format!("{note}; {w}"),
                None => note,
            });
        }
        let mut state = StateChanges::new();
        let (answer, note) = match ran.exit {
            Err(failure) => (Err(failure), None),
            Ok(exited) => {
                let read = self.protocol.read(
                    request,
                    &Exit {
                        code: exited.code,
                        status: &exited.status,
                        stdout: &exited.stdout,
                        stderr: &ran.stderr,
                    },
                );
                let mut answer = read.answer;
                // Only wire v1 has a place for state; the agents' dialects
                // do not.
                if answer.is_ok() && self.protocol == Inward::Toolgate {
                    match wire::decode_state(&exited.stdout) {
                        Ok(changes) => state = changes,
                        Err(e) => {
                            answer = Err(HookFailure::NotADecision {
                                detail: e.to_string(),
                            });
                        }
                    }
                }
                (answer, read.note.map(|t| sanitize(&t)))
            }
        };
        let mut diagnostics = sanitize(&String::from_utf8_lossy(&ran.stderr));
        if ran.stderr_dropped > 0 {
            diagnostics.push_str(&format!(
                "\n[toolgate: stderr truncated, {} more bytes dropped]",
                ran.stderr_dropped
            ));
        }
        if let Some(note) = note {
            if !diagnostics.is_empty() && !diagnostics.ends_with('\n') {
                diagnostics.push('\n');
            }
            diagnostics.push_str(&note);
        }
        Reply {
            answer: answer.into(),
            diagnostics: (!diagnostics.trim().is_empty()).then_some(diagnostics),
            warning: ran.warning,
            state,
            metrics: Metrics::new(),
        }
    }
}
