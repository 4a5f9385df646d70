//! One consultation: a participant asked within the chain's deadline, what
//! it said bounded and recorded, and its failure policy applied. Kept apart
//! from the chain's order and rounds (`runner`) so each reads on its own.

use super::{ChainState, FailureRecord, RunRecord, Step};
use crate::binding::{Answer, Participant};
use crate::contract::{Decision, Event, HookRequest, Request, ToolResult, Verdict};
use crate::failure::{HookFailure, OnFailure};
use crate::session::{Kept, StateChanges};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Instant;

/// What one participant is asked in one consultation.
pub(super) struct Asked<'a> {
    pub(super) event: Event,
    pub(super) input: &'a Value,
    pub(super) result: Option<&'a ToolResult>,
    pub(super) round: u32,
}

/// Consults one participant within the chain's deadline, records what
/// happened, bounds what it said, and applies its failure policy. Returns the
/// verdict the chain should act on, or `None` when the participant failed and
/// its policy is to skip it.
pub(super) async fn consult(
    p: &Participant,
    request: &Request,
    asked: Asked<'_>,
    state: &mut ChainState,
) -> Option<Decision> {
    let Asked { event, round, .. } = asked;
    let loaded = request
        .session_id
        .as_deref()
        .map(|session| state.store.load(&p.scope, session));
    let unavailable = match &loaded {
        Some(Err(e)) => crate::text::error_chain(e),
        Some(Ok(_)) | None => String::new(),
    };
    let kept = match &loaded {
        None => Kept::NoSession,
        Some(Ok(kept)) => Kept::State(kept),
        Some(Err(_)) => Kept::Unavailable(&unavailable),
    };
    let hook_request = request_for(p, request, &asked, kept);
    tracing::debug!(hook = %p.name, binding = %p.binding, source = %p.source, %event, round, "consulting");
    let started = Instant::now();
    let reply = tokio::time::timeout_at(state.deadline, p.decider.decide(&hook_request)).await;
    let duration = started.elapsed();

    let mut record = record_of(p, event, round, duration);
    let Ok(reply) = reply else {
        // The chain's deadline passed while this participant ran. Its own
        // policy does not apply: the participants after it were never asked.
        return Some(past_deadline(p, record, state));
    };
    record.metrics = reply.metrics;
    let answer = keep_state(p, request, reply.answer, &reply.state, state);
    record.diagnostics = reply
        .diagnostics
        .map(|d| crate::text::bound(d, crate::text::MAX_DIAGNOSTICS, "diagnostics"));

    let mut warnings: Vec<String> = reply.warning.into_iter().collect();
    let answer = match usable(answer, event) {
        Ok(answer) => answer,
        Err(reason) => {
            // Not asked (an untrusted workspace hook under `untrusted_hooks:
            // skip`): recorded as skipped, with why; the chain goes on.
            record.step = Step::Skipped;
            record.reason = Some(bounded_reason(reason));
            trace_answer(&record);
            state.runs.push(record);
            return None;
        }
    };
    let verdict = match answer {
        Ok(answer) => Some(decided(p, answer, &mut record, &mut warnings, state)),
        Err(failure) => failed(p, &failure, &mut record, &mut warnings),
    };
    if !warnings.is_empty() {
        record.warning = Some(warnings.join("; "));
    }
    trace_answer(&record);
    state.runs.push(record);
    verdict
}

/// `p`'s run record for one consultation, before anything is known of
/// what it said: failed until an answer says otherwise.
pub(super) fn record_of(
    p: &Participant,
    event: Event,
    round: u32,
    duration: std::time::Duration,
) -> RunRecord {
    RunRecord {
        name: p.name.clone(),
        binding: p.binding,
        source: p.source,
        event,
        round,
        step: Step::Failed,
        reason: None,
        failure: None,
        duration,
        metrics: BTreeMap::new(),
        warning: None,
        diagnostics: None,
        shadow: p.shadow,
    }
}

