//! `toolgate mcp --upstream <url>`: the proxy as a Streamable HTTP server on
//! loopback, in front of an MCP server reached by URL.
//!
//! # Why the client talks to a loopback listener, not to the server
//!
//! An MCP client configured with a URL speaks HTTP to it; a proxy in that
//! path must be a URL too. It listens on loopback only, with the rules of
//! `toolgate serve --http` (they are its code, `toolgate_loopback`): an
//! IP literal, the exact `Host` (no DNS rebinding), no `Origin` (no page in
//! the user's browser), connections of this user only, and the per-user
//! secret as `Authorization: Bearer`. A loopback port is open to every
//! local user and every web page; without the secret, any of them could
//! call the server's tools through the proxy, judged but under the user's
//! name.
//!
//! # One judge per MCP session, or per connection without one
//!
//! Each MCP session (the server's `Mcp-Session-Id`) has its own judge, so
//! request ids in flight, the tool list the client was shown and the
//! session state hooks keep (under `<session-id>-<n>`) are never shared
//! between two clients of one proxy. A request without a session — every
//! request of MCP 2026-07-28, which has none, and every request to a
//! server that names none — is judged by its connection's judge: one
//! shared judge made two clients that used the same JSON-RPC id refuse
//! each other ("already in flight"), and let one client's list decide
//! which tools another was refused. A session the proxy has not seen (it
//! was restarted) gets a fresh judge: the server decides whether the
//! session is still valid, and the proxy's guarantees do not depend on
//! what it saw before (a call to a tool outside the pinned definitions is
//! refused whatever list the client holds).
//!
//! # Every message still goes through the judge
//!
//! The judge is the stdio transport's: only the framing differs. A request
//! the client POSTs is judged before it is forwarded; whatever the server
//! sends back, as one JSON body or as events on that POST's stream or on
//! the GET stream, is judged before the client reads it; an answer goes to
//! the stream whose POST carried its request, wherever it arrived (a
//! resumed stream carries the answers of the one that broke). A stream
//! that ends with requests of its POST unanswered answers them with an
//! error, unless the server gave its events ids (the client may resume and
//! the answer may still come, judged, on the resumed stream). An answer
//! that is not 2xx, or that is neither JSON nor an event stream, is never
//! read as messages: its status reaches the client with toolgate's text,
//! not the server's body, which could carry an unjudged result.
//!
//! # Authorization toward the server
//!
//! The client's `Authorization` is the proxy's secret and is never
//! forwarded. A key or token the server wants is given by the operator
//! (`--upstream-header`, see `upstream`); an OAuth flow toward the server
//! is not done: such a server answers 401, and the client is told so.

mod forward;
mod list;
mod relay;
mod reply;
mod routing;
pub(crate) mod sse;
mod upstream;

pub use list::list_tools_http;
pub use upstream::{Upstream, masked_str as masked_url};

use crate::judge::Judge;
use crate::{McpError, Proxy};
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use nix::sys::signal::Signal;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::signal::unix::{SignalKind, signal};
use toolgate_loopback::{Peers, Token, accept_each, bind, loopback_gate};

/// The path the proxy answers MCP on.
pub const PATH: &str = "/mcp";
/// Connections served at once (as `serve --http`).
const MAX_CONNECTIONS: usize = 32;
/// MCP sessions kept at once; past it the one made longest ago is dropped
/// (its client then starts a new one, as after a server restart).
const MAX_SESSIONS: usize = 256;
/// How long the server has to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to send a request's body once its headers are in.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client has to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

type Body = Either<Full<Bytes>, sse::Stream>;

/// The proxy's state, shared by every connection.
pub(crate) struct Shared {
    proxy: Proxy,
    upstream: reqwest::Url,
    /// `upstream` as messages show it (`upstream::masked`).
    shown: String,
    client: reqwest::Client,
    host: String,
    token: Token,
    sessions: Mutex<Sessions>,
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Arc<Session>>,
    made: u64,
}

/// One client connection: the judge of its requests without a session.
#[derive(Default)]
pub(crate) struct Connection {
    sessionless: std::sync::OnceLock<Arc<Session>>,
}

