//! The contract every binding speaks: events, the request, the answers.
//!
//! # One vocabulary across languages
//!
//! The names here are the WIT's (`wit/hook.wit`), the wire's and every
//! SDK's: a hook is given a **request** and returns a **verdict**, which is
//! a **decision** (allow, deny, modify, replace, ask) plus optional **context**;
//! a tool's output is a **tool result**. `tests/all/sdk.rs` fails when an SDK
//! lacks a field of the WIT's request.
//!
//! # Why one vocabulary
//!
//! An in-process interceptor, an argv command and a WebAssembly component all
//! answer the same four ways (allow, deny, modify, replace), so the chain that
//! composes them never needs to know which binding spoke. The alternative —
//! each binding with its own verdict type, translated at the chain — is how
//! semantics drift between bindings; here a binding's only job is to produce
//! a [`Verdict`] or a [`HookFailure`](crate::failure::HookFailure).
//!
//! # Deny is a value
//!
//! A hook that refuses a call has *decided*. That is [`Decision::Deny`], an
//! ordinary `Ok` value. `Err` is reserved for "this hook could not decide"
//! (it crashed, timed out, printed garbage) and goes through the hook's
//! failure policy in the runner. Keeping the two apart in the types is what
//! makes "fail closed" an explicit, testable rule instead of an accident of
//! error handling — the same split tower and axum make between a rejection
//! response and a service error.
//!
//! # Inputs and results are JSON values
//!
//! Tool inputs and results are whatever the agent's tools take and return,
//! so they are `serde_json::Value`. Hooks see them as-is on every binding.

use regex_automata::meta::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// When a hook is consulted.
///
/// Only [`Event::PreToolUse`] can stop a call. Observation-only events
/// (`stop`, `session_start`) may be added later; the enum is non-exhaustive so
/// adding them is not a breaking change.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
// Not `#[non_exhaustive]`: the library and the command-line tool match it
// exhaustively in another crate (a new variant must be answered everywhere
// it is judged, never fall into a wildcard arm), and cargo allows no
// wildcard-free match across crates on a non-exhaustive enum.
pub enum Event {
    /// Before the tool runs: allow, deny, modify the input, or replace the
    /// result (the tool is then not run).
    PreToolUse,
    /// After the tool ran: decides what the model is shown.
    PostToolUse,
    /// A tool is about to be offered to the model (one request per tool
    /// of an MCP server's `tools/list`, its definition as the input): allow
    /// offers it, deny hides it, modify offers the rewritten definition.
    /// A hook is consulted on it only if its `event` names it.
    ListTools,
}

impl Event {
    /// Every event, in the order a call meets them.
    pub const ALL: &'static [Event] = <Event as strum::VariantArray>::VARIANTS;

    /// The wire name (`pre_tool_use`, `post_tool_use`, `list_tools`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Parses a wire name.
    pub fn from_wire(name: &str) -> Option<Event> {
        name.parse().ok()
    }
}

/// What a tool returned (or what a hook says it returned).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    /// The tool's output, any JSON.
    pub output: Value,
    /// Whether the tool reported a failure. The model is told.
    pub is_error: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(output: impl Into<Value>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: false,
        }
    }

    /// A failed result.
    pub fn error(output: impl Into<Value>) -> Self {
        ToolResult {
            output: output.into(),
            is_error: true,
        }
    }
}

/// One tool call, as the host describes it to the chain.
///
/// The hook-specific parts of what a hook receives (its name and its
/// `config` from hooks.json) are added by the runner; see [`HookRequest`].
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    /// Which event this is.
    pub event: Event,
    /// The tool's name, as the agent calls it (`shell`, `Bash`, `write_file`…).
    pub tool: String,
    /// The tool's input.
    pub input: Value,
    /// For [`Event::PostToolUse`], what the tool returned.
    pub result: Option<ToolResult>,
    /// The agent session, if the host has one.
    pub session_id: Option<String>,
    /// The turn within the session.
    pub turn_id: Option<String>,
    /// The model's id for this tool call.
    pub tool_call_id: Option<String>,
    /// The agent's working directory.
    pub cwd: Option<String>,
}

impl Request {
    /// A `pre_tool_use` request.
    pub fn pre(tool: impl Into<String>, input: Value) -> Self {
        Request {
            event: Event::PreToolUse,
            tool: tool.into(),
            input,
            result: None,
            session_id: None,
            turn_id: None,
            tool_call_id: None,
            cwd: None,
        }
    }

    /// A `post_tool_use` request.
    pub fn post(tool: impl Into<String>, input: Value, result: ToolResult) -> Self {
        Request {
            event: Event::PostToolUse,
            result: Some(result),
            ..Request::pre(tool, input)
        }
    }
}

