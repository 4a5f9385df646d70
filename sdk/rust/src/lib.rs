//! Write a toolgate hook in Rust.
//!
//! A hook is one function from a typed [`Request`] to a typed [`Verdict`];
//! this crate hides the component plumbing (wit-bindgen's bindings for
//! `wit/hook.wit`) and the JSON plumbing (tool inputs, results and the hook's
//! `config` are JSON text on the wire; here they are `serde` values).
//!
//! ```ignore
//! use toolgate_hook::{Hook, Request, Verdict};
//!
//! struct NoRm;
//! impl Hook for NoRm {
//!     fn decide(request: Request) -> Result<Verdict, String> {
//!         let input: serde_json::Value = request.input_json()?;
//!         Ok(match input["command"].as_str() {
//!             Some(c) if c.starts_with("rm ") => Verdict::deny("no rm here"),
//!             _ => Verdict::allow(),
//!         })
//!     }
//! }
//! toolgate_hook::export!(NoRm);
//! ```
//!
//! Why re-export the generated types rather than wrap them: the generated
//! structs already are the typed request and verdict (plain fields, owned
//! strings), and a second set of types would be one more thing to keep in
//! step with the WIT. What this crate adds is constructors and JSON access,
//! as inherent methods on those same types.
//!
//! Returning `Err(message)` means "this hook cannot decide": the host records
//! a `guest_error` failure and applies the hook's `on_failure` policy (deny by
//! default). It is not a denial; use [`Verdict::deny`] for that.
//!
//! # A panic is reported as the hook's error, with its message
//!
//! A panic fails closed like `Err`, and the operator sees why:
//! `hook panicked at src/lib.rs:12:25: index out of bounds: the len is 3 but
//! the index is 7`, as a `guest_error`, not a bare `unreachable` trap.
//!
//! How, and why this way: hooks build with `panic = "abort"` for
//! `wasm32-unknown-unknown`, where a panic cannot be caught.
//! `catch_unwind` needs unwinding, which on wasm32 needs the exception-handling
//! proposal in the guest (a nightly `-Zbuild-std` of `panic_unwind` with
//! `+exception-handling`) and in the host (wasmtime's `gc` feature, a larger
//! engine and attack surface); neither is on offer here. After an abort
//! nothing can be returned, and a trap carries no text. What still runs
//! is the panic hook, before the abort: [`export!`] installs one that hands
//! the message and location to the host through the hook world's only
//! import, `about-to-fail` (it grants nothing: the text goes into this
//! hook's failure record, bounded, for the operator, never the model), and
//! toolgate then reports the trap that follows as a `guest_error` with that
//! message. Writing to stderr instead would have meant importing WASI (a
//! `wasm32-wasip2` std, an adapter, a component that no longer imports
//! nothing) for one line of text. The scaffold keeps the name section
//! (`strip = "debuginfo"`), so a trap that is not a panic (a stack overflow,
//! an `unreachable` in hand-written code) names its functions too.

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "hook",
        path: "../wit",
        pub_export_macro: true,
        default_bindings_module: "toolgate_hook::bindings",
    });
}

pub use bindings::{Decision, Event, Request, ToolResult, Verdict};

pub use serde_json;

/// This hook's state in the call's agent session, kept by toolgate between
/// calls (`wit/hook.wit`, `session-get`/`session-put`): a few strings per
/// hook and session, which no other hook or session can read. A write is
/// kept only if `decide` then answers; a call without a session id keeps
/// nothing, and [`put`](session::put) says so.
pub mod session {
    /// What this hook kept under `key` (`None`: nothing). `Err` when
    /// toolgate's store cannot be read: a guard that depends on it should
    /// refuse rather than assume it forgot.
    pub fn get(key: &str) -> Result<Option<String>, String> {
        crate::bindings::session_get(key)
    }

    /// Keeps `value` under `key` (`None` removes it). `Err` says why it will
    /// not be kept (no session id, the store unavailable, a bound passed).
    pub fn put(key: &str, value: Option<&str>) -> Result<(), String> {
        crate::bindings::session_put(key, value)
    }
}

/// What a hook implements: one function from a request to a verdict, or
/// `Err(message)` when it cannot decide. Export it with [`export!`].
pub trait Hook {
    /// Decide on one tool call.
    fn decide(request: Request) -> Result<Verdict, String>;
}

