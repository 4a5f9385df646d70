//! Asking a running `toolgate serve` instead of loading hooks here.
//!
//! # Why the fallback is silent and the server is checked
//!
//! An agent starts `toolgate claude-code` for every tool call; with a server
//! running, the process only forwards its input and prints the answer, so
//! no config is parsed and no component loaded per call. Without one (none
//! started, a stale socket, a server that does not acknowledge within
//! [`ACK_TIMEOUT`], one that answers `busy` because it has as many calls in
//! flight as it allows, or one that dies before answering) the call is evaluated
//! here exactly as before: the server is an accelerator, never a
//! requirement, and never a way to fail open. A server that refuses the
//! call before taking it (it speaks another protocol version, or does not
//! know this agent: see `toolgate::serve`) is the same, and the refusal is
//! said on stderr so an old server left running is noticed. The server must be the same
//! user as this process (checked on the socket with `SO_PEERCRED`): a
//! socket in a shared directory answered by someone else is ignored.
//!
//! The decision is the same either way: the server runs the same parsing,
//! the same loader and the same answer functions (`check::answer`,
//! `agent::answer`). It loads with its own global config, trust store and
//! `PATH`; this process sends its own only so that a server started with
//! others refuses the call (which is then evaluated here).
//!
//! Once the server has acknowledged a request it owns it: if it then does
//! not answer within the deadline, or answers with anything this process
//! cannot read exactly (a cut-off line, another request's `id`, a missing
//! or mistyped field), the call fails closed, as an in-process chain past
//! its deadline would ([`read_taken`]).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toolgate_contract::agent::Outward as Dialect;
use toolgate_contract::serve::{
    Answer, Body, Context, Evaluate, Mode, Op, Request, Status, VERSION,
};

/// How long a server has to acknowledge a request before this process
/// evaluates it itself.
pub const ACK_TIMEOUT: Duration = Duration::from_millis(250);

/// How long past the chain's deadline a server that took the call has to
/// answer it. Less than the agent process's chain margin
/// (`hook_process::CHAIN_MARGIN`), so the watchdog never races this wait.
pub const SERVER_GRACE: Duration = Duration::from_millis(500);

/// One evaluation to hand to the server.
#[derive(Debug)]
pub struct Ask<'a> {
    mode: Mode,
    /// `check --event` / `--tool`.
    overrides: (Option<String>, Option<String>),
    workspace: &'a Path,
    /// What the caller read on stdin.
    input: &'a [u8],
    /// The caller's budget for the whole chain.
    deadline: Option<Duration>,
}

impl<'a> Ask<'a> {
    /// `toolgate check`, with its overrides.
    pub fn check(
        workspace: &'a Path,
        input: &'a [u8],
        event: Option<String>,
        tool: Option<String>,
    ) -> Ask<'a> {
        Ask {
            mode: Mode::Check,
            overrides: (event, tool),
            workspace,
            input,
            deadline: None,
        }
    }

    /// `toolgate <agent>`, within `deadline`.
    pub fn agent(
        dialect: Dialect,
        workspace: &'a Path,
        input: &'a [u8],
        deadline: Duration,
    ) -> Ask<'a> {
        Ask {
            mode: Mode::Agent(dialect),
            overrides: (None, None),
            workspace,
            input,
            deadline: Some(deadline),
        }
    }

    /// The request line; `None` when the input is not text (not JSON
    /// either: the local path reports it).
    fn request(&self) -> Option<Request> {
        let input = std::str::from_utf8(self.input).ok()?.to_owned();
        let (event, tool) = self.overrides.clone();
        Some(Request {
            id: 1.into(),
            version: VERSION,
            op: Op::Evaluate(Evaluate {
                mode: self.mode,
                workspace: absolute(self.workspace),
                input,
                event,
                tool,
                deadline_ms: self
                    .deadline
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                context: context(),
            }),
        })
    }
}

/// The server's answer.
#[derive(Debug)]
pub struct Reply {
    /// What to print and the exit code, or why there is no answer.
    result: Result<(Option<serde_json::Value>, u8), Failure>,
    warning: Option<String>,
}

/// Why a call the server took has no answer.
#[derive(Debug)]
enum Failure {
    /// The server could not evaluate it (and said why): as when this
    /// process cannot.
    Server(String),
    /// What came back cannot be read, or nothing came in time: the call
    /// is blocked as a failed hook blocks it.
    Unreadable(String),
}

impl Reply {
    /// For `check`: what to print, and the exit code. An answer that
    /// cannot be read is a deny with exit 3 (blocked by a failure), as a
    /// hook that fails is.
    pub fn into_check_answer(self) -> anyhow::Result<(Option<serde_json::Value>, u8)> {
        self.warn();
        match self.result {
            Ok(answer) => Ok(answer),
            Err(Failure::Server(e)) => Err(anyhow::Error::msg(e)),
            Err(Failure::Unreadable(why)) => Ok((
                Some(serde_json::json!({"decision": "deny", "reason": why})),
                crate::hook_process::EXIT_HOOK_FAILED,
            )),
        }
    }

