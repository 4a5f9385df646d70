//! toolgate gives a program a say over an AI agent's tool calls.
//!
//! Before a call, a hook answers *may this happen, and in what form*: allow,
//! deny with a reason for the model, modify the input, or replace the result
//! (the tool then does not run). After it, a hook decides *what the model is
//! shown*. One ordered chain, [`HookRunner`], composes hooks from three
//! bindings that speak one contract:
//!
//! - **in-process** — an [`Interceptor`] in the host's own process, for guards
//!   that need the host's state;
//! - **subprocess** — an argv command reading one JSON request on stdin and
//!   printing one JSON answer ([`wire`] v1), for existing scripts;
//! - **WebAssembly component** — a component built against `wit/hook.wit`,
//!   run in wasmtime in a fresh sandbox per call with fuel, memory and
//!   wall-clock limits and no ambient authority.
//!
//! # Why
//!
//! Agent harnesses run hooks in parallel and let the last writer win, and most
//! fail open when a hook breaks. toolgate composes deterministically (each hook
//! sees what the previous one produced; the first `deny` ends the chain) and
//! fails closed by default: a hook that crashes, hangs or prints garbage blocks
//! the call and says why, rather than silently removing a guard.
//!
//! # Where the pieces are
//!
//! | module | what it holds |
//! |---|---|
//! | [`contract`] | events, the request, the four answers; deny is a value |
//! | `failure` | "could not decide" as a type; the failure policy |
//! | [`runner`] | the chain: order, short-circuit, threading, policy, context, records |
//! | `interceptor` | the in-process binding |
//! | `process` | the subprocess binding and its supervision |
//! | [`wire`] | the subprocess JSON encoding (wire v1) |
//! | [`wasm`] | the component binding: engine, compile cache, limits, WIT bindings |
//! | [`config`] | hooks.json: parse, validate, discover, load |
//! | [`replay`] | recorded sessions (wire v1 or Claude Code transcripts) run through the chain |
//! | [`claude`] | Claude Code's hook protocol, inward (hooks) and outward (being one) |
//! | [`text`] | bounding and sanitising what hooks say, before the model or a terminal sees it |
//! | `safe_fs` | reading files a config names: regular files only, bounded, inside the workspace |
//! | `strict_json` | JSON without duplicate keys, and parse errors that never quote the input |
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate::{Config, HookRunner, Request, ToolResult};
//! use serde_json::json;
//!
//! let runner = HookRunner::builder()
//!     .config(Config::discover(std::path::Path::new("."))?)
//!     .build();
//! let call = runner
//!     .call(Request::pre("shell", json!({"command": "ls"})), |input| async move {
//!         ToolResult::ok(format!("ran {input}"))
//!     })
//!     .await;
//! println!("the model sees {:?}", call.shown);
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod claude;
pub mod config;
pub mod contract;
mod failure;
mod interceptor;
mod process;
pub mod replay;
pub mod runner;
mod safe_fs;
mod strict_json;
pub mod text;
pub mod wasm;
pub mod wire;

pub use config::{Config, ConfigError};
pub use contract::{Answer, Event, HookRequest, Request, ToolResult, Verdict};
pub use failure::{FailureKind, HookFailure, OnFailure};
pub use interceptor::{BoxError, Interceptor};
pub use runner::{
    BindingKind, CallOutcome, HookRunner, HookRunnerBuilder, Outcome, RunRecord, Source, Step,
};

/// Limits on subprocess hooks.
pub mod limits {
    pub use crate::config::{DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
    pub use crate::process::{DRAIN, KILL_GRACE, STDERR_CAP, STDOUT_CAP};
    pub use crate::runner::DEFAULT_CONTEXT_LIMIT;
}
