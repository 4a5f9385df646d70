//! What an agent's call is answered, with the call ledger beside the
//! chain: the same whether a one-shot process evaluated it (`toolgate
//! <agent>`) or the server did, because both call [`agent`]. What it
//! decides is logged and counted by the runner's observers (the decision
//! log, the metrics), never here.
//!
//! What is left here is Claude Code's (the ledger answers for the one
//! agent whose mods can run a call past its hooks); it moves into Claude
//! Code's own folder when the agents are each in one.

use std::time::{Duration, Instant};
use toolgate::agent::{AgentCall, Outward, render_outcome};
use toolgate::observe::{Ending, Observed};
use toolgate::{Decision, Event, HookRunner, Outcome, Request};
use toolgate_log::ledger::{Before, Ledger};

/// The agent's answer to `call` (`None`: nothing to print, as for an event
/// toolgate has no part in). The chain's deadline is cut to `budget`.
/// `runner`'s observers are told what was decided, and what was withheld.
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
    ledger: Option<&Ledger>,
) -> Option<serde_json::Value> {
    let request = call.request?;
    let started = Instant::now();
    // Claude Code's tool events only: a `PermissionRequest` is judged as its
    // call too, but answered in a shape of its own, never from a record.
    let tool_event = matches!(
        call.hook_event_name.as_str(),
        "PreToolUse" | "PostToolUse" | "PostToolUseFailure"
    );
    let ledger = match (dialect, ledger) {
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
                let before =
                    toolgate_log::blocking(|| ledger.before(session, id)).unwrap_or_else(|e| {
                        toolgate_log::warn(Some(format!("toolgate: {e}")));
                        Before::NeverJudged
                    });
                if let Some(reason) = before.reason(&request.tool) {
                    let outcome = tampered(&request, reason);
                    runner.observe(&Observed {
                        request: Some(&request),
                        ending: Ending::Tampered {
                            outcome: &outcome,
                            evidence: before.tamper(),
                        },
                        took: started.elapsed(),
                    });
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
    let answer = render_outcome(&outcome, dialect, &call.hook_event_name);
    if let (Some((ledger, session, id)), Event::PreToolUse) = (ledger, request.event) {
        let recorded = toolgate_log::blocking(|| {
            ledger.record(
                session,
                id,
                &request.input,
                outcome.decision.name(),
                &answer,
            )
        });
        if let Err(e) = recorded {
            toolgate_log::warn(Some(format!("toolgate: {e}")));
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
