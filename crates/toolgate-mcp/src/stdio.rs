//! The stdio transport: the proxy is the server the client spawned, and it
//! spawns the real one.
//!
//! MCP's stdio framing is one JSON-RPC message per line. Two readers run
//! side by side, one per direction, each judging its messages in the order
//! they arrived: a message is never overtaken by a later one from the same
//! side (a cancellation cannot pass the call it cancels), and a slow hook
//! holds back only its own side. Hooks answer in microseconds to
//! milliseconds, so ordering is worth more than judging calls in parallel.
//!
//! # Nothing is left behind
//!
//! The server runs in a process group of its own (servers started through
//! `npx` or a shell are trees), and the whole group is killed when the
//! proxy ends, whichever side ended first:
//!
//! - the client closes stdin: the server's stdin is closed, and it has
//!   [`GRACE`] to exit before its group is killed;
//! - the server exits or closes stdout: every request in flight is answered
//!   with an error, then its group is killed.
//!
//! A line longer than the message cap is not read into memory: it is
//! skipped to its end and treated as unreadable (see `judge`).

use crate::judge::{Judge, Route};
use crate::{McpError, Proxy};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// How long a server whose client went away has to exit on its own.
pub(crate) const GRACE: Duration = Duration::from_secs(2);
/// How long the server's last output is still read once it ended.
const DRAIN: Duration = Duration::from_millis(200);

/// One read of a line-framed stream.
#[derive(Debug, PartialEq)]
pub(crate) enum Frame {
    Line,
    Oversized(usize),
    End,
}

/// Reads one line into `buf` (without its newline), never holding more
/// than `max` bytes of it. Blank lines are skipped.
pub(crate) async fn read_frame<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    max: usize,
    buf: &mut Vec<u8>,
) -> std::io::Result<Frame> {
    loop {
        buf.clear();
        let mut skipped = 0usize;
        let mut oversized = false;
        loop {
            let available = reader.fill_buf().await?;
            if available.is_empty() {
                if oversized {
                    return Ok(Frame::Oversized(skipped));
                }
                return Ok(if buf.iter().all(u8::is_ascii_whitespace) {
                    Frame::End
                } else {
                    Frame::Line
                });
            }
            let (chunk, found) = match available.iter().position(|b| *b == b'\n') {
                Some(at) => (&available[..at], Some(at + 1)),
                None => (available, None),
            };
            if oversized || buf.len() + chunk.len() > max {
                oversized = true;
                skipped += buf.len() + chunk.len();
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
            let used = found.unwrap_or(available.len());
            reader.consume(used);
            if found.is_some() {
                break;
            }
        }
        if oversized {
            return Ok(Frame::Oversized(skipped));
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        if !buf.iter().all(u8::is_ascii_whitespace) {
            return Ok(Frame::Line);
        }
    }
}

/// The server, started.
pub(crate) struct Server {
    child: Child,
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: Option<ChildStdout>,
    group: Option<Pid>,
}

impl Server {
    /// Kills the server's whole process group.
    pub(crate) fn kill(&mut self) {
        if let Some(group) = self.group {
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.child.start_kill();
    }
}

pub(crate) fn spawn(command: &[OsString]) -> Result<Server, McpError> {
    let Some((program, args)) = command.split_first() else {
        return Err(McpError::NoServerCommand);
    };
    let failed = |source| McpError::StartServer {
        program: program.to_string_lossy().into_owned(),
        source,
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // If the proxy itself is killed (SIGKILL, the OOM killer), no handler
    // runs: the kernel kills the server it started. Its own children are
    // reached by the group kill only when the proxy ends normally or by a
    // signal it handles.
    // SAFETY: the closure runs in the child between fork and exec, and
    // makes one system call (prctl), which is async-signal-safe; it
    // allocates nothing and touches no lock.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)
        });
    }
    let mut child = command.spawn().map_err(failed)?;
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => Ok(Server {
            child,
            stdin,
            stdout: Some(stdout),
            group,
        }),
        _ => Err(failed(std::io::Error::other(
            "the server's stdio was not piped",
        ))),
    }
}

/// The server started, and its output (`spawn` always pipes it; it is
/// `None` only once `list` took it).
fn spawn_piped(command: &[OsString]) -> Result<(Server, ChildStdout), McpError> {
    let mut server = spawn(command)?;
    let stdout = server.stdout.take().ok_or_else(|| McpError::StartServer {
        program: command
            .first()
            .map_or_else(String::new, |p| p.to_string_lossy().into_owned()),
        source: std::io::Error::other("the server's output was not piped"),
    })?;
    Ok((server, stdout))
}

/// Writes each queued message as a line, until the queue closes or the
/// reader goes away; then drops `out` (closing the server's stdin tells it
/// its client is gone).
fn writer<W: AsyncWrite + Unpin + Send + 'static>(
    mut out: W,
    mut queue: mpsc::Receiver<Vec<u8>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(mut line) = queue.recv().await {
            line.push(b'\n');
            if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
                break;
            }
        }
    })
}

/// Reads the client's messages and sends each where the judge says, until
/// the client closes stdin (then `to_server` drops, and the server's stdin
/// closes).
async fn client_side(
    judge: Arc<Judge>,
    max: usize,
    to_client: mpsc::Sender<Vec<u8>>,
    to_server: mpsc::Sender<Vec<u8>>,
) {
    let mut stdin = BufReader::new(crate::fdio::stdin());
    let mut buf = Vec::new();
    loop {
        let routes = match read_frame(&mut stdin, max, &mut buf).await {
            Ok(Frame::Line) => judge.on_client(&buf).await,
            Ok(Frame::Oversized(bytes)) => judge.client_oversized(bytes, max),
            Ok(Frame::End) | Err(_) => return,
        };
        if send(routes, &to_client, &to_server).await.is_err() {
            return;
        }
    }
}

