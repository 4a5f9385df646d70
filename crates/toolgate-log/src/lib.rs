//! The decision log: one JSON line per evaluated call, with every run
//! record and what each hook wrote for the operator, in a file the operator
//! names; and the [`ledger`] of what was answered before each call ran.
//!
//! # Why a crate of its own, on the contract alone
//!
//! Every host that answers a call writes here: the one-shot `check` and
//! agent commands, the server, the MCP proxy, `toolgate log` reading it
//! back, the bench measuring it. While the log sat in the server's crate
//! each of them depended on the server to write a line. It needs only what
//! a call and its outcome are (`toolgate-contract`) and the private-file
//! rules (`toolgate-fs`), and it is told about a call as an [`Observer`]:
//! the runner tells it every outcome, so no host writes a line itself.
//! Its signed checkpoints' timer ([`Checkpoints`]) lives here too.
//!
//! # Why it exists
//!
//! In agent mode the agent is told only what the model may see ("hook
//! `guard` could not decide (exited_non_zero)"); the hook's traceback, which
//! the run record already carries as `diagnostics`, went nowhere. `check`
//! prints the runs, but nobody runs `check` for a call an agent made an
//! hour ago. The log keeps them, and `toolgate log` reads them back.
//!
//! # Who names the file: the operator's environment, never a workspace
//!
//! `$TOOLGATE_DECISION_LOG` (an absolute path) turns it on; unset, nothing
//! is written. An environment variable rather than a key in hooks.json: a
//! workspace's hooks.json is written by whoever wrote the repository, and a
//! repository that could point the log somewhere could make toolgate append
//! to a file of its choosing; the global hooks.json is the operator's, but
//! reading it on every call would put a parse on the path the server exists
//! to make short (a forwarded call reads no config) and make `toolgate log`
//! load hooks to find a file. The environment is read where every other
//! variable is (`env.rs`), by the lean client too, and sent to the server
//! with the call (`toolgate::serve::Context`), so the server writes where
//! the calling process would have, once: a call the server answered is
//! logged by the server, never again by the caller.
//!
//! # What makes the file safe to append to
//!
//! - The path must be absolute: an agent runs its hooks from whatever
//!   directory it is in, and a relative path would land in a repository.
//! - It is refused (a warning on stderr, the decision unchanged) when it is
//!   a symlink, not a regular file, another user's, writable by group or
//!   others, in a directory another user could change, or inside the
//!   workspace being evaluated (the agent and the repository's own hooks
//!   could read or rewrite it there).
//! - It is created `0600` (its directory `0700` when toolgate creates it):
//!   diagnostics are whatever a hook printed.
//!
//! # Many writers at once, and a bounded size
//!
//! Every agent process and the server may append at the same moment. Each
//! line is written with one `write` on an `O_APPEND` descriptor while an
//! exclusive `flock` is held on the file: appends to a regular file are not
//! promised to be atomic past `PIPE_BUF`, and a line with diagnostics is
//! longer. Past [`MAX_BYTES`] the file is renamed to `.1` (`.1` to `.2`, …,
//! [`KEEP`] kept) under that lock; a writer that then finds its descriptor
//! no longer names the path (it waited on the old file) opens the new one.
//! A line is at most [`MAX_LINE`] bytes: each run's diagnostics keep their
//! last [`DIAGNOSTICS_TAIL`] bytes (a traceback ends with its error), less
//! if the line is still too long. So the log and its rotations never hold
//! much more than `(KEEP + 1) × MAX_BYTES`.
//!
//! # Never in the way of a decision
//!
//! The log is written after the chain decided, and nothing it does changes
//! the answer: a refused path, a full disk or a lock held too long is a
//! warning. The lock is waited for at most [`LOCK_WAIT`], then the line is
//! dropped with a warning rather than delaying the agent.

use serde::Serialize;
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};
use toolgate_contract::contract::Request;
use toolgate_contract::observe::{Ending, Observed, Observer};
use toolgate_contract::outcome::{Outcome, RunRecord};
use toolgate_contract::text;

pub mod chain;
pub mod checkpoint;
mod file;
pub mod ledger;
mod schedule;
pub mod verify;
mod witness;

pub use schedule::Checkpoints;

