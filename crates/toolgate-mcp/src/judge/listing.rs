//! The tool list: which tools the client is shown (the user's approval,
//! see `pins`, then the `list_tools` chain) and the output schemas a
//! hook's rewrite is held to.
//!
//! # One chain call per tool, not one per list
//!
//! A `list_tools` hook is asked about one tool at a time, named as its
//! calls are (`mcp__<server>__<tool>`), with the definition as its input.
//! So the `tools` and `matcher` a hook already has for a server's calls
//! pick the same tools' definitions, per-tool answers compose in the
//! ordered, re-judged chain exactly as calls do (a later hook sees an
//! earlier one's rewritten description), and a guard written for one
//! tool never has to find it in a list. Denying the whole list is denying
//! each tool (a hook with `"matcher": "mcp__srv__.*"`): the client is
//! offered no tools and every call is refused. The list answer itself is
//! never turned into an error: an empty list is an answer every client
//! reads; an error would leave the outcome to each client's handling of a
//! broken server.
//!
//! The approval check comes first: a hook judges only definitions the
//! user approved, and a hook's rewrite is what the client is shown, not
//! what is pinned.

use super::{Judge, Route};
use crate::pins::{Pins, Verdict};
use crate::shape::{call_result, encode, result};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use toolgate::Outcome;
use toolgate::contract::{Decision, Event, ToolResult};

/// Tools of one list judged at once (see `Judge::offered`).
const LIST_CONCURRENCY: usize = 16;

/// The tool definitions the user approved for this server (see `pins`).
#[derive(Debug)]
pub(crate) struct Approval {
    /// `None`: the server was never reviewed, so no tool is approved.
    pub(crate) pins: Option<Pins>,
    /// The command that reviews this server, for messages.
    pub(crate) review: String,
    /// Tools this session's lists showed with a definition not approved:
    /// withheld from the list, and refused if called.
    pub(crate) withheld: Mutex<HashSet<String>>,
}

impl Approval {
    fn withheld(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.withheld
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why a call to `tool` is refused, if it is.
    fn refuses(&self, tool: &str) -> Option<&'static str> {
        match &self.pins {
            None => Some("this server's tools were never reviewed"),
            Some(pins) if !pins.knows(tool) => Some("this tool was never approved"),
            Some(_) if self.withheld().contains(tool) => {
                Some("this tool's definition changed since it was approved")
            }
            Some(_) => None,
        }
    }
}

impl Judge {
    /// The answer to a call of a tool the user did not approve, if it is
    /// one (see `pins`).
    fn unapproved(&self, id: &Value, tool: &str) -> Option<Vec<Route>> {
        let approval = self.approval.as_ref()?;
        let why = approval.refuses(tool)?;
        let shown = ToolResult::error(toolgate::refusal::blocked(&format!(
            "{why} (tool `{tool}` of MCP server `{}`); the user can review it with: {}",
            self.server, approval.review
        )));
        Some(vec![Route::ToClient(result(id, call_result(&shown)))])
    }

