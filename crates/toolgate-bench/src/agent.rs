//! `toolgate bench --agent`: what a hook costs per tool call as the agent
//! sees it, measured inside the real Claude Code.
//!
//! # Why inside the agent
//!
//! The rest of the bench times toolgate's side: a fresh `toolgate
//! claude-code`, a socket request. What a user waits for is more: Claude
//! Code spawns the command (through its own machinery), writes the input,
//! reads the answer, and does it again after the tool. Only the agent can
//! show that, so this section runs the real Claude Code (both pinned
//! releases when installed, or the one `--claude` names) against a mock of
//! the Messages API on 127.0.0.1 that the bench starts itself (the live
//! tests' mock, `super::mock`).
//!
//! # What is timed
//!
//! The mock drives one session of many turns: each answer is a `tool_use`
//! of `Read` (one line of a tiny file, a different offset each call) until
//! the calls are done; then one probe (below) and an `end_turn`. Per call,
//! the time from the mock's last byte of the `tool_use` answer to the
//! arrival of the request that carries its `tool_result`: the model's
//! think time is zero, so this is the agent's tool turn, hooks included.
//! `Read` because it is the most trivial tool that spawns no process
//! (`Glob` and `Grep` run ripgrep, `Bash` a shell: their own spawn would
//! drown the hook's) and, at a different offset each call, is not answered
//! from Claude Code's cache of unchanged reads. Requests that carry no tools
//! (titles, quota checks, small-model calls) are answered and left out.
//! Hooks are installed the way `toolgate install claude-code` writes them
//! (PreToolUse, PostToolUse and PostToolUseFailure, matcher `*`), so a call
//! pays a hook before and after the tool, as a user's does.
//!
//! # The probe
//!
//! A row that measured a hook that never ran would look like the fastest
//! hook of all. So each session ends with one `Bash` call the guard denies
//! (`rm -rf` of a path that does not exist): the row counts the sessions in
//! which the model was shown the guard's reason. "no hook" must show none,
//! every hook row one per session.
//!
//! The guard is a WAT component built here, not a guest example: it denies
//! any call whose input holds `rm -rf` and allows the rest, the job the
//! Python hook does too. The guest examples decide on toolgate's generic
//! tool names (`rust-deny-force-push` guards `shell`), and a hook sees
//! Claude Code's own (`Bash`): under Claude Code they allow everything, and
//! the probe could not tell a guard that ran from one that did not.
//!
//! # The control row
//!
//! An HTTP hook costs Claude Code something whoever answers it (it builds
//! the input, POSTs it, parses the answer, for the hook before the tool and
//! the one after). So one row points the same http hook at a stub inside
//! the bench that does the guard's job and nothing else; the budget keeps
//! two lines per release: the HTTP hook against no hook (the issue's goal,
//! the agent's cost and toolgate's together) and against the stub
//! (toolgate's share, the part a change in toolgate can move).
//!
//! # Why interleaved
//!
//! As for every row of the bench: configurations alternate session by
//! session, so the machine's drift lands on all of them alike.

use super::report::{Machine, Target};
use super::scenario::{self, percentile};
use super::{BenchError, mock};
use serde::Serialize;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use toolgate::wasm::{self, WasmOptions};

/// What the agent section runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AgentOptions {
    /// Measured calls per configuration and release (after the warm-up).
    pub calls: usize,
    /// Sessions per configuration and release, interleaved.
    pub sessions: usize,
    /// Calls at the start of each session left out (the first spawns,
    /// the server's first compile).
    pub warmup: usize,
    /// Claude Code binaries to run; empty: the pinned releases installed
    /// under `agents` (tests/agents).
    pub claude: Vec<PathBuf>,
    /// tests/agents: `versions.env`, and `.cache/<VAR>-<version>/`.
    pub agents: PathBuf,
    /// The `toolgate` binary the hooks run.
    pub exe: PathBuf,
    /// Called with a line of progress for a person watching.
    pub progress: fn(&str),
    /// What the agent and the hooks get of the caller's environment:
    /// `PATH` and `TMPDIR` as the binary read them (the library reads no
    /// environment itself), nothing else.
    pub pass_env: Vec<(String, std::ffi::OsString)>,
}

