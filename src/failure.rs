//! "This hook could not decide", as a type, and the policy that turns it into
//! a decision anyway.
//!
//! # Why every failure kind is named
//!
//! A guard that fails is a control that silently stopped existing, unless the
//! failure is loud and specific. Each way a hook can fail to answer has its
//! own [`FailureKind`], carried into the run record, so an operator can tell a
//! hook that hangs from one that prints garbage from one that crashed after
//! answering, and so each kind can be pinned by its own test.
//!
//! # Why the default policy is `deny`, for both events
//!
//! Failing open on a broken guard removes a control someone believes is in
//! place, and nobody notices. Failing closed is loud and gets fixed. `allow`
//! is an explicit, per-hook opt-in ([`OnFailure::Allow`]) for hooks whose job
//! is advisory. OPA's `default allow := false` and Envoy's `failure_mode_allow:
//! false` make the same call.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What the chain does when a hook could not decide.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    /// Treat the failure as a denial (the default): the call is blocked, or
    /// after the call the model is shown a failure instead of the output.
    #[default]
    Deny,
    /// Skip the broken hook and let the chain go on; the run record carries a
    /// warning for the operator.
    Allow,
}

impl OnFailure {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OnFailure::Deny => "deny",
            OnFailure::Allow => "allow",
        }
    }
}

impl fmt::Display for OnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a hook could not decide. Never used for a denial: a denial is an
/// [`Verdict`](crate::Verdict).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookFailure {
    /// The program could not be started (missing, not executable, …).
    #[error("could not start `{program}`: {source}")]
    SpawnFailed {
        /// The program as resolved.
        program: String,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The hook outlived its deadline and was killed.
    #[error("timed out after {timeout_ms} ms; {}", if *escalated { "ignored SIGTERM, killed with SIGKILL" } else { "terminated with SIGTERM" })]
    TimedOut {
        /// The deadline it missed.
        timeout_ms: u64,
        /// Whether it ignored SIGTERM and had to be SIGKILLed.
        escalated: bool,
    },
    /// The program exited unsuccessfully. Whatever it printed is ignored: a
    /// hook that crashed after answering has not answered.
    #[error("exited with {status}")]
    ExitedNonZero {
        /// The exit code or signal, in words.
        status: String,
    },
    /// The program exited successfully but printed nothing on stdout.
    #[error("exited 0 but printed nothing on stdout")]
    EmptyOutput,
    /// What the hook printed or returned is not an answer: not JSON, not an
    /// object, an unknown `decision`, a field of the wrong type.
    #[error("did not answer with a decision: {detail}")]
    NotADecision {
        /// What was wrong with it.
        detail: String,
    },
    /// The hook printed more than toolgate keeps; it was killed.
    #[error("printed more than {limit} bytes on stdout; killed")]
    OversizedOutput {
        /// The cap it crossed.
        limit: usize,
    },
    /// The hook asked for something this event cannot use (`modify` after
    /// the call).
    #[error("answered with a rewrite the chain cannot use: {detail}")]
    UnusableRewrite {
        /// What it asked for, and why it cannot be used.
        detail: String,
    },
    /// An in-process interceptor returned `Err`.
    #[error("returned an error: {source}")]
    InterceptorError {
        /// The interceptor's error.
        #[source]
        source: crate::BoxError,
    },
    /// An in-process interceptor panicked. The runner caught it and keeps
    /// working.
    #[error("panicked: {message}")]
    InterceptorPanic {
        /// The panic message, if it was a string.
        message: String,
    },
    /// A WebAssembly guest used up its fuel budget.
    #[error("ran out of fuel (its `fuel` budget)")]
    OutOfFuel,
    /// A WebAssembly guest tried to grow its memory past `memory_mb`.
    #[error("hit its memory limit: {message}")]
    MemoryLimit {
        /// What it asked for.
        message: String,
    },
    /// A WebAssembly guest exhausted its stack (unbounded recursion).
    #[error("overflowed its stack")]
    StackOverflow,
    /// A WebAssembly guest trapped (`unreachable`, out-of-bounds access, a
    /// language-level panic, …).
    #[error("trapped: {message}")]
    Trap {
        /// The trap, with the guest backtrace where available.
        message: String,
    },
    /// A WebAssembly guest returned its `err(message)`: it could not decide.
    #[error("returned an error: {message}")]
    GuestError {
        /// The guest's message (for the operator).
        message: String,
    },
    /// The whole chain's deadline passed while this hook ran. Always a
    /// denial, whatever the hook's `on_failure`: the hooks after it were never
    /// consulted.
    #[error("was still running when the chain's deadline ({timeout_ms} ms) passed; stopped")]
    ChainDeadline {
        /// The chain's deadline.
        timeout_ms: u64,
    },
}