/// What one hook is asked: the call as it stands at this point of the chain
/// (earlier `modify`/`replace` answers already applied), plus the hook's own
/// name and `config`.
///
/// It borrows from the runner, so threading a rewrite through ten hooks copies
/// no JSON.
#[derive(Clone, Copy, Debug)]
pub struct HookRequest<'a> {
    /// The event.
    pub event: Event,
    /// The name this hook was registered or configured under.
    pub hook: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The input as it stands after earlier hooks' `modify`.
    pub input: &'a Value,
    /// For post: the result as it stands after earlier hooks' `replace`.
    pub result: Option<&'a ToolResult>,
    /// See [`Request::session_id`].
    pub session_id: Option<&'a str>,
    /// See [`Request::turn_id`].
    pub turn_id: Option<&'a str>,
    /// See [`Request::tool_call_id`].
    pub tool_call_id: Option<&'a str>,
    /// See [`Request::cwd`].
    pub cwd: Option<&'a str>,
    /// This hook's `config` from hooks.json, if it has one.
    pub config: Option<&'a Value>,
    /// This hook's state in the call's session (`crate::session`).
    pub state: crate::session::Kept<'a>,
}

/// What a hook decided (WIT `decision`, wire `"decision"`).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Let the call (or the result) through as it is.
    Allow,
    /// Refuse. Before the call, the tool does not run; after it, the model is
    /// shown a failure instead of the output. The reason reaches the model —
    /// that is the point: it can change course.
    Deny {
        /// Why, in words for the model.
        reason: String,
    },
    /// Before the call only: run the tool with this input instead. The next
    /// hook sees the rewritten input.
    Modify {
        /// The complete replacement input.
        input: Value,
    },
    /// Before the call: don't run the tool, use this as its result (it still
    /// passes through the post chain). After the call: show the model this
    /// instead of the real output.
    Replace {
        /// The replacement result.
        result: ToolResult,
    },
    /// Before the call only: the hook cannot decide alone, and a person
    /// must confirm the call before it runs. The chain still consults every
    /// later participant (a person's yes must not skip a guard), a later
    /// `deny` or `replace` wins over it, and an agent with a confirmation
    /// prompt shows the reason there; everywhere else (no person watching,
    /// the library's `HookRunner::call`, the MCP proxy) it is a
    /// denial whose reason says a confirmation was needed. Answering `ask`
    /// after the call is a hook failure, like `modify`.
    Ask {
        /// Why a person must confirm, in words for that person (and the
        /// model, where the agent refuses instead).
        reason: String,
        /// Set only in a chain's outcome: the input the call runs with if
        /// the person confirms, when a participant rewrote it. A hook's
        /// answer never carries one (a hook that wants both rewrites with
        /// `modify` and asks when it is consulted again).
        input: Option<Value>,
    },
}

/// The reason an `ask` that gave none carries, in every encoding.
pub const ASK_WITHOUT_A_REASON: &str =
    "a hook asked for a person's confirmation and gave no reason";

impl Decision {
    /// The wire name of the decision.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny { .. } => "deny",
            Decision::Modify { .. } => "modify",
            Decision::Replace { .. } => "replace",
            Decision::Ask { .. } => "ask",
        }
    }
}

/// A hook's answer: a decision plus optional advisory context for the model
/// (WIT `verdict`).
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The decision.
    pub decision: Decision,
    /// Advisory text for the model, merged across the chain.
    pub context: Option<String>,
}

impl Verdict {
    /// `allow`.
    pub fn allow() -> Self {
        Decision::Allow.into()
    }

    /// `deny` with a reason for the model.
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny {
            reason: reason.into(),
        }
        .into()
    }

    /// `modify` with a complete replacement input.
    pub fn modify(input: Value) -> Self {
        Decision::Modify { input }.into()
    }

    /// `replace` with a result.
    pub fn replace(result: ToolResult) -> Self {
        Decision::Replace { result }.into()
    }

    /// `ask`: a person must confirm the call, for this reason.
    pub fn ask(reason: impl Into<String>) -> Self {
        Decision::Ask {
            reason: reason.into(),
            input: None,
        }
        .into()
    }

    /// Adds advisory context for the model.
    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }
}

impl From<Decision> for Verdict {
    fn from(decision: Decision) -> Self {
        Verdict {
            decision,
            context: None,
        }
    }
}

/// Largest answer a hook may hand back, in bytes: a subprocess hook's whole
/// stdout, a component's `modify` input or `replace` output. Room for a
/// replacement tool result; a bound on what a hook can make toolgate hold.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Smallest accepted `timeout_ms`.
pub const MIN_TIMEOUT_MS: u64 = 1;
/// Largest accepted `timeout_ms` (10 minutes): a guard on a single tool call
/// that needs longer is a bug, not a policy. A contract, not only config:
/// it is also the longest a client waits for a server that took a call and
/// was given no deadline of the caller's own.
pub const MAX_TIMEOUT_MS: u64 = 600_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip_through_their_wire_names() {
        for event in Event::ALL {
            assert_eq!(Event::from_wire(event.as_str()), Some(*event));
            assert_eq!(event.to_string(), event.as_str());
        }
        assert_eq!(
            Event::ALL,
            [Event::PreToolUse, Event::PostToolUse, Event::ListTools]
        );
        assert_eq!(Event::from_wire("PreToolUse"), None);
    }
}

