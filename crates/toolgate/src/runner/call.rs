//! A whole call through the chain, for an embedder whose tool runs in its
//! own process: pre, the tool, post. Apart from the chain (`runner`),
//! which it only calls.

use super::HookRunner;
use crate::contract::{Decision, Event, Request, ToolResult};
use crate::outcome::CallOutcome;
use serde_json::Value;
use std::future::Future;
use toolgate_contract::refusal;

impl HookRunner {
    /// Takes a whole call through the chain: pre, then the tool (unless
    /// denied or replaced) with the final input, then post.
    pub async fn call<F, Fut>(&self, request: Request, tool: F) -> CallOutcome
    where
        F: FnOnce(Value) -> Fut,
        Fut: Future<Output = ToolResult>,
    {
        let pre = self.pre_tool_use(&request).await;
        let input = match &pre.decision {
            Decision::Deny { reason } => {
                return CallOutcome {
                    shown: ToolResult::error(refusal::blocked(reason)),
                    tool_ran: false,
                    pre,
                    post: None,
                };
            }
            Decision::Replace { .. } => {
                let shown = pre
                    .shown
                    .clone()
                    .unwrap_or_else(|| ToolResult::ok(Value::Null));
                return CallOutcome {
                    shown,
                    tool_ran: false,
                    pre,
                    post: None,
                };
            }
            // The library has no person to ask: an embedder that has one
            // calls `pre_tool_use` and asks on `Decision::Ask` itself.
            Decision::Ask { reason, .. } => {
                return CallOutcome {
                    shown: ToolResult::error(refusal::nobody_was_asked(reason)),
                    tool_ran: false,
                    pre,
                    post: None,
                };
            }
            Decision::Modify { input } => input.clone(),
            Decision::Allow => request.input.clone(),
        };
        let result = tool(input.clone()).await;
        let post_request = Request {
            event: Event::PostToolUse,
            input,
            result: Some(result),
            ..request
        };
        let post = self.post_tool_use(&post_request).await;
        CallOutcome {
            shown: post
                .shown
                .clone()
                .unwrap_or_else(|| ToolResult::ok(Value::Null)),
            tool_ran: true,
            pre,
            post: Some(post),
        }
    }
}
