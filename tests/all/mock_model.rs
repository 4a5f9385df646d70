//! A mock of the model APIs the real agent CLIs talk to, on 127.0.0.1: it
//! scripts the tool calls the "model" makes and records every request, so a
//! live test can assert on exactly what the model was shown.
//!
//! Anthropic's Messages API (Claude Code): each `POST /v1/messages` that
//! offers the `Bash` tool is answered, streamed as server-sent events, with
//! the next scripted `tool_use` (counted by the `tool_result`s already in the
//! conversation) and, once the script is done, with a closing text. Other
//! requests get an empty success.
//!
//! OpenAI's Responses API (Codex): each `POST /v1/responses` is answered,
//! streamed, with the next scripted `function_call` (counted by the
//! `function_call_output`s already in the input) and then a closing message.
//!
//! A plain HTTP/1.1 server on std: one thread per connection, keep-alive,
//! `Content-Length` bodies. Nothing more is needed by the clients tested.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// A running mock, serving until the process ends.
pub(crate) struct MockModel {
    pub(crate) port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// Which API the mock speaks.
#[derive(Clone, Copy)]
enum Api {
    Anthropic,
    OpenAi,
}

impl MockModel {
    /// A Messages API that makes these tool calls, one per turn: each is
    /// `{"name": …, "input": …}`.
    pub(crate) fn anthropic(script: Vec<Value>) -> Self {
        Self::start(Api::Anthropic, script)
    }

    /// A Responses API that makes these function calls, one per turn: each
    /// is `{"name": …, "input": …}` (the input becomes the call's arguments).
    pub(crate) fn openai(script: Vec<Value>) -> Self {
        Self::start(Api::OpenAi, script)
    }

    fn start(api: Api, script: Vec<Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let script = Arc::new(script);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, script) = (log.clone(), script.clone());
                std::thread::spawn(move || serve(stream, api, &log, &script));
            }
        });
        MockModel { port, requests }
    }

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

    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request body received (JSON), in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }

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
    /// hook context and blocking errors among them) and, from Claude Code
    /// 2.1.332 on, in `system` messages inside the conversation (where it
    /// now puts hook context).
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

/// The content blocks of the user messages in a Messages API request.
fn content_blocks(body: &Value) -> Vec<Value> {
    message_blocks(body, &["user"])
}

/// The content blocks of the messages with one of these roles (a string
/// content is one text block).
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

fn serve(stream: TcpStream, api: Api, log: &Mutex<Vec<Value>>, script: &[Value]) {
    let mut reader = BufReader::new(stream.try_clone().expect("the socket clones"));
    let mut writer = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let path = request_line.split_whitespace().nth(1).unwrap_or("/");
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let (content_type, reply) = match api {
            Api::Anthropic
                if path.starts_with("/v1/messages") && !path.contains("count_tokens") =>
            {
                log.lock().unwrap().push(body.clone());
                messages_reply(&body, script)
            }
            Api::OpenAi if path.starts_with("/v1/responses") => {
                log.lock().unwrap().push(body.clone());
                responses_reply(&body, script)
            }
            Api::OpenAi => (
                "application/json",
                json!({"models": [], "data": []}).to_string(),
            ),
            Api::Anthropic => ("application/json", json!({"input_tokens": 10}).to_string()),
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
            reply.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(reply.as_bytes()).is_err()
        {
            return;
        }
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

fn responses_reply(body: &Value, script: &[Value]) -> (&'static str, String) {
    let done = body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .count();
    let item = match script.get(done) {
        Some(call) => json!({"type": "function_call", "id": format!("fc_{done}"),
            "call_id": format!("call_{done}"), "name": call["name"],
            "arguments": call["input"].to_string()}),
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
