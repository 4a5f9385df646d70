//! `toolgate bench`: what a decision costs, per binding, side by side.
//!
//! The measurement lives in the library (behind the `cli` feature) so that
//! its helpers (loading a component through a chosen cache, resident memory
//! per instance) need not be public API; the binary parses flags and prints
//! the typed [`Report`]. Scenarios are in `scenario`, the report in `report`.
//!
//! # Why interleaved
//!
//! These machines are shared and noisy. Running variant A for ten seconds and
//! then variant B lets the machine's drift land on one of them. Here every
//! round runs a batch of every scenario in turn, so drift hits all variants
//! alike, and ratios between rows measured in the same run are meaningful
//! even when absolute numbers wander. Each call is timed on its own; the
//! table reports the median and the 99th percentile.
//!
//! # What it measures
//!
//! Per-call latency of the chain with one in-process interceptor; one wasm
//! hook per guest example found (fresh instance per call, fuel on, as
//! shipped) and a trivial WAT guest; a chain of three wasm hooks; subprocess
//! hooks (a tiny native binary, a bash script, a Python script); `toolgate
//! check` as a whole fresh process with a warm compile cache; and the agent
//! path — what Claude Code and Codex pay per tool call, `toolgate
//! claude-code` started afresh with one hook: each guest example (warm
//! cache), a bash script and a Python script doing the same job. Then cold
//! compile against cache-hit load per guest, calls/s with one and two
//! threads, and resident memory per concurrent instance. The reference row
//! for ratios is the Rust guest example when built, else the trivial guest.

mod report;
mod scenario;

pub use report::{Load, Machine, Report, Row, Target, Throughput};

use crate::binding::wasm::{self, CacheOutcome, LoadComponentError, WasmOptions};
use crate::config::HookDef;
use crate::{Config, ConfigError, HookRunner, Request};
use scenario::{Allow, Kind, Scenario, call, percentile};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// What to run.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// Rounds of interleaved batches.
    pub rounds: usize,
    /// A short smoke run (3 rounds, small batches, short windows).
    pub quick: bool,
    /// Where built guest examples are (`<dir>/<name>/out/<name>.wasm`).
    pub guests: PathBuf,
    /// The `toolgate` binary, for the fresh-process row.
    pub exe: PathBuf,
    /// Called with a line of progress for a person watching.
    pub progress: fn(&str),
}

impl Options {
    /// Defaults: 20 rounds, guests in `guest-examples`.
    pub fn new(exe: PathBuf) -> Self {
        Options {
            rounds: 20,
            quick: false,
            guests: PathBuf::from("guest-examples"),
            exe,
            progress: |_| {},
        }
    }
}

