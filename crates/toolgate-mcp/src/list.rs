//! Asking a server for its tools, as a client would: what `toolgate mcp
//! trust` shows the user to approve.
//!
//! It is the same server command the proxy runs, asked the way a client
//! asks (initialize, `notifications/initialized`, then `tools/list` page
//! by page; a server that refuses `initialize` is asked as a 2026-07-28
//! client: `server/discover`, then the pages), so what the user reviews is what the proxy will compare the
//! client's lists against. Two things a server's list depends on are
//! taken care of:
//!
//! - the client's capabilities: a server may offer a tool only to a client
//!   that can sample or elicit (server-everything does). This client
//!   declares roots, sampling (with context and tools) and elicitation
//!   (form and URL), so the review shows every
//!   tool any client could be offered; it answers the server's requests
//!   for them with errors, as listing never needs them;
//! - time: a server may register tools after `initialized` (and say so
//!   with `notifications/tools/list_changed`). The list is asked once the
//!   server has been quiet for [`SETTLE`].

use crate::McpError;
use crate::stdio::{Frame, Server, read_frame, spawn};
use serde_json::{Value, json};
use std::ffi::OsString;
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

/// How long a server has to list its tools.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a server must be quiet after `initialized` before it is asked.
pub(crate) const SETTLE: Duration = Duration::from_millis(500);
/// Pages of `tools/list` followed at most.
const MAX_PAGES: usize = 100;

/// What a server shows a client, for review: its tools, and the
/// `instructions` of its `initialize` answer (clients put them in the
/// model's prompt: Claude Code does).
#[derive(Debug, Clone, Default)]
pub struct Listed {
    /// Its tools, as `tools/list` gave them.
    pub tools: Vec<Value>,
    /// Its instructions, when it gave a string.
    pub instructions: Option<String>,
}

/// The instructions in an `initialize` result, when they are a string.
pub(crate) fn instructions_of(initialized: &Value) -> Option<String> {
    initialized
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The tools (and instructions) the server `command` starts shows.
///
/// # Errors
///
/// [`McpError`] when the server cannot be started, does not answer within
/// [`LIST_TIMEOUT`], or answers with an error.
pub async fn list_tools(command: &[OsString], max_message: usize) -> Result<Listed, McpError> {
    let mut server = spawn(command)?;
    let listed = tokio::time::timeout(LIST_TIMEOUT, ask(&mut server, max_message)).await;
    server.kill();
    listed.map_err(|_| McpError::List(format!("no answer within {LIST_TIMEOUT:?}")))?
}

pub(crate) fn failed(what: impl std::fmt::Display) -> McpError {
    McpError::List(what.to_string())
}

async fn send(stdin: &mut ChildStdin, message: &Value) -> Result<(), McpError> {
    let mut line = message.to_string().into_bytes();
    line.push(b'\n');
    stdin
        .write_all(&line)
        .await
        .map_err(|e| failed(format!("cannot write to the server: {e}")))
}

/// The client's side of one conversation: messages are read by a task of
/// their own, so waiting for one can time out without losing a line.
struct Conversation<'a> {
    stdin: &'a mut ChildStdin,
    messages: mpsc::Receiver<Result<Value, McpError>>,
    next_id: u64,
}

