//! toolgate's agent dialects: toolgate as an agent's hook, one module per
//! agent, and importing an agent's settings.
//!
//! # Why a crate of their own
//!
//! Three programs need an agent's dialect and none of the chain: the lean
//! client `toolgate-hook` (it reads the agent's input to find the call's
//! workspace and timeout, and blocks in the agent's form when it cannot
//! answer), the command-line tool (install, doctor, import) and the
//! library (which runs the chain and renders its outcome here). Below the
//! library, on the contract and the support layer only, the lean client
//! links no wasmtime, tokio or hyper, and cargo (not a review) keeps it so.
//!
//! Outward: toolgate as the agent's hook. `toolgate <agent>` reads the
//! agent's hook stdin ([`read_agent_input`]), runs the chain, and answers in
//! the agent's dialect ([`render_outcome`]), or, when toolgate itself cannot
//! answer, with the strongest block the agent honours ([`AgentHook::blocked`]).
//!
//! # Why one file per agent behind one trait
//!
//! Agents copy each other's hook envelopes but differ in what they honour:
//! Codex takes Claude Code's input with a stricter output schema, Copilot CLI
//! names no event in its input, Gemini CLI calls its events `BeforeTool`.
//! Everything one agent needs — reading its input, each answer, its own
//! failure, its help, its project variable, its hook timeout, its settings —
//! is a required method of [`Dialect`], implemented in that agent's file. The
//! only place all agents meet is [`dialect`]'s `match`, with no
//! catch-all arm: a new agent is its own file plus one variant, and the
//! compiler refuses the variant until the file says what every answer
//! becomes. The alternative, a `match` on the agent inside each answer (as
//! before), spread one agent over every function and let a new one inherit
//! whatever the arm next to it did.

mod claude_code;
pub mod claude_mod;
mod codex;
mod copilot;
mod cursor;
mod gemini;
pub mod import;
mod mcp_config;
mod opencode;
mod qwen_code;
pub mod settings;
mod switch;
mod user_dir;
pub use mcp_config::{McpConfig, McpShape};
pub use switch::{Decided, HookSwitch, Read, Setting, Source, root_owned_chain};
pub use user_dir::UserDir;

use toolgate_contract::{contract, outcome, strict_json, text};
use toolgate_fs as safe_fs;

pub use import::{Imported, Matcher, import_settings, translate_matcher};

use crate::contract::{Event, Request};
use crate::outcome::Outcome;
use serde_json::{Map, Value};
use std::time::Duration;

/// The lean client's name (crates/toolgate-hook), installed beside `toolgate`:
/// what `toolgate install` writes for an agent that spawns a command per
/// call while `toolgate serve` runs, and a program an entry may run and
/// still be toolgate's.
pub const LEAN_CLIENT: &str = "toolgate-hook";

pub use toolgate_contract::agent::Outward;

/// Claude Code's name for an event.
pub fn event_name(event: Event) -> &'static str {
    match event {
        Event::PreToolUse => "PreToolUse",
        Event::PostToolUse => "PostToolUse",
        // No agent has one; the name the MCP proxy's records would use.
        Event::ListTools => "ListTools",
    }
}

/// One question put to an agent's dialect ([`dialect`] answers it).
///
/// Dispatch is static, not through a `&dyn Dialect`: a vtable links every
/// method of every agent into any program that asks one of them, so the
/// lean client, which only reads an input and blocks, carried every
/// agent's settings editing, import and help (and their regex) and paid
/// for them in relocations and page faults at every start. Asked this way,
/// a program links only the methods it asks for.
trait Question {
    /// What the question returns.
    type Answer;
    /// Asks it of one dialect.
    fn ask<D: Dialect>(self, dialect: &D) -> Self::Answer;
}

/// Declares a [`Question`] inside the function that asks it: its fields,
/// its answer's type, and the method it calls.
macro_rules! question {
    ($name:ident $(<$lt:lifetime>)? { $($field:ident: $ty:ty),* } -> $answer:ty = |$d:ident| $body:expr) => {
        struct $name $(<$lt>)? { $($field: $ty),* }
        impl $(<$lt>)? Question for $name $(<$lt>)? {
            type Answer = $answer;
            fn ask<D: Dialect>(self, $d: &D) -> $answer {
                let Self { $($field),* } = self;
                $body
            }
        }
    };
}