/// Why a bench run could not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// Setting up files or processes failed.
    #[error("setting up the bench")]
    Io(#[from] std::io::Error),
    /// A bench hook's configuration was refused.
    #[error("configuring a bench hook")]
    Config(#[from] ConfigError),
    /// A guest could not be loaded.
    #[error("loading {guest}")]
    Load {
        /// The guest.
        guest: String,
        /// Why.
        #[source]
        source: LoadComponentError,
    },
    /// A guest's `bench-request.json` or `bench-config.json` is unusable.
    #[error("{file}: not usable")]
    GuestFile {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A bench hook denied, or a fresh process failed: the run measures
    /// nothing meaningful.
    #[error("a bench call did not go through: {0}")]
    Denied(String),
    /// Something the bench needs went missing.
    #[error("{0}")]
    Missing(&'static str),
}

/// A chain of hooks built in code, as the host's own (so they may name
/// files anywhere).
fn chain(root: &Path, hooks: impl IntoIterator<Item = HookDef>) -> Result<HookRunner, BenchError> {
    // One compile cache for every in-process chain: a guest compiled for one
    // row (the reference, three times in the chain of 3, again for the
    // throughput runner) is not compiled again for the next.
    let options = WasmOptions::new().cache_dir(root.join("cache-chains"));
    let config = Config::from_hooks(hooks, root, &options)?;
    Ok(HookRunner::builder().config(config).build())
}

/// Runs the bench.
pub fn run(options: &Options) -> Result<Report, BenchError> {
    let progress = options.progress;
    let quick = options.quick;
    let rounds = if quick { 3 } else { options.rounds.max(1) };
    let scale = if quick { 0.1 } else { 1.0 };
    let batch = |n: usize| ((n as f64 * scale) as usize).max(2);
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let cache = root.join("cache");
    // Cold-compile and `check` measurements use caches under `tmp`, so cold
    // and warm are controlled whatever the user's cache holds.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;

    // Guests: the trivial WAT guest and every built example.
    let trivial = root.join("trivial.wasm");
    std::fs::write(&trivial, wasm::reference_guest())?;
    let mut guests: Vec<(String, PathBuf)> = vec![("trivial (WAT)".into(), trivial.clone())];
    let guests_dir = std::path::absolute(&options.guests)?;
    if let Ok(entries) = std::fs::read_dir(&guests_dir) {
        let mut found: Vec<(String, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let wasm = e.path().join("out").join(format!("{name}.wasm"));
                wasm.exists().then_some((name, wasm))
            })
            .collect();
        found.sort();
        guests.extend(found);
    }
    let reference = guests
        .iter()
        .find(|(n, _)| n.starts_with("rust-"))
        .unwrap_or(&guests[0])
        .clone();

    // Compile cold vs cache hit, per guest (before anything warms the cache).
    progress("compiling each guest cold, then loading it from the cache…");
    let mut loads = Vec::new();
    for (name, path) in &guests {
        let mut cold = Vec::new();
        let mut hit = Vec::new();
        for i in 0..if quick { 1 } else { 3 } {
            let options =
                WasmOptions::new().cache_dir(root.join(format!("cold-{}-{i}", loads.len())));
            let load = |p: &Path| {
                wasm::load_component(p, &options).map_err(|source| BenchError::Load {
                    guest: name.clone(),
                    source,
                })
            };
            let c = load(path)?;
            let h = load(path)?;
            if h.cache != CacheOutcome::Hit {
                return Err(BenchError::Denied(format!(
                    "the second load of {name} was not a cache hit ({:?})",
                    h.cache
                )));
            }
            cold.push(c.load_time.as_secs_f64() * 1e3);
            hit.push(h.load_time.as_secs_f64() * 1e3);
        }
        cold.sort_by(f64::total_cmp);
        hit.sort_by(f64::total_cmp);
        loads.push(Load {
            guest: name.clone(),
            bytes: std::fs::metadata(path)?.len(),
            cold_compile_ms: percentile(&cold, 0.5),
            cache_hit_ms: percentile(&hit, 0.5),
        });
    }

    // Scenarios.
    progress("setting up scenarios…");
    let mut scenarios: Vec<Scenario> = Vec::new();
    let pre = Request::pre("shell", json!({"command": "git push origin main"}));
    let mut push = |name: String, kind: Kind, n: usize| {
        scenarios.push(Scenario {
            name,
            kind,
            batch: batch(n),
            samples: Vec::new(),
        })
    };
    push(
        "in-process interceptor".into(),
        Kind::Chain(
            HookRunner::builder().interceptor("allow", Allow).build(),
            pre.clone(),
        ),
        2000,
    );
    // The agent path: what an agent pays per tool call, `toolgate
    // claude-code` as a fresh process with one hook (warm compile cache).
    let mut agent_rows: Vec<(String, serde_json::Value, Request, Option<PathBuf>)> = Vec::new();
    for (name, path) in &guests {
        // A guest example may need a config to decide (an allowlist, say):
        // `bench-config.json` beside its build script supplies it; and it is
        // measured doing its real job when `bench-request.json` gives the call
        // it exists for (a post with a secret for a redactor, a write for a
        // path guard). Otherwise it sees the common pre shell call.
        let beside = |file: &str| {
            let path = path.parent()?.parent()?.join(file);
            Some((std::fs::read(&path).ok()?, path))
        };
        let request = match beside("bench-request.json") {
            Some((bytes, file)) => crate::wire::read_request(&bytes, None, None).map_err(|e| {
                BenchError::GuestFile {
                    file,
                    source: Box::new(e),
                }
            })?,
            None => pre.clone(),
        };
        let mut hook = HookDef::wasm("g", path).events(&[request.event]);
        let mut file_hook = json!({"name": "g", "wasm": path, "event": request.event.as_str()});
        if let Some((config, file)) = beside("bench-config.json") {
            let config: serde_json::Value =
                serde_json::from_slice(&config).map_err(|e| BenchError::GuestFile {
                    file,
                    source: Box::new(e),
                })?;
            file_hook["config"] = config.clone();
            hook = hook.config(config);
        }
        agent_rows.push((
            format!("wasm: {name}"),
            file_hook,
            request.clone(),
            Some(path.clone()),
        ));
        push(
            format!("wasm: {name}"),
            Kind::Chain(chain(root, [hook])?, request),
            300,
        );
    }
    push(
        format!("wasm chain of 3 × {}", reference.0),
        Kind::Chain(
            chain(
                root,
                ["a", "b", "c"].map(|n| HookDef::wasm(n, &reference.1)),
            )?,
            pre.clone(),
        ),
        200,
    );
    let hooks_dir = root.join("hooks");
    std::fs::create_dir_all(&hooks_dir)?;
    let native = hooks_dir.join("allow-native");
    std::fs::write(hooks_dir.join("allow.c"), scenario::NATIVE_HOOK_C)?;
    let compiled = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&native)
        .arg(hooks_dir.join("allow.c"))
        .status();
    let mut subprocess_rows = Vec::new();
    if compiled.is_ok_and(|s| s.success()) {
        subprocess_rows.push(("subprocess: native binary (C)", native.clone(), 20));
    } else {
        progress("no C compiler (cc): the native subprocess row is left out");
    }
    for (name, file, text, n) in [
        (
            "subprocess: bash script",
            "allow.sh",
            scenario::BASH_HOOK,
            10,
        ),
        (
            "subprocess: python script",
            "allow.py",
            scenario::PYTHON_HOOK,
            4,
        ),
    ] {
        let path = hooks_dir.join(file);
        std::fs::write(&path, text)?;
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        subprocess_rows.push((name, path, n));
    }
    for (name, program, n) in subprocess_rows {
        let hook = HookDef::command("p", [program.to_string_lossy()]);
        push(
            name.into(),
            Kind::Chain(chain(root, [hook])?, pre.clone()),
            n,
        );
        if !name.contains("native") {
            let file_hook = json!({"name": "p", "command": [program]});
            agent_rows.push((
                name.replace("subprocess: ", ""),
                file_hook,
                pre.clone(),
                None,
            ));
        }
    }
    // The children are one-shot processes: their cache entries are keyed by
    // that engine, so the cache is warmed with the same one.
    let one_shot = WasmOptions::new()
        .cache_dir(&cache)
        .allocator(wasm::Allocator::OneShot);
    // A `toolgate serve` for the same rows through a running server. Its
    // engine pools like the in-process chains, so it shares their cache
    // (already warm: every guest row above compiled into it).
    progress("starting `toolgate serve` for the server rows…");
    let server = scenario::Server::start(&options.exe, root, &root.join("cache-chains"))?;
    // `toolgate claude-code` on `request` with `dir` as its config, through
    // `socket`'s server or (None) on its own.
    let agent = |dir: &Path, request: &Request, socket: Option<PathBuf>| Kind::Process {
        exe: options.exe.clone(),
        command: "claude-code",
        workspace: dir.to_owned(),
        cache: cache.clone(),
        stdin: scenario::agent_input(request),
        socket,
    };
    let mut served = Vec::new();
    for (i, (what, hook, request, guest)) in agent_rows.into_iter().enumerate() {
        if let Some(guest) = guest {
            progress(&format!(
                "warming the compile cache for the agent path: {what}…"
            ));
            wasm::load_component(&guest, &one_shot).map_err(|source| BenchError::Load {
                guest: what.clone(),
                source,
            })?;
        }
        let dir = root.join(format!("agent-{i}"));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("hooks.json"),
            json!({"schema": 1, "hooks": [hook]}).to_string(),
        )?;
        push(
            format!("agent path: `toolgate claude-code` + {what}"),
            agent(&dir, &request, None),
            5,
        );
        served.push((what, dir, request));
    }
    for (what, dir, request) in served {
        push(
            format!("agent path via `toolgate serve` + {what}"),
            agent(&dir, &request, Some(server.socket.clone())),
            5,
        );
        if what.contains(&reference.0) {
            push(
                format!("one request over the socket to `toolgate serve` ({what})"),
                Kind::Socket(scenario::SocketClient::connect(
                    &server.socket,
                    &dir,
                    &request,
                )?),
                300,
            );
        }
    }
    // `toolgate check` is a real process: its hooks are a real global config.
    let check_ws = root.join("ws-check");
    std::fs::create_dir_all(&check_ws)?;
    std::fs::write(
        check_ws.join("hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "g", "wasm": &reference.1}]}).to_string(),
    )?;
    // Warm the cache the `check` children use (one-shot processes, as above).
    wasm::load_component(&reference.1, &one_shot).map_err(|source| BenchError::Load {
        guest: reference.0.clone(),
        source,
    })?;
    push(
        format!("`toolgate check` process, warm cache ({})", reference.0),
        Kind::Process {
            exe: options.exe.clone(),
            command: "check",
            workspace: check_ws,
            cache: cache.clone(),
            stdin: json!({"event": "pre_tool_use", "tool": "shell", "input": {"command": "git push origin main"}})
                .to_string()
                .into_bytes(),
            socket: None,
        },
        10,
    );

    // Warm-up, then interleaved rounds.
    progress(&format!(
        "measuring: {rounds} rounds × {} scenarios, interleaved…",
        scenarios.len()
    ));
    let load_before = scenario::loadavg();
    rt.block_on(async {
        for s in &mut scenarios {
            for _ in 0..s.batch.min(20) {
                call(&s.kind).await?;
            }
        }
        for round in 0..rounds {
            for s in &mut scenarios {
                for _ in 0..s.batch {
                    let t = Instant::now();
                    call(&s.kind).await?;
                    s.samples.push(t.elapsed().as_secs_f64() * 1e6);
                }
            }
            if (round + 1) % 5 == 0 {
                progress(&format!("  round {}/{rounds}", round + 1));
            }
        }
        Ok::<(), BenchError>(())
    })?;

    // Throughput with 1 and 2 threads on the reference guest.
    progress("throughput with 1 and 2 threads…");
    let ref_runner = chain(root, [HookDef::wasm("g", &reference.1)])?;
    let window = if quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let one = rt.block_on(scenario::throughput(&ref_runner, &pre, 1, window));
    let two = rt.block_on(scenario::throughput(&ref_runner, &pre, 2, window));
    let per_instance = rt
        .block_on(wasm::resident_bytes_per_instance(
            &reference.1,
            &WasmOptions::new(),
            64,
        ))
        .map_err(BenchError::Denied)?;
    let load_after = scenario::loadavg();

    let mut rows: Vec<Row> = scenarios
        .iter_mut()
        .map(|s| {
            s.samples.sort_by(f64::total_cmp);
            let mean = s.samples.iter().sum::<f64>() / s.samples.len().max(1) as f64;
            Row {
                scenario: s.name.clone(),
                calls: s.samples.len(),
                median_us: percentile(&s.samples, 0.5),
                p99_us: percentile(&s.samples, 0.99),
                calls_per_s: 1e6 / mean,
                ratio_to_reference: None,
            }
        })
        .collect();
    let ref_name = format!("wasm: {}", reference.0);
    let ref_row = rows
        .iter()
        .find(|r| r.scenario == ref_name)
        .cloned()
        .ok_or(BenchError::Missing("the reference row"))?;
    for r in &mut rows {
        r.ratio_to_reference = Some(r.median_us / ref_row.median_us);
    }
    let budget = budget(&rows, &ref_row, &reference.0, two / one);
    Ok(Report {
        machine: scenario::machine(),
        load_before,
        load_after,
        wasm_engine: wasm::engine_info(&WasmOptions::new()).map_err(BenchError::Denied)?,
        rounds,
        reference: ref_name,
        latency: rows,
        loads,
        throughput: Throughput {
            guest: reference.0,
            one_thread_calls_per_s: one,
            two_threads_calls_per_s: two,
            ratio: two / one,
        },
        resident_bytes_per_instance: per_instance,
        budget,
        debug_build: cfg!(debug_assertions),
    })
}

/// The performance budget (DESIGN.md), each target against this run.
fn budget(rows: &[Row], reference: &Row, reference_name: &str, threads_ratio: f64) -> Vec<Target> {
    let find = |prefix: &str| rows.iter().find(|r| r.scenario.starts_with(prefix));
    let mut budget = vec![
        Target::new(
            format!("{reference_name} median ≤ 5 µs"),
            reference.median_us,
            5.0,
            "µs",
            true,
        ),
        Target::new(
            format!("{reference_name} p99 ≤ 20 µs"),
            reference.p99_us,
            20.0,
            "µs",
            true,
        ),
    ];
    if let Some(r) = find("wasm chain of 3") {
        budget.push(Target::new(
            "chain of three wasm hooks median ≤ 15 µs".into(),
            r.median_us,
            15.0,
            "µs",
            true,
        ));
    }
    let fastest_sub = rows
        .iter()
        .filter(|r| r.scenario.starts_with("subprocess"))
        .map(|r| r.median_us)
        .fold(f64::INFINITY, f64::min);
    budget.push(Target::new(
        "≥ 150× faster than the fastest subprocess hook".into(),
        fastest_sub / reference.median_us,
        150.0,
        "×",
        false,
    ));
    if let Some(r) = find("subprocess: python") {
        budget.push(Target::new(
            "≥ 5,000× faster than the Python subprocess hook".into(),
            r.median_us / reference.median_us,
            5000.0,
            "×",
            false,
        ));
    }
    if let Some(r) = find("`toolgate check`") {
        budget.push(Target::new(
            "`toolgate check` fresh process, warm cache ≤ 3 ms".into(),
            r.median_us / 1e3,
            3.0,
            "ms",
            true,
        ));
    }
    for lang in ["js-", "javascript-", "python-", "py-"] {
        if let Some(r) = find(&format!("wasm: {lang}")) {
            budget.push(Target::new(
                format!("{} ≤ 1 ms per call", r.scenario),
                r.median_us / 1e3,
                1.0,
                "ms",
                true,
            ));
        }
    }
    // The agent path (issue: fast where agents call it): a fresh process per
    // call, warm cache; through a running server; one socket request.
    for r in rows {
        let ms = r.median_us / 1e3;
        if let Some(what) = r
            .scenario
            .strip_prefix("agent path: `toolgate claude-code` + wasm: ")
        {
            let small =
                what.starts_with("c-") || what.starts_with("rust-") || what.starts_with("trivial");
            let limit = if small { 5.0 } else { 20.0 };
            budget.push(Target::new(
                format!("agent path, no server, {what} ≤ {limit} ms"),
                ms,
                limit,
                "ms",
                true,
            ));
        } else if let Some(what) = r
            .scenario
            .strip_prefix("agent path via `toolgate serve` + wasm: ")
        {
            budget.push(Target::new(
                format!("agent path via the server, {what} ≤ 3 ms"),
                ms,
                3.0,
                "ms",
                true,
            ));
        } else if r.scenario.starts_with("one request over the socket") {
            budget.push(Target::new(
                format!("{} ≤ 30 µs", r.scenario),
                r.median_us,
                30.0,
                "µs",
                true,
            ));
        }
    }
    budget.push(Target::new(
        "calls/s with 2 threads ≥ 1.7× one thread".into(),
        threads_ratio,
        1.7,
        "×",
        false,
    ));
    budget
}
