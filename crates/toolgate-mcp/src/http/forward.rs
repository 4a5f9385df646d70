//! Sending the MCP server one request: the client's headers it may have,
//! the routing headers of the body (`routing`), and nothing for a
//! listener that is not this user's (`upstream::owned_here`).

use super::relay::SESSION;
use super::{Session, Shared, routing};
use hyper::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};

/// The client's headers the server is given (never `Authorization`: it is
/// the proxy's secret, and never `Host`, `Origin` or cookies; never the
/// 2026-07-28 routing headers, which `routing` writes from the body).
const FORWARDED: [&str; 3] = [SESSION, "mcp-protocol-version", "last-event-id"];
/// What a client must accept, by the transport's rules.
const ACCEPTS: &str = "application/json, text/event-stream";

/// Sends the server one request with the client's forwardable headers and
/// the routing headers of the body (`routing`), computed with `session`'s
/// approved tool schemas.
pub(super) async fn forward(
    shared: &Shared,
    session: Option<&Session>,
    method: reqwest::Method,
    headers: &HeaderMap,
    body: Option<Vec<u8>>,
) -> Result<reqwest::Response, String> {
    super::upstream::owned_here(&shared.upstream).map_err(|why| {
        format!(
            "the MCP server at {} cannot be reached: {why}",
            shared.shown
        )
    })?;
    let mut request = shared.client.request(method, shared.upstream.clone());
    let routed = match (&body, session) {
        (Some(body), Some(session)) => serde_json::from_slice::<serde_json::Value>(body)
            .map(|message| routing::headers(&message, |tool| session.judge.input_schema(tool)))
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    for name in FORWARDED {
        if let Some(value) = headers.get(name)
            && !routed.iter().any(|(routed, _)| routed == name)
        {
            request = request.header(name, value.clone());
        }
    }
    for (name, value) in routed {
        request = request.header(name, value);
    }
    let accept = headers
        .get(ACCEPT)
        .cloned()
        .unwrap_or(HeaderValue::from_static(ACCEPTS));
    request = request.header(ACCEPT, accept);
    if let Some(body) = body {
        request = request
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body);
    }
    request.send().await.map_err(|e| {
        // reqwest's message names the URL it was sent to: said once, masked.
        let e = e.without_url();
        let cause = std::error::Error::source(&e).map_or_else(String::new, |s| format!(": {s}"));
        format!(
            "the MCP server at {} cannot be reached ({e}{cause})",
            shared.shown
        )
    })
}
