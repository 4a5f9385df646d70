//! `toolgate serve`: keep hooks loaded and answer chain evaluations over a
//! Unix socket, so a per-call agent process only forwards its input.
//!
//! # Why a server, and why this shape
//!
//! Claude Code and Codex start a fresh `toolgate` for every tool call; each
//! then parses its configs and loads its components. A long-lived process
//! per user keeps compiled components, instance pools and parsed configs
//! warm (OPA's server mode, and the community daemons for Claude Code hooks,
//! are the same idea). The per-call process stays as the agent's hook and
//! falls back to evaluating itself when no server answers (`client.rs`).
//!
//! # Protocol
//!
//! One JSON object per line each way, over `$XDG_RUNTIME_DIR/toolgate/serve.sock`
//! (else `/tmp/toolgate-<uid>/serve.sock`; `TOOLGATE_SOCKET` or `--socket`
//! overrides); the messages are `toolgate::serve`'s types, shared with the
//! client. The directory is created 0700 and must be the user's own; a
//! connecting process must be the same user (`SO_PEERCRED`), else it gets an
//! error line and the connection is closed. A request of another protocol
//! version, or in a mode this build does not answer, is refused with an
//! error before it is acknowledged (the client then evaluates it itself); it
//! is never answered in another agent's format.
//!
//! Requests on one connection are evaluated concurrently and answered as
//! each finishes (match them by `id`). Each has a deadline (`deadline_ms`,
//! else the chain's own). A line longer than [`MAX_LINE`] is answered with
//! an error and the connection closed: it is never buffered without bound.
//!
//! # One request, near its floor
//!
//! A warm request is one read, the reload check's `stat`s, the chain, and
//! one write. The evaluation is polled once on the connection's own task:
//! a chain of in-process or wasm hooks that is already loaded answers
//! within that poll, and the ack and the answer go out together in one
//! write, ack first, so every client reads the two lines it always read
//! and the protocol is unchanged. A request that has to wait (a load, a
//! subprocess hook, a guest that yields) is acknowledged at once and
//! finishes in a task of its own, as before: the ack is what tells the
//! client, within its `ACK_TIMEOUT`, that the server owns the call and a
//! silence from here on blocks it rather than sending it to the local
//! fallback. Neither a task hand-off nor a second write is paid by the
//! requests that do not wait.
//!
//! # One loaded config per workspace, reloaded when its files change
//!
//! The server's configuration is its own: the global config dir, trust
//! store, `PATH` and decision log come from the environment it was started
//! in, never from a request. A request names only the workspace and the
//! call. Before, each request carried the caller's locations and the server
//! loaded them: a confined workspace hook reached the socket, named a
//! folder in its scratch space as the global config, and the server ran
//! that config's command hook unconfined. The client still sends its own
//! locations, but only so that the server can refuse a caller started with
//! another configuration (before acknowledging: that caller evaluates its
//! call itself, in its own process, exactly as when no server runs).
//!
//! A config is loaded per workspace root (with the server's own global
//! config dir, trust store and `PATH`). Before each evaluation the server compares the
//! files that config came from (both hooks.json files, the trust record,
//! each component) with what it loaded, by device, inode, size, mtime and
//! ctime (ctime cannot be set by a user, so a rewrite that restores the
//! mtime is still seen), and reloads when any differ. What it compares
//! against is the identity each file's bytes were read under
//! ([`Config::sources`]: taken from the open descriptor before reading and
//! checked after), not a `stat` taken once loading is done: a component
//! replaced while it compiled would otherwise be stamped with the new
//! file's identity and the old guard would answer until the next edit.
//! A config that is not a function of those files ([`Config::settled`]: a
//! workspace hook was refused because its private copy could not be made on
//! a full disk or a read-only store, its files could not be read for want
//! of descriptors, or they differ from what was trusted) is loaded again at
//! the next call: no stamp would tell that the disk was freed, or the
//! hook's file restored.
//!
//! The check stays a `stat` per file per request, not an inotify watch.
//! A watch would trade the `stat`s (about a microsecond each, a few per
//! request) for a thread or a drained descriptor, and for cases it gets
//! wrong or late: events are queued, not synchronous with the writer's
//! return, so "the next request after an edit sees it" would need a drain
//! per request anyway; a watch follows an inode, not a path, so a rename
//! over the file or a swapped parent directory needs watches on every
//! ancestor; and an overflowed queue silently drops events. A check that
//! skips itself when the last one was recent would let the next request
//! after an edit miss it. The `stat`s are what is left of the reload
//! check on the hot path, and they are cheap next to the rest. A reload that fails keeps the last good
//! config, and every answer carries the error as a `warning` (and `status`
//! shows it) until the files are fixed. Workspace command files are checked
//! by the trust gate itself before every spawn. The trust store's directory
//! is checked on every request as the one-shot path checks it (owner, mode,
//! not a symlink, its parent): its mode is no file's content, and a store
//! others can write must stop trusting at the next call, not at the next
//! edit. A config whose store is now refused is not kept as the last good
//! one.
//!
//! # Bounded for weeks
//!
//! At most `--max-workspaces` configs stay loaded (default
//! [`DEFAULT_MAX_WORKSPACES`]); a new workspace past that drops the least
//! recently used, which loads again on its next request. A load runs in a
//! task of its own that holds its workspace's slot: requests for that
//! workspace wait for the one load instead of starting their own, and a
//! call whose deadline passes first is blocked (an error: the caller fails
//! closed, as for a chain past its deadline) while the load goes on and
//! fills the slot, so the next call is answered instead of timing out on
//! the same compile again. `toolgate serve status` reports the counters
//! ([`stats`]); with `--metrics`, Prometheus series of each evaluation's
//! outcome and of these events are served too ([`metrics`]).
//!
//! # When accept fails
//!
//! Out of descriptors (EMFILE), the queued connection stays queued and the
//! listener is ready again at once; retrying at once would spin a core. The
//! server pauses instead (10 ms doubling to 1 s, from the start again after
//! an accept succeeds) and says so once per episode; see `Backoff`.

