//! What the proxy does to one message, whatever carried it.
//!
//! The judge sees each JSON-RPC message once, in the order its side sent
//! it, and says where it goes. It acts on five things only; everything else
//! is forwarded as the bytes that arrived:
//!
//! - a client's `tools/call` request: the pre chain, as `mcp__<server>__<tool>`
//!   with the call's `arguments` as its input;
//! - the server's answer to one: the post chain over its `content` and
//!   `structuredContent`;
//! - the server's answer to `tools/list`: the user's approval, then the
//!   `list_tools` chain, tool by tool (`listing`);
//! - the server's answer to `initialize`: the `tasks.requests.tools`
//!   capability is withdrawn (see below);
//! - a client request whose id is already in flight: refused.
//!
//! # Closed world: every request id in flight is known
//!
//! A server's answer is matched to its `tools/call` by id alone, so an id
//! that could mean two requests is a bypass: a client sends `tools/call`
//! id 5 and then `ping` id 5; the server answers the ping first, that
//! answer is taken for the call's (and judged), and the call's real answer
//! arrives second, unjudged. So every client request in flight is kept,
//! whatever its method, and a request that reuses one of their ids is
//! answered with an error and never forwarded. An answer from the server
//! with an id that is not in flight (a duplicate, a guess, one for a call
//! the proxy answered itself) is dropped: nobody is waiting for it, and a
//! client that matched it to something would read an unjudged result.
//! A request the client cancelled keeps its id until the server answers
//! it (that late answer is dropped too): servers may ignore a
//! cancellation, and an id freed at once would pair the cancelled call's
//! late result with the next request that reuses it.
//!
//! # Task-augmented calls are refused
//!
//! Since MCP 2025-11-25 a client may ask for a `tools/call` to run as a
//! task: the answer is then a task handle, and the tool's output arrives
//! later in answer to `tasks/result`, a request the post chain would have
//! to follow through `tasks/get` and friends. Until it does, a
//! `tools/call` with `task` is refused (the client is told why), and the
//! server's `initialize` answer no longer offers task-augmented tool calls,
//! so a conforming client does not try.
//!
//! # Batches are split
//!
//! JSON-RPC batches were part of MCP 2025-03-26 only. A batch is taken apart
//! and each message judged on its own; the answers go back one per line,
//! which every SDK's reader accepts.

use crate::revision::{self, Era, UNSUPPORTED_VERSION, Unknown, said};
use crate::shape::{
    INVALID_PARAMS, INVALID_REQUEST, NOT_JUDGED, PARSE_ERROR, call_result, encode, error,
    error_with, initialized, result,
};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Mutex;
use toolgate::contract::{Decision, ToolResult};
use toolgate::{HookRunner, Request};
use toolgate_contract::strict_json;

mod answers;
mod faults;
/// Where one message goes, as bytes ready to write (no newline).
mod listing;
#[cfg(test)]
mod props;

pub(crate) use listing::Approval;

#[derive(Debug, PartialEq)]
pub(crate) enum Route {
    ToServer(Vec<u8>),
    ToClient(Vec<u8>),
}

/// Which of the chain's entries a message is judged by.
#[derive(Debug, Clone, Copy)]
enum Chain {
    /// A `tools/call`, before it reaches the server.
    Pre,
    /// The server's answer to one (a result, or an input round).
    Post,
    /// A tool of the server's list.
    List,
}

/// What a client request in flight was, so its answer is handled.
#[derive(Debug)]
enum InFlight {
    Initialize,
    /// 2026-07-28's `server/discover`: its instructions are judged as
    /// `initialize`'s are.
    Discover,
    ToolCall {
        tool: String,
        input: Value,
        era: Era,
    },
    ToolsList,
    Other,
    /// The client cancelled it: the server's late answer, if any, is
    /// dropped, and the id stays taken until then (see the module doc).
    Cancelled,
}

pub(crate) struct Judge {
    server: String,
    runner: HookRunner,
    session_id: String,
    cwd: Option<String>,
    in_flight: Mutex<HashMap<String, InFlight>>,
    approval: Option<Approval>,
    /// Each listed tool's `outputSchema`, as the client was last shown it.
    output_schemas: Mutex<HashMap<String, Value>>,
    /// Tools a `list_tools` hook hid from this session's last list that
    /// named them, and why: a call to one is refused.
    hidden: Mutex<HashMap<String, String>>,
}

