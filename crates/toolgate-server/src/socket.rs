//! The Unix socket transport: where agents' per-call processes and
//! `toolgate check` forward their calls (see the crate docs for the
//! protocol, and who may connect).

use crate::metrics::{Metrics, count};
use crate::server::{Server, evaluate, status};
use crate::stats::Stats;
use serde_json::Value;
use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use toolgate::serve::{Answer, Body, Op};
use toolgate_log::Checkpoints;
use toolgate_loopback::backoff::Backoff;

/// The longest request line: the 64 MiB an agent may write on stdin, as a
/// JSON string, plus the envelope.
pub const MAX_LINE: usize = 2 * toolgate_hook::env::MAX_STDIN as usize + 64 * 1024;

/// Serves on `socket` until SIGINT or SIGTERM: and on `http` (Claude
/// Code's http hooks, with the secret each request must carry) and
/// `metrics` (Prometheus) when given. Refuses to start beside a running
/// server, or with the socket where others could replace it.
pub fn serve(
    options: crate::Options,
    socket: &Path,
    http: Option<(SocketAddr, toolgate_loopback::Token)>,
    metrics: Option<SocketAddr>,
    checkpoints: Option<Checkpoints>,
) -> anyhow::Result<()> {
    let metrics_addr = metrics;
    prepare(socket)?;
    raise_descriptor_limit();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = UnixListener::bind(socket)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", socket.display()))?;
        eprintln!(
            "toolgate serve: listening on {} (pid {})",
            socket.display(),
            std::process::id()
        );
        let server = Arc::new(Server::new(options));
        if let Some(idle) = server.unload_idle {
            tokio::spawn(unload_idle(server.clone(), idle));
        }
        let checkpoints = checkpoints.map(Arc::new);
        if let Some(checkpoints) = &checkpoints {
            tokio::spawn(checkpoints.clone().run());
        }
        if let Some((addr, token)) = http {
            crate::http::listen(server.clone(), addr, token).await?;
        }
        if let Some(addr) = metrics_addr {
            crate::metrics::listen(server.clone(), addr).await?;
        }
        // The accept loop runs on a worker, not on this thread: a
        // connection spawned from a worker starts on that same worker
        // (its LIFO slot), while one spawned from `block_on`'s thread is
        // queued for a worker to be woken, a cross-core hand-off on every
        // call (docs/performance.md, "the socket request").
        tokio::spawn(accept_each(listener, server)).await??;
        let _ = std::fs::remove_file(socket);
        if let Some(checkpoints) = checkpoints {
            // The last records before a stop are signed too.
            let _ = tokio::task::spawn_blocking(move || checkpoints.sign()).await;
        }
        eprintln!("toolgate serve: stopped");
        Ok::<_, anyhow::Error>(())
    })
}

/// Accepts and serves connections until SIGINT or SIGTERM; a failing
/// `accept` (out of descriptors) backs off instead of spinning.
async fn accept_each(listener: UnixListener, server: Arc<Server>) -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = tokio::signal::ctrl_c() => return Ok(()),
            _ = term.recv() => return Ok(()),
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.succeeded();
                tokio::spawn(connection(server.clone(), stream));
            }
            Err(e) => {
                let pause = backoff.failed(&e);
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                    _ = term.recv() => return Ok(()),
                }
            }
        }
    }
}

/// Looks for idle workspaces four times per `idle` (at most once a
/// minute), so one is unloaded at most a quarter of `idle` late.
async fn unload_idle(server: Arc<Server>, idle: std::time::Duration) {
    let every = (idle / 4).clamp(
        std::time::Duration::from_millis(50),
        std::time::Duration::from_secs(60),
    );
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        server.unload_idle();
    }
}

/// Raises this process's descriptor limit to its hard limit (as Go's
/// runtime does for every program): a connection is a descriptor, and a
/// soft limit of 1024 would make a thousand waiting agents an accept loop
/// out of descriptors before `--max-in-flight` could answer them `busy`.
/// A limit that cannot be raised is kept.
fn raise_descriptor_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// Creates the socket's directory (0700, the user's own) and clears a stale
/// socket; refuses to start beside a running server.
fn prepare(socket: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = socket
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    }
    let meta = std::fs::symlink_metadata(dir)?;
    if meta.uid() != nix::unistd::geteuid().as_raw() || meta.file_type().is_symlink() {
        anyhow::bail!(
            "{} is not a directory of this user's own; the socket must not be where others \
             can replace it",
            dir.display()
        );
    }
    if std::fs::symlink_metadata(socket).is_ok() {
        if std::os::unix::net::UnixStream::connect(socket).is_ok() {
            anyhow::bail!("a server is already listening on {}", socket.display());
        }
        std::fs::remove_file(socket)?;
    }
    Ok(())
}

