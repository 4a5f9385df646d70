//! The chain: one [`HookRunner`] that every binding feeds.
//!
//! # Order
//!
//! ```text
//!            pre_tool_use                                              post_tool_use
//!  request ─► interceptors ─► managed ─► global ─► workspace ─► tool ─► (same order) ─► model
//!             (host code,     (root's    (operator  (repository
//!              registration    policy,    config)    config)
//!              order)          /etc/toolgate)
//!                 │ deny ──────────────────────────► the tool never runs; later hooks are not consulted
//!                 │ modify ─► next hook sees the rewritten input; the tool gets the final one
//!                 │ replace ─► the tool never runs; the replacement goes through the post chain
//! ```
//!
//! The further a participant is from the workspace's own data, the earlier it
//! speaks: the host's, the machine's managed policy and the operator's guards
//! can refuse before a program a repository chose runs at all (and after the
//! call, they see the output first, the repository's hooks last). The
//! managed layer comes before the user's global config because it binds
//! the user too: a guard the user could pre-empt or rewrite past would not
//! be policy. Order is fixed by [`Source`] at
//! [`HookRunnerBuilder::build`], whatever order things were registered in.
//!
//! # Why ordered, threaded composition
//!
//! Mainstream harnesses run hooks in parallel and let the last writer win, so
//! two rewriting hooks race and a denial can arrive after a rewrite was already
//! applied. Here each participant sees exactly what the previous one produced,
//! a `deny` ends the chain before later participants run (their side effects
//! never happen), and the outcome is deterministic. That costs parallelism,
//! which hooks measured in microseconds do not need.
//!
//! # Re-judgement: a rewrite is judged by everyone who approved before it
//!
//! Threading alone would let the last (least trusted) participant turn an
//! approved call into one no earlier guard ever saw: a workspace hook answers
//! `modify` after every operator guard said `allow`, and `ls` becomes
//! `git push --force`. So when a participant rewrites the subject (the input
//! before the call, the shown result after it), the chain starts a new
//! **round** from the top on the rewritten subject: every participant before
//! the rewriter is consulted again and must let it through too; the rewriter
//! itself is not asked to judge its own rewrite; the ones after it see it
//! for the first time. A deny ends the chain as always; a further rewrite
//! starts another round; a `modify` (or post `replace`) that changes nothing
//! counts as an allow. Past [`MAX_REWRITES`] rewrites the call is denied with
//! a reason that says so — a chain whose members keep rewriting each other
//! has no answer everyone agreed to. Every consultation has its own run
//! record, numbered by [`RunRecord::round`].
//!
//! ```text
//!  round 1:  global-guard: allow ─► workspace-hook: modify(ls → X)
//!  round 2:  global-guard(X): deny ─► the call is blocked; X never runs
//! ```
//!
//! # Nothing holds the chain forever
//!
//! Each hook has its own deadline, but a chain of ten hooks at ten seconds
//! each is a hundred seconds, and agent hosts (Claude Code, Codex) let a call
//! through when their hook times out. So the chain as a whole has a deadline
//! ([`DEFAULT_CHAIN_TIMEOUT`], or `chain_timeout_ms` in the operator's global
//! config). Past it the call is denied before the call, and the output is
//! withheld after it, with a reason naming the hook that was running —
//! whatever that hook's `on_failure` says, because the hooks after it were
//! never consulted. A subprocess hook cut off this way has its whole process
//! group killed.
//!
//! # Post semantics
//!
//! After the call, `replace` threads the shown result to the next participant;
//! `deny` shows the model a failure (marked as error) in place of the output and
//! ends the chain, while [`Outcome::tool_result`] keeps what the tool really
//! returned for the audit trail; `modify` is a hook failure, because the call
//! already happened.
//!
//! # Adding a binding
//!
//! The chain consults participants through one seam (`binding::Decider`);
//! its logic (order, short-circuit, threading, policy, context, records)
//! never looks at which binding spoke. What a new binding takes is written
//! in `binding/mod.rs`.

mod builder;
mod call;
mod consult;
mod context;
mod rounds;

use crate::binding::{BindingKind, Participant};
pub use crate::contract::Source;
use crate::contract::{Decision, Event, Request, ToolResult};
pub use crate::outcome::{CallOutcome, FailureRecord, Outcome, RunRecord, Step};
use crate::sessions::SessionStore;
pub use builder::HookRunnerBuilder;
use consult::{Asked, consult};
use context::ContextMerger;
use rounds::{Ended, Subject, rounds};
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use toolgate_contract::observe::{Ending, Observed, Observer};