impl Judge {
    pub(crate) fn new(
        server: String,
        runner: HookRunner,
        session_id: String,
        cwd: Option<String>,
        approval: Option<Approval>,
    ) -> Self {
        Judge {
            server,
            runner,
            session_id,
            cwd,
            in_flight: Mutex::new(HashMap::new()),
            approval,
            output_schemas: Mutex::new(HashMap::new()),
            hidden: Mutex::new(HashMap::new()),
        }
    }

    /// Asks `chain` about `request`; the runner's observers (the decision
    /// log, the server's metrics) are told what it decided.
    async fn decide(&self, chain: Chain, request: &Request) -> toolgate::Outcome {
        match chain {
            Chain::Pre => self.runner.pre_tool_use(request).await,
            Chain::Post => self.runner.post_tool_use(request).await,
            Chain::List => self.runner.list_tools(request).await,
        }
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashMap<String, InFlight>> {
        // A panic while holding the map cannot leave it half-written (each
        // use is one insert or remove), so a poisoned lock is still sound.
        self.in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The tool name hooks see: Claude Code's, so its matchers work as is.
    pub(crate) fn tool_name(&self, tool: &str) -> String {
        format!("mcp__{}__{tool}", self.server)
    }

    /// One line from the client.
    pub(crate) async fn on_client(&self, line: &[u8]) -> Vec<Route> {
        let message: Value = match strict_json::parse(line) {
            Ok(message) => message,
            Err(e) => {
                return vec![Route::ToClient(error(
                    &Value::Null,
                    PARSE_ERROR,
                    &format!("toolgate: not JSON-RPC ({e}); not forwarded"),
                ))];
            }
        };
        match message {
            Value::Array(batch) => {
                let mut routes = Vec::new();
                for message in batch {
                    let bytes = encode(&message);
                    routes.extend(self.client_message(message, bytes).await);
                }
                routes
            }
            message => self.client_message(message, line.to_vec()).await,
        }
    }

    async fn client_message(&self, message: Value, bytes: Vec<u8>) -> Vec<Route> {
        let Value::Object(object) = &message else {
            return vec![Route::ToClient(error(
                &Value::Null,
                INVALID_REQUEST,
                "toolgate: a JSON-RPC message is an object; not forwarded",
            ))];
        };
        let method = object.get("method").and_then(Value::as_str);
        let id = object.get("id").filter(|id| !id.is_null());
        // A call the proxy could not pair with its answer is not made: MCP
        // ids are strings or numbers, and a server might still run a
        // `tools/call` sent as a notification.
        if method == Some("tools/call") && !id.is_some_and(|id| id.is_string() || id.is_number()) {
            return vec![Route::ToClient(error(
                &Value::Null,
                INVALID_REQUEST,
                "toolgate: tools/call without a string or number id cannot be judged; not forwarded",
            ))];
        }
        match (method, id) {
            (Some(method), Some(id)) => self.client_request(method, id, object, bytes).await,
            // A cancelled request's late answer is nobody's: it is dropped
            // when it comes, and its id is not free before.
            (Some("notifications/cancelled"), None) => {
                if let Some(request) = object
                    .get("params")
                    .and_then(|p| p.get("requestId"))
                    .filter(|id| !id.is_null())
                    && let Some(asked) = self.in_flight().get_mut(&id_key(request))
                {
                    *asked = InFlight::Cancelled;
                }
                vec![Route::ToServer(bytes)]
            }
            // Other notifications, and the client's answers to the server's
            // own requests (sampling, elicitation, roots, ping).
            _ => vec![Route::ToServer(bytes)],
        }
    }

    /// A request of the client's: kept in flight under its id (which must
    /// be free), in the revision it names.
    async fn client_request(
        &self,
        method: &str,
        id: &Value,
        object: &Map<String, Value>,
        bytes: Vec<u8>,
    ) -> Vec<Route> {
        let key = id_key(id);
        if self.in_flight().contains_key(&key) {
            return vec![Route::ToClient(error(
                id,
                INVALID_REQUEST,
                &format!(
                    "toolgate: request id {key} is already in flight; \
                     a reused id could pair a tool's result with the wrong \
                     request, so this one is not forwarded"
                ),
            ))];
        }
        let era = match revision::of_request(object) {
            Ok(era) => era,
            Err(Unknown(asked)) => {
                return vec![Route::ToClient(error_with(
                    id,
                    UNSUPPORTED_VERSION,
                    &format!(
                        "toolgate: MCP revision {} is not one this proxy knows; not forwarded",
                        said(&asked)
                    ),
                    revision::unsupported_data(&asked),
                ))];
            }
        };
        let asked = match method {
            "tools/call" => return self.tool_call(id, object, era, bytes).await,
            "server/discover" => InFlight::Discover,
            "initialize" => InFlight::Initialize,
            "tools/list" => InFlight::ToolsList,
            _ => InFlight::Other,
        };
        self.in_flight().insert(key, asked);
        vec![Route::ToServer(bytes)]
    }

    async fn tool_call(
        &self,
        id: &Value,
        object: &Map<String, Value>,
        era: Era,
        bytes: Vec<u8>,
    ) -> Vec<Route> {
        let params = object.get("params");
        let Some(tool) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
            return vec![Route::ToClient(error(
                id,
                INVALID_PARAMS,
                "toolgate: tools/call without a tool name cannot be judged; not forwarded",
            ))];
        };
        if params.is_some_and(|p| p.get("task").is_some()) {
            return vec![Route::ToClient(error(
                id,
                INVALID_PARAMS,
                "toolgate: a task-augmented tools/call is not proxied (its result \
                 would arrive through tasks/result, which the guard does not judge \
                 yet); call the tool without `task`",
            ))];
        }
        let Some(input) = arguments(params) else {
            return vec![Route::ToClient(error(
                id,
                INVALID_PARAMS,
                "toolgate: tools/call arguments must be an object; not forwarded",
            ))];
        };
        if let Some(refused) = self.not_offered(id, tool) {
            return refused;
        }
        let name = self.tool_name(tool);
        let outcome = self
            .decide(Chain::Pre, &self.request(&name, input.clone()))
            .await;
        let (input, forwarded) = match outcome.decision {
            Decision::Allow => (input, bytes),
            Decision::Modify { input } => {
                let mut rewritten = object.clone();
                if let Some(Value::Object(params)) = rewritten.get_mut("params") {
                    params.insert("arguments".into(), input.clone());
                }
                (input, encode(&Value::Object(rewritten)))
            }
            Decision::Deny { reason } => return blocked(id, era, &reason),
            // The proxy has no person to ask (an MCP client's elicitation
            // is the server's to start, not a confirmation of a call): a
            // refusal whose reason says what was needed.
            Decision::Ask { reason, .. } => {
                return blocked(
                    id,
                    era,
                    &toolgate::refusal::needs_a_person_through_mcp(&reason),
                );
            }
            Decision::Replace { result: replaced } => {
                // `shown` is the replacement after the post chain.
                let shown = outcome.shown.unwrap_or(replaced);
                return vec![Route::ToClient(result(
                    id,
                    revision::complete(era, call_result(&shown)),
                ))];
            }
        };
        let asked = InFlight::ToolCall {
            tool: name,
            input,
            era,
        };
        self.in_flight().insert(id_key(id), asked);
        vec![Route::ToServer(forwarded)]
    }

    /// One line from the server.
    pub(crate) async fn on_server(&self, line: &[u8]) -> Vec<Route> {
        let message: Value = match strict_json::parse(line) {
            Ok(message) => message,
            Err(e) => {
                return self.unreadable(&format!("a message that is not JSON ({e})"));
            }
        };
        match message {
            Value::Array(batch) => {
                let mut routes = Vec::new();
                for message in batch {
                    let bytes = encode(&message);
                    routes.extend(self.server_message(message, bytes).await);
                }
                routes
            }
            message => self.server_message(message, line.to_vec()).await,
        }
    }

    async fn server_message(&self, message: Value, bytes: Vec<u8>) -> Vec<Route> {
        let Value::Object(object) = message else {
            return self.unreadable("a JSON-RPC message that is not an object");
        };
        let has_method = object.contains_key("method");
        let is_answer = object.contains_key("result") || object.contains_key("error");
        match (has_method, is_answer) {
            // A client could read it either way, one of them unjudged.
            (true, true) => {
                return self.unreadable("a message that is both a request and an answer");
            }
            // The server's requests and notifications.
            (true, false) => return vec![Route::ToClient(bytes)],
            (false, false) => {
                tracing::warn!(
                    "the server sent a message that is neither a request nor an answer; dropped"
                );
                return Vec::new();
            }
            (false, true) => {}
        }
        // An answer no request is waiting for: an error with a null id is
        // the server's word on a message it could not read, and the proxy
        // forwards none it cannot read itself.
        let Some(id) = object.get("id").filter(|id| !id.is_null()) else {
            tracing::warn!("the server sent an answer without an id; dropped");
            return Vec::new();
        };
        let Some(asked) = self.in_flight().remove(&id_key(id)) else {
            tracing::warn!(id = %id_key(id), "the server answered a request that is not in flight; dropped");
            return Vec::new();
        };
        // An answer with both a `result` and an `error` reads one way to
        // the proxy and maybe the other way to a client: the judged
        // `result` was clean while the unjudged `error` (a secret in it)
        // reached the client byte for byte. Whatever was asked, it is
        // withheld: an answer is read one way only, or not passed on.
        if object.contains_key("result") && object.contains_key("error") {
            tracing::warn!(id = %id_key(id), "the server answered with both a result and an error; withheld");
            return match asked {
                InFlight::Cancelled => Vec::new(),
                InFlight::Other
                | InFlight::Initialize
                | InFlight::Discover
                | InFlight::ToolsList
                | InFlight::ToolCall { .. } => vec![Route::ToClient(error(
                    id,
                    NOT_JUDGED,
                    "toolgate: the server's answer holds both a result and an error, which a \
                     client could read either way; withheld",
                ))],
            };
        }
        match asked {
            InFlight::Other => vec![Route::ToClient(bytes)],
            InFlight::Cancelled => Vec::new(),
            InFlight::Initialize => {
                if let Some(refused) = unknown_revision(id, &object) {
                    return vec![refused];
                }
                let (object, bytes) = self.approved_instructions(object, bytes);
                vec![Route::ToClient(initialized(object, bytes))]
            }
            InFlight::Discover => {
                let (_, bytes) = self.approved_instructions(object, bytes);
                vec![Route::ToClient(bytes)]
            }
            InFlight::ToolsList => self.listed(object, bytes).await,
            InFlight::ToolCall { tool, input, era } => {
                vec![Route::ToClient(
                    self.judge_result(id, &object, tool, input, era, bytes)
                        .await,
                )]
            }
        }
    }

    fn request(&self, tool: &str, input: Value) -> Request {
        let mut request = Request::pre(tool, input);
        request.session_id = Some(self.session_id.clone());
        request.cwd.clone_from(&self.cwd);
        request
    }
}

/// A call's `arguments` as the chain's input (none is `{}`); `None` when
/// they are not an object.
fn arguments(params: Option<&Value>) -> Option<Value> {
    match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => Some(Value::Object(Map::new())),
        Some(arguments @ Value::Object(_)) => Some(arguments.clone()),
        Some(_) => None,
    }
}

