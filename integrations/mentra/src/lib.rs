//! toolgate in [mentra](https://docs.rs/mentra): one [`HookRunner`] registered
//! once on each of mentra's two execution seams.
//!
//! # Why one registration per seam
//!
//! mentra already runs a chain of its own: pre-execution hooks in
//! registration order, then the tool's `input_schema` check, then its
//! `ToolAuthorizer`; post-execution hooks after the tool, before the model
//! sees the result. toolgate's chain has its own order (host interceptors,
//! then the operator's hooks, then the workspace's), re-judgement of
//! rewrites, failure policy and run records. Registering the runner as *one*
//! hook on each seam lets toolgate own all of that and hand mentra a single
//! answer — the same shape as Claude Code's settings entry.
//!
//! ```no_run
//! # fn demo(runtime: mentra::runtime::RuntimeBuilder) -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate::{Config, HookRunner};
//! // The user's trust store: the workspace's commands run once trusted.
//! let store = toolgate::trust::TrustStore::new("/home/me/.local/state/toolgate/trust");
//! let runner = HookRunner::builder()
//!     .config(Config::loader().workspace(".").trust(store).load()?)
//!     .build();
//! let hooks = toolgate_mentra::ToolgateHooks::new(runner);
//! let runtime = hooks.install(runtime).build()?;
//! # Ok(()) }
//! ```
//!
//! # The mapping, answer by answer
//!
//! | toolgate | mentra | why |
//! |---|---|---|
//! | allow | `HookDecision::Allow` / `ResultDecision::Keep` | |
//! | deny (before) | `HookDecision::Deny(reason)` | mentra answers the call as blocked; the model reads the reason |
//! | modify | `HookDecision::Modify { input_json, reason }` | mentra then checks the tool's `input_schema` and asks its authorizer about the *rewritten* input: a rewrite that does not fit is mentra's refusal (the tool never runs), and toolgate's run record still shows who rewrote it |
//! | replace (before) | `HookDecision::Deny` whose reason carries the replacement | mentra's pre seam cannot answer for a tool with a result; a deny is the one answer that keeps the tool from running, and carrying the replacement in it still shows the model what toolgate answered (the same choice as for Claude Code) |
//! | replace (after) | `ResultDecision::Replace { content, is_error }` | a string becomes text content, any other JSON structured content |
//! | deny (after) | `ResultDecision::Replace` with `is_error: true` and `toolgate: the output of this call was withheld: <reason>` | what toolgate shows the model in place of a withheld output; mentra's `ToolExecutionFinished` event keeps the real output for the audit trail |
//! | advisory context | appended to what the model is shown of *this* call's result, after a blank line, as `[toolgate] <context>` (a denial's reason gets it too) | mentra has no channel for advisory text; the tool result is the only text of this call the model reads, and context that arrives before the call is carried to its result |
//! | toolgate's own failures | the runner's failure policy (deny by default), so a broken hook is a `Deny`, never mentra's `Allow`; input toolgate cannot read is a `Deny` | an `Err` from a hook would be mentra's to interpret |
//!
//! Every evaluation's [`Outcome`] (run records included) is kept, keyed by
//! the tool call id, for the host's audit ([`ToolgateHooks::outcomes`]).

use async_trait::async_trait;
use mentra::error::RuntimeError;
use mentra::runtime::{
    HookDecision, PostExecutionContext, PostExecutionHook, PreExecutionContext, PreExecutionHook,
    ResultDecision, RuntimeBuilder,
};
use mentra::tool::ToolResultContent;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use toolgate::{Decision, Event, HookRunner, Outcome, Request, ToolResult};

/// toolgate's chain as mentra's pre- and post-execution hook.
pub struct ToolgateHooks {
    runner: HookRunner,
    /// Context from a call's pre chain, waiting for its result.
    pending_context: Mutex<HashMap<String, String>>,
    outcomes: Mutex<Vec<(String, Outcome)>>,
}

impl std::fmt::Debug for ToolgateHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolgateHooks")
            .field("participants", &self.runner.participants())
            .finish_non_exhaustive()
    }
}

impl ToolgateHooks {
    /// Wraps a runner. Register the result once on each seam, with
    /// [`install`](Self::install) or by hand (`Arc<ToolgateHooks>` is both a
    /// `PreExecutionHook` and a `PostExecutionHook`).
    pub fn new(runner: HookRunner) -> Arc<Self> {
        Arc::new(ToolgateHooks {
            runner,
            pending_context: Mutex::new(HashMap::new()),
            outcomes: Mutex::new(Vec::new()),
        })
    }

    /// Registers these hooks on both seams of a runtime being built.
    pub fn install(self: &Arc<Self>, builder: RuntimeBuilder) -> RuntimeBuilder {
        builder
            .with_pre_hook(Arc::clone(self))
            .with_post_hook(Arc::clone(self))
    }

    /// Every evaluation so far, in order: the tool call id and toolgate's
    /// outcome (decision, who decided, run records).
    pub fn outcomes(&self) -> Vec<(String, Outcome)> {
        lock(&self.outcomes).clone()
    }

