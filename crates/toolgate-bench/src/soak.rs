//! `toolgate bench --soak N`: a long run of a real `toolgate serve` under a
//! fixed mix of calls, watching the server for leaks.
//!
//! # Why a real server, and clients the agents' own
//!
//! A leak shows in the process that lives long: `toolgate serve`. So the
//! soak starts the real binary (its config, cache, state and socket in a
//! scratch directory) and sends it calls from several concurrent clients,
//! each call made by the code the agent commands use to forward a call
//! (`cli/client.rs`: connect, request, acknowledgement, answer), not by a
//! second client written for the bench. That client finds the server and
//! the global config through the environment, as an agent's hook process
//! does; the library reads no environment, and the binary may not change
//! its own (`set_var` is unsafe, and unsafe code is denied), so the binary
//! runs itself once more with the scratch environment (see
//! [`SoakScratch`]) and hands [`run_soak`] its client as a function.
//!
//! # The mix
//!
//! One hooks.json (the scratch global config) holds every hook; each hook
//! answers one tool name only, so each call's tool picks its path. The
//! calls cycle through the lanes in a fixed, interleaved order (smooth
//! weighted round robin), so every window of calls holds the same mix:
//! subprocess hooks that allow, deny, rewrite (`modify`, then re-judged in a
//! second round that allows), replace, exit non-zero, print garbage, and
//! sleep past a 50 ms timeout (one call in ~200: a timed-out call costs its
//! timeout, and the soak must not be a wait); one lane per built guest
//! example (Rust, Go, JS, Python, C, and a trivial WAT guest), each on the
//! call it exists for (the Rust guests deny a force push and redact a
//! secret with `replace`, the JS guest rewrites `rm -rf`, re-judged). A
//! guest not built is listed as skipped, not failed: a CI machine without a
//! toolchain still soaks the rest. `toolgate serve` has no in-process hook
//! of its own (in-process interceptors exist only in code that embeds the
//! library), so the in-process binding is soaked in this process: two lanes
//! of the mix (allow, deny) are calls to a [`HookRunner`] here, made by the
//! same client threads in the same cycle. Every answer is classified
//! (`allow`, `deny`, `modify`, `replace`, `failed:<kind>`, `server error`,
//! `not taken`) and checked against its lane's expectation: one unexpected
//! answer fails the run (a failure that came back as an allow would be a
//! fail-open). `not taken` (no acknowledgement within the client's 250 ms,
//! which a million-call run on a machine at load 12 saw twice) is counted
//! and shown, not failed: the agent's command then decides the call itself,
//! with the same chain.
//!
//! # Samples
//!
//! Every `sample_every` calls the clients pause, the server settles (no
//! child, its descriptor count steady), and its resident memory, open
//! descriptors, threads, live descendants and the cache directory's size
//! are read from `/proc` and the disk, with the window's p50/p99 latency
//! and the count of each answer kind. Paused because a count taken mid-call
//! measures how many calls are in flight, not a leak (four clients each
//! holding a socket and a hook's three pipes move the descriptor count by
//! a fifth). The pauses cost a few milliseconds each and are not in the
//! latencies.
//!
//! # Pass or fail
//!
//! Warm-up is the first 10 % of the calls ([`WARMUP`]). For each of RSS,
//! descriptors and threads, with `N` calls and `g(s)` the gauge in sample
//! `s` taken after `s.calls` calls:
//!
//! ```text
//! first    = the first sample with s.calls ≥ N/10
//! baseline = max(g(first), max{ g(s) : N/10 ≤ s.calls < N/10 + N/10 })
//! end      = max(g(last),  max{ g(s) : s.calls ≥ N − N/10 })
//! growth   = (end − baseline) / baseline                  must be ≤ 0.05
//! ```
//!
//! Largest against largest, over a tenth of the calls at each end, because
//! a quiet server still holds transients (a blocking thread kept alive for
//! ten seconds after its last job, pages not yet returned): counted at both
//! ends they cancel, while a leak over the 80 % between shows.
//!
//! ([`growth`], [`judge`]). Besides: after the last call settles, the server
//! has no live descendant; its descriptor count then is not above the
//! baseline's (no descriptor leaked); every call was answered as its lane
//! expects; and the server is still running. The reasons it fails are listed
//! and the command exits non-zero.

use super::scenario::{self, Allow, percentile};
use super::{BenchError, report::Machine};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use toolgate::{HookRunner, Request};

/// The fraction of the calls that is warm-up, before the baseline sample.
pub const WARMUP: f64 = 0.10;
/// The largest growth (a fraction) of RSS, descriptors or threads that passes.
pub const MAX_GROWTH: f64 = 0.05;
/// The kind of a call no server took: the client had no acknowledgement
/// within its 250 ms and an agent's command would evaluate the call itself
/// (the server is an accelerator, see `cli/client.rs`). Counted and shown,
/// not failed: the call is still decided, by the same chain.
pub(crate) const NOT_TAKEN: &str = "not taken";
/// The timeout of the lane that sleeps past it.
const SLOW_TIMEOUT_MS: u64 = 50;

/// What a client got for one call made through the server.
#[derive(Debug)]
#[non_exhaustive]
pub enum Answered {
    /// The server took the call: what `toolgate check` would print and its
    /// exit code, or the server's error.
    Taken(Result<(Option<Value>, u8), String>),
    /// No server took the call (the CLI would evaluate it itself).
    NotTaken,
}

/// One call through the server: the workspace and a `toolgate check` input.
pub type Client = Arc<dyn Fn(&Path, &[u8]) -> Answered + Send + Sync>;