async fn connection(server: Arc<Server>, stream: UnixStream) {
    let (read, write) = stream.into_split();
    let write = Arc::new(tokio::sync::Mutex::new(write));
    let writer = write.clone();
    let send = move |id: Value, body: Body| {
        let write = writer.clone();
        async move {
            let line = Answer { id, body }.to_line();
            let _ = write.lock().await.write_all(line.as_bytes()).await;
        }
    };
    if let Err(why) = toolgate_hook::client::same_user(&read.as_ref()) {
        Stats::bump(&server.stats.refused);
        count(server.metrics(), Metrics::refused);
        let refused = format!("refused: the connecting process {why}");
        send(Value::Null, Body::error(refused)).await;
        return;
    }
    // Judged once, said per request (after its line is read, so the
    // caller, which writes its request before it reads, always gets the
    // refusal under its own id and evaluates the call itself).
    let confined = unconfined_peer(&read.as_ref()).err();
    let mut reader = BufReader::new(read);
    loop {
        let line = match read_line(&mut reader).await {
            Ok(Some(line)) => line,
            Ok(None) => return,
            Err(message) => {
                send(Value::Null, Body::error(message)).await;
                return;
            }
        };
        let request = match toolgate::serve::read_request(&line) {
            Ok(request) => request,
            Err((id, why)) => {
                Stats::bump(&server.stats.refused);
                count(server.metrics(), Metrics::refused);
                let why = toolgate::text::error_chain(&why);
                let why = toolgate::text::bound(why, toolgate::text::MAX_MESSAGE, "error");
                send(id, Body::error(why)).await;
                continue;
            }
        };
        let id = request.id;
        if let Some(why) = &confined {
            Stats::bump(&server.stats.refused);
            count(server.metrics(), Metrics::refused);
            send(
                id,
                Body::error(format!("refused: the connecting process {why}")),
            )
            .await;
            continue;
        }
        match request.op {
            Op::Evaluate(evaluation) => {
                // A caller started with another configuration: refused
                // before it is taken (it evaluates the call itself).
                if let Some(why) = server.refusal(&evaluation.context) {
                    Stats::bump(&server.stats.refused);
                    count(server.metrics(), Metrics::refused);
                    send(id, Body::error(why)).await;
                    continue;
                }
                // Past --max-in-flight: not taken, and said so before any
                // ack (the caller evaluates the call itself).
                let slot = match server.admit() {
                    Ok(slot) => slot,
                    Err(busy) => {
                        send(id, Body::Busy { busy }).await;
                        continue;
                    }
                };
                // Polled once here: a warm chain of in-process or wasm hooks
                // answers within that poll, and the ack and the answer then
                // go out in one write (the ack still first, so every client
                // reads what it always read), with no task hand-off. Any
                // other (a load, a subprocess hook, a wasm guest that
                // yields) is acknowledged at once and finishes in a task of
                // its own, so the client's ACK_TIMEOUT never runs out on a
                // slow chain and the next line on this connection is read
                // meanwhile.
                let task_server = server.clone();
                let mut answering = Box::pin(async move {
                    let body = evaluate(&task_server, evaluation).await;
                    drop(slot);
                    body
                });
                let first =
                    std::future::poll_fn(|cx| std::task::Poll::Ready(answering.as_mut().poll(cx)))
                        .await;
                match first {
                    std::task::Poll::Ready(body) => {
                        let mut out = Vec::with_capacity(512);
                        Answer {
                            id: id.clone(),
                            body: Body::ack(),
                        }
                        .write_line(&mut out);
                        Answer { id, body }.write_line(&mut out);
                        let _ = write.lock().await.write_all(&out).await;
                    }
                    std::task::Poll::Pending => {
                        send(id.clone(), Body::ack()).await;
                        let send = send.clone();
                        tokio::spawn(async move {
                            send(id, answering.await).await;
                        });
                    }
                }
            }
            Op::Status => {
                send(
                    id,
                    Body::Status {
                        status: status(&server),
                    },
                )
                .await
            }
            Op::Tally(tallied) => {
                let body = match (server.metrics(), server.refusal(&tallied.context)) {
                    (_, Some(why)) => Body::error(why),
                    (None, None) => {
                        Body::error("this server was started without --metrics".to_owned())
                    }
                    (Some(metrics), None) => {
                        metrics.tally(&tallied.tally);
                        Body::ack()
                    }
                };
                send(id, body).await
            }
            Op::Metrics => {
                let body = match server.metrics_text() {
                    Some(metrics) => Body::Metrics { metrics },
                    None => Body::error("this server was started without --metrics".to_owned()),
                };
                send(id, body).await
            }
        }
    }
}

/// What restricts a process, as its `/proc/<pid>/status` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Restrictions {
    no_new_privs: u64,
    seccomp_filters: u64,
}