/// Exports a type implementing [`Hook`] as the component's `decide`, with a
/// panic hook that reports a panic's message to toolgate (see the crate
/// docs). Use it once, at the crate's top level: `toolgate_hook::export!(MyHook);`.
#[macro_export]
macro_rules! export {
    ($hook:ty) => {
        const _: () = {
            struct ToolgateHookExport;
            impl $crate::bindings::Guest for ToolgateHookExport {
                fn decide(
                    request: $crate::Request,
                ) -> ::core::result::Result<$crate::Verdict, ::std::string::String> {
                    $crate::report_panics();
                    <$hook as $crate::Hook>::decide(request)
                }
            }
            $crate::bindings::export!(ToolgateHookExport with_types_in $crate::bindings);
        };
    };
}

/// Installs (once per instance) the panic hook that tells the host why the
/// guest is about to trap. Called by [`export!`]'s `decide`.
#[doc(hidden)]
pub fn report_panics() {
    // Natively (an author's `cargo test`) the import does not exist, and the
    // default hook's stderr is the right place anyway.
    if !cfg!(target_arch = "wasm32") {
        return;
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let what = info.payload_as_str().unwrap_or("a panic with a non-string payload");
            let message = match info.location() {
                Some(at) => format!("hook panicked at {at}: {what}"),
                None => format!("hook panicked: {what}"),
            };
            bindings::about_to_fail(&message);
        }));
    });
}

use serde::{de::DeserializeOwned, Serialize};

impl Request {
    /// The tool's input, parsed from its JSON text.
    pub fn input_json<T: DeserializeOwned>(&self) -> Result<T, String> {
        serde_json::from_str(&self.input).map_err(|e| format!("tool input is not the JSON expected: {e}"))
    }

    /// The hook's `config` from hooks.json, parsed; `None` if it has none.
    pub fn config_json<T: DeserializeOwned>(&self) -> Result<Option<T>, String> {
        self.config
            .as_deref()
            .map(|c| serde_json::from_str(c).map_err(|e| format!("hook config is not the JSON expected: {e}")))
            .transpose()
    }

    /// The tool's output (post_tool_use only), parsed from its JSON text.
    pub fn output_json<T: DeserializeOwned>(&self) -> Result<Option<T>, String> {
        self.result
            .as_ref()
            .map(|r| serde_json::from_str(&r.output).map_err(|e| format!("tool output is not the JSON expected: {e}")))
            .transpose()
    }

    /// True for `pre_tool_use`, before the tool runs.
    pub fn is_pre(&self) -> bool {
        self.event == Event::PreToolUse
    }

    /// True for `list_tools` (toolgate:hook@0.3.0): `input` is the
    /// definition of a tool about to be offered, not a call's input.
    pub fn is_list(&self) -> bool {
        self.event == Event::ListTools
    }
}

impl Verdict {
    /// Let the call (or the result) through unchanged.
    pub fn allow() -> Self {
        Self::of(Decision::Allow)
    }

    /// Refuse: before the call, it does not run; after it, the model is shown
    /// an error instead of the output. The reason is shown to the model.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::of(Decision::Deny(reason.into()))
    }

    /// Run the tool with this input instead (pre_tool_use only).
    pub fn modify(input: &impl Serialize) -> Result<Self, String> {
        Ok(Self::of(Decision::Modify(to_json(input)?)))
    }

    /// Do not run the tool (pre) or do not show its output (post): the model
    /// sees this output instead.
    pub fn replace(output: &impl Serialize, is_error: bool) -> Result<Self, String> {
        Ok(Self::of(Decision::Replace(ToolResult {
            output: to_json(output)?,
            is_error,
        })))
    }

    /// Before the call only: a person must confirm it, for this reason
    /// (toolgate:hook@0.2.0). Later hooks are still consulted; where the
    /// agent cannot ask a person, the call is refused with the reason.
    pub fn ask(reason: impl Into<String>) -> Self {
        Self::of(Decision::Ask(reason.into()))
    }

    /// Add context for the model (shown beside the call's outcome).
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    fn of(decision: Decision) -> Self {
        Self {
            decision,
            context: None,
        }
    }
}

fn to_json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|e| format!("cannot encode as JSON: {e}"))
}
