//! What the proxy answers a client with itself: a refusal in its own
//! words, a session it does not know, and the answer a POST's judged
//! messages make (one JSON body, or an event stream). Apart from the relay
//! (`relay.rs`), which decides what goes where; here is only how an answer
//! is shaped.

use super::relay::SESSION;
use super::sse::{self, Out};
use super::{Body, Shared, text};
use bytes::Bytes;
use http_body_util::{Either, Full};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use tokio::sync::mpsc;

/// A session id no `initialize` answer named here (see `Shared::session`):
/// 404, which tells a client to start a new session. Nothing is sent to
/// the server.
pub(super) fn unknown_session() -> Response<Body> {
    text(
        StatusCode::NOT_FOUND,
        "toolgate does not know this MCP session: a session is the one the server named in its \
         answer to initialize (start a new one)",
    )
}

/// The status a server's refusal reaches the client with, and why, in
/// toolgate's words: the server's body is never relayed as messages.
pub(super) fn refused(shared: &Shared, status: reqwest::StatusCode) -> Response<Body> {
    let status = StatusCode::from_u16(status.as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let why = match status {
        StatusCode::NOT_FOUND => "the MCP server does not know this session (start a new one)",
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            "the MCP server wants authorization: give its token with --upstream-header (no OAuth)"
        }
        _ => "the MCP server refused the request",
    };
    text(
        status,
        &format!("{why}: {} answered {status}", shared.shown),
    )
}

/// The answer to a POST whose messages are all known: none (202), one
/// (a JSON body), or more (an event stream).
pub(super) fn fixed(mut messages: Vec<Out>, session: Option<&HeaderValue>) -> Response<Body> {
    let mut answer = match messages.len() {
        0 => {
            let mut answer = Response::new(Either::Left(Full::new(Bytes::new())));
            *answer.status_mut() = StatusCode::ACCEPTED;
            answer
        }
        1 => {
            let one = messages.remove(0);
            let mut answer = Response::new(Either::Left(Full::new(Bytes::from(one.message))));
            answer
                .headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            answer
        }
        _ => {
            let (tx, rx) = mpsc::channel(messages.len());
            for out in messages {
                let _ = tx.try_send(out);
            }
            streamed(rx, None)
        }
    };
    if let Some(session) = session {
        answer.headers_mut().insert(SESSION, session.clone());
    }
    answer
}

/// An event stream of what `rx` is sent.
pub(super) fn streamed(rx: mpsc::Receiver<Out>, session: Option<&HeaderValue>) -> Response<Body> {
    let mut answer = Response::new(Either::Right(sse::Stream(rx)));
    let headers = answer.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(
        hyper::header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache"),
    );
    if let Some(session) = session {
        headers.insert(SESSION, session.clone());
    }
    answer
}