    /// A `tools/list` answer as the client is shown it: without the tools
    /// whose definition the user did not approve (when any is withheld, the
    /// client is first sent a log message naming them and how to review
    /// them), then each remaining tool through the `list_tools` chain
    /// (`offered`). The server's bytes go through as they came when
    /// neither changed anything.
    pub(super) async fn listed(
        &self,
        mut answer: Map<String, Value>,
        bytes: Vec<u8>,
    ) -> Vec<Route> {
        let Some(Value::Array(tools)) = answer.get_mut("result").and_then(|r| r.get_mut("tools"))
        else {
            return vec![Route::ToClient(bytes)];
        };
        let mut withheld = Vec::new();
        if let Some(approval) = &self.approval {
            tools.retain(|tool| {
                let verdict = match &approval.pins {
                    Some(pins) => pins.approves(tool),
                    None => Verdict::New,
                };
                if verdict == Verdict::Approved {
                    return true;
                }
                let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
                withheld.push(format!("`{name}` ({})", verdict.why()));
                approval.withheld().insert(name.to_owned());
                false
            });
        }
        // What the client is shown of a tool is what was approved: its
        // pinned fields. `_meta`, `icons`, `execution` and unknown fields
        // change without a review, and clients act on them (Claude Code
        // reads a tool's `_meta` for search hints shown to the model and
        // for how to load it), so they are dropped.
        let mut trimmed = false;
        for tool in tools.iter_mut() {
            if let Some((_, shown)) = crate::pins::pinned_form(tool)
                && shown != *tool
            {
                *tool = shown;
                trimmed = true;
            }
        }
        trimmed |= without_invisible(tools, &mut withheld);
        let judged = self.offered(tools).await || trimmed;
        self.keep_output_schemas(tools);
        if withheld.is_empty() && !judged {
            return vec![Route::ToClient(bytes)];
        }
        let answer = encode(&Value::Object(answer));
        let Some(approval) = self.approval.as_ref().filter(|_| !withheld.is_empty()) else {
            return vec![Route::ToClient(answer)];
        };
        let said = format!(
            "toolgate withheld {} tool(s) of MCP server `{}` whose definitions are not the \
             ones approved: {}. Review them with: {}",
            withheld.len(),
            self.server,
            withheld.join(", "),
            approval.review
        );
        tracing::warn!("{said}");
        eprintln!("{}", toolgate::text::one_line(&said));
        let note = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "logger": "toolgate", "data": said},
        });
        vec![Route::ToClient(encode(&note)), Route::ToClient(answer)]
    }

    /// The server's `initialize` answer without its `instructions` unless
    /// they are the approved ones (clients put them in the model's prompt,
    /// as a tool's description: a server could change them after review).
    /// Unchanged bytes when they are, or when there are none.
    pub(super) fn approved_instructions(
        &self,
        mut answer: Map<String, Value>,
        bytes: Vec<u8>,
    ) -> (Map<String, Value>, Vec<u8>) {
        let Some(approval) = &self.approval else {
            return (answer, bytes);
        };
        let Some(result) = answer.get_mut("result").and_then(Value::as_object_mut) else {
            return (answer, bytes);
        };
        let approved = match (result.get("instructions"), &approval.pins) {
            (None, _) => return (answer, bytes),
            (Some(given), Some(pins)) => pins.approves_instructions(given),
            (Some(_), None) => false,
        };
        if approved {
            let Some(Value::String(given)) = result.get_mut("instructions") else {
                return (answer, bytes);
            };
            // As a tool's definition: never shown with what nobody sees.
            let (kept, stripped) = toolgate::text::strip_invisible(given);
            if stripped == 0 {
                return (answer, bytes);
            }
            *given = kept;
            let bytes = encode(&Value::Object(answer.clone()));
            return (answer, bytes);
        }
        result.remove("instructions");
        let said = format!(
            "toolgate withheld the instructions of MCP server `{}`: they are not the ones \
             approved. Review them with: {}",
            self.server, approval.review
        );
        tracing::warn!("{said}");
        eprintln!("{}", toolgate::text::one_line(&said));
        let bytes = encode(&Value::Object(answer.clone()));
        (answer, bytes)
    }

    /// Takes each listed tool through the `list_tools` chain, as
    /// `mcp__<server>__<tool>` with its definition as the input: allowed,
    /// it stays; denied (or a hook failed and its `on_failure` denies), it
    /// is removed and remembered as hidden, so a call to it is refused;
    /// rewritten, the rewrite is shown instead, if it is still an object
    /// with the same `name` (else the tool is hidden: a hook cannot rename
    /// a tool, since calls reach the server by the name it gave). Whether
    /// anything changed.
    ///
    /// The tools are judged [`LIST_CONCURRENCY`] at a time, their order
    /// kept: one after another, a subprocess hook over a 20-tool list took
    /// seconds under load, and Claude Code and Codex gave up waiting for
    /// the server's tools (found by the live tests).
    async fn offered(&self, tools: &mut Vec<Value>) -> bool {
        use futures_util::StreamExt as _;
        type Judging<'a> =
            std::pin::Pin<Box<dyn Future<Output = (String, Value, Outcome)> + Send + 'a>>;
        let listed = std::mem::take(tools);
        let before = listed.len();
        let mut judging: Vec<Judging<'_>> = Vec::with_capacity(before);
        for tool in listed {
            // Nothing can call a tool without a name; nothing judges it.
            let Some(name) = tool.get("name").and_then(Value::as_str).map(str::to_owned) else {
                continue;
            };
            let mut request = self.request(&self.tool_name(&name), tool.clone());
            request.event = Event::ListTools;
            judging.push(Box::pin(async move {
                let outcome = self.decide(super::Chain::List, &request).await;
                (name, tool, outcome)
            }));
        }
        let judged: Vec<(String, Value, Outcome)> = futures_util::stream::iter(judging)
            .buffered(LIST_CONCURRENCY)
            .collect()
            .await;
        let mut changed = judged.len() != before;
        for (name, tool, outcome) in judged {
            self.tell_failures(&name, &outcome);
            let by = outcome.decided_by.unwrap_or_else(|| "a hook".into());
            let why = match outcome.decision {
                Decision::Allow => {
                    self.hidden().remove(&name);
                    tools.push(tool);
                    continue;
                }
                Decision::Modify { input } if input.get("name") == tool.get("name") => {
                    self.hidden().remove(&name);
                    tools.push(input);
                    changed = true;
                    continue;
                }
                Decision::Modify { .. } => format!(
                    "hook `{by}` rewrote its definition without its name, so it is not offered"
                ),
                Decision::Deny { reason } => format!("hidden by hook `{by}`: {reason}"),
                // `consult` makes either a failure at this event, and the
                // runner ends on neither; were it to, nobody let it through.
                Decision::Replace { .. } | Decision::Ask { .. } => {
                    format!("hook `{by}` did not let it be offered")
                }
            };
            tracing::info!(tool = %name, "{why}");
            self.hidden().insert(name, why);
            changed = true;
        }
        changed
    }

    /// A hook that could not judge hides the tool (or, failing open, lets
    /// it be offered): either way the operator is told why, on stderr,
    /// since the client is not.
    fn tell_failures(&self, name: &str, outcome: &Outcome) {
        for run in &outcome.runs {
            if let Some(failure) = &run.failure {
                eprintln!(
                    "{}",
                    toolgate::text::sanitize(&format!(
                        "toolgate: hook `{}` could not judge the definition of `{name}` \
                         (MCP server `{}`; {}, on_failure: {}): {}",
                        run.name, self.server, failure.kind, failure.on_failure, failure.message
                    ))
                );
            }
        }
    }

    fn hidden(&self) -> std::sync::MutexGuard<'_, HashMap<String, String>> {
        self.hidden
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The answer to a call of a tool the client is not offered (not
    /// approved, or hidden by a `list_tools` hook), if it is one.
    /// The approved `inputSchema` of `tool` (what a 2026-07-28 call's
    /// `Mcp-Param-*` headers are computed from).
    pub(crate) fn input_schema(&self, tool: &str) -> Option<&Value> {
        self.approval.as_ref()?.pins.as_ref()?.input_schema(tool)
    }

    pub(super) fn not_offered(&self, id: &Value, tool: &str) -> Option<Vec<Route>> {
        self.unapproved(id, tool)
            .or_else(|| self.hidden_tool(id, tool))
    }

    /// The answer to a call of a tool a `list_tools` hook hid from this
    /// session's last list that named it, if it is one.
    fn hidden_tool(&self, id: &Value, tool: &str) -> Option<Vec<Route>> {
        let why = self.hidden().get(tool).cloned()?;
        let shown = ToolResult::error(toolgate::refusal::blocked(&format!(
            "tool `{tool}` of MCP server `{}` is not offered ({why})",
            self.server
        )));
        Some(vec![Route::ToClient(result(id, call_result(&shown)))])
    }

    /// The output schemas of the tools the client was shown, for checking
    /// a hook's rewrite of their results.
    fn keep_output_schemas(&self, tools: &[Value]) {
        let mut schemas = self.output_schemas();
        for tool in tools {
            if let (Some(name), Some(schema)) = (
                tool.get("name").and_then(Value::as_str),
                tool.get("outputSchema"),
            ) {
                schemas.insert(name.to_owned(), schema.clone());
            }
        }
    }

    fn output_schemas(&self) -> std::sync::MutexGuard<'_, HashMap<String, Value>> {
        self.output_schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `shown` (a rewritten `CallToolResult` of `tool`) still keeps
    /// the tool's declared `outputSchema`: a successful result of a tool
    /// that declares one must carry `structuredContent` that validates
    /// (MCP says so of servers; a hook's rewrite is held to the same).
    /// The schema is the one the client was shown this session, else the
    /// approved one; a tool with neither is not checked.
    pub(super) fn keeps_output_schema(
        &self,
        tool: &str,
        shown: &Map<String, Value>,
    ) -> Result<(), String> {
        if shown.get("isError").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let schema = self.output_schemas().get(tool).cloned().or_else(|| {
            self.approval
                .as_ref()
                .and_then(|a| a.pins.as_ref())
                .and_then(|pins| pins.output_schema(tool))
        });
        let Some(schema) = schema else {
            return Ok(());
        };
        let Some(structured) = shown.get("structuredContent") else {
            return Err("no structuredContent".into());
        };
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("the declared outputSchema cannot be checked: {e}"))?;
        match validator.iter_errors(structured).next() {
            None => Ok(()),
            Some(e) => Err(format!("at `{}`: {e}", e.instance_path())),
        }
    }
}

