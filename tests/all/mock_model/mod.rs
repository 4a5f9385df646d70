//! A mock of the model APIs the real agent CLIs talk to, on 127.0.0.1: it
//! scripts the tool calls the "model" makes and records every request, so a
//! live test can assert on exactly what the model was shown.
//!
//! One file per API ([`Api`]), shared by every agent that speaks it:
//! `anthropic` (Claude Code's Messages API), `responses` (Codex's Responses
//! API), `chat` (OpenAI-compatible chat completions: OpenCode, Qwen Code,
//! Copilot CLI), `gemini` (Google's Gemini API: Gemini CLI).
//! Each answers a model call with the next scripted tool call (counted by
//! the tool results already in the conversation) and, once the script is
//! done, with a closing text.
//!
//! A plain HTTP/1.1 server on std: one thread per connection, keep-alive,
//! `Content-Length` bodies. Nothing more is needed by the clients tested.

mod anthropic;
mod chat;
mod gemini;
mod responses;

pub(crate) use anthropic::Anthropic;
pub(crate) use anthropic::result_text;
#[allow(unused_imports)]
pub(crate) use chat::Chat;
pub(crate) use responses::Responses;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// One model API: which requests are model calls, and the answers.
pub(crate) trait Api: Send + Sync + 'static {
    /// Whether a request to `path` (with its query) is a model call: logged,
    /// and answered by [`Api::reply`].
    fn is_call(&self, path: &str, body: &Value) -> bool;
    /// The answer to a model call: a content type and a body.
    fn reply(&self, path: &str, body: &Value, script: &[Value]) -> (&'static str, String);
    /// The answer to any other request.
    fn other(&self, path: &str) -> (&'static str, String);
}

/// A running mock, serving until the process ends.
pub(crate) struct MockModel {
    pub(crate) port: u16,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl MockModel {
    /// A Messages API that makes these tool calls, one per turn: each is
    /// `{"name": …, "input": …}`.
    pub(crate) fn anthropic(script: Vec<Value>) -> Self {
        Self::start(Anthropic, script)
    }

    /// A Responses API that makes these function calls, one per turn: each
    /// is `{"name": …, "input": …}` (the input becomes the call's arguments).
    pub(crate) fn openai(script: Vec<Value>) -> Self {
        Self::start(Responses, script)
    }

    /// A mock of `api` that makes these tool calls, one per turn.
    pub(crate) fn start(api: impl Api, script: Vec<Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let log = requests.clone();
        let script = Arc::new(script);
        let api: Arc<dyn Api> = Arc::new(api);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, script, api) = (log.clone(), script.clone(), api.clone());
                std::thread::spawn(move || serve(stream, &*api, &log, &script));
            }
        });
        MockModel { port, requests }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every model call's body received (JSON), in order.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

/// `texts` once each, in order of first appearance.
pub(crate) fn once_each(texts: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for text in texts {
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    seen
}

fn serve(stream: TcpStream, api: &dyn Api, log: &Mutex<Vec<Value>>, script: &[Value]) {
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
        let (content_type, reply) = if api.is_call(path, &body) {
            log.lock().unwrap().push(body.clone());
            api.reply(path, &body, script)
        } else {
            api.other(path)
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
