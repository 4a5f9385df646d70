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
//! # One loaded config per workspace, reloaded when its files change
//!
//! A config is loaded per (workspace root, global config dir, trust store,
//! `PATH`): the client sends its own, so the server loads exactly what the
//! client would have. Before each evaluation the server compares the
//! files that config came from (both hooks.json files, the trust record,
//! each component) with what it loaded, by device, inode, size, mtime and
//! ctime (ctime cannot be set by a user, so a rewrite that restores the
//! mtime is still seen), and reloads when any differ. What it compares
//! against is the identity each file's bytes were read under
//! ([`Config::sources`]: taken from the open descriptor before reading and
//! checked after), not a `stat` taken once loading is done: a component
//! replaced while it compiled would otherwise be stamped with the new
//! file's identity and the old guard would answer until the next edit. Checking on request
//! rather than with an inotify watch needs no extra thread or crate, cannot
//! miss an event, and costs a few `stat`s (microseconds); the next request
//! after an edit always sees it. A reload that fails keeps the last good
//! config, and every answer carries the error as a `warning` (and `status`
//! shows it) until the files are fixed. Workspace command files are checked
//! by the trust gate itself before every spawn. The trust store's directory
//! is checked on every request as the one-shot path checks it (owner, mode,
//! not a symlink, its parent): its mode is no file's content, and a store
//! others can write must stop trusting at the next call, not at the next
//! edit. A config whose store is now refused is not kept as the last good
//! one.
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
    Answer, Body, Evaluate, Mode, Op, ParticipantStatus, Status, WorkspaceStatus,
};
use toolgate::trust::TrustStore;
use toolgate::{Config, HookRunner, Source};

mod backoff;
use backoff::Backoff;
pub(crate) mod http;

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
    /// The socket to listen on [default: $TOOLGATE_SOCKET, else
    /// $XDG_RUNTIME_DIR/toolgate/serve.sock, else /tmp/toolgate-<uid>/serve.sock].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Also answer Claude Code's http hooks (POST /claude-code) on this
    /// loopback address (an IP literal: 127.0.0.1:PORT or [::1]:PORT; port
    /// 0 picks one). Each request must carry the secret kept in
    /// $XDG_STATE_HOME/toolgate/http-token: see `toolgate install claude-code --http`.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
}

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

/// One workspace's loaded chain.
struct Loaded {
    runner: HookRunner,
    stamps: Vec<Stamp>,
    hooks: usize,
    loaded_at: SystemTime,
    /// The last reload's failure, while the files stay broken.
    error: Option<String>,
    /// What the trust store's check said when this was loaded
    /// ([`store_verdict`]).
    store: Option<Result<(), String>>,
}

struct Server {
    loaded: Mutex<HashMap<Key, Arc<Mutex<Option<Loaded>>>>>,
    requests: AtomicU64,
    started: SystemTime,
}

pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let http = match &args.http {
        Some(addr) => {
            let addr = http::parse_addr(addr)?;
            let path = http::token_path()
                .ok_or_else(|| anyhow::anyhow!("no place for the HTTP secret: set HOME"))?;
            Some((addr, http::Token::load_or_create(&path)?))
        }
        None => None,
    };
    let socket = args
        .socket
        .or_else(super::env::socket_path)
        .ok_or_else(|| anyhow::anyhow!("no place for the socket: set XDG_RUNTIME_DIR"))?;
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
        let server = Arc::new(Server {
            loaded: Mutex::new(HashMap::new()),
            requests: AtomicU64::new(0),
            started: SystemTime::now(),
        });
        if let Some((addr, token)) = http {
            http::listen(server.clone(), addr, token).await?;
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
    let send = move |id: Value, body: Body| {
        let write = write.clone();
        async move {
            let line = Answer { id, body }.to_line();
            let _ = write.lock().await.write_all(line.as_bytes()).await;
        }
    };
    if let Err(why) = super::client::same_user(&read.as_ref()) {
        let refused = format!("refused: the connecting process {why}");
        send(Value::Null, Body::error(refused)).await;
        return;
    }
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
                let why = toolgate::text::error_chain(&why);
                let why = toolgate::text::bound(why, toolgate::text::MAX_MESSAGE, "error");
                send(id, Body::error(why)).await;
                continue;
            }
        };
        let id = request.id;
        match request.op {
            Op::Evaluate(evaluation) => {
                send(id.clone(), Body::ack()).await;
                let server = server.clone();
                let send = send.clone();
                tokio::spawn(async move {
                    send(id, evaluate(&server, evaluation).await).await;
                });
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
        }
    }
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