/// The scratch directory the soak runs in, and the environment the bench
/// process and the server run with (nothing of the user's: their config,
/// cache, state and server are not touched).
#[derive(Debug)]
pub struct SoakScratch {
    dir: tempfile::TempDir,
}

impl SoakScratch {
    /// A fresh scratch directory.
    pub fn new() -> Result<Self, BenchError> {
        Ok(SoakScratch {
            dir: tempfile::tempdir()?,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `exe` with the scratch environment under `root`: `pass_env` (the
    /// caller's `PATH` and `TMPDIR`) kept, `HOME` and the XDG directories
    /// under `root`, nothing else.
    pub fn command(root: &Path, exe: &Path, pass_env: &[(String, std::ffi::OsString)]) -> Command {
        let mut cmd = Command::new(exe);
        super::agent::hermetic(&mut cmd, pass_env, root, "soak");
        cmd
    }
}

/// The scratch XDG directory `name` (`config`, `cache`, `state`,
/// `runtime`) that [`SoakScratch::command`] set under `root`.
pub(crate) fn xdg(root: &Path, name: &str) -> PathBuf {
    root.join("soak-xdg").join(name)
}

/// What to run.
#[non_exhaustive]
pub struct SoakOptions {
    /// Calls in all.
    pub calls: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// Calls between samples.
    pub sample_every: usize,
    /// Where built guest examples are.
    pub guests: PathBuf,
    /// The `toolgate` binary the server runs.
    pub exe: PathBuf,
    /// The scratch directory this process's environment points into (see
    /// [`SoakScratch::command`]).
    pub root: PathBuf,
    /// Where the JSON report and the chart are written.
    pub out: PathBuf,
    /// One call through the server.
    pub client: Client,
    /// Called with a line of progress for a person watching.
    pub progress: fn(&str),
}

impl std::fmt::Debug for SoakOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SoakOptions")
            .field("calls", &self.calls)
            .field("clients", &self.clients)
            .field("sample_every", &self.sample_every)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl SoakOptions {
    /// Defaults: 4 clients, a sample every 10,000 calls, guests in
    /// `guest-examples`.
    pub fn new(calls: usize, exe: PathBuf, root: PathBuf, out: PathBuf, client: Client) -> Self {
        SoakOptions {
            calls,
            clients: 4,
            sample_every: 10_000,
            guests: PathBuf::from("guest-examples"),
            exe,
            root,
            out,
            client,
            progress: |_| {},
        }
    }
}

/// One sample of the server (and of this process, which runs the in-process
/// lanes), with the window of calls since the previous one.
#[derive(Clone, Debug, Default, Serialize)]
#[non_exhaustive]
pub struct Sample {
    /// Calls answered when it was taken.
    pub calls: usize,
    /// Seconds since the first measured call.
    pub elapsed_s: f64,
    /// The server's resident memory, KiB.
    pub rss_kib: u64,
    /// Of which anonymous (heap, instances' memories), KiB.
    pub rss_anon_kib: u64,
    /// Of which file-backed (the binary, compiled code mapped from the
    /// cache), KiB.
    pub rss_file_kib: u64,
    /// Its open file descriptors.
    pub fds: u64,
    /// Its threads.
    pub threads: u64,
    /// Its live descendants (hook processes).
    pub children: u64,
    /// The compile cache's size, bytes.
    pub cache_bytes: u64,
    /// This process's resident memory, KiB (the in-process lanes' host).
    pub bench_rss_kib: u64,
    /// Calls in the window.
    pub window_calls: usize,
    /// The window's median latency, µs.
    pub p50_us: f64,
    /// The window's 99th percentile, µs.
    pub p99_us: f64,
    /// The window's answers, by kind.
    pub kinds: BTreeMap<String, u64>,
}

/// A lane of the mix and what it got.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct LaneReport {
    /// What it exercises.
    pub lane: String,
    /// Calls per cycle of the mix.
    pub weight: u32,
    /// The answer it expects (`any`: a guest this bench has no expectation
    /// for; anything but a failure).
    pub expect: String,
    /// Calls made.
    pub calls: u64,
    /// Answers, by kind.
    pub kinds: BTreeMap<String, u64>,
}

/// Growth of one gauge.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
#[non_exhaustive]
pub struct Growth {
    /// The largest in the tenth of the calls after warm-up.
    pub baseline: u64,
    /// The largest value in the last 10 % of the calls.
    pub end: u64,
    /// `(end − baseline) / baseline`, percent.
    pub percent: f64,
}

/// The soak's report.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct SoakReport {
    /// The machine.
    pub machine: Machine,
    /// Load average before and after.
    pub load_before: String,
    /// Load average after.
    pub load_after: String,
    /// Measured with a debug build.
    pub debug_build: bool,
    /// Calls in all.
    pub calls: usize,
    /// Concurrent clients.
    pub clients: usize,
    /// Calls between samples.
    pub sample_every: usize,
    /// Calls of warm-up before the baseline.
    pub warmup_calls: usize,
    /// Wall time of the calls, seconds.
    pub wall_s: f64,
    /// Calls per second.
    pub calls_per_s: f64,
    /// The mix.
    pub lanes: Vec<LaneReport>,
    /// Guests not built, so not in the mix.
    pub skipped: Vec<String>,
    /// The samples, in order.
    pub samples: Vec<Sample>,
    /// The server once the last call settled.
    pub settled: Sample,
    /// RSS growth.
    pub rss: Growth,
    /// Descriptor growth.
    pub fds: Growth,
    /// Thread growth.
    pub threads: Growth,
    /// Live descendants of the server after the last call settled.
    pub children_left: u64,
    /// Answers that were not what their lane expects.
    pub unexpected: u64,
    /// The first few of them.
    pub unexpected_examples: Vec<String>,
    /// Calls the server did not acknowledge in time (see `NOT_TAKEN`);
    /// not a failure.
    pub not_taken: u64,
    /// Whether it passed.
    pub passed: bool,
    /// Why not.
    pub failures: Vec<String>,
    /// The JSON report.
    pub json_path: PathBuf,
    /// The chart.
    pub chart_path: PathBuf,
}

/// How a lane's call is made.
pub(crate) enum How {
    /// Through the server: a `toolgate check` input.
    Server(Vec<u8>),
    /// Through a chain in this process.
    InProcess(Box<(HookRunner, Request)>),
}

pub(crate) struct Lane {
    pub(crate) name: String,
    pub(crate) weight: u32,
    pub(crate) expect: &'static str,
    pub(crate) how: How,
}

/// Answers as counted: per lane and for the current window.
#[derive(Default)]
struct Tally {
    done: usize,
    lanes: Vec<BTreeMap<String, u64>>,
    window: Vec<u32>,
    window_kinds: BTreeMap<String, u64>,
    unexpected: u64,
    examples: Vec<String>,
    not_taken: u64,
}

/// Runs the soak.
pub fn run_soak(options: &SoakOptions) -> Result<SoakReport, BenchError> {
    let progress = options.progress;
    let root = &options.root;
    let calls = options.calls.max(1);
    let every = options.sample_every.max(1);
    let work = root.join("soak");
    std::fs::create_dir_all(&work)?;
    let workspace = work.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let Mix {
        lanes,
        hooks,
        skipped,
    } = mix(&work, &options.guests)?;
    let global = xdg(root, "config").join("toolgate");
    std::fs::create_dir_all(&global)?;
    std::fs::write(
        global.join("hooks.json"),
        serde_json::to_string_pretty(&json!({"schema": 1, "hooks": hooks}))
            .map_err(|_| BenchError::Missing("the soak's hooks.json does not encode"))?,
    )?;
    for s in &skipped {
        progress(&format!("skipped: {s}"));
    }

    progress("starting `toolgate serve`…");
    let mut serve = Command::new(&options.exe);
    serve.arg("serve");
    let socket = xdg(root, "runtime").join("toolgate/serve.sock");
    let server = scenario::Server::spawn(serve, socket, None)?;
    let pid = server.id();
    let cache = xdg(root, "cache");

    progress("one call per lane first (compiles each guest into the cache)…");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for lane in &lanes {
        let kind = call(lane, &workspace, &options.client, &rt);
        if !expected(lane.expect, &kind) && kind != NOT_TAKEN {
            return Err(BenchError::Denied(format!(
                "the soak's lane `{}` answered {kind}, expected {}",
                lane.name, lane.expect
            )));
        }
    }

    let cycle = cycle(&lanes);
    let tally = Mutex::new(Tally {
        lanes: vec![BTreeMap::new(); lanes.len()],
        ..Tally::default()
    });
    let samples = Mutex::new(Vec::<Sample>::new());
    let gate = RwLock::new(());
    let paused = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let load_before = scenario::loadavg();
    progress(&format!(
        "soaking: {calls} calls from {} clients, a sample every {every}…",
        options.clients.max(1)
    ));
    let started = Instant::now();
    let take_sample = |tally: &Mutex<Tally>| -> Result<(), BenchError> {
        paused.store(true, Ordering::SeqCst);
        let _quiet = gate
            .write()
            .map_err(|_| BenchError::Missing("a soak client panicked"))?;
        let (done, latencies, kinds) = {
            let mut t = tally
                .lock()
                .map_err(|_| BenchError::Missing("a soak client panicked"))?;
            (
                t.done,
                std::mem::take(&mut t.window),
                std::mem::take(&mut t.window_kinds),
            )
        };
        let elapsed = started.elapsed();
        settle(pid, Duration::from_secs(3));
        let mut sample = measure(pid, &cache);
        let mut latencies: Vec<f64> = latencies.into_iter().map(f64::from).collect();
        latencies.sort_by(f64::total_cmp);
        sample.calls = done;
        sample.elapsed_s = elapsed.as_secs_f64();
        sample.window_calls = latencies.len();
        sample.p50_us = percentile(&latencies, 0.5);
        sample.p99_us = percentile(&latencies, 0.99);
        sample.kinds = kinds;
        let line = format!(
            "  {done} calls: rss {} KiB, {} fds, {} threads, {} children, p50 {:.0} µs, p99 {:.0} µs",
            sample.rss_kib,
            sample.fds,
            sample.threads,
            sample.children,
            sample.p50_us,
            sample.p99_us
        );
        samples
            .lock()
            .map_err(|_| BenchError::Missing("a soak client panicked"))?
            .push(sample);
        paused.store(false, Ordering::SeqCst);
        progress(&line);
        Ok(())
    };
    let client_loop = || -> Result<(), BenchError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        loop {
            while paused.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            let guard = gate
                .read()
                .map_err(|_| BenchError::Missing("a soak sampler panicked"))?;
            let i = next.fetch_add(1, Ordering::SeqCst);
            if i >= calls {
                return Ok(());
            }
            let index = cycle[i % cycle.len()];
            let lane = &lanes[index];
            let t = Instant::now();
            let kind = call(lane, &workspace, &options.client, &rt);
            let us = u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX);
            drop(guard);
            let done = {
                let mut t = tally
                    .lock()
                    .map_err(|_| BenchError::Missing("a soak client panicked"))?;
                if kind == NOT_TAKEN {
                    t.not_taken += 1;
                } else if !expected(lane.expect, &kind) {
                    t.unexpected += 1;
                    if t.examples.len() < 5 {
                        let example = format!("{}: {kind} (expected {})", lane.name, lane.expect);
                        t.examples.push(example);
                    }
                }
                t.window.push(us);
                *t.window_kinds.entry(kind.clone()).or_default() += 1;
                *t.lanes[index].entry(kind).or_default() += 1;
                t.done += 1;
                t.done
            };
            if done % every == 0 || done == calls {
                take_sample(&tally)?;
            }
        }
    };
    let results: Vec<Result<(), BenchError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..options.clients.max(1))
            .map(|_| s.spawn(client_loop))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or(Err(BenchError::Missing("a soak client panicked")))
            })
            .collect()
    });
    let wall = started.elapsed();
    results.into_iter().collect::<Result<Vec<()>, _>>()?;
    let load_after = scenario::loadavg();

    // The last call has been answered: the server settles, then is read
    // once more.
    settle(pid, Duration::from_secs(10));
    let settled = measure(pid, &cache);
    let settled_at = started.elapsed();
    let alive = std::fs::metadata(format!("/proc/{pid}")).is_ok();
    drop(server);

    let tally = tally
        .into_inner()
        .map_err(|_| BenchError::Missing("a soak client panicked"))?;
    let samples = samples
        .into_inner()
        .map_err(|_| BenchError::Missing("a soak sampler panicked"))?;
    let warmup_calls = (calls as f64 * WARMUP).ceil() as usize;
    let verdict = judge(&samples, calls, warmup_calls);
    let mut failures = verdict.failures;
    if settled.children > 0 {
        failures.push(format!(
            "{} hook process(es) of the server still alive after the last call settled",
            settled.children
        ));
    }
    if settled.fds > verdict.fds.baseline {
        failures.push(format!(
            "descriptors leaked: {} open once the last call settled, {} at the baseline",
            settled.fds, verdict.fds.baseline
        ));
    }
    if tally.unexpected > 0 {
        failures.push(format!(
            "{} answer(s) not what their lane expects, first: {}",
            tally.unexpected,
            tally.examples.join("; ")
        ));
    }
    if !alive {
        failures.push("the server was not running at the end".into());
    }
    let lanes = lanes
        .iter()
        .zip(tally.lanes)
        .map(|(lane, kinds)| LaneReport {
            lane: lane.name.clone(),
            weight: lane.weight,
            expect: lane.expect.into(),
            calls: kinds.values().sum(),
            kinds,
        })
        .collect::<Vec<_>>();
    for lane in &lanes {
        if lane.calls == 0 {
            failures.push(format!("the lane `{}` made no call", lane.lane));
        }
    }

    std::fs::create_dir_all(&options.out)?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let json_path = options.out.join(format!("soak-{stamp}.json"));
    let chart_path = options.out.join(format!("soak-{stamp}.svg"));
    let report = SoakReport {
        machine: scenario::machine(),
        load_before,
        load_after,
        debug_build: cfg!(debug_assertions),
        calls,
        clients: options.clients.max(1),
        sample_every: every,
        warmup_calls,
        wall_s: wall.as_secs_f64(),
        calls_per_s: calls as f64 / wall.as_secs_f64(),
        lanes,
        skipped,
        settled: Sample {
            calls,
            elapsed_s: settled_at.as_secs_f64(),
            ..settled
        },
        rss: verdict.rss,
        fds: verdict.fds,
        threads: verdict.threads,
        children_left: settled.children,
        unexpected: tally.unexpected,
        unexpected_examples: tally.examples,
        not_taken: tally.not_taken,
        passed: failures.is_empty(),
        failures,
        json_path: std::path::absolute(&json_path)?,
        chart_path: std::path::absolute(&chart_path)?,
        samples,
    };
    chart(&report, &chart_path)?;
    std::fs::write(
        &json_path,
        serde_json::to_string_pretty(&report)
            .map_err(|_| BenchError::Missing("the soak report does not encode"))?,
    )?;
    Ok(report)
}

