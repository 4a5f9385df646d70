//! Replaying a recorded session through the chain.
//!
//! # Why
//!
//! An operator should see what a policy would have done to real traffic
//! before trusting it: which calls it denies, which it rewrites, who decided,
//! what it costs. Replay takes a recording and runs every call through the
//! chain, as the agent would have.
//!
//! # What it reads
//!
//! A JSONL file whose lines are either **wire-v1 requests** (as `toolgate
//! check` takes them) or **Claude Code transcript entries**: assistant
//! `tool_use` blocks, paired by id with the `tool_result` blocks of later user
//! entries. A transcript call is replayed as the agent would have lived it:
//! the pre chain; then, if the call went ahead and its result was recorded,
//! the post chain over the real result with the final (possibly rewritten)
//! input. Other transcript entries (text, summaries) have nothing to replay
//! and are passed over. A line that is not JSON, or JSON that is neither
//! kind, is reported with its line number and skipped; nothing else is lost.

use crate::contract::{Decision, Event, Request, ToolResult};
use crate::protocol::transcript::Item;
use crate::runner::{HookRunner, Outcome, RunRecord};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

/// One call found in a recording.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The 1-based line it came from.
    pub line: usize,
    /// The request (for a transcript call, the pre request).
    pub request: Request,
    /// For a transcript call: the result it recorded, replayed through the
    /// post chain when the call goes ahead.
    pub recorded_result: Option<ToolResult>,
}

/// A line that could not be used.
#[derive(Clone, Debug, Serialize)]
pub struct Skipped {
    /// The 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// A recording, parsed.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// The calls, in order.
    pub calls: Vec<Recorded>,
    /// Lines reported and skipped.
    pub skipped: Vec<Skipped>,
}

/// Parses a JSONL recording (wire-v1 requests and/or a Claude Code
/// transcript).
pub fn parse(text: &str) -> Recording {
    let mut recording = Recording::default();
    // tool_use id → index in `calls`, to attach results.
    let mut pending: HashMap<String, usize> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let skip = |recording: &mut Recording, reason: String| {
            recording.skipped.push(Skipped {
                line: line_no,
                reason,
            })
        };
        let value: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                skip(&mut recording, format!("not JSON: {e}"));
                continue;
            }
        };
        if value.get("event").is_some() && value.get("tool").is_some() {
            match crate::protocol::wire::read_request(line.as_bytes(), None, None) {
                Ok(request) => recording.calls.push(Recorded {
                    line: line_no,
                    request,
                    recorded_result: None,
                }),
                Err(e) => skip(&mut recording, e.to_string()),
            }
            continue;
        }
        let Some(items) = crate::protocol::transcript::read_entry(&value) else {
            skip(
                &mut recording,
                "neither a wire-v1 request nor a Claude Code transcript entry".into(),
            );
            continue;
        };
        for item in items {
            match item {
                Item::Call(request) => {
                    if let Some(id) = &request.tool_call_id {
                        pending.insert(id.clone(), recording.calls.len());
                    }
                    recording.calls.push(Recorded {
                        line: line_no,
                        request,
                        recorded_result: None,
                    });
                }
                Item::Result {
                    tool_use_id,
                    result,
                } => match tool_use_id.as_deref().and_then(|id| pending.remove(id)) {
                    Some(index) => recording.calls[index].recorded_result = Some(result),
                    None => skip(
                        &mut recording,
                        format!("a tool_result for an unknown tool_use id {tool_use_id:?}"),
                    ),
                },
                Item::Problem(reason) => skip(&mut recording, reason),
            }
        }
    }
    recording
}

/// One evaluated event of a replay.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// The call's position in the recording (1-based).
    pub call: usize,
    /// The line it came from.
    pub line: usize,
    /// Which event was evaluated.
    pub event: Event,
    /// The tool.
    pub tool: String,
    /// A one-line summary of the input.
    pub input: String,
    /// The chain's decision.
    pub decision: &'static str,
    /// Who decided it.
    pub decided_by: Option<String>,
    /// A denial's reason, or why a person must confirm.
    pub reason: Option<String>,
    /// How long the chain took, in microseconds.
    pub latency_us: u64,
    /// One record per hook that ran, in order: what `toolgate check`
    /// prints as `runs`, in the same shape (the same type).
    pub runs: Vec<RunRecord>,
}

/// Runs every recorded call through `runner`.
pub async fn run(runner: &HookRunner, recording: &Recording) -> Vec<Row> {
    let mut rows = Vec::new();
    for (n, call) in recording.calls.iter().enumerate() {
        let started = std::time::Instant::now();
        let outcome = runner.evaluate(&call.request).await;
        rows.push(row(n + 1, call, &call.request, &outcome, started.elapsed()));
        let (Event::PreToolUse, Some(result)) = (call.request.event, &call.recorded_result) else {
            continue;
        };
        let input = match &outcome.decision {
            Decision::Allow => call.request.input.clone(),
            Decision::Modify { input } => input.clone(),
            // Denied: the tool did not run. Replaced: the post chain already
            // ran. Asked: nobody is there to confirm in a replay, so it is
            // not run.
            Decision::Deny { .. } | Decision::Replace { .. } | Decision::Ask { .. } => continue,
        };
        let post = Request {
            event: Event::PostToolUse,
            input,
            result: Some(result.clone()),
            ..call.request.clone()
        };
        let started = std::time::Instant::now();
        let outcome = runner.post_tool_use(&post).await;
        rows.push(row(n + 1, call, &post, &outcome, started.elapsed()));
    }
    rows
}

fn row(
    n: usize,
    call: &Recorded,
    request: &Request,
    outcome: &Outcome,
    took: std::time::Duration,
) -> Row {
    Row {
        call: n,
        line: call.line,
        event: request.event,
        tool: request.tool.clone(),
        input: summary(&request.input),
        decision: outcome.decision.name(),
        decided_by: outcome.decided_by.clone(),
        reason: match &outcome.decision {
            Decision::Deny { reason } | Decision::Ask { reason, .. } => Some(reason.clone()),
            _ => None,
        },
        latency_us: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        runs: outcome.runs.clone(),
    }
}

/// A short, single-line rendering of a tool input.
fn summary(input: &Value) -> String {
    let text = match input {
        Value::Object(obj) => {
            // The field people recognise a call by, when there is one.
            ["command", "file_path", "path", "url", "pattern", "query"]
                .iter()
                .find_map(|k| obj.get(*k).and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| input.to_string())
        }
        other => other.to_string(),
    };
    crate::text::excerpt(&text, 48)
}
