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

/// An error an interceptor returns when it cannot decide.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What the chain does when a hook could not decide.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
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
        self.into()
    }
}

/// Whether a hook's verdict counts (`enforce`, the default) or is only
/// recorded (`shadow`): a shadow hook runs as it would, and the call goes
/// on as if it were absent — its rewrite is not applied, its failure never
/// blocks — so an operator sees what a new policy would have done before
/// it does it.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
    strum::VariantNames,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Mode {
    /// Its verdict counts.
    #[default]
    Enforce,
    /// Its verdict is recorded, never applied.
    Shadow,
}

impl Mode {
    /// The config spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Why a hook could not decide. Never used for a denial: a denial is an
/// [`Verdict`](crate::contract::Verdict).
#[derive(Debug, thiserror::Error, strum::EnumDiscriminants)]
#[strum_discriminants(
    name(FailureKind),
    doc = "The name of a [`HookFailure`], stable in run records (`\"timed_out\"`, …): one \
           kind per variant, named alike.",
    derive(
        Hash,
        Serialize,
        Deserialize,
        strum::Display,
        strum::IntoStaticStr,
        strum::EnumString,
        strum::VariantNames
    ),
    serde(rename_all = "snake_case"),
    strum(serialize_all = "snake_case"),
    allow(missing_docs)
)]
// Not `#[non_exhaustive]`: the library and the command-line tool match it
// exhaustively in another crate (a new variant must be answered everywhere
// it is judged, never fall into a wildcard arm), and cargo allows no
// wildcard-free match across crates on a non-exhaustive enum.
pub enum HookFailure {
    /// The program could not be started (missing, not executable, …).
    #[error("could not start `{program}`")]
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
    #[error("returned an error")]
    InterceptorError {
        /// The interceptor's error.
        #[source]
        source: BoxError,
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
    /// A workspace hook toolgate would not run: not trusted, changed since it
    /// was trusted, or trusted but not runnable here as the operator requires
    /// (confinement, its private copy). Always a denial, whatever the hook's
    /// `on_failure`: a workspace does not choose what its untrusted hooks get
    /// (the operator's `untrusted_hooks: skip` is not a failure: the hook is
    /// recorded as skipped).
    #[error("{reason}")]
    NotTrusted {
        /// Why, and what to run (for the model and the operator).
        reason: String,
    },
    /// The whole chain's deadline passed while this hook ran. Always a
    /// denial, whatever the hook's `on_failure`: the hooks after it were never
    /// consulted.
    #[error("was still running when the chain's deadline ({timeout_ms} ms) passed; stopped")]
    ChainDeadline {
        /// The chain's deadline.
        timeout_ms: u64,
    },
    /// It decided, but what it asked to keep in its session state could not
    /// be kept (no session id, over a bound, the store unwritable). Its
    /// decision is not used: a guard that decided expecting to remember
    /// something would be silently wrong on the next call.
    #[error("decided, but what it asked to keep in its session could not be kept: {detail}")]
    StateNotKept {
        /// Why.
        detail: String,
    },
    /// The hook speaks a protocol with no name for this event: a component
    /// built against an older hook world (0.2.0 has no `list_tools`), a
    /// command hook in Claude Code's or Gemini CLI's protocol. It is not
    /// asked: the question would have to be put in another event's name.
    #[error(
        "speaks {speaks}, which has no `{event}` event, so it was not asked; remove \
         `{event}` from its `event`, or rebuild it with a newer SDK"
    )]
    EventNotSpoken {
        /// What it speaks (`toolgate:hook@0.2.0`, `Claude Code's hook protocol`).
        speaks: &'static str,
        /// The event's wire name.
        event: &'static str,
    },
}

impl HookFailure {
    /// The kind, for run records and matching.
    pub fn kind(&self) -> FailureKind {
        self.into()
    }

    /// The reason the model reads when this failure denies, where the
    /// failure words it itself (an untrusted hook's says what to run);
    /// `None`: toolgate's own words, naming the hook and the kind.
    pub fn own_reason(&self) -> Option<&str> {
        match self {
            HookFailure::NotTrusted { reason } => Some(reason),
            HookFailure::ChainDeadline { .. }
            | HookFailure::SpawnFailed { .. }
            | HookFailure::TimedOut { .. }
            | HookFailure::ExitedNonZero { .. }
            | HookFailure::EmptyOutput
            | HookFailure::NotADecision { .. }
            | HookFailure::OversizedOutput { .. }
            | HookFailure::UnusableRewrite { .. }
            | HookFailure::InterceptorError { .. }
            | HookFailure::InterceptorPanic { .. }
            | HookFailure::OutOfFuel
            | HookFailure::MemoryLimit { .. }
            | HookFailure::StackOverflow
            | HookFailure::Trap { .. }
            | HookFailure::GuestError { .. }
            | HookFailure::StateNotKept { .. }
            | HookFailure::EventNotSpoken { .. } => None,
        }
    }

    /// Whether this failure blocks the call whatever the hook's
    /// `on_failure` says: the chain's deadline passed (the hooks after it
    /// were never asked), or toolgate would not run the hook at all.
    ///
    /// An exhaustive match, not `matches!`: a new failure kind must say here
    /// whether a hook's `on_failure: allow` may let the call through after it.
    pub fn always_denies(&self) -> bool {
        match self {
            HookFailure::ChainDeadline { .. } | HookFailure::NotTrusted { .. } => true,
            HookFailure::SpawnFailed { .. }
            | HookFailure::TimedOut { .. }
            | HookFailure::ExitedNonZero { .. }
            | HookFailure::EmptyOutput
            | HookFailure::NotADecision { .. }
            | HookFailure::OversizedOutput { .. }
            | HookFailure::UnusableRewrite { .. }
            | HookFailure::InterceptorError { .. }
            | HookFailure::InterceptorPanic { .. }
            | HookFailure::OutOfFuel
            | HookFailure::MemoryLimit { .. }
            | HookFailure::StackOverflow
            | HookFailure::Trap { .. }
            | HookFailure::GuestError { .. }
            | HookFailure::StateNotKept { .. }
            | HookFailure::EventNotSpoken { .. } => false,
        }
    }
}

impl FailureKind {
    /// The record spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_kinds_keep_their_record_spelling() {
        let kinds = [
            (HookFailure::EmptyOutput.kind(), "empty_output"),
            (HookFailure::OutOfFuel.kind(), "out_of_fuel"),
            (HookFailure::StackOverflow.kind(), "stack_overflow"),
            (
                HookFailure::ChainDeadline { timeout_ms: 1 }.kind(),
                "chain_deadline",
            ),
            (
                HookFailure::ExitedNonZero {
                    status: "exit code 3".into(),
                }
                .kind(),
                "exited_non_zero",
            ),
        ];
        for (kind, spelling) in kinds {
            assert_eq!(kind.as_str(), spelling);
            assert_eq!(kind.to_string(), spelling);
            assert_eq!(serde_json::to_value(kind).unwrap(), spelling);
        }
        assert_eq!(OnFailure::Allow.as_str(), "allow");
        assert_eq!(OnFailure::default().to_string(), "deny");
    }

    #[test]
    fn a_failure_does_not_repeat_its_source_in_its_message() {
        let failure = HookFailure::SpawnFailed {
            program: "./guard".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(failure.to_string(), "could not start `./guard`");
        let chain = crate::text::error_chain(&failure);
        assert!(chain.starts_with("could not start `./guard`: "), "{chain}");
        assert_eq!(chain.matches("./guard").count(), 1);
    }
}