/// Makes one call of `lane`; its answer's kind.
fn call(lane: &Lane, workspace: &Path, client: &Client, rt: &tokio::runtime::Runtime) -> String {
    match &lane.how {
        How::Server(input) => match client(workspace, input) {
            Answered::NotTaken => NOT_TAKEN.into(),
            Answered::Taken(Err(_)) => "server error".into(),
            Answered::Taken(Ok((Some(answer), _))) => classify(&answer),
            Answered::Taken(Ok((None, _))) => "no answer".into(),
        },
        How::InProcess(chain) => {
            let (runner, request) = &**chain;
            let outcome = rt.block_on(runner.evaluate(request));
            classify(&toolgate::wire::outcome_json(&outcome))
        }
    }
}

/// The kind of a `toolgate check` answer: its decision, or for a denial
/// that a hook's failure made, `failed:<kind>`.
pub(crate) fn classify(answer: &Value) -> String {
    let decision = answer["decision"].as_str().unwrap_or("unreadable");
    if decision != "deny" {
        return decision.into();
    }
    let by = answer["decided_by"].as_str();
    let runs = answer["runs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let failed = runs
        .iter()
        .filter(|r| by.is_none_or(|by| r["name"] == by))
        .find(|r| r["verdict"] == "failed");
    match failed {
        Some(run) => format!(
            "failed:{}",
            run["failure"]["kind"].as_str().unwrap_or("unknown")
        ),
        None => "deny".into(),
    }
}

/// Whether `kind` is what a lane expecting `expect` may get.
pub(crate) fn expected(expect: &str, kind: &str) -> bool {
    match expect {
        "any" => matches!(kind, "allow" | "deny" | "modify" | "replace"),
        _ => expect == kind,
    }
}

/// The order of the calls: each lane `weight` times per cycle, spread out
/// (smooth weighted round robin).
fn cycle(lanes: &[Lane]) -> Vec<usize> {
    let total: i64 = lanes.iter().map(|l| i64::from(l.weight)).sum();
    let mut current = vec![0i64; lanes.len()];
    let mut order = Vec::new();
    for _ in 0..total {
        for (c, lane) in current.iter_mut().zip(lanes) {
            *c += i64::from(lane.weight);
        }
        let Some((best, _)) = current
            .iter()
            .enumerate()
            .max_by_key(|(i, c)| (**c, -(*i as i64)))
        else {
            break;
        };
        current[best] -= total;
        order.push(best);
    }
    order
}

/// The script lane run confined.
pub(crate) const CONFINED: &str = "allow-confined";

/// Subprocess hooks of the mix, as (tool, script body, expected kind,
/// weight, timeout).
const SCRIPTS: &[(&str, &str, &str, u32, Option<u64>)] = &[
    ("allow", r#"echo '{"decision":"allow"}'"#, "allow", 30, None),
    // The same hook confined (`"confine": true`), as every workspace hook
    // runs: its start is the one that confines itself in the child.
    (
        CONFINED,
        r#"echo '{"decision":"allow"}'"#,
        "allow",
        12,
        None,
    ),
    (
        "deny",
        r#"echo '{"decision":"deny","reason":"soak: denied"}'"#,
        "deny",
        12,
        None,
    ),
    (
        "modify",
        r#"case "$line" in
  *'"rewritten"'*) echo '{"decision":"allow"}' ;;
  *) echo '{"decision":"modify","input":{"command":"ls","rewritten":true}}' ;;
esac"#,
        "modify",
        12,
        None,
    ),
    (
        "replace",
        r#"echo '{"decision":"replace","result":{"output":"replaced by the soak","is_error":false}}'"#,
        "replace",
        12,
        None,
    ),
    ("exit-3", "exit 3", "failed:exited_non_zero", 6, None),
    (
        "garbage",
        "echo 'this is not an answer'",
        "failed:not_a_decision",
        6,
        None,
    ),
    (
        "slow",
        "exec sleep 5",
        "failed:timed_out",
        1,
        Some(SLOW_TIMEOUT_MS),
    ),
];