use serde_json::Value;
use std::collections::HashMap;
use std::ffi::OsString;
use std::future::Future;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use toolgate::config::FileIdentity;
use toolgate::serve::{
    Answer, Body, Context, Evaluate, Mode, Op, ParticipantStatus, Status, WorkspaceStatus,
};
use toolgate::trust::TrustStore;
use toolgate::{Config, HookRunner, Source};

mod backoff;
mod peers;
mod stats;
use backoff::Backoff;
use stats::Stats;
pub(crate) mod http;
pub(crate) mod metrics;
use metrics::{Metrics, count};

/// The longest request line: the 64 MiB an agent may write on stdin, as a
/// JSON string, plus the envelope.
pub(crate) const MAX_LINE: usize = 2 * super::MAX_STDIN as usize + 64 * 1024;

/// Keep hooks loaded and answer evaluations over a Unix socket.
///
/// `toolgate check`, `claude-code` and `codex` use a running server
/// automatically and evaluate themselves when none answers; the decision is
/// the same either way. Stop it with Ctrl-C or SIGTERM.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate serve                      # in the foreground, for this user\n  \
    toolgate serve --socket /run/user/1000/tg.sock\n  \
    toolgate serve --http 127.0.0.1:8787   # and Claude Code's http hooks\n\n\
    As a systemd user unit (~/.config/systemd/user/toolgate.service):\n  \
    [Service]\n  \
    ExecStart=%h/.cargo/bin/toolgate serve\n  \
    [Install]\n  \
    WantedBy=default.target\n\
    then: systemctl --user enable --now toolgate\n\n\
    TOOLGATE_SERVER=off makes the other commands ignore a running server.")]
