//! What `toolgate serve` and the per-call process say to each other over
//! the server's socket: typed, versioned, and the same types at both ends.
//!
//! # Why typed, and why a version
//!
//! Both ends are `toolgate`, but not always the same build: a server started
//! before an upgrade keeps answering the new binary's calls. When the two
//! spelled the protocol in `json!` on each side, a mode one end did not know
//! was answered in another agent's format, and nothing said so. Here every
//! message is a struct both ends serialise, every `mode` is a [`Mode`] (so
//! an agent's name is [`Outward`]'s, never a string of its own), and every
//! request carries [`VERSION`]. A server refuses, before acknowledging, a
//! request of another version or in a mode it does not know, with an
//! [`Body::Error`] that says which; the client then evaluates the call
//! itself, exactly as when no server runs (`crates/toolgate-hook/src/client.rs`). A refusal
//! never turns into an answer in some other agent's format.
//!
//! # The exchange
//!
//! One JSON object per line each way.
//!
//! ```text
//! → {"id": 7, "version": 1, "op": "evaluate", "mode": "check" | "claude-code" | "codex",
//!    "workspace": "/abs/root", "input": "<what the agent wrote on stdin>",
//!    "event": null, "tool": null, "deadline_ms": 50000,
//!    "context": {"global": "…", "trust": "…", "path": "…", "decision_log": "…"}}
//! ← {"id": 7, "ack": true}
//! ← {"id": 7, "exit": 2, "stdout": {…what the command prints…}, "warning": "…"}
//!    or {"id": 7, "error": "…"}
//!    or, instead of the ack, {"id": 7, "busy": {"in_flight": 256, "limit": 256}}
//! → {"id": 8, "version": 1, "op": "status"}
//! ← {"id": 8, "status": {"pid": …, "requests": …, "workspaces": [ … ]}}
//! → {"id": 9, "version": 1, "op": "metrics"}
//! ← {"id": 9, "metrics": "# HELP toolgate_decisions_total …"}  (with `--metrics`)
//! → {"id": 10, "version": 1, "op": "tally", "tally": {"tool": "mcp__fs__read", "decision": "deny", …},
//!    "context": {…}}
//! ← {"id": 10, "ack": true}                                        (with `--metrics`)
//! ```
//!
//! A server with as many calls in flight as it allows (`--max-in-flight`)
//! answers `busy` instead of acknowledging: the caller evaluates the call
//! itself, exactly as when no server runs. So load past the limit costs the
//! callers a local evaluation each, never a queue the server holds without
//! bound, and never an answer.
//!
//! `id` is any JSON value, echoed so answers on one connection can be
//! matched to their requests; a line that cannot be read at all is answered
//! with `"id": null`.

mod exact;

use super::agent::Outward;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

/// What the caller asks for: one request line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Echoed in every answer to this request.
    pub id: Value,
    /// [`VERSION`], as the sender speaks it.
    pub version: u32,
    /// The operation and its arguments.
    #[serde(flatten)]
    pub op: Op,
}

/// An operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Run the chain for one call and answer as the command would.
    Evaluate(Evaluate),
    /// What the server has loaded.
    Status,
    /// The server's Prometheus metrics, as the text `GET /metrics` serves
    /// (a server started with `--metrics`; an older one refuses the op).
    Metrics,
    /// Count a call another host decided (the MCP proxy, which has no
    /// metrics of its own) in the server's metrics, as the server counts
    /// its own; acknowledged, never evaluated. A server without
    /// `--metrics`, or whose configuration differs from the sender's,
    /// refuses it.
    Tally(Tallied),
}

/// One call to count ([`Op::Tally`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tallied {
    /// What to count.
    pub tally: crate::observe::Tally,
    /// What the sender was started with (as [`Evaluate::context`]): a
    /// server whose own differs refuses the tally, as it would the call.
    #[serde(default)]
    pub context: Context,
}

