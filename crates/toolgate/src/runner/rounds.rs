//! Rounds: a rewrite is judged by everyone who approved before it (see the
//! chain's `# Re-judgement`). One loop serves both events; the subject is
//! the input before the call and the shown result after it.

use super::*;
use crate::failure::{HookFailure, OnFailure};

pub(super) fn too_many_rewrites(what: &str, last: &str) -> String {
    format!(
        "toolgate: the hooks rewrote this call's {what} more than {MAX_REWRITES} times without \
         all of them agreeing on one (last rewrite by `{last}`), so this call is blocked"
    )
}

/// What one event's rounds are about: the input before the call, the shown
/// result after it.
pub(super) struct Subject<S> {
    pub(super) event: Event,
    /// The subject in words, for the too-many-rewrites denial.
    pub(super) what: &'static str,
    /// The input and result a participant is asked about, given the subject
    /// and the call's input.
    pub(super) about: for<'s> fn(&'s S, &'s Value) -> (&'s Value, Option<&'s ToolResult>),
    /// The subject a decision rewrites it to, or the decision back when it is
    /// not a rewrite.
    pub(super) rewrite: fn(Decision) -> Result<S, Decision>,
}

/// How one event's rounds ended.
pub(super) enum Ended<S> {
    /// Everyone let the subject through; `rewritten` is the last rewrite.
    Through {
        rewritten: Option<S>,
        by: Option<String>,
    },
    /// A participant denied, or the rewrites never settled.
    Denied { reason: String, by: String },
    /// Nobody refused or answered for the tool, and one or more
    /// participants asked for a person's confirmation in the last round
    /// (their reasons, one per line; `by`, the first of them).
    Asked {
        reason: String,
        rewritten: Option<S>,
        by: String,
    },
    /// A participant answered for the tool (a pre `replace`).
    Replaced {
        result: ToolResult,
        rewritten: Option<S>,
        by: String,
    },
}

/// Consults `chain` on `original` round by round (see `# Re-judgement`): a
/// rewrite starts a new round from the top on the rewritten subject, with
/// its author skipped; a rewrite that changes nothing is an allow; past
/// [`MAX_REWRITES`] the call is denied.
pub(super) async fn rounds<S: PartialEq>(
    chain: &[&Participant],
    request: &Request,
    original: &S,
    input: &Value,
    subject: Subject<S>,
    state: &mut ChainState,
) -> Ended<S> {
    let mut current: Option<S> = None;
    let mut by = None;
    // Index (in `chain`) of the participant whose rewrite is current.
    let mut author: Option<usize> = None;
    let mut rewrites = 0u32;
    'round: loop {
        // Who asked for a person in this round, and why: a new round asks
        // everyone again about the rewritten subject.
        let mut askers: Vec<(String, String)> = Vec::new();
        for (i, p) in chain.iter().enumerate() {
            if author == Some(i) {
                continue;
            }
            let now = current.as_ref().unwrap_or(original);
            let (input, result) = (subject.about)(now, input);
            let asked = Asked {
                event: subject.event,
                input,
                result,
                round: rewrites + 1,
            };
            if p.shadow {
                shadow(p, request, asked, state);
                continue;
            }
            let Some(decision) = consult(p, request, asked, state).await else {
                continue;
            };
            match (subject.rewrite)(decision) {
                Ok(new) if &new == now => {}
                Ok(new) => {
                    rewrites += 1;
                    by = Some(p.name.clone());
                    current = Some(new);
                    author = Some(i);
                    if rewrites > MAX_REWRITES {
                        return Ended::Denied {
                            reason: too_many_rewrites(subject.what, &p.name),
                            by: p.name.clone(),
                        };
                    }
                    continue 'round;
                }
                Err(Decision::Deny { reason }) => {
                    return Ended::Denied {
                        reason,
                        by: p.name.clone(),
                    };
                }
                Err(Decision::Replace { result }) => {
                    return Ended::Replaced {
                        result,
                        rewritten: current,
                        by: p.name.clone(),
                    };
                }
                // The chain goes on: a later participant must still judge
                // the call a person may let through, and may refuse it.
                Err(Decision::Ask { reason, .. }) => askers.push((reason, p.name.clone())),
                // An allow; after the call `consult` has already turned a
                // `modify` or an `ask` into a failure.
                Err(Decision::Allow | Decision::Modify { .. }) => {}
            }
        }
        return through(askers, current, by);
    }
}

