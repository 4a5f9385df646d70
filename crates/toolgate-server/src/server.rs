//! The server's state: one loaded chain per workspace, reloaded when its
//! files change, bounded in number; and evaluating one request with it, for
//! whichever transport read the request (see the crate docs).

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

mod eviction;
use toolgate::config::FileIdentity;
use toolgate::serve::{Body, Context, Evaluate, Mode, ParticipantStatus, Status, WorkspaceStatus};
use toolgate::trust::TrustStore;
use toolgate::{HookRunner, Source};

use crate::in_flight::Slots;
use crate::metrics::{Metrics, count};
use crate::options::{Base, Warm};
use crate::stats::Stats;
use toolgate::observe::{Ending, Observed, Observer as _};

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
    /// When it was last asked for, in ms since the server started, for
    /// unloading it when idle ([`Server::unload_idle`]).
    used_at: AtomicU64,
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
    /// [`crate::Options::unload_idle`].
    pub(crate) unload_idle: Option<Duration>,
    /// What `used_at` counts from.
    epoch: Instant,
    /// Counts requests, to order slots by last use.
    tick: AtomicU64,
    /// A slot per call being evaluated (`--max-in-flight`).
    pub(crate) slots: Slots,
    pub(crate) stats: Stats,
    started: SystemTime,
    /// The Prometheus series, with `--metrics` ([`metrics`]).
    metrics: Option<Arc<Metrics>>,
    /// What decides what runs and where the server writes: its global
    /// config, trust store, `PATH` and decision log, read from its own
    /// start-up environment. Nothing a request says changes them.
    own: Context,
    /// What each load starts from ([`crate::Options::base`]).
    base: Arc<Base>,
    /// [`crate::Options::warm`].
    warm: Option<Arc<Warm>>,
    /// Hooks' session state, in memory, shared by every workspace's chain
    /// and kept across reloads (a guard's memory of a session must not
    /// vanish because a config file was edited). Scoped by hook and
    /// session, so sharing grants nothing.
    sessions: Arc<toolgate::sessions::MemoryStore>,
    /// [`crate::Options::calls_dir`]'s record.
    ledger: Option<toolgate_log::ledger::Ledger>,
}

impl Server {
    pub(crate) fn new(options: crate::Options) -> Server {
        let crate::Options {
            max_workspaces,
            unload_idle,
            max_in_flight,
            metrics,
            base,
            warm,
            calls_dir,
        } = options;
        Server {
            loaded: Mutex::new(HashMap::new()),
            max_workspaces: max_workspaces.max(1),
            unload_idle,
            epoch: Instant::now(),
            tick: AtomicU64::new(0),
            slots: Slots::new(max_in_flight),
            stats: Stats::default(),
            started: SystemTime::now(),
            metrics: metrics.then(|| Arc::new(Metrics::new())),
            own: toolgate_hook::client::context(),
            base,
            warm,
            sessions: Arc::new(toolgate::sessions::MemoryStore::new()),
            ledger: calls_dir.map(toolgate_log::ledger::Ledger::served),
        }
    }

    /// What toolgate answered before each call ran ([`crate::ledger`]).
    pub(crate) fn ledger(&self) -> Option<&toolgate_log::ledger::Ledger> {
        self.ledger.as_ref()
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
        self.metrics.as_deref()
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

/// Why one function: one evaluation's steps in the order they happen (the
/// server's own context, the decision log, the chain, the mode's reading
/// of the input, the answer); each is a call, and their order is what the
/// socket and HTTP callers rely on.
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
        .map(|path| toolgate_log::Logging::new(path, mode.name(), true, &workspace));
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
            log.observe(&Observed {
                request: None,
                ending: Ending::Refused { error: &error },
                took: started.elapsed(),
            });
            return Body::error(error);
        }
    };
    // The call's own observers: the log line names how it came in.
    let mut runner = runner;
    if let Some(metrics) = server.metrics.clone() {
        runner = runner.with_observer(metrics);
    }
    if let Some(log) = log.clone() {
        runner = runner.with_observer(Arc::new(log));
    }
    let input = input.as_bytes();
    let answered = match mode {
        Mode::Check => match toolgate::wire::read_request(input, event.as_deref(), tool.as_deref())
        {
            Ok(request) => {
                heard(server, mode, request.session_id.as_deref());
                let outcome = runner.evaluate(&request).await;
                let exit = toolgate_hook::hook_process::check_exit(&outcome);
                Ok((Some(toolgate::wire::outcome_json(&outcome)), exit))
            }
            Err(e) => Err(format!(
                "the request on stdin: {}",
                toolgate::text::error_chain(&e)
            )),
        },
        Mode::Agent(dialect) => match toolgate::agent::read_agent_input(input, dialect) {
            Ok(call) => {
                let session = call.request.as_ref().and_then(|r| r.session_id.as_deref());
                heard(server, mode, session);
                let budget = deadline
                    .map(|d| d.saturating_duration_since(Instant::now()))
                    .unwrap_or(toolgate::runner::DEFAULT_CHAIN_TIMEOUT);
                Ok((
                    crate::answer::agent(&runner, call, dialect, budget, server.ledger()).await,
                    0,
                ))
            }
            Err(e) => Err(toolgate::text::error_chain(&e)),
        },
    };
    if let Err(error) = &answered {
        runner.observe(&Observed {
            request: None,
            ending: Ending::Refused { error },
            took: started.elapsed(),
        });
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
        let (base, warm) = (server.base.clone(), server.warm.clone());
        let sessions = server.sessions.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            if let Some(warm) = warm {
                warm(&load_key.workspace);
            }
            load(&load_key, &*base, sessions)
        })
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
fn load(
    key: &Key,
    base: &Base,
    sessions: Arc<toolgate::sessions::MemoryStore>,
) -> Result<Loaded, (String, Vec<Stamp>)> {
    // The managed layer is the server's own to resolve (as root only may
    // move it), never the client's to name: the program gives it.
    let (managed, loader) = base();
    let mut loader = loader.workspace(&key.workspace);
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
        runner: HookRunner::builder()
            .config(config)
            .session_store(sessions)
            .build(),
        stamps,
        hooks,
        loaded_at: SystemTime::now(),
        error: None,
        settled,
        store: None,
    })
}

pub(crate) fn status(server: &Server) -> Status {
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
        unloaded_idle: Stats::get(&stats.unloaded_idle),
        unload_idle_s: server.unload_idle.map_or(0, |d| d.as_secs()),
        load_timeouts: Stats::get(&stats.load_timeouts),
        loading,
        max_workspaces: server.max_workspaces,
        in_flight: server.slots.taken(),
        max_in_flight: server.slots.max(),
        busy: Stats::get(&stats.busy),
        latency: stats.latency(),
        heard: stats.heard_list(),
    }
}

/// Notes a call from `mode` in `session` (status and metrics).
fn heard(server: &Server, mode: Mode, session: Option<&str>) {
    server.stats.heard(mode.name(), session);
    count(server.metrics(), |m| m.heard(mode.name()));
}

pub(crate) fn seconds_since(at: SystemTime) -> u64 {
    at.elapsed().map(|d| d.as_secs()).unwrap_or(0)
}
