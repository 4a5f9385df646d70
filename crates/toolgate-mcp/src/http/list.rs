//! Asking a server at a URL for its tools: `toolgate mcp trust --upstream`.
//! The conversation is the stdio listing's (`crate::list`: the same
//! capabilities, the same pages); only the transport differs.

use super::sse::Reader;
use super::{Upstream, client_for};
use crate::McpError;
use crate::list::{
    Ask, LIST_TIMEOUT, Listed, SETTLE, discover, failed, initialize_params, instructions_of, pages,
    stateless_meta,
};
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

struct Talk {
    client: reqwest::Client,
    url: reqwest::Url,
    /// `url` as messages show it (`upstream::masked`).
    shown: String,
    session: Option<reqwest::header::HeaderValue>,
    version: Option<String>,
    next_id: u64,
    max: usize,
}

impl Talk {
    async fn post(&self, message: &Value) -> Result<reqwest::Response, McpError> {
        super::upstream::owned_here(&self.url)
            .map_err(|why| failed(format!("cannot reach {}: {why}", self.shown)))?;
        let mut request = self
            .client
            .post(self.url.clone())
            .header(ACCEPT, "application/json, text/event-stream")
            .header(CONTENT_TYPE, "application/json")
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session.clone());
        }
        if let Some(version) = &self.version {
            request = request.header("mcp-protocol-version", version.clone());
        }
        // A 2026-07-28 request's routing headers (its version among them).
        for (name, value) in super::routing::headers(message, |_| None) {
            request = request.header(name, value);
        }
        let response = request
            .send()
            .await
            .map_err(|e| failed(format!("cannot reach {}: {}", self.shown, e.without_url())))?;
        if !response.status().is_success() {
            return Err(failed(format!(
                "{} answered {}",
                self.shown,
                response.status()
            )));
        }
        Ok(response)
    }

    /// The message in `response` that answers `id` (one JSON body, or one
    /// of the events of a stream).
    async fn answer(&self, mut response: reqwest::Response, id: u64) -> Result<Value, McpError> {
        let stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let mut reader = Reader::new(self.max);
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failed(format!("the answer broke off: {e}")))?
        {
            if !stream {
                if body.len() + chunk.len() > self.max {
                    return Err(failed("an answer over the message cap"));
                }
                body.extend_from_slice(&chunk);
                continue;
            }
            for event in reader.feed(&chunk) {
                if event.oversized.is_some() {
                    return Err(failed("an event over the message cap"));
                }
                let Some(data) = event.data.filter(|d| !d.is_empty()) else {
                    continue;
                };
                let message: Value = serde_json::from_slice(&data)
                    .map_err(|e| failed(format!("an event that is not JSON ({e})")))?;
                if message.get("id").and_then(Value::as_u64) == Some(id)
                    && message.get("method").is_none()
                {
                    return Ok(message);
                }
            }
        }
        if stream {
            return Err(failed("the stream ended without the answer"));
        }
        serde_json::from_slice(&body)
            .map_err(|e| failed(format!("an answer that is not JSON ({e})")))
    }
}

impl Ask for Talk {
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, McpError> {
        self.next_id += 1;
        let id = self.next_id;
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        if method == "initialize" {
            self.session = response.headers().get("mcp-session-id").cloned();
        }
        let message = self.answer(response, id).await?;
        if let Some(error) = message.get("error") {
            return Err(failed(format!(
                "{method} was answered with an error: {error}"
            )));
        }
        Ok(message.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// The tools the MCP server at `upstream` lists (given its headers), asked
/// as `toolgate mcp trust` asks a server it starts.
///
/// # Errors
///
/// [`McpError`] when the server cannot be reached, does not answer within [`LIST_TIMEOUT`], or answers with an
/// error.
pub async fn list_tools_http(upstream: &Upstream, max_message: usize) -> Result<Listed, McpError> {
    let client = client_for(upstream)?;
    let mut talk = Talk {
        client,
        url: upstream.url.clone(),
        shown: upstream.shown.clone(),
        session: None,
        version: None,
        next_id: 0,
        max: max_message,
    };
    let listed = tokio::time::timeout(LIST_TIMEOUT, async {
        let (instructions, meta) = match talk.request("initialize", initialize_params()).await {
            Ok(initialized) => {
                talk.version = initialized
                    .get("protocolVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let _ = talk
                    .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                    .await?;
                tokio::time::sleep(SETTLE).await;
                (instructions_of(&initialized), None)
            }
            Err(handshake) => {
                talk.session = None;
                let discovered = discover(&mut talk, handshake).await?;
                (instructions_of(&discovered), Some(stateless_meta()))
            }
        };
        Ok(Listed {
            tools: pages(&mut talk, meta.as_ref()).await?,
            instructions,
        })
    })
    .await
    .map_err(|_| failed(format!("no answer within {LIST_TIMEOUT:?}")))?;
    if let Some(session) = &talk.session
        && super::upstream::owned_here(&talk.url).is_ok()
    {
        let _ = talk
            .client
            .delete(talk.url.clone())
            .header("mcp-session-id", session.clone())
            .send()
            .await;
    }
    listed
}
