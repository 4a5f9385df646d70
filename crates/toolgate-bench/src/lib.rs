//! `toolgate bench`: what a decision costs, per binding, side by side.
//!
//! The measurement is a crate of its own, above the library and below the
//! command-line tool: an embedder of the chain never builds it (nor its
//! table and chart crates), and a change here does not recompile the
//! library. It uses the library's public API only, plus the two wasm
//! helpers that exist for it (loading a component through a chosen cache,
//! resident memory per instance); the binary parses flags and prints the
//! typed [`Report`]. How one call of each scenario is made is in
//! `scenario`, their setup in `setup`, the report in `report` and the
//! performance budget in `budget`.
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
//!
//! `--agent` measures instead what a hook costs per tool call inside the
//! real Claude Code (`agent`): its own section, run on its own, because it
//! needs the agent installed and takes minutes of its own.
//!
//! `--guards` measures instead the standard guards on their labeled
//! corpora (`guards`): precision, recall and false positives per class,
//! and the cost per call against the same rules run natively.
//!
//! `--soak N` runs instead a long, concurrent run of a real `toolgate
//! serve` under a fixed mix of every binding and answer, sampling the
//! server for leaks (`soak`): it measures endurance, not speed.
//!
//! `--load` drives a real `toolgate serve` with 1, 8, 32 and 128
//! concurrent clients over its socket and over HTTP (`load`): latency per
//! guest class under contention, fairness, errors, the server's memory and
//! descriptors.

mod agent;
mod budget;
mod guards;
mod load;
mod mcp;
#[doc(hidden)]
pub mod mock;
mod report;
mod scenario;
mod setup;
mod soak;

pub use agent::{AgentOptions, AgentRelease, AgentReport, AgentRow, run_agent};
pub use guards::{
    ClassRow, CostRow, GuardReport, GuardsOptions, GuardsReport, Judged, TYPICAL, run_guards,
};
pub use load::{ClassLatency, Fairness, LoadGoal, LoadLevel, LoadOptions, LoadReport, run_load};
pub use mcp::{McpOptions, McpReport, Revision as McpRevision, Side, run_mcp};
pub use report::{Load, LogCost, Machine, Report, Row, Target, Throughput};
pub use soak::{
    Answered, Client, Growth, LaneReport, MAX_GROWTH, Sample, SoakOptions, SoakReport, SoakScratch,
    WARMUP, run_soak,
};