pub(crate) use file::append;
pub use file::{files, foreign_files};

/// The size past which the file is rotated.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;
/// How many rotated files are kept (`.1` … `.3`).
pub const KEEP: u32 = 3;
/// The longest line written.
const MAX_LINE: usize = 64 * 1024;
/// What is kept of each run's diagnostics: the end, where a traceback says
/// what went wrong.
const DIAGNOSTICS_TAIL: usize = 4 * 1024;
/// What is kept of the tool's input and of a reason, as one line.
const EXCERPT: usize = 512;
/// The longest wait for another writer's lock.
const LOCK_WAIT: Duration = Duration::from_millis(500);

/// Where and as what a call is logged.
#[derive(Clone, Debug)]
pub struct Logging {
    /// The file.
    path: PathBuf,
    /// The command that was asked: `check`, or the agent's name.
    via: &'static str,
    /// Whether `toolgate serve` answered it.
    served: bool,
    /// The call's workspace.
    workspace: PathBuf,
}

/// One line of the log. `seq` and `prev` must stay the last members: the
/// chain's writer reads them from the end of the file ([`chain`]).
#[derive(Serialize)]
struct Line<'a> {
    kind: &'static str,
    time: String,
    via: &'a str,
    served: bool,
    pid: u32,
    workspace: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<String>,
    /// `allow`, `deny`, `modify`, `replace`; `error` when toolgate could
    /// not evaluate (the call was blocked).
    decision: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    decided_by: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    /// What the first shadow hook that would have changed the outcome
    /// would have made of it.
    #[serde(skip_serializing_if = "Option::is_none")]
    shadow: Option<toolgate_contract::outcome::Shadowed>,
    /// Evidence that the call ran past toolgate (`ran_after_deny`,
    /// `never_judged`: [`ledger::Before`]); its output was withheld.
    #[serde(skip_serializing_if = "Option::is_none")]
    tamper: Option<&'a str>,
    duration_us: u64,
    runs: Runs<'a>,
    #[serde(skip_serializing_if = "is_zero")]
    runs_omitted: usize,
    /// Bytes of a partial record (its writer died mid-line) this writer
    /// cut from the end of the file before writing.
    #[serde(skip_serializing_if = "Option::is_none")]
    torn_bytes: Option<u64>,
    seq: u64,
    prev: String,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Logging {
    /// Logging to `path` for a call made through `via` in `workspace`
    /// (recorded absolute: the caller's cwd is not the reader's).
    pub fn new(path: PathBuf, via: &'static str, served: bool, workspace: &Path) -> Self {
        Logging {
            path,
            via,
            served,
            workspace: std::path::absolute(workspace).unwrap_or_else(|_| workspace.to_owned()),
        }
    }

    /// Logs what the chain decided for `request`; `None`, or a warning for
    /// the operator when the line could not be written.
    pub fn outcome(&self, request: &Request, outcome: &Outcome, took: Duration) -> Option<String> {
        let reason = match &outcome.decision {
            toolgate_contract::contract::Decision::Deny { reason }
            | toolgate_contract::contract::Decision::Ask { reason, .. } => {
                Some(text::excerpt(reason, EXCERPT))
            }
            _ => None,
        };
        let line = Line {
            decision: outcome.decision.name(),
            decided_by: outcome.decided_by.as_deref(),
            reason,
            shadow: outcome.shadowed(),
            ..self.line(Some(request), took)
        };
        self.write(line, &outcome.runs)
    }

    /// Logs a result withheld because the call ran past toolgate
    /// (`tamper`: what the evidence is, [`ledger::Before::tamper`]).
    pub fn tamper(
        &self,
        request: &Request,
        outcome: &Outcome,
        tamper: Option<&'static str>,
        took: Duration,
    ) -> Option<String> {
        let reason = match &outcome.decision {
            toolgate_contract::contract::Decision::Deny { reason } => {
                Some(text::excerpt(reason, EXCERPT))
            }
            _ => None,
        };
        let line = Line {
            decision: outcome.decision.name(),
            decided_by: outcome.decided_by.as_deref(),
            reason,
            tamper,
            ..self.line(Some(request), took)
        };
        self.write(line, &outcome.runs)
    }

    /// Logs that toolgate could not evaluate the call (it was blocked):
    /// `request` when it was read.
    pub fn error(&self, request: Option<&Request>, error: &str, took: Duration) -> Option<String> {
        let line = Line {
            decision: "error",
            error: Some(text::bound(
                text::sanitize(error),
                text::MAX_MESSAGE,
                "error",
            )),
            ..self.line(request, took)
        };
        self.write(line, &[])
    }

    fn line<'a>(&'a self, request: Option<&'a Request>, took: Duration) -> Line<'a> {
        Line {
            kind: "decision",
            time: text::rfc3339(SystemTime::now()),
            via: self.via,
            served: self.served,
            pid: std::process::id(),
            workspace: &self.workspace,
            event: request.map(|r| r.event.as_str()),
            tool: request.map(|r| r.tool.as_str()),
            session_id: request.and_then(|r| r.session_id.as_deref()),
            tool_call_id: request.and_then(|r| r.tool_call_id.as_deref()),
            input: request.map(|r| text::excerpt(&r.input.to_string(), EXCERPT)),
            decision: "",
            decided_by: None,
            reason: None,
            error: None,
            shadow: None,
            tamper: None,
            duration_us: u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
            runs: Runs::Cut(Vec::new()),
            runs_omitted: 0,
            torn_bytes: None,
            seq: 0,
            prev: String::new(),
        }
    }

    /// Serialises `line` with `runs` within [`MAX_LINE`] and appends it.
    fn write<'a>(&'a self, mut line: Line<'a>, runs: &'a [RunRecord]) -> Option<String> {
        let mut next = |head: &chain::Head, torn: u64| {
            line.seq = head.seq + 1;
            line.prev.clone_from(&head.hash);
            line.torn_bytes = (torn > 0).then_some(torn);
            chain::seal(bounded(&mut line, runs).trim_end())
        };
        let append = || append(&self.path, Some(&self.workspace), &mut next, max_bytes());
        // In the server, off the async worker while it waits for the lock.
        let appended = blocking(append);
        match appended {
            Ok(appended) if appended.notes.is_empty() => None,
            Ok(appended) => Some(format!(
                "the decision log {}: {}",
                self.path.display(),
                appended.notes.join("; ")
            )),
            Err(why) => Some(format!(
                "the decision log {} was not written ({why}); the decision is unchanged",
                self.path.display()
            )),
        }
    }
}

