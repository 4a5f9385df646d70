//! `toolgate serve`: the command that starts the server (the
//! toolgate-server crate), and asks a running one for its status and
//! metrics. What the server does and why is that crate's documentation.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use toolgate::Config;
use toolgate_loopback as http;
use toolgate_server::{DEFAULT_MAX_IN_FLIGHT, DEFAULT_MAX_WORKSPACES, DEFAULT_UNLOAD_IDLE};

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
    /// Drop a workspace's loaded hooks (and their compiled code) after this
    /// many seconds without a call; its next call loads them again from the
    /// compile cache. 0: never.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_UNLOAD_IDLE.as_secs())]
    unload_idle: u64,
    /// The most calls evaluated at once. Past it a call over the socket is
    /// answered "busy" and the agent's command evaluates it itself (as when
    /// no server runs); one over --http waits for a slot within its
    /// deadline, else is blocked.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_IN_FLIGHT,
          value_parser = clap::value_parser!(u16).range(1..))]
    max_in_flight: u16,
    /// Sign the decision log ($TOOLGATE_DECISION_LOG) with this minisign
    /// secret key every --checkpoint-every seconds when something was
    /// logged, and once more as the server stops (`toolgate log verify
    /// --pubkey` checks them). The key is read once, at start: a regular
    /// file of yours, mode 0600, made without a password (`minisign -G
    /// -W`).
    #[arg(long, value_name = "FILE")]
    checkpoint_key: Option<std::path::PathBuf>,
    /// How often --checkpoint-key signs, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..))]
    checkpoint_every: u64,
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
    let checkpoints = match &args.checkpoint_key {
        None => None,
        Some(key) => {
            let log = super::env::decision_log().ok_or_else(|| {
                anyhow::anyhow!(
                    "--checkpoint-key signs the decision log, and there is none: set \
                     TOOLGATE_DECISION_LOG to an absolute path"
                )
            })?;
            let key = toolgate_log::checkpoint::SigningKey::load(key)?;
            Some(toolgate_log::Checkpoints::new(
                log,
                key,
                std::time::Duration::from_secs(args.checkpoint_every),
            ))
        }
    };
    let http = match http {
        Some(addr) => {
            let path = http::token_path()
                .ok_or_else(|| anyhow::anyhow!("no place for the HTTP secret: set HOME"))?;
            Some((addr, http::Token::load_or_create(&path)?))
        }
        None => None,
    };
    let options = toolgate_server::Options {
        max_workspaces: usize::from(args.max_workspaces),
        unload_idle: (args.unload_idle > 0)
            .then(|| std::time::Duration::from_secs(args.unload_idle)),
        max_in_flight: usize::from(args.max_in_flight),
        metrics: metrics_addr.is_some(),
        // The managed layer is the server's own to resolve (as root only
        // may move it), never the client's to name; read at each load.
        base: Arc::new(|| {
            let managed = super::env::managed_dir();
            let loader = Config::loader()
                .managed_dir(&managed)
                .wasm(super::env::wasm(false).slow_lane());
            (managed, loader)
        }),
        warm: Some(Arc::new(warm_in_a_child)),
        calls_dir: toolgate_hook::env::calls_dir(),
    };
    toolgate_server::serve(options, &socket, http, metrics_addr, checkpoints)?;
    Ok(ExitCode::SUCCESS)
}

/// Compiles `workspace`'s components into the cache in a child process
/// (`toolgate hooks`, which loads exactly what the server will, with the
/// server's own environment and its engine's allocator, so the entries it
/// writes are the ones the server's load then maps). Cranelift's working
/// memory is the child's and goes with it: compiled in the server, six
/// guests left it at ~800 MiB resident, mostly heap the allocator kept.
/// Whatever the child does not compile (it failed, or was killed), the
/// server's own load still does.
fn warm_in_a_child(workspace: &Path) {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut child = std::process::Command::new(exe);
    // The tests' pause is the server's own load's, not its helper's.
    #[cfg(debug_assertions)]
    child.env_remove(super::env::PAUSE_AFTER_READ);
    let ran = child
        .args(["hooks", "--workspace"])
        .arg(workspace)
        .env("TOOLGATE_SERVER", "off")
        .env("TOOLGATE_WASM_ALLOCATOR", "pooling")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    if let Err(e) = ran {
        tracing::debug!("could not compile {} in a child: {e}", workspace.display());
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
        "workspaces: {} loaded, {} loading, at most {} ({} evicted, {} unloaded after {}); \
         {} loads, {} of them reloads after an edit; {} calls outlived a load",
        status.workspaces.len(),
        status.loading,
        status.max_workspaces,
        status.evictions,
        status.unloaded_idle,
        match status.unload_idle_s {
            0 => "never: --unload-idle 0".to_owned(),
            s => format!("{s} s idle"),
        },
        status.loads,
        status.reloads,
        status.load_timeouts
    );
    outln!(
        "in flight: {} of at most {}; {} calls answered busy (evaluated by their callers)",
        status.in_flight,
        status.max_in_flight,
        status.busy
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
    show_heard(&status.heard);
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

/// When each agent, and each recent session, was last heard from: an
/// agent that stopped calling the guard stops here.
fn show_heard(heard: &[toolgate::serve::Heard]) {
    for h in heard {
        let who = match &h.session_id {
            None => format!("{} (every session)", h.agent),
            Some(session) => format!(
                "{} session {}",
                h.agent,
                toolgate::text::excerpt(session, 40)
            ),
        };
        outln!(
            "last heard, {who}: {} ago ({} calls)",
            humantime_short(Duration::from_secs(h.last_s_ago)),
            h.calls
        );
    }
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

/// A running server's status as JSON (for `toolgate hooks`); `None` when
/// none answers.
pub(crate) fn query_status() -> Option<Value> {
    serde_json::to_value(super::client::query_status()?).ok()
}