async fn evaluate(server: &Arc<Server>, evaluation: Evaluate) -> Body {
    server.requests.fetch_add(1, Ordering::Relaxed);
    let Evaluate {
        mode,
        workspace,
        input,
        event,
        tool,
        deadline_ms,
        context,
    } = evaluation;
    let key = Key {
        workspace,
        global: context.global,
        trust: context.trust,
        path: context.path.map(OsString::from),
    };
    let started = Instant::now();
    let (runner, warning) = match runner_for(server, key).await {
        Ok(found) => found,
        Err(error) => return Body::error(error),
    };
    let deadline = deadline_ms.map(|d| Duration::from_millis(d).saturating_sub(started.elapsed()));
    let input = input.as_bytes();
    let answered = match mode {
        Mode::Check => match toolgate::wire::read_request(input, event.as_deref(), tool.as_deref())
        {
            Ok(request) => {
                let (stdout, exit) = super::check::answer(&runner, &request).await;
                Ok((Some(stdout), exit))
            }
            Err(e) => Err(format!(
                "the request on stdin: {}",
                toolgate::text::error_chain(&e)
            )),
        },
        Mode::Agent(dialect) => match toolgate::agent::read_agent_input(input, dialect) {
            Ok(call) => {
                let budget = deadline.unwrap_or(toolgate::runner::DEFAULT_CHAIN_TIMEOUT);
                Ok((
                    super::agent::answer_call(&runner, call, dialect, budget).await,
                    0,
                ))
            }
            Err(e) => Err(toolgate::text::error_chain(&e)),
        },
    };
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
async fn runner_for(
    server: &Arc<Server>,
    key: Key,
) -> Result<(HookRunner, Option<String>), String> {
    let slot = server
        .loaded
        .lock()
        .map_err(|_| "the server's state is poisoned".to_owned())?
        .entry(key.clone())
        .or_default()
        .clone();
    let store = store_verdict(&key);
    let fresh = {
        let guard = slot.lock().map_err(|_| "poisoned".to_owned())?;
        match &*guard {
            Some(loaded) if loaded.store == store && loaded.stamps.iter().all(Stamp::holds) => {
                return Ok((loaded.runner.clone(), loaded.error.clone()));
            }
            _ => guard.is_none(),
        }
    };
    // (Re)load off the async workers: a first compile can take seconds.
    let load_key = key.clone();
    let loaded = tokio::task::spawn_blocking(move || load(&load_key))
        .await
        .map_err(|e| format!("loading panicked: {e}"))?;
    let mut guard = slot.lock().map_err(|_| "poisoned".to_owned())?;
    match (loaded, guard.as_mut()) {
        (Ok(mut new), _) => {
            new.store = store;
            let runner = new.runner.clone();
            *guard = Some(new);
            Ok((runner, None))
        }
        // The last good config answers only under the trust it was loaded
        // with: once the store is refused, its trusted hooks are not.
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
    let mut loader = Config::loader()
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
    let mut tried: Vec<Stamp> = Vec::new();
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
    Ok(Loaded {
        runner: HookRunner::builder().config(config).build(),
        stamps,
        hooks,
        loaded_at: SystemTime::now(),
        error: None,
        store: None,
    })
}

fn status(server: &Server) -> Status {
    let workspaces = server
        .loaded
        .lock()
        .map(|map| {
            map.iter()
                .filter_map(|(key, slot)| {
                    let guard = slot.lock().ok()?;
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
    Status {
        pid: std::process::id(),
        up_s: seconds_since(server.started),
        requests: server.requests.load(Ordering::Relaxed),
        workspaces,
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