impl AgentOptions {
    /// Defaults: 60 measured calls over 4 sessions, 3 warm-up calls each.
    pub fn new(exe: PathBuf) -> Self {
        AgentOptions {
            calls: 60,
            sessions: 4,
            warmup: 3,
            claude: Vec::new(),
            agents: PathBuf::from("tests/agents"),
            exe,
            progress: |_| {},
            pass_env: Vec::new(),
        }
    }

    /// A short run: 10 calls in one session, 2 warm-up.
    pub fn quick(mut self) -> Self {
        self.calls = 10;
        self.sessions = 1;
        self.warmup = 2;
        self
    }
}

/// What the agent section measured.
#[derive(Clone, Debug, Serialize)]
#[non_exhaustive]
pub struct AgentReport {
    /// The machine.
    pub machine: Machine,
    /// Load average before the sessions.
    pub load_before: String,
    /// Load average after them.
    pub load_after: String,
    /// Whether this `toolgate` is a debug build (its numbers are not the
    /// product's).
    pub debug_build: bool,
    /// The tool every measured call makes.
    pub tool: &'static str,
    /// The guard the hooks run.
    pub guard: String,
    /// Sessions per configuration and release.
    pub sessions: usize,
    /// Tool calls per session, warm-up included.
    pub calls_per_session: usize,
    /// Warm-up calls per session, left out.
    pub warmup: usize,
    /// One table per Claude Code release.
    pub releases: Vec<AgentRelease>,
    /// What was left out, and why.
    pub skipped: Vec<String>,
    /// Each target, met or not.
    pub budget: Vec<Target>,
}

/// One Claude Code release's rows.
#[derive(Clone, Debug, Serialize)]
pub struct AgentRelease {
    /// `claude --version`.
    pub claude: String,
    /// The binary.
    pub path: PathBuf,
    /// One row per configuration.
    pub rows: Vec<AgentRow>,
}

/// One configuration: its per-call cost as the agent sees it.
#[derive(Clone, Debug, Serialize)]
pub struct AgentRow {
    /// The configuration.
    pub config: String,
    /// Calls timed.
    pub calls: usize,
    /// Median, µs.
    pub median_us: f64,
    /// 99th percentile, µs.
    pub p99_us: f64,
    /// Median over the "no hook" row's, µs.
    pub over_no_hook_us: Option<f64>,
    /// Measured calls whose `tool_result` was an error (a hook that
    /// blocked a call it should have let through).
    pub errors: usize,
    /// Sessions run.
    pub sessions: usize,
    /// Sessions whose probe the guard denied (the model read its reason).
    pub probes_denied: usize,
    /// What the model was shown for the probe, the last session's (an
    /// excerpt).
    pub probe_answer: Option<String>,
    /// Evaluations `toolgate serve` answered during this row's sessions
    /// (its status's counter): a row "through the server" that the server
    /// never saw fell back to evaluating on its own.
    pub server_requests: u64,
    /// Why the row was not measured.
    pub skipped: Option<String>,
}

/// The configurations, in the order of the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hook {
    None,
    /// The control: an HTTP hook answered by a stub in the bench itself,
    /// so what Claude Code spends on any HTTP hook shows apart from what
    /// toolgate's server adds.
    HttpStub,
    Http,
    /// toolgate's Claude Code mod, seated outermost, with the http hooks
    /// beside it: what `toolgate install claude-code --mod` writes.
    Mod,
    /// toolgate's mod alone (no settings hook): the mod's own cost.
    ModAlone,
    Fresh,
    Served,
    Python,
}

const HOOKS: [Hook; 8] = [
    Hook::None,
    Hook::HttpStub,
    Hook::Http,
    Hook::Mod,
    Hook::ModAlone,
    Hook::Fresh,
    Hook::Served,
    Hook::Python,
];

/// The first column of the "no hook" row; the budget's line compares the
/// HTTP row with it.
const NO_HOOK: &str = "no hook";
const HTTP: &str = "HTTP hook → `toolgate serve`";
const HTTP_STUB: &str = "control: HTTP hook → a stub in the bench, same job";

impl Hook {
    fn name(self) -> &'static str {
        match self {
            Hook::None => NO_HOOK,
            Hook::HttpStub => HTTP_STUB,
            Hook::Http => HTTP,
            Hook::Mod => "toolgate's mod + its HTTP hooks (`install --mod`) → `toolgate serve`",
            Hook::ModAlone => "toolgate's mod alone → `toolgate serve`",
            Hook::Fresh => "`toolgate claude-code`, fresh process (no server)",
            Hook::Served => "`toolgate claude-code` via `toolgate serve` (socket)",
            Hook::Python => "Python command hook, same job",
        }
    }
}

