//! Rounds: a rewrite is judged by everyone who approved before it (see the
//! chain's `# Re-judgement`). One loop serves both events; the subject is
//! the input before the call and the shown result after it.

use super::*;

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
                shadow(p, request, asked, state).await;
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

/// Consults a shadow participant: it runs as it would and its run is
/// recorded (marked `shadow`), and whatever it answers is dropped — a
/// rewrite is not applied, a deny or a failure blocks nothing. Its time is
/// its own: the chain's deadline is moved on by what it took, so a slow
/// shadow hook never leaves the enforcing hooks after it without time (a
/// deadline that passed during it is recorded as its failure, and dropped
/// like any other answer).
async fn shadow(p: &Participant, request: &Request, asked: Asked<'_>, state: &mut ChainState) {
    let started = tokio::time::Instant::now();
    let deadline = state.deadline;
    state.deadline = started + state.chain_timeout;
    let _dropped = consult(p, request, asked, state).await;
    state.deadline = deadline + started.elapsed();
}