/// One call to evaluate, as the per-call process received it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluate {
    /// Which command's answer to give.
    pub mode: Mode,
    /// The workspace root, absolute.
    pub workspace: PathBuf,
    /// What the caller read on stdin.
    pub input: String,
    /// `check --event`.
    #[serde(default)]
    pub event: Option<String>,
    /// `check --tool`.
    #[serde(default)]
    pub tool: Option<String>,
    /// The caller's budget for the whole chain; absent, the chain's own.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// What the caller was started with. Never what the server loads: a
    /// server whose own differs refuses the request before taking it (the
    /// caller then evaluates the call itself).
    #[serde(default)]
    pub context: Context,
}

/// The locations that decide what runs and where toolgate writes, as the
/// caller was started with them. The server compares them with its own and
/// refuses a caller whose differ; it never loads from them (a request that
/// chose the global config let a confined hook make the server run code
/// unconfined: SECURITY.md, "What a request to the server decides").
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// The global config directory, absolute.
    #[serde(default)]
    pub global: Option<PathBuf>,
    /// The trust store's directory, absolute.
    #[serde(default)]
    pub trust: Option<PathBuf>,
    /// `PATH`.
    #[serde(default)]
    pub path: Option<String>,
    /// The decision log the caller would have appended to (absolute): the
    /// server appends the call there instead, and the caller does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_log: Option<PathBuf>,
}

/// Which command's answer a request wants: `check`'s, or an agent's.
///
/// On the wire a plain string: `check`, or the dialect's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Mode {
    /// `toolgate check`.
    Check,
    /// `toolgate <agent>`.
    Agent(Outward),
}

impl Mode {
    const CHECK: &'static str = "check";

    /// Its name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Check => Self::CHECK,
            Mode::Agent(dialect) => dialect.name(),
        }
    }

    /// Every mode this build answers.
    pub fn all() -> impl Iterator<Item = Mode> {
        std::iter::once(Mode::Check).chain(Outward::ALL.iter().copied().map(Mode::Agent))
    }
}

impl From<Mode> for String {
    fn from(mode: Mode) -> String {
        mode.name().to_owned()
    }
}

impl TryFrom<String> for Mode {
    type Error = UnknownMode;

    fn try_from(name: String) -> Result<Mode, UnknownMode> {
        Mode::all()
            .find(|mode| mode.name() == name)
            .ok_or(UnknownMode(name))
    }
}

/// A `mode` this build does not answer.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown mode {:?}: this server answers {}; it does not answer one agent in another's format",
    crate::text::excerpt(.0, 64),
    Mode::all().map(Mode::name).collect::<Vec<_>>().join(", ")
)]
pub struct UnknownMode(String);

/// Why a request line was refused before it was acknowledged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadRequestError {
    /// Not JSON.
    #[error("not a JSON request")]
    NotJson(#[source] serde_json::Error),
    /// No `version`.
    #[error("the request has no protocol `version`; this server speaks version {VERSION}")]
    NoVersion,
    /// Another version.
    #[error(
        "protocol version {0} is not spoken here: this server speaks version {VERSION} \
         (a server started before an upgrade? restart `toolgate serve`)"
    )]
    OtherVersion(String),
    /// This version, but not a request it understands (an unknown op or
    /// mode, a missing field).
    #[error("not a request this server answers")]
    Malformed(#[source] serde_json::Error),
}

