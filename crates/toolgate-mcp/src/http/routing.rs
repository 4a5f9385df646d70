//! The routing headers of MCP 2026-07-28 over HTTP, computed from the body
//! the proxy forwards, never copied from the client.
//!
//! A stateless request repeats parts of its body in headers, so that a
//! load balancer or gateway can route it without reading JSON:
//! `MCP-Protocol-Version` (the `_meta` version), `Mcp-Method`, `Mcp-Name`
//! (the tool or prompt name, the resource URI) and, for `tools/call`, one
//! `Mcp-Param-<token>` per argument the tool's `inputSchema` marks with
//! `x-mcp-header`. A server refuses a request whose headers disagree with
//! its body.
//!
//! # Why they are recomputed
//!
//! The body the server receives is the judged one, which a hook may have
//! rewritten; the client's headers describe what the client sent. Copied,
//! they would disagree with a rewritten body (the server refuses it), or —
//! worse — agree with the body a gateway in front of the server never
//! sees: a client could route a call by a header naming one tool while the
//! body, judged, names another. So the client's `Mcp-*` headers are never
//! forwarded; the proxy writes them from the body it sends, and from the
//! tool's *approved* `inputSchema` (the one the user reviewed, see
//! `pins`), the way the SDKs' clients write them (the Python SDK's
//! `mcp.shared.inbound`, whose rules this follows).

use base64::Engine as _;
use hyper::header::{HeaderName, HeaderValue};
use serde_json::Value;

use crate::revision::VERSION_KEY;

/// The method → the `params` field `Mcp-Name` mirrors.
const NAME_BEARING: [(&str, &str); 3] = [
    ("tools/call", "name"),
    ("prompts/get", "name"),
    ("resources/read", "uri"),
];
/// The routing headers for `body` (one JSON-RPC message), given the
/// approved `inputSchema` of the tool it calls. Empty for a message that
/// names no stateless revision (the handshake revisions have none but
/// `MCP-Protocol-Version`, which the session's own header carries).
pub(super) fn headers<'a>(
    body: &Value,
    input_schema: impl FnOnce(&str) -> Option<&'a Value>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    let params = body.get("params");
    let Some(version) = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(VERSION_KEY))
        .and_then(Value::as_str)
    else {
        return out;
    };
    let Some(method) = body.get("method").and_then(Value::as_str) else {
        return out;
    };
    let mut push = |name: String, value: &str| {
        if let (Ok(name), Ok(value)) = (
            HeaderName::try_from(name),
            HeaderValue::from_str(&encoded(value)),
        ) {
            out.push((name, value));
        }
    };
    push("mcp-protocol-version".into(), version);
    push("mcp-method".into(), method);
    let named = NAME_BEARING
        .iter()
        .find(|(m, _)| *m == method)
        .and_then(|(_, field)| params?.get(*field)?.as_str());
    if let Some(named) = named {
        push("mcp-name".into(), named);
    }
    if method == "tools/call"
        && let Some(tool) = named
        && let Some(schema) = input_schema(tool)
        && let Some(arguments) = params.and_then(|p| p.get("arguments"))
        && valid_annotations(schema)
    {
        for (path, token) in annotated(schema) {
            let Some(rendered) = at_path(arguments, &path).and_then(rendered) else {
                continue;
            };
            push(format!("mcp-param-{token}"), &rendered);
        }
    }
    out
}

/// A value as a header carries it: as is when it is printable ASCII
/// without edge whitespace (and does not look encoded), else
/// `=?base64?…?=`.
fn encoded(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..=0x7e).contains(&b))
        && value == value.trim()
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        )
    }
}

/// A scalar argument as a header renders it; `None` for anything else.
fn rendered(value: &Value) -> Option<String> {
    match value {
        Value::Bool(b) => Some(b.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn at_path<'v>(mut node: &'v Value, path: &[String]) -> Option<&'v Value> {
    for key in path {
        node = node.as_object()?.get(key)?;
    }
    (!node.is_null()).then_some(node)
}

/// A schema position: its chain of `properties` keys from the root
/// (`None` once another applicator was crossed), and the schema there.
type Position<'a> = (Option<Vec<String>>, &'a serde_json::Map<String, Value>);