/// The first Claude Code release that runs mods.
const MODS_FROM: &str = "2.1.287";

/// The reason the guard gives on the probe, in both the guest's and the
/// Python hook's words.
const DENIED: &str = "`rm -rf` is blocked by policy";

/// The probe: a recursive delete the guard denies (never run: without a
/// hook, `Bash` is not among the allowed tools, and print mode refuses it;
/// and its path does not exist).
const PROBE: &str = "rm -rf /nonexistent/toolgate-bench-probe";

/// The guard: a core module implementing the canonical ABI of `decide` by
/// hand (the request by pointer: its input's pointer and length at 20 and
/// 24; the result at 512: tag, decision, reason pointer and length). It
/// scans the input for `rm -rf` ("rm -" and "rf" as little-endian words)
/// and denies with the reason at 4096; otherwise the zeroed result is
/// `allow`. The allocator bumps from 8 KiB and grows memory as needed.
const GUARD_WAT: &str = r#"(module
  (memory (export "memory") 1)
  (global $bump (mut i32) (i32.const 8192))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (i32.and (i32.add (global.get $bump) (i32.const 7)) (i32.const -8)))
    (global.set $bump (i32.add (local.get $at) (local.get 3)))
    (if (i32.gt_u (global.get $bump) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow
        (i32.add (i32.div_u (global.get $bump) (i32.const 65536)) (i32.const 1))))))
    (local.get $at))
  (data (i32.const 4096) "`rm -rf` is blocked by policy: delete what you must by name, or ask the user.")
  (func (export "decide") (param $req i32) (result i32)
    (local $p i32) (local $end i32)
    (local.set $p (i32.load offset=20 (local.get $req)))
    (local.set $end (i32.add (local.get $p) (i32.load offset=24 (local.get $req))))
    (block $done
      (loop $scan
        (br_if $done (i32.gt_u (i32.add (local.get $p) (i32.const 6)) (local.get $end)))
        (if (i32.and
              (i32.eq (i32.load (local.get $p)) (i32.const 0x2d206d72))
              (i32.eq (i32.load16_u offset=4 (local.get $p)) (i32.const 0x6672)))
          (then
            (i32.store (i32.const 516) (i32.const 1))
            (i32.store (i32.const 520) (i32.const 4096))
            (i32.store (i32.const 524) (i32.const 77))
            (return (i32.const 512))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $scan)))
    (i32.const 512)))"#;

/// The Python command hook: Claude Code's input, the guard's job, Claude
/// Code's answer.
const PYTHON_HOOK: &str = r#"#!/usr/bin/env python3
import json, sys
req = json.load(sys.stdin)
if req.get("hook_event_name") == "PreToolUse" and "rm -rf" in json.dumps(req.get("tool_input")):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": "`rm -rf` is blocked by policy: delete what you must by name, or ask the user."}}))
"#;

/// Runs the agent section.
pub fn run_agent(options: &AgentOptions) -> Result<AgentReport, BenchError> {
    let progress = options.progress;
    let per_session = options.calls.div_ceil(options.sessions.max(1));
    let mut report = AgentReport {
        machine: scenario::machine(),
        load_before: scenario::loadavg(),
        load_after: String::new(),
        debug_build: cfg!(debug_assertions),
        tool: "Read",
        guard: String::new(),
        sessions: options.sessions.max(1),
        calls_per_session: options.warmup + per_session,
        warmup: options.warmup,
        releases: Vec::new(),
        skipped: Vec::new(),
        budget: Vec::new(),
    };
    let claudes = claudes(options, &mut report.skipped);
    if claudes.is_empty() {
        report.load_after = scenario::loadavg();
        return Ok(report);
    }
    let tmp = tempfile::tempdir()?;
    let root = tmp.path();
    let bench = Bench::prepare(options, root, &mut report)?;
    let mock = AgentMock::start()?;

    let mut samples: Vec<Vec<Sessions>> = claudes
        .iter()
        .map(|_| HOOKS.iter().map(|_| Sessions::default()).collect())
        .collect();
    for session in 0..report.sessions {
        for (r, (claude, version)) in claudes.iter().enumerate() {
            for (h, hook) in HOOKS.iter().enumerate() {
                if bench.skip(*hook, version).is_some() {
                    continue;
                }
                progress(&format!(
                    "session {}/{} · Claude Code {version} · {}…",
                    session + 1,
                    report.sessions,
                    hook.name()
                ));
                let before = bench.server_requests()?;
                let got = bench.session(claude, *hook, &mock, report.calls_per_session)?;
                samples[r][h].add(got, report.warmup);
                samples[r][h].server_requests += bench.server_requests()? - before;
            }
        }
    }
    report.load_after = scenario::loadavg();
    for ((path, version), rows) in claudes.into_iter().zip(samples) {
        let mut rows: Vec<AgentRow> = HOOKS
            .iter()
            .zip(rows)
            .map(|(hook, s)| s.row(*hook, bench.skip(*hook, &version)))
            .collect();
        let none = rows[0].median_us;
        for row in &mut rows {
            if row.skipped.is_none() {
                row.over_no_hook_us = Some(row.median_us - none);
            }
        }
        report.budget.push(http_target(&version, &rows));
        report.budget.push(http_share_target(&version, &rows));
        report.releases.push(AgentRelease {
            claude: version,
            path,
            rows,
        });
    }
    Ok(report)
}

