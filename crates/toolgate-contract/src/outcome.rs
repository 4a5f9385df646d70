//! What the chain did: one record per participant consulted, the answer
//! for one event, and a whole call's outcome.
//!
//! # Why its own module, below the protocols
//!
//! The outward protocols (a Claude Code or Codex hook answer, wire v1's
//! `outcome` documents) render these values; the chain (`runner`) produces
//! them. Kept here, both depend on the data and neither on the other, so a
//! new agent dialect never reaches into the chain's internals.

use crate::contract::{BindingKind, Decision, Event, Source, ToolResult};
use crate::failure::{FailureKind, OnFailure};
use serde::{Serialize, Serializer};
use std::collections::BTreeMap;
use std::time::Duration;

/// What one participant did, for the operator.
#[derive(Clone, Debug, Serialize)]
pub struct RunRecord {
    /// The hook's name.
    pub name: String,
    /// Its binding.
    pub binding: BindingKind,
    /// Where it came from.
    pub source: Source,
    /// The event it was consulted for.
    pub event: Event,
    /// Which round of the chain this consultation was in: 1 for the first
    /// pass, one more after each rewrite (see `# Re-judgement`).
    pub round: u32,
    /// What it did, in one word. Serialised as `verdict`, the key run
    /// records have always had (kept stable for what reads them); in code it
    /// is a step of the chain, not a [`Verdict`](crate::contract::Verdict), which is a
    /// decision plus context.
    #[serde(rename = "verdict")]
    pub step: Step,
    /// For a denial, the reason it gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a failure, what went wrong and what the policy made of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureRecord>,
    /// Wall-clock time spent on it.
    #[serde(rename = "duration_us", serialize_with = "micros")]
    pub duration: Duration,
    /// What the binding measured, by name: `fuel_used` for a component.
    #[serde(flatten)]
    pub metrics: BTreeMap<&'static str, u64>,
    /// Operator-facing warning when it misbehaved (never shown to the model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// What it wrote for the operator (a command's stderr), bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<String>,
    /// A shadow hook's run (`"mode": "shadow"`): recorded, never applied.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub shadow: bool,
}

/// What a shadow hook would have made of a call had it enforced: the
/// first shadow run that would have changed the outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Shadowed {
    /// `deny`, `ask`, `replace` or `modify` (a shadow hook's failure under
    /// `on_failure: "deny"` would have been a `deny`).
    pub would: &'static str,
    /// The shadow hook.
    pub by: String,
}

impl RunRecord {
    /// What this run would make of the call were it enforced: `allow`
    /// (nothing: an allow, a skip, a failure under `on_failure: "allow"`),
    /// `deny`, `ask`, `replace`, `modify`, or `failed` (a failure that
    /// blocks). Shadow runs are read through it (`Outcome::shadowed`, the
    /// server's metrics).
    pub fn would(&self) -> &'static str {
        crate::observe::Counted::would(self).as_str()
    }
}

/// Serialises a duration as whole microseconds (`elapsed_us` in run records).
pub fn micros<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// What a participant did, in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    /// Answered `allow`.
    Allow,
    /// Answered `deny`.
    Deny,
    /// Answered `modify`.
    Modify,
    /// Answered `replace`.
    Replace,
    /// Answered `ask`: a person must confirm.
    Ask,
    /// Could not decide; see [`RunRecord::failure`].
    Failed,
    /// Not run: an untrusted workspace hook under `untrusted_hooks: skip`;
    /// [`RunRecord::reason`] says why.
    Skipped,
}

/// A failure, as recorded.
#[derive(Clone, Debug, Serialize)]
pub struct FailureRecord {
    /// Which kind.
    pub kind: FailureKind,
    /// The failure in words, for the operator.
    pub message: String,
    /// What the hook's `on_failure` made of it.
    pub on_failure: OnFailure,
}

/// The chain's answer for one event.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The event this outcome is for.
    pub event: Event,
    /// The final decision. For pre: `Allow`, `Deny`, `Modify` with the final
    /// input, or `Replace` with what the model is shown (the replacement after
    /// the post chain), or `Ask` when a participant asked for a person's
    /// confirmation and none refused. For post: `Allow` (real output shown), `Deny` (a
    /// failure is shown), or `Replace` with what the model is shown.
    pub decision: Decision,
    /// The participant whose answer decided it: the one that denied or
    /// replaced, or the last one that modified. `None` when everyone allowed.
    pub decided_by: Option<String>,
    /// What the model is shown as the tool's result: set after the call, and
    /// for a pre `replace`.
    pub shown: Option<ToolResult>,
    /// What the tool really returned (post) or the replacement a pre hook
    /// supplied before the post chain saw it. Kept for the audit record even
    /// when the model is shown something else.
    pub tool_result: Option<ToolResult>,
    /// Merged advisory context for the model, bounded.
    pub context: Option<String>,
    /// One record per participant that ran, in order.
    pub runs: Vec<RunRecord>,
}

impl Outcome {
    /// What the first shadow hook that would have changed this outcome
    /// would have made of it; `None` when no shadow hook would have.
    /// Read from the run records, in chain order: a deny or replace ends a
    /// chain, so the first such run is the decision it would have caused;
    /// an `ask` or a rewrite is what the hook would have added (the hooks
    /// after it saw the call as it really went).
    pub fn shadowed(&self) -> Option<Shadowed> {
        self.runs.iter().filter(|r| r.shadow).find_map(|r| {
            let would = match r.would() {
                "allow" => return None,
                "failed" => "deny",
                other => other,
            };
            Some(Shadowed {
                would,
                by: r.name.clone(),
            })
        })
    }

    /// Whether the call may go ahead (pre) or its result may be shown (post)
    /// without anyone else's say: anything but a denial or an `ask` (which
    /// goes ahead only if a person confirms).
    pub fn may_proceed(&self) -> bool {
        match self.decision {
            Decision::Deny { .. } | Decision::Ask { .. } => false,
            Decision::Allow | Decision::Modify { .. } | Decision::Replace { .. } => true,
        }
    }

    /// The run whose failure blocked the call: `Some` when this outcome is a
    /// denial because a hook could not decide (fail closed: a trap, a
    /// timeout, a crash, an answer that is not one, a hook toolgate would
    /// not run), `None` for a denial a hook decided and for every other
    /// outcome. A caller that reports a failure as a deny tells an author
    /// that a crashing guard works.
    pub fn blocked_by_failure(&self) -> Option<&RunRecord> {
        if !matches!(self.decision, Decision::Deny { .. }) {
            return None;
        }
        let by = self.decided_by.as_deref()?;
        // The deciding run is the last one of that name (a hook may be
        // consulted again in a later round).
        // A shadow hook decides nothing, whatever its name.
        self.runs
            .iter()
            .rev()
            .find(|r| r.name == by && !r.shadow)
            .filter(|r| r.step == Step::Failed)
    }
}

/// A whole call taken through the chain by the library's `HookRunner::call`.
#[derive(Clone, Debug)]
pub struct CallOutcome {
    /// What the model is shown as the tool's result.
    pub shown: ToolResult,
    /// Whether the tool itself ran.
    pub tool_ran: bool,
    /// The pre chain's outcome (for a pre `replace`, its post records too).
    pub pre: Outcome,
    /// The post chain's outcome, when the tool ran.
    pub post: Option<Outcome>,
}

impl CallOutcome {
    /// All advisory context for the model, pre then post.
    pub fn context(&self) -> Option<String> {
        let parts: Vec<&str> = [&self.pre.context]
            .into_iter()
            .chain(self.post.as_ref().map(|p| &p.context))
            .filter_map(|c| c.as_deref())
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }
}