impl Observer for Logging {
    /// Appends the line; a failure to is a warning on stderr
    /// ([`warn`]), never a change of the answer.
    fn observe(&self, seen: &Observed<'_>) {
        let warning = match seen.ending {
            Ending::Decided(outcome) => match seen.request {
                Some(request) => self.outcome(request, outcome, seen.took),
                None => self.error(None, "an outcome without its call", seen.took),
            },
            Ending::Tampered { outcome, evidence } => match seen.request {
                Some(request) => self.tamper(request, outcome, evidence, seen.took),
                None => self.error(None, "a withheld output without its call", seen.took),
            },
            Ending::Refused { error } => self.error(seen.request, error, seen.took),
        };
        warn(warning);
    }
}

/// Runs `f`, which blocks on a file (a lock, a read, an append), off the
/// async worker when there is a multi-threaded runtime (the server's),
/// else right here (a one-shot process's current-thread runtime, where
/// `block_in_place` is not allowed).
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

/// Says `warning` on stderr once per process (a server with a refused log
/// would otherwise say it at every call), never panicking: in agent mode
/// stderr may be gone.
pub fn warn(warning: Option<String>) {
    static SAID: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    let Some(warning) = warning else { return };
    if let Ok(mut said) = SAID.lock() {
        if said.as_deref() == Some(warning.as_str()) {
            return;
        }
        *said = Some(warning.clone());
    }
    let _ = writeln!(
        std::io::stderr(),
        "toolgate: warning: {}",
        text::one_line(&warning)
    );
}