/// Guests this bench knows, as (name, tool it answers, input, expected
/// kind, weight); the request is a pre call unless the guest's
/// `bench-request.json` says otherwise.
fn known_guest(name: &str) -> Option<(&'static str, Value, &'static str, u32)> {
    Some(match name {
        "rust-deny-force-push" => (
            "shell",
            json!({"command": "git push --force origin main"}),
            "deny",
            20,
        ),
        "rust-redact-secrets" => ("Bash", Value::Null, "replace", 20),
        "js-command-rewriter" => ("Bash", json!({"command": "rm -rf build"}), "modify", 6),
        "go-path-guard" => ("Write", Value::Null, "allow", 12),
        "python-size-guard" => (
            "Edit",
            json!({"file_path": "notes.md", "content": "one\ntwo\n"}),
            "allow",
            3,
        ),
        "c-tool-allowlist" => ("Grep", json!({"pattern": "TODO"}), "allow", 20),
        _ => return None,
    })
}

/// The guest examples the bench expects to find built.
const GUESTS: [&str; 6] = [
    "c-tool-allowlist",
    "go-path-guard",
    "js-command-rewriter",
    "python-size-guard",
    "rust-deny-force-push",
    "rust-redact-secrets",
];

/// The lanes, the hooks of the server's config, and the guests skipped.
pub(crate) struct Mix {
    pub(crate) lanes: Vec<Lane>,
    pub(crate) hooks: Vec<Value>,
    pub(crate) skipped: Vec<String>,
}

