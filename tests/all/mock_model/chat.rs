//! OpenAI-compatible chat completions (OpenCode, Qwen Code, Copilot CLI): each
//! `POST …/chat/completions` that offers tools is answered with the next
//! scripted tool call (counted by the `tool` messages already in the
//! conversation), streamed as server-sent events when the request asks, and
//! once the script is done with a closing text. A call that offers no tools
//! (a title, a summary) gets the closing text.

use super::{Api, MockModel, once_each};
use serde_json::{Value, json};
use toolgate_bench::mock::content_text;

pub(crate) struct Chat;

impl Api for Chat {
    fn is_call(&self, path: &str, _: &Value) -> bool {
        path.contains("/chat/completions")
    }

    fn reply(&self, _: &str, body: &Value, script: &[Value]) -> (&'static str, String) {
        chat_reply(body, script)
    }

    fn other(&self, _: &str) -> (&'static str, String) {
        (
            "application/json",
            json!({"object": "list", "data": [{"id": "mock", "object": "model", "owned_by": "mock"}]})
                .to_string(),
        )
    }
}

impl MockModel {
    /// A chat completions API that makes these tool calls, one per turn:
    /// each is `{"name": …, "input": …}`.
    pub(crate) fn chat(script: Vec<Value>) -> Self {
        Self::start(Chat, script)
    }

    /// The content of every `tool` message the model was sent, once each.
    pub(crate) fn tool_messages(&self) -> Vec<String> {
        once_each(self.requests().iter().flat_map(|body| {
            messages(body)
                .filter(|m| m["role"] == "tool")
                .map(|m| content_text(&m["content"]))
                .collect::<Vec<_>>()
        }))
    }

    /// The text of every message the model was sent (any role), once each.
    pub(crate) fn message_texts(&self) -> Vec<String> {
        once_each(self.requests().iter().flat_map(|body| {
            messages(body)
                .map(|m| content_text(&m["content"]))
                .collect::<Vec<_>>()
        }))
    }
}

fn messages(body: &Value) -> impl Iterator<Item = &Value> {
    body["messages"].as_array().into_iter().flatten()
}

fn chat_reply(body: &Value, script: &[Value]) -> (&'static str, String) {
    let done = messages(body).filter(|m| m["role"] == "tool").count();
    let offers_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
    let model = body["model"].clone();
    let (delta, finish) = match script.get(done) {
        Some(call) if offers_tools => (
            json!({"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": format!("call_{done}"), "type": "function",
                "function": {"name": call["name"], "arguments": call["input"].to_string()}}]}),
            "tool_calls",
        ),
        _ => (json!({"role": "assistant", "content": "done"}), "stop"),
    };
    let usage = json!({"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20});
    if body["stream"] != true {
        let reply = json!({"id": "chatcmpl-mock", "object": "chat.completion", "created": 0,
            "model": model, "choices": [{"index": 0, "message": delta, "finish_reason": finish}],
            "usage": usage});
        return ("application/json", reply.to_string());
    }
    let chunk = |choice: Value, usage: Value| {
        let mut chunk = json!({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
            "created": 0, "model": model, "choices": [choice]});
        if !usage.is_null() {
            chunk["usage"] = usage;
        }
        format!("data: {chunk}\n\n")
    };
    let mut out = chunk(
        json!({"index": 0, "delta": delta, "finish_reason": null}),
        Value::Null,
    );
    out += &chunk(
        json!({"index": 0, "delta": {}, "finish_reason": finish}),
        usage,
    );
    out += "data: [DONE]\n\n";
    ("text/event-stream", out)
}