/// The one place every agent is named.
fn dialect<Q: Question>(outward: Outward, question: Q) -> Q::Answer {
    match outward {
        Outward::ClaudeCode => question.ask(&claude_code::ClaudeCode),
        Outward::Codex => question.ask(&codex::Codex),
        Outward::Gemini => question.ask(&gemini::Gemini),
        Outward::QwenCode => question.ask(&qwen_code::QwenCode),
        Outward::Copilot => question.ask(&copilot::Copilot),
        Outward::Cursor => question.ask(&cursor::Cursor),
        Outward::OpenCode => question.ask(&opencode::OpenCode),
    }
}

/// What toolgate is as the hook of the agent an [`Outward`] names. The
/// name is the contract's (`toolgate_contract::agent`: every client and
/// the server speak it, and the lean client parses it); what the agent
/// reads and honours is here, one file per agent behind [`dialect`].
pub trait AgentHook: Copy {
    /// What toolgate answers when it cannot evaluate a call (unreadable
    /// input, a broken config, its own deadline, a panic): the strongest
    /// block this agent honours. `reason` is one line.
    fn blocked(self, reason: &str) -> Blocked;

    /// The subcommand's `about` and `after_help`.
    fn help(self) -> Help;

    /// The environment variable the agent names its project root in
    /// (`CLAUDE_PROJECT_DIR`), if it sets one for its hooks. The CLI reads
    /// it (the library reads no environment).
    fn project_var(self) -> Option<&'static str>;

    /// The agent's own hook timeout when its settings give none: toolgate
    /// must answer before it, since most agents let the call through when
    /// their hook times out.
    fn default_hook_timeout(self) -> Duration;

    /// How toolgate is wired into this agent's settings.
    fn install(self) -> Install;

    /// How this agent's own hook settings become hooks.json
    /// (`toolgate import <agent>`).
    fn import(self) -> Import;
}

impl AgentHook for Outward {
    fn blocked(self, reason: &str) -> Blocked {
        question!(Q<'a> { reason: &'a str } -> Blocked = |d| d.blocked(reason));
        dialect(self, Q { reason })
    }

    fn help(self) -> Help {
        question!(Q {} -> Help = |d| d.help());
        dialect(self, Q {})
    }

    fn project_var(self) -> Option<&'static str> {
        question!(Q {} -> Option<&'static str> = |d| d.project_var());
        dialect(self, Q {})
    }

    fn default_hook_timeout(self) -> Duration {
        question!(Q {} -> Duration = |d| d.default_hook_timeout());
        dialect(self, Q {})
    }

    fn install(self) -> Install {
        question!(Q {} -> Install = |d| d.install());
        dialect(self, Q {})
    }

    fn import(self) -> Import {
        question!(Q {} -> Import = |d| d.import());
        dialect(self, Q {})
    }
}

/// What one agent's hook protocol is: each agent's file implements it, and
/// every method is required (no defaults), so a new agent says what each
/// answer becomes instead of inheriting one.
pub(crate) trait Dialect: Sync {
    /// Reads the agent's hook stdin (already a JSON object).
    fn read(&self, input: &Map<String, Value>) -> Result<AgentCall, ReadAgentInputError>;

    /// The JSON to print (exit 0) for the chain's `outcome` on a call whose
    /// agent event was `hook_event_name`; `None` prints nothing.
    fn render(&self, outcome: &Outcome, hook_event_name: &str) -> Option<Value>;

    /// See [`Outward::blocked`].
    fn blocked(&self, reason: &str) -> Blocked;

    /// See [`Outward::help`].
    fn help(&self) -> Help;

    /// See [`Outward::project_var`]: written as `Some("NAME")`, which the
    /// README's environment-table test reads.
    fn project_var(&self) -> Option<&'static str>;

    /// See [`Outward::default_hook_timeout`].
    fn default_hook_timeout(&self) -> Duration;

    /// See [`Outward::install`].
    fn install(&self) -> Install;

    /// See [`Outward::import`].
    fn import(&self) -> Import;
}