    /// For the agent commands: the answer to print, or an error (blocked).
    pub fn into_agent_answer(self) -> anyhow::Result<Option<serde_json::Value>> {
        self.warn();
        match self.result {
            Ok((stdout, _)) => Ok(stdout),
            Err(Failure::Server(e) | Failure::Unreadable(e)) => Err(anyhow::Error::msg(e)),
        }
    }

    fn warn(&self) {
        if let Some(w) = &self.warning {
            warn(w);
        }
    }
}

/// A line on stderr that cannot panic (in agent mode stderr may be gone).
fn warn(what: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "toolgate: warning: {}",
        toolgate_contract::text::one_line(what)
    );
}

/// What the server needs to load exactly what this process would.
pub fn context() -> Context {
    Context {
        global: crate::env::global_dir().map(|d| absolute(&d)),
        trust: crate::env::trust_dir().map(|d| absolute(&d)),
        path: crate::env::search_path().map(|p| p.to_string_lossy().into_owned()),
        // As given: a relative path is refused where it is used, not
        // resolved against this process's cwd.
        decision_log: crate::env::decision_log(),
    }
}

/// `path` as the server must see it: its cwd is not ours.
fn absolute(path: &Path) -> std::path::PathBuf {
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_owned())
}

/// Asks the server; `None` when there is none to ask, or it did not take
/// the call (evaluate here).
pub fn ask(ask: &Ask<'_>) -> Option<Reply> {
    let path = crate::env::socket_path()?;
    let request = ask.request()?;
    let stream = connect(&path)?;
    send(&stream, &request)?;
    let mut reader = BufReader::new(&stream);
    stream.set_read_timeout(Some(ACK_TIMEOUT)).ok()?;
    match read_answer(&mut reader).ok()??.body {
        Body::Ack { ack: true } => {}
        // Refused before it took the call (another protocol version, a mode
        // it does not know): said, and evaluated here.
        Body::Error { error, .. } => {
            warn(&format!(
                "the toolgate server at {} refused the call, so it is evaluated here: {}",
                path.display(),
                toolgate_contract::text::excerpt(&error, toolgate_contract::text::MAX_MESSAGE)
            ));
            return None;
        }
        // Past the server's --max-in-flight: evaluated here, as when no
        // server runs. Not said on stderr: it is load, not a fault, and
        // the server counts it (`serve status`, the metrics).
        Body::Busy { busy } => {
            tracing::debug!(?busy, "the toolgate server is busy; evaluating here");
            return None;
        }
        Body::Ack { ack: false }
        | Body::Evaluated { .. }
        | Body::Status { .. }
        | Body::Metrics { .. } => return None,
    }
    // Without a deadline of the caller's own (`check`), the server's chain
    // deadline bounds the call; it may be set as high as MAX_TIMEOUT_MS. The
    // grace is half of the agent process's chain margin, so this wait ends
    // (and says the server missed it) before that process's watchdog fires.
    let wait = ask
        .deadline
        .unwrap_or(Duration::from_millis(
            toolgate_contract::contract::MAX_TIMEOUT_MS,
        ))
        .saturating_add(SERVER_GRACE);
    stream.set_read_timeout(Some(wait)).ok()?;
    let failed = |why: String| {
        Some(Reply {
            result: Err(Failure::Unreadable(format!(
                "the toolgate server at {} took the call and {why}",
                path.display()
            ))),
            warning: None,
        })
    };
    let mut line = Vec::new();
    match reader.read_until(b'\n', &mut line) {
        // The server died before answering anything: evaluate here.
        Ok(0) => return None,
        Ok(_) => {}
        Err(_) => return failed(format!("did not answer within {} ms", wait.as_millis())),
    }
    match read_taken(&line, &request.id, ask.mode) {
        Ok(Body::Evaluated {
            exit,
            stdout,
            warning,
        }) => Some(Reply {
            result: Ok((stdout, exit)),
            warning,
        }),
        Ok(Body::Error { error, warning }) => Some(Reply {
            result: Err(Failure::Server(error)),
            warning,
        }),
        Ok(Body::Ack { .. } | Body::Busy { .. } | Body::Status { .. } | Body::Metrics { .. }) => {
            failed("answered with something that is not an answer to it".to_owned())
        }
        Err(why) => failed(why),
    }
}