    fn record(&self, call_id: &str, outcome: &Outcome) {
        lock(&self.outcomes).push((call_id.to_owned(), outcome.clone()));
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A poisoned lock means another hook call panicked mid-update; the data
    // (contexts and records) is still usable.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What both of mentra's hook contexts carry about the call.
trait CallContext {
    fn parts(&self) -> (&str, &str, &str, &std::path::Path, &str);
}

// mentra's two contexts have the same fields but no common trait.
macro_rules! call_context {
    ($($context:ty),*) => {$(
        impl CallContext for $context {
            fn parts(&self) -> (&str, &str, &str, &std::path::Path, &str) {
                (
                    &self.tool_name,
                    &self.tool_call_id,
                    &self.agent_id,
                    &self.working_directory,
                    &self.input_json,
                )
            }
        }
    )*};
}

call_context!(PreExecutionContext, PostExecutionContext);

/// A request for `event` from what mentra hands a hook.
fn request(event: Event, ctx: &impl CallContext) -> Result<Request, String> {
    let (tool, call_id, agent_id, cwd, input_json) = ctx.parts();
    let input: Value = serde_json::from_str(input_json).map_err(|e| {
        format!("toolgate could not read the tool input ({e}), so this call is blocked")
    })?;
    let mut request = Request::pre(tool, input);
    request.event = event;
    request.tool_call_id = Some(call_id.to_owned());
    request.session_id = Some(agent_id.to_owned());
    request.cwd = Some(cwd.display().to_string());
    Ok(request)
}

/// Text of a JSON output: a string as itself, anything else as JSON.
fn text_of(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn with_context(text: String, context: Option<&str>) -> String {
    match context {
        Some(c) if !c.is_empty() => format!("{text}\n\n[toolgate] {c}"),
        _ => text,
    }
}

#[async_trait]
impl PreExecutionHook for ToolgateHooks {
    async fn pre_tool_execution(
        &self,
        ctx: &PreExecutionContext,
    ) -> Result<HookDecision, RuntimeError> {
        let request = match request(Event::PreToolUse, ctx) {
            Ok(request) => request,
            Err(reason) => return Ok(HookDecision::Deny(reason)),
        };
        let outcome = self.runner.pre_tool_use(&request).await;
        self.record(&ctx.tool_call_id, &outcome);
        let context = outcome.context.as_deref();
        let carry = |context: Option<&str>| {
            if let Some(c) = context {
                lock(&self.pending_context).insert(ctx.tool_call_id.clone(), c.to_owned());
            }
        };
        Ok(match &outcome.decision {
            Decision::Allow => {
                carry(context);
                HookDecision::Allow
            }
            Decision::Modify { input } => {
                carry(context);
                HookDecision::Modify {
                    input_json: input.to_string(),
                    reason: Some(format!(
                        "rewritten by toolgate hook `{}`",
                        outcome.decided_by.as_deref().unwrap_or("?")
                    )),
                }
            }
            Decision::Deny { reason } => HookDecision::Deny(with_context(reason.clone(), context)),
            Decision::Replace { result } => HookDecision::Deny(with_context(
                format!(
                    "toolgate answered for the tool instead of running it: {}",
                    text_of(&result.output)
                ),
                context,
            )),
        })
    }
}

#[async_trait]
impl PostExecutionHook for ToolgateHooks {
    async fn post_tool_execution(
        &self,
        ctx: &PostExecutionContext,
    ) -> Result<ResultDecision, RuntimeError> {
        let pre_context = lock(&self.pending_context).remove(&ctx.tool_call_id);
        let withheld = |reason: String| {
            Ok(ResultDecision::Replace {
                content: ToolResultContent::text(reason),
                is_error: true,
            })
        };
        let mut request = match request(Event::PostToolUse, ctx) {
            Ok(request) => request,
            Err(reason) => return withheld(reason),
        };
        request.result = Some(ToolResult {
            output: match &ctx.content {
                ToolResultContent::Text(text) => Value::String(text.clone()),
                ToolResultContent::Structured(value) => value.clone(),
            },
            is_error: ctx.is_error,
        });
        let outcome = self.runner.post_tool_use(&request).await;
        self.record(&ctx.tool_call_id, &outcome);
        let context = [pre_context.as_deref(), outcome.context.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("\n\n");
        let context = (!context.is_empty()).then_some(context);
        if matches!(outcome.decision, Decision::Allow) && context.is_none() {
            return Ok(ResultDecision::Keep);
        }
        // What toolgate shows the model: the real output (allow), the
        // replacement, or the withheld-output failure (deny).
        let shown = outcome
            .shown
            .clone()
            .unwrap_or_else(|| ToolResult::error("toolgate: no result to show"));
        let content = match (&shown.output, context.as_deref()) {
            (Value::String(text), context) => {
                ToolResultContent::text(with_context(text.clone(), context))
            }
            (other, None) => ToolResultContent::Structured(other.clone()),
            (other, context) => ToolResultContent::text(with_context(other.to_string(), context)),
        };
        Ok(ResultDecision::Replace {
            content,
            is_error: shown.is_error,
        })
    }
}