/// How an agent's hook settings are imported.
#[derive(Debug, Clone, Copy)]
pub enum Import {
    /// Read by this function: what was carried over, and what was not.
    Settings(fn(&Value) -> crate::import::Imported),
    /// Not importable, and why (shown to the user).
    Unsupported(&'static str),
}

/// The answer that blocks a call when toolgate cannot evaluate it.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocked {
    /// JSON for stdout, for agents that read a block there.
    pub stdout: Option<Value>,
    /// The reason, for stderr (agents that read exit 2 show it the model).
    pub stderr: String,
    /// The exit code.
    pub exit: u8,
}

impl Blocked {
    /// Exit 2 with the reason on stderr: how Claude Code and the agents that
    /// copied it block a call.
    pub(crate) fn exit_two(reason: &str) -> Self {
        Blocked {
            stdout: None,
            stderr: reason.to_owned(),
            exit: 2,
        }
    }
}

/// A dialect's subcommand help.
#[derive(Debug, Clone)]
pub struct Help {
    /// One line.
    pub about: &'static str,
    /// Where the agent reads its hooks, and a settings entry to paste. The
    /// entry names the binary as [`HELP_BINARY`]; the CLI prints the
    /// running binary's own path in its place, so a pasted entry never
    /// names a path where nothing is installed (the agent would then let
    /// every call through).
    pub after_help: String,
}

/// The path a [`Help`] entry names the toolgate binary by, for a program
/// that shows the help to put the real path in its place.
pub const HELP_BINARY: &str = "/usr/local/bin/toolgate";

/// How `toolgate install <agent>` wires toolgate into the agent, and what
/// `toolgate doctor` checks.
#[derive(Debug, Clone)]
pub struct Install {
    /// The settings file for the user scope, relative to `$HOME`.
    pub user_file: &'static str,
    /// The variable that moves the user's settings elsewhere, where the
    /// agent has one. Required, so every agent says: a guard installed in
    /// a file the agent does not read guards nothing.
    pub user_dir: UserDir,
    /// The settings file for the project scope, relative to its root.
    pub project_file: &'static str,
    /// The agent events toolgate is installed for.
    pub events: &'static [&'static str],
    /// How each event's entry is laid out.
    pub layout: Layout,
    /// The agent's hook timeout to write, in the unit its settings use
    /// (`None`: leave the agent's default).
    pub timeout: Option<u64>,
    /// The agent's command, for `toolgate doctor` to ask its version
    /// (`<cli> --version`).
    pub agent_cli: &'static str,
    /// The releases toolgate's live tests ran (tests/agents/versions.env;
    /// a test keeps them equal).
    pub tested_versions: &'static [&'static str],
    /// The agent's own step before an installed hook runs, if it has one.
    pub trust: Option<TrustStep>,
    /// Its http hook, where it has one (`toolgate install <agent> --http`).
    pub http: Option<HttpHook>,
    /// Where it keeps its MCP servers (`toolgate install <agent> --mcp`
    /// runs each through `toolgate mcp`).
    pub mcp: McpConfig,
    /// The settings that make the agent run no hook, toolgate's included,
    /// without a word (`toolgate doctor` flags each one set). Required, so
    /// every agent says; `&[]` says it has none toolgate knows of.
    pub switches: &'static [HookSwitch],
}

/// An agent's hook handler that POSTs to `toolgate serve --http`.
#[derive(Debug, Clone, Copy)]
pub struct HttpHook {
    /// The handler for the server at a URL, with the fail-closed switch
    /// and the secret's header.
    pub handler: fn(&str) -> Value,
    /// The first release that blocks a call when the server does not
    /// answer (earlier ones let it through).
    pub blocks_when_down_from: &'static str,
    /// The variable the agent reads the secret from.
    pub token_var: &'static str,
}

/// A step the agent itself requires before it runs a hook (Codex's `/hooks`
/// review, Gemini CLI's trusted folders).
#[derive(Debug, Clone, Copy)]
pub struct TrustStep {
    /// What the user must do, said as the fix.
    pub fix: &'static str,
    /// How `toolgate doctor` tells whether it is done; `None` where
    /// toolgate cannot tell.
    pub check: Option<TrustCheck>,
    /// Whether the step gates only the project's hooks (Copilot CLI loads a
    /// project's hooks only in a trusted folder, the user's always), rather
    /// than every hook of the agent (Gemini CLI runs none in an untrusted
    /// folder).
    pub project_only: bool,
}