impl Conversation<'_> {
    /// The next message that is not a request of the server's (those are
    /// answered here); `None` when `within` passed first.
    async fn next(&mut self, within: Duration) -> Result<Option<Value>, McpError> {
        loop {
            let message = match tokio::time::timeout(within, self.messages.recv()).await {
                Err(_) => return Ok(None),
                Ok(None) => return Err(failed("the server closed its output")),
                Ok(Some(message)) => message?,
            };
            let (Some(method), Some(id)) = (message["method"].as_str(), message.get("id")) else {
                return Ok(Some(message));
            };
            let reply = match method {
                "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                "roots/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": []}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "not offered while listing tools"}}),
            };
            send(self.stdin, &reply).await?;
        }
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value, McpError> {
        self.next_id += 1;
        let id = self.next_id;
        send(
            self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await?;
        loop {
            let Some(message) = self.next(LIST_TIMEOUT).await? else {
                return Err(failed(format!("no answer to {method}")));
            };
            if message.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(failed(format!(
                    "{method} was answered with an error: {error}"
                )));
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    }
}

async fn ask(server: &mut Server, max: usize) -> Result<Listed, McpError> {
    let (tx, messages) = mpsc::channel(64);
    let stdout = server
        .stdout
        .take()
        .ok_or_else(|| failed("no output to read"))?;
    let reader = tokio::spawn(async move {
        let mut out = BufReader::new(stdout);
        let mut buf = Vec::new();
        loop {
            let message = match read_frame(&mut out, max, &mut buf).await {
                Ok(Frame::Line) => serde_json::from_slice::<Value>(&buf).map_err(|e| {
                    failed(format!("the server sent a message that is not JSON ({e})"))
                }),
                Ok(Frame::Oversized(bytes)) => Err(failed(format!(
                    "the server sent a message of {bytes} bytes, over the cap"
                ))),
                Ok(Frame::End) | Err(_) => return,
            };
            if tx.send(message).await.is_err() {
                return;
            }
        }
    });
    let mut talk = Conversation {
        stdin: &mut server.stdin,
        messages,
        next_id: 0,
    };
    let (instructions, meta) = match talk.request("initialize", initialize_params()).await {
        Ok(initialized) => {
            send(
                talk.stdin,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .await?;
            while talk.next(SETTLE).await?.is_some() {}
            (instructions_of(&initialized), None)
        }
        Err(handshake) => {
            let discovered = discover(&mut talk, handshake).await?;
            (instructions_of(&discovered), Some(stateless_meta()))
        }
    };
    let tools = pages(&mut talk, meta.as_ref()).await;
    reader.abort();
    Ok(Listed {
        tools: tools?,
        instructions,
    })
}

/// A server that refused `initialize`, asked as a 2026-07-28 client: its
/// `server/discover` answer (whose instructions are reviewed as
/// `initialize`'s are).
pub(crate) async fn discover(talk: &mut impl Ask, handshake: McpError) -> Result<Value, McpError> {
    talk.request("server/discover", json!({"_meta": stateless_meta()}))
        .await
        .map_err(|stateless| {
            failed(format!(
                "{}; asked as a 2026-07-28 client: {}",
                toolgate::text::error_chain(&handshake),
                toolgate::text::error_chain(&stateless)
            ))
        })
}

/// What each 2026-07-28 request of the review says of its client: the
/// revision, this client, and every capability (as `initialize` does).
pub(crate) fn stateless_meta() -> Value {
    let initialize = initialize_params();
    json!({
        crate::revision::VERSION_KEY: crate::revision::STATELESS[0],
        "io.modelcontextprotocol/clientInfo": initialize["clientInfo"],
        "io.modelcontextprotocol/clientCapabilities": initialize["capabilities"],
    })
}

/// What this client says of itself in `initialize`.
///
/// Every capability a client can declare, so a server that offers a tool
/// only to clients with one (server-everything's `trigger-url-elicitation`
/// needs URL elicitation, which a bare `elicitation: {}` does not declare:
/// that means form only) shows it here, where it can be approved; a tool
/// the review never saw is withheld through the proxy for ever.
pub(crate) fn initialize_params() -> Value {
    json!({"protocolVersion": "2025-11-25",
           "capabilities": {"roots": {"listChanged": true},
                            "sampling": {"context": {}, "tools": {}},
                            "elicitation": {"form": {}, "url": {}}},
           "clientInfo": {"name": "toolgate-mcp-trust", "version": env!("CARGO_PKG_VERSION")}})
}

/// One side of a listing conversation, whatever carries it.
pub(crate) trait Ask {
    /// The result of one request; an error answer is an `Err`.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, McpError>;
}

impl Ask for Conversation<'_> {
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, McpError> {
        Conversation::request(self, method, params).await
    }
}

/// Every page of `tools/list`, each request carrying `meta` (a stateless
/// client's) when given.
pub(crate) async fn pages(
    talk: &mut impl Ask,
    meta: Option<&Value>,
) -> Result<Vec<Value>, McpError> {
    let mut tools = Vec::new();
    let mut cursor: Option<Value> = None;
    for _ in 0..MAX_PAGES {
        let mut params = cursor.map_or_else(|| json!({}), |c| json!({"cursor": c}));
        if let Some(meta) = meta {
            params["_meta"] = meta.clone();
        }
        let page = talk.request("tools/list", params).await?;
        let Some(listed) = page.get("tools").and_then(Value::as_array) else {
            return Err(failed("a tools/list answer without `tools`"));
        };
        tools.extend(listed.iter().cloned());
        match page.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => return Ok(tools),
        }
    }
    Err(failed(format!("more than {MAX_PAGES} pages of tools")))
}
