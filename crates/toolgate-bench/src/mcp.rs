//! `toolgate bench --mcp`: what `toolgate mcp` adds to a `tools/call`,
//! against a direct connection to the same server, side by side.
//!
//! Two clients talk to two copies of one server: one directly over its
//! stdio, one through `toolgate mcp` with a standard guard (a Rust
//! component, run in wasmtime) on every MCP tool before and after the
//! call. Calls alternate between them, one each in turn, so the machine's
//! drift hits both alike; the report gives each one's median and p99 and
//! the difference of medians, which is the proxy's cost per call.
//!
//! The default server is a few lines of Python that answer `echo` at once,
//! so the proxy's cost is not lost in a large server's own; any other
//! server can be measured with the tool and arguments to call.

use crate::BenchError;
use crate::scenario::percentile;
use serde::Serialize;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// The bench's own server: `echo`, answered at once.
const ECHO_SERVER: &str = r#"import json, sys
for line in sys.stdin:
    m = json.loads(line)
    r = None
    if m.get("method") == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "0"}}
    elif m.get("method") == "tools/list":
        r = {"tools": [{"name": "echo", "description": "Echoes the message.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}]}
    elif m.get("method") == "tools/call":
        r = {"content": [{"type": "text", "text": m["params"]["arguments"].get("message", "")}]}
    elif m.get("method") == "ping":
        r = {}
    if r is not None and "id" in m:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
        sys.stdout.flush()
"#;

/// What to measure.
#[derive(Debug, Clone)]
pub struct McpOptions {
    /// The `toolgate` that runs the proxy.
    pub exe: PathBuf,
    /// The server's command; empty: the bench's own echo server.
    pub server: Vec<String>,
    /// The tool to call and its arguments.
    pub tool: String,
    /// The arguments of each call.
    pub arguments: Value,
    /// Calls measured on each side.
    pub calls: usize,
    /// Calls made on each side first, not measured.
    pub warmup: usize,
    /// The guard the proxy runs (a `use` of hooks.json); `None`: no hook,
    /// the proxy's own cost.
    pub guard: Option<String>,
}

impl McpOptions {
    /// 2000 calls of the echo server's `echo`, through `toolgate:paths`.
    pub fn new(exe: PathBuf) -> Self {
        McpOptions {
            exe,
            server: Vec::new(),
            tool: "echo".into(),
            arguments: json!({"message": "hello from the bench"}),
            calls: 2000,
            warmup: 100,
            guard: Some("toolgate:paths".into()),
        }
    }
}

/// One side's figures, in microseconds per call.
#[derive(Debug, Serialize)]
pub struct Side {
    /// What it is.
    pub name: String,
    /// Median.
    pub median_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Mean.
    pub mean_us: f64,
}

/// What a run measured.
#[derive(Debug, Serialize)]
pub struct McpReport {
    /// The server measured.
    pub server: String,
    /// The guard the proxy ran, if any.
    pub guard: Option<String>,
    /// Calls measured on each side.
    pub calls: usize,
    /// The direct connection, then through the proxy.
    pub sides: [Side; 2],
    /// The proxy's cost per call: the difference of medians.
    pub added_median_us: f64,
    /// The difference of the 99th percentiles.
    pub added_p99_us: f64,
    /// The goal for the added median over stdio, in microseconds.
    pub goal_us: f64,
}

impl McpReport {
    /// A readable table.
    pub fn render(&self) -> String {
        let mut out = format!(
            "toolgate mcp: {} calls each, alternating, to {} ({})\n\n",
            self.calls,
            self.server,
            self.guard.as_ref().map_or_else(
                || "no hook: the proxy alone".to_owned(),
                |g| format!("guard {g} before and after each call")
            )
        );
        out.push_str(&format!(
            "{:<28} {:>12} {:>12} {:>12}\n",
            "", "median µs", "p99 µs", "mean µs"
        ));
        for side in &self.sides {
            out.push_str(&format!(
                "{:<28} {:>12.1} {:>12.1} {:>12.1}\n",
                side.name, side.median_us, side.p99_us, side.mean_us
            ));
        }
        out.push_str(&format!(
            "{:<28} {:>12.1} {:>12.1}\n\nadded per call (median): {:.1} µs — goal ≤ {:.0} µs: {}\n",
            "added by the proxy",
            self.added_median_us,
            self.added_p99_us,
            self.added_median_us,
            self.goal_us,
            if self.added_median_us <= self.goal_us {
                "met"
            } else {
                "NOT met"
            }
        ));
        out
    }
}

/// One client on one server's stdio.
struct Line {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Line {
    fn start(mut cmd: Command) -> Result<Self, BenchError> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(BenchError::Missing("a server's stdio"));
        };
        let mut line = Line {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            next_id: 0,
        };
        line.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "toolgate-bench", "version": "0"}}),
        )?;
        line.stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")?;
        Ok(line)
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, BenchError> {
        self.next_id += 1;
        let mut text =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
                .to_string();
        text.push('\n');
        self.stdin.write_all(text.as_bytes())?;
        self.stdin.flush()?;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stdout.read_line(&mut line)? == 0 {
                return Err(BenchError::Denied(format!(
                    "the server closed while answering {method}"
                )));
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message.get("id").and_then(Value::as_u64) == Some(self.next_id)
                && message.get("method").is_none()
            {
                return Ok(message);
            }
        }
    }

    /// One call; its round trip in microseconds.
    fn call(&mut self, tool: &str, arguments: &Value) -> Result<f64, BenchError> {
        let started = Instant::now();
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        let took = started.elapsed().as_secs_f64() * 1e6;
        if answer.get("error").is_some() || answer["result"]["isError"] == true {
            return Err(BenchError::Denied(format!("{tool}: {answer}")));
        }
        Ok(took)
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn side(name: &str, mut samples: Vec<f64>) -> Side {
    samples.sort_by(f64::total_cmp);
    Side {
        name: name.into(),
        median_us: percentile(&samples, 0.5),
        p99_us: percentile(&samples, 0.99),
        mean_us: samples.iter().sum::<f64>() / samples.len().max(1) as f64,
    }
}

fn server_command(server: &[String]) -> Command {
    let mut cmd = Command::new(&server[0]);
    cmd.args(&server[1..]);
    cmd
}

/// Runs `exe` with the bench's config and state directories.
fn toolgate(exe: &Path, scratch: &Path) -> Command {
    let mut cmd = Command::new(exe);
    cmd.env("TOOLGATE_CONFIG_DIR", scratch.join("config"))
        .env("XDG_STATE_HOME", scratch.join("state"))
        .env("TOOLGATE_SERVER", "off")
        .env_remove("TOOLGATE_DECISION_LOG");
    cmd
}

/// Approves the server's tools for the proxy, as `toolgate mcp trust` does.
fn approve(exe: &Path, scratch: &Path, server: &[String]) -> Result<(), BenchError> {
    let review = toolgate(exe, scratch)
        .args(["mcp", "trust", "--name", "bench", "--"])
        .args(server)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    let shown = String::from_utf8_lossy(&review.stdout);
    let digest = shown
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .ok_or(BenchError::Missing("a digest from `toolgate mcp trust`"))?;
    let approved = toolgate(exe, scratch)
        .args(["mcp", "trust", "--name", "bench", "--yes", digest, "--"])
        .args(server)
        .stdin(Stdio::null())
        .output()?;
    if !approved.status.success() {
        return Err(BenchError::Denied(format!(
            "toolgate mcp trust: {}",
            String::from_utf8_lossy(&approved.stderr)
        )));
    }
    Ok(())
}

/// Measures the proxy against a direct connection, calls alternating.
///
/// # Errors
///
/// [`BenchError`] when a server cannot be started or a call does not go
/// through (a guard that refuses the bench's call measures nothing).
pub fn run_mcp(options: &McpOptions, progress: fn(&str)) -> Result<McpReport, BenchError> {
    let scratch = tempfile::tempdir()?;
    let mut server = options.server.clone();
    if server.is_empty() {
        let script = scratch.path().join("echo_server.py");
        std::fs::write(&script, ECHO_SERVER)?;
        server = vec!["python3".into(), script.to_string_lossy().into_owned()];
    }
    std::fs::create_dir_all(scratch.path().join("config"))?;
    std::fs::write(
        scratch.path().join("config/hooks.json"),
        json!({"schema": 1, "hooks": options.guard.as_ref().map_or_else(Vec::new, |guard| vec![
            json!({"name": "pre-guard", "use": guard, "matcher": "mcp__.*", "event": "pre_tool_use"}),
            json!({"name": "post-guard", "use": guard, "matcher": "mcp__.*", "event": "post_tool_use"}),
        ])})
        .to_string(),
    )?;
    progress("approving the server's tools for the proxy");
    approve(&options.exe, scratch.path(), &server)?;
    let mut direct = Line::start(server_command(&server))?;
    let mut through = {
        let mut cmd = toolgate(&options.exe, scratch.path());
        cmd.args(["mcp", "--name", "bench", "--"]).args(&server);
        Line::start(cmd)?
    };
    progress("warming up");
    for _ in 0..options.warmup {
        direct.call(&options.tool, &options.arguments)?;
        through.call(&options.tool, &options.arguments)?;
    }
    progress(&format!("measuring {} calls each", options.calls));
    let mut direct_us = Vec::with_capacity(options.calls);
    let mut through_us = Vec::with_capacity(options.calls);
    for i in 0..options.calls {
        // Which goes first alternates too.
        if i % 2 == 0 {
            direct_us.push(direct.call(&options.tool, &options.arguments)?);
            through_us.push(through.call(&options.tool, &options.arguments)?);
        } else {
            through_us.push(through.call(&options.tool, &options.arguments)?);
            direct_us.push(direct.call(&options.tool, &options.arguments)?);
        }
    }
    let direct = side("direct (stdio)", direct_us);
    let through = side("through toolgate mcp", through_us);
    Ok(McpReport {
        server: if options.server.is_empty() {
            "the bench's Python echo server".into()
        } else {
            options.server.join(" ")
        },
        guard: options.guard.clone(),
        calls: options.calls,
        added_median_us: through.median_us - direct.median_us,
        added_p99_us: through.p99_us - direct.p99_us,
        sides: [direct, through],
        goal_us: 100.0,
    })
}