/// Default bound on the merged advisory context, in bytes.
pub const DEFAULT_CONTEXT_LIMIT: usize = 8 * 1024;
/// Rewrites one event may go through before the call is denied (see
/// `# Re-judgement`). Each rewrite costs a round of re-consultations, so the
/// bound also bounds the work two disagreeing rewriters can cause.
pub const MAX_REWRITES: u32 = 8;
/// Default deadline for a whole chain (one event, every hook): 30 s. Below
/// the 60 s that Claude Code used as its hook timeout for years and that
/// users commonly configure (today's default is 600 s; Codex's is 600 s), with room
/// for process start and loading, and far above what a chain of guards
/// measured in microseconds to milliseconds needs.
pub const DEFAULT_CHAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The chain. Cheap to clone; safe to share across tasks and threads.
#[derive(Clone)]
pub struct HookRunner {
    inner: Arc<Inner>,
    chain_timeout: Duration,
    /// Told about every outcome (see [`HookRunner::observe`]).
    observers: Vec<Arc<dyn Observer>>,
}

impl fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookRunner")
            .field("participants", &self.participants())
            .field("context_limit", &self.inner.context_limit)
            .field("chain_timeout", &self.chain_timeout)
            .field("observers", &self.observers.len())
            .finish()
    }
}

struct Inner {
    participants: Vec<Participant>,
    context_limit: usize,
    store: Arc<dyn SessionStore>,
}

/// A summary of one participant, for listings.
#[derive(Clone, Debug, Serialize)]
pub struct ParticipantInfo {
    /// Its name.
    pub name: String,
    /// Its binding.
    pub binding: BindingKind,
    /// Where it came from.
    pub source: Source,
}

/// Where one event's chain stands while participants are consulted.
struct ChainState {
    context: ContextMerger,
    runs: Vec<RunRecord>,
    /// When the whole chain must have answered.
    deadline: tokio::time::Instant,
    chain_timeout: Duration,
    /// Where hooks' session state is kept.
    store: Arc<dyn SessionStore>,
    /// Shadow consultations still running beside the chain (see
    /// `rounds::shadow`); settled before the outcome is made.
    shadows: Vec<rounds::InShadow>,
    /// When the chain started: what observers are told it took.
    started: std::time::Instant,
}

/// What the pre chain ended on, before any post processing.
enum PreEnd {
    Proceed {
        input: Option<Value>,
        decided_by: Option<String>,
    },
    Deny {
        reason: String,
        by: String,
    },
    Replace {
        input: Option<Value>,
        result: ToolResult,
        by: String,
    },
    Ask {
        reason: String,
        input: Option<Value>,
        by: String,
    },
}

impl HookRunner {
    /// Starts a builder.
    pub fn builder() -> HookRunnerBuilder {
        HookRunnerBuilder::new()
    }

    /// The same chain (sharing its loaded hooks) with another whole-chain
    /// deadline: for a caller that must answer within its own budget, such
    /// as one request to a long-lived server.
    pub fn with_chain_timeout(&self, timeout: Duration) -> HookRunner {
        HookRunner {
            inner: self.inner.clone(),
            chain_timeout: timeout,
            observers: self.observers.clone(),
        }
    }

    /// The same chain (sharing its loaded hooks) telling one more observer
    /// about what it answers: for a host whose observer is the call's own,
    /// such as a server's log line that names how the call came in.
    pub fn with_observer(&self, observer: Arc<dyn Observer>) -> HookRunner {
        let mut observers = self.observers.clone();
        observers.push(observer);
        HookRunner {
            inner: self.inner.clone(),
            chain_timeout: self.chain_timeout,
            observers,
        }
    }

    /// Tells this runner's observers about `seen`. The runner calls it for
    /// every outcome it makes; a host calls it for what it decides beside
    /// the chain (a call it could not evaluate, an output it withheld), so
    /// the log and the metrics hear of those in the same shape.
    pub fn observe(&self, seen: &Observed<'_>) {
        for observer in &self.observers {
            observer.observe(seen);
        }
    }

    /// The whole-chain deadline.
    pub fn chain_timeout(&self) -> Duration {
        self.chain_timeout
    }

    /// The participants in consultation order.
    pub fn participants(&self) -> Vec<ParticipantInfo> {
        self.inner
            .participants
            .iter()
            .map(|p| ParticipantInfo {
                name: p.name.clone(),
                binding: p.binding,
                source: p.source,
            })
            .collect()
    }