/// `line` as JSON with a newline, no longer than [`MAX_LINE`]: the runs'
/// diagnostics are cut to their tails, shorter and shorter, and as a last
/// resort runs are left out (and counted).
fn bounded<'a>(line: &mut Line<'a>, runs: &'a [RunRecord]) -> String {
    // Most calls: every run's diagnostics within the tail, serialised as
    // they are (no copy, no `Value`: measured, half a record's cost).
    let short = |r: &RunRecord| {
        r.diagnostics
            .as_ref()
            .is_none_or(|d| d.len() <= DIAGNOSTICS_TAIL)
    };
    if runs.iter().all(short) {
        line.runs = Runs::AsTheyAre(runs);
        let text = to_line(line);
        if text.len() <= MAX_LINE {
            return text;
        }
    }
    let mut cut = Vec::new();
    for tail in [DIAGNOSTICS_TAIL, 512, 0] {
        cut = runs.iter().map(|r| run_json(r, tail)).collect();
        line.runs = Runs::Cut(cut.clone());
        let text = to_line(line);
        if text.len() <= MAX_LINE {
            return text;
        }
    }
    while cut.pop().is_some() {
        line.runs_omitted += 1;
        line.runs = Runs::Cut(cut.clone());
        let text = to_line(line);
        if text.len() <= MAX_LINE {
            return text;
        }
    }
    to_line(line)
}

/// A record's runs: as the chain recorded them, or cut to fit.
#[derive(Serialize)]
#[serde(untagged)]
enum Runs<'a> {
    AsTheyAre(&'a [RunRecord]),
    Cut(Vec<Value>),
}

fn to_line(line: &Line<'_>) -> String {
    let mut text = serde_json::to_string(line).unwrap_or_else(|_| "{}".into());
    text.push('\n');
    text
}

/// A run record as `check` prints it, its diagnostics cut to their last
/// `tail` bytes.
fn run_json(run: &RunRecord, tail: usize) -> Value {
    let mut run = run.clone();
    run.diagnostics = run.diagnostics.take().and_then(|d| {
        if tail == 0 {
            return None;
        }
        if d.len() <= tail {
            return Some(d);
        }
        let mut start = d.len() - tail;
        while !d.is_char_boundary(start) {
            start += 1;
        }
        Some(format!(
            "[toolgate: {start} bytes of diagnostics omitted] …{}",
            &d[start..]
        ))
    });
    serde_json::to_value(&run).unwrap_or(Value::Null)
}

/// The rotation size: [`MAX_BYTES`], or in debug builds what the tests
/// set (`TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES`).
pub(crate) fn max_bytes() -> u64 {
    #[cfg(debug_assertions)]
    if let Some(n) = std::env::var("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    MAX_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_stays_within_its_bound_however_much_the_hooks_wrote() {
        let run = RunRecord {
            name: "loud".into(),
            binding: toolgate_contract::contract::BindingKind::Subprocess,
            source: toolgate_contract::contract::Source::Global,
            event: toolgate_contract::contract::Event::PreToolUse,
            round: 1,
            step: toolgate_contract::outcome::Step::Failed,
            reason: None,
            failure: None,
            duration: Duration::from_millis(1),
            metrics: Default::default(),
            warning: None,
            diagnostics: Some(format!("{}Traceback: the end", "x".repeat(20_000))),
            shadow: false,
        };
        let logging = Logging {
            path: "/nonexistent/log".into(),
            via: "check",
            served: false,
            workspace: "/w".into(),
        };
        let runs = vec![run; 40];
        let mut line = logging.line(None, Duration::ZERO);
        let text = bounded(&mut line, &runs);
        assert!(text.len() <= MAX_LINE, "{}", text.len());
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["runs"].as_array().unwrap().len(), 40);
        // A run whose diagnostics fit is written as recorded.
        let quiet = vec![RunRecord {
            diagnostics: Some("short".into()),
            ..runs[0].clone()
        }];
        let mut line = logging.line(None, Duration::ZERO);
        let value: Value = serde_json::from_str(&bounded(&mut line, &quiet)).unwrap();
        assert_eq!(value["runs"][0]["diagnostics"], "short");
        let one = vec![runs[0].clone()];
        let mut line = logging.line(None, Duration::ZERO);
        let text = bounded(&mut line, &one);
        let value: Value = serde_json::from_str(&text).unwrap();
        let kept = value["runs"][0]["diagnostics"].as_str().unwrap();
        assert!(kept.ends_with("Traceback: the end"), "{kept}");
        assert!(kept.len() < DIAGNOSTICS_TAIL + 100);
    }
}