/// What the hook answered, for `TOOLGATE_LOG=debug`; its diagnostics (a
/// command's stderr) at `trace`.
fn trace_answer(record: &RunRecord) {
    let step = serde_json::to_value(record.step).unwrap_or_default();
    let step = step.as_str().unwrap_or("?");
    let duration_us = u64::try_from(record.duration.as_micros()).unwrap_or(u64::MAX);
    match &record.reason {
        Some(reason) => tracing::debug!(
            hook = %record.name,
            step,
            duration_us,
            "answered: {}",
            crate::text::excerpt(reason, 200)
        ),
        None => tracing::debug!(hook = %record.name, step, duration_us, "answered"),
    }
    if let Some(warning) = &record.warning {
        tracing::debug!(hook = %record.name, "warning: {}", crate::text::one_line(warning));
    }
    if let Some(diagnostics) = &record.diagnostics {
        tracing::trace!(hook = %record.name, "diagnostics: {}", crate::text::one_line(diagnostics));
    }
}

/// Commits what a hook that decided wrote to its session state. A write
/// that cannot be kept turns its answer into a failure (its `on_failure`
/// applies): a guard that decided expecting to remember would otherwise be
/// silently wrong on the next call. A hook that did not decide keeps
/// nothing.
fn keep_state(
    p: &Participant,
    request: &Request,
    answer: Answer,
    changes: &StateChanges,
    state: &ChainState,
) -> Answer {
    if changes.is_empty() {
        return answer;
    }
    match answer {
        Answer::Decided(verdict) => {
            let kept = match request.session_id.as_deref() {
                None => Err("the call has no agent session id".to_owned()),
                Some(session) => state
                    .store
                    .commit(&p.scope, session, changes)
                    .map_err(|e| crate::text::error_chain(&e)),
            };
            match kept {
                Ok(()) => Answer::Decided(verdict),
                Err(detail) => Answer::Failed(HookFailure::StateNotKept { detail }),
            }
        }
        other @ (Answer::Failed(_) | Answer::NotRun { .. }) => other,
    }
}

/// What `p` is asked, borrowed from the call as it stands.
fn request_for<'a>(
    p: &'a Participant,
    request: &'a Request,
    asked: &Asked<'a>,
    state: Kept<'a>,
) -> HookRequest<'a> {
    HookRequest {
        event: asked.event,
        hook: &p.name,
        tool: &request.tool,
        input: asked.input,
        result: asked.result,
        session_id: request.session_id.as_deref(),
        turn_id: request.turn_id.as_deref(),
        tool_call_id: request.tool_call_id.as_deref(),
        cwd: request.cwd.as_deref(),
        config: p.config.as_ref(),
        state,
    }
}

/// A reply as the chain acts on it: a verdict it can use or a failure;
/// `Err` with the reason when the participant was not run at all.
fn usable(answer: Answer, event: Event) -> Result<Result<Verdict, HookFailure>, String> {
    match answer {
        // Every (answer, event) pair is written out: a new answer, or a new
        // event, must be placed here before the chain can act on it.
        Answer::Decided(answer) => Ok(match (&answer.decision, event) {
            (Decision::Modify { .. }, Event::PostToolUse) => Err(HookFailure::UnusableRewrite {
                detail: "`modify` after the call: the tool already ran with its input; \
                     use `replace` to change what the model is shown"
                    .into(),
            }),
            (Decision::Ask { .. }, Event::PostToolUse) => Err(HookFailure::NotADecision {
                detail: "`ask` after the call: the tool already ran, so there is nothing left \
                         for a person to confirm; use `deny` or `replace` to change what the \
                         model is shown"
                    .into(),
            }),
            // Only a chain's outcome carries an input beside `ask`.
            (Decision::Ask { input: Some(_), .. }, Event::PreToolUse) => {
                Err(HookFailure::NotADecision {
                    detail: "`ask` with an input: an answer asks about the call as it stands; \
                             rewrite it with `modify` and ask when consulted again"
                        .into(),
                })
            }
            (Decision::Replace { .. }, Event::ListTools) => Err(HookFailure::NotADecision {
                detail: "`replace` on a tool list: there is no call to answer for; use \
                         `modify` to offer another definition or `deny` to hide the tool"
                    .into(),
            }),
            (Decision::Ask { .. }, Event::ListTools) => Err(HookFailure::NotADecision {
                detail: "`ask` on a tool list: nobody is asked whether a tool may be offered; \
                         `deny` hides it, or `ask` when it is called"
                    .into(),
            }),
            (Decision::Modify { .. } | Decision::Ask { input: None, .. }, Event::PreToolUse)
            | (
                Decision::Allow | Decision::Deny { .. } | Decision::Replace { .. },
                Event::PreToolUse | Event::PostToolUse,
            )
            | (
                Decision::Allow | Decision::Deny { .. } | Decision::Modify { .. },
                Event::ListTools,
            ) => Ok(answer),
        }),
        Answer::Failed(failure) => Ok(Err(failure)),
        Answer::NotRun { reason } => Err(reason),
    }
}

