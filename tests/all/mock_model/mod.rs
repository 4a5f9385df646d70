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
//! The HTTP server is the library's (`toolgate_bench::mock`, which
//! `toolgate bench --agent` runs Claude Code against too): one copy of it.

mod anthropic;
mod chat;
mod gemini;
mod responses;

pub(crate) use anthropic::Anthropic;
#[allow(unused_imports)]
pub(crate) use chat::Chat;
pub(crate) use responses::Responses;
pub(crate) use toolgate_bench::mock::result_text;

use serde_json::Value;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use toolgate_bench::mock::{self, Reply};

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
        mock::serve(
            listener,
            Arc::new(Scripted {
                api: Box::new(api),
                log,
                script,
            }),
        );
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

/// An [`Api`] with its script and its log, as the server's responder.
struct Scripted {
    api: Box<dyn Api>,
    log: Arc<Mutex<Vec<Value>>>,
    script: Vec<Value>,
}

impl mock::Respond for Scripted {
    fn respond(&self, path: &str, body: Value, _: std::time::Instant) -> Reply {
        Reply::new(if self.api.is_call(path, &body) {
            self.log.lock().unwrap().push(body.clone());
            self.api.reply(path, &body, &self.script)
        } else {
            self.api.other(path)
        })
    }
}
