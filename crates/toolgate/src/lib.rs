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
//! # Where the pieces are: layers, bottom to top
//!
//! This crate holds the layers from the protocols to the runner. Below it,
//! `toolgate-contract` (the request, the answers, wire v1, the serve
//! protocol: re-exported here under their old paths); above it, each a
//! crate of its own, `toolgate-bench` (the measurements) and the
//! command-line tool (the repository root). The crate graph is drawn in
//! `docs/crates.md` and checked from `cargo metadata`. Inside this crate,
//! a module imports only from a layer below its own (or from inside its own
//! unit); units within a layer form no cycle; no binding imports another.
//! `tests/all/layers.rs` reads the source and names any `use` that breaks
//! this. The point is what the compiler can then enforce: a binding cannot
//! make its own trust decision (trust sits above it and asks it through a
//! required method), and an agent's dialect cannot reach into the chain.
//!
//! | layer | modules | what they hold |
//! |---|---|---|
//! | support | [`text`] and `strict_json` (toolgate-contract's), `safe_fs` | bounding and sanitising what hooks say; reading files a config names (regular, bounded, inside the workspace, one file-identity stamp); JSON without duplicate keys |
//! | contract | toolgate-contract's [`contract`], `failure`, `outcome` | events, the request, the four answers (deny is a value), [`Source`], [`BindingKind`], the tool filter; "could not decide" as a type; run records and outcomes |
//! | protocol | `protocol` | inward ([`wire`] v1, Claude Code hooks), the WIT encoding, outward (being [`agent`]s' hook, one `Outward` enum), [`serve`]'s typed messages, import |
//! | seam | `binding` | `Decider`, `Reply`, `Participant`, the `Binding` trait every configured binding implements, the parse kit |
//! | bindings | `binding::{in_process, command, wasm}` | one per binding; none imports another |
//! | trust | [`trust`] | the store, what is pinned, admission at load, the gate that wraps a workspace hook's decider |
//! | config | [`config`] | hooks.json: parse, validate, discover, load; hooks built in code |
//! | runner | [`runner`] | the chain: order, short-circuit, threading, re-judgement, policy, context |
//! | application | [`replay`], [`fixture`], `review`, `fuzzing` | recorded sessions through the chain; fixtures for `toolgate test`; the trust review; the one door the property tests and fuzz targets use |
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolgate::{Config, HookRunner, Request, ToolResult};
//! use serde_json::json;
//!
//! let runner = HookRunner::builder()
//!     .config(Config::load(None, Some(std::path::Path::new(".")))?)
//!     .build();
//! let call = runner
//!     .call(Request::pre("shell", json!({"command": "ls"})), |input| async move {
//!         ToolResult::ok(format!("ran {input}"))
//!     })
//!     .await;
//! println!("the model sees {:?}", call.shown);
//! # Ok(()) }
//! ```

mod binding;
pub mod config;
pub mod fixture;
#[doc(hidden)]
pub mod fuzzing;
mod protocol;
pub mod replay;
mod review;
pub mod runner;
pub mod sessions;
use toolgate_fs as safe_fs;
/// Component signing rules: the seam crate's (`toolgate-seam`).
pub use toolgate_seam::signing;
pub mod trust;

// The contract is a crate of its own (toolgate-contract: no wasmtime, tokio
// or hyper); its modules keep their paths here, so `crate::text::excerpt`
// inside the library and `toolgate::contract::Verdict` outside mean what
// they meant.
pub use toolgate_contract::{contract, observe, refusal, session, text};
use toolgate_contract::{failure, outcome, strict_json};

#[cfg(feature = "wasm")]
pub use binding::WasmSpec;
pub use binding::in_process::Interceptor;
#[cfg(feature = "wasm")]
pub use binding::wasm;
pub use binding::{BindingSpec, CommandSpec};
pub use config::{Config, ConfigError};
pub use contract::BindingKind;
pub use contract::{Decision, Event, HookRequest, Request, Source, ToolResult, Verdict};
pub use failure::{BoxError, FailureKind, HookFailure, Mode, OnFailure};
pub use outcome::{CallOutcome, Outcome, RunRecord, Shadowed, Step};
pub use protocol::{Inward, serve, wire};
pub use runner::{HookRunner, HookRunnerBuilder};

/// Being an agent's hook: reading an agent's hook input and answering in its
/// dialect; how toolgate is installed into it; importing its settings.
pub mod agent {
    pub use crate::protocol::{
        AgentCall, Imported, Matcher, Outward, ReadAgentInputError, event_name, import_settings,
        read_agent_input, render_outcome, translate_matcher,
    };
    pub use toolgate_agents::claude_mod;
    pub use toolgate_agents::settings::{
        Edit, EditSettingsError, Entry, MAX_SETTINGS_BYTES, McpServer, McpState, Wiring,
        guard_mcp_servers, local_mcp_servers, mcp_servers, read_settings, seat, trust_done,
        unguard_mcp_servers,
    };
    pub use toolgate_agents::{
        AgentHook, Blocked, Decided, HELP_BINARY, Help, HookSwitch, HttpHook, Import, Install,
        LEAN_CLIENT, Layout, McpConfig, McpShape, Read, Setting, Source, TrustCheck, TrustStep,
        UserDir, root_owned_chain,
    };
}

/// Limits on subprocess hooks.
pub mod limits {
    pub use crate::binding::command::DEFAULT_TIMEOUT_MS;
    pub use crate::binding::command::{DRAIN, KILL_GRACE, STDERR_CAP, STDOUT_CAP};
    pub use crate::config::{MAX_TIMEOUT_MS, MIN_TIMEOUT_MS};
    pub use crate::runner::DEFAULT_CONTEXT_LIMIT;
}
