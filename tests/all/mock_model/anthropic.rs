//! Anthropic's Messages API (Claude Code): each `POST /v1/messages` that
//! offers the `Bash` tool is answered, streamed as server-sent events, with
//! the next scripted `tool_use` and, once the script is done, with a closing
//! text. Other requests get an empty success. The event stream and the
//! request's blocks are read and written by the library's mock
//! (`toolgate_bench::mock`), which `toolgate bench --agent` uses too.

use super::{Api, MockModel};
use serde_json::{Value, json};
use toolgate_bench::mock::{self, message_blocks};

pub(crate) struct Anthropic;

impl Api for Anthropic {
    fn is_call(&self, path: &str, _: &Value) -> bool {
        mock::is_messages_call(path)
    }

    fn reply(&self, _: &str, body: &Value, script: &[Value]) -> (&'static str, String) {
        messages_reply(body, script)
    }

    fn other(&self, _: &str) -> (&'static str, String) {
        mock::messages_other()
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

fn messages_reply(body: &Value, script: &[Value]) -> (&'static str, String) {
    let results = content_blocks_last_turns(body);
    let (content, stop) = match script.get(results) {
        Some(call) if mock::offers_tool(body, "Bash") => (
            json!([{"type": "tool_use", "id": format!("toolu_{results:04}"),
                    "name": call["name"], "input": call["input"]}]),
            "tool_use",
        ),
        _ => (json!([{"type": "text", "text": "done"}]), "end_turn"),
    };
    mock::messages_reply(body, content, stop)
}

/// How many tool results the conversation already holds: the script's
/// position.
fn content_blocks_last_turns(body: &Value) -> usize {
    mock::tool_results(body).len()
}
