//! `toolgate bench --load`: many agents at once against one real
//! `toolgate serve`, over its socket and over HTTP.
//!
//! # Why levels of clients, each a session of its own
//!
//! Every other figure the bench gives is one caller at a time. A developer
//! runs agents side by side (sub-agents, a second terminal, a CI job), and
//! they meet at the server: what one of them waits for then is the
//! server's queueing, not a hook's cost. So the same server is driven by 1,
//! 8, 32 and 128 concurrent clients in turn, each a separate agent session
//! (its own `session_id`), for a fixed window per level, and every call is
//! timed on its own. Over the socket a client is the agent commands' own
//! code (connect, request, ack, answer: see the soak's `Client`); over HTTP
//! it is a kept-alive connection posting Claude Code's hook input, as
//! Claude Code does.
//!
//! # The mix, and fairness
//!
//! Each client cycles through the soak's lanes that a server answers by a
//! hook's verdict: every built guest example (Rust, Go, JS, Python, C, the
//! trivial WAT guest) and a subprocess hook that allows, once as the
//! operator's own hook and once confined as every workspace hook runs
//! (Landlock, seccomp: its start is the costlier one), each starting at
//! its own offset so every class is in flight at every moment. Latency is
//! reported per class (p50, p99, p99.9). A slow class must not make a fast
//! one wait: at each level the socket is driven a second time with the
//! fast class alone (the Rust guest), and the fast class's p99 in the mix
//! over its p99 alone is the fairness ratio (goal ≤ 2, judged paced).
//!
//! # Closed loop and paced
//!
//! Each level runs twice over. **Closed loop**: every client calls again
//! the moment it has its answer, which is what measures throughput, but
//! on a 2-core machine it saturates the CPU from 8 clients on, and then a
//! call's latency is Little's law (clients ÷ throughput), whatever the
//! scheduling: a slow class raises every class's latency because it raises
//! the total work, not because it is served first. **Paced**: every client
//! starts a call every `1 / pace` seconds (default 5 a second, far faster
//! than a model's turns), spread across the period, and a call's latency
//! is counted from when it was due (so a client that fell behind is not
//! hidden: no coordinated omission). That is what N agents at once look
//! like, and it is where the goals are judged: the Rust guest's p99 at 32
//! clients, and fairness at every level.
//!
//! Counted from when it was due, a paced call's latency includes how late
//! its client woke to begin it: on a busy machine that is the kernel's
//! scheduling of the client (an agent's own process), which no server can
//! answer sooner. Each class reports that lateness (`late_p99_us`), and
//! fairness is given a second time from each call's actual start
//! (`started_ratio`), so a run shows which side of the socket the time was
//! spent on. The goal is judged on the first, the agent's view.
//!
//! # What counts as an error
//!
//! An answer that is not what its lane expects (a failure, a deny where an
//! allow was due), an answer the client cannot read, or a transport
//! failure. A socket call the server did not take (`busy`, or no
//! acknowledgement within the client's 250 ms) is counted apart as "not
//! taken": the agent's command evaluates those itself, so they are slower,
//! not wrong.

mod drive;
mod render;

use crate::report::Machine;
use crate::soak::{Client, How, Lane, NOT_TAKEN, mix, xdg};
use crate::{BenchError, scenario};
use drive::{HttpConn, Level, call_socket, drive, gauges};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Duration;

/// The fast class: its p99 is the one the goals and fairness are about.
const FAST: &str = "wasm: rust-deny-force-push";
/// The goal for the fast class's p99 over the socket at 32 clients, µs.
const FAST_P99_GOAL_US: f64 = 2000.0;
/// The most the mix may raise the fast class's p99 over its p99 alone.
const FAIRNESS_GOAL: f64 = 2.0;

/// What to run.
#[non_exhaustive]
pub struct LoadOptions {
    /// Concurrent clients per level.
    pub levels: Vec<usize>,
    /// How long each level runs.
    pub window: Duration,
    /// Calls a second each client starts in the paced runs (0: none).
    pub pace: f64,
    /// Where built guest examples are.
    pub guests: PathBuf,
    /// The `toolgate` binary the server runs.
    pub exe: PathBuf,
    /// The scratch directory this process's environment points into (see
    /// [`super::SoakScratch::command`]).
    pub root: PathBuf,
    /// Where the JSON report and the chart are written.
    pub out: PathBuf,
    /// One call through the server's socket.
    pub client: Client,
    /// Called with a line of progress for a person watching.
    pub progress: fn(&str),
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("levels", &self.levels)
            .field("window", &self.window)
            .finish_non_exhaustive()
    }
}