/// Reads one request line: the request, or the `id` to answer under and why
/// it is refused.
pub fn read_request(line: &[u8]) -> Result<Request, (Value, ReadRequestError)> {
    // The common case in one pass, straight into the types; anything else
    // (another version, a line that does not read) is read again as a
    // `Value` below, to say why under the right `id`.
    if let Ok(request) = serde_json::from_slice::<Request>(line)
        && request.version == VERSION
    {
        return Ok(request);
    }
    let value: Value =
        serde_json::from_slice(line).map_err(|e| (Value::Null, ReadRequestError::NotJson(e)))?;
    let id = value.get("id").cloned().unwrap_or(Value::Null);
    match value.get("version") {
        None => return Err((id, ReadRequestError::NoVersion)),
        Some(v) if v.as_u64() == Some(u64::from(VERSION)) => {}
        Some(other) => {
            // A number or a string is named (bounded); anything else only
            // by its kind, as it is the line's content, not a version
            // (found by the property tests, tests/all/props.rs).
            let other = match other {
                Value::Number(_) | Value::String(_) => crate::text::excerpt(&other.to_string(), 64),
                Value::Array(_) => "given as an array".to_owned(),
                Value::Object(_) => "given as an object".to_owned(),
                Value::Bool(_) | Value::Null => other.to_string(),
            };
            return Err((id, ReadRequestError::OtherVersion(other)));
        }
    }
    // From the line, for a position; and without serde's quotes of the
    // value (the line carries what the agent wrote on stdin), found by the
    // property tests (tests/all/props.rs). A refused mode is named: its own
    // message (`UnknownMode`) bounds it.
    serde_json::from_slice::<Request>(line).map_err(|e| {
        let e = serde::de::Error::custom(crate::strict_json::shape_error(&e));
        (id, ReadRequestError::Malformed(e))
    })
}

/// One answer line. It reads only as exactly one kind of [`Body`]: see
/// [`Body`]'s own reading.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Answer {
    /// The request's `id`.
    pub id: Value,
    /// What it says.
    #[serde(flatten)]
    pub body: Body,
}

/// What an answer says.
///
/// Written untagged (each kind is told by its own fields), and read
/// *exactly*: an answer carrying the fields of two kinds (`exit` and
/// `error`), of none, or a field no kind has, does not read at all, and an
/// unreadable answer blocks the call. Read as serde's untagged enum, the
/// first kind whose fields were present won and the rest were ignored, so
/// `{"exit": 0, "stdout": null, "error": "x"}` read as an allow: the kindest
/// form of an ambiguous message (SECURITY.md, class 36).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Body {
    /// The server took the request: from here it answers, or the call is
    /// blocked.
    Ack {
        /// Always `true`.
        ack: bool,
    },
    /// The command's answer.
    Evaluated {
        /// Its exit code.
        exit: u8,
        /// What it prints (`null`: nothing).
        stdout: Option<Value>,
        /// The config no longer loads and the last good one answered.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
    /// The server could not evaluate (or refused the request).
    Error {
        /// Why.
        error: String,
        /// As in [`Body::Evaluated`].
        #[serde(default, skip_serializing_if = "Option::is_none")]
        warning: Option<String>,
    },
    /// Not taken: the server has as many calls in flight as it allows.
    /// Sent instead of the acknowledgement; the caller evaluates the call
    /// itself. (An older client reads no answer in it, and does the same.)
    Busy {
        /// How busy.
        busy: Busy,
    },
    /// What the server has loaded.
    Status {
        /// The server's state.
        status: Status,
    },
    /// The server's Prometheus metrics.
    Metrics {
        /// The text exposition format.
        metrics: String,
    },
}

/// What a busy server says of its load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Busy {
    /// Calls it is evaluating.
    pub in_flight: usize,
    /// The most it evaluates at once (`--max-in-flight`).
    pub limit: usize,
}

impl Body {
    /// The acknowledgement.
    pub fn ack() -> Body {
        Body::Ack { ack: true }
    }

    /// An error without a warning.
    pub fn error(error: impl Into<String>) -> Body {
        Body::Error {
            error: error.into(),
            warning: None,
        }
    }
}

impl Answer {
    /// Appends the line to send, newline included, to `out`.
    pub fn write_line(&self, out: &mut Vec<u8>) {
        let start = out.len();
        if serde_json::to_writer(&mut *out, self).is_err() {
            out.truncate(start);
            out.extend_from_slice(self.to_line().as_bytes());
            return;
        }
        out.push(b'\n');
    }