/// The budget line: the HTTP hook's median within 1 ms of no hook's.
fn http_target(version: &str, rows: &[AgentRow]) -> Target {
    let target = format!("HTTP hook within 1 ms of no hook (median), Claude Code {version}");
    match rows.iter().find(|r| r.config == HTTP) {
        Some(AgentRow {
            over_no_hook_us: Some(over),
            ..
        }) => Target::new(target, over / 1e3, 1.0, "ms", true),
        _ => Target::not_measured(target),
    }
}

/// toolgate's share of an HTTP hook: the HTTP row's median within 1 ms of
/// the stub's (the same hook, answered by a server that does nothing else),
/// which is what a change in toolgate can move.
fn http_share_target(version: &str, rows: &[AgentRow]) -> Target {
    let target = format!(
        "HTTP hook via toolgate within 1 ms of an HTTP stub (median), Claude Code {version}"
    );
    let median = |name: &str| {
        rows.iter()
            .find(|r| r.config == name && r.skipped.is_none())
            .map(|r| r.median_us)
    };
    match (median(HTTP), median(HTTP_STUB)) {
        (Some(http), Some(stub)) => Target::new(target, (http - stub) / 1e3, 1.0, "ms", true),
        _ => Target::not_measured(target),
    }
}

/// The Claude Code binaries to run, each with its version; what is missing
/// goes to `skipped`.
fn claudes(options: &AgentOptions, skipped: &mut Vec<String>) -> Vec<(PathBuf, String)> {
    let paths = if options.claude.is_empty() {
        pinned_claudes(&options.agents, skipped)
    } else {
        options.claude.clone()
    };
    let mut found = Vec::new();
    for path in paths {
        // Sessions run in their own workspace: a relative path would not be
        // found from there.
        let Ok(path) = std::path::absolute(&path) else {
            continue;
        };
        let out = Command::new(&path)
            .arg("--version")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output();
        match out {
            Ok(out) if out.status.success() => {
                let text = String::from_utf8_lossy(&out.stdout);
                let version = text.split_whitespace().next().unwrap_or("?").to_owned();
                found.push((path, version));
            }
            _ => skipped.push(format!(
                "{}: does not run (`--version` failed): left out",
                path.display()
            )),
        }
    }
    if found.is_empty() {
        skipped.push(
            "no Claude Code installed: the agent section measured nothing \
             (install the pinned releases with tests/agents/install.sh, or name one with --claude PATH)"
                .into(),
        );
    }
    found
}

/// The pinned Claude Code releases (tests/agents/versions.env) installed
/// under `agents/.cache`, as the live tests find them (a cache elsewhere:
/// name the binaries with `--claude`).
fn pinned_claudes(agents: &Path, skipped: &mut Vec<String>) -> Vec<PathBuf> {
    let versions = std::fs::read_to_string(agents.join("versions.env")).unwrap_or_default();
    let cache = agents.join(".cache");
    let mut paths = Vec::new();
    for var in ["CLAUDE_CODE_VERSION", "CLAUDE_CODE_NEWEST_VERSION"] {
        let Some(version) = versions
            .lines()
            .find_map(|l| l.strip_prefix(var)?.strip_prefix('='))
        else {
            continue;
        };
        let bin = cache
            .join(format!("{var}-{}", version.trim()))
            .join("node_modules/.bin/claude");
        if bin.exists() {
            paths.push(bin);
        } else {
            skipped.push(format!(
                "Claude Code {} is not installed at {}",
                version.trim(),
                bin.display()
            ));
        }
    }
    paths
}

