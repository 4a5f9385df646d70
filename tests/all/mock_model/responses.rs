//! OpenAI's Responses API (Codex): each `POST /v1/responses` is answered,
//! streamed, with the next scripted `function_call` (counted by the
//! `function_call_output`s already in the input) and then a closing message.

use super::{Api, MockModel};
use serde_json::{Value, json};

pub(crate) struct Responses;

impl Api for Responses {
    fn is_call(&self, path: &str, _: &Value) -> bool {
        path.starts_with("/v1/responses")
    }

    fn reply(&self, _: &str, body: &Value, script: &[Value]) -> (&'static str, String) {
        responses_reply(body, script)
    }

    fn other(&self, _: &str) -> (&'static str, String) {
        (
            "application/json",
            json!({"models": [], "data": []}).to_string(),
        )
    }
}

impl MockModel {
    /// Every `function_call_output` the model was sent (Responses API),
    /// once each.
    pub(crate) fn function_outputs(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for body in self.requests() {
            for item in body["input"].as_array().into_iter().flatten() {
                if item["type"] == "function_call_output"
                    && let Some(out) = item["output"].as_str()
                    && !seen.iter().any(|s| s == out)
                {
                    seen.push(out.to_owned());
                }
            }
        }
        seen
    }

    /// Every input text of a message the model was sent (Responses API):
    /// hook context arrives as a developer message.
    pub(crate) fn input_texts(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for body in self.requests() {
            for item in body["input"].as_array().into_iter().flatten() {
                for part in item["content"].as_array().into_iter().flatten() {
                    if let Some(text) = part["text"].as_str()
                        && !seen.iter().any(|s| s == text)
                    {
                        seen.push(text.to_owned());
                    }
                }
            }
        }
        seen
    }
}

fn responses_reply(body: &Value, script: &[Value]) -> (&'static str, String) {
    let done = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .count();
    let item = match script.get(done) {
        Some(call) => {
            let mut item = json!({"type": "function_call", "id": format!("fc_{done}"),
                "call_id": format!("call_{done}"), "name": call["name"],
                "arguments": call["input"].to_string()});
            // A tool inside a namespace (Codex offers each MCP server's
            // tools as one).
            if let Some(namespace) = call.get("namespace") {
                item["namespace"] = namespace.clone();
            }
            item
        }
        None => json!({"type": "message", "id": "msg_mock", "role": "assistant",
            "content": [{"type": "output_text", "text": "done", "annotations": []}]}),
    };
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = event(
        "response.created",
        json!({"type": "response.created", "response": {"id": "resp_mock"}}),
    );
    out += &event(
        "response.output_item.done",
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
    );
    out += &event(
        "response.completed",
        json!({"type": "response.completed", "response": {"id": "resp_mock", "usage": {
            "input_tokens": 10, "input_tokens_details": null, "output_tokens": 10,
            "output_tokens_details": null, "total_tokens": 20}}}),
    );
    ("text/event-stream", out)
}