    /// The line to send, newline included.
    pub fn to_line(&self) -> String {
        // Nothing in an answer fails to serialise (string keys, no
        // non-finite floats); were it to, the peer reads an error.
        let mut line = serde_json::to_string(self).unwrap_or_else(|e| {
            serde_json::json!({"id": self.id, "error": format!("cannot encode the answer: {e}")})
                .to_string()
        });
        line.push('\n');
        line
    }
}

/// `toolgate serve`'s state, for `toolgate hooks`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// The server's process.
    pub pid: u32,
    /// Seconds since it started.
    pub up_s: u64,
    /// Evaluations asked of it.
    pub requests: u64,
    /// Each loaded workspace.
    pub workspaces: Vec<WorkspaceStatus>,
    // The counters below came after protocol version 1 was published; they
    // default when an older server's status is read, and an older client
    // ignores them, so the version did not change for them.
    /// Evaluations answered with an error (the caller blocked the call).
    #[serde(default)]
    pub errors: u64,
    /// Lines refused before they were acknowledged (unreadable, another
    /// protocol version, an unknown mode, another user): their callers
    /// evaluated the call themselves.
    #[serde(default)]
    pub refused: u64,
    /// Configs loaded: first loads, reloads, loads after an eviction.
    #[serde(default)]
    pub loads: u64,
    /// Of those, loads of a config whose files had changed.
    #[serde(default)]
    pub reloads: u64,
    /// Loaded configs dropped, least recently used first, to stay within
    /// `max_workspaces`.
    #[serde(default)]
    pub evictions: u64,
    /// Loaded configs dropped after no call for `unload_idle_s` seconds
    /// (loaded again, from the compile cache, by their next call).
    #[serde(default)]
    pub unloaded_idle: u64,
    /// `--unload-idle` in seconds (0: never).
    #[serde(default)]
    pub unload_idle_s: u64,
    /// Calls whose deadline passed while their config was still loading
    /// (blocked; the load went on and answers the next call).
    #[serde(default)]
    pub load_timeouts: u64,
    /// Workspaces being loaded right now.
    #[serde(default)]
    pub loading: usize,
    /// The most configs it keeps loaded (`--max-workspaces`; 0: unknown).
    #[serde(default)]
    pub max_workspaces: usize,
    /// Calls being evaluated when the status was taken.
    #[serde(default)]
    pub in_flight: usize,
    /// The most it evaluates at once (`--max-in-flight`; 0: unknown).
    #[serde(default)]
    pub max_in_flight: usize,
    /// Calls answered `busy` (not taken; their callers evaluated them).
    #[serde(default)]
    pub busy: u64,
    /// Server-side latency per mode, over each mode's recent requests.
    #[serde(default)]
    pub latency: Vec<ModeLatency>,
    /// When the server last heard from each agent (mode), and from each of
    /// the most recent sessions: a guard whose agents stopped calling it
    /// shows here, and in `toolgate_last_call_timestamp_seconds`.
    #[serde(default)]
    pub heard: Vec<Heard>,
}

/// The last call from one agent, or one of its sessions.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Heard {
    /// The mode: `check`, or the agent's name.
    pub agent: String,
    /// The session, when the call named one; `None`: the agent as a whole.
    pub session_id: Option<String>,
    /// Calls heard.
    pub calls: u64,
    /// When the last was heard, seconds since the Unix epoch.
    pub last_unix_s: u64,
    /// Seconds since then, when the status was taken.
    pub last_s_ago: u64,
}

/// How long one mode's recent requests took inside the server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeLatency {
    /// The mode (`check`, or an agent's name).
    pub mode: String,
    /// Requests of this mode since the server started.
    pub count: u64,
    /// How many of the most recent ones the percentiles cover.
    pub window: usize,
    /// Median, in microseconds.
    pub p50_us: u64,
    /// 99th percentile, in microseconds.
    pub p99_us: u64,
}