/// What every session shares: the folders, the hooks, the server.
struct Bench {
    root: PathBuf,
    exe: PathBuf,
    workspace: PathBuf,
    file: PathBuf,
    global: PathBuf,
    cache: PathBuf,
    python: PathBuf,
    server: scenario::Server,
    /// The HTTP hook's address and secret, when the server has it.
    http: Result<(String, String), String>,
    /// The control stub's URL.
    stub: String,
    /// [`AgentOptions::pass_env`].
    pass_env: Vec<(String, std::ffi::OsString)>,
}

impl Bench {
    fn prepare(
        options: &AgentOptions,
        root: &Path,
        report: &mut AgentReport,
    ) -> Result<Bench, BenchError> {
        use std::os::unix::fs::PermissionsExt;
        let progress = options.progress;
        let workspace = root.join("workspace");
        std::fs::create_dir_all(&workspace)?;
        let file = workspace.join("lines.txt");
        let lines: String = (1..=1000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&file, lines)?;

        let guard = root.join("guard.wasm");
        let component =
            wasm::component_from_wat(GUARD_WAT).map_err(|e| BenchError::Measure(Box::new(e)))?;
        std::fs::write(&guard, component)?;
        report.guard = "wasm: denies `rm -rf` (WAT)".into();
        let global = root.join("global");
        std::fs::create_dir_all(&global)?;
        std::fs::write(
            global.join("hooks.json"),
            json!({"schema": 1, "hooks": [{"name": "guard", "wasm": guard,
                                          "event": "pre_tool_use"}]})
            .to_string(),
        )?;
        let cache = root.join("cache");
        progress("warming the compile cache for the fresh `toolgate claude-code`…");
        let one_shot = WasmOptions::new()
            .cache_dir(&cache)
            .allocator(wasm::Allocator::OneShot);
        wasm::load_component(&guard, &one_shot).map_err(|source| BenchError::Load {
            guest: report.guard.clone(),
            source,
        })?;
        let python = root.join("hook.py");
        std::fs::write(&python, PYTHON_HOOK)?;
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755))?;

        progress("starting `toolgate serve`…");
        let has_http = serve_has_http(&options.exe);
        let state = root.join("state");
        let socket = root.join("serve/serve.sock");
        let mut serve = Command::new(&options.exe);
        serve.arg("serve").arg("--socket").arg(&socket);
        hermetic(&mut serve, &options.pass_env, root, "serve")
            .env("TOOLGATE_CONFIG_DIR", &global)
            .env("TOOLGATE_CACHE_DIR", &cache);
        let server = scenario::Server::spawn(serve, socket, has_http.then_some(&*state))?;
        let http = match &server.http {
            _ if !has_http => Err("toolgate serve has no --http in this build".to_owned()),
            Some((addr, token)) => Ok((format!("http://{addr}"), token.clone())),
            None => Err("`toolgate serve --http` printed no address".to_owned()),
        };
        if let Err(why) = &http {
            report.skipped.push(format!("{HTTP}: {why}"));
        }
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let stub = format!("http://{}/claude-code", listener.local_addr()?);
        mock::serve(listener, Arc::new(Stub));
        Ok(Bench {
            stub,
            pass_env: options.pass_env.clone(),
            root: root.to_owned(),
            exe: options.exe.clone(),
            workspace,
            file,
            global,
            cache,
            python,
            server,
            http,
        })
    }

    /// How many evaluations the server has answered (its status).
    fn server_requests(&self) -> Result<u64, BenchError> {
        use std::io::{BufRead, Write};
        use toolgate::serve::{Answer, Body, Op, Request, VERSION};
        let mut stream = std::os::unix::net::UnixStream::connect(&self.server.socket)?;
        stream.set_read_timeout(Some(Duration::from_secs(10)))?;
        let request = Request {
            id: json!(1),
            version: VERSION,
            op: Op::Status,
        };
        let mut line = serde_json::to_vec(&request)
            .map_err(|_| BenchError::Missing("the status request does not encode"))?;
        line.push(b'\n');
        stream.write_all(&line)?;
        let mut reader = std::io::BufReader::new(stream);
        let mut answer = String::new();
        while reader.read_line(&mut answer)? > 0 {
            match serde_json::from_str::<Answer>(&answer).map(|a| a.body) {
                Ok(Body::Status { status }) => return Ok(status.requests),
                Ok(Body::Ack { .. }) => answer.clear(),
                _ => break,
            }
        }
        Err(BenchError::Missing(
            "`toolgate serve` did not answer a status request",
        ))
    }

    /// Why `hook`'s row is not measured on Claude Code `version`, if it
    /// is not.
    fn skip(&self, hook: Hook, version: &str) -> Option<String> {
        let parts =
            |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
        match (hook, &self.http) {
            (Hook::Http | Hook::Mod | Hook::ModAlone, Err(why)) => Some(why.clone()),
            (Hook::Mod | Hook::ModAlone, _) if parts(version) < parts(MODS_FROM) => Some(format!(
                "Claude Code {version} runs no mods (they came in {MODS_FROM})"
            )),
            _ => None,
        }
    }

    /// Claude Code's user settings for `hook`.
    fn settings(&self, hook: Hook) -> Value {
        let seat = json!([toolgate::agent::claude_mod::MOD_ID]);
        let handler = match hook {
            Hook::None => return json!({}),
            Hook::ModAlone => return json!({"prependPlugins": seat}),
            Hook::Mod => {
                let mut settings = self.settings(Hook::Http);
                settings["prependPlugins"] = seat;
                return settings;
            }
            Hook::HttpStub => json!({"type": "http", "url": self.stub,
                                     "timeout": 30, "onFailure": "block"}),
            Hook::Http => {
                let url = self
                    .http
                    .as_ref()
                    .map(|(u, _)| u.clone())
                    .unwrap_or_default();
                json!({"type": "http", "url": format!("{url}/claude-code"),
                       "headers": {"Authorization": "Bearer $TOOLGATE_HTTP_TOKEN"},
                       "allowedEnvVars": ["TOOLGATE_HTTP_TOKEN"],
                       "timeout": 30, "onFailure": "block"})
            }
            Hook::Fresh | Hook::Served => {
                json!({"type": "command", "command": self.exe, "args": ["claude-code"],
                       "onFailure": "block"})
            }
            Hook::Python => {
                json!({"type": "command", "command": self.python, "args": [],
                       "onFailure": "block"})
            }
        };
        let group = json!([{"matcher": "*", "hooks": [handler]}]);
        json!({"hooks": {"PreToolUse": group, "PostToolUse": group,
                         "PostToolUseFailure": group}})
    }

    /// Claude Code's home under `dir` for `hook`: its user settings, and
    /// toolgate's mod where the row has it.
    fn home(&self, dir: &Path, hook: Hook) -> Result<PathBuf, BenchError> {
        let home = dir.join("home");
        std::fs::create_dir_all(home.join(".claude"))?;
        std::fs::write(
            home.join(".claude/settings.json"),
            self.settings(hook).to_string(),
        )?;
        if matches!(hook, Hook::Mod | Hook::ModAlone) {
            self.write_mod(&home)?;
        }
        Ok(home)
    }

    /// toolgate's mod in `home`, as `toolgate install claude-code --mod`
    /// writes it for the bench's server.
    fn write_mod(&self, home: &Path) -> Result<(), BenchError> {
        let url = self
            .http
            .as_ref()
            .map(|(u, _)| format!("{u}/claude-code"))
            .unwrap_or_default();
        let folder = home
            .join(".claude/skills")
            .join(toolgate::agent::claude_mod::MOD_NAME);
        let token = self.root.join("state/toolgate/http-token");
        for (name, text) in toolgate::agent::claude_mod::mod_files(
            env!("CARGO_PKG_VERSION"),
            &url,
            &token.display().to_string(),
        ) {
            let path = folder.join(name);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)?;
        }
        Ok(())
    }

    /// One `claude -p` session of `calls` calls (and the probe) with `hook`.
    fn session(
        &self,
        claude: &Path,
        hook: Hook,
        mock: &AgentMock,
        calls: usize,
    ) -> Result<Session, BenchError> {
        let dir = self.root.join(format!("claude-{hook:?}"));
        let home = self.home(&dir, hook)?;
        let mut cmd = Command::new(claude);
        cmd.args([
            "-p",
            "run the scripted tool calls",
            "--output-format",
            "json",
            "--allowedTools",
            "Read",
        ])
        .current_dir(&self.workspace);
        hermetic(&mut cmd, &self.pass_env, &dir, "claude")
            .env("HOME", &home)
            .env("TOOLGATE_CONFIG_DIR", &self.global)
            .env("TOOLGATE_CACHE_DIR", &self.cache)
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", mock.port),
            )
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1");
        match hook {
            Hook::Served => cmd.env("TOOLGATE_SOCKET", &self.server.socket),
            Hook::Http | Hook::Mod | Hook::ModAlone => cmd.env(
                "TOOLGATE_HTTP_TOKEN",
                self.http.as_ref().map(|(_, t)| t.as_str()).unwrap_or(""),
            ),
            _ => cmd.env("TOOLGATE_SERVER", "off"),
        };
        let out = dir.join("claude.out");
        let err = dir.join("claude.err");
        cmd.stdin(Stdio::null())
            .stdout(std::fs::File::create(&out)?)
            .stderr(std::fs::File::create(&err)?);
        mock.begin(Session::new(calls, self.file.clone()));
        let mut child = cmd.spawn()?;
        let deadline = Instant::now() + Duration::from_secs(120 + 2 * calls as u64);
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return Err(BenchError::Denied(format!(
                    "claude {} did not finish a session with {} in time",
                    claude.display(),
                    hook.name()
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let session = mock.end();
        if !status.success() {
            return Err(BenchError::Denied(format!(
                "claude {} exited with {status} with {}: {}",
                claude.display(),
                hook.name(),
                toolgate::text::excerpt(&std::fs::read_to_string(&err).unwrap_or_default(), 600)
            )));
        }
        Ok(session)
    }
}

/// Whether this `toolgate serve` takes `--http`.
fn serve_has_http(exe: &Path) -> bool {
    Command::new(exe)
        .args(["serve", "--help"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--http"))
}

/// `cmd` with an environment of its own under `dir/<name>-xdg`: `pass_env`
/// (the caller's `PATH` and `TMPDIR`) kept, nothing else of the user's (their config, cache, server,
/// agent settings).
pub(super) fn hermetic<'c>(
    cmd: &'c mut Command,
    pass_env: &[(String, std::ffi::OsString)],
    dir: &Path,
    name: &str,
) -> &'c mut Command {
    let xdg = dir.join(format!("{name}-xdg"));
    cmd.env_clear();
    cmd.envs(pass_env.iter().map(|(k, v)| (k, v)));
    for (key, sub) in [
        ("HOME", "home"),
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_CACHE_HOME", "cache"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
        ("XDG_RUNTIME_DIR", "runtime"),
    ] {
        let path = xdg.join(sub);
        let _ = std::fs::create_dir_all(&path);
        cmd.env(key, path);
    }
    cmd
}

/// One session's calls as the mock saw them.
#[derive(Default)]
struct Session {
    calls: usize,
    file: PathBuf,
    /// When each `tool_use` answer's last byte was written.
    sent: Vec<Option<Instant>>,
    /// Per call: its tool turn, µs, once its result arrived.
    took: Vec<Option<f64>>,
    errors: Vec<bool>,
    /// What the model was shown for the probe.
    probe_result: Option<String>,
}

impl Session {
    fn new(calls: usize, file: PathBuf) -> Self {
        Session {
            calls,
            file,
            sent: vec![None; calls],
            took: vec![None; calls],
            errors: vec![false; calls],
            probe_result: None,
        }
    }
}

/// Every session of one configuration and release.
#[derive(Default)]
struct Sessions {
    samples: Vec<f64>,
    errors: usize,
    sessions: usize,
    denied: usize,
    probe_answer: Option<String>,
    server_requests: u64,
}

impl Sessions {
    fn add(&mut self, session: Session, warmup: usize) {
        self.sessions += 1;
        for i in warmup..session.calls {
            if let Some(us) = session.took[i] {
                self.samples.push(us);
            }
            self.errors += usize::from(session.errors[i]);
        }
        if let Some(text) = session.probe_result {
            self.denied += usize::from(text.contains(DENIED));
            self.probe_answer = Some(toolgate::text::excerpt(&text, 300));
        }
    }

    fn row(mut self, hook: Hook, skipped: Option<String>) -> AgentRow {
        self.samples.sort_by(f64::total_cmp);
        AgentRow {
            config: hook.name().into(),
            calls: self.samples.len(),
            median_us: percentile(&self.samples, 0.5),
            p99_us: percentile(&self.samples, 0.99),
            over_no_hook_us: None,
            errors: self.errors,
            sessions: self.sessions,
            probes_denied: self.denied,
            probe_answer: self.probe_answer,
            server_requests: self.server_requests,
            skipped,
        }
    }
}

/// The mock Messages API: one session at a time.
struct AgentMock {
    port: u16,
    session: Arc<Mutex<Option<Session>>>,
}

impl AgentMock {
    fn start() -> Result<AgentMock, BenchError> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let session = Arc::new(Mutex::new(None));
        mock::serve(
            listener,
            Arc::new(Responder {
                session: session.clone(),
            }),
        );
        Ok(AgentMock { port, session })
    }

    fn begin(&self, session: Session) {
        *lock(&self.session) = Some(session);
    }

    fn end(&self) -> Session {
        lock(&self.session).take().unwrap_or_default()
    }
}

