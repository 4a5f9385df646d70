//! The tool list: which tools the client is shown (the user's approval,
//! see `pins`) and the output schemas a hook's rewrite is held to.

use super::{Judge, Route};
use crate::pins::{Pins, Verdict};
use crate::shape::{call_result, encode, result};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use toolgate::contract::ToolResult;

/// The tool definitions the user approved for this server (see `pins`).
#[derive(Debug)]
pub(crate) struct Approval {
    /// `None`: the server was never reviewed, so no tool is approved.
    pub(crate) pins: Option<Pins>,
    /// The command that reviews this server, for messages.
    pub(crate) review: String,
    /// Tools this session's lists showed with a definition not approved:
    /// withheld from the list, and refused if called.
    pub(crate) withheld: Mutex<HashSet<String>>,
}

impl Approval {
    fn withheld(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.withheld
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Why a call to `tool` is refused, if it is.
    fn refuses(&self, tool: &str) -> Option<&'static str> {
        match &self.pins {
            None => Some("this server's tools were never reviewed"),
            Some(pins) if !pins.knows(tool) => Some("this tool was never approved"),
            Some(_) if self.withheld().contains(tool) => {
                Some("this tool's definition changed since it was approved")
            }
            Some(_) => None,
        }
    }
}

impl Judge {
    /// The answer to a call of a tool the user did not approve, if it is
    /// one (see `pins`).
    pub(super) fn unapproved(&self, id: &Value, tool: &str) -> Option<Vec<Route>> {
        let approval = self.approval.as_ref()?;
        let why = approval.refuses(tool)?;
        let shown = ToolResult::error(format!(
            "toolgate: call blocked: {why} (tool `{tool}` of MCP server `{}`); \
             the user can review it with: {}",
            self.server, approval.review
        ));
        Some(vec![Route::ToClient(result(
            id,
            call_result(&Map::new(), &shown),
        ))])
    }

    /// A `tools/list` answer, without the tools whose definition the user
    /// did not approve; when any is withheld, the client is first sent a
    /// log message naming them and how to review them.
    pub(super) fn listed(&self, mut answer: Map<String, Value>, bytes: Vec<u8>) -> Vec<Route> {
        let Some(Value::Array(tools)) = answer.get_mut("result").and_then(|r| r.get_mut("tools"))
        else {
            return vec![Route::ToClient(bytes)];
        };
        let Some(approval) = &self.approval else {
            self.keep_output_schemas(tools);
            return vec![Route::ToClient(bytes)];
        };
        let mut withheld = Vec::new();
        tools.retain(|tool| {
            let verdict = match &approval.pins {
                Some(pins) => pins.approves(tool),
                None => Verdict::New,
            };
            if verdict == Verdict::Approved {
                return true;
            }
            let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
            withheld.push(format!("`{name}` ({})", verdict.why()));
            approval.withheld().insert(name.to_owned());
            false
        });
        self.keep_output_schemas(tools);
        if withheld.is_empty() {
            return vec![Route::ToClient(bytes)];
        }
        let said = format!(
            "toolgate withheld {} tool(s) of MCP server `{}` whose definitions are not the \
             ones approved: {}. Review them with: {}",
            withheld.len(),
            self.server,
            withheld.join(", "),
            approval.review
        );
        tracing::warn!("{said}");
        eprintln!("{}", toolgate::text::sanitize(&said));
        let note = json!({
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": "warning", "logger": "toolgate", "data": said},
        });
        vec![
            Route::ToClient(encode(&note)),
            Route::ToClient(encode(&Value::Object(answer))),
        ]
    }

    /// The output schemas of the tools the client was shown, for checking
    /// a hook's rewrite of their results.
    fn keep_output_schemas(&self, tools: &[Value]) {
        let mut schemas = self.output_schemas();
        for tool in tools {
            if let (Some(name), Some(schema)) = (
                tool.get("name").and_then(Value::as_str),
                tool.get("outputSchema"),
            ) {
                schemas.insert(name.to_owned(), schema.clone());
            }
        }
    }

    fn output_schemas(&self) -> std::sync::MutexGuard<'_, HashMap<String, Value>> {
        self.output_schemas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether `shown` (a rewritten `CallToolResult` of `tool`) still keeps
    /// the tool's declared `outputSchema`: a successful result of a tool
    /// that declares one must carry `structuredContent` that validates
    /// (MCP says so of servers; a hook's rewrite is held to the same).
    /// The schema is the one the client was shown this session, else the
    /// approved one; a tool with neither is not checked.
    pub(super) fn keeps_output_schema(
        &self,
        tool: &str,
        shown: &Map<String, Value>,
    ) -> Result<(), String> {
        if shown.get("isError").and_then(Value::as_bool) == Some(true) {
            return Ok(());
        }
        let schema = self.output_schemas().get(tool).cloned().or_else(|| {
            self.approval
                .as_ref()
                .and_then(|a| a.pins.as_ref())
                .and_then(|pins| pins.output_schema(tool))
        });
        let Some(schema) = schema else {
            return Ok(());
        };
        let Some(structured) = shown.get("structuredContent") else {
            return Err("no structuredContent".into());
        };
        let validator = jsonschema::validator_for(&schema)
            .map_err(|e| format!("the declared outputSchema cannot be checked: {e}"))?;
        match validator.iter_errors(structured).next() {
            None => Ok(()),
            Some(e) => Err(format!("at `{}`: {e}", e.instance_path())),
        }
    }
}
