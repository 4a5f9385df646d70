//! One client request forwarded to the server, and what comes back judged
//! and relayed: as one JSON body when the server answered with one, as an
//! event stream when it streamed (or when the answer is more than one
//! message).

use super::forward::forward;
use super::reply::{fixed, refused, streamed, unknown_session};
use super::sse::{Out, Reader};
use super::{BODY_TIMEOUT, Body, Connection, Session, Shared, lock, text};
use crate::judge::{Route, answer_key, request_key};
use bytes::Bytes;
use http_body_util::{BodyExt, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::mpsc;

/// The session header, both ways.
pub(super) const SESSION: &str = "mcp-session-id";
/// Where the messages for one client request go.
enum Sink {
    /// Kept, to answer as one body once the server's answer is judged.
    Collect(Vec<Out>),
    /// Streamed as they come.
    Stream(mpsc::Sender<Out>),
}

impl Sink {
    /// `false` once the client is gone.
    async fn push(&mut self, out: Out) -> bool {
        match self {
            Sink::Collect(kept) => {
                kept.push(out);
                true
            }
            Sink::Stream(tx) => tx.send(out).await.is_ok(),
        }
    }
}

/// The requests one client stream carried, until it ends: the stream is
/// where their answers go, and, unless the client may resume it, their
/// ids stop being in flight with it (a client that went away is not
/// waiting for anything).
struct Pending {
    session: Arc<Session>,
    keys: Vec<String>,
    stream: u64,
    /// The server gave its events ids: the client may resume, and the
    /// answers may still come on the resumed stream.
    resumable: bool,
}

impl Pending {
    fn new(session: &Arc<Session>, keys: Vec<String>, tx: &mpsc::Sender<Out>) -> Self {
        let stream = session.streams.fetch_add(1, Ordering::Relaxed);
        let mut waiters = lock(&session.waiters);
        for key in &keys {
            waiters.insert(key.clone(), (stream, tx.clone()));
        }
        drop(waiters);
        Pending {
            session: Arc::clone(session),
            keys,
            stream,
            resumable: false,
        }
    }

    /// The server's side of the stream ended: requests still unanswered
    /// are answered with an error (`why`), unless the client may resume.
    async fn finish(&self, why: &str, sink: &mut Sink) {
        if self.resumable {
            return;
        }
        for route in self.session.judge.unanswered(&self.keys, why) {
            if let Route::ToClient(message) = route {
                sink.push(Out {
                    message,
                    ..Out::default()
                })
                .await;
            }
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut waiters = lock(&self.session.waiters);
        for key in &self.keys {
            if waiters.get(key).is_some_and(|(at, _)| *at == self.stream) {
                waiters.remove(key);
            }
        }
        drop(waiters);
        if !self.resumable {
            let _ = self.session.judge.unanswered(&self.keys, "");
        }
    }
}

impl Session {
    /// Sends each message the judge let through where it belongs: an
    /// answer to the stream whose POST carried its request, the rest to
    /// `sink` (the event's `id` and `retry` on the last). `false` once
    /// `sink`'s client is gone.
    async fn deliver(
        &self,
        routes: Vec<Route>,
        me: u64,
        (id, retry): (Option<String>, Option<u64>),
        sink: &mut Sink,
    ) -> bool {
        let last = routes.len().saturating_sub(1);
        for (at, route) in routes.into_iter().enumerate() {
            let Route::ToClient(message) = route else {
                // The judge sends nothing of the server's back to it.
                continue;
            };
            let elsewhere = answer_key(&message).and_then(|key| {
                lock(&self.waiters)
                    .get(&key)
                    .filter(|(stream, _)| *stream != me)
                    .map(|(_, tx)| tx.clone())
            });
            let (id, retry) = if at == last {
                (id.clone(), retry)
            } else {
                (None, None)
            };
            match elsewhere {
                Some(tx) => {
                    let out = Out {
                        message,
                        ..Out::default()
                    };
                    if tx.try_send(out).is_err() {
                        tracing::warn!("a client stream is not read; an answer for it was dropped");
                    }
                }
                None => {
                    if !sink.push(Out { message, id, retry }).await {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// How a server's body ended.
enum Relayed {
    /// It ended; `true`: its events had ids (the client may resume).
    Ended(bool),
    /// The client went away.
    ClientGone,
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    media_type(headers).is_some_and(|t| t.eq_ignore_ascii_case("text/event-stream"))
}

fn media_type(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
}

/// Judges what the server sent in `response` (one JSON message, or events)
/// and delivers it.
async fn relay_body(
    shared: &Shared,
    session: &Session,
    mut response: reqwest::Response,
    me: u64,
    sink: &mut Sink,
) -> Relayed {
    let max = shared.proxy.max_message;
    if is_event_stream(response.headers()) {
        return relay_events(session, response, max, me, sink).await;
    }
    if !media_type(response.headers()).is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
        // Neither of the transport's two answers: nothing in it is read as
        // a message (the requests it should have answered get an error).
        tracing::warn!("the server answered with neither JSON nor an event stream; not read");
        return Relayed::Ended(false);
    }
    let mut body = Vec::new();
    let mut over = None;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) if body.len() + chunk.len() > max => {
                over = Some(body.len() + chunk.len());
                break;
            }
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("the server's answer broke off: {e}");
                return Relayed::Ended(false);
            }
        }
    }
    let routes = match over {
        Some(bytes) => session.judge.server_oversized(bytes, max),
        None if body.iter().all(u8::is_ascii_whitespace) => Vec::new(),
        None => session.judge.on_server(&body).await,
    };
    if session.deliver(routes, me, (None, None), sink).await {
        Relayed::Ended(false)
    } else {
        Relayed::ClientGone
    }
}

/// Judges each event of the server's stream and delivers what it lets
/// through, until the stream ends.
async fn relay_events(
    session: &Session,
    mut response: reqwest::Response,
    max: usize,
    me: u64,
    sink: &mut Sink,
) -> Relayed {
    let mut reader = Reader::new(max);
    let mut resumable = false;
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(e) => {
                tracing::warn!("the server's event stream broke: {e}");
                break;
            }
        };
        for event in reader.feed(&chunk) {
            resumable |= event.id.is_some();
            let routes = match (event.oversized, &event.data) {
                (Some(bytes), _) => session.judge.server_oversized(bytes, max),
                (None, Some(data)) if !data.iter().all(u8::is_ascii_whitespace) => {
                    session.judge.on_server(data).await
                }
                // A priming event: only its id, for the client to resume
                // from, and its retry, for how long to wait first.
                (None, _) => {
                    if event.id.is_none() && event.retry.is_none() {
                        continue;
                    }
                    let primed = Out {
                        message: Vec::new(),
                        id: event.id,
                        retry: event.retry,
                    };
                    if !sink.push(primed).await {
                        return Relayed::ClientGone;
                    }
                    continue;
                }
            };
            if !session
                .deliver(routes, me, (event.id, event.retry), sink)
                .await
            {
                return Relayed::ClientGone;
            }
        }
    }
    Relayed::Ended(resumable)
}

/// The request's body, bounded by the message cap and [`BODY_TIMEOUT`].
async fn read_body(shared: &Shared, body: Incoming) -> Result<Bytes, Response<Body>> {
    let max = shared.proxy.max_message;
    let limited = Limited::new(body, max);
    match tokio::time::timeout(BODY_TIMEOUT, limited.collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("a message over the {max}-byte cap; not forwarded"),
        )),
        Ok(Err(e)) => Err(text(StatusCode::BAD_REQUEST, &format!("the body: {e}"))),
        Err(_) => Err(text(
            StatusCode::REQUEST_TIMEOUT,
            &format!(
                "the body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

fn is_initialize(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|m| m.get("method").and_then(|m| m.as_str()) == Some("initialize"))
}

/// A client's POST: one message (or a batch), judged, and what the judge
/// lets through forwarded.
pub(super) async fn post(
    shared: Arc<Shared>,
    own: &Arc<Connection>,
    request: Request<Incoming>,
) -> Response<Body> {
    if !media_type(request.headers()).is_some_and(|t| t.eq_ignore_ascii_case("application/json")) {
        return text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "refused: the body must be application/json",
        );
    }
    let (parts, body) = request.into_parts();
    let bytes = match read_body(&shared, body).await {
        Ok(bytes) => bytes,
        Err(answer) => return answer,
    };
    let named = parts.headers.get(SESSION).and_then(|v| v.to_str().ok());
    let initialize = !parts.headers.contains_key(SESSION) && is_initialize(&bytes);
    let Some(session) = shared.session(named, initialize, own) else {
        return unknown_session();
    };
    let mut to_server = Vec::new();
    let mut early = Vec::new();
    for route in session.judge.on_client(&bytes).await {
        match route {
            Route::ToServer(message) => to_server.push(message),
            Route::ToClient(message) => early.push(Out {
                message,
                ..Out::default()
            }),
        }
    }
    if to_server.is_empty() {
        return fixed(early, None);
    }
    let keys: Vec<String> = to_server.iter().filter_map(|m| request_key(m)).collect();
    let (tx, rx) = mpsc::channel(64);
    let pending = Pending::new(&session, keys, &tx);
    if to_server.len() > 1 || !early.is_empty() {
        tokio::spawn(batch(
            shared,
            session,
            parts.headers,
            early,
            to_server,
            tx,
            pending,
        ));
        return streamed(rx, None);
    }
    let message = to_server.remove(0);
    one(
        shared,
        session,
        parts.headers,
        message,
        initialize.then_some(own),
        (tx, rx, pending),
    )
    .await
}

/// One request forwarded: the server's JSON answer is answered as JSON,
/// its stream as a stream.
async fn one(
    shared: Arc<Shared>,
    session: Arc<Session>,
    headers: HeaderMap,
    message: Vec<u8>,
    // `Some` (the connection it came on) for an `initialize`.
    initialize: Option<&Arc<Connection>>,
    (tx, mut rx, mut pending): (mpsc::Sender<Out>, mpsc::Receiver<Out>, Pending),
) -> Response<Body> {
    let me = pending.stream;
    let response = match forward(
        &shared,
        Some(&session),
        reqwest::Method::POST,
        &headers,
        Some(message),
    )
    .await
    {
        Ok(response) => response,
        Err(why) => {
            let mut sink = Sink::Collect(Vec::new());
            pending.finish(&why, &mut sink).await;
            return match sink {
                Sink::Collect(answers) if !answers.is_empty() => fixed(answers, None),
                _ => text(StatusCode::BAD_GATEWAY, &why),
            };
        }
    };
    if !response.status().is_success() {
        if response.status() == reqwest::StatusCode::NOT_FOUND
            && let Some(named) = headers.get(SESSION).and_then(|v| v.to_str().ok())
        {
            shared.end(named);
        }
        return refused(&shared, response.status());
    }
    let given = session_named(&shared, &session, &headers, &response, initialize);
    if is_event_stream(response.headers()) {
        tokio::spawn(async move {
            let mut sink = Sink::Stream(tx);
            if let Relayed::Ended(resumable) =
                relay_body(&shared, &session, response, me, &mut sink).await
            {
                pending.resumable = resumable;
                pending
                    .finish(
                        "the MCP server ended its stream without answering",
                        &mut sink,
                    )
                    .await;
            }
        });
        return streamed(rx, given.as_ref());
    }
    let mut sink = Sink::Collect(Vec::new());
    if let Relayed::Ended(_) = relay_body(&shared, &session, response, me, &mut sink).await {
        pending
            .finish(
                "the MCP server's answer held no answer to this request",
                &mut sink,
            )
            .await;
    }
    drop(pending);
    drop(tx);
    let Sink::Collect(mut answers) = sink else {
        return fixed(Vec::new(), given.as_ref());
    };
    // What another stream routed here meanwhile (see `Session::deliver`).
    while let Ok(out) = rx.try_recv() {
        answers.push(out);
    }
    fixed(answers, given.as_ref())
}

/// The session id the client is given with the answer: the one
/// `initialize` named (kept), or the one the client sent. A later answer
/// naming another is not passed on (the client keeps the name the proxy
/// knows the session by).
fn session_named(
    shared: &Shared,
    session: &Arc<Session>,
    headers: &HeaderMap,
    response: &reqwest::Response,
    initialize: Option<&Arc<Connection>>,
) -> Option<HeaderValue> {
    if let Some(own) = initialize {
        let given = response.headers().get(SESSION).cloned();
        shared.adopt(given.as_ref().and_then(|v| v.to_str().ok()), session, own);
        return given;
    }
    let asked = headers.get(SESSION).cloned();
    let answered = response.headers().get(SESSION);
    if answered.is_some() && answered != asked.as_ref() {
        tracing::warn!("the MCP server named its session anew in an answer; not passed on");
    }
    asked
}

/// A batch (or a message the judge answered in part): answered as a
/// stream, each message forwarded in turn.
async fn batch(
    shared: Arc<Shared>,
    session: Arc<Session>,
    headers: HeaderMap,
    early: Vec<Out>,
    to_server: Vec<Vec<u8>>,
    tx: mpsc::Sender<Out>,
    pending: Pending,
) {
    let me = pending.stream;
    let mut sink = Sink::Stream(tx);
    for out in early {
        if !sink.push(out).await {
            return;
        }
    }
    for message in to_server {
        let upstream = forward(
            &shared,
            Some(&session),
            reqwest::Method::POST,
            &headers,
            Some(message),
        )
        .await;
        let relayed = match upstream {
            Ok(response) if response.status().is_success() => {
                relay_body(&shared, &session, response, me, &mut sink).await
            }
            _ => Relayed::Ended(false),
        };
        if let Relayed::ClientGone = relayed {
            return;
        }
    }
    pending
        .finish("the MCP server did not answer this request", &mut sink)
        .await;
}

/// A client's GET: the server's own stream of requests and notifications
/// (and a resumed stream's answers), judged.
pub(super) async fn get(
    shared: Arc<Shared>,
    own: &Arc<Connection>,
    request: Request<Incoming>,
) -> Response<Body> {
    let headers = request.headers().clone();
    if let Some(named) = headers.get(SESSION).and_then(|v| v.to_str().ok())
        && !shared.knows(named)
    {
        return unknown_session();
    }
    let response = match forward(&shared, None, reqwest::Method::GET, &headers, None).await {
        Ok(response) => response,
        Err(why) => return text(StatusCode::BAD_GATEWAY, &why),
    };
    if !response.status().is_success() || !is_event_stream(response.headers()) {
        if response.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            let mut answer = text(
                StatusCode::METHOD_NOT_ALLOWED,
                "the MCP server offers no stream of its own",
            );
            answer
                .headers_mut()
                .insert(hyper::header::ALLOW, HeaderValue::from_static("POST"));
            return answer;
        }
        if response.status().is_success() {
            return text(
                StatusCode::BAD_GATEWAY,
                "the MCP server answered a GET with something other than an event stream",
            );
        }
        return refused(&shared, response.status());
    }
    let named = headers.get(SESSION).and_then(|v| v.to_str().ok());
    let Some(session) = shared.session(named, false, own) else {
        return unknown_session();
    };
    let (tx, rx) = mpsc::channel(64);
    let me = session.streams.fetch_add(1, Ordering::Relaxed);
    tokio::spawn(async move {
        let mut sink = Sink::Stream(tx);
        let _ = relay_body(&shared, &session, response, me, &mut sink).await;
    });
    streamed(rx, None)
}

/// A client's DELETE: the session ends, at the server and here.
pub(super) async fn delete(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Body> {
    let headers = request.headers().clone();
    let response = match forward(&shared, None, reqwest::Method::DELETE, &headers, None).await {
        Ok(response) => response,
        Err(why) => return text(StatusCode::BAD_GATEWAY, &why),
    };
    if let Some(named) = headers.get(SESSION).and_then(|v| v.to_str().ok()) {
        shared.end(named);
    }
    if !response.status().is_success() {
        return refused(&shared, response.status());
    }
    let mut answer = Response::new(Either::Left(Full::new(Bytes::new())));
    *answer.status_mut() = StatusCode::OK;
    answer
}