pub(crate) struct Args {
    /// The socket to listen on (or to ask, for `status`) [default:
    /// $TOOLGATE_SOCKET, else $XDG_RUNTIME_DIR/toolgate/serve.sock, else
    /// /tmp/toolgate-<uid>/serve.sock].
    #[arg(long, value_name = "PATH", global = true)]
    socket: Option<PathBuf>,
    /// Also answer Claude Code's http hooks (POST /claude-code) on this
    /// loopback address (an IP literal: 127.0.0.1:PORT or [::1]:PORT; port
    /// 0 picks one). Each request must carry the secret kept in
    /// $XDG_STATE_HOME/toolgate/http-token: see `toolgate install claude-code --http`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// Serve Prometheus metrics (GET /metrics) on this loopback address (an
    /// IP literal: 127.0.0.1:PORT or [::1]:PORT). No secret is asked: the
    /// series carry no call content, but other users on this machine can
    /// read them; `toolgate serve metrics` reads them over the socket instead.
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// The most workspaces kept loaded; past it the least recently used is
    /// dropped, and loaded again on its next request.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_WORKSPACES,
          value_parser = clap::value_parser!(u16).range(1..))]
    max_workspaces: u16,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// A running server's counters: requests, errors, refusals, loads,
    /// evictions, latency per mode, loaded workspaces, uptime.
    Status {
        /// The status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// A running server's Prometheus metrics (text exposition), read over
    /// the socket: the server must have been started with --metrics.
    Metrics,
}

/// How many workspaces a server keeps loaded unless told otherwise: far
/// more than one user has open, few enough that compiled components of
/// forgotten checkouts do not pile up over weeks.
const DEFAULT_MAX_WORKSPACES: u16 = 64;

/// What a config was loaded for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    workspace: PathBuf,
    global: Option<PathBuf>,
    trust: Option<PathBuf>,
    path: Option<OsString>,
}

/// A file a loaded config depends on, as it was read.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    path: PathBuf,
    seen: Option<FileIdentity>,
}

impl Stamp {
    /// What `path` holds now: for a config that did not load, whose files
    /// were not all read (taken before loading, so a change made meanwhile
    /// is seen).
    fn of(path: PathBuf) -> Stamp {
        let seen = FileIdentity::of_path(&path);
        Stamp { path, seen }
    }

    /// Whether `path` still holds what was read.
    fn holds(&self) -> bool {
        FileIdentity::of_path(&self.path) == self.seen
    }
}

/// One workspace's place in the server: its loaded chain, if any.
///
/// The chain sits behind an async lock that a load holds from start to
/// finish, in a task of its own: requests arriving meanwhile wait for that
/// one load instead of starting their own (N compiles of one component at
/// once would each slow the others), and a caller whose deadline passes
/// stops waiting while the load goes on and fills the slot for the next.
struct Slot {
    loaded: Arc<tokio::sync::Mutex<Option<Loaded>>>,
    /// When it was last asked for ([`Server::tick`]), for eviction.
    used: AtomicU64,
}

/// One workspace's loaded chain.
struct Loaded {
    runner: HookRunner,
    stamps: Vec<Stamp>,
    hooks: usize,
    loaded_at: SystemTime,
    /// The last reload's failure, while the files stay broken.
    error: Option<String>,
    /// Whether it is a function of its stamps ([`Config::settled`]); one
    /// that is not is loaded again at the next call.
    settled: bool,
    /// What the trust store's check said when this was loaded
    /// ([`store_verdict`]).
    store: Option<Result<(), String>>,
}

pub(crate) struct Server {
    loaded: Mutex<HashMap<Key, Arc<Slot>>>,
    /// The most entries in `loaded`.
    max_workspaces: usize,
    /// Counts requests, to order slots by last use.
    tick: AtomicU64,
    stats: Stats,
    started: SystemTime,
    /// The Prometheus series, with `--metrics` ([`metrics`]).
    metrics: Option<Metrics>,
    /// What decides what runs and where the server writes: its global
    /// config, trust store, `PATH` and decision log, read from its own
    /// start-up environment. Nothing a request says changes them.
    own: Context,
}

impl Server {
    fn new(max_workspaces: usize, metrics: Option<Metrics>) -> Server {
        Server {
            loaded: Mutex::new(HashMap::new()),
            max_workspaces: max_workspaces.max(1),
            tick: AtomicU64::new(0),
            stats: Stats::default(),
            started: SystemTime::now(),
            metrics,
            own: super::client::context(),
        }
    }

    /// The server's own configuration (see [`Server::refusal`]).
    pub(crate) fn own_context(&self) -> &Context {
        &self.own
    }

