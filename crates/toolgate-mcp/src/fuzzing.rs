//! One door to the proxy's message handling, for its property test and the
//! `mcp` fuzz target (`fuzz/`). Not API: hidden from the documentation
//! (for `toolgate::fuzzing`'s reason: the judge is `pub(crate)`, and the
//! tests must run it, not a copy).
//!
//! A stream is judged by a chain that refuses every call but one to `get`
//! and replaces every result it sees with `JUDGED`; the server's answers
//! carry `RAW`. Then, whatever the stream:
//!
//! - no message forwarded to the server is a `tools/call` of anything but
//!   `get` to a parser that keeps the last of duplicate keys (serde_json,
//!   JavaScript's `JSON.parse`), and none has duplicate keys (so a parser
//!   that keeps the first reads the same);
//! - no answer shown to the client carries `RAW` where it answers a
//!   `tools/call` the proxy forwarded (the request in flight under that
//!   id, as the proxy pairs them). The answers to the client's other
//!   requests (`ping`, `resources/read`, a method the proxy does not
//!   know) pass through as the server sent them, by design; an answer to
//!   no forwarded request must not reach the client at all, and the
//!   proxy's own answers carry only what the client sent.
//!
//! (The first campaign found, in its first second, that the invariant
//! read every answer as a tool's unless its id began with `p`: a request
//! of an unknown method, answered by the server as it liked, broke it.
//! The proxy was right; the invariant now says what the proxy promises.)

use crate::judge::{Judge, Route};
use serde_json::Value;
use std::collections::HashMap;
use toolgate::contract::{HookRequest, ToolResult, Verdict};
use toolgate::{BoxError, HookRunner, Interceptor};

/// Refuses every call but `get`; replaces every result with `JUDGED`.
struct Strict;

#[async_trait::async_trait]
impl Interceptor for Strict {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        if request.tool == "mcp__s__get" {
            return Ok(Verdict::allow());
        }
        Ok(Verdict::deny("refused"))
    }

    async fn post_tool_use(&self, _: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        Ok(Verdict::replace(ToolResult::ok("JUDGED")))
    }
}

/// A judge for server `s` with the [`Strict`] chain.
pub(crate) fn strict_judge() -> Judge {
    let runner = HookRunner::builder().interceptor("strict", Strict).build();
    Judge::new("s".into(), runner, "session".into(), None, None)
}

/// Judges `steps` (from the client when `true`), in order; every broken
/// invariant, said.
pub fn judge_stream(steps: &[(bool, Vec<u8>)]) -> Vec<String> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return vec!["no runtime".into()];
    };
    let judge = strict_judge();
    let mut broken = Vec::new();
    // Each forwarded request's method, by the key the proxy pairs its
    // answer with.
    let mut forwarded: HashMap<String, String> = HashMap::new();
    for (from_client, line) in steps {
        let routes = runtime.block_on(async {
            if *from_client {
                judge.on_client(line).await
            } else {
                judge.on_server(line).await
            }
        });
        for route in routes {
            broken.extend(check(&route, &mut forwarded));
        }
    }
    broken
}

/// The `mcp` fuzz target's input: lines, each one message, its first byte
/// saying the side (even: the client; odd: the server).
pub fn exchange(data: &[u8]) -> Vec<String> {
    let steps: Vec<(bool, Vec<u8>)> = data
        .split(|b| *b == b'\n')
        .filter_map(|line| {
            let (side, message) = line.split_first()?;
            Some((side % 2 == 0, message.to_vec()))
        })
        .collect();
    judge_stream(&steps)
}

/// The same input with the server's side read as a Streamable HTTP event
/// stream (`--upstream`), through the event reader: a server line whose
/// side byte is 1 modulo 4 is sent as one whole event (`data: <line>` and a
/// blank line), one that is 3 modulo 4 as raw bytes of the stream, so the
/// framing itself is the fuzzer's; each event's data is judged as a
/// message.
pub fn exchange_events(data: &[u8]) -> Vec<String> {
    let mut reader = crate::http::sse::Reader::new(4096);
    let mut steps = Vec::new();
    for line in data.split(|b| *b == b'\n') {
        let Some((side, rest)) = line.split_first() else {
            continue;
        };
        if side % 2 == 0 {
            steps.push((true, rest.to_vec()));
            continue;
        }
        let bytes = if side % 4 == 1 {
            [b"data: ", rest, b"\n\n"].concat()
        } else {
            [rest, b"\n"].concat()
        };
        for event in reader.feed(&bytes) {
            if let Some(data) = event.data.filter(|d| !d.is_empty()) {
                steps.push((false, data));
            }
        }
    }
    judge_stream(&steps)
}

fn check(route: &Route, forwarded: &mut HashMap<String, String>) -> Option<String> {
    match route {
        Route::ToServer(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            if calls_refused_tool(bytes) {
                return Some(format!("a refused call was forwarded: {text}"));
            }
            if toolgate_contract::strict_json::parse(bytes).is_err() {
                return Some(format!("forwarded with duplicate keys or not JSON: {text}"));
            }
            let message = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
            if let (Some(method), Some(key)) =
                (message["method"].as_str(), read_as_a_client(&message))
            {
                forwarded.insert(key, method.to_owned());
            }
            None
        }
        Route::ToClient(bytes) => {
            let text = String::from_utf8_lossy(bytes);
            let message = serde_json::from_slice::<Value>(bytes).unwrap_or(Value::Null);
            if message.get("method").is_some() {
                return None;
            }
            let asked = read_as_a_client(&message).and_then(|key| forwarded.remove(&key));
            (asked.as_deref() == Some("tools/call") && text.contains("RAW"))
                .then(|| format!("an unjudged result reached the client: {text}"))
        }
    }
}

/// The id of `message` as the MCP SDKs' clients pair an answer with its
/// request: a number by its value as a double (JavaScript's `Map` and
/// Python's `dict` both take `5` and `5.0` for one key), a string as
/// itself. Not the proxy's own key: the invariant is what a client reads.
fn read_as_a_client(message: &Value) -> Option<String> {
    match message.get("id")? {
        Value::Number(n) => n.as_f64().map(|f| format!("n:{f}")),
        Value::String(s) => Some(format!("s:{s}")),
        _ => None,
    }
}

/// Whether `bytes`, read leniently, holds a `tools/call` of anything but
/// `get`.
fn calls_refused_tool(bytes: &[u8]) -> bool {
    let Ok(message) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    let messages = match message {
        Value::Array(items) => items,
        one => vec![one],
    };
    messages
        .iter()
        .any(|m| m["method"] == "tools/call" && m["params"]["name"] != "get")
}
