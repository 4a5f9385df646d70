//! `toolgate bench`: what a decision costs, per binding, side by side.
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
//! check` as a whole fresh process with a warm compile cache. Then cold
//! compile against cache-hit load per guest, calls/s with one and two
//! threads, and resident memory per concurrent instance. The reference row
//! for ratios is the Rust guest example when built, else the trivial guest.

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolgate::{Answer, BoxError, Config, HookRequest, HookRunner, Interceptor, Request, wire};

/// Measure per-call cost of every binding, side by side, in one run.
///
/// Rounds interleave all scenarios so the machine's drift hits them alike.
/// Prints a table with medians, p99 and ratios to the wasm reference row,
/// then compile/cache, threading and memory figures, and the performance
/// budget with each target marked met or not.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    toolgate bench                     # full run (about a minute)\n  \
    toolgate bench --quick             # a smoke run, seconds\n  \
    toolgate bench --json > bench.json\n\n\
    Guests are taken from guest-examples/*/out/*.wasm (build them with guest-examples/build-all).")]
pub(crate) struct Args {
    /// Rounds of interleaved batches.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// A short smoke run (3 rounds, small batches, short throughput windows).
    #[arg(long)]
    quick: bool,
    /// Where to look for built guest examples.
    #[arg(long, value_name = "DIR", default_value = "guest-examples")]
    guests: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    json: bool,
}

/// One row of the latency table.
#[derive(Serialize)]
struct Row {
    scenario: String,
    calls: usize,
    median_us: f64,
    p99_us: f64,
    calls_per_s: f64,
    ratio_to_reference: Option<f64>,
}

enum Kind {
    Chain(HookRunner, Request),
    Process(PathBuf, PathBuf, PathBuf, Vec<u8>),
}

struct Scenario {
    name: String,
    kind: Kind,
    batch: usize,
    samples: Vec<f64>,
}

struct Allow;
#[async_trait::async_trait]
impl Interceptor for Allow {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Answer, BoxError> {
        Ok(if request.input.get("deny").is_some() {
            Answer::deny("no")
        } else {
            Answer::allow()
        })
    }
}

const NATIVE_HOOK_C: &str = r#"#include <stdio.h>
int main(void) {
    char buf[65536];
    while (fread(buf, 1, sizeof buf, stdin) > 0) {}
    fputs("{\"decision\":\"allow\"}\n", stdout);
    return 0;
}
"#;

const BASH_HOOK: &str =
    "#!/usr/bin/env bash\nIFS= read -r -d '' _ || true\necho '{\"decision\":\"allow\"}'\n";

const PYTHON_HOOK: &str = "#!/usr/bin/env python3\nimport json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"decision\": \"allow\"}))\n";

/// A global config directory whose hooks.json holds `hooks`. The measured
/// hooks are the operator's own (a workspace could not name components in
/// the bench's temporary folder: it may only name files in its own tree).
fn workspace(root: &Path, name: &str, hooks: Value) -> anyhow::Result<PathBuf> {
    let dir = root.join(name);
    super::write_file(
        &dir.join("hooks.json"),
        &json!({"schema": 1, "hooks": hooks}).to_string(),
        false,
    )?;
    Ok(dir)
}

fn chain(dir: &Path) -> anyhow::Result<HookRunner> {
    Ok(HookRunner::builder()
        .config(Config::load(Some(dir), None)?)
        .build())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    json!({
        "cpu": model,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "kernel": std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim(),
        "loadavg": loadavg(),
    })
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

pub(crate) fn run(args: Args) -> anyhow::Result<std::process::ExitCode> {
    let rounds = if args.quick { 3 } else { args.rounds.max(1) };
    let scale = if args.quick { 0.1 } else { 1.0 };
    let batch = |n: usize| ((n as f64 * scale) as usize).max(2);
    let tmp = tempfile::tempdir()?;
    let cache = tmp.path().join("cache");
    // Cold-compile and `check` measurements use caches under `tmp`, so cold
    // and warm are controlled whatever the user's cache holds.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let progress = |msg: &str| {
        if !args.json {
            eprintln!("{msg}");
        }
    };

    // Guests: the trivial WAT guest and every built example.
    let trivial = tmp.path().join("trivial.wasm");
    std::fs::write(&trivial, toolgate::wasm::reference_guest())?;
    let mut guests: Vec<(String, PathBuf)> = vec![("trivial (WAT)".into(), trivial.clone())];
    let guests_dir = std::path::absolute(&args.guests)?;
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
        for i in 0..if args.quick { 1 } else { 3 } {
            let dir = tmp.path().join(format!("cold-{}-{i}", loads.len()));
            let c = toolgate::wasm::load_component(path, Some(&dir))?;
            let h = toolgate::wasm::load_component(path, Some(&dir))?;
            if h.cache != toolgate::wasm::CacheOutcome::Hit {
                bail!(
                    "the second load of {name} was not a cache hit ({:?})",
                    h.cache
                );
            }
            cold.push(c.load_time.as_secs_f64() * 1e3);
            hit.push(h.load_time.as_secs_f64() * 1e3);
        }
        cold.sort_by(f64::total_cmp);
        hit.sort_by(f64::total_cmp);
        loads.push(json!({
            "guest": name,
            "bytes": std::fs::metadata(path)?.len(),
            "cold_compile_ms": percentile(&cold, 0.5),
            "cache_hit_ms": percentile(&hit, 0.5),
        }));
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
            Some((bytes, file)) => wire::read_request(&bytes, None, None)
                .with_context(|| format!("{}", file.display()))?,
            None => pre.clone(),
        };
        let mut hook = json!({"name": "g", "wasm": path, "event": request.event.as_str()});
        if let Some((config, file)) = beside("bench-config.json") {
            hook["config"] = serde_json::from_slice(&config)
                .with_context(|| format!("{}: not JSON", file.display()))?;
        }
        let ws = workspace(
            tmp.path(),
            &format!("ws-{}", scenarios_len_hint(name)),
            json!([hook]),
        )?;
        push(
            format!("wasm: {name}"),
            Kind::Chain(chain(&ws)?, request),
            300,
        );
    }
    let three = workspace(
        tmp.path(),
        "ws-three",
        json!([
            {"name": "a", "wasm": &reference.1},
            {"name": "b", "wasm": &reference.1},
            {"name": "c", "wasm": &reference.1}
        ]),
    )?;
    push(
        format!("wasm chain of 3 × {}", reference.0),
        Kind::Chain(chain(&three)?, pre.clone()),
        200,
    );
    let hooks_dir = tmp.path().join("hooks");
    let native = hooks_dir.join("allow-native");
    super::write_file(&hooks_dir.join("allow.c"), NATIVE_HOOK_C, false)?;
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
    let bash = hooks_dir.join("allow.sh");
    super::write_file(&bash, BASH_HOOK, true)?;
    subprocess_rows.push(("subprocess: bash script", bash, 10));
    let python = hooks_dir.join("allow.py");
    super::write_file(&python, PYTHON_HOOK, true)?;
    subprocess_rows.push(("subprocess: python script", python, 4));
    for (name, program, n) in subprocess_rows {
        let ws = workspace(
            tmp.path(),
            &format!(
                "ws-{}",
                program.file_name().unwrap_or_default().to_string_lossy()
            ),
            json!([{"name": "p", "command": [program]}]),
        )?;
        push(name.into(), Kind::Chain(chain(&ws)?, pre.clone()), n);
    }
    let check_ws = workspace(
        tmp.path(),
        "ws-check",
        json!([{"name": "g", "wasm": &reference.1}]),
    )?;
    // Warm the cache the `check` children use.
    toolgate::wasm::load_component(&reference.1, Some(&cache))?;
    push(
        format!("`toolgate check` process, warm cache ({})", reference.0),
        Kind::Process(
            std::env::current_exe()?,
            check_ws,
            cache.clone(),
            serde_json::to_vec(
                &json!({"event": "pre_tool_use", "tool": "shell", "input": {"command": "git push origin main"}}),
            )?,
        ),
        10,
    );

    // Warm-up, then interleaved rounds.
    progress(&format!(
        "measuring: {rounds} rounds × {} scenarios, interleaved…",
        scenarios.len()
    ));
    let load_before = loadavg();
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
            if !args.json && (round + 1) % 5 == 0 {
                eprintln!("  round {}/{rounds}", round + 1);
            }
        }
        anyhow::Ok(())
    })?;

    // Throughput with 1 and 2 threads on the reference guest.
    progress("throughput with 1 and 2 threads…");
    let ref_ws = workspace(
        tmp.path(),
        "ws-throughput",
        json!([{"name": "g", "wasm": &reference.1}]),
    )?;
    let ref_runner = chain(&ref_ws)?;
    let window = if args.quick {
        Duration::from_millis(300)
    } else {
        Duration::from_secs(2)
    };
    let one = rt.block_on(throughput(&ref_runner, &pre, 1, window));
    let two = rt.block_on(throughput(&ref_runner, &pre, 2, window));
    let per_instance = rt
        .block_on(toolgate::wasm::resident_bytes_per_instance(
            &reference.1,
            64,
        ))
        .map_err(anyhow::Error::msg)?;
    let load_after = loadavg();

    // Report.
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
    let ref_median = rows
        .iter()
        .find(|r| r.scenario == ref_name)
        .map(|r| r.median_us)
        .context("reference row missing")?;
    for r in &mut rows {
        r.ratio_to_reference = Some(r.median_us / ref_median);
    }
    let find = |prefix: &str| rows.iter().find(|r| r.scenario.starts_with(prefix));
    let ref_row = find(&ref_name).context("reference row")?;
    let mut budget = vec![
        target(
            format!("{} median ≤ 5 µs", reference.0),
            ref_row.median_us,
            5.0,
            "µs",
            true,
        ),
        target(
            format!("{} p99 ≤ 20 µs", reference.0),
            ref_row.p99_us,
            20.0,
            "µs",
            true,
        ),
    ];
    if let Some(r) = find("wasm chain of 3") {
        budget.push(target(
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
    budget.push(target(
        "≥ 150× faster than the fastest subprocess hook".into(),
        fastest_sub / ref_median,
        150.0,
        "×",
        false,
    ));
    if let Some(r) = find("subprocess: python") {
        budget.push(target(
            "≥ 5,000× faster than the Python subprocess hook".into(),
            r.median_us / ref_median,
            5000.0,
            "×",
            false,
        ));
    }
    if let Some(r) = find("`toolgate check`") {
        budget.push(target(
            "`toolgate check` fresh process, warm cache ≤ 3 ms".into(),
            r.median_us / 1e3,
            3.0,
            "ms",
            true,
        ));
    }
    for lang in ["js-", "javascript-", "python-", "py-"] {
        if let Some(r) = rows
            .iter()
            .find(|r| r.scenario.starts_with(&format!("wasm: {lang}")))
        {
            budget.push(target(
                format!("{} ≤ 1 ms per call", r.scenario),
                r.median_us / 1e3,
                1.0,
                "ms",
                true,
            ));
        }
    }
    budget.push(target(
        "calls/s with 2 threads ≥ 1.7× one thread".into(),
        two / one,
        1.7,
        "×",
        false,
    ));

    let engine = toolgate::wasm::engine_info().map_err(anyhow::Error::msg)?;
    let report = json!({
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_after,
        "wasm_engine": engine,
        "rounds": rounds,
        "reference": ref_name,
        "latency": rows,
        "loads": loads,
        "throughput": {"guest": reference.0, "one_thread_calls_per_s": one, "two_threads_calls_per_s": two, "ratio": two / one},
        "resident_bytes_per_instance": per_instance,
        "budget": budget,
    });
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_report(&report);
    }
    Ok(std::process::ExitCode::SUCCESS)
}

fn scenarios_len_hint(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

fn target(what: String, value: f64, limit: f64, unit: &str, at_most: bool) -> Value {
    let met = if at_most {
        value <= limit
    } else {
        value >= limit
    };
    json!({"target": what, "value": value, "unit": unit, "met": met})
}

async fn call(kind: &Kind) -> anyhow::Result<()> {
    match kind {
        Kind::Chain(runner, request) => {
            let outcome = runner.evaluate(request).await;
            if !outcome.may_proceed() {
                bail!("a bench hook denied: {:?}", outcome.runs);
            }
        }
        Kind::Process(exe, ws, cache, stdin) => {
            let mut child = Command::new(exe)
                .arg("check")
                .arg("--workspace")
                .arg(ws)
                .env("TOOLGATE_CONFIG_DIR", ws)
                .env("TOOLGATE_CACHE_DIR", cache)
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            child.stdin.take().context("stdin")?.write_all(stdin)?;
            let status = child.wait()?;
            if status.code() != Some(0) {
                bail!("toolgate check exited with {status}");
            }
        }
    }
    Ok(())
}

async fn throughput(runner: &HookRunner, request: &Request, tasks: usize, window: Duration) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let (runner, request, stop, count) =
                (runner.clone(), request.clone(), stop.clone(), count.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    runner.pre_tool_use(&request).await;
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    tokio::time::sleep(window).await;
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    count.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.2} µs")
    }
}

fn print_report(report: &Value) {
    use comfy_table::{Table, presets::UTF8_FULL_CONDENSED};
    let m = &report["machine"];
    outln!(
        "machine: {} · {} cores · Linux {} · load {} → {}",
        m["cpu"].as_str().unwrap_or("?"),
        m["cores"],
        m["kernel"].as_str().unwrap_or("?"),
        report["load_before"].as_str().unwrap_or("?"),
        report["load_after"].as_str().unwrap_or("?"),
    );
    let e = &report["wasm_engine"];
    outln!(
        "wasmtime {} · {} allocator · fuel on · epoch tick {} ms · max wasm stack {} KiB · {} interleaved rounds\n",
        e["wasmtime"].as_str().unwrap_or("?"),
        e["allocator"]["kind"].as_str().unwrap_or("?"),
        e["epoch_tick_ms"],
        e["max_wasm_stack"].as_u64().unwrap_or(0) / 1024,
        report["rounds"],
    );
    let mut table = Table::new();
    table.load_style(UTF8_FULL_CONDENSED).set_header([
        "scenario",
        "calls",
        "median",
        "p99",
        "calls/s",
        "× reference",
    ]);
    for r in report["latency"].as_array().into_iter().flatten() {
        table.add_row([
            r["scenario"].as_str().unwrap_or("").to_owned(),
            r["calls"].to_string(),
            fmt_us(r["median_us"].as_f64().unwrap_or(f64::NAN)),
            fmt_us(r["p99_us"].as_f64().unwrap_or(f64::NAN)),
            format!("{:.0}", r["calls_per_s"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.2}",
                r["ratio_to_reference"].as_f64().unwrap_or(f64::NAN)
            ),
        ]);
    }
    outln!(
        "per-call latency (reference: {})\n{table}\n",
        report["reference"].as_str().unwrap_or("?")
    );

    let mut loads = Table::new();
    loads.load_style(UTF8_FULL_CONDENSED).set_header([
        "guest",
        "size",
        "cold compile",
        "cache hit",
    ]);
    for l in report["loads"].as_array().into_iter().flatten() {
        loads.add_row([
            l["guest"].as_str().unwrap_or("").to_owned(),
            format!("{} KiB", l["bytes"].as_u64().unwrap_or(0) / 1024),
            format!(
                "{:.2} ms",
                l["cold_compile_ms"].as_f64().unwrap_or(f64::NAN)
            ),
            format!("{:.3} ms", l["cache_hit_ms"].as_f64().unwrap_or(f64::NAN)),
        ]);
    }
    outln!("loading a component\n{loads}\n");
    let t = &report["throughput"];
    outln!(
        "throughput ({}): 1 thread {:.0} calls/s · 2 threads {:.0} calls/s · ×{:.2}",
        t["guest"].as_str().unwrap_or("?"),
        t["one_thread_calls_per_s"].as_f64().unwrap_or(0.0),
        t["two_threads_calls_per_s"].as_f64().unwrap_or(0.0),
        t["ratio"].as_f64().unwrap_or(0.0),
    );
    outln!(
        "resident memory per live instance: {:.1} KiB\n",
        report["resident_bytes_per_instance"]
            .as_f64()
            .unwrap_or(0.0)
            / 1024.0
    );
    outln!("budget");
    for b in report["budget"].as_array().into_iter().flatten() {
        outln!(
            "  {} {:<60} {:.2} {}",
            if b["met"].as_bool() == Some(true) {
                "✓"
            } else {
                "✗"
            },
            b["target"].as_str().unwrap_or(""),
            b["value"].as_f64().unwrap_or(f64::NAN),
            b["unit"].as_str().unwrap_or(""),
        );
    }
}
