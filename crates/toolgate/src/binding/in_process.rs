//! The in-process binding: Rust code in the host's own process.
//!
//! # Why a trait object with async methods
//!
//! Guards that need the host's own state — a vault handle, the session's
//! permissions, a secret to redact — cannot live in a subprocess or a sandbox.
//! They implement [`Interceptor`], one async method per event, each defaulting
//! to `allow`, so a guard implements only what it cares about. `async_trait`
//! keeps the trait object-safe so a runner can hold interceptors of different
//! types in one ordered chain.
//!
//! # Failures
//!
//! An `Err` from an interceptor, or a panic inside it, means it could not
//! decide: the runner applies the failure policy (deny unless registered with
//! [`HookRunnerBuilder::fail_open_interceptor`](crate::HookRunnerBuilder::fail_open_interceptor)).
//! The panic is caught at the await point, so the runner — and the next call —
//! keep working. toolgate imposes no per-interceptor deadline: it is the
//! host's own code, and the host owns its own timeouts. The whole chain's
//! deadline (`HookRunnerBuilder::chain_timeout`, 30 s by default) still
//! covers it like every participant, since the agent host lets a call
//! through when the chain does not answer; an interceptor that awaits past
//! it is dropped at its next await point and the call is denied. (One that
//! blocks its thread without awaiting cannot be interrupted.) Re-judgement
//! applies too: an interceptor that allowed a call is asked again about any
//! later rewrite of it.

use crate::binding::{BindingKind, Decider, Participant, Reply};
use crate::contract::{Event, HookRequest, Source, ToolFilter, Verdict};
use crate::failure::{BoxError, HookFailure, OnFailure};
use futures_util::FutureExt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

/// A guard in the host's process. Every method defaults to `allow`.
///
/// Return `Ok(Verdict::deny(..))` to refuse: a denial is an answer. Return
/// `Err` only when the interceptor could not decide.
#[async_trait::async_trait]
pub trait Interceptor: Send + Sync + 'static {
    /// Before the tool runs.
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        let _ = request;
        Ok(Verdict::allow())
    }

    /// After the tool ran; `request.result` is what the model would be shown.
    async fn post_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        let _ = request;
        Ok(Verdict::allow())
    }

    /// A tool is about to be offered (an MCP server's list, in the proxy):
    /// `request.input` is its definition. `deny` hides it; `modify` offers
    /// another definition (same `name`).
    async fn list_tools(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        let _ = request;
        Ok(Verdict::allow())
    }
}

struct InProcess<I>(I);

#[async_trait::async_trait]
impl<I: Interceptor> Decider for InProcess<I> {
    async fn decide(&self, request: &HookRequest<'_>) -> Reply {
        let call = async {
            match request.event {
                Event::PreToolUse => self.0.pre_tool_use(request).await,
                Event::PostToolUse => self.0.post_tool_use(request).await,
                Event::ListTools => self.0.list_tools(request).await,
            }
        };
        let answer = match AssertUnwindSafe(call).catch_unwind().await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(source)) => Err(HookFailure::InterceptorError { source }),
            Err(payload) => Err(HookFailure::InterceptorPanic {
                message: panic_message(payload.as_ref()),
            }),
        };
        answer.into()
    }
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

pub(crate) fn participant(
    name: String,
    interceptor: impl Interceptor,
    on_failure: OnFailure,
) -> Participant {
    Participant {
        name: name.clone(),
        binding: BindingKind::InProcess,
        source: Source::Host,
        events: Event::ALL.to_vec(),
        filter: ToolFilter::default(),
        on_failure,
        shadow: false,
        config: None,
        scope: format!("{}:{name}", Source::Host),
        decider: Arc::new(InProcess(interceptor)),
    }
}
