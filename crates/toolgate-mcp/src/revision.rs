//! Which MCP revision a message speaks, and the one thing that decides it.
//!
//! Two families of revisions share the wire. The handshake revisions
//! (2024-11-05 … 2025-11-25) name their version once, in `initialize`, and
//! every later message on the connection speaks it. The stateless revision
//! 2026-07-28 has no handshake: each request names its version in
//! `params._meta["io.modelcontextprotocol/protocolVersion"]`, a client may
//! open with `server/discover`, and every result carries a `resultType`
//! (`complete`, or `input_required` for a tool call that needs a round
//! with the user or the model first).
//!
//! # Closed world: a revision the proxy does not know is not proxied
//!
//! What the proxy judges depends on the revision (which fields a result
//! must keep, what an `input_required` round holds), so a message in a
//! revision this build does not know is refused, not half-proxied: a
//! request naming an unknown stateless version is answered with MCP's own
//! `-32022` (unsupported protocol version) listing the ones it knows, so a
//! client picks one and retries; a server that answers `initialize` with a
//! version this build does not know has its answer withheld.

use serde_json::{Map, Value, json};

/// The `_meta` key a stateless request names its revision by.
pub(crate) const VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// MCP's code for "unsupported protocol version" (2026-07-28).
pub(crate) const UNSUPPORTED_VERSION: i64 = -32022;

/// The revisions reached through `initialize`, oldest first.
pub(crate) const HANDSHAKE: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The stateless revisions, each request naming its own.
pub(crate) const STATELESS: [&str; 1] = ["2026-07-28"];

/// How a request's answer must be shaped for the client that sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// A handshake revision: results as they always were.
    Handshake,
    /// 2026-07-28: every result names its `resultType`.
    Stateless,
}

/// A request named a revision this build does not know.
#[derive(Debug, PartialEq)]
pub(crate) struct Unknown(pub(crate) String);

/// The era a client request speaks: stateless when its `_meta` names a
/// version (which must be one this build knows), else the handshake's.
pub(crate) fn of_request(request: &Map<String, Value>) -> Result<Era, Unknown> {
    let named = request
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(VERSION_KEY));
    match named {
        None => Ok(Era::Handshake),
        Some(Value::String(v)) if STATELESS.contains(&v.as_str()) => Ok(Era::Stateless),
        Some(other) => Err(Unknown(match other {
            Value::String(v) => v.clone(),
            other => other.to_string(),
        })),
    }
}

/// Whether a server's `initialize` answer chose a revision this build knows.
pub(crate) fn known_handshake(version: &Value) -> bool {
    version.as_str().is_some_and(|v| HANDSHAKE.contains(&v))
}

/// The `-32022` error data: every revision this proxy can carry.
pub(crate) fn unsupported_data(requested: &str) -> Value {
    let supported: Vec<&str> = STATELESS.iter().chain(HANDSHAKE.iter()).copied().collect();
    json!({ "supported": supported, "requested": requested })
}

/// `result` as the client's era requires: a stateless client is told its
/// result is `complete` (the one kind the proxy builds itself).
pub(crate) fn complete(era: Era, mut result: Map<String, Value>) -> Map<String, Value> {
    match era {
        Era::Handshake => {}
        Era::Stateless => {
            result.insert("resultType".into(), json!("complete"));
        }
    }
    result
}

/// A server's or client's word, quoted for a message of the proxy's own
/// (escaped, invisible characters shown).
pub(crate) fn said(text: &str) -> String {
    toolgate::text::quoted(text).0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(meta: Value) -> Map<String, Value> {
        let Value::Object(m) = json!({"method": "tools/list", "params": {"_meta": meta}}) else {
            unreachable!()
        };
        m
    }

    #[test]
    fn a_request_names_its_revision_in_meta_or_speaks_the_handshakes() {
        assert_eq!(of_request(&request(json!({}))), Ok(Era::Handshake));
        assert_eq!(
            of_request(&request(json!({VERSION_KEY: "2026-07-28"}))),
            Ok(Era::Stateless)
        );
        assert_eq!(
            of_request(&request(json!({VERSION_KEY: "2027-01-01"}))),
            Err(Unknown("2027-01-01".into()))
        );
        assert_eq!(
            of_request(&request(json!({VERSION_KEY: 7}))),
            Err(Unknown("7".into()))
        );
    }
}