    /// Why a request carrying `context` is refused before it is taken:
    /// the caller was started with another global config or decision log
    /// than this server. A request never chooses what the server loads (a confined
    /// hook that reached the socket named its own scratch folder as the
    /// global config, and the server ran that config's hooks unconfined);
    /// a caller whose configuration differs evaluates its call itself, in
    /// its own process, or runs a server of its own.
    pub(crate) fn refusal(&self, context: &Context) -> Option<String> {
        let own = &self.own;
        // The global config and the decision log are the operator's
        // deliberate choices (which policy answers, where the evidence
        // goes): a caller that named others is not answered with the
        // server's. The trust store and `PATH` are the server's own too,
        // but a caller's may differ for no reason of policy (an agent adds
        // to `PATH`; a workspace trusted in another store is, in the
        // server's, untrusted and blocked): the server answers with its
        // own.
        let differs = [
            ("global config directory", context.global != own.global),
            ("decision log", context.decision_log != own.decision_log),
        ];
        let names: Vec<&str> = differs
            .iter()
            .filter_map(|(name, differs)| differs.then_some(*name))
            .collect();
        (!names.is_empty()).then(|| {
            format!(
                "this server answers only with its own configuration, and this caller's {} \
                 differs from the server's (a caller with another configuration needs a \
                 server of its own: TOOLGATE_SOCKET)",
                names.join(", ")
            )
        })
    }

    /// Its series, when it counts them.
    pub(crate) fn metrics(&self) -> Option<&Metrics> {
        self.metrics.as_ref()
    }

