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
//!
//! # What a long-lived host holds
//!
//! The hooks live as long as the runtime, and an agent makes calls for as
//! long as it runs, so nothing they keep may grow with the number of calls:
//! the newest [`OUTCOMES_KEPT`] outcomes are kept (a host that audits every
//! call drains them with [`ToolgateHooks::take_outcomes`]), and advisory
//! context waiting for its call's result is taken by that result. mentra
//! (pinned to 0.34.3) hands its post seam every call it answers, refused ones
//! included (a rewrite its schema check or authorizer refused is answered
//! with the refusal), so a refusal takes its context too; a run that mentra
//! aborts with an error (a limit, a failing hook after this one) answers no
//! call, and what such calls left waiting is bounded by [`PENDING_KEPT`],
//! oldest dropped first.

use async_trait::async_trait;
use mentra::error::RuntimeError;
use mentra::runtime::{
    HookDecision, PostExecutionContext, PostExecutionHook, PreExecutionContext, PreExecutionHook,
    ResultDecision, RuntimeBuilder,
};
use mentra::tool::ToolResultContent;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use toolgate::{Decision, Event, HookRunner, Outcome, Request, ToolResult};

/// How many outcomes [`ToolgateHooks::outcomes`] keeps: the newest.
pub const OUTCOMES_KEPT: usize = 1024;

/// How many calls' advisory context may wait for their results at once; past
/// it the oldest is dropped (a call mentra never answered).
pub const PENDING_KEPT: usize = 256;

/// toolgate's chain as mentra's pre- and post-execution hook.
pub struct ToolgateHooks {
    runner: HookRunner,
    /// Context from a call's pre chain, waiting for its result, by call id.
    pending_context: Mutex<Newest<(String, String), PENDING_KEPT>>,
    outcomes: Mutex<Newest<(String, Outcome), OUTCOMES_KEPT>>,
}

/// A queue that keeps its newest `N` items, dropping the oldest.
struct Newest<T, const N: usize>(VecDeque<T>);

impl<T, const N: usize> Newest<T, N> {
    fn new() -> Self {
        Newest(VecDeque::new())
    }

    fn push(&mut self, item: T) {
        if self.0.len() >= N {
            self.0.pop_front();
        }
        self.0.push_back(item);
    }
}

impl<const N: usize> Newest<(String, String), N> {
    /// Takes the context waiting for call `id`.
    fn take(&mut self, id: &str) -> Option<String> {
        let at = self.0.iter().position(|(call, _)| call == id)?;
        self.0.remove(at).map(|(_, context)| context)
    }
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
            pending_context: Mutex::new(Newest::new()),
            outcomes: Mutex::new(Newest::new()),
        })
    }

    /// Registers these hooks on both seams of a runtime being built.
    pub fn install(self: &Arc<Self>, builder: RuntimeBuilder) -> RuntimeBuilder {
        builder
            .with_pre_hook(Arc::clone(self))
            .with_post_hook(Arc::clone(self))
    }

    /// The newest evaluations (at most [`OUTCOMES_KEPT`]), in order: the
    /// tool call id and toolgate's outcome (decision, who decided, run
    /// records).
    pub fn outcomes(&self) -> Vec<(String, Outcome)> {
        lock(&self.outcomes).0.iter().cloned().collect()
    }

    /// Takes the evaluations kept so far (as [`outcomes`](Self::outcomes)),
    /// leaving none: a host that audits every call drains them at least
    /// every [`OUTCOMES_KEPT`] calls.
    pub fn take_outcomes(&self) -> Vec<(String, Outcome)> {
        std::mem::take(&mut lock(&self.outcomes).0).into()
    }

    /// How many calls' advisory context is waiting for their results: none
    /// once mentra has answered every call it started.
    pub fn pending_contexts(&self) -> usize {
        lock(&self.pending_context).0.len()
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
        // A call id asked about again: what its last ask left is stale.
        lock(&self.pending_context).take(&ctx.tool_call_id);
        let request = match request(Event::PreToolUse, ctx) {
            Ok(request) => request,
            Err(reason) => return Ok(HookDecision::Deny(reason)),
        };
        let outcome = self.runner.pre_tool_use(&request).await;
        self.record(&ctx.tool_call_id, &outcome);
        let context = outcome.context.as_deref();
        let carry = |context: Option<&str>| {
            if let Some(c) = context {
                lock(&self.pending_context).push((ctx.tool_call_id.clone(), c.to_owned()));
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
                toolgate::refusal::answered_for_the_tool(&text_of(&result.output)),
                context,
            )),
            // Mentra's hooks have no confirmation to hand the call to (its
            // `ToolAuthorizer` is the embedder's, after the chain).
            Decision::Ask { reason, .. } => HookDecision::Deny(with_context(
                toolgate::refusal::needs_a_person(reason),
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
        let pre_context = lock(&self.pending_context).take(&ctx.tool_call_id);
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