/// The chain's deadline passed while `p` ran: a deny, whatever its
/// `on_failure`.
fn past_deadline(p: &Participant, mut record: RunRecord, state: &mut ChainState) -> Decision {
    let timeout_ms = u64::try_from(state.chain_timeout.as_millis()).unwrap_or(u64::MAX);
    let failure = HookFailure::ChainDeadline { timeout_ms };
    tracing::warn!(hook = %p.name, "the chain's deadline passed while this hook ran");
    let reason = format!(
        "toolgate: the hook chain ran past its deadline ({timeout_ms} ms) while hook `{}` \
         was running, so this call is blocked",
        p.name
    );
    record.failure = Some(FailureRecord {
        kind: failure.kind(),
        message: crate::text::error_chain(&failure),
        on_failure: OnFailure::Deny,
    });
    let reason = bounded_reason(reason);
    record.reason = Some(reason.clone());
    state.runs.push(record);
    Decision::Deny { reason }
}

/// A participant's answer, bounded and recorded; its context merged.
fn decided(
    p: &Participant,
    mut answer: Verdict,
    record: &mut RunRecord,
    warnings: &mut Vec<String>,
    state: &mut ChainState,
) -> Decision {
    // A shadow hook's context is recorded with its run, never shown.
    if !p.shadow
        && let Some(context) = &answer.context
        && state.context.push(&p.name, context)
    {
        warnings.push("advisory context over budget; truncated".into());
    }
    record.step = match &mut answer.decision {
        Decision::Allow => Step::Allow,
        Decision::Deny { reason } => {
            // Bounded for the model; a truncated deny is still a deny.
            *reason = bounded_reason(std::mem::take(reason));
            record.reason = Some(reason.clone());
            Step::Deny
        }
        Decision::Modify { .. } => Step::Modify,
        Decision::Replace { .. } => Step::Replace,
        Decision::Ask { reason, .. } => {
            // Bounded like a deny's: the model may read it.
            *reason = bounded_reason(std::mem::take(reason));
            record.reason = Some(reason.clone());
            Step::Ask
        }
    };
    answer.decision
}

/// A participant that could not decide: recorded, and its `on_failure`
/// applied (`None`: the chain goes on without it).
fn failed(
    p: &Participant,
    failure: &HookFailure,
    record: &mut RunRecord,
    warnings: &mut Vec<String>,
) -> Option<Decision> {
    let message = crate::text::bound(
        crate::text::sanitize(&crate::text::error_chain(failure)),
        crate::text::MAX_MESSAGE,
        "message",
    );
    tracing::warn!(hook = %p.name, kind = %failure.kind(), "hook could not decide: {}", crate::text::one_line(&message));
    // Some failures are not the hook's to wave through (see
    // `HookFailure::always_denies`).
    let policy = if failure.always_denies() {
        OnFailure::Deny
    } else {
        p.on_failure
    };
    record.failure = Some(FailureRecord {
        kind: failure.kind(),
        message: message.clone(),
        on_failure: policy,
    });
    match policy {
        OnFailure::Deny => {
            let reason = match failure.own_reason() {
                Some(reason) => reason.to_owned(),
                // In shadow the call was not blocked: the record says what
                // would have happened.
                None if p.shadow => format!(
                    "toolgate: shadow hook `{}` could not decide ({}); enforced, it would \
                     have blocked this call",
                    p.name,
                    failure.kind()
                ),
                None => format!(
                    "toolgate: hook `{}` could not decide ({}), so this call is blocked",
                    p.name,
                    failure.kind()
                ),
            };
            let reason = bounded_reason(reason);
            record.reason = Some(reason.clone());
            Some(Decision::Deny { reason })
        }
        OnFailure::Allow => {
            warnings.push(format!(
                "failed open (on_failure: allow): {message}; the chain went on without it"
            ));
            None
        }
    }
}

/// A reason for the model (and the run record), bounded: the one place the
/// chain bounds one, so the record and the decision say the same thing.
fn bounded_reason(text: String) -> String {
    crate::text::bound(text, crate::text::MAX_REASON, "reason")
}