/// Where a participant came from. The declaration order is the consultation
/// order: host before managed before global before workspace.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum Source {
    /// Registered in code by the embedding program.
    Host,
    /// The machine's managed policy layer (`/etc/toolgate/hooks.json`,
    /// owned by root): nothing below it can remove or weaken it.
    Managed,
    /// The operator's global config (`$XDG_CONFIG_HOME/toolgate/hooks.json`).
    Global,
    /// The workspace's `.toolgate/hooks.json`.
    Workspace,
}

impl Source {
    /// The record spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which binding a participant speaks through.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    strum::Display,
    strum::IntoStaticStr,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
// Not `#[non_exhaustive]`: the library and the command-line tool match it
// exhaustively in another crate (a new variant must be answered everywhere
// it is judged, never fall into a wildcard arm), and cargo allows no
// wildcard-free match across crates on a non-exhaustive enum.
pub enum BindingKind {
    /// A Rust `Interceptor` (the library's in-process binding) in the host's process.
    InProcess,
    /// An argv command, wire v1 on stdin/stdout.
    Subprocess,
    /// A WebAssembly component, fresh sandbox per call.
    Wasm,
}

impl BindingKind {
    /// The record spelling.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Which tools a hook is consulted for.
///
/// A hook runs for a tool named in `tools` *or* matched by `matcher`; with
/// neither, for every tool. Union rather than intersection because a guard
/// that runs too often is loud, while one that runs too rarely is silent.
/// The matcher must match the whole tool name (`Edit|Write` does not match
/// `NotebookEdit`), as Claude Code's matchers do.
#[derive(Clone, Debug, Default)]
pub struct ToolFilter {
    /// Tools named exactly.
    pub tools: Option<Vec<String>>,
    /// Tools whose whole name matches ([`whole_name_matcher`]).
    pub matcher: Option<Regex>,
}

impl ToolFilter {
    /// Whether a hook with this filter runs for `tool`.
    pub fn matches(&self, tool: &str) -> bool {
        match (&self.tools, &self.matcher) {
            (None, None) => true,
            (tools, matcher) => {
                tools.as_ref().is_some_and(|t| t.iter().any(|n| n == tool))
                    || matcher.as_ref().is_some_and(|m| m.is_match(tool))
            }
        }
    }
}

/// Compiles `pattern` to match whole tool names only. The anchors are added
/// to the parsed syntax tree, not to the pattern's text, so nothing in the
/// pattern (an unbalanced `)|(`, a flag, a comment in `(?x)` mode) can move
/// them: the pattern is one node between a start and an end assertion.
pub fn whole_name_matcher(pattern: &str) -> Result<Regex, MatcherError> {
    use regex_syntax::hir::{Hir, Look};
    let hir = regex_syntax::Parser::new()
        .parse(pattern)
        .map_err(|e| MatcherError::Parse(Box::new(e)))?;
    let anchored = Hir::concat(vec![Hir::look(Look::Start), hir, Hir::look(Look::End)]);
    Regex::builder()
        .build_from_hir(&anchored)
        .map_err(|e| MatcherError::Build(Box::new(e)))
}

/// Why a tool matcher did not compile. Displays as the regex crate's own
/// message (hooks.json errors quote it after the field's name).
#[derive(Debug, thiserror::Error)]
pub enum MatcherError {
    /// Not a regular expression.
    #[error("{0}")]
    Parse(Box<regex_syntax::Error>),
    /// Parsed, but too large to build.
    #[error("{0}")]
    Build(Box<regex_automata::meta::BuildError>),
}

#[cfg(test)]
mod filter_tests {
    use super::*;

    fn filter(tools: Option<&[&str]>, matcher: Option<&str>) -> ToolFilter {
        ToolFilter {
            tools: tools.map(|t| t.iter().map(|s| (*s).to_owned()).collect()),
            matcher: matcher.map(|m| whole_name_matcher(m).unwrap()),
        }
    }

    #[test]
    fn a_filter_with_neither_tools_nor_matcher_matches_every_tool() {
        assert!(filter(None, None).matches("Anything"));
    }

    #[test]
    fn tools_and_matcher_are_a_union() {
        let f = filter(Some(&["Read"]), Some("Edit|Write"));
        assert!(f.matches("Read"));
        assert!(f.matches("Write"));
        assert!(!f.matches("Bash"));
    }

    #[test]
    fn the_matcher_matches_whole_names_only() {
        let f = filter(None, Some("Edit|Write"));
        assert!(!f.matches("NotebookEdit"));
        assert!(!f.matches("Writer"));
        // An alternation cannot escape the anchors.
        let f = filter(None, Some("x|.*"));
        assert!(f.matches("x") && f.matches("Bash"));
        let f = filter(None, Some("(?x) Bash # comment"));
        assert!(f.matches("Bash") && !f.matches("Bash2"));
    }
}
