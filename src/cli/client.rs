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
//! requirement, and never a way to fail open. The server must be the same
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

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;
use toolgate::agent::Outward as Dialect;

/// How long a server has to acknowledge a request before this process
/// evaluates it itself.
pub(crate) const ACK_TIMEOUT: Duration = Duration::from_millis(250);

/// How the caller wants the answer.
pub(crate) enum Mode {
    /// `toolgate check`, with its overrides.
    Check {
        event: Option<String>,
        tool: Option<String>,
    },
    /// `toolgate claude-code` / `toolgate codex`.
    Agent(Dialect),
}

impl Mode {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Mode::Check { .. } => "check",
            Mode::Agent(Dialect::ClaudeCode) => "claude-code",
            Mode::Agent(_) => "codex",
        }
    }
}

/// One evaluation to hand to the server.
pub(crate) struct Ask<'a> {
    pub(crate) mode: Mode,
    pub(crate) workspace: &'a Path,
    /// What the caller read on stdin.
    pub(crate) input: &'a [u8],
    /// The caller's budget for the whole chain.
    pub(crate) deadline: Option<Duration>,
}

/// The server's answer.
pub(crate) struct Reply {
    /// What to print and the exit code, or why it could not evaluate.
    result: Result<(Option<Value>, u8), String>,
    warning: Option<String>,
}

impl Reply {
    /// For `check`: print the answer, return its exit code.
    pub(crate) fn finish(self) -> anyhow::Result<ExitCode> {
        self.warn();
        let (stdout, code) = self.result.map_err(anyhow::Error::msg)?;
        if let Some(json) = stdout {
            outln!("{json}");
        }
        Ok(ExitCode::from(code))
    }

    /// For the agent commands: the answer to print, or an error (blocked).
    pub(crate) fn into_agent_answer(self) -> anyhow::Result<Option<Value>> {
        self.warn();
        match self.result {
            Ok((stdout, _)) => Ok(stdout),
            Err(e) => Err(anyhow::Error::msg(e)),
        }
    }

    fn warn(&self) {
        if let Some(w) = &self.warning {
            eprintln!("toolgate: warning: {}", toolgate::text::one_line(w));
        }
    }
}

/// What the server needs to load exactly what this process would.
pub(crate) fn context() -> Value {
    json!({
        "global": super::env::global_dir().map(|d| absolute(&d)),
        "trust": super::env::trust_store().map(|s| absolute(s.dir())),
        "path": super::env::search_path().map(|p| p.to_string_lossy().into_owned()),
    })
}

/// `path` as the server must see it: its cwd is not ours.
fn absolute(path: &Path) -> std::path::PathBuf {
    path.canonicalize()
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_owned())
}

/// Asks the server; `None` when there is none to ask (evaluate here).
pub(crate) fn ask(ask: &Ask<'_>) -> Option<Reply> {
    let path = super::env::socket_path()?;
    let Ok(input) = std::str::from_utf8(ask.input) else {
        return None; // not JSON either: the local path reports it
    };
    let stream = connect(&path)?;
    let mut request = json!({
        "id": 1,
        "op": "evaluate",
        "mode": ask.mode.name(),
        "workspace": absolute(ask.workspace),
        "input": input,
        "context": context(),
    });
    if let Mode::Check { event, tool } = &ask.mode {
        request["event"] = json!(event);
        request["tool"] = json!(tool);
    }
    if let Some(deadline) = ask.deadline {
        request["deadline_ms"] = json!(u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX));
    }
    let mut line = request.to_string();
    line.push('\n');
    (&stream).write_all(line.as_bytes()).ok()?;
    let mut reader = BufReader::new(&stream);
    stream.set_read_timeout(Some(ACK_TIMEOUT)).ok()?;
    let ack = read_line(&mut reader).ok()??;
    if ack.get("ack") != Some(&json!(true)) {
        return None;
    }
    // Without a deadline of the caller's own (`check`), the server's chain
    // deadline bounds the call; it may be set as high as MAX_TIMEOUT_MS.
    let wait = ask
        .deadline
        .unwrap_or(Duration::from_millis(toolgate::config::MAX_TIMEOUT_MS))
        .saturating_add(Duration::from_secs(1));
    stream.set_read_timeout(Some(wait)).ok()?;
    let answer = match read_line(&mut reader) {
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
    let warning = answer["warning"].as_str().map(str::to_owned);
    let result = match answer["error"].as_str() {
        Some(e) => Err(e.to_owned()),
        None => {
            let code = answer["exit"]
                .as_u64()
                .and_then(|c| u8::try_from(c).ok())
                .unwrap_or(super::EXIT_DENIED);
            let stdout = Some(answer["stdout"].clone()).filter(|v| !v.is_null());
            Ok((stdout, code))
        }
    };
    Some(Reply { result, warning })
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

/// Reads one JSON line; `None` at end of stream.
fn read_line(reader: &mut impl BufRead) -> std::io::Result<Option<Value>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(serde_json::from_str(&line).ok())
}

/// The process at the other end of `stream` is this user.
pub(crate) fn same_user(stream: &impl std::os::fd::AsFd) -> Result<(), String> {
    let creds = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
        .map_err(|e| format!("its credentials cannot be read: {e}"))?;
    let me = nix::unistd::geteuid().as_raw();
    if creds.uid() == me {
        Ok(())
    } else {
        Err(format!("it runs as uid {}, not as uid {me}", creds.uid()))
    }
}
