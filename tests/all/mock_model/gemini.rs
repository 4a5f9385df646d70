//! Google's Gemini API (Gemini CLI), as Gemini CLI 0.61.0 calls it:
//!
//! - first, once per prompt, a routing call to a flash-lite model,
//!   `POST /v1beta/models/<m>:generateContent` (not streamed), whose
//!   `generationConfig.responseJsonSchema` asks for `complexity_reasoning`
//!   and `complexity_score` (older routers ask for `reasoning` and
//!   `model_choice`): answered with that JSON as the model's text, a simple
//!   task;
//! - then one `POST /v1beta/models/<m>:streamGenerateContent?alt=sse` per
//!   model turn, answered as one server-sent event with the next scripted
//!   `functionCall` (counted by the `functionResponse`s already in the
//!   conversation) and, once the script is done, a closing text.

use super::{Api, MockModel};
use serde_json::{Value, json};

pub(crate) struct Gemini;

impl Api for Gemini {
    fn is_call(&self, path: &str, _: &Value) -> bool {
        path.contains(":generateContent") || path.contains(":streamGenerateContent")
    }

    fn reply(&self, path: &str, body: &Value, script: &[Value]) -> (&'static str, String) {
        let response = match routing_answer(body) {
            Some(answer) => text_response(&answer.to_string()),
            None => turn(body, script),
        };
        if path.contains("alt=sse") {
            ("text/event-stream", format!("data: {response}\r\n\r\n"))
        } else {
            ("application/json", response.to_string())
        }
    }

    fn other(&self, _: &str) -> (&'static str, String) {
        ("application/json", json!({}).to_string())
    }
}

impl MockModel {
    /// A Gemini API that makes these function calls, one per turn: each is
    /// `{"name": …, "input": …}` (the input becomes the call's `args`).
    pub(crate) fn gemini(script: Vec<Value>) -> Self {
        Self::start(Gemini, script)
    }

    /// The `response` of every `functionResponse` the model was sent, in the
    /// order of the conversation (the last model call holds them all):
    /// `{"output": …}` for a result, `{"error": …}` for a failure.
    pub(crate) fn function_responses(&self) -> Vec<Value> {
        let requests = self.requests();
        let Some(last) = requests.iter().rev().find(|b| b.get("tools").is_some()) else {
            return Vec::new();
        };
        last["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["parts"].as_array().into_iter().flatten())
            .filter_map(|p| p.get("functionResponse").map(|r| r["response"].clone()))
            .collect()
    }
}

/// The JSON a routing call asks for, when `body` is one.
fn routing_answer(body: &Value) -> Option<Value> {
    let schema = body["generationConfig"]["responseJsonSchema"].to_string()
        + &body["generationConfig"]["responseSchema"].to_string();
    if schema.contains("complexity_score") {
        Some(json!({"complexity_reasoning": "a scripted task", "complexity_score": 10}))
    } else if schema.contains("model_choice") {
        Some(json!({"reasoning": "a scripted task", "model_choice": "flash"}))
    } else {
        None
    }
}

/// The next model turn: the next scripted call, or the closing text.
fn turn(body: &Value, script: &[Value]) -> Value {
    let done = body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["parts"].as_array().into_iter().flatten())
        .filter(|p| p.get("functionResponse").is_some())
        .count();
    match script.get(done) {
        Some(call) => {
            candidate(json!([{"functionCall": {"name": call["name"], "args": call["input"]}}]))
        }
        None => text_response("done"),
    }
}

fn text_response(text: &str) -> Value {
    candidate(json!([{"text": text}]))
}

fn candidate(parts: Value) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": "mock"
    })
}