/// Every schema position under `root`.
fn positions(root: &Value) -> Vec<Position<'_>> {
    const SINGLE: [&str; 11] = [
        "items",
        "contains",
        "unevaluatedItems",
        "additionalProperties",
        "propertyNames",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    ];
    const LIST: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
    const MAP: [&str; 4] = [
        "patternProperties",
        "dependentSchemas",
        "$defs",
        "definitions",
    ];
    let mut out = Vec::new();
    let mut stack = vec![(Some(Vec::new()), root)];
    while let Some((path, node)) = stack.pop() {
        let Some(schema) = node.as_object() else {
            continue;
        };
        for (keyword, value) in schema {
            let k = keyword.as_str();
            if k == "properties"
                && let Some(props) = value.as_object()
            {
                for (name, sub) in props {
                    let deeper = path.as_ref().map(|p: &Vec<String>| {
                        let mut p = p.clone();
                        p.push(name.clone());
                        p
                    });
                    stack.push((deeper, sub));
                }
            } else if SINGLE.contains(&k) {
                stack.push((None, value));
            } else if LIST.contains(&k)
                && let Some(list) = value.as_array()
            {
                stack.extend(list.iter().map(|sub| (None, sub)));
            } else if MAP.contains(&k)
                && let Some(map) = value.as_object()
            {
                stack.extend(map.values().map(|sub| (None, sub)));
            }
        }
        out.push((path, schema));
    }
    out
}

/// Whether every `x-mcp-header` in `schema` is one a client honours (on a
/// string, integer or boolean property reached by `properties` alone, an
/// RFC 9110 token, unique): a client sends no `Mcp-Param-*` header for a
/// tool with any other, and neither does the proxy.
fn valid_annotations(schema: &Value) -> bool {
    let mut seen = std::collections::HashSet::new();
    for (path, at) in positions(schema) {
        let Some(token) = at.get("x-mcp-header") else {
            continue;
        };
        let Some(token) = token.as_str() else {
            return false;
        };
        let is_token = !token.is_empty()
            && token
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        let typed = matches!(
            at.get("type").and_then(Value::as_str),
            Some("string" | "integer" | "boolean")
        );
        if path.is_none_or(|p| p.is_empty())
            || !is_token
            || !typed
            || !seen.insert(token.to_ascii_lowercase())
        {
            return false;
        }
    }
    true
}

fn annotated(schema: &Value) -> Vec<(Vec<String>, String)> {
    positions(schema)
        .into_iter()
        .filter_map(|(path, at)| {
            let token = at.get("x-mcp-header")?.as_str()?.to_owned();
            Some((path.filter(|p| !p.is_empty())?, token))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn shown(body: &Value, schema: Option<&Value>) -> Vec<(String, String)> {
        headers(body, |_| schema)
            .into_iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn the_headers_are_written_from_the_body_and_the_approved_schema() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "note": {"type": "string"}}});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "deploy", "arguments": {"region": "eu ", "n": 3, "note": "x"},
            "_meta": {VERSION_KEY: "2026-07-28"}}});
        let mut got = shown(&body, Some(&schema));
        got.sort();
        assert_eq!(
            got,
            vec![
                ("mcp-method".into(), "tools/call".into()),
                ("mcp-name".into(), "deploy".into()),
                ("mcp-param-n".into(), "3".into()),
                ("mcp-param-region".into(), "=?base64?ZXUg?=".into()),
                ("mcp-protocol-version".into(), "2026-07-28".into()),
            ]
        );
        // The handshake revisions: none.
        let old = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "deploy", "arguments": {}}});
        assert!(shown(&old, Some(&schema)).is_empty());
        // A schema a client would not honour: no parameter headers.
        let bad = json!({"type": "object", "properties": {
            "n": {"type": "number", "x-mcp-header": "N"}}});
        assert_eq!(shown(&body, Some(&bad)).len(), 3);
    }
}