fn lock(session: &Mutex<Option<Session>>) -> std::sync::MutexGuard<'_, Option<Session>> {
    session.lock().unwrap_or_else(|e| e.into_inner())
}

struct Responder {
    session: Arc<Mutex<Option<Session>>>,
}

/// The control row's HTTP hook: the guard's job in Claude Code's answer
/// format, with nothing of toolgate behind it.
struct Stub;

impl mock::Respond for Stub {
    fn respond(&self, _path: &str, body: Value, _received: Instant) -> mock::Reply {
        let denies = body["hook_event_name"] == "PreToolUse"
            && body["tool_input"].to_string().contains("rm -rf");
        let answer = if denies {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                   "permissionDecision": "deny",
                   "permissionDecisionReason": STUB_REASON}})
        } else {
            json!({})
        };
        mock::Reply::new(("application/json", answer.to_string()))
    }
}

/// The stub's reason: the guard's words, so the probe counts it alike.
const STUB_REASON: &str =
    "`rm -rf` is blocked by policy: delete what you must by name, or ask the user.";

fn call_id(i: usize) -> String {
    format!("toolu_bench_{i:04}")
}

impl mock::Respond for Responder {
    fn respond(&self, path: &str, body: Value, received: Instant) -> mock::Reply {
        let done = json!([{"type": "text", "text": "done"}]);
        if !mock::is_messages_call(path) {
            return mock::Reply::new(mock::messages_other());
        }
        let mut guard = lock(&self.session);
        let Some(session) = guard.as_mut().filter(|_| mock::offers_tool(&body, "Read")) else {
            // A side request (a title, a small-model call): not timed.
            return mock::Reply::new(mock::messages_reply(&body, done, "end_turn"));
        };
        let results = mock::tool_results(&body);
        for (i, result) in results.iter().enumerate().take(session.calls) {
            if result["tool_use_id"] == call_id(i) && session.took[i].is_none() {
                if let Some(sent) = session.sent[i] {
                    session.took[i] = Some((received - sent).as_secs_f64() * 1e6);
                }
                session.errors[i] = result["is_error"] == true;
            }
        }
        let k = results.len();
        if k == session.calls + 1 && session.probe_result.is_none() {
            session.probe_result = results.last().map(mock::result_text);
        }
        let (content, stop) = if k < session.calls {
            let input = json!({"file_path": session.file, "offset": k + 1, "limit": 1});
            (
                json!([{"type": "tool_use", "id": call_id(k), "name": "Read", "input": input}]),
                "tool_use",
            )
        } else if k == session.calls {
            let input = json!({"command": PROBE, "description": "probe"});
            (
                json!([{"type": "tool_use", "id": "toolu_bench_probe", "name": "Bash",
                        "input": input}]),
                "tool_use",
            )
        } else {
            (done, "end_turn")
        };
        drop(guard);
        let mut reply = mock::Reply::new(mock::messages_reply(&body, content, stop));
        if stop == "tool_use" {
            let session = self.session.clone();
            reply.sent = Some(Box::new(move |at| {
                if let Some(s) = lock(&session).as_mut()
                    && let Some(slot) = s.sent.get_mut(k)
                {
                    *slot = Some(at);
                }
            }));
        }
        reply
    }
}