/// How a round that nobody refused ends: waiting for a person if anyone
/// asked for one (`askers`: reason and name, in chain order), else through.
fn through<S>(askers: Vec<(String, String)>, rewritten: Option<S>, by: Option<String>) -> Ended<S> {
    let Some((_, first)) = askers.first() else {
        return Ended::Through { rewritten, by };
    };
    let by = first.clone();
    let reasons: Vec<String> = askers.into_iter().map(|(reason, _)| reason).collect();
    Ended::Asked {
        reason: reasons.join("\n"),
        rewritten,
        by,
    }
}

/// A shadow consultation running beside the chain: what its record is if
/// it never answers, and its task.
pub(super) struct InShadow {
    /// Where in the chain's records its own go (the chain's order).
    at: usize,
    unanswered: RunRecord,
    task: tokio::task::JoinHandle<Vec<RunRecord>>,
}

/// Consults a shadow participant: it runs as it would and its run is
/// recorded (marked `shadow`), and whatever it answers is dropped — a
/// rewrite is not applied, a deny or a failure blocks nothing.
///
/// It runs as a task of its own, beside the chain, never in its sequence:
/// a shadow hook must never change a decision, including by time. Run in
/// sequence with the chain's deadline moved on by what it took, a slow one
/// still pushed the enforcing hooks after it past the process's watchdog
/// (fixed to the agent's own hook timeout, which cannot move), so an
/// allowed call was blocked. Beside the chain it takes no time from the
/// enforcing hooks; its answer is awaited when the chain has decided, up
/// to the chain's deadline (`settle_shadows`), and it is recorded as
/// having missed it if it has not answered by then.
pub(super) fn shadow(p: &Participant, request: &Request, asked: Asked<'_>, state: &mut ChainState) {
    let Asked {
        event,
        input,
        result,
        round,
    } = asked;
    let (p, request, input, result) = (p.clone(), request.clone(), input.clone(), result.cloned());
    let mut own = ChainState {
        // A shadow hook's context is recorded with its run, never shown.
        context: ContextMerger::new(0),
        runs: Vec::new(),
        deadline: state.deadline,
        chain_timeout: state.chain_timeout,
        store: Arc::clone(&state.store),
        shadows: Vec::new(),
        started: state.started,
    };
    let unanswered = super::consult::record_of(&p, event, round, state.chain_timeout);
    let task = tokio::spawn(async move {
        let asked = Asked {
            event,
            input: &input,
            result: result.as_ref(),
            round,
        };
        let _dropped = consult(&p, &request, asked, &mut own).await;
        own.runs
    });
    let at = state.runs.len();
    state.shadows.push(InShadow {
        at,
        unanswered,
        task,
    });
}

/// Waits for the shadow consultations still running, up to the chain's
/// deadline, and adds their records to the chain's; one that has not
/// answered by then is stopped and recorded as having run past it.
pub(super) async fn settle_shadows(state: &mut ChainState) {
    let mut inserted = 0;
    for InShadow {
        at,
        mut unanswered,
        mut task,
    } in std::mem::take(&mut state.shadows)
    {
        let at = (at + inserted).min(state.runs.len());
        let runs = match tokio::time::timeout_at(state.deadline, &mut task).await {
            Ok(Ok(runs)) => runs,
            Ok(Err(joined)) => {
                unanswered.failure = Some(FailureRecord {
                    kind: crate::failure::FailureKind::InterceptorPanic,
                    message: format!("its consultation did not finish: {joined}"),
                    on_failure: OnFailure::Allow,
                });
                vec![unanswered]
            }
            Err(_) => {
                task.abort();
                let failure = HookFailure::ChainDeadline {
                    timeout_ms: u64::try_from(state.chain_timeout.as_millis()).unwrap_or(u64::MAX),
                };
                unanswered.failure = Some(FailureRecord {
                    kind: failure.kind(),
                    message: crate::text::error_chain(&failure),
                    on_failure: OnFailure::Allow,
                });
                vec![unanswered]
            }
        };
        inserted += runs.len();
        state.runs.splice(at..at, runs);
    }
}
