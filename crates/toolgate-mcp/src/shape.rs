//! What MCP's messages look like to the chain, and back: the JSON-RPC
//! answers the proxy writes itself, and a `CallToolResult` as hooks see it.
//!
//! Hooks see a tool's result as `{"content": [...], "structuredContent":
//! {...}}` with the result's `isError` as the error flag: the fields the
//! model and the client read, in MCP's own shape, so a hook written for
//! one MCP server reads every other's.
//!
//! # Closed world: the client is given only what was judged
//!
//! A `CallToolResult` reaches the client with `content`,
//! `structuredContent` and `isError` and nothing else: `_meta`, the
//! protocol's older `toolResult` and any field this build does not know
//! are dropped, because no hook saw them and a client may show them to the
//! model. Claude Code 2.1.332 does exactly that with `toolResult`: when a
//! result has one, the model reads it *instead of* `content` (found by the
//! `mcp` fuzz target's first campaign; before, a server could put any
//! text there and the post chain judged the harmless `content` beside it).

use serde_json::{Map, Value, json};
use toolgate::contract::ToolResult;

/// JSON-RPC's codes for what the proxy refuses itself.
pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// A server-defined code (JSON-RPC reserves -32000..-32099 for them): the
/// call could not be judged, so it was not made or its result is withheld.
pub(crate) const NOT_JUDGED: i64 = -32001;

pub(crate) fn encode(message: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail (its keys are strings).
    serde_json::to_vec(message).unwrap_or_default()
}

pub(crate) fn error(id: &Value, code: i64, message: &str) -> Vec<u8> {
    answer_error(id, json!({ "code": code, "message": message }))
}

/// An error carrying MCP's `data` (what a client may act on, as the
/// versions it may retry with).
pub(crate) fn error_with(id: &Value, code: i64, message: &str, data: Value) -> Vec<u8> {
    answer_error(
        id,
        json!({ "code": code, "message": message, "data": data }),
    )
}

fn answer_error(id: &Value, error: Value) -> Vec<u8> {
    encode(&json!({ "jsonrpc": "2.0", "id": id, "error": error }))
}

pub(crate) fn result(id: &Value, result: Map<String, Value>) -> Vec<u8> {
    encode(&json!({ "jsonrpc": "2.0", "id": id, "result": result }))
}

/// The fields of a `CallToolResult` hooks see and the client is given.
pub(crate) const JUDGED_FIELDS: [&str; 3] = ["content", "structuredContent", "isError"];

/// What hooks see of a `CallToolResult`: its `content` and, when the
/// tool gave one, its `structuredContent`; `isError` is the result's
/// error flag. Nothing else of it reaches the client (see the module doc).
pub(crate) fn tool_result(result: &Map<String, Value>) -> ToolResult {
    let mut output = Map::new();
    output.insert(
        "content".into(),
        result
            .get("content")
            .cloned()
            .unwrap_or(Value::Array(Vec::new())),
    );
    if let Some(structured) = result.get("structuredContent") {
        output.insert("structuredContent".into(), structured.clone());
    }
    ToolResult {
        output: Value::Object(output),
        is_error: result.get("isError").and_then(Value::as_bool) == Some(true),
    }
}

/// A `CallToolResult` showing `shown`, and nothing else. An output in the
/// shape hooks were shown (`content`, optionally `structuredContent`) is
/// used as is; any other output is shown as text, so a hook may answer a
/// plain string.
pub(crate) fn call_result(shown: &ToolResult) -> Map<String, Value> {
    let mut result = Map::new();
    match &shown.output {
        Value::Object(output) if output.get("content").is_some_and(Value::is_array) => {
            result.insert("content".into(), output["content"].clone());
            if let Some(structured) = output.get("structuredContent") {
                result.insert("structuredContent".into(), structured.clone());
            }
        }
        Value::String(text) => {
            result.insert("content".into(), json!([{ "type": "text", "text": text }]));
        }
        other => {
            result.insert(
                "content".into(),
                json!([{ "type": "text", "text": other.to_string() }]),
            );
        }
    }
    if shown.is_error {
        result.insert("isError".into(), Value::Bool(true));
    }
    result
}

/// The server's `initialize` answer, without task-augmented tool calls
/// (see the module doc). Unchanged bytes when it offered none.
pub(crate) fn initialized(mut answer: Map<String, Value>, bytes: Vec<u8>) -> Vec<u8> {
    let removed = answer
        .get_mut("result")
        .and_then(|r| r.get_mut("capabilities"))
        .and_then(|c| c.get_mut("tasks"))
        .and_then(|t| t.get_mut("requests"))
        .and_then(Value::as_object_mut)
        .and_then(|requests| requests.remove("tools"))
        .is_some();
    if removed {
        encode(&Value::Object(answer))
    } else {
        bytes
    }
}
