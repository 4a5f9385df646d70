//! What the judge answers when a side fails: the server sends what the
//! proxy cannot read, a message over the cap, or goes away; a stream ends
//! with requests unanswered. Whatever was in flight is answered with an
//! error, never left to a result nobody judged.

use super::{InFlight, Judge, Route};
use crate::shape::{NOT_JUDGED, PARSE_ERROR, error};
use serde_json::Value;

impl Judge {
    /// The server sent something the proxy cannot read: whatever it was,
    /// it may have been a tool's result, so every call in flight is answered
    /// with an error rather than left to a result nobody judged.
    pub(super) fn unreadable(&self, what: &str) -> Vec<Route> {
        tracing::warn!("the server sent {what}; dropped");
        let calls: Vec<String> = self
            .in_flight()
            .iter()
            .filter(|(_, asked)| matches!(asked, InFlight::ToolCall { .. }))
            .map(|(key, _)| key.clone())
            .collect();
        let mut routes = Vec::new();
        for key in calls {
            self.in_flight().remove(&key);
            let id: Value = serde_json::from_str(&key).unwrap_or(Value::Null);
            routes.push(Route::ToClient(error(
                &id,
                NOT_JUDGED,
                &format!(
                    "toolgate: the server sent {what} while this call was in flight; \
                     its result cannot be judged, so it is withheld"
                ),
            )));
        }
        routes
    }

    /// The client sent a line over the cap: it cannot be answered by id,
    /// so it gets a parse error with a null id, as JSON-RPC says.
    pub(crate) fn client_oversized(&self, bytes: usize, max: usize) -> Vec<Route> {
        vec![Route::ToClient(error(
            &Value::Null,
            PARSE_ERROR,
            &format!(
                "toolgate: a message of {bytes} bytes is over the {max}-byte cap; not forwarded"
            ),
        ))]
    }

    /// The server sent a line over the cap.
    pub(crate) fn server_oversized(&self, bytes: usize, max: usize) -> Vec<Route> {
        self.unreadable(&format!(
            "a message of {bytes} bytes, over the {max}-byte cap"
        ))
    }

    /// The server is gone: every request in flight gets an error now,
    /// instead of waiting for an answer that will not come.
    pub(crate) fn server_gone(&self, why: &str) -> Vec<Route> {
        let mut in_flight = self.in_flight();
        in_flight
            .drain()
            .map(|(key, _)| {
                let id: Value = serde_json::from_str(&key).unwrap_or(Value::Null);
                Route::ToClient(error(&id, NOT_JUDGED, &format!("toolgate: {why}")))
            })
            .collect()
    }

    /// The requests among `keys` still waiting for the server's answer are
    /// answered with an error now (a transport that carries each request's
    /// answer on a stream of its own: that stream ended without it).
    pub(crate) fn unanswered(&self, keys: &[String], why: &str) -> Vec<Route> {
        let mut in_flight = self.in_flight();
        keys.iter()
            .filter_map(|key| match in_flight.remove(key)? {
                InFlight::Cancelled => None,
                _ => {
                    let id: Value = serde_json::from_str(key).unwrap_or(Value::Null);
                    Some(Route::ToClient(error(
                        &id,
                        NOT_JUDGED,
                        &format!("toolgate: {why}"),
                    )))
                }
            })
            .collect()
    }
}