/// One workspace's loaded chain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceStatus {
    /// Its root.
    pub workspace: PathBuf,
    /// The global config directory it was loaded with.
    pub global: Option<PathBuf>,
    /// How many hooks.
    pub hooks: usize,
    /// Seconds since it was loaded.
    pub loaded_s_ago: u64,
    /// The last reload's failure, while the files stay broken.
    pub error: Option<String>,
    /// Its hooks, in order.
    pub participants: Vec<ParticipantStatus>,
}

/// One hook of a loaded chain.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParticipantStatus {
    /// Its name.
    pub name: String,
    /// Its binding (`subprocess`, `wasm`, …).
    pub binding: String,
    /// Where it came from (`global`, `workspace`).
    pub source: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_mode_reads_back_as_itself_and_agents_take_their_dialects_names() {
        for mode in Mode::all() {
            let text = serde_json::to_value(mode).unwrap();
            assert_eq!(serde_json::from_value::<Mode>(text.clone()).unwrap(), mode);
            if let Mode::Agent(dialect) = mode {
                assert_eq!(text, serde_json::to_value(dialect).unwrap());
                assert_eq!(text, json!(dialect.to_string()));
            }
        }
    }

    #[test]
    fn an_unknown_mode_is_refused_naming_what_is_answered() {
        let line = json!({"id": 4, "version": VERSION, "op": "evaluate", "mode": "gemini-cli",
                          "workspace": "/w", "input": "{}"})
        .to_string();
        let (id, error) = read_request(line.as_bytes()).unwrap_err();
        assert_eq!(id, json!(4));
        let error = crate::text::error_chain(&error);
        assert!(error.contains("unknown mode \"gemini-cli\""), "{error}");
        assert!(error.contains("claude-code"), "{error}");
    }

    #[test]
    fn another_version_is_refused_before_anything_else_is_read() {
        for (version, says) in [
            (Some(json!(2)), "protocol version 2"),
            (Some(json!("1")), "protocol version \"1\""),
            (None, "no protocol `version`"),
        ] {
            let mut line = json!({"id": "a", "op": "nonsense"});
            if let Some(v) = version {
                line["version"] = v;
            }
            let (id, error) = read_request(line.to_string().as_bytes()).unwrap_err();
            assert_eq!(id, json!("a"));
            let error = crate::text::error_chain(&error);
            assert!(error.contains(says), "{error}");
        }
    }

    #[test]
    fn answers_read_back_as_what_was_sent() {
        let answers = [
            Body::ack(),
            Body::Evaluated {
                exit: 2,
                stdout: Some(json!({"decision": "deny"})),
                warning: Some("stale".into()),
            },
            Body::Evaluated {
                exit: 0,
                stdout: None,
                warning: None,
            },
            Body::error("no workspace"),
            Body::Busy {
                busy: Busy {
                    in_flight: 1,
                    limit: 1,
                },
            },
            Body::Metrics {
                metrics: "m".into(),
            },
        ];
        for body in answers {
            let answer = Answer { id: json!(7), body };
            let line = answer.to_line();
            assert_eq!(
                serde_json::from_str::<Answer>(&line).unwrap(),
                answer,
                "{line}"
            );
        }
    }

    #[test]
    fn an_answer_with_the_fields_of_two_kinds_or_of_none_does_not_read() {
        for line in [
            json!({"id": 1, "exit": 0, "stdout": null, "error": "x"}),
            json!({"id": 1, "exit": 0, "stdout": {}, "ack": true}),
            json!({"id": 1, "error": "x", "metrics": ""}),
            json!({"id": 1, "exit": 0, "stdout": {}, "surprise": 1}),
            json!({"id": 1, "exit": 0}),
            json!({"id": 1}),
            json!({"id": 1, "warning": "w"}),
            json!({"exit": 0, "stdout": {}}),
        ] {
            assert!(
                serde_json::from_value::<Answer>(line.clone()).is_err(),
                "{line}"
            );
        }
    }
}