/// Invisible and format code points (tag characters, zero-width
/// characters, variation selectors) are what a person reviewing a
/// definition does not see and a model reads: the review shows them
/// escaped and counted, and the client is never shown them. Stripped
/// rather than refused: they also occur harmlessly (an emoji's variation
/// selector), and stripped, what the model reads is what the person saw.
/// A tool whose *name* holds one is withheld instead (said in `withheld`):
/// calls reach the server by the name it gave. Whether anything changed.
fn without_invisible(tools: &mut Vec<Value>, withheld: &mut Vec<String>) -> bool {
    let before = tools.len();
    let mut stripped = 0;
    tools.retain_mut(|tool| {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.chars().any(toolgate::text::is_invisible) {
            let (name, _) = toolgate::text::quoted(name);
            withheld.push(format!("{name} (its name holds invisible characters)"));
            return false;
        }
        stripped += strip_invisible(tool, true);
        true
    });
    if stripped > 0 {
        tracing::info!(
            stripped,
            "invisible characters stripped from tool definitions"
        );
    }
    stripped > 0 || tools.len() != before
}

/// Strips [invisible](toolgate::text::is_invisible) code points from every
/// string and key in `value`, except a tool's own `name` at the top
/// (`top`); how many.
fn strip_invisible(value: &mut Value, top: bool) -> usize {
    match value {
        Value::String(text) => {
            let (kept, n) = toolgate::text::strip_invisible(text);
            if n > 0 {
                *text = kept;
            }
            n
        }
        Value::Array(items) => items.iter_mut().map(|v| strip_invisible(v, false)).sum(),
        Value::Object(map) => {
            let mut n = 0;
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                if !(top && key == "name") {
                    n += strip_invisible(&mut item, false);
                }
                let (key, k) = toolgate::text::strip_invisible(&key);
                n += k;
                map.insert(key, item);
            }
            n
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => 0,
    }
}