/// The agent's file that records a trust step, and a test of its JSON.
#[derive(Debug, Clone, Copy)]
pub struct TrustCheck {
    /// The file, relative to `$HOME`.
    pub file: &'static str,
    /// Whether its content records the step as done for this project root.
    pub done: fn(&Value, &std::path::Path) -> bool,
}

/// How an agent lists the handlers of one event.
#[derive(Debug, Clone, Copy)]
pub enum Layout {
    /// `hooks.<Event>: [{"matcher": …, "hooks": [handler]}]` (Claude Code,
    /// Codex and the agents that copied them). `handler` is the one toolgate
    /// writes, given the argv of the command to run.
    Grouped {
        /// The handler object for `argv`.
        handler: fn(&[String]) -> Value,
    },
    /// `hooks.<event>: [handler]`, beside `"version": 1` (Copilot CLI,
    /// Cursor).
    Flat {
        /// The handler object for `argv`.
        handler: fn(&[String]) -> Value,
    },
    /// No hook settings: the file is a plugin the agent loads by itself
    /// (OpenCode), written whole; `events` are the plugin's hooks.
    Plugin {
        /// The plugin file's text, running `argv`.
        source: fn(&[String]) -> String,
    },
}

/// A tool call as an agent hands it to its hook.
#[derive(Debug)]
pub struct AgentCall {
    /// The agent's event (`PreToolUse`, `BeforeTool`, …), or another event
    /// toolgate has no part in.
    pub hook_event_name: String,
    /// The request, when the event is one toolgate evaluates.
    pub request: Option<Request>,
    /// The agent's working directory.
    pub cwd: Option<String>,
    /// The hook timeout the agent gave this call, when it says.
    pub timeout: Option<Duration>,
}

/// What an agent event is to toolgate.
///
/// Each dialect lists its agent's events as a typed set (an enum parsed
/// from the event's name, [`AgentEvent`]) and says which each one is in an
/// exhaustive `match`, so a new event added to the set must be placed, and a
/// name outside the set is refused ([`ReadAgentInputError::UnknownEvent`]).
/// The alternative, recognising the tool events and reading every other
/// name as "nothing to judge", let a tool call through whenever an agent
/// added an event (closed world: what toolgate cannot name, it refuses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A tool call the chain judges.
    Judged(Call),
    /// An event that carries no tool call (a session starts, a prompt is
    /// sent, the agent stops): toolgate has nothing to say.
    NoToolCall,
    /// An event that carries a tool call toolgate does not judge at that
    /// point: refused ([`ReadAgentInputError::UnjudgedToolEvent`]), never
    /// read as nothing to judge.
    ToolCallNotJudged,
}

/// Where a judged event stands to its tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Call {
    /// Before the tool runs.
    Before,
    /// After it ran.
    After,
    /// After it failed: the result is the error the model is shown.
    AfterFailure,
}

impl Call {
    /// The chain's event for it.
    pub(crate) fn event(self) -> Event {
        match self {
            Call::Before => Event::PreToolUse,
            Call::After | Call::AfterFailure => Event::PostToolUse,
        }
    }
}

/// One agent's events, named as its hook input names them.
pub(crate) trait AgentEvent: Copy + std::str::FromStr {
    /// What this event is to toolgate.
    fn role(self) -> Role;
}

/// The call the event named `name` in `E`'s set carries; an event outside
/// the set, or one carrying a tool call toolgate does not judge, is an
/// error naming it.
pub(crate) fn classify<E: AgentEvent>(name: &str) -> Result<Call, Unjudged> {
    let Ok(event) = name.parse::<E>() else {
        return Err(Unjudged::Refused(ReadAgentInputError::UnknownEvent(
            shown_event(name),
        )));
    };
    match event.role() {
        Role::Judged(call) => Ok(call),
        Role::NoToolCall => Err(Unjudged::NothingToSay),
        Role::ToolCallNotJudged => Err(Unjudged::Refused(ReadAgentInputError::UnjudgedToolEvent(
            shown_event(name),
        ))),
    }
}

