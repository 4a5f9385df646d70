//! The WIT encoding of the contract: what a component hook is handed and
//! what it hands back (`wit/hook.wit`, world `toolgate:hook/hook`).
//!
//! # Why here, below the bindings
//!
//! The translation is a protocol like wire v1 and Claude Code's: a pure
//! mapping between the contract and another encoding, which the round-trip
//! test in `protocol` checks against every other encoding of the same call.
//! Keeping it in the protocol layer lets that test (and any later encoding)
//! use it without importing from a binding; the component binding imports
//! it from here. `bindings` is wasmtime's `bindgen!` output for the WIT
//! version toolgate speaks today (`wit/hook.wit`, 0.3.0).
//!
//! # Every version it spoke, still
//!
//! A component built against an earlier version has other types for
//! `decide` (0.1.0's `decision` has no `ask`), and wasmtime checks types
//! exactly: without the older binding, every component built before the
//! bump would stop loading the day toolgate was upgraded, and a guard
//! that stops loading blocks every call. So the WIT of each earlier
//! version is kept, frozen, beside this crate (`wit/0.1.0/hook.wit`,
//! `wit/0.2.0/hook.wit`), with its own `bindgen!` output ([`v0_1`],
//! [`v0_2`]); the component binding tries the
//! current version first and then the older ones, and a component keeps
//! the version it loaded under ([`Speaks`]). The imports did not change,
//! so one linker serves them all. An older component is asked in its own
//! types ([`request_v0_2`], [`request_v0_1`]) and its answer read as the
//! same answer today ([`verdict_from_v0_2`], [`verdict_from_v0_1`]); it
//! can never say what came later. Nor is it asked what it has no word for:
//! an event added since its version (0.3.0's `list-tools`) is not put to
//! it in some other event's name (a guard that judged a tool definition as
//! a call's input would be wrong in silence); that call is its failure,
//! `event_not_spoken`, under its `on_failure`.
//!
//! A `modify` input or `replace` output is bounded by the same
//! [`MAX_ANSWER_BYTES`] as a subprocess hook's whole answer, and must be
//! JSON: otherwise the answer is an `unusable_rewrite` failure.

use crate::contract::{Decision, Event, HookRequest, MAX_ANSWER_BYTES, ToolResult, Verdict};
use crate::failure::HookFailure;

/// wasmtime's host bindings for `wit/hook.wit`.
#[allow(missing_docs, missing_debug_implementations, unreachable_pub)]
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "hook",
        exports: { default: async },
    });
}

/// wasmtime's host bindings for the frozen `toolgate:hook@0.2.0`
/// (`crates/toolgate-wasm/wit/0.2.0/hook.wit`): only its export is used.
#[allow(missing_docs, missing_debug_implementations, unreachable_pub)]
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "wit/0.2.0",
        world: "hook",
        exports: { default: async },
    });
}

/// wasmtime's host bindings for the frozen `toolgate:hook@0.1.0`
/// (`crates/toolgate-wasm/wit/0.1.0/hook.wit`): only its export is used.
#[allow(missing_docs, missing_debug_implementations, unreachable_pub)]
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "wit/0.1.0",
        world: "hook",
        exports: { default: async },
    });
}

/// Which version of the hook world a loaded component speaks.
pub(crate) enum Speaks<T: 'static> {
    /// `toolgate:hook@0.3.0` (`wit/hook.wit`).
    Current(bindings::HookPre<T>),
    /// `toolgate:hook@0.2.0`: no `list-tools` event.
    V0_2(v0_2::HookPre<T>),
    /// `toolgate:hook@0.1.0`: no `ask`, no `list-tools` event.
    V0_1(v0_1::HookPre<T>),
}

/// A handle on the same pre-linked component (cheap: reference counted), for
/// a call that runs on another thread (`lane.rs`).
impl<T: 'static> Clone for Speaks<T> {
    fn clone(&self) -> Self {
        match self {
            Speaks::Current(pre) => Speaks::Current(pre.clone()),
            Speaks::V0_2(pre) => Speaks::V0_2(pre.clone()),
            Speaks::V0_1(pre) => Speaks::V0_1(pre.clone()),
        }
    }
}

/// An event an older world has no name for: the component is not called.
fn not_spoken(speaks: &'static str, event: WitEvent) -> HookFailure {
    HookFailure::EventNotSpoken {
        speaks,
        event: match event {
            WitEvent::PreToolUse => Event::PreToolUse,
            WitEvent::PostToolUse => Event::PostToolUse,
            WitEvent::ListTools => Event::ListTools,
        }
        .as_str(),
    }
}

/// A request in 0.2.0's types (the same fields; only the event grew), or
/// the failure of asking a 0.2.0 component about an event it cannot name.
pub fn request_v0_2(request: WitRequest) -> Result<v0_2::Request, HookFailure> {
    Ok(v0_2::Request {
        event: match request.event {
            WitEvent::PreToolUse => v0_2::Event::PreToolUse,
            WitEvent::PostToolUse => v0_2::Event::PostToolUse,
            event @ WitEvent::ListTools => return Err(not_spoken("toolgate:hook@0.2.0", event)),
        },
        hook: request.hook,
        tool: request.tool,
        input: request.input,
        result: request.result.map(|r| v0_2::ToolResult {
            output: r.output,
            is_error: r.is_error,
        }),
        session_id: request.session_id,
        turn_id: request.turn_id,
        tool_call_id: request.tool_call_id,
        cwd: request.cwd,
        config: request.config,
    })
}