use scenario::{Scenario, call, percentile};
use setup::{Setup, chain};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use toolgate::config::HookDef;
use toolgate::wasm::{self, CacheOutcome, LoadComponentError, StartEngineError, WasmOptions};
use toolgate::{ConfigError, Request};

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
    /// Other builds of the lean client measured in the same rounds as the
    /// one beside [`Options::exe`] (a static build, say), each against the
    /// same do-nothing floor.
    pub lean_clients: Vec<PathBuf>,
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
            lean_clients: Vec::new(),
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
    /// The WebAssembly engine could not be started.
    #[error("starting the WebAssembly engine")]
    Engine(#[from] StartEngineError),
    /// Resident memory per instance could not be measured.
    #[error("measuring resident memory per instance")]
    Measure(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// A guest: its name and its component.
pub(crate) type Guest = (String, PathBuf);

/// Runs the bench.
///
/// Why one function: the bench's phases in the order they run (set up,
/// interleaved rounds, throughput, memory, the log, the budget), each one
/// call; apart, the order would be scattered.
pub fn run(options: &Options) -> Result<Report, BenchError> {
    let progress = options.progress;
    let rounds = if options.quick {
        3
    } else {
        options.rounds.max(1)
    };
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let guests = guests(root, &options.guests)?;
    let reference = guests
        .iter()
        .find(|(n, _)| n.starts_with("rust-"))
        .unwrap_or(&guests[0])
        .clone();
    // Before anything warms a cache.
    progress("compiling each guest cold, then loading it from the cache…");
    let loads = measure_loads(&guests, root, options.quick)?;

    progress("setting up scenarios…");
    let mut setup = Setup::new(options, root);
    setup.wasm_rows(&guests, &reference)?;
    setup.subprocess_rows()?;
    // Its engine pools like the in-process chains, so it shares their
    // cache (already warm: every guest row above compiled into it).
    progress("starting `toolgate serve` for the server rows…");
    let http_global = setup.write_http_global(&reference.0)?;
    let server =
        scenario::Server::start(&options.exe, root, &root.join("cache-chains"), &http_global)?;
    setup.agent_rows(&server, &reference.0)?;
    setup.check_row(&reference)?;
    let mut scenarios = setup.scenarios;

    progress(&format!(
        "measuring: {rounds} rounds × {} scenarios, interleaved…",
        scenarios.len()
    ));
    let load_before = scenario::loadavg();
    rt.block_on(interleave(&mut scenarios, rounds, progress))?;

    progress("throughput with 1 and 2 threads…");
    let (one, two) = throughput(&rt, root, &reference.1, &setup.pre, options.quick)?;
    let per_instance = rt
        .block_on(wasm::resident_bytes_per_instance(
            &reference.1,
            &WasmOptions::new(),
            64,
        ))
        .map_err(|e| BenchError::Measure(Box::new(e)))?;
    progress("the decision log's cost per decision…");
    let decision_log = log_cost(&rt, root, &reference.1, &setup.pre, options.quick)?;
    let load_after = scenario::loadavg();

    let ref_name = format!("wasm: {}", reference.0);
    let (rows, ref_row) = latency_rows(&mut scenarios, &ref_name)?;
    let budget = budget::budget(
        &rows,
        &ref_row,
        &reference.0,
        two / one,
        decision_log.median_us,
    );
    Ok(Report {
        machine: scenario::machine(),
        load_before,
        load_after,
        wasm_engine: wasm::engine_info(&WasmOptions::new())?,
        rounds,
        reference: ref_name,
        budget,
        latency: rows,
        loads,
        throughput: Throughput {
            guest: reference.0,
            one_thread_calls_per_s: one,
            two_threads_calls_per_s: two,
            ratio: two / one,
        },
        resident_bytes_per_instance: per_instance,
        decision_log,
        debug_build: cfg!(debug_assertions),
    })
}

/// Calls/s on the reference guest `component` with one thread and with two.
fn throughput(
    rt: &tokio::runtime::Runtime,
    root: &Path,
    component: &Path,
    request: &Request,
    quick: bool,
) -> Result<(f64, f64), BenchError> {
    let runner = chain(root, [HookDef::wasm("g", component)])?;
    let window = if quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let one = rt.block_on(scenario::throughput(&runner, request, 1, window));
    let two = rt.block_on(scenario::throughput(&runner, request, 2, window));
    Ok((one, two))
}

/// The decision log's cost per decision: the reference guest's outcome
/// appended as the agent commands and the server append it (a log outside
/// the workspace, its checks, lock, chain and write), timed one record at
/// a time, after a warm-up.
fn log_cost(
    rt: &tokio::runtime::Runtime,
    root: &Path,
    component: &Path,
    request: &Request,
    quick: bool,
) -> Result<report::LogCost, BenchError> {
    let runner = chain(root, [HookDef::wasm("g", component)])?;
    let outcome = rt.block_on(runner.evaluate(request));
    let path = root.join("logs/decisions.jsonl");
    let workspace = root.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    let logging = toolgate_log::Logging::new(path.clone(), "bench", false, &workspace);
    let records = if quick { 300 } else { 5000 };
    let mut samples = Vec::with_capacity(records);
    for i in 0..records + records / 10 {
        let started = Instant::now();
        let warning = logging.outcome(request, &outcome, Duration::from_micros(3));
        let took = started.elapsed().as_secs_f64() * 1e6;
        if let Some(warning) = warning {
            return Err(BenchError::Denied(warning));
        }
        if i >= records / 10 {
            samples.push(took);
        }
    }
    samples.sort_by(f64::total_cmp);
    let bytes = std::fs::metadata(&path)?.len();
    Ok(report::LogCost {
        records: samples.len(),
        median_us: percentile(&samples, 0.5),
        p99_us: percentile(&samples, 0.99),
        bytes_per_record: bytes / (records + records / 10) as u64,
    })
}

/// The trivial WAT guest (written under `root`) and every built example in
/// `dir` (`<dir>/<name>/out/<name>.wasm`), by name.
fn guests(root: &Path, dir: &Path) -> Result<Vec<Guest>, BenchError> {
    let trivial = root.join("trivial.wasm");
    std::fs::write(&trivial, wasm::reference_guest())?;
    let mut guests: Vec<Guest> = vec![("trivial (WAT)".into(), trivial)];
    if let Ok(entries) = std::fs::read_dir(std::path::absolute(dir)?) {
        let mut found: Vec<Guest> = entries
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
    Ok(guests)
}

/// Cold compile against cache-hit load, per guest: the median of three
/// (one when quick), each with a fresh cache.
fn measure_loads(guests: &[Guest], root: &Path, quick: bool) -> Result<Vec<Load>, BenchError> {
    let mut loads = Vec::new();
    for (name, path) in guests {
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
        // What a loaded guest holds: its compiled code (the cache entry a
        // load maps), and what each live instance adds (its pool slot's
        // touched pages), measured from that same cache.
        let cache = root.join(format!("cold-{}-0", loads.len()));
        let per_instance = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(wasm::resident_bytes_per_instance(
                path,
                &WasmOptions::new().cache_dir(&cache),
                if quick { 4 } else { 16 },
            ))
            .map_err(|e| BenchError::Measure(Box::new(e)))?;
        loads.push(Load {
            guest: name.clone(),
            bytes: std::fs::metadata(path)?.len(),
            compiled_bytes: soak::dir_size(&cache),
            resident_bytes_per_instance: per_instance,
            cold_compile_ms: percentile(&cold, 0.5),
            cache_hit_ms: percentile(&hit, 0.5),
        });
    }
    Ok(loads)
}

/// A warm-up, then `rounds` rounds each running a batch of every scenario
/// in turn (see the module docs: drift lands on every row alike).
async fn interleave(
    scenarios: &mut [Scenario],
    rounds: usize,
    progress: fn(&str),
) -> Result<(), BenchError> {
    for s in scenarios.iter_mut() {
        for _ in 0..s.batch.min(20) {
            call(&s.kind).await?;
        }
    }
    for round in 0..rounds {
        for s in scenarios.iter_mut() {
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
    Ok(())
}

/// The latency table, each row with its ratio to the reference row
/// (`ref_name`), and that row.
fn latency_rows(scenarios: &mut [Scenario], ref_name: &str) -> Result<(Vec<Row>, Row), BenchError> {
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
    let ref_row = rows
        .iter()
        .find(|r| r.scenario == ref_name)
        .cloned()
        .ok_or(BenchError::Missing("the reference row"))?;
    for r in &mut rows {
        r.ratio_to_reference = Some(r.median_us / ref_row.median_us);
    }
    Ok((rows, ref_row))
}