    /// `key`'s slot, made when new; making one past the bound evicts the
    /// least recently used (preferring one that is not loading: a load in
    /// flight is some caller's wait).
    fn slot(&self, key: &Key) -> Result<Arc<Slot>, String> {
        let now = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut map = self
            .loaded
            .lock()
            .map_err(|_| "the server's state is poisoned".to_owned())?;
        if let Some(slot) = map.get(key) {
            slot.used.store(now, Ordering::Relaxed);
            return Ok(slot.clone());
        }
        while map.len() >= self.max_workspaces {
            let idle = |slot: &Slot| slot.loaded.try_lock().is_ok();
            let oldest = map
                .iter()
                .min_by_key(|(_, slot)| (!idle(slot), slot.used.load(Ordering::Relaxed)))
                .map(|(key, _)| key.clone());
            let Some(oldest) = oldest else { break };
            map.remove(&oldest);
            Stats::bump(&self.stats.evictions);
        }
        let slot = Arc::new(Slot {
            loaded: Arc::default(),
            used: AtomicU64::new(now),
        });
        map.insert(key.clone(), slot.clone());
        Ok(slot)
    }
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    // The flags first (a non-loopback address is refused whatever the
    // environment), then where the socket is, and the secret only when the
    // server is really starting.
    let http = args.http.as_deref().map(http::parse_addr).transpose()?;
    let metrics_addr = args
        .metrics
        .as_deref()
        .map(|given| http::parse_loopback("--metrics", given))
        .transpose()?;
    let socket = args
        .socket
        .or_else(super::env::socket_path)
        .ok_or_else(|| anyhow::anyhow!("no place for the socket: set XDG_RUNTIME_DIR"))?;
    match args.command {
        Some(Command::Status { json }) => return show_status(&socket, json),
        Some(Command::Metrics) => return show_metrics(&socket),
        None => {}
    }
    let http = match http {
        Some(addr) => {
            let path = http::token_path()
                .ok_or_else(|| anyhow::anyhow!("no place for the HTTP secret: set HOME"))?;
            Some((addr, http::Token::load_or_create(&path)?))
        }
        None => None,
    };
    prepare(&socket)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = UnixListener::bind(&socket)
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", socket.display()))?;
        eprintln!(
            "toolgate serve: listening on {} (pid {})",
            socket.display(),
            std::process::id()
        );
        let server = Arc::new(Server::new(
            usize::from(args.max_workspaces),
            metrics_addr.map(|_| Metrics::new()),
        ));
        if let Some((addr, token)) = http {
            http::listen(server.clone(), addr, token).await?;
        }
        if let Some(addr) = metrics_addr {
            metrics::listen(server.clone(), addr).await?;
        }
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let mut backoff = Backoff::default();
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                _ = tokio::signal::ctrl_c() => break,
                _ = term.recv() => break,
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
                        _ = tokio::signal::ctrl_c() => break,
                        _ = term.recv() => break,
                    }
                }
            }
        }
        let _ = std::fs::remove_file(&socket);
        eprintln!("toolgate serve: stopped");
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(ExitCode::SUCCESS)
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
    if let Err(why) = super::client::same_user(&read.as_ref()) {
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
                let mut answering =
                    Box::pin(async move { evaluate(&task_server, evaluation).await });
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
            Op::Metrics => {
                let body = match server.metrics() {
                    Some(metrics) => Body::Metrics {
                        metrics: metrics.text(),
                    },
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
/// let through. The process is the one that connected, held by a pidfd
/// (`SO_PEERPIDFD`, Linux 6.5; `SO_PEERCRED`'s pid before), and checked to
/// be alive after its status was read, so a recycled pid is not judged in
/// its place.
fn unconfined_peer(stream: &impl std::os::fd::AsFd) -> Result<(), String> {
    use nix::sys::socket::{getsockopt, sockopt};
    let pidfd = getsockopt(stream, sockopt::PeerPidfd).ok();
    let pid_of = |fd: &std::os::fd::OwnedFd| -> Option<i64> {
        use std::os::fd::AsRawFd;
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).ok()?;
        info.lines()
            .find_map(|line| line.strip_prefix("Pid:"))
            .and_then(|v| v.trim().parse().ok())
    };
    let pid = match &pidfd {
        Some(fd) => pid_of(fd),
        None => getsockopt(stream, sockopt::PeerCredentials)
            .ok()
            .map(|c| i64::from(c.pid())),
    }
    .filter(|pid| *pid > 0)
    .ok_or("cannot be identified (it may have exited)")?;
    let peer = Restrictions::read(Path::new(&format!("/proc/{pid}/status")))?;
    if let Some(fd) = &pidfd
        && pid_of(fd) != Some(pid)
    {
        return Err("exited while it was being checked".to_owned());
    }
    let own = Restrictions::read(Path::new("/proc/self/status"))?;
    if peer.no_new_privs > own.no_new_privs || peer.seccomp_filters > own.seccomp_filters {
        return Err(format!(
            "is confined (no_new_privs {}, {} seccomp filters; this server: {}, {}): a confined \
             hook never reaches the server",
            peer.no_new_privs, peer.seccomp_filters, own.no_new_privs, own.seccomp_filters
        ));
    }
    Ok(())
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

/// Answers one evaluation as the command would (the socket's and any other
/// listener's entry point).
pub(crate) async fn evaluate(server: &Arc<Server>, evaluation: Evaluate) -> Body {
    let started = Instant::now();
    let mode = evaluation.mode;
    let body = evaluate_timed(server, evaluation, started).await;
    let stats = &server.stats;
    Stats::bump(&stats.requests);
    if matches!(body, Body::Error { .. }) {
        Stats::bump(&stats.errors);
    }
    let took = started.elapsed();
    stats.took(mode, took);
    count(server.metrics(), |m| {
        m.evaluation(mode.name(), took, matches!(body, Body::Error { .. }));
    });
    body
}

async fn evaluate_timed(server: &Arc<Server>, evaluation: Evaluate, started: Instant) -> Body {
    let Evaluate {
        mode,
        workspace,
        input,
        event,
        tool,
        deadline_ms,
        // Never what the server loads with: a caller whose context differs
        // was refused before this (`Server::refusal`), and the server's
        // own is used whatever the request says.
        context: _,
    } = evaluation;
    let context = server.own.clone();
    // The server logs the calls it answers; the caller does not.
    let log = context
        .decision_log
        .map(|path| super::decision_log::Logging::new(path, mode.name(), true, &workspace));
    let key = Key {
        workspace,
        global: context.global,
        trust: context.trust,
        path: context.path.map(OsString::from),
    };
    let deadline = deadline_ms.map(|d| started + Duration::from_millis(d));
    let (runner, warning) = match runner_for(server, key, deadline).await {
        Ok(found) => {
            if found.1.is_some() {
                count(server.metrics(), Metrics::last_good_config);
            }
            found
        }
        Err(error) => {
            if let Some(log) = &log {
                super::decision_log::warn(log.error(None, &error, started.elapsed()));
            }
            return Body::error(error);
        }
    };
    let log = log.as_ref();
    let input = input.as_bytes();
    let answered = match mode {
        Mode::Check => match toolgate::wire::read_request(input, event.as_deref(), tool.as_deref())
        {
            Ok(request) => {
                let (stdout, exit) =
                    super::check::answer(&runner, &request, log, server.metrics()).await;
                Ok((Some(stdout), exit))
            }
            Err(e) => Err(format!(
                "the request on stdin: {}",
                toolgate::text::error_chain(&e)
            )),
        },
        Mode::Agent(dialect) => match toolgate::agent::read_agent_input(input, dialect) {
            Ok(call) => {
                let budget = deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(toolgate::runner::DEFAULT_CHAIN_TIMEOUT);
                Ok((
                    super::agent::answer_call(
                        &runner,
                        call,
                        dialect,
                        budget,
                        log,
                        server.metrics(),
                    )
                    .await,
                    0,
                ))
            }
            Err(e) => Err(toolgate::text::error_chain(&e)),
        },
    };
    if let (Err(error), Some(log)) = (&answered, log) {
        super::decision_log::warn(log.error(None, error, started.elapsed()));
    }
    match answered {
        Ok((stdout, exit)) => Body::Evaluated {
            exit,
            stdout,
            warning,
        },
        Err(error) => Body::Error { error, warning },
    }
}

/// The chain for `key`, loaded or reloaded as its files say; with the last
/// reload's error when it failed and an older config answers instead.
///
/// A load runs in a task of its own that holds the slot until it is done:
/// past the caller's `deadline` the caller is answered with an error (the
/// call is blocked, as a chain past its deadline blocks it) but the load
/// goes on and fills the slot, so the next call answers at once instead of
/// timing out on the same compile again. Before, the load was awaited by
/// the request itself and every request arriving meanwhile started a load
/// of its own.
async fn runner_for(
    server: &Arc<Server>,
    key: Key,
    deadline: Option<Instant>,
) -> Result<(HookRunner, Option<String>), String> {
    let slot = server.slot(&key)?;
    let still_loading = |server: &Server, key: &Key| {
        Stats::bump(&server.stats.load_timeouts);
        count(server.metrics(), Metrics::load_timeout);
        format!(
            "the hooks of {} are still loading (a first compile can take seconds) and the \
             call's deadline has passed, so it is blocked; the load goes on, and the next \
             call uses it",
            key.workspace.display()
        )
    };
    let mut guard = match within(deadline, slot.loaded.clone().lock_owned()).await {
        Some(guard) => guard,
        None => return Err(still_loading(server, &key)),
    };
    let store = store_verdict(&key);
    let fresh = match &*guard {
        Some(loaded)
            if loaded.settled
                && loaded.store == store
                && loaded.stamps.iter().all(Stamp::holds) =>
        {
            return Ok((loaded.runner.clone(), loaded.error.clone()));
        }
        loaded => loaded.is_none(),
    };
    let task_server = server.clone();
    let task_key = key.clone();
    let load = tokio::spawn(async move {
        let server = task_server;
        Stats::bump(&server.stats.loads);
        if !fresh {
            Stats::bump(&server.stats.reloads);
        }
        // Off the async workers: a first compile can take seconds.
        let load_key = task_key.clone();
        let loaded = tokio::task::spawn_blocking(move || load(&load_key))
            .await
            .map_err(|e| format!("loading panicked: {e}"))?;
        count(server.metrics(), |m| m.load(!fresh, loaded.is_ok()));
        match (loaded, guard.as_mut()) {
            (Ok(mut new), _) => {
                new.store = store;
                let runner = new.runner.clone();
                *guard = Some(new);
                Ok((runner, None))
            }
            // The last good config answers only under the trust it was
            // loaded with: once the store is refused, its trusted hooks are
            // not.
            (Err((error, stamps)), Some(old)) if !fresh && old.store == store => {
                let warning = format!(
                    "the config no longer loads, so the last good one (loaded {}) still answers: {error}",
                    ago(old.loaded_at)
                );
                old.error = Some(warning.clone());
                old.stamps = stamps;
                Ok((old.runner.clone(), Some(warning)))
            }
            (Err((error, _)), _) => Err(error),
        }
    });
    match within(deadline, load).await {
        Some(Ok(answer)) => answer,
        Some(Err(e)) => Err(format!("loading failed: {e}")),
        None => Err(still_loading(server, &key)),
    }
}

/// `future`'s output, or `None` once `deadline` passes first.
async fn within<F: std::future::Future>(deadline: Option<Instant>, future: F) -> Option<F::Output> {
    match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline.into(), future).await.ok(),
        None => Some(future.await),
    }
}

fn ago(at: SystemTime) -> String {
    format!("{} s ago", seconds_since(at))
}

/// The workspace root as the loader judges it (canonical, else as given).
fn root_of(key: &Key) -> PathBuf {
    key.workspace
        .canonicalize()
        .unwrap_or_else(|_| key.workspace.clone())
}

/// What the trust store's own check says now (`None`: no store given). The
/// one-shot path runs it on every call, as part of reading the record; a
/// chmod of the store changes no file a [`Stamp`] covers, so the server
/// runs it on every request too (a few `stat`s) and reloads when the answer
/// changed: a store that became readable or writable by others then trusts
/// nothing here either.
///
/// The answer is kept as its words: it is compared between requests (a
/// different refusal is a change too), never matched on.
fn store_verdict(key: &Key) -> Option<Result<(), String>> {
    let store = TrustStore::new(key.trust.as_ref()?);
    Some(
        store
            .check_dir(&root_of(key))
            .map_err(|e| toolgate::text::error_chain(&e)),
    )
}

/// Loads the chain for `key`, and the stamps of every file it came from.
fn load(key: &Key) -> Result<Loaded, (String, Vec<Stamp>)> {
    // The managed layer is the server's own to resolve (as root only may
    // move it), never the client's to name.
    let managed = super::env::managed_dir();
    let mut loader = Config::loader()
        .managed_dir(&managed)
        .workspace(&key.workspace)
        .wasm(super::env::wasm(false));
    if let Some(global) = &key.global {
        loader = loader.global_dir(global);
    }
    let store = key.trust.as_ref().map(TrustStore::new);
    if let Some(store) = &store {
        loader = loader.trust(store.clone());
    }
    if let Some(path) = &key.path {
        loader = loader.search_path(path);
    }
    // A config that does not load is tried again when one of its files
    // changes from what it held before the attempt.
    let mut tried: Vec<Stamp> = vec![Stamp::of(managed.join("hooks.json"))];
    if let Some(global) = &key.global {
        tried.push(Stamp::of(global.join("hooks.json")));
    }
    tried.push(Stamp::of(
        key.workspace.join(toolgate::config::WORKSPACE_FILE),
    ));
    if let Some(store) = &store {
        tried.push(Stamp::of(store.record_path(&root_of(key))));
    }
    let config = match loader.load() {
        Ok(config) => config,
        Err(e) => return Err((e.to_string(), tried)),
    };
    // One that loads is stamped with the identities its bytes were read
    // under, never with a `stat` taken after: a file replaced while it
    // loaded (a component compiles for seconds) then differs at the next
    // request, and is loaded again.
    let stamps = config
        .sources()
        .into_iter()
        .map(|source| Stamp {
            path: source.path,
            seen: source.identity,
        })
        .collect();
    let hooks = config.hooks().len();
    let settled = config.settled();
    Ok(Loaded {
        runner: HookRunner::builder().config(config).build(),
        stamps,
        hooks,
        loaded_at: SystemTime::now(),
        error: None,
        settled,
        store: None,
    })
}

fn status(server: &Server) -> Status {
    let mut loading = 0;
    let workspaces = server
        .loaded
        .lock()
        .map(|map| {
            map.iter()
                .filter_map(|(key, slot)| {
                    // Held by a load in flight: counted, not waited for.
                    let Ok(guard) = slot.loaded.try_lock() else {
                        loading += 1;
                        return None;
                    };
                    let loaded = guard.as_ref()?;
                    Some(WorkspaceStatus {
                        workspace: key.workspace.clone(),
                        global: key.global.clone(),
                        hooks: loaded.hooks,
                        loaded_s_ago: seconds_since(loaded.loaded_at),
                        error: loaded.error.clone(),
                        participants: loaded
                            .runner
                            .participants()
                            .iter()
                            .filter(|p| p.source != Source::Host)
                            .map(|p| ParticipantStatus {
                                name: p.name.clone(),
                                binding: p.binding.to_string(),
                                source: p.source.to_string(),
                            })
                            .collect(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let stats = &server.stats;
    Status {
        pid: std::process::id(),
        up_s: seconds_since(server.started),
        requests: Stats::get(&stats.requests),
        workspaces,
        errors: Stats::get(&stats.errors),
        refused: Stats::get(&stats.refused),
        loads: Stats::get(&stats.loads),
        reloads: Stats::get(&stats.reloads),
        evictions: Stats::get(&stats.evictions),
        load_timeouts: Stats::get(&stats.load_timeouts),
        loading,
        max_workspaces: server.max_workspaces,
        latency: stats.latency(),
    }
}

/// `toolgate serve status`: the running server's counters, as text or JSON.
fn show_status(socket: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let Some(status) = super::client::query_status_at(socket) else {
        anyhow::bail!("no toolgate server answers at {}", socket.display());
    };
    if json {
        outln!("{}", serde_json::to_string_pretty(&status)?);
        return Ok(ExitCode::SUCCESS);
    }
    let up = Duration::from_secs(status.up_s);
    outln!(
        "toolgate serve: running at {} (pid {}, up {})",
        socket.display(),
        status.pid,
        humantime_short(up)
    );
    outln!(
        "requests: {} ({} answered with an error, {} refused before acknowledgement and \
         evaluated by their callers)",
        status.requests,
        status.errors,
        status.refused
    );
    outln!(
        "workspaces: {} loaded, {} loading, at most {} ({} evicted); {} loads, {} of them \
         reloads after an edit; {} calls outlived a load",
        status.workspaces.len(),
        status.loading,
        status.max_workspaces,
        status.evictions,
        status.loads,
        status.reloads,
        status.load_timeouts
    );
    for l in &status.latency {
        outln!(
            "latency, {}: p50 {} µs, p99 {} µs (last {} of {} requests, inside the server)",
            l.mode,
            l.p50_us,
            l.p99_us,
            l.window,
            l.count
        );
    }
    for w in &status.workspaces {
        outln!(
            "  {}: {} hooks, loaded {} s ago{}",
            w.workspace.display(),
            w.hooks,
            w.loaded_s_ago,
            w.error
                .as_deref()
                .map(|e| format!("; {}", toolgate::text::one_line(e)))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `toolgate serve metrics`: the running server's Prometheus text, read
/// over the socket (only this user can connect to it).
fn show_metrics(socket: &Path) -> anyhow::Result<ExitCode> {
    let text = super::client::query_metrics_at(socket).map_err(|e| anyhow::anyhow!(e))?;
    outln!("{}", text.trim_end());
    Ok(ExitCode::SUCCESS)
}

/// `3 d 4 h`, `5 h 2 min`, `12 min 3 s`, `9 s`.
fn humantime_short(d: Duration) -> String {
    let s = d.as_secs();
    let (days, hours, mins, secs) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if days > 0 {
        format!("{days} d {hours} h")
    } else if hours > 0 {
        format!("{hours} h {mins} min")
    } else if mins > 0 {
        format!("{mins} min {secs} s")
    } else {
        format!("{secs} s")
    }
}

fn seconds_since(at: SystemTime) -> u64 {
    at.elapsed().map(|d| d.as_secs()).unwrap_or(0)
}

/// A running server's status as JSON (for `toolgate hooks`); `None` when
/// none answers.
pub(crate) fn query_status() -> Option<Value> {
    serde_json::to_value(super::client::query_status()?).ok()
}