/// The mix, its scripts written under `work`.
pub(crate) fn mix(work: &Path, guests_dir: &Path) -> Result<Mix, BenchError> {
    use std::os::unix::fs::PermissionsExt;
    let mut lanes = Vec::new();
    let mut hooks = Vec::new();
    let in_process = HookRunner::builder().interceptor("allow", Allow).build();
    for (name, input, expect, weight) in [
        ("in-process: allow", json!({}), "allow", 30),
        ("in-process: deny", json!({"deny": true}), "deny", 10),
    ] {
        lanes.push(Lane {
            name: name.into(),
            weight,
            expect,
            how: How::InProcess(Box::new((in_process.clone(), Request::pre("tool", input)))),
        });
    }
    let scripts = work.join("hooks");
    std::fs::create_dir_all(&scripts)?;
    for (what, body, expect, weight, timeout) in SCRIPTS {
        let path = scripts.join(format!("{what}.sh"));
        std::fs::write(&path, format!("#!/bin/sh\nIFS= read -r line\n{body}\n"))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        let tool = format!("sub-{what}");
        let mut hook = json!({"name": tool, "command": [path], "tools": [tool],
                              "event": "pre_tool_use"});
        if let Some(ms) = timeout {
            hook["timeout_ms"] = json!(ms);
        }
        if *what == CONFINED {
            hook["confine"] = json!(true);
        }
        hooks.push(hook);
        let request = Request::pre(tool, json!({"command": "ls"}));
        lanes.push(Lane {
            name: format!("subprocess: {what}"),
            weight: *weight,
            expect,
            how: How::Server(wire_line(&request)),
        });
    }
    let found = super::guests(work, guests_dir)?;
    let pre = Request::pre("shell", json!({"command": "git push origin main"}));
    let mut skipped = Vec::new();
    for name in GUESTS {
        if !found.iter().any(|(n, _)| n == name) {
            skipped.push(format!(
                "guest {name}: not built under {}",
                guests_dir.display()
            ));
        }
    }
    for (name, path) in &found {
        let (mut request, config) = super::setup::guest_files(path, &pre)?;
        let (tool, expect, weight) = match known_guest(name) {
            Some((tool, input, expect, weight)) => {
                request.tool = tool.into();
                if !input.is_null() {
                    request.input = input;
                }
                (tool.to_owned(), expect, weight)
            }
            // The trivial WAT guest, and a guest added since.
            None => {
                let tool = format!("guest-{}", hooks.len());
                request.tool = tool.clone();
                (tool, "any", 20)
            }
        };
        let mut hook = json!({"name": format!("wasm-{}", lanes.len()), "wasm": path,
                              "tools": [tool], "event": request.event.as_str()});
        if let Some(config) = config {
            hook["config"] = config;
        }
        hooks.push(hook);
        lanes.push(Lane {
            name: format!("wasm: {name}"),
            weight,
            expect,
            how: How::Server(wire_line(&request)),
        });
    }
    // The JS guest's rewrite is re-judged by the chain's second round: a
    // subprocess hook on the same tool sees the rewritten call too.
    if found.iter().any(|(n, _)| n == "js-command-rewriter") {
        let allow = scripts.join("allow.sh");
        hooks.push(
            json!({"name": "rejudge", "command": [allow], "tools": ["Bash"],
                          "event": "pre_tool_use"}),
        );
    }
    Ok(Mix {
        lanes,
        hooks,
        skipped,
    })
}