impl LoadOptions {
    /// Defaults: 1, 8, 32 and 128 clients, 3 s a run, paced runs at 5
    /// calls a second per client.
    pub fn new(exe: PathBuf, root: PathBuf, out: PathBuf, client: Client) -> Self {
        LoadOptions {
            levels: vec![1, 8, 32, 128],
            window: Duration::from_secs(3),
            pace: 5.0,
            guests: PathBuf::from("guest-examples"),
            exe,
            root,
            out,
            client,
            progress: |_| {},
        }
    }
}

/// One class's latency at one level.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct ClassLatency {
    /// The lane (`wasm: <guest>`, `subprocess: allow`, `subprocess: allow-confined`).
    pub class: String,
    /// Calls timed.
    pub calls: usize,
    /// Median, µs.
    pub p50_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// 99.9th percentile, µs.
    pub p999_us: f64,
    /// How late its clients began these calls, 99th percentile, µs: the
    /// client's own wake-up from its sleep until the call was due, part
    /// of every latency above and none of the server's doing.
    pub late_p99_us: f64,
    /// 99th percentile from when the client began the call (its lateness
    /// taken out): the server's share, and the transport's.
    pub started_p99_us: f64,
}

/// One level: a transport, a mix, a number of clients.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct LoadLevel {
    /// `socket` or `http`.
    pub transport: String,
    /// `mix` (every class) or `fast alone`.
    pub mix: String,
    /// `closed loop` (each client calls again at once) or `paced`.
    pub mode: String,
    /// Paced: the calls a second the clients were to start, together.
    pub offered_per_s: Option<f64>,
    /// Concurrent clients.
    pub clients: usize,
    /// Calls answered.
    pub calls: usize,
    /// Calls per second.
    pub calls_per_s: f64,
    /// Answers that were wrong or unreadable, and transport failures.
    pub errors: u64,
    /// The first few of them.
    pub error_examples: Vec<String>,
    /// Socket calls the server did not take (busy, or no ack in 250 ms).
    pub not_taken: u64,
    /// Latency per class.
    pub classes: Vec<ClassLatency>,
    /// The server's largest resident memory seen during the level, KiB.
    pub peak_rss_kib: u64,
    /// Its most open descriptors seen during the level.
    pub peak_fds: u64,
}

/// The fast class's p99 in the mix against alone, at one level.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct Fairness {
    /// `closed loop` or `paced`.
    pub mode: String,
    /// Concurrent clients.
    pub clients: usize,
    /// Its p99 with every class in flight, µs.
    pub mixed_p99_us: f64,
    /// Its p99 alone, µs.
    pub alone_p99_us: f64,
    /// `mixed / alone`.
    pub ratio: f64,
    /// The same, each call timed from when its client began it rather
    /// than from when it was due: what is left once the clients' own
    /// lateness (their wake-up on a busy machine) is taken out.
    pub started_ratio: f64,
}

/// A goal and whether this run met it.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct LoadGoal {
    /// What.
    pub goal: String,
    /// What was measured.
    pub measured: String,
    /// Met.
    pub met: bool,
}

/// The load bench's report.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct LoadReport {
    /// The machine.
    pub machine: Machine,
    /// Measured with a debug build.
    pub debug_build: bool,
    /// Load average before.
    pub load_before: String,
    /// Load average after.
    pub load_after: String,
    /// Seconds per level.
    pub window_s: f64,
    /// The server's resident memory once every class was loaded, KiB.
    pub warm_rss_kib: u64,
    /// And once the last level settled, KiB.
    pub settled_rss_kib: u64,
    /// Every level.
    pub levels: Vec<LoadLevel>,
    /// The fast class, mixed against alone, per level (socket).
    pub fairness: Vec<Fairness>,
    /// The goals.
    pub goals: Vec<LoadGoal>,
    /// Guests not built, so not in the mix.
    pub skipped: Vec<String>,
    /// Errors over every level (must be 0).
    pub errors: u64,
    /// The JSON report.
    pub json_path: PathBuf,
    /// The chart.
    pub chart_path: PathBuf,
}

/// How a level's clients reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Transport {
    Socket,
    Http,
}

