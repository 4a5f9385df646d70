//! What an observer is told about a call toolgate answered: the seam on the
//! way out, as [`Decider`](../../toolgate_seam/trait.Decider.html) is the
//! seam on the way in.
//!
//! # Why a seam
//!
//! Five hosts turn a chain's outcome into an answer (the one-shot agent
//! command and `check`, the server over its socket and over HTTP, the MCP
//! proxy, an embedder's runtime). Each used to write the decision log and
//! count the server's metrics itself, and two of them forgot: the MCP proxy
//! neither logged nor counted a decision that the docs said every call
//! leaves. Here the runner tells every observer it was given about every
//! outcome it produces, so a host that runs the chain cannot leave one
//! out; the decision log and the metrics are observers like any an
//! embedder writes. What a host decides beside the chain (a call it could
//! not evaluate, an output withheld because the call ran past toolgate) it
//! tells the same observers through the runner, in the same shape.
//!
//! # Why an exhaustive ending
//!
//! An observer matches [`Ending`] without a wildcard: a new way for a call
//! to end is a compile error in every observer until each says what it
//! records of it, never a line silently missing from the log.
//!
//! An observer is told after the answer is made and cannot change it; it
//! must not block for long (the log waits at most its lock's bound, the
//! metrics are atomic adds), and what goes wrong in it is its own to say.

use crate::contract::{BindingKind, Decision, Request, Source};
use crate::failure::{FailureKind, OnFailure};
use crate::outcome::{Outcome, RunRecord, Step};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One answered (or refused) call, as every observer is told it.
#[derive(Clone, Copy, Debug)]
pub struct Observed<'a> {
    /// The call, when it was read (a host that could not read it has none).
    pub request: Option<&'a Request>,
    /// How it ended.
    pub ending: Ending<'a>,
    /// How long the host took to answer it, from when it had the call.
    pub took: Duration,
}

/// How a call ended.
#[derive(Clone, Copy, Debug)]
pub enum Ending<'a> {
    /// The chain decided (allow, deny, modify, replace or ask, or blocked
    /// because a hook could not decide: the outcome says which).
    Decided(&'a Outcome),
    /// The call ran past toolgate (its settings hooks were routed around),
    /// so its output was withheld: the outcome shows what the model saw
    /// instead; `evidence` says what showed it (`ran_after_deny`,
    /// `never_judged`), when known.
    Tampered {
        /// What the model was shown.
        outcome: &'a Outcome,
        /// The evidence, by name.
        evidence: Option<&'static str>,
    },
    /// toolgate could not evaluate the call (its config failed to load, its
    /// input could not be read, its deadline passed while loading): the
    /// call was blocked.
    Refused {
        /// Why, for the operator.
        error: &'a str,
    },
}

/// Told about every call a runner (or a host beside it) answered.
pub trait Observer: Send + Sync {
    /// Records `seen`. Called after the answer was made; it cannot change
    /// it.
    fn observe(&self, seen: &Observed<'_>);
}

impl<O: Observer + ?Sized> Observer for std::sync::Arc<O> {
    fn observe(&self, seen: &Observed<'_>) {
        (**self).observe(seen);
    }
}

impl<O: Observer> Observer for Option<O> {
    fn observe(&self, seen: &Observed<'_>) {
        if let Some(observer) = self {
            observer.observe(seen);
        }
    }
}

/// What the metrics count of one decided call: names, kinds and durations,
/// never the call's content. A host that has no metrics of its own (the
/// MCP proxy) sends it to a running server ([`crate::serve::Op::Tally`]),
/// which counts it as it counts the calls it decided itself: the one way
/// the series are counted, whoever decided.
///
/// Every label it carries is typed or bounded where it is counted: an
/// unknown kind does not deserialise, and names are capped by the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    /// The tool, as hooks saw it (`mcp__server__tool` for an MCP tool).
    pub tool: String,
    /// What the call came to.
    pub decision: Counted,
    /// The run that decided, when one did.
    #[serde(default)]
    pub decided_by: Option<Decider>,
    /// Every run.
    #[serde(default)]
    pub runs: Vec<TalliedRun>,
}

/// The hook that decided a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decider {
    /// Its name.
    pub hook: String,
    /// Where it came from (none when no run by that name is recorded).
    #[serde(default)]
    pub source: Option<Source>,
}

/// One run, as counted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TalliedRun {
    /// The hook's name.
    pub hook: String,
    /// Its binding.
    pub binding: BindingKind,
    /// Where it came from.
    pub source: Source,
    /// Not run: skipped for want of trust (`untrusted_hooks: "skip"`).
    #[serde(default)]
    pub skipped: bool,
    /// Why it could not decide, when it could not.
    #[serde(default)]
    pub failure: Option<FailureKind>,
    /// How long it ran, in microseconds.
    pub micros: u64,
    /// A shadow run: what it would have done.
    #[serde(default)]
    pub shadow: Option<Counted>,
}

/// A decision as counted: the five answers, or `failed` when the call was
/// blocked because a hook could not decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Counted {
    /// Allowed.
    Allow,
    /// Denied.
    Deny,
    /// Rewritten.
    Modify,
    /// Answered in the tool's place.
    Replace,
    /// A person asked.
    Ask,
    /// Blocked because a hook could not decide.
    Failed,
}

impl Counted {
    /// The label spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    fn decision(decision: &Decision) -> Counted {
        match decision {
            Decision::Allow => Counted::Allow,
            Decision::Deny { .. } => Counted::Deny,
            Decision::Modify { .. } => Counted::Modify,
            Decision::Replace { .. } => Counted::Replace,
            Decision::Ask { .. } => Counted::Ask,
        }
    }

    /// What a run would make of the call were it enforced (a shadow run's
    /// verdict; [`RunRecord::would`] spells it).
    pub(crate) fn would(run: &RunRecord) -> Counted {
        match run.step {
            Step::Allow | Step::Skipped => Counted::Allow,
            Step::Deny => Counted::Deny,
            Step::Ask => Counted::Ask,
            Step::Replace => Counted::Replace,
            Step::Modify => Counted::Modify,
            Step::Failed
                if run
                    .failure
                    .as_ref()
                    .is_some_and(|f| f.on_failure == OnFailure::Deny) =>
            {
                Counted::Failed
            }
            Step::Failed => Counted::Allow,
        }
    }
}

impl Tally {
    /// What the metrics count of `outcome`, the answer to a call to `tool`.
    pub fn of(tool: &str, outcome: &Outcome) -> Tally {
        let decided_by = outcome.decided_by.as_deref().map(|name| Decider {
            hook: name.to_owned(),
            source: outcome
                .runs
                .iter()
                .rev()
                .find(|r| r.name == name && !r.shadow)
                .map(|r| r.source),
        });
        let decision = match outcome.blocked_by_failure() {
            Some(_) => Counted::Failed,
            None => Counted::decision(&outcome.decision),
        };
        let runs = outcome
            .runs
            .iter()
            .map(|run| TalliedRun {
                hook: run.name.clone(),
                binding: run.binding,
                source: run.source,
                skipped: run.step == Step::Skipped,
                failure: run.failure.as_ref().map(|f| f.kind),
                micros: u64::try_from(run.duration.as_micros()).unwrap_or(u64::MAX),
                shadow: run.shadow.then(|| Counted::would(run)),
            })
            .collect();
        Tally {
            tool: tool.to_owned(),
            decision,
            decided_by,
            runs,
        }
    }
}