/// One MCP session: its judge, and which stream waits for each request.
pub(crate) struct Session {
    judge: Judge,
    made: u64,
    /// Request key → the stream (by its number) whose POST carried it.
    waiters: Mutex<HashMap<String, (u64, tokio::sync::mpsc::Sender<sse::Out>)>>,
    streams: std::sync::atomic::AtomicU64,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each use is one lookup, insert or remove: a panic cannot leave the
    // map half-written, so a poisoned lock is still sound.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    fn new_session(&self, sessions: &mut Sessions) -> Arc<Session> {
        sessions.made += 1;
        let n = sessions.made;
        Arc::new(Session {
            judge: self
                .proxy
                .judge_for(format!("{}-{n}", self.proxy.session_id)),
            made: n,
            waiters: Mutex::default(),
            streams: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The session a request belongs to: by its `Mcp-Session-Id`; a new
    /// one for an `initialize` without one (kept once the server names it,
    /// see [`Shared::adopt`]); else the connection's own. `None`: an id
    /// no `initialize` answer named (or one dropped since).
    ///
    /// An unknown id used to start a session of its own, with a fresh
    /// judge: a server that renamed its session in a later answer (which
    /// the client then used) got a judge that had forgotten the tools a
    /// `list_tools` hook hid and every hook's session state. A session
    /// exists only as the server named it in its answer to `initialize`;
    /// any other id is answered 404, which the MCP transport tells a
    /// client to meet with a new `initialize`.
    fn session(
        &self,
        id: Option<&str>,
        initialize: bool,
        connection: &Connection,
    ) -> Option<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        match id {
            Some(id) => sessions.by_id.get(id).cloned(),
            None if initialize => Some(self.new_session(&mut sessions)),
            None => Some(Arc::clone(
                connection
                    .sessionless
                    .get_or_init(|| self.new_session(&mut sessions)),
            )),
        }
    }

    /// Whether `id` names a session the server named at `initialize`.
    fn knows(&self, id: &str) -> bool {
        lock(&self.sessions).by_id.contains_key(id)
    }

    /// The server answered `initialize` in `session`, naming it `id` (or
    /// not: a server without sessions, whose later requests on this
    /// connection the same judge takes).
    fn adopt(&self, id: Option<&str>, session: &Arc<Session>, connection: &Connection) {
        match id {
            Some(id) => keep(&mut lock(&self.sessions), id, session),
            None => {
                let _ = connection.sessionless.set(Arc::clone(session));
            }
        }
    }

    /// The client ended session `id`.
    fn end(&self, id: &str) {
        lock(&self.sessions).by_id.remove(id);
    }
}

fn keep(sessions: &mut Sessions, id: &str, session: &Arc<Session>) {
    if sessions.by_id.len() >= MAX_SESSIONS && !sessions.by_id.contains_key(id) {
        let oldest = sessions
            .by_id
            .iter()
            .min_by_key(|(_, session)| session.made)
            .map(|(id, _)| id.clone());
        if let Some(oldest) = oldest {
            sessions.by_id.remove(&oldest);
        }
    }
    sessions.by_id.insert(id.to_owned(), Arc::clone(session));
}

/// The client that reaches `upstream`, giving it its headers on every
/// request.
fn client_for(upstream: &Upstream) -> Result<reqwest::Client, McpError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .default_headers(upstream.headers.clone())
        // A redirect would send the session, and the headers given for
        // this server, somewhere the user did not name.
        .redirect(reqwest::redirect::Policy::none());
    if upstream::is_loopback(&upstream.url) {
        // A proxy from the environment has no business with loopback.
        client = client.no_proxy();
    }
    client.build().map_err(|e| McpError::Upstream {
        url: upstream.shown.clone(),
        why: e.without_url().to_string(),
    })
}

/// Listens on `addr` and proxies each client's MCP session to `upstream`
/// until a signal stops it; returns the exit code (128 + the signal).
pub(crate) async fn run(
    proxy: Proxy,
    upstream: Upstream,
    addr: SocketAddr,
    token: Token,
) -> Result<i32, McpError> {
    let client = client_for(&upstream)?;
    let Upstream {
        url: upstream,
        shown,
        ..
    } = upstream;
    let (listener, host) = bind(addr)
        .await
        .map_err(|e| McpError::Listen(format!("{e:#}")))?;
    let mut terminate = signal(SignalKind::terminate()).map_err(McpError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(McpError::Signals)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(McpError::Signals)?;
    eprintln!(
        "toolgate mcp: {} on http://{host}{PATH}, in front of {shown}",
        proxy.server
    );
    let shared = Arc::new(Shared {
        proxy,
        upstream,
        shown,
        client,
        host,
        token,
        sessions: Mutex::default(),
    });
    accept_each(listener, MAX_CONNECTIONS, Peers::ThisUser, move |stream| {
        connection(Arc::clone(&shared), stream)
    });
    let stopped = tokio::select! {
        _ = terminate.recv() => Signal::SIGTERM,
        _ = interrupt.recv() => Signal::SIGINT,
        _ = hangup.recv() => Signal::SIGHUP,
    };
    Ok(128 + stopped as i32)
}

async fn connection(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    let own = Arc::new(Connection::default());
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        let own = Arc::clone(&own);
        async move { Ok::<_, std::convert::Infallible>(answer(shared, own, request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(64 * 1024)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

async fn answer(
    shared: Arc<Shared>,
    own: Arc<Connection>,
    request: Request<Incoming>,
) -> Response<Body> {
    if let Err((status, why)) = loopback_gate(&shared.host, request.headers()) {
        return text(status, &why);
    }
    if request.uri().path() != PATH {
        return text(
            StatusCode::NOT_FOUND,
            &format!("no such endpoint; MCP is at {PATH}"),
        );
    }
    if !shared.token.admits(request.headers().get(AUTHORIZATION)) {
        return text(
            StatusCode::UNAUTHORIZED,
            "refused: no or a wrong `Authorization: Bearer` secret (the one in \
             $XDG_STATE_HOME/toolgate/http-token; see docs/mcp.md)",
        );
    }
    match *request.method() {
        Method::POST => relay::post(shared, &own, request).await,
        Method::GET => relay::get(shared, &own, request).await,
        Method::DELETE => relay::delete(shared, request).await,
        _ => {
            let mut answer = text(StatusCode::METHOD_NOT_ALLOWED, "only POST, GET and DELETE");
            answer.headers_mut().insert(
                hyper::header::ALLOW,
                HeaderValue::from_static("POST, GET, DELETE"),
            );
            answer
        }
    }
}

fn text(status: StatusCode, why: &str) -> Response<Body> {
    let mut answer = Response::new(Either::Left(Full::new(Bytes::from(format!(
        "toolgate: {why}\n"
    )))));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}