impl Transport {
    pub(super) fn name(self) -> &'static str {
        match self {
            Transport::Socket => "socket",
            Transport::Http => "http",
        }
    }
}

/// A lane as the load bench calls it: its name, what it expects, and its
/// call as `toolgate check` reads it (wire v1).
pub(super) struct Class {
    pub(super) name: String,
    pub(super) expect: &'static str,
    pub(super) wire: Value,
}

/// What the clients of one level recorded.
#[derive(Default)]
pub(super) struct Recorded {
    pub(super) samples: Vec<Vec<f64>>,
    /// How late each call began (µs past when it was due), by class.
    pub(super) late: Vec<Vec<f64>>,
    pub(super) errors: u64,
    pub(super) examples: Vec<String>,
    pub(super) not_taken: u64,
}

/// Runs the load bench.
///
/// Why one function: the bench's phases in the order they run (the mix,
/// the server, a warm call per class, the levels, the report); each is a
/// call, and the order is the measurement's.
pub fn run_load(options: &LoadOptions) -> Result<LoadReport, BenchError> {
    let progress = options.progress;
    let root = &options.root;
    let work = root.join("load");
    let workspace = work.join("workspace");
    std::fs::create_dir_all(workspace.join(".toolgate"))?;
    let mixed = mix(&work, &options.guests)?;
    let classes: Vec<Class> = mixed
        .lanes
        .iter()
        .filter(|l| {
            l.name.starts_with("wasm: ")
                || l.name
                    .strip_prefix("subprocess: ")
                    .is_some_and(|s| s == "allow" || s == crate::soak::CONFINED)
        })
        .filter_map(class_of)
        .collect();
    let fast = classes
        .iter()
        .position(|c| c.name == FAST)
        .or_else(|| classes.iter().position(|c| c.name.starts_with("wasm: ")))
        .ok_or(BenchError::Missing("no guest to load the server with"))?;
    let global = xdg(root, "config").join("toolgate");
    std::fs::create_dir_all(&global)?;
    std::fs::write(
        global.join("hooks.json"),
        serde_json::to_string_pretty(&json!({"schema": 1, "hooks": mixed.hooks}))
            .map_err(|_| BenchError::Missing("the load's hooks.json does not encode"))?,
    )?;

    progress("starting `toolgate serve` (socket and HTTP)…");
    let mut serve = std::process::Command::new(&options.exe);
    serve.arg("serve");
    let socket = xdg(root, "runtime").join("toolgate/serve.sock");
    let server = scenario::Server::spawn(serve, socket, Some(&xdg(root, "state")))?;
    let http = server.http.clone().ok_or(BenchError::Missing(
        "`toolgate serve --http` said no address",
    ))?;
    let pid = server.id();

    progress("one call per class over each transport (compiles every guest)…");
    for class in &classes {
        let socket_kind = call_socket(&options.client, &workspace, class, "warm");
        let mut conn = HttpConn::open(&http)?;
        let http_kind = conn.call(&http, &workspace, class, "warm");
        for kind in [socket_kind, http_kind] {
            if let Err(why) = kind
                && why != NOT_TAKEN
            {
                return Err(BenchError::Denied(format!("{}: {why}", class.name)));
            }
        }
    }
    let warm_rss_kib = gauges(pid).0;
    let load_before = scenario::loadavg();

    let (levels, fairness) = run_levels(options, &classes, fast, &http, pid)?;
    let load_after = scenario::loadavg();
    std::thread::sleep(Duration::from_millis(500));
    let settled_rss_kib = gauges(pid).0;
    drop(server);

    let errors = levels.iter().map(|l| l.errors).sum();
    let goals = goals(&levels, &fairness, &classes[fast].name, errors);
    std::fs::create_dir_all(&options.out)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let json_path = std::path::absolute(options.out.join(format!("load-{stamp}.json")))?;
    let chart_path = std::path::absolute(options.out.join(format!("load-{stamp}.svg")))?;
    let report = LoadReport {
        machine: scenario::machine(),
        debug_build: cfg!(debug_assertions),
        load_before,
        load_after,
        window_s: options.window.as_secs_f64(),
        warm_rss_kib,
        settled_rss_kib,
        levels,
        fairness,
        goals,
        skipped: mixed.skipped,
        errors,
        json_path: json_path.clone(),
        chart_path: chart_path.clone(),
    };
    render::chart(&report, &chart_path)?;
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&report)
            .map_err(|_| BenchError::Missing("the load report does not encode"))?,
    )?;
    Ok(report)
}

