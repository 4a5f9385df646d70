//! One door to the parsers a hostile party feeds, for the property tests
//! (`tests/all/props.rs`) and the fuzz targets (`fuzz/`). Not API: nothing
//! here is stable, and it is hidden from the documentation.
//!
//! # Why a hidden module, not a `fuzzing` feature
//!
//! Most of what a repository, a hook or an agent hands toolgate is parsed by
//! `pub(crate)` code whose types are not API (a subprocess's answer, a trust
//! record's text, a component's lifted verdict). The tests and the fuzzer
//! must run *that* code, not a copy. A cargo feature would make `cargo test`
//! compile the library differently from `cargo run` (a second build of the
//! crate on every change, and a dependency tree `tests/all/build.rs` pins);
//! a `#[doc(hidden)]` module costs nothing and keeps the documented surface
//! as it was. The functions are thin: each calls the parser the CLI and the
//! chain call, with the fixed context (a request, a workspace root) the
//! parser needs.
//!
//! The parsers that are already public (wire v1 and serve requests, agent
//! hook inputs, recorded transcripts) are called directly.

use std::path::Path;

use serde_json::json;

use crate::binding::parse::BindingOptions;
use crate::contract::{Event, HookRequest, ToolResult, Verdict};
use crate::failure::HookFailure;
use crate::protocol::{Exit, Inward};
use crate::trust::{Record, TrustError};
use crate::{Config, ConfigError, Source};

/// Reads how a subprocess hook ended in one of the inward protocols, as the
/// command binding does: `code` is `None` when a signal ended it. The
/// note (text for the operator) is returned beside the answer.
pub fn subprocess_answer(
    inward: Inward,
    event: Event,
    code: Option<i32>,
    stdout: &[u8],
    stderr: &[u8],
) -> (Result<Verdict, HookFailure>, Option<String>) {
    let input = json!({"command": "ls"});
    let result = ToolResult::ok(json!("out"));
    let request = HookRequest {
        event,
        hook: "h",
        tool: "shell",
        input: &input,
        result: (event == Event::PostToolUse).then_some(&result),
        session_id: None,
        turn_id: None,
        tool_call_id: None,
        cwd: None,
        config: None,
        state: Default::default(),
    };
    let status = match code {
        Some(c) => format!("exit code {c}"),
        None => "signal 9 (SIGKILL)".to_owned(),
    };
    let read = inward.read(
        &request,
        &Exit {
            code,
            status: &status,
            stdout,
            stderr,
        },
    );
    (read.answer, read.note)
}

/// The wire v1 answer a subprocess would print for `verdict` (what
/// [`subprocess_answer`] with [`Inward::Toolgate`] reads back).
pub fn wire_answer(verdict: &Verdict) -> Vec<u8> {
    crate::protocol::wire::encode_answer(verdict)
        .to_string()
        .into_bytes()
}

/// Reads `text` as the hooks.json of the workspace at `root` (an existing
/// directory), as the loader does after reading the file: the hooks and
/// settings, or every problem.
pub fn hooks_json(text: &[u8], root: &Path) -> Result<Config, ConfigError> {
    let mut config = Config::default();
    let mut problems = Vec::new();
    let path = root.join(".toolgate").join("hooks.json");
    config.parse_text(
        text,
        Source::Workspace,
        &path,
        (root, &BindingOptions::default(), None),
        &mut problems,
    );
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(ConfigError { problems })
    }
}

/// Reads `text` as the trust record of the workspace at `root`, as the store
/// does after it opened and checked the file.
pub fn trust_record(text: &[u8], root: &Path) -> Result<Record, TrustError> {
    crate::trust::parse_record(text, root, Path::new("record.json"))
}

/// A component's `decision`, as `wit/hook.wit` declares it.
#[cfg(feature = "wasm")]
#[derive(Clone, Debug, PartialEq)]
pub enum GuestDecision {
    /// `allow`.
    Allow,
    /// `deny(reason)`.
    Deny(String),
    /// `modify(input-json)`.
    Modify(String),
    /// `replace(tool-result)`.
    Replace {
        /// The output, as JSON text.
        output: String,
        /// Whether it is an error.
        is_error: bool,
    },
    /// `ask(reason)` (since 0.2.0).
    Ask(String),
}

/// What the chain takes from a component's lifted `verdict`.
#[cfg(feature = "wasm")]
pub fn guest_verdict(
    decision: GuestDecision,
    context: Option<String>,
) -> Result<Verdict, HookFailure> {
    use crate::protocol::wit::bindings as wit;
    let decision = match decision {
        GuestDecision::Allow => wit::Decision::Allow,
        GuestDecision::Deny(r) => wit::Decision::Deny(r),
        GuestDecision::Modify(i) => wit::Decision::Modify(i),
        GuestDecision::Replace { output, is_error } => {
            wit::Decision::Replace(wit::ToolResult { output, is_error })
        }
        GuestDecision::Ask(r) => wit::Decision::Ask(r),
    };
    crate::protocol::wit::from_wit(wit::Verdict { decision, context })
}
