//! What the client is shown of the server's answer to a `tools/call`: the
//! final result, or (2026-07-28) a round that asks for input first.
//!
//! Both go through the post chain, and the client is given only what the
//! chain judged (see `shape`'s module doc for why nothing else passes).
//!
//! # Input rounds (2026-07-28)
//!
//! A stateless server cannot send the client a request of its own in the
//! middle of a call, so a tool that needs the user (elicitation) or the
//! model (sampling) answers `tools/call` with `resultType:
//! "input_required"`: a map of `inputRequests` and an opaque
//! `requestState`. The client answers them and calls the tool again with
//! `inputResponses` and the state; the server then answers with the next
//! round or the final result.
//!
//! Each round's requests are text a person or a model reads — an
//! elicitation's message, form and URL, a sampling request's messages and
//! system prompt — written by the server, just as a result is. So a round
//! is judged like a result: the post chain sees `{"resultType":
//! "input_required", "inputRequests": {…}}` in MCP's own shape (a
//! redacting guard redacts a secret in an elicitation's message as in a
//! tool's output), and the client is given the judged requests and the
//! server's `requestState`, untouched (it is the server's, and a client
//! that does not return it byte for byte breaks the call). A hook may also
//! end the call there, by answering with a result in place of the round.
//!
//! Closed world: a round whose requests are not the kinds the revision
//! defines (elicitation, sampling, roots), whose state is not a string, or
//! that holds neither, is withheld; every retry of the call is a
//! `tools/call` of its own and goes through the pre chain again (the
//! client may change its arguments between rounds).

use super::Judge;
use crate::revision::{self, Era, said};
use crate::shape::{JUDGED_FIELDS, NOT_JUDGED, call_result, error, result, tool_result};
use serde_json::{Map, Value, json};
use toolgate::contract::{Decision, Event, ToolResult};

/// The requests a round may carry (2026-07-28's `InputRequest`).
const INPUT_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];

impl Judge {
    /// The answer to `tool`'s call as the client is to see it.
    pub(super) async fn judge_result(
        &self,
        id: &Value,
        answer: &Map<String, Value>,
        tool: String,
        input: Value,
        era: Era,
        bytes: Vec<u8>,
    ) -> Vec<u8> {
        // Whether the server's bytes may reach the client as they are: a
        // result holding only what hooks judge (anything else is dropped,
        // see `shape`) and, for a stateless client, its `resultType`.
        let (real, only_judged) = match (answer.get("result"), answer.get("error")) {
            (Some(Value::Object(result)), _) => {
                let kind = match era {
                    Era::Handshake => Some("complete"),
                    // A result without one is `complete`, the revision says.
                    Era::Stateless => match result.get("resultType") {
                        None => Some("complete"),
                        Some(kind) => kind.as_str(),
                    },
                };
                match kind {
                    Some("complete") => {}
                    Some("input_required") => {
                        return self.input_round(id, result, tool, input).await;
                    }
                    other => {
                        return error(
                            id,
                            NOT_JUDGED,
                            &format!(
                                "toolgate: the server's answer to tools/call is of a kind this \
                                 proxy does not know (resultType {}); withheld",
                                said(other.unwrap_or("that is not a string"))
                            ),
                        );
                    }
                }
                let kept = |k: &String| {
                    JUDGED_FIELDS.contains(&k.as_str())
                        || (era == Era::Stateless && k == "resultType")
                };
                let typed = era == Era::Handshake || result.contains_key("resultType");
                (tool_result(result), typed && result.keys().all(kept))
            }
            // A protocol error's text reaches the model too; hooks see all
            // of it.
            (_, Some(err)) => (ToolResult::error(json!({ "error": err })), true),
            _ => {
                return error(
                    id,
                    NOT_JUDGED,
                    "toolgate: the server's answer to tools/call holds no result object; withheld",
                );
            }
        };
        let outcome = self.post(&tool, input, real.clone()).await;
        match outcome.shown {
            Some(shown)
                if shown == real && only_judged && matches!(outcome.decision, Decision::Allow) =>
            {
                bytes
            }
            Some(shown) => self.rewritten(id, &tool, era, &shown, outcome.decided_by.as_deref()),
            None => error(
                id,
                NOT_JUDGED,
                "toolgate: the post chain showed nothing; withheld",
            ),
        }
    }