/// The server's `initialize` answer chose a revision this build does not
/// know: the client is answered with an error instead (see `revision`).
fn unknown_revision(id: &Value, answer: &Map<String, Value>) -> Option<Route> {
    let chosen = answer.get("result")?.get("protocolVersion")?;
    if revision::known_handshake(chosen) {
        return None;
    }
    let chosen = chosen
        .as_str()
        .map_or_else(|| chosen.to_string(), str::to_owned);
    Some(Route::ToClient(error(
        id,
        NOT_JUDGED,
        &format!(
            "toolgate: the server chose MCP revision {}, which this proxy does not know; \
             withheld",
            said(&chosen)
        ),
    )))
}

/// An id as a map key: its JSON text, so `1` and `"1"` stay apart.
/// The answer to a call the chain refused: a tool result marked
/// `isError`, carrying the reason (what the model reads), never a drop.
fn blocked(id: &Value, era: Era, reason: &str) -> Vec<Route> {
    let shown = ToolResult::error(toolgate::refusal::blocked(reason));
    vec![Route::ToClient(result(
        id,
        revision::complete(era, call_result(&shown)),
    ))]
}

/// The key a request and its answer are paired by, as the SDKs' clients
/// pair them: a number by its value as a double (JavaScript's `Map` and
/// Python's `dict` take `5`, `5.0` and `-0` for `5`, `5` and `0`), so a
/// request whose id a client would read as one in flight is refused as a
/// reused id, and no answer to one is handed on as the answer to another.
/// A string stays quoted: `"5"` is not `5` to either.
fn id_key(id: &Value) -> String {
    match id {
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => "0".to_owned(),
            Some(f) => format!("{f}"),
            None => id.to_string(),
        },
        _ => id.to_string(),
    }
}

/// The key of the request `message` is (a method and an id), if it is one.
pub(crate) fn request_key(message: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(message).ok()?;
    message.get("method")?;
    message.get("id").filter(|id| !id.is_null()).map(id_key)
}

/// The key of the request `message` answers (a result or an error with an
/// id), if it is an answer.
pub(crate) fn answer_key(message: &[u8]) -> Option<String> {
    let message: Value = serde_json::from_slice(message).ok()?;
    if message.get("method").is_some()
        || !(message.get("result").is_some() || message.get("error").is_some())
    {
        return None;
    }
    message.get("id").filter(|id| !id.is_null()).map(id_key)
}
