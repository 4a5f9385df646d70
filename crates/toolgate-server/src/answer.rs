//! What a call is answered: the same whether a one-shot process evaluated
//! it (`toolgate check`, `toolgate <agent>`) or the server did, because
//! both call these. Each appends the decision to the decision log when
//! asked to, and counts it in the server's metrics when there are some.

use crate::decision_log::{self, Logging};
use crate::ledger::{Before, Ledger};
use crate::metrics::{Metrics, count};
use std::time::{Duration, Instant};
use toolgate::agent::{AgentCall, Outward, render_outcome};
use toolgate::{Decision, Event, HookRunner, Outcome, Request, wire};
use toolgate_hook::hook_process::{EXIT_DENIED, EXIT_HOOK_FAILED};

/// What `check` prints for `request`, and its exit code: 0 the call may
/// proceed, [`EXIT_DENIED`] a hook denied it, [`EXIT_HOOK_FAILED`] it is
/// blocked because a hook failed (never reported as a decided deny).
pub async fn check(
    runner: &HookRunner,
    request: &Request,
    log: Option<&Logging>,
    metrics: Option<&Metrics>,
) -> (serde_json::Value, u8) {
    let started = Instant::now();
    let outcome = runner.evaluate(request).await;
    if let Some(log) = log {
        decision_log::warn(log.outcome(request, &outcome, started.elapsed()));
    }
    count(metrics, |m| m.outcome(&outcome));
    let code = if outcome.may_proceed() {
        0
    } else if outcome.blocked_by_failure().is_some() {
        EXIT_HOOK_FAILED
    } else {
        EXIT_DENIED
    };
    (wire::outcome_json(&outcome), code)
}

/// Where an agent call's answer is recorded besides the agent: the
/// decision log, the server's metrics, and the record of what toolgate
/// answered before each call ran ([`crate::ledger`]). Each may be absent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sinks<'a> {
    /// The decision log.
    pub log: Option<&'a Logging>,
    /// The server's metrics.
    pub metrics: Option<&'a Metrics>,
    /// The call record (Claude Code's calls only: the agent whose mods can
    /// run a call past its settings hooks).
    pub ledger: Option<&'a Ledger>,
}

/// The agent's answer to `call` (`None`: nothing to print, as for an event
/// toolgate has no part in). The chain's deadline is cut to `budget`. With
/// a log, the decision is appended to the decision log (a failure to is a
/// warning on stderr, never a change of the answer).
///
/// For Claude Code, with a ledger: before the call, an answer the server
/// already gave to the same question is given again without running the
/// chain (toolgate's mod and the classic hook beside it ask about one
/// call), and every answer is recorded; after it, a successful call that
/// toolgate denied, or never saw, has its output withheld as tamper
/// evidence (logged, counted). A ledger that cannot be read there fails
/// closed too: toolgate cannot tell the call was judged.
pub async fn agent(
    runner: &HookRunner,
    call: AgentCall,
    dialect: Outward,
    budget: Duration,
    sinks: Sinks<'_>,
) -> Option<serde_json::Value> {
    let request = call.request?;
    let started = Instant::now();
    // Claude Code's tool events only: a `PermissionRequest` is judged as its
    // call too, but answered in a shape of its own, never from a record.
    let tool_event = matches!(
        call.hook_event_name.as_str(),
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure"
    );
    let ledger = match (dialect, sinks.ledger) {
        (Outward::ClaudeCode, Some(ledger)) if tool_event => request
            .session_id
            .as_deref()
            .zip(request.tool_call_id.as_deref())
            .map(|(session, id)| (ledger, session, id)),
        _ => None,
    };
    if let Some((ledger, session, id)) = ledger {
        match request.event {
            Event::PreToolUse => {
                if let Some(answer) = ledger.recall(session, id, &request.input) {
                    return answer;
                }
            }
            Event::PostToolUse if call.hook_event_name == "PostToolUse" => {
                let before = crate::blocking(|| ledger.before(session, id)).unwrap_or_else(|e| {
                    decision_log::warn(Some(format!("toolgate: {e}")));
                    Before::NeverJudged
                });
                if let Some(reason) = before.reason(&request.tool) {
                    let outcome = tampered(&request, reason);
                    if let Some(log) = sinks.log {
                        decision_log::warn(log.tamper(
                            &request,
                            &outcome,
                            before.tamper(),
                            started.elapsed(),
                        ));
                    }
                    count(sinks.metrics, |m| m.tamper(before.tamper()));
                    return render_outcome(&outcome, dialect, &call.hook_event_name);
                }
            }
            // A failed call reads as failed whoever refused it (toolgate's
            // own mod included): its output is an error, not evidence.
            Event::PostToolUse => {}
            // Not an agent's tool call: nothing ran.
            Event::ListTools => {}
        }
    }
    let runner = runner.with_chain_timeout(runner.chain_timeout().min(budget));
    let outcome = runner.evaluate(&request).await;
    if let Some(log) = sinks.log {
        decision_log::warn(log.outcome(&request, &outcome, started.elapsed()));
    }
    count(sinks.metrics, |m| m.outcome(&outcome));
    let answer = render_outcome(&outcome, dialect, &call.hook_event_name);
    if let (Some((ledger, session, id)), Event::PreToolUse) = (ledger, request.event) {
        let recorded = crate::blocking(|| {
            ledger.record(
                session,
                id,
                &request.input,
                outcome.decision.name(),
                &answer,
            )
        });
        if let Err(e) = recorded {
            decision_log::warn(Some(format!("toolgate: {e}")));
        }
    }
    answer
}

/// The outcome after a call that ran past toolgate: the output withheld,
/// the reason shown in its place.
fn tampered(request: &Request, reason: String) -> Outcome {
    Outcome {
        event: Event::PostToolUse,
        decision: Decision::Deny { reason },
        decided_by: Some(TAMPER_EVIDENCE.to_owned()),
        shown: None,
        tool_result: request.result.clone(),
        context: None,
        runs: Vec::new(),
    }
}

/// Who decides a withheld output in the decision log and the metrics.
pub const TAMPER_EVIDENCE: &str = "toolgate:tamper-evidence";