/// A 0.2.0 answer as the same answer in today's types.
pub fn verdict_from_v0_2(verdict: v0_2::Verdict) -> bindings::Verdict {
    bindings::Verdict {
        decision: match verdict.decision {
            v0_2::Decision::Allow => WitDecision::Allow,
            v0_2::Decision::Deny(reason) => WitDecision::Deny(reason),
            v0_2::Decision::Modify(input) => WitDecision::Modify(input),
            v0_2::Decision::Replace(r) => WitDecision::Replace(bindings::ToolResult {
                output: r.output,
                is_error: r.is_error,
            }),
            v0_2::Decision::Ask(reason) => WitDecision::Ask(reason),
        },
        context: verdict.context,
    }
}

/// A request in 0.1.0's types (the same fields; the answer and the event
/// grew since), or the failure of asking about an event it cannot name.
pub fn request_v0_1(request: WitRequest) -> Result<v0_1::Request, HookFailure> {
    Ok(v0_1::Request {
        event: match request.event {
            WitEvent::PreToolUse => v0_1::Event::PreToolUse,
            WitEvent::PostToolUse => v0_1::Event::PostToolUse,
            event @ WitEvent::ListTools => return Err(not_spoken("toolgate:hook@0.1.0", event)),
        },
        hook: request.hook,
        tool: request.tool,
        input: request.input,
        result: request.result.map(|r| v0_1::ToolResult {
            output: r.output,
            is_error: r.is_error,
        }),
        session_id: request.session_id,
        turn_id: request.turn_id,
        tool_call_id: request.tool_call_id,
        cwd: request.cwd,
        config: request.config,
    })
}

/// A 0.1.0 answer as the same answer in today's types.
pub fn verdict_from_v0_1(verdict: v0_1::Verdict) -> bindings::Verdict {
    bindings::Verdict {
        decision: match verdict.decision {
            v0_1::Decision::Allow => WitDecision::Allow,
            v0_1::Decision::Deny(reason) => WitDecision::Deny(reason),
            v0_1::Decision::Modify(input) => WitDecision::Modify(input),
            v0_1::Decision::Replace(r) => WitDecision::Replace(bindings::ToolResult {
                output: r.output,
                is_error: r.is_error,
            }),
        },
        context: verdict.context,
    }
}

use bindings::{Decision as WitDecision, Event as WitEvent, Request as WitRequest};

/// The request a component's `decide` is called with.
pub fn to_wit(request: &HookRequest<'_>, config: Option<&str>) -> WitRequest {
    WitRequest {
        event: match request.event {
            Event::PreToolUse => WitEvent::PreToolUse,
            Event::PostToolUse => WitEvent::PostToolUse,
            Event::ListTools => WitEvent::ListTools,
        },
        hook: request.hook.to_owned(),
        tool: request.tool.to_owned(),
        input: request.input.to_string(),
        result: request.result.map(|r| bindings::ToolResult {
            output: r.output.to_string(),
            is_error: r.is_error,
        }),
        session_id: request.session_id.map(str::to_owned),
        turn_id: request.turn_id.map(str::to_owned),
        tool_call_id: request.tool_call_id.map(str::to_owned),
        cwd: request.cwd.map(str::to_owned),
        config: config.map(str::to_owned),
    }
}

/// The contract's verdict for a component's answer.
pub fn from_wit(verdict: bindings::Verdict) -> Result<Verdict, HookFailure> {
    let unusable = |what: &str, e: serde_json::Error| HookFailure::UnusableRewrite {
        detail: format!("{what} is not JSON: {e}"),
    };
    let oversized = |what: &str, len: usize| HookFailure::UnusableRewrite {
        detail: format!(
            "{what} is {len} bytes, more than the {MAX_ANSWER_BYTES} a hook may hand back"
        ),
    };
    match &verdict.decision {
        WitDecision::Modify(input) if input.len() > MAX_ANSWER_BYTES => {
            return Err(oversized("the `modify` input", input.len()));
        }
        WitDecision::Replace(result) if result.output.len() > MAX_ANSWER_BYTES => {
            return Err(oversized("the `replace` output", result.output.len()));
        }
        WitDecision::Allow
        | WitDecision::Deny(_)
        | WitDecision::Modify(_)
        | WitDecision::Replace(_)
        | WitDecision::Ask(_) => {}
    }
    let decision = match verdict.decision {
        WitDecision::Allow => Decision::Allow,
        WitDecision::Deny(reason) => Decision::Deny {
            reason: if reason.trim().is_empty() {
                "denied by a hook that gave no reason".to_owned()
            } else {
                reason
            },
        },
        WitDecision::Modify(input) => Decision::Modify {
            input: serde_json::from_str(&input).map_err(|e| unusable("the `modify` input", e))?,
        },
        WitDecision::Replace(result) => Decision::Replace {
            result: ToolResult {
                output: serde_json::from_str(&result.output)
                    .map_err(|e| unusable("the `replace` output", e))?,
                is_error: result.is_error,
            },
        },
        WitDecision::Ask(reason) => Decision::Ask {
            reason: if reason.trim().is_empty() {
                crate::contract::ASK_WITHOUT_A_REASON.to_owned()
            } else {
                reason
            },
            input: None,
        },
    };
    Ok(Verdict {
        decision,
        context: verdict.context,
    })
}