impl HookFailure {
    /// The kind, for run records and matching.
    pub fn kind(&self) -> FailureKind {
        match self {
            HookFailure::SpawnFailed { .. } => FailureKind::SpawnFailed,
            HookFailure::TimedOut { .. } => FailureKind::TimedOut,
            HookFailure::ExitedNonZero { .. } => FailureKind::ExitedNonZero,
            HookFailure::EmptyOutput => FailureKind::EmptyOutput,
            HookFailure::NotADecision { .. } => FailureKind::NotADecision,
            HookFailure::OversizedOutput { .. } => FailureKind::OversizedOutput,
            HookFailure::UnusableRewrite { .. } => FailureKind::UnusableRewrite,
            HookFailure::InterceptorError { .. } => FailureKind::InterceptorError,
            HookFailure::InterceptorPanic { .. } => FailureKind::InterceptorPanic,
            HookFailure::OutOfFuel => FailureKind::OutOfFuel,
            HookFailure::MemoryLimit { .. } => FailureKind::MemoryLimit,
            HookFailure::StackOverflow => FailureKind::StackOverflow,
            HookFailure::Trap { .. } => FailureKind::Trap,
            HookFailure::GuestError { .. } => FailureKind::GuestError,
            HookFailure::ChainDeadline { .. } => FailureKind::ChainDeadline,
        }
    }
}

/// The name of a [`HookFailure`], stable in run records (`"timed_out"`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FailureKind {
    /// See [`HookFailure::SpawnFailed`].
    SpawnFailed,
    /// See [`HookFailure::TimedOut`].
    TimedOut,
    /// See [`HookFailure::ExitedNonZero`].
    ExitedNonZero,
    /// See [`HookFailure::EmptyOutput`].
    EmptyOutput,
    /// See [`HookFailure::NotADecision`].
    NotADecision,
    /// See [`HookFailure::OversizedOutput`].
    OversizedOutput,
    /// See [`HookFailure::UnusableRewrite`].
    UnusableRewrite,
    /// See [`HookFailure::InterceptorError`].
    InterceptorError,
    /// See [`HookFailure::InterceptorPanic`].
    InterceptorPanic,
    /// See [`HookFailure::OutOfFuel`].
    OutOfFuel,
    /// See [`HookFailure::MemoryLimit`].
    MemoryLimit,
    /// See [`HookFailure::StackOverflow`].
    StackOverflow,
    /// See [`HookFailure::Trap`].
    Trap,
    /// See [`HookFailure::GuestError`].
    GuestError,
    /// See [`HookFailure::ChainDeadline`].
    ChainDeadline,
}

impl FailureKind {
    /// The record spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::SpawnFailed => "spawn_failed",
            FailureKind::TimedOut => "timed_out",
            FailureKind::ExitedNonZero => "exited_non_zero",
            FailureKind::EmptyOutput => "empty_output",
            FailureKind::NotADecision => "not_a_decision",
            FailureKind::OversizedOutput => "oversized_output",
            FailureKind::UnusableRewrite => "unusable_rewrite",
            FailureKind::InterceptorError => "interceptor_error",
            FailureKind::InterceptorPanic => "interceptor_panic",
            FailureKind::OutOfFuel => "out_of_fuel",
            FailureKind::MemoryLimit => "memory_limit",
            FailureKind::StackOverflow => "stack_overflow",
            FailureKind::Trap => "trap",
            FailureKind::GuestError => "guest_error",
            FailureKind::ChainDeadline => "chain_deadline",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
