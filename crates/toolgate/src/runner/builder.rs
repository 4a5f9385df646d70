//! Building a [`HookRunner`]: what the host registers, what the config
//! adds, the chain's bounds and where session state is kept; `build` fixes
//! the order. Apart from the chain itself (`runner`) so each reads alone.

use super::{DEFAULT_CHAIN_TIMEOUT, DEFAULT_CONTEXT_LIMIT, HookRunner, Inner};
use crate::binding::Participant;
use crate::failure::OnFailure;
use crate::sessions::SessionStore;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use toolgate_contract::observe::Observer;

/// Builds a [`HookRunner`].
///
/// ```
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use toolgate::{Verdict, HookRequest, HookRunner, Interceptor, Request, BoxError};
///
/// struct NoRm;
/// #[async_trait::async_trait]
/// impl Interceptor for NoRm {
///     async fn pre_tool_use(&self, req: &HookRequest<'_>) -> Result<Verdict, BoxError> {
///         let cmd = req.input["command"].as_str().unwrap_or_default();
///         Ok(if cmd.contains("rm -rf") { Verdict::deny("no recursive deletes") } else { Verdict::allow() })
///     }
/// }
///
/// let runner = HookRunner::builder().interceptor("no-rm", NoRm).build();
/// let outcome = runner.pre_tool_use(&Request::pre("shell", serde_json::json!({"command": "rm -rf /"}))).await;
/// assert!(!outcome.may_proceed());
/// # Ok(()) }
/// ```
pub struct HookRunnerBuilder {
    pub(super) participants: Vec<Participant>,
    context_limit: usize,
    chain_timeout: Duration,
    store: Arc<dyn SessionStore>,
    observers: Vec<Arc<dyn Observer>>,
}

impl HookRunnerBuilder {
    /// The defaults: no participants, [`DEFAULT_CONTEXT_LIMIT`],
    /// [`DEFAULT_CHAIN_TIMEOUT`], state kept in memory.
    pub(super) fn new() -> Self {
        HookRunnerBuilder {
            participants: Vec::new(),
            context_limit: DEFAULT_CONTEXT_LIMIT,
            chain_timeout: DEFAULT_CHAIN_TIMEOUT,
            store: Arc::new(crate::sessions::MemoryStore::new()),
            observers: Vec::new(),
        }
    }

    /// Tells `observer` about every call the runner answers (the decision
    /// log and the server's metrics are observers; see
    /// [`toolgate_contract::observe`]). Observers are told in the order
    /// they were added, after each outcome is made.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Registers an in-process interceptor. Interceptors run before every
    /// configured hook, in registration order. If it returns `Err` or panics,
    /// the call is denied (fail closed).
    pub fn interceptor(
        self,
        name: impl Into<String>,
        interceptor: impl crate::Interceptor,
    ) -> Self {
        self.push_interceptor(name.into(), interceptor, OnFailure::Deny)
    }

    /// Registers an interceptor whose failures are skipped with a warning
    /// instead of denying the call. For advisory interceptors only.
    pub fn fail_open_interceptor(
        self,
        name: impl Into<String>,
        interceptor: impl crate::Interceptor,
    ) -> Self {
        self.push_interceptor(name.into(), interceptor, OnFailure::Allow)
    }

    fn push_interceptor(
        mut self,
        name: String,
        interceptor: impl crate::Interceptor,
        on_failure: OnFailure,
    ) -> Self {
        self.participants
            .push(crate::binding::in_process::participant(
                name,
                interceptor,
                on_failure,
            ));
        self
    }

    /// Adds the hooks of a loaded configuration (global and workspace), and
    /// takes its `chain_timeout_ms` if the global config sets one.
    pub fn config(mut self, config: crate::Config) -> Self {
        if let Some(timeout) = config.chain_timeout() {
            self.chain_timeout = timeout;
        }
        self.participants.extend(config.into_participants());
        self
    }

    /// Bounds the time one event's whole chain may take (default
    /// [`DEFAULT_CHAIN_TIMEOUT`]). Past it, the call is denied (pre) or its
    /// output withheld (post), naming the hook that was running.
    pub fn chain_timeout(mut self, timeout: Duration) -> Self {
        self.chain_timeout = timeout;
        self
    }

    /// Bounds the merged advisory context (default
    /// [`DEFAULT_CONTEXT_LIMIT`], 8 KiB). Over the bound, the text is cut and
    /// a visible notice says how much was left out.
    pub fn context_limit(mut self, bytes: usize) -> Self {
        self.context_limit = bytes;
        self
    }

    /// Where hooks' session state is kept (default: a
    /// [`MemoryStore`](crate::sessions::MemoryStore) that lives as long as
    /// the runner; a one-shot process passes a
    /// [`FileStore`](crate::sessions::FileStore)).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
        self
    }

    /// Fixes the order (host, then global, then workspace; registration order
    /// within each) and returns the runner.
    pub fn build(mut self) -> HookRunner {
        self.participants.sort_by_key(|p| p.source);
        HookRunner {
            inner: Arc::new(Inner {
                participants: self.participants,
                context_limit: self.context_limit,
                store: self.store,
            }),
            chain_timeout: self.chain_timeout,
            observers: self.observers,
        }
    }
}

impl fmt::Debug for HookRunnerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.participants.iter().map(|p| p.name.as_str()).collect();
        f.debug_struct("HookRunnerBuilder")
            .field("participants", &names)
            .field("context_limit", &self.context_limit)
            .field("chain_timeout", &self.chain_timeout)
            .finish()
    }
}