/// `request` as `toolgate check` reads it (wire v1).
fn wire_line(request: &Request) -> Vec<u8> {
    let result = request.result.as_ref();
    let hook = toolgate::contract::HookRequest {
        event: request.event,
        hook: "soak",
        tool: &request.tool,
        input: &request.input,
        result,
        session_id: None,
        turn_id: None,
        tool_call_id: None,
        cwd: request.cwd.as_deref(),
        config: None,
        state: Default::default(),
    };
    toolgate::wire::request_json(&hook).to_string().into_bytes()
}

/// Waits (at most `limit`) until the server at `pid` has no descendant
/// and its descriptor count holds still for 20 ms.
fn settle(pid: u32, limit: Duration) {
    let started = Instant::now();
    let mut last = None;
    while started.elapsed() < limit {
        let fds = count_fds(pid);
        if descendants(pid) == 0 && last == Some(fds) {
            return;
        }
        last = Some(fds);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server's gauges now (the window's fields left empty).
pub(crate) fn measure(pid: u32, cache: &Path) -> Sample {
    let me = pid.to_string();
    Sample {
        rss_kib: status(&me, "VmRSS:"),
        rss_anon_kib: status(&me, "RssAnon:"),
        rss_file_kib: status(&me, "RssFile:"),
        threads: status(&me, "Threads:"),
        fds: count_fds(pid),
        children: descendants(pid),
        cache_bytes: dir_size(cache),
        bench_rss_kib: status("self", "VmRSS:"),
        ..Sample::default()
    }
}

/// The number a process's `/proc/<pid>/status` gives for `key` (`VmRSS:`,
/// in KiB; `Threads:`); 0 when it cannot be read. `pid` may be `self`.
pub(crate) fn status(pid: &str, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

pub(crate) fn count_fds(pid: u32) -> u64 {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count() as u64)
}

/// Live processes descended from `pid`, from every `/proc/<n>/stat`.
fn descendants(pid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let parents: Vec<(u32, u32)> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|n| {
            let stat = std::fs::read_to_string(format!("/proc/{n}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold anything but ends
            // at the last `)`.
            let rest = &stat[stat.rfind(')')? + 1..];
            let mut fields = rest.split_whitespace();
            let state = fields.next()?;
            let ppid = fields.next()?.parse().ok()?;
            (state != "Z" || ppid == pid).then_some((n, ppid))
        })
        .collect();
    let mut tree = vec![pid];
    let mut count = 0;
    while let Some(parent) = tree.pop() {
        for (child, _) in parents.iter().filter(|(_, p)| *p == parent) {
            count += 1;
            tree.push(*child);
        }
    }
    count
}

/// The bytes of every file under `dir` (0 where it cannot be read).
pub(crate) fn dir_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_size(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// The gauges' growth and what fails.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) rss: Growth,
    pub(crate) fds: Growth,
    pub(crate) threads: Growth,
    pub(crate) failures: Vec<String>,
}

/// The growth of one gauge over `samples` (see the module docs): from the
/// largest in the tenth of the calls after `warmup` (at least the first
/// sample at or after it) to the largest at or after `calls − calls/10`.
/// `None` without a sample after warm-up.
pub(crate) fn growth(
    samples: &[Sample],
    calls: usize,
    warmup: usize,
    gauge: fn(&Sample) -> u64,
) -> Option<Growth> {
    let first = gauge(samples.iter().find(|s| s.calls >= warmup)?);
    let head = warmup + calls / 10;
    let baseline = samples
        .iter()
        .filter(|s| s.calls >= warmup && s.calls < head)
        .map(gauge)
        .fold(first, u64::max);
    let tail = calls - calls / 10;
    let last = samples.last()?;
    let end = samples
        .iter()
        .filter(|s| s.calls >= tail)
        .map(gauge)
        .max()
        .unwrap_or(gauge(last));
    let percent = if baseline == 0 {
        if end == 0 { 0.0 } else { f64::INFINITY }
    } else {
        (end as f64 - baseline as f64) / baseline as f64 * 100.0
    };
    Some(Growth {
        baseline,
        end,
        percent,
    })
}

/// RSS, descriptors and threads against [`MAX_GROWTH`].
pub(crate) fn judge(samples: &[Sample], calls: usize, warmup: usize) -> Verdict {
    let mut verdict = Verdict::default();
    type Gauge = fn(&Sample) -> u64;
    let gauges: [(&str, Gauge, &mut Growth); 3] = [
        ("resident memory", |s| s.rss_kib, &mut verdict.rss),
        ("open descriptors", |s| s.fds, &mut verdict.fds),
        ("threads", |s| s.threads, &mut verdict.threads),
    ];
    let mut failures = Vec::new();
    for (what, gauge, slot) in gauges {
        match growth(samples, calls, warmup, gauge) {
            Some(g) => {
                if g.percent > MAX_GROWTH * 100.0 {
                    failures.push(format!(
                        "{what} grew {:.1} % after warm-up ({} → {}), more than {:.0} %",
                        g.percent,
                        g.baseline,
                        g.end,
                        MAX_GROWTH * 100.0
                    ));
                }
                *slot = g;
            }
            None => failures.push(format!("no sample of {what} after warm-up")),
        }
    }
    verdict.failures = failures;
    verdict
}

/// The chart beside the report: RSS, descriptors (and threads), and p50/p99
/// latency over the calls, one panel each.
fn chart(report: &SoakReport, path: &Path) -> Result<(), BenchError> {
    use plotters::prelude::*;
    let draw = |e: &dyn std::fmt::Display| BenchError::Measure(e.to_string().into());
    let root = SVGBackend::new(path, (900, 960)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let panels = root.split_evenly((3, 1));
    let x_max = report.calls.max(1) as f64;
    let s = &report.samples;
    type Line = (&'static str, RGBColor, Vec<(f64, f64)>);
    let series: [(&str, &str, Vec<Line>); 3] = [
        (
            "toolgate serve: resident memory",
            "MiB",
            vec![(
                "RSS",
                RED,
                s.iter()
                    .map(|x| (x.calls as f64, x.rss_kib as f64 / 1024.0))
                    .collect(),
            )],
        ),
        (
            "toolgate serve: open descriptors and threads",
            "count",
            vec![
                (
                    "fds",
                    BLUE,
                    s.iter().map(|x| (x.calls as f64, x.fds as f64)).collect(),
                ),
                (
                    "threads",
                    RGBColor(0, 140, 0),
                    s.iter()
                        .map(|x| (x.calls as f64, x.threads as f64))
                        .collect(),
                ),
            ],
        ),
        (
            "latency per window",
            "ms",
            vec![
                (
                    "p50",
                    BLUE,
                    s.iter().map(|x| (x.calls as f64, x.p50_us / 1e3)).collect(),
                ),
                (
                    "p99",
                    RED,
                    s.iter().map(|x| (x.calls as f64, x.p99_us / 1e3)).collect(),
                ),
            ],
        ),
    ];
    for (panel, (title, unit, lines)) in panels.iter().zip(series) {
        let y_max = lines
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
            .filter(|y| y.is_finite())
            .fold(0.0, f64::max)
            // Headroom above the highest line for the legend, which sits
            // in the upper right.
            * 1.45
            + 1e-9;
        let mut chart = ChartBuilder::on(panel)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| draw(&e))?;
        chart
            .configure_mesh()
            .x_desc("calls")
            .x_label_formatter(&|x| {
                if x_max >= 10_000.0 {
                    format!("{:.0}k", x / 1e3)
                } else {
                    format!("{x:.0}")
                }
            })
            .y_desc(unit)
            .draw()
            .map_err(|e| draw(&e))?;
        for (name, color, points) in lines {
            chart
                .draw_series(LineSeries::new(points, color.stroke_width(2)))
                .map_err(|e| draw(&e))?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.8))
            .draw()
            .map_err(|e| draw(&e))?;
    }
    root.present().map_err(|e| draw(&e))?;
    Ok(())
}

impl SoakReport {
    /// The report as text, for a person.
    pub fn render(&self, width: Option<u16>) -> String {
        use super::report::new_table;
        let mut out = String::new();
        let mut head = new_table(
            width,
            &[
                "calls",
                "p50 ms",
                "p99 ms",
                "RSS MiB",
                "fds",
                "threads",
                "children",
                "cache MiB",
            ],
        );
        for s in self.samples.iter().chain(std::iter::once(&self.settled)) {
            let settled = std::ptr::eq(s, &self.settled);
            head.add_row(vec![
                if settled {
                    "settled".into()
                } else {
                    s.calls.to_string()
                },
                if settled {
                    String::new()
                } else {
                    format!("{:.2}", s.p50_us / 1e3)
                },
                if settled {
                    String::new()
                } else {
                    format!("{:.2}", s.p99_us / 1e3)
                },
                format!("{:.1}", s.rss_kib as f64 / 1024.0),
                s.fds.to_string(),
                s.threads.to_string(),
                s.children.to_string(),
                format!("{:.1}", s.cache_bytes as f64 / 1048576.0),
            ]);
        }
        let mut lanes = new_table(width, &["lane", "weight", "expects", "calls", "answers"]);
        for lane in &self.lanes {
            let kinds = lane
                .kinds
                .iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ");
            lanes.add_row(vec![
                lane.lane.clone(),
                lane.weight.to_string(),
                lane.expect.clone(),
                lane.calls.to_string(),
                kinds,
            ]);
        }
        let growth = |what: &str, g: &Growth| {
            format!("{what}: {} → {} ({:+.1} %)\n", g.baseline, g.end, g.percent)
        };
        out.push_str(&format!(
            "toolgate bench --soak: {} calls from {} clients in {:.1} s ({:.0} calls/s){}\n\
             machine: {} ({} cores), load {} → {}\n\n",
            self.calls,
            self.clients,
            self.wall_s,
            self.calls_per_s,
            if self.debug_build {
                " — a debug build"
            } else {
                ""
            },
            self.machine.cpu,
            self.machine.cores,
            self.load_before,
            self.load_after,
        ));
        out.push_str(&format!("{lanes}\n"));
        for s in &self.skipped {
            out.push_str(&format!("skipped: {s}\n"));
        }
        out.push_str(&format!(
            "\nsamples every {} calls (the first {} are warm-up):\n{head}\n\n",
            self.sample_every, self.warmup_calls
        ));
        out.push_str("growth after warm-up (baseline → largest in the last 10 % of calls):\n");
        out.push_str(&growth("  RSS KiB", &self.rss));
        out.push_str(&growth("  descriptors", &self.fds));
        out.push_str(&growth("  threads", &self.threads));
        if self.not_taken > 0 {
            out.push_str(&format!(
                "not taken by the server (no acknowledgement within 250 ms; an agent's \
                 command evaluates those itself): {}\n",
                self.not_taken
            ));
        }
        out.push_str(&format!(
            "children left: {}; descriptors once settled: {}\n\
             report: {}\nchart: {}\n\n",
            self.children_left,
            self.settled.fds,
            self.json_path.display(),
            self.chart_path.display()
        ));
        if self.passed {
            out.push_str("PASS");
        } else {
            out.push_str("FAIL");
            for f in &self.failures {
                out.push_str(&format!("\n  - {f}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(values: &[(usize, u64)]) -> Vec<Sample> {
        values
            .iter()
            .map(|&(calls, v)| Sample {
                calls,
                rss_kib: v,
                fds: 20,
                threads: 10,
                ..Sample::default()
            })
            .collect()
    }

    #[test]
    fn a_ten_percent_growth_after_warm_up_fails() {
        // Warm-up is 100 of 1000 calls; the baseline is the sample at 100.
        let s = samples(&[
            (50, 500),
            (100, 1000),
            (500, 1050),
            (900, 1080),
            (1000, 1100),
        ]);
        let g = growth(&s, 1000, 100, |s| s.rss_kib).unwrap();
        assert_eq!((g.baseline, g.end), (1000, 1100));
        assert!((g.percent - 10.0).abs() < 1e-9);
        let verdict = judge(&s, 1000, 100);
        assert_eq!(verdict.failures.len(), 1, "{:?}", verdict.failures);
        assert!(verdict.failures[0].contains("resident memory grew 10.0 %"));
    }

    #[test]
    fn growth_within_five_percent_passes_and_warm_up_growth_is_not_counted() {
        // Doubling during warm-up, then +5 % exactly, then back down.
        let s = samples(&[
            (50, 500),
            (100, 1000),
            (500, 1050),
            (950, 1040),
            (1000, 1000),
        ]);
        let g = growth(&s, 1000, 100, |s| s.rss_kib).unwrap();
        assert_eq!((g.baseline, g.end), (1000, 1040));
        assert!(judge(&s, 1000, 100).failures.is_empty());
    }

    #[test]
    fn a_peak_in_the_last_tenth_counts_not_only_the_final_sample() {
        let s = samples(&[(100, 1000), (900, 1200), (1000, 1000)]);
        let g = growth(&s, 1000, 100, |s| s.rss_kib).unwrap();
        assert_eq!(g.end, 1200);
        assert!(!judge(&s, 1000, 100).failures.is_empty());
    }

    #[test]
    fn a_transient_at_both_ends_is_not_growth() {
        // A lingering thread seen once early and once late: 5 against 5.
        let s = samples(&[(100, 4), (150, 5), (500, 4), (950, 5), (1000, 4)]);
        let g = growth(&s, 1000, 100, |s| s.rss_kib).unwrap();
        assert_eq!((g.baseline, g.end), (5, 5));
        // After the first tenth past warm-up, a higher value is growth.
        let s = samples(&[(100, 4), (250, 5), (950, 5)]);
        let g = growth(&s, 1000, 100, |s| s.rss_kib).unwrap();
        assert_eq!((g.baseline, g.end), (4, 5));
    }

    #[test]
    fn no_sample_after_warm_up_fails() {
        let s = samples(&[(50, 1000)]);
        assert!(growth(&s, 1000, 100, |s| s.rss_kib).is_none());
        assert_eq!(judge(&s, 1000, 100).failures.len(), 3);
    }

    #[test]
    fn a_failure_that_denies_is_classified_by_its_kind() {
        let answer = json!({"decision": "deny", "decided_by": "h",
            "runs": [{"name": "h", "verdict": "failed", "failure": {"kind": "timed_out"}}]});
        assert_eq!(classify(&answer), "failed:timed_out");
        let answer = json!({"decision": "deny", "decided_by": "h",
            "runs": [{"name": "h", "verdict": "deny"}]});
        assert_eq!(classify(&answer), "deny");
        assert_eq!(classify(&json!({"decision": "modify"})), "modify");
        assert!(!expected("any", "failed:timed_out"));
    }

    #[test]
    fn the_cycle_holds_each_lane_its_weight_times_spread_out() {
        let lane = |w| Lane {
            name: String::new(),
            weight: w,
            expect: "allow",
            how: How::Server(Vec::new()),
        };
        let order = cycle(&[lane(3), lane(1)]);
        assert_eq!(order.len(), 4);
        assert_eq!(order.iter().filter(|&&i| i == 1).count(), 1);
        assert_eq!(order, [0, 0, 1, 0]);
    }
}
