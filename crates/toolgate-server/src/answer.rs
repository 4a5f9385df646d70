//! What a call is answered: the same whether a one-shot process evaluated
//! it (`toolgate check`, `toolgate <agent>`) or the server did, because
//! both call these. Each appends the decision to the decision log when
//! asked to, and counts it in the server's metrics when there are some.

use crate::decision_log::{self, Logging};
use crate::metrics::{Metrics, count};
use std::time::{Duration, Instant};
use toolgate::agent::{AgentCall, Outward, render_outcome};
use toolgate::{HookRunner, Request, wire};
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

/// The agent's answer to `call` (`None`: nothing to print, as for an event
/// toolgate has no part in). The chain's deadline is cut to `budget`. With
/// `log`, the decision is appended to the decision log (a failure to is a
/// warning on stderr, never a change of the answer).
pub async fn agent(
    runner: &HookRunner,
    call: AgentCall,
    dialect: Outward,
    budget: Duration,
    log: Option<&Logging>,
    metrics: Option<&Metrics>,
) -> Option<serde_json::Value> {
    let request = call.request?;
    let runner = runner.with_chain_timeout(runner.chain_timeout().min(budget));
    let started = Instant::now();
    let outcome = runner.evaluate(&request).await;
    if let Some(log) = log {
        decision_log::warn(log.outcome(&request, &outcome, started.elapsed()));
    }
    count(metrics, |m| m.outcome(&outcome));
    render_outcome(&outcome, dialect, &call.hook_event_name)
}
