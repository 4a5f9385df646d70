//! Asking a running `toolgate serve` instead of loading hooks here.
//!
//! # Why the fallback is silent and the server is checked
//!
//! An agent starts `toolgate claude-code` for every tool call; with a server
//! running, the process only forwards its input and prints the answer, so
//! no config is parsed and no component loaded per call. Without one (none
//! started, a stale socket, a server that does not acknowledge within
//! [`ACK_TIMEOUT`], or one that dies before answering) the call is evaluated
//! here exactly as before: the server is an accelerator, never a
//! requirement, and never a way to fail open. A server that refuses the
//! call before taking it (it speaks another protocol version, or does not
//! know this agent: see `toolgate::serve`) is the same, and the refusal is
//! said on stderr so an old server left running is noticed. The server must be the same
//! user as this process (checked on the socket with `SO_PEERCRED`): a
//! socket in a shared directory answered by someone else is ignored.
//!
//! The decision is the same either way: the server runs the same parsing,
//! the same loader (with this process's global config, trust store and
//! `PATH`, sent with each request) and the same answer functions
//! (`check::answer`, `agent::answer`).
//!
//! Once the server has acknowledged a request it owns it: if it then does
//! not answer within the deadline, the call fails closed, as an in-process
//! chain past its deadline would.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;
use toolgate::agent::Outward as Dialect;
use toolgate::serve::{Answer, Body, Context, Evaluate, Mode, Op, Request, Status, VERSION};

/// How long a server has to acknowledge a request before this process
/// evaluates it itself.
pub(crate) const ACK_TIMEOUT: Duration = Duration::from_millis(250);

/// How long past the chain's deadline a server that took the call has to
/// answer it. Less than the agent process's chain margin
/// (`hook_process::CHAIN_MARGIN`), so the watchdog never races this wait.
pub(crate) const SERVER_GRACE: Duration = Duration::from_millis(500);

/// One evaluation to hand to the server.
pub(crate) struct Ask<'a> {
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
    pub(crate) fn check(
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
    pub(crate) fn agent(
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
pub(crate) struct Reply {
    /// What to print and the exit code, or why it could not evaluate.
    result: Result<(Option<serde_json::Value>, u8), String>,
    warning: Option<String>,
}

impl Reply {
    /// For `check`: what to print, and the exit code.
    pub(crate) fn into_check_answer(self) -> anyhow::Result<(Option<serde_json::Value>, u8)> {
        self.warn();
        self.result.map_err(anyhow::Error::msg)
    }

    /// For the agent commands: the answer to print, or an error (blocked).
    pub(crate) fn into_agent_answer(self) -> anyhow::Result<Option<serde_json::Value>> {
        self.warn();
        match self.result {
            Ok((stdout, _)) => Ok(stdout),
            Err(e) => Err(anyhow::Error::msg(e)),
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
        toolgate::text::one_line(what)
    );
}

/// What the server needs to load exactly what this process would.
pub(crate) fn context() -> Context {
    Context {
        global: super::env::global_dir().map(|d| absolute(&d)),
        trust: super::env::trust_store().map(|s| absolute(s.dir())),
        path: super::env::search_path().map(|p| p.to_string_lossy().into_owned()),
        // As given: a relative path is refused where it is used, not
        // resolved against this process's cwd.
        decision_log: super::env::decision_log(),
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
pub(crate) fn ask(ask: &Ask<'_>) -> Option<Reply> {
    let path = super::env::socket_path()?;
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
                toolgate::text::excerpt(&error, toolgate::text::MAX_MESSAGE)
            ));
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
        .unwrap_or(Duration::from_millis(toolgate::config::MAX_TIMEOUT_MS))
        .saturating_add(SERVER_GRACE);
    stream.set_read_timeout(Some(wait)).ok()?;
    let answer = match read_answer(&mut reader) {
        Ok(Some(answer)) => answer,
        // The server died before answering: evaluate here.
        Ok(None) => return None,
        Err(_) => {
            return Some(Reply {
                result: Err(format!(
                    "the toolgate server at {} took the call and did not answer within {} ms",
                    path.display(),
                    wait.as_millis()
                )),
                warning: None,
            });
        }
    };
    match answer.body {
        Body::Evaluated {
            exit,
            stdout,
            warning,
        } => Some(Reply {
            result: Ok((stdout, exit)),
            warning,
        }),
        Body::Error { error, warning } => Some(Reply {
            result: Err(error),
            warning,
        }),
        // Not an answer to this call: evaluate here.
        Body::Ack { .. } | Body::Status { .. } | Body::Metrics { .. } => None,
    }
}

/// Asks a running server for its status (for `toolgate hooks`); `None`
/// when none answers.
pub(crate) fn query_status() -> Option<Status> {
    query_status_at(&super::env::socket_path()?)
}

/// Asks the server at `path` for its status; `None` when none answers.
pub(crate) fn query_status_at(path: &Path) -> Option<Status> {
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
        Body::Ack { .. } | Body::Evaluated { .. } | Body::Error { .. } | Body::Metrics { .. } => {
            None
        }
    }
}

/// Asks the server at `path` for its Prometheus metrics (`toolgate serve
/// metrics`): the text, or why there is none.
pub(crate) fn query_metrics_at(path: &Path) -> Result<String, String> {
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
        Body::Ack { .. } | Body::Evaluated { .. } | Body::Status { .. } => {
            Err("the server did not answer with metrics".to_owned())
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
pub(crate) fn connect(path: &Path) -> Option<UnixStream> {
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
pub(crate) enum NotThisUser {
    #[error("its credentials cannot be read: {0}")]
    Unreadable(#[source] nix::errno::Errno),
    #[error("it runs as uid {peer}, not as uid {me}")]
    Other { peer: u32, me: u32 },
}

/// The process at the other end of `stream` is this user.
pub(crate) fn same_user(stream: &impl std::os::fd::AsFd) -> Result<(), NotThisUser> {
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