/// Why [`classify`] found no call to judge.
#[derive(Debug)]
pub(crate) enum Unjudged {
    /// A known event with no tool call.
    NothingToSay,
    /// An unknown event, or one whose tool call toolgate does not judge.
    Refused(ReadAgentInputError),
}

/// An agent's event name as a reason quotes it: one line, bounded (the agent
/// wrote it, and the model reads the reason).
fn shown_event(name: &str) -> String {
    crate::text::excerpt(name, 80)
}

/// Why an agent's hook input could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadAgentInputError {
    /// Not a JSON object.
    #[error("the hook input is not JSON")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("the hook input is not a JSON object")]
    NotAnObject,
    /// A field the event needs is missing.
    #[error("the hook input has no `{0}`")]
    Missing(&'static str),
    /// An event outside the agent's known set: whatever it carries, the
    /// call is blocked.
    #[error(
        "toolgate does not know the agent event `{0}`, so it cannot judge what the event \
         carries and blocks it; route to toolgate only the events its help lists, or update \
         toolgate"
    )]
    UnknownEvent(String),
    /// A known event that carries a tool call toolgate does not judge.
    #[error(
        "toolgate does not judge the agent event `{0}`, which carries a tool call, so it \
         blocks it; route to toolgate only the events its help lists"
    )]
    UnjudgedToolEvent(String),
    /// A field has the wrong type or an unreadable value.
    #[error("the hook input's `{field}` is not {expected}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// What it should be.
        expected: &'static str,
    },
}

/// Reads the hook stdin `dialect`'s agent wrote.
pub fn read_agent_input(bytes: &[u8], dialect: Outward) -> Result<AgentCall, ReadAgentInputError> {
    let value: Value = serde_json::from_slice(bytes).map_err(ReadAgentInputError::NotJson)?;
    let Value::Object(obj) = value else {
        return Err(ReadAgentInputError::NotAnObject);
    };
    question!(Q<'a> { input: &'a Map<String, Value> } -> Result<AgentCall, ReadAgentInputError> = |d| d.read(input));
    self::dialect(dialect, Q { input: &obj })
}

/// What toolgate prints for an outcome when it is the agent's hook: the JSON
/// for stdout (none when there is nothing to say), always with exit 0.
/// `hook_event_name` is the agent's event, as [`AgentCall`] read it.
pub fn render_outcome(outcome: &Outcome, dialect: Outward, hook_event_name: &str) -> Option<Value> {
    question!(Q<'a> { outcome: &'a Outcome, event: &'a str } -> Option<Value> = |d| d.render(outcome, event));
    self::dialect(
        dialect,
        Q {
            outcome,
            event: hook_event_name,
        },
    )
}

/// A string field of a hook input.
pub(crate) fn string_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The tool's output as text, for a reason or a field that takes text.
pub(crate) fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The reason shown when a post hook withholds a call's output.
pub(crate) fn withheld(reason: &str) -> String {
    toolgate_contract::refusal::withheld(reason)
}

/// The reason shown for a pre `replace`, in agents that cannot answer for a
/// tool: the call is refused and the replacement is the reason.
pub(crate) fn answered_for_the_tool(output: &Value) -> String {
    toolgate_contract::refusal::answered_for_the_tool(&output_text(output))
}

/// The reason shown for an `ask` in an agent that toolgate cannot have ask
/// a person (or where nobody is there to answer): the call is refused, and
/// the reason says that a confirmation, not a rule, stopped it.
pub(crate) fn needs_a_person(reason: &str) -> String {
    toolgate_contract::refusal::needs_a_person(reason)
}

/// [`needs_a_person`] for a call a hook also rewrote: the agent would ask
/// about the original call, so it is refused, naming the rewrite (and, in
/// `why`, why the rewrite cannot ride along, when the agent has a reason).
pub(crate) fn needs_a_person_about_a_rewrite(reason: &str, input: &Value, why: &str) -> String {
    format!(
        "{}; and toolgate would run it rewritten{why}: {input}",
        needs_a_person(reason)
    )
}

/// `argv` as one shell command line, for agents whose handler is a shell
/// string. Each word is quoted as needed; a word with a NUL byte cannot be
/// quoted, and cannot be a path or an argument either, so it never occurs.
pub(crate) fn shell_words(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}