/// Reads the answer to a call the server took, strictly: anything this
/// process cannot read exactly (a truncated line, another `id`, a missing
/// or mistyped field, an answer that is not an object) is a failure that
/// blocks the call, never an answer. Before, a missing `stdout` read as
/// "nothing to print", which every agent reads as an allow.
pub fn read_taken(line: &[u8], id: &serde_json::Value, mode: Mode) -> Result<Body, String> {
    let Some(line) = line.strip_suffix(b"\n") else {
        return Err("its answer was cut off (no end of line)".to_owned());
    };
    let value: serde_json::Value =
        serde_json::from_slice(line).map_err(|_| "its answer is not JSON".to_owned())?;
    let Some(fields) = value.as_object() else {
        return Err("its answer is not a JSON object".to_owned());
    };
    if fields.get("id") != Some(id) {
        return Err("its answer carries another request's id".to_owned());
    }
    let evaluated = fields.contains_key("exit") || fields.contains_key("stdout");
    if evaluated {
        // Both present, `exit` a code this mode can give, `stdout` an
        // object (or null: nothing printed, which only an agent gives).
        let exit = fields.get("exit").and_then(serde_json::Value::as_u64);
        let codes: &[u64] = match mode {
            Mode::Check => &[0, 2, 3],
            Mode::Agent(_) => &[0],
        };
        if !exit.is_some_and(|code| codes.contains(&code)) {
            return Err("its answer has no exit code this command gives".to_owned());
        }
        match (fields.get("stdout"), mode) {
            (Some(serde_json::Value::Object(_)), _)
            | (Some(serde_json::Value::Null), Mode::Agent(_)) => {}
            (None, _) => return Err("its answer has no `stdout`".to_owned()),
            (Some(_), _) => return Err("its answer's `stdout` is not an object".to_owned()),
        }
    }
    let answer: Answer =
        serde_json::from_value(value).map_err(|_| "its answer does not read".to_owned())?;
    match answer.body {
        Body::Evaluated { .. } if !evaluated => Err("its answer does not read".to_owned()),
        Body::Error { ref error, .. } if error.is_empty() => {
            Err("its answer is an error without a reason".to_owned())
        }
        body => Ok(body),
    }
}

/// Asks a running server for its status (for `toolgate hooks`); `None`
/// when none answers.
pub fn query_status() -> Option<Status> {
    query_status_at(&crate::env::socket_path()?)
}

/// Asks the server at `path` for its status; `None` when none answers.
pub fn query_status_at(path: &Path) -> Option<Status> {
    let stream = connect(path)?;
    stream.set_read_timeout(Some(ACK_TIMEOUT)).ok()?;
    let request = Request {
        id: 1.into(),
        version: VERSION,
        op: Op::Status,
    };
    send(&stream, &request)?;
    match read_answer(&mut BufReader::new(&stream)).ok()??.body {
        Body::Status { status } => Some(status),
        Body::Ack { .. }
        | Body::Busy { .. }
        | Body::Evaluated { .. }
        | Body::Error { .. }
        | Body::Metrics { .. } => None,
    }
}

/// Asks the server at `path` for its Prometheus metrics (`toolgate serve
/// metrics`): the text, or why there is none.
pub fn query_metrics_at(path: &Path) -> Result<String, String> {
    let nobody = || format!("no toolgate server answers at {}", path.display());
    let stream = connect(path).ok_or_else(nobody)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    let request = Request {
        id: 1.into(),
        version: VERSION,
        op: Op::Metrics,
    };
    send(&stream, &request).ok_or_else(nobody)?;
    match read_answer(&mut BufReader::new(&stream))
        .ok()
        .flatten()
        .ok_or_else(nobody)?
        .body
    {
        Body::Metrics { metrics } => Ok(metrics),
        Body::Error { error, .. } => Err(error),
        Body::Ack { .. } | Body::Busy { .. } | Body::Evaluated { .. } | Body::Status { .. } => {
            Err("the server did not answer with metrics".to_owned())
        }
    }
}

/// Why a tally was not counted ([`tally`]).
#[derive(Debug, thiserror::Error)]
pub enum TallyError {
    /// No socket path is known (no runtime directory, no `HOME`).
    #[error("no server socket is known")]
    NoSocket,
    /// Nothing of this user's answered at the socket.
    #[error("no toolgate server answers at {0}")]
    NoServer(PathBuf),
    /// The server refused it (no `--metrics`, another configuration).
    #[error("the server refused the tally: {0}")]
    Refused(String),
    /// The server answered something other than an acknowledgement.
    #[error("the server did not acknowledge the tally")]
    NotAcknowledged,
}

