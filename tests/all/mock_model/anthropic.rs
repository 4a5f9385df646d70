//! Anthropic's Messages API (Claude Code): each `POST /v1/messages` that
//! offers the `Bash` tool is answered, streamed as server-sent events, with
//! the next scripted `tool_use` and, once the script is done, with a closing
//! text. Other requests get an empty success.

use super::{Api, MockModel};
use serde_json::{Value, json};

pub(crate) struct Anthropic;

impl Api for Anthropic {
    fn is_call(&self, path: &str, _: &Value) -> bool {
        path.starts_with("/v1/messages") && !path.contains("count_tokens")
    }

    fn reply(&self, _: &str, body: &Value, script: &[Value]) -> (&'static str, String) {
        messages_reply(body, script)
    }

    fn other(&self, _: &str) -> (&'static str, String) {
        ("application/json", json!({"input_tokens": 10}).to_string())
    }
}

impl MockModel {
    /// Every `tool_result` block the model was sent, in order, once each
    /// (later requests repeat the conversation).
    pub(crate) fn tool_results(&self) -> Vec<Value> {
        let mut seen = Vec::new();
        for body in self.requests() {
            for block in content_blocks(&body) {
                if block["type"] == "tool_result" && !seen.contains(&block) {
                    seen.push(block);
                }
            }
        }
        seen.into_iter()
            .map(|mut b| {
                b.as_object_mut().unwrap().remove("cache_control");
                b
            })
            .collect()
    }

    /// Every text the model was sent in user turns (system reminders with
    /// hook context and blocking errors among them) and in `system` messages
    /// inside the conversation, where Claude Code 2.1.332 puts hook context
    /// and blocking errors instead.
    pub(crate) fn user_texts(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for body in self.requests() {
            for block in message_blocks(&body, &["user", "system"]) {
                if let Some(text) = block["text"].as_str()
                    && !seen.iter().any(|s| s == text)
                {
                    seen.push(text.to_owned());
                }
            }
        }
        seen
    }
}

impl MockModel {
    /// The texts of the `system` messages inside the conversation (not the
    /// request's `system` prompt): where Claude Code 2.1.332 puts hook
    /// context.
    pub(crate) fn system_texts(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for body in self.requests() {
            for block in message_blocks(&body, &["system"]) {
                if let Some(text) = block["text"].as_str()
                    && !seen.iter().any(|s| s == text)
                {
                    seen.push(text.to_owned());
                }
            }
        }
        seen
    }
}

/// The content blocks of the user messages in a Messages API request.
fn content_blocks(body: &Value) -> Vec<Value> {
    message_blocks(body, &["user"])
}

/// The content blocks of the messages with one of `roles` (a string content
/// is one text block).
fn message_blocks(body: &Value, roles: &[&str]) -> Vec<Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| roles.iter().any(|r| m["role"] == *r))
        .flat_map(|m| match &m["content"] {
            Value::Array(blocks) => blocks.clone(),
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            _ => Vec::new(),
        })
        .collect()
}

/// The text a tool_result carries, whether a string or text blocks.
pub(crate) fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn messages_reply(body: &Value, script: &[Value]) -> (&'static str, String) {
    let results = content_blocks_last_turns(body);
    let offers_bash = body["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "Bash"));
    let (content, stop) = match script.get(results) {
        Some(call) if offers_bash => (
            json!([{"type": "tool_use", "id": format!("toolu_{results:04}"),
                    "name": call["name"], "input": call["input"]}]),
            "tool_use",
        ),
        _ => (json!([{"type": "text", "text": "done"}]), "end_turn"),
    };
    let message = json!({"id": "msg_mock", "type": "message", "role": "assistant",
        "model": body["model"], "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 10}});
    if body["stream"] != true {
        return ("application/json", message.to_string());
    }
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    );
    for (i, block) in content.as_array().unwrap().iter().enumerate() {
        let (opening, delta) = if block["type"] == "text" {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        } else {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        };
        out += &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": i, "content_block": opening}),
        );
        out += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": i, "delta": delta}),
        );
        out += &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": i}),
        );
    }
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
               "usage": {"output_tokens": 10}}),
    );
    out += &event("message_stop", json!({"type": "message_stop"}));
    ("text/event-stream", out)
}

/// How many tool results the conversation already holds: the script's
/// position.
fn content_blocks_last_turns(body: &Value) -> usize {
    content_blocks(body)
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .count()
}
