//! A mock model API on 127.0.0.1: the plain HTTP/1.1 server and the
//! Messages API answer (Claude Code's format, streamed as server-sent
//! events) that both the bench's agent section and the live tests use.
//!
//! # Why here
//!
//! `toolgate bench --agent` runs the real Claude Code against a mock it
//! starts itself, and the live tests (tests/all/mock_model/) run it against
//! theirs. One copy of the server and of the event stream Claude Code
//! accepts, in the library, keeps the two from drifting: a format change
//! found by a live test is fixed for the bench too. It is public only so
//! the test suite can reach it (`#[doc(hidden)]`): not API.
//!
//! # Why std and not an HTTP crate
//!
//! One thread per connection, keep-alive, `Content-Length` bodies: all the
//! agents tested need, in sixty lines, and the bench's timing wants the
//! moment the answer's last byte was handed to the socket, which a server
//! framework hides.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Instant;

/// An answer, and what to do once its last byte is written.
pub struct Reply {
    /// Its `content-type`.
    pub content_type: &'static str,
    /// Its body.
    pub body: String,
    /// Called with the moment the whole answer was written.
    pub sent: Option<Box<dyn FnOnce(Instant) + Send>>,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("content_type", &self.content_type)
            .field("body", &self.body)
            .finish_non_exhaustive()
    }
}

impl Reply {
    /// An answer with nothing to do once sent.
    pub fn new((content_type, body): (&'static str, String)) -> Self {
        Reply {
            content_type,
            body,
            sent: None,
        }
    }
}

/// What answers the mock's requests.
pub trait Respond: Send + Sync + 'static {
    /// The answer to a request for `path` (with its query) whose body is
    /// `body` (JSON; `Null` when it is not), read whole at `received`.
    fn respond(&self, path: &str, body: Value, received: Instant) -> Reply;
}

/// Serves `listener` on threads of its own until the process ends.
pub fn serve(listener: TcpListener, respond: Arc<dyn Respond>) {
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let respond = respond.clone();
            std::thread::spawn(move || connection(stream, &*respond));
        }
    });
}

fn connection(stream: TcpStream, respond: &dyn Respond) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
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
        let received = Instant::now();
        let path = request_line.split_whitespace().nth(1).unwrap_or("/");
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let reply = respond.respond(path, body, received);
        let mut out = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ncontent-length: {}\r\n\r\n",
            reply.content_type,
            reply.body.len()
        )
        .into_bytes();
        out.extend_from_slice(reply.body.as_bytes());
        if writer
            .write_all(&out)
            .and_then(|()| writer.flush())
            .is_err()
        {
            return;
        }
        if let Some(sent) = reply.sent {
            sent(Instant::now());
        }
    }
}

/// Whether a request to `path` is a Messages API model call (not a token
/// count).
pub fn is_messages_call(path: &str) -> bool {
    path.starts_with("/v1/messages") && !path.contains("count_tokens")
}

/// What a Messages API mock answers to anything but a model call.
pub fn messages_other() -> (&'static str, String) {
    ("application/json", json!({"input_tokens": 10}).to_string())
}

/// Whether a Messages API request offers the tool `name`.
pub fn offers_tool(request: &Value, name: &str) -> bool {
    request["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == name))
}

/// The content blocks of the messages with one of `roles` in a Messages API
/// request (a string content is one text block).
pub fn message_blocks(request: &Value, roles: &[&str]) -> Vec<Value> {
    request["messages"]
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

/// The `tool_result` blocks of a Messages API request, in order.
pub fn tool_results(request: &Value) -> Vec<Value> {
    message_blocks(request, &["user"])
        .into_iter()
        .filter(|b| b["type"] == "tool_result")
        .collect()
}

/// The text a `tool_result` carries, whether a string or text blocks.
pub fn result_text(block: &Value) -> String {
    content_text(&block["content"])
}

/// A message's content as text: a string, or its text parts joined (the
/// Messages API's and chat completions' shape alike).
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The answer to `request` whose content is `content` (the assistant's
/// blocks: `text` or `tool_use`), stopping for `stop` (`tool_use`,
/// `end_turn`): one JSON message, or the event stream Claude Code reads
/// when the request asked for `stream`.
pub fn messages_reply(request: &Value, content: Value, stop: &str) -> (&'static str, String) {
    let message = json!({"id": "msg_mock", "type": "message", "role": "assistant",
        "model": request["model"], "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 10, "output_tokens": 10}});
    if request["stream"] != true {
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
    for (i, block) in content.as_array().into_iter().flatten().enumerate() {
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