/// Has the running server count `tally` in its metrics (`toolgate mcp`'s
/// decisions): `Ok` once acknowledged.
///
/// # Errors
///
/// Why it was not counted: no server, one without `--metrics`, one
/// started with another configuration.
pub fn tally(tally: toolgate_contract::observe::Tally) -> Result<(), TallyError> {
    let path = crate::env::socket_path().ok_or(TallyError::NoSocket)?;
    let nobody = || TallyError::NoServer(path.clone());
    let stream = connect(&path).ok_or_else(nobody)?;
    stream
        .set_read_timeout(Some(ACK_TIMEOUT))
        .map_err(|_| nobody())?;
    let request = Request {
        id: 1.into(),
        version: VERSION,
        op: Op::Tally(toolgate_contract::serve::Tallied {
            tally,
            context: context(),
        }),
    };
    send(&stream, &request).ok_or_else(nobody)?;
    match read_answer(&mut BufReader::new(&stream))
        .ok()
        .flatten()
        .ok_or_else(nobody)?
        .body
    {
        Body::Ack { .. } => Ok(()),
        Body::Error { error, .. } => Err(TallyError::Refused(error)),
        Body::Busy { .. } | Body::Evaluated { .. } | Body::Status { .. } | Body::Metrics { .. } => {
            Err(TallyError::NotAcknowledged)
        }
    }
}

/// Counts what a host without metrics of its own (`toolgate mcp`)
/// decided in the running server's metrics: an observer that hands each
/// decided call's [`Tally`](toolgate_contract::observe::Tally) to one
/// thread of its own, which sends it ([`tally`]). The call's answer never
/// waits for it: the queue is bounded ([`TALLY_QUEUE`]) and a tally that
/// finds it full is dropped, as is one no server takes (none runs, one
/// without `--metrics`, another configuration's): a server can count only
/// what reaches it, as for a one-shot call that found no server.
#[derive(Debug)]
pub struct TallyToServer {
    queue: std::sync::mpsc::SyncSender<toolgate_contract::observe::Tally>,
}

/// Tallies waiting to be sent, at most.
pub const TALLY_QUEUE: usize = 1024;

impl TallyToServer {
    /// Starts the sending thread; `None` when no thread could be started.
    pub fn start() -> Option<TallyToServer> {
        let (queue, tallies) = std::sync::mpsc::sync_channel(TALLY_QUEUE);
        std::thread::Builder::new()
            .name("toolgate-tally".into())
            .spawn(move || {
                for next in tallies {
                    if let Err(why) = tally(next) {
                        tracing::debug!("a decision was not counted by a server: {why}");
                    }
                }
            })
            .ok()?;
        Some(TallyToServer { queue })
    }
}

impl toolgate_contract::observe::Observer for TallyToServer {
    fn observe(&self, seen: &toolgate_contract::observe::Observed<'_>) {
        use toolgate_contract::observe::{Ending, Tally};
        match seen.ending {
            Ending::Decided(outcome) => {
                let tool = seen.request.map_or("", |r| r.tool.as_str());
                let _ = self.queue.try_send(Tally::of(tool, outcome));
            }
            // Neither happens in a host without a ledger or a load of its
            // own; were it to, the server has no series for another
            // host's refusal or withheld output.
            Ending::Tampered { .. } | Ending::Refused { .. } => {}
        }
    }
}

/// Writes `request` as one line.
fn send(mut stream: &UnixStream, request: &Request) -> Option<()> {
    let mut line = serde_json::to_string(request).ok()?;
    line.push('\n');
    stream.write_all(line.as_bytes()).ok()
}

/// A connection to the server at `path`, if one listens there and runs as
/// this user.
pub fn connect(path: &Path) -> Option<UnixStream> {
    let stream = UnixStream::connect(path).ok()?;
    match same_user(&stream) {
        Ok(()) => Some(stream),
        Err(why) => {
            tracing::warn!("ignoring the server at {}: {why}", path.display());
            None
        }
    }
}

/// Reads one answer line; `None` at end of stream, or for a line that is
/// not an answer.
fn read_answer(reader: &mut impl BufRead) -> std::io::Result<Option<Answer>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(serde_json::from_str(&line).ok())
}

/// Why the process at the other end of a socket is not trusted.
#[derive(Debug, thiserror::Error)]
pub enum NotThisUser {
    /// `SO_PEERCRED` failed.
    #[error("its credentials cannot be read: {0}")]
    Unreadable(#[source] nix::errno::Errno),
    /// Another user runs it.
    #[error("it runs as uid {peer}, not as uid {me}")]
    Other {
        /// The peer's uid.
        peer: u32,
        /// This process's uid.
        me: u32,
    },
}

/// The process at the other end of `stream` is this user.
pub fn same_user(stream: &impl std::os::fd::AsFd) -> Result<(), NotThisUser> {
    let creds = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(NotThisUser::Unreadable)?;
    let me = nix::unistd::geteuid().as_raw();
    if creds.uid() == me {
        Ok(())
    } else {
        Err(NotThisUser::Other {
            peer: creds.uid(),
            me,
        })
    }
}