/// Every level, closed loop then paced: over the socket and over HTTP with
/// every class, then over the socket with the fast class alone; and the
/// fast class's fairness at each.
fn run_levels(
    options: &LoadOptions,
    classes: &[Class],
    fast: usize,
    http: &(String, String),
    pid: u32,
) -> Result<(Vec<LoadLevel>, Vec<Fairness>), BenchError> {
    let mut levels = Vec::new();
    let mut fairness = Vec::new();
    let all: Vec<usize> = (0..classes.len()).collect();
    let paces: Vec<Option<Duration>> = std::iter::once(None)
        .chain((options.pace > 0.0).then(|| Some(Duration::from_secs_f64(1.0 / options.pace))))
        .collect();
    for &clients in &options.levels {
        for &pace in &paces {
            let mode = if pace.is_some() {
                "paced"
            } else {
                "closed loop"
            };
            let runs = [
                (Transport::Socket, &all[..], "every class"),
                (Transport::Http, &all[..], "every class"),
                (Transport::Socket, &[fast][..], "the fast class alone"),
            ];
            let mut done = Vec::new();
            for (transport, lanes, what) in runs {
                (options.progress)(&format!(
                    "{clients} clients over the {}, {what}, {mode}…",
                    transport.name()
                ));
                let level = Level {
                    options,
                    classes,
                    lanes,
                    transport,
                    clients,
                    http,
                    pace,
                };
                done.push(drive(&level, pid)?);
            }
            let fast_of = |level: &LoadLevel| {
                level
                    .classes
                    .iter()
                    .find(|c| c.class == classes[fast].name)
                    .map_or((f64::NAN, f64::NAN), |c| (c.p99_us, c.started_p99_us))
            };
            let ((mixed_p99_us, mixed_started), (alone_p99_us, alone_started)) =
                (fast_of(&done[0]), fast_of(&done[2]));
            fairness.push(Fairness {
                mode: done[0].mode.clone(),
                clients,
                mixed_p99_us,
                alone_p99_us,
                ratio: mixed_p99_us / alone_p99_us,
                started_ratio: mixed_started / alone_started,
            });
            levels.extend(done);
        }
    }
    Ok((levels, fairness))
}

/// The class of a lane the server answers (`None` for an in-process one).
fn class_of(lane: &Lane) -> Option<Class> {
    let How::Server(input) = &lane.how else {
        return None;
    };
    Some(Class {
        name: lane.name.clone(),
        expect: lane.expect,
        wire: serde_json::from_slice(input).ok()?,
    })
}

/// The goals against what was measured: judged on the paced runs
/// when there are any (see the module docs), else on the closed loop.
fn goals(levels: &[LoadLevel], fairness: &[Fairness], fast: &str, errors: u64) -> Vec<LoadGoal> {
    let mut goals = vec![LoadGoal {
        goal: "no errors at any level".into(),
        measured: errors.to_string(),
        met: errors == 0,
    }];
    let mode = if levels.iter().any(|l| l.mode == "paced") {
        "paced"
    } else {
        "closed loop"
    };
    let at32 = levels
        .iter()
        .find(|l| l.transport == "socket" && l.mix == "mix" && l.mode == mode && l.clients == 32)
        .and_then(|l| l.classes.iter().find(|c| c.class == fast));
    if let Some(c) = at32 {
        goals.push(LoadGoal {
            goal: format!(
                "{fast} p99 over the socket at 32 clients ({mode}) ≤ {:.0} ms",
                FAST_P99_GOAL_US / 1e3
            ),
            measured: format!("{:.2} ms", c.p99_us / 1e3),
            met: c.p99_us <= FAST_P99_GOAL_US,
        });
    }
    let judged: Vec<&Fairness> = fairness.iter().filter(|f| f.mode == mode).collect();
    if let Some(worst) = judged.iter().max_by(|a, b| a.ratio.total_cmp(&b.ratio)) {
        goals.push(LoadGoal {
            goal: format!(
                "the mix raises {fast}'s p99 by ≤ {FAIRNESS_GOAL}× at every level ({mode})"
            ),
            measured: format!("{:.2}× at {} clients (worst)", worst.ratio, worst.clients),
            met: judged.iter().all(|f| f.ratio <= FAIRNESS_GOAL),
        });
    }
    goals
}