impl Restrictions {
    /// Reads `NoNewPrivs` and `Seccomp_filters` from a status file; either
    /// missing is an error (a kernel that does not say cannot be judged).
    fn read(status: &Path) -> Result<Restrictions, String> {
        let text = std::fs::read_to_string(status)
            .map_err(|e| format!("its status cannot be read ({e})"))?;
        let field = |name: &str| {
            text.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .and_then(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("its status does not say `{name}`"))
        };
        Ok(Restrictions {
            no_new_privs: field("NoNewPrivs")?,
            seccomp_filters: field("Seccomp_filters")?,
        })
    }
}

/// The process at the other end of `stream` is not confined more than this
/// server: a confined hook is refused even if it got a socket (defence in
/// depth behind its seccomp filter, which refuses it `socket()`).
///
/// Every confined hook runs with `no_new_privs` and a seccomp filter of its
/// own (`binding::command::confine`), which it cannot drop, and they are
/// inherited by whatever it starts; so a peer with `no_new_privs` set where
/// the server has not, or with more seccomp filters than the server, is
/// refused. An agent run in a sandbox of its own is refused too, and its
/// calls are evaluated in its own process, as when no server runs: never
/// let through. The process is the one that connected (`SO_PEERCRED`'s
/// pid), held by a pidfd (`SO_PEERPIDFD`, Linux 6.5) and checked to be
/// alive after its status was read, so a recycled pid is not judged in its
/// place. Three system calls and one procfs read a connection.
fn unconfined_peer(stream: &impl std::os::fd::AsFd) -> Result<(), String> {
    use nix::sys::socket::{getsockopt, sockopt};
    // Both name the process that connected (the socket's peer pid); the
    // pid is 0 once it was reaped.
    let pid = getsockopt(stream, sockopt::PeerCredentials)
        .ok()
        .map(|c| c.pid())
        .filter(|pid| *pid > 0)
        .ok_or("cannot be identified (it may have exited)")?;
    let pidfd = getsockopt(stream, sockopt::PeerPidfd).ok();
    let peer = Restrictions::read(Path::new(&format!("/proc/{pid}/status")))?;
    if let Some(pidfd) = &pidfd
        && !alive(pidfd)
    {
        return Err("exited while it was being checked".to_owned());
    }
    let own = own_restrictions()?;
    if peer.no_new_privs > own.no_new_privs || peer.seccomp_filters > own.seccomp_filters {
        return Err(format!(
            "is confined (no_new_privs {}, {} seccomp filters; this server: {}, {}): a confined \
             hook never reaches the server",
            peer.no_new_privs, peer.seccomp_filters, own.no_new_privs, own.seccomp_filters
        ));
    }
    Ok(())
}

/// This server's own restrictions, read once: they never lessen (neither
/// `no_new_privs` nor a seccomp filter can be dropped), so a value read at
/// the first connection can only make a later judgement stricter, never
/// looser. Saves a render of `/proc/self/status` per connection. Only a
/// value is kept: a read that failed (out of descriptors) refuses that
/// connection and is tried again at the next, or the server would refuse
/// every connection until it restarts.
fn own_restrictions() -> Result<Restrictions, String> {
    static OWN: std::sync::OnceLock<Restrictions> = std::sync::OnceLock::new();
    if let Some(own) = OWN.get() {
        return Ok(*own);
    }
    let read = Restrictions::read(Path::new("/proc/self/status"))?;
    Ok(*OWN.get_or_init(|| read))
}

/// Whether the process `pidfd` holds has not been reaped: signal 0 through
/// the pidfd (`pidfd_send_signal`, Linux 5.1) checks existence and sends
/// nothing. While it exists its pid is not recycled, so the status read
/// under that pid was its own.
#[allow(unsafe_code)]
fn alive(pidfd: &std::os::fd::OwnedFd) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: plain integers and a null siginfo, which the call allows;
    // the descriptor is open (borrowed for the call).
    let sent = unsafe {
        nix::libc::syscall(
            nix::libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            0,
            std::ptr::null::<nix::libc::siginfo_t>(),
            0u32,
        )
    };
    sent == 0
}

/// One line, without its newline; an error past [`MAX_LINE`] bytes.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
) -> Result<Option<Vec<u8>>, String> {
    let mut line = Vec::new();
    loop {
        let buf = reader.fill_buf().await.map_err(|e| e.to_string())?;
        if buf.is_empty() {
            return Ok((!line.is_empty()).then_some(line));
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if line.len() + chunk.len() > MAX_LINE {
            return Err(format!(
                "request line longer than {MAX_LINE} bytes; the connection is closed"
            ));
        }
        line.extend_from_slice(chunk);
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(line));
        }
    }
}