    /// Runs the chain for whichever event `request` carries.
    pub async fn evaluate(&self, request: &Request) -> Outcome {
        tracing::debug!(
            event = %request.event,
            tool = %request.tool,
            participants = self.inner.participants.len(),
            "chain starts"
        );
        let started = std::time::Instant::now();
        let outcome = match request.event {
            Event::PreToolUse => self.pre_tool_use(request).await,
            Event::PostToolUse => self.post_tool_use(request).await,
            Event::ListTools => self.list_tools(request).await,
        };
        tracing::debug!(
            decision = outcome.decision.name(),
            decided_by = outcome.decided_by.as_deref().unwrap_or("-"),
            consulted = outcome.runs.len(),
            duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX),
            "chain decided"
        );
        outcome
    }

    /// Runs the pre chain. A `replace` answer is taken through the post chain
    /// here, since the tool will not run: [`Outcome::shown`] is what the model
    /// should see, and no separate post call must be made for it.
    pub async fn pre_tool_use(&self, request: &Request) -> Outcome {
        let mut state = self.state();
        match self.pre_chain(request, &mut state).await {
            PreEnd::Proceed { input, decided_by } => {
                let verdict = match input {
                    Some(input) => Decision::Modify { input },
                    None => Decision::Allow,
                };
                self.finish(request, Event::PreToolUse, state, verdict, decided_by, None)
                    .await
            }
            PreEnd::Deny { reason, by } => {
                self.finish(
                    request,
                    Event::PreToolUse,
                    state,
                    Decision::Deny { reason },
                    Some(by),
                    None,
                )
                .await
            }
            PreEnd::Ask { reason, input, by } => {
                self.finish(
                    request,
                    Event::PreToolUse,
                    state,
                    Decision::Ask { reason, input },
                    Some(by),
                    None,
                )
                .await
            }
            PreEnd::Replace { input, result, by } => {
                let input = input.as_ref().unwrap_or(&request.input);
                let (post_verdict, shown, post_by) =
                    self.post_chain(request, input, &result, &mut state).await;
                // A post-chain denial of the replacement is still a denial.
                let verdict = match post_verdict {
                    // `post_chain` never ends on an `ask` (`consult` makes
                    // one a failure); were it to, nobody is asked after the
                    // tool answered: a denial.
                    Decision::Deny { reason } | Decision::Ask { reason, .. } => {
                        Decision::Deny { reason }
                    }
                    // The post chain never ends on a `modify` (`consult`
                    // makes one a failure); listed so a new answer is placed.
                    Decision::Allow | Decision::Modify { .. } | Decision::Replace { .. } => {
                        Decision::Replace {
                            result: shown.clone(),
                        }
                    }
                };
                let by = post_by.unwrap_or(by);
                self.finish(
                    request,
                    Event::PreToolUse,
                    state,
                    verdict,
                    Some(by),
                    Some((shown, result)),
                )
                .await
            }
        }
    }

    /// Runs the post chain over `request.result` (an absent result is taken
    /// as a `null`, non-error output).
    pub async fn post_tool_use(&self, request: &Request) -> Outcome {
        let mut state = self.state();
        let real = request
            .result
            .clone()
            .unwrap_or_else(|| ToolResult::ok(Value::Null));
        let (verdict, shown, by) = self
            .post_chain(request, &request.input, &real, &mut state)
            .await;
        self.finish(
            request,
            Event::PostToolUse,
            state,
            verdict,
            by,
            Some((shown, real)),
        )
        .await
    }

    /// Runs the list chain over one tool's definition (`request.input`),
    /// before the tool is offered to the model: [`Decision::Allow`] offers
    /// it as it is, [`Decision::Deny`] hides it, [`Decision::Modify`]
    /// offers the rewritten definition (re-judged like any rewrite). Only
    /// hooks whose `event` names `list_tools` are consulted; `replace` and
    /// `ask` are their failures here.
    pub async fn list_tools(&self, request: &Request) -> Outcome {
        let mut state = self.state();
        let chain: Vec<&Participant> = self.applicable(Event::ListTools, &request.tool).collect();
        let subject = Subject {
            event: Event::ListTools,
            what: "tool definition",
            about: |definition, _| (definition, None),
            rewrite: |decision| match decision {
                Decision::Modify { input } => Ok(input),
                other => Err(other),
            },
        };
        let ended = rounds(
            &chain,
            request,
            &request.input,
            &request.input,
            subject,
            &mut state,
        )
        .await;
        let (decision, by) = match ended {
            Ended::Through {
                rewritten: Some(input),
                by,
            } => (Decision::Modify { input }, by),
            Ended::Through {
                rewritten: None, ..
            } => (Decision::Allow, None),
            Ended::Denied { reason, by } => (Decision::Deny { reason }, Some(by)),
            // Not reached (`consult` makes either a failure at this event);
            // were it, a tool nobody let through is not offered.
            Ended::Asked { reason, by, .. } => (Decision::Deny { reason }, Some(by)),
            Ended::Replaced { by, .. } => (
                Decision::Deny {
                    reason: format!("hook `{by}` answered for a tool that is only being listed"),
                },
                Some(by),
            ),
        };
        self.finish(request, Event::ListTools, state, decision, by, None)
            .await
    }

    fn state(&self) -> ChainState {
        ChainState {
            context: ContextMerger::new(self.inner.context_limit),
            runs: Vec::new(),
            deadline: tokio::time::Instant::now() + self.chain_timeout,
            chain_timeout: self.chain_timeout,
            store: self.inner.store.clone(),
            shadows: Vec::new(),
            started: std::time::Instant::now(),
        }
    }

    /// The outcome, once the chain has decided. Shadow consultations still
    /// running are waited for first, never past the chain's deadline (so
    /// the decision, already made, is neither changed nor delayed past
    /// the time the chain had anyway).
    async fn finish(
        &self,
        request: &Request,
        event: Event,
        state: ChainState,
        verdict: Decision,
        decided_by: Option<String>,
        after: Option<(ToolResult, ToolResult)>,
    ) -> Outcome {
        let (shown, tool_result) = after.unzip();
        let mut state = state;
        rounds::settle_shadows(&mut state).await;
        let outcome = Outcome {
            event,
            decision: verdict,
            decided_by,
            shown,
            tool_result,
            context: state.context.finish(),
            runs: state.runs,
        };
        self.observe(&Observed {
            request: Some(request),
            ending: Ending::Decided(&outcome),
            took: state.started.elapsed(),
        });
        outcome
    }

    async fn pre_chain(&self, request: &Request, state: &mut ChainState) -> PreEnd {
        let chain: Vec<&Participant> = self.applicable(Event::PreToolUse, &request.tool).collect();
        let subject = Subject {
            event: Event::PreToolUse,
            what: "input",
            about: |input, _| (input, None),
            rewrite: |decision| match decision {
                Decision::Modify { input } => Ok(input),
                other => Err(other),
            },
        };
        match rounds(
            &chain,
            request,
            &request.input,
            &request.input,
            subject,
            state,
        )
        .await
        {
            Ended::Through { rewritten, by } => PreEnd::Proceed {
                input: rewritten,
                decided_by: by,
            },
            Ended::Denied { reason, by } => PreEnd::Deny { reason, by },
            Ended::Asked {
                reason,
                rewritten,
                by,
            } => PreEnd::Ask {
                reason,
                input: rewritten,
                by,
            },
            Ended::Replaced {
                result,
                rewritten,
                by,
            } => PreEnd::Replace {
                input: rewritten,
                result,
                by,
            },
        }
    }

    async fn post_chain(
        &self,
        request: &Request,
        input: &Value,
        real: &ToolResult,
        state: &mut ChainState,
    ) -> (Decision, ToolResult, Option<String>) {
        let chain: Vec<&Participant> = self.applicable(Event::PostToolUse, &request.tool).collect();
        let subject = Subject {
            event: Event::PostToolUse,
            what: "shown result",
            about: |shown, input| (input, Some(shown)),
            rewrite: |decision| match decision {
                Decision::Replace { result } => Ok(result),
                other => Err(other),
            },
        };
        let shown = |result: ToolResult, by: Option<String>| {
            (
                Decision::Replace {
                    result: result.clone(),
                },
                result,
                by,
            )
        };
        match rounds(&chain, request, real, input, subject, state).await {
            Ended::Through {
                rewritten: Some(result),
                by,
            } => shown(result, by),
            Ended::Through {
                rewritten: None, ..
            } => (Decision::Allow, real.clone(), None),
            // Not reached (a post `replace` is the rewrite), and harmless.
            Ended::Replaced { result, by, .. } => shown(result, Some(by)),
            // Not reached (`consult` makes a post `ask` a failure); were
            // it, nobody can confirm what already ran: withheld.
            Ended::Denied { reason, by } | Ended::Asked { reason, by, .. } => {
                let failure =
                    ToolResult::error(toolgate_contract::refusal::output_withheld(&reason));
                (Decision::Deny { reason }, failure, Some(by))
            }
        }
    }

    fn applicable<'a>(
        &'a self,
        event: Event,
        tool: &'a str,
    ) -> impl Iterator<Item = &'a Participant> + 'a {
        self.inner
            .participants
            .iter()
            .filter(move |p| p.applies(event, tool))
    }
}

#[cfg(test)]
mod tests;
