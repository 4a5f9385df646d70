//! `toolgate mcp`: a proxy between an MCP client and one MCP server that
//! takes every `tools/call` through the chain.
//!
//! Many MCP clients have no hooks at all, and the agents that do cover
//! MCP tools unevenly. A proxy in the MCP path guards them all with the
//! chain that guards the agents' built-in tools: a call is a `pre_tool_use`
//! named `mcp__<server>__<tool>` (Claude Code's naming, so existing matchers
//! and guards apply unchanged), its result a `post_tool_use`.
//!
//! # Why a pass-through, not the official SDK
//!
//! `rmcp` models MCP's messages as Rust types: a proxy built on it would
//! re-encode every message through them, and whatever those types do not
//! know (a field, a method or a capability newer than the SDK, a server's
//! own extension) would be dropped or refused. A guard must not be the
//! reason a client and server stop understanding each other. So the proxy
//! reads each line as plain JSON, acts on the few messages it judges
//! (`judge` says which), and forwards every other one as the bytes that
//! arrived: ids, notifications, progress, cancellation, resources,
//! prompts, sampling and elicitation, unknown methods and protocol version
//! negotiation reach the other side exactly as sent.
//!
//! # Fail closed
//!
//! A call is forwarded only after the chain let it through, and its result
//! reaches the client only after the post chain judged it. What the proxy
//! cannot judge (a call with no tool name, a reused request id, a result
//! it cannot read, a server that died with calls in flight) is answered
//! with an error; it never goes through unjudged.

mod fdio;
#[doc(hidden)]
pub mod fuzzing;
mod http;
mod judge;
mod list;
pub mod pins;
mod revision;
mod shape;
mod stdio;

pub use http::{PATH as HTTP_PATH, Upstream, list_tools_http, masked_url};
pub use list::{LIST_TIMEOUT, Listed, list_tools};
pub use toolgate_loopback::Token;

use std::ffi::OsString;
use toolgate::HookRunner;

/// The largest message either side may send, by default: 16 MiB (a tool's
/// result can carry an image or a file).
pub const DEFAULT_MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// One proxied server.
#[derive(Debug)]
pub struct Proxy {
    server: String,
    runner: HookRunner,
    session_id: String,
    cwd: Option<String>,
    max_message: usize,
    approval: Option<(Option<pins::Pins>, String)>,
}

impl Proxy {
    /// A proxy for the server called `server` (the `<server>` in
    /// `mcp__<server>__<tool>`), judging with `runner`.
    ///
    /// # Errors
    ///
    /// [`McpError::ServerName`] unless `server` is one or more ASCII
    /// letters, digits, `_` or `-` (Claude Code's rule for server names),
    /// so no server name can make a tool name another server's.
    pub fn new(server: impl Into<String>, runner: HookRunner) -> Result<Self, McpError> {
        let server = server.into();
        let valid = !server.is_empty()
            && server
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(McpError::ServerName { name: server });
        }
        Ok(Proxy {
            session_id: format!("mcp-{server}-{}", std::process::id()),
            server,
            runner,
            cwd: std::env::current_dir()
                .ok()
                .map(|dir| dir.to_string_lossy().into_owned()),
            max_message: DEFAULT_MAX_MESSAGE,
            approval: None,
        })
    }

    /// The session id hooks see (session state is kept under it); by
    /// default one per proxy process.
    #[must_use]
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = id.into();
        self
    }

    /// The largest message either side may send.
    #[must_use]
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// Shows the client only the tools whose definitions are `pins` (the
    /// user's approval; `None`: never reviewed, so none), and refuses a
    /// call to any other; `review` is the command that reviews this server,
    /// named in what the client and the user are told. Without it every
    /// tool is listed (an embedder's choice; the CLI always pins).
    #[must_use]
    pub fn approved(mut self, pins: Option<pins::Pins>, review: impl Into<String>) -> Self {
        self.approval = Some((pins, review.into()));
        self
    }

    fn judge(&self) -> judge::Judge {
        self.judge_for(self.session_id.clone())
    }

    /// A judge whose hooks see `session_id`.
    fn judge_for(&self, session_id: String) -> judge::Judge {
        judge::Judge::new(
            self.server.clone(),
            self.runner.clone(),
            session_id,
            self.cwd.clone(),
            self.approval
                .as_ref()
                .map(|(pins, review)| judge::Approval {
                    pins: pins.clone(),
                    review: review.clone(),
                    withheld: std::sync::Mutex::default(),
                }),
        )
    }

    /// Proxies this process's stdin and stdout to the server `command`
    /// starts, until either side ends; returns the exit code to end with
    /// (the server's, when it ended first).
    ///
    /// # Errors
    ///
    /// [`McpError`] when the server cannot be started.
    pub async fn run_stdio(self, command: &[OsString]) -> Result<i32, McpError> {
        stdio::run(self, command).await
    }

    /// Serves MCP's Streamable HTTP on the loopback `listen` (at
    /// [`HTTP_PATH`], to clients that present `token`) and proxies each
    /// session to the server at the URL `upstream`, until a signal stops
    /// it; returns the exit code to end with (128 + the signal's number).
    ///
    /// # Errors
    ///
    /// [`McpError`] when `listen` cannot be bound, or no client for the
    /// server can be made.
    pub async fn run_http(
        self,
        upstream: Upstream,
        listen: std::net::SocketAddr,
        token: Token,
    ) -> Result<i32, McpError> {
        http::run(self, upstream, listen, token).await
    }
}

/// Why the proxy could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server name is not one a tool name can carry.
    #[error(
        "server name {name:?} must be ASCII letters, digits, `_` or `-` \
         (it becomes part of every tool name: mcp__<server>__<tool>)"
    )]
    ServerName {
        /// The name given.
        name: String,
    },
    /// The proxy could not listen for the signals that end it (and its
    /// server with it).
    #[error("cannot handle signals")]
    Signals(#[source] std::io::Error),
    /// The server did not list its tools.
    #[error("cannot list the server's tools: {0}")]
    List(String),
    /// `--upstream` is not a URL the proxy can reach an MCP server at.
    #[error("--upstream {url}: {why}")]
    Upstream {
        /// What was given.
        url: String,
        /// Why it is refused.
        why: String,
    },
    /// A header given for the server (`--upstream-header`, counted from 1)
    /// is refused. The value is never quoted: it is usually a secret.
    #[error("--upstream-header #{at}: {why}")]
    UpstreamHeader {
        /// Which one, counted from 1.
        at: usize,
        /// Why it is refused.
        why: String,
    },
    /// The loopback address could not be listened on.
    #[error("{0}")]
    Listen(String),
    /// No command was given to start the server.
    #[error("no server command: give it after `--`")]
    NoServerCommand,
    /// The server's command could not be started.
    #[error("cannot start the MCP server `{program}`")]
    StartServer {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}