/// Reads the server's messages and hands the client what the judge lets
/// through, until the server's stdout closes.
async fn server_side(
    judge: Arc<Judge>,
    max: usize,
    out: ChildStdout,
    to_client: mpsc::Sender<Vec<u8>>,
) {
    let mut out = BufReader::new(out);
    let mut buf = Vec::new();
    loop {
        let routes = match read_frame(&mut out, max, &mut buf).await {
            Ok(Frame::Line) => judge.on_server(&buf).await,
            Ok(Frame::Oversized(bytes)) => judge.server_oversized(bytes, max),
            Ok(Frame::End) | Err(_) => return,
        };
        for route in routes {
            if let Route::ToClient(line) = route
                && to_client.send(line).await.is_err()
            {
                return;
            }
        }
    }
}

/// Runs the proxy over this process's stdin and stdout until one side
/// ends. Returns the exit code to end with: the server's when it ended
/// first, 128 + the signal's number when one stopped the proxy, else 0.
pub(crate) async fn run(proxy: Proxy, command: &[OsString]) -> Result<i32, McpError> {
    let (
        Server {
            mut child,
            stdin,
            group,
            ..
        },
        stdout,
    ) = spawn_piped(command)?;
    let mut terminate = signal(SignalKind::terminate()).map_err(McpError::Signals)?;
    let mut interrupt = signal(SignalKind::interrupt()).map_err(McpError::Signals)?;
    let mut hangup = signal(SignalKind::hangup()).map_err(McpError::Signals)?;
    let max = proxy.max_message;
    let judge = Arc::new(proxy.judge());
    let (to_client, client_queue) = mpsc::channel::<Vec<u8>>(64);
    let (to_server, server_queue) = mpsc::channel::<Vec<u8>>(64);
    let client_writer = writer(crate::fdio::stdout(), client_queue);
    let server_writer = writer(stdin, server_queue);
    let from_client = client_side(Arc::clone(&judge), max, to_client.clone(), to_server);
    // The server's side runs as a task of its own, so that when the
    // client goes first the server is still read (and not handed EPIPE)
    // while it winds down.
    let mut from_server = tokio::spawn(server_side(
        Arc::clone(&judge),
        max,
        stdout,
        to_client.clone(),
    ));
    // The server's exit is watched apart from its output: a child it
    // started may hold its stdout open long after it died.
    let mut exited = tokio::spawn(async move {
        child
            .wait()
            .await
            .map_or(1, |status| status.code().unwrap_or(1))
    });
    let gone = async |why: String| {
        for route in judge.server_gone(&why) {
            if let Route::ToClient(line) = route {
                let _ = to_client.send(line).await;
            }
        }
    };
    let code = tokio::select! {
        // The client stops its server by signal (the MCP SDKs send SIGTERM
        // after closing stdin): the server's whole group goes with it.
        _ = terminate.recv() => 128 + Signal::SIGTERM as i32,
        _ = interrupt.recv() => 128 + Signal::SIGINT as i32,
        _ = hangup.recv() => 128 + Signal::SIGHUP as i32,
        status = &mut exited => {
            let code = status.unwrap_or(1);
            // What it wrote before it died is still forwarded.
            let _ = tokio::time::timeout(DRAIN, &mut from_server).await;
            gone(format!("the MCP server exited (code {code}) before answering")).await;
            code
        }
        _ = &mut from_server => {
            let code = tokio::time::timeout(DRAIN, &mut exited).await.ok().and_then(Result::ok);
            gone("the MCP server closed its output before answering".to_string()).await;
            code.unwrap_or(1)
        }
        () = from_client => {
            // The server's stdin is closed; let it finish on its own.
            let _ = tokio::time::timeout(GRACE, &mut exited).await;
            let _ = tokio::time::timeout(DRAIN, &mut from_server).await;
            0
        }
    };
    from_server.abort();
    if let Some(group) = group {
        let _ = killpg(group, Signal::SIGKILL);
    }
    exited.abort();
    drop(to_client);
    let _ = client_writer.await;
    server_writer.abort();
    Ok(code)
}

async fn send(
    routes: Vec<Route>,
    to_client: &mpsc::Sender<Vec<u8>>,
    to_server: &mpsc::Sender<Vec<u8>>,
) -> Result<(), ()> {
    for route in routes {
        let sent = match route {
            Route::ToClient(line) => to_client.send(line).await,
            Route::ToServer(line) => to_server.send(line).await,
        };
        sent.map_err(drop)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<(Frame, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut buf = Vec::new();
        let mut out = Vec::new();
        loop {
            let frame = read_frame(&mut reader, max, &mut buf).await.unwrap();
            if frame == Frame::End {
                return out;
            }
            out.push((frame, buf.clone()));
        }
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_skipped_whole_and_the_next_is_read() {
        let got = frames(b"{\"a\":1}\n0123456789abcdef\n\n{\"b\":2}\r\n{\"c\"", 10).await;
        assert_eq!(
            got,
            vec![
                (Frame::Line, b"{\"a\":1}".to_vec()),
                (Frame::Oversized(16), Vec::new()),
                (Frame::Line, b"{\"b\":2}".to_vec()),
                (Frame::Line, b"{\"c\"".to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_is_read() {
        let got = frames(b"0123456789\n", 10).await;
        assert_eq!(got, vec![(Frame::Line, b"0123456789".to_vec())]);
    }
}