    async fn post(&self, tool: &str, input: Value, real: ToolResult) -> toolgate::Outcome {
        let mut request = self.request(tool, input);
        request.event = Event::PostToolUse;
        request.result = Some(real);
        self.decide(super::Chain::Post, &request).await
    }

    /// A result the proxy builds from what the post chain showed, if it
    /// still keeps the tool's declared output schema.
    fn rewritten(
        &self,
        id: &Value,
        tool: &str,
        era: Era,
        shown: &ToolResult,
        decided_by: Option<&str>,
    ) -> Vec<u8> {
        let rewritten = call_result(shown);
        let bare = tool
            .strip_prefix(&format!("mcp__{}__", self.server))
            .unwrap_or(tool);
        match self.keeps_output_schema(bare, &rewritten) {
            Ok(()) => result(id, revision::complete(era, rewritten)),
            Err(why) => {
                let by = decided_by.unwrap_or("a hook");
                let failed = ToolResult::error(format!(
                    "toolgate: output withheld: hook `{by}` failed: its rewrite of the \
                     result breaks the tool's declared outputSchema ({why})"
                ));
                result(id, revision::complete(era, call_result(&failed)))
            }
        }
    }

    /// One `input_required` round (see the module doc).
    async fn input_round(
        &self,
        id: &Value,
        round: &Map<String, Value>,
        tool: String,
        input: Value,
    ) -> Vec<u8> {
        let withheld = |why: &str| {
            error(
                id,
                NOT_JUDGED,
                &format!("toolgate: the server asked for input with {why}; withheld"),
            )
        };
        let state = match round.get("requestState") {
            None => None,
            Some(Value::String(state)) => Some(state.clone()),
            Some(_) => return withheld("a requestState that is not a string"),
        };
        let requests = match round.get("inputRequests") {
            None => Map::new(),
            Some(Value::Object(requests)) => requests.clone(),
            Some(_) => return withheld("inputRequests that are not an object"),
        };
        if requests.is_empty() && state.is_none() {
            return withheld("neither inputRequests nor a requestState");
        }
        let requests = match input_requests(&requests) {
            Ok(requests) => requests,
            Err(why) => return withheld(&why),
        };
        let real = ToolResult {
            output: json!({ "resultType": "input_required", "inputRequests": requests }),
            is_error: false,
        };
        let outcome = self.post(&tool, input, real).await;
        let Some(shown) = outcome.shown else {
            return withheld("a round the post chain showed nothing of");
        };
        let by = outcome.decided_by.as_deref();
        match shown.output.get("inputRequests") {
            // A hook answered with a result in place of the round.
            None => self.rewritten(id, &tool, Era::Stateless, &shown, by),
            Some(Value::Object(judged)) => match input_requests(judged) {
                Ok(judged) => {
                    let mut round = Map::new();
                    round.insert("resultType".into(), json!("input_required"));
                    round.insert("inputRequests".into(), Value::Object(judged));
                    if let Some(state) = state {
                        round.insert("requestState".into(), Value::String(state));
                    }
                    result(id, round)
                }
                Err(why) => hook_broke_round(id, by, &why),
            },
            Some(_) => hook_broke_round(id, by, "inputRequests that are not an object"),
        }
    }
}

/// Each input request as the client is to see it: its `method` (one the
/// revision defines) and its `params`, nothing else.
fn input_requests(requests: &Map<String, Value>) -> Result<Map<String, Value>, String> {
    let mut kept = Map::new();
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str);
        let Some(method) = method.filter(|m| INPUT_METHODS.contains(m)) else {
            return Err(format!(
                "a request {} of a kind this proxy does not know ({})",
                said(key),
                method.map_or_else(|| "no method".to_owned(), said)
            ));
        };
        let mut one = Map::new();
        one.insert("method".into(), json!(method));
        match request.get("params") {
            None => {}
            Some(params @ Value::Object(_)) => {
                one.insert("params".into(), params.clone());
            }
            Some(_) => {
                return Err(format!(
                    "a request {} whose params are not an object",
                    said(key)
                ));
            }
        }
        kept.insert(key.clone(), Value::Object(one));
    }
    Ok(kept)
}

fn hook_broke_round(id: &Value, by: Option<&str>, why: &str) -> Vec<u8> {
    let by = by.unwrap_or("a hook");
    let failed = ToolResult::error(format!(
        "toolgate: input request withheld: hook `{by}` failed: its rewrite of the round \
         holds {why}"
    ));
    result(id, revision::complete(Era::Stateless, call_result(&failed)))
}
