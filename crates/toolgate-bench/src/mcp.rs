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
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// How the bench's own server answers a message: `echo`, at once.
const ECHO_ANSWER: &str = r#"import json, sys
def answer(m):
    r = None
    if m.get("method") == "initialize":
        r = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "echo", "version": "0"}}
    elif m.get("method") == "tools/list":
        r = {"tools": [{"name": "echo", "description": "Echoes the message.", "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}}]}
    elif m.get("method") == "tools/call":
        r = {"content": [{"type": "text", "text": m["params"]["arguments"].get("message", "")}]}
    elif m.get("method") == "ping":
        r = {}
    if r is None or "id" not in m:
        return None
    return json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r})
"#;

/// The bench's own server on stdio.
const ECHO_STDIO: &str = r#"
for line in sys.stdin:
    a = answer(json.loads(line))
    if a is not None:
        sys.stdout.write(a + "\n")
        sys.stdout.flush()
"#;

/// The bench's own server over Streamable HTTP (JSON answers, kept-alive
/// connections); it prints its port first.
const ECHO_HTTP: &str = r#"
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    def do_POST(self):
        a = answer(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
        body = b"" if a is None else a.encode()
        self.send_response(200 if body else 202)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
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
    /// Over Streamable HTTP (`toolgate mcp --upstream`, the bench's own
    /// HTTP echo server) instead of stdio.
    pub http: bool,
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
            http: false,
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
    /// `stdio` or `HTTP`.
    pub transport: String,
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
    /// The goal for the added median, in microseconds: over stdio only
    /// (the issue asks what it is over HTTP, and sets no goal there).
    pub goal_us: Option<f64>,
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
            "{:<28} {:>12.1} {:>12.1}\n\nadded per call (median): {:.1} µs",
            "added by the proxy", self.added_median_us, self.added_p99_us, self.added_median_us,
        ));
        match self.goal_us {
            Some(goal) => out.push_str(&format!(
                " — goal ≤ {goal:.0} µs over {}: {}\n",
                self.transport,
                if self.added_median_us <= goal {
                    "met"
                } else {
                    "NOT met"
                }
            )),
            None => out.push_str(&format!(" over {} (no goal set)\n", self.transport)),
        }
        out
    }
}

/// How one client reaches its server.
enum Wire {
    /// The server's stdio (the server, or the proxy, is a child).
    Stdio {
        child: Child,
        stdin: ChildStdin,
        stdout: BufReader<ChildStdout>,
    },
    /// A kept-alive HTTP connection, with the proxy's secret if it is
    /// the proxy.
    Http {
        stream: BufReader<TcpStream>,
        host: String,
        secret: Option<String>,
        session: Option<String>,
    },
}

/// One client, on one server.
struct Line {
    wire: Wire,
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
        Line::begin(Wire::Stdio {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// A client of the Streamable HTTP server at `host` (`ip:port`).
    fn connect(host: &str, secret: Option<String>) -> Result<Self, BenchError> {
        let stream = TcpStream::connect(host)?;
        stream.set_nodelay(true)?;
        Line::begin(Wire::Http {
            stream: BufReader::new(stream),
            host: host.to_owned(),
            secret,
            session: None,
        })
    }

    fn begin(wire: Wire) -> Result<Self, BenchError> {
        let mut line = Line { wire, next_id: 0 };
        line.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "toolgate-bench", "version": "0"}}),
        )?;
        line.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}")?;
        Ok(line)
    }

    /// Sends one message; over HTTP, the body of the answer.
    fn send(&mut self, text: &str) -> Result<String, BenchError> {
        match &mut self.wire {
            Wire::Stdio { stdin, .. } => {
                stdin.write_all(text.as_bytes())?;
                stdin.write_all(b"\n")?;
                stdin.flush()?;
                Ok(String::new())
            }
            Wire::Http {
                stream,
                host,
                secret,
                session,
            } => http_post(stream, host, secret.as_deref(), session, text),
        }
    }

    fn request(&mut self, method: &str, params: Value) -> Result<Value, BenchError> {
        self.next_id += 1;
        let text =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
                .to_string();
        let answered = self.send(&text)?;
        let mine = |message: &Value| {
            message.get("id").and_then(Value::as_u64) == Some(self.next_id)
                && message.get("method").is_none()
        };
        let Wire::Stdio { stdout, .. } = &mut self.wire else {
            return serde_json::from_str::<Value>(&answered)
                .ok()
                .filter(mine)
                .ok_or_else(|| BenchError::Denied(format!("{method}: answered {answered}")));
        };
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line)? == 0 {
                return Err(BenchError::Denied(format!(
                    "the server closed while answering {method}"
                )));
            }
            if let Ok(message) = serde_json::from_str::<Value>(&line)
                && mine(&message)
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

/// One POST on a kept-alive connection; the answer's body (a JSON body:
/// the bench's server and the proxy in front of it answer so).
fn http_post(
    stream: &mut BufReader<TcpStream>,
    host: &str,
    secret: Option<&str>,
    session: &mut Option<String>,
    body: &str,
) -> Result<String, BenchError> {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(secret) = secret {
        request.push_str(&format!("Authorization: Bearer {secret}\r\n"));
    }
    if let Some(session) = session {
        request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.get_mut().write_all(request.as_bytes())?;
    let mut status = 0u16;
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if stream.read_line(&mut line)? == 0 {
            return Err(BenchError::Missing("an HTTP answer"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if status == 0 {
            status = header
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .ok_or(BenchError::Missing("an HTTP status"))?;
        } else if let Some((name, value)) = header.split_once(':') {
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap_or(0),
                "mcp-session-id" => *session = Some(value.trim().to_owned()),
                _ => {}
            }
        }
    }
    let mut answer = vec![0; length];
    std::io::Read::read_exact(stream, &mut answer)?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    if !(200..300).contains(&status) {
        return Err(BenchError::Denied(format!("HTTP {status}: {answer}")));
    }
    Ok(answer)
}

impl Drop for Line {
    fn drop(&mut self) {
        if let Wire::Stdio { child, .. } = &mut self.wire {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A process the bench started, killed when the bench ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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

/// Approves the tools of the server `at` names (`-- command…` or
/// `--upstream URL`) for the proxy, as `toolgate mcp trust` does.
fn approve(exe: &Path, scratch: &Path, at: &[String]) -> Result<(), BenchError> {
    let review = toolgate(exe, scratch)
        .args(["mcp", "trust", "--name", "bench"])
        .args(at)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    let shown = String::from_utf8_lossy(&review.stdout);
    let digest = shown
        .lines()
        .find_map(|l| l.strip_prefix("digest: "))
        .ok_or(BenchError::Missing("a digest from `toolgate mcp trust`"))?;
    let approved = toolgate(exe, scratch)
        .args(["mcp", "trust", "--name", "bench", "--yes", digest])
        .args(at)
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
    std::fs::create_dir_all(scratch.path().join("config"))?;
    std::fs::write(
        scratch.path().join("config/hooks.json"),
        json!({"schema": 1, "hooks": options.guard.as_ref().map_or_else(Vec::new, |guard| vec![
            json!({"name": "pre-guard", "use": guard, "matcher": "mcp__.*", "event": "pre_tool_use"}),
            json!({"name": "post-guard", "use": guard, "matcher": "mcp__.*", "event": "post_tool_use"}),
        ])})
        .to_string(),
    )?;
    let (mut direct, mut through, _running) = if options.http {
        http_sides(options, scratch.path(), progress)?
    } else {
        stdio_sides(options, scratch.path(), progress)?
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
    let transport = if options.http { "HTTP" } else { "stdio" };
    let direct = side(&format!("direct ({transport})"), direct_us);
    let through = side("through toolgate mcp", through_us);
    Ok(McpReport {
        server: if options.server.is_empty() {
            format!("the bench's Python echo server over {transport}")
        } else {
            options.server.join(" ")
        },
        transport: transport.to_owned(),
        guard: options.guard.clone(),
        calls: options.calls,
        added_median_us: through.median_us - direct.median_us,
        added_p99_us: through.p99_us - direct.p99_us,
        sides: [direct, through],
        goal_us: (!options.http).then_some(100.0),
    })
}

/// The direct client and the proxied one over stdio: each starts its own
/// copy of the server.
fn stdio_sides(
    options: &McpOptions,
    scratch: &Path,
    progress: fn(&str),
) -> Result<(Line, Line, Vec<Running>), BenchError> {
    let mut server = options.server.clone();
    if server.is_empty() {
        let script = scratch.join("echo_server.py");
        std::fs::write(&script, format!("{ECHO_ANSWER}{ECHO_STDIO}"))?;
        server = vec!["python3".into(), script.to_string_lossy().into_owned()];
    }
    progress("approving the server's tools for the proxy");
    let mut at = vec!["--".to_owned()];
    at.extend(server.iter().cloned());
    approve(&options.exe, scratch, &at)?;
    let direct = Line::start(server_command(&server))?;
    let mut cmd = toolgate(&options.exe, scratch);
    cmd.args(["mcp", "--name", "bench", "--"]).args(&server);
    Ok((direct, Line::start(cmd)?, Vec::new()))
}

/// The direct client and the proxied one over Streamable HTTP, to one copy
/// of the bench's HTTP echo server (`toolgate mcp --upstream` in front of
/// it for the second).
fn http_sides(
    options: &McpOptions,
    scratch: &Path,
    progress: fn(&str),
) -> Result<(Line, Line, Vec<Running>), BenchError> {
    let script = scratch.join("echo_http_server.py");
    std::fs::write(&script, format!("{ECHO_ANSWER}{ECHO_HTTP}"))?;
    let mut server = Command::new("python3")
        .arg(&script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()?;
    let port = first_line(server.stdout.take())?;
    let server = Running(server);
    let upstream = format!("http://127.0.0.1:{}/mcp", port.trim());
    progress("approving the server's tools for the proxy");
    approve(
        &options.exe,
        scratch,
        &["--upstream".to_owned(), upstream.clone()],
    )?;
    let mut proxy = toolgate(&options.exe, scratch)
        .args(["mcp", "--name", "bench", "--upstream", &upstream])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()?;
    let said = first_line(proxy.stderr.take())?;
    let proxy = Running(proxy);
    let host = said
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .ok_or(BenchError::Missing("the proxy's address on its stderr"))?
        .to_owned();
    let secret = std::fs::read_to_string(scratch.join("state/toolgate/http-token"))?;
    let direct = Line::connect(&format!("127.0.0.1:{}", port.trim()), None)?;
    let through = Line::connect(&host, Some(secret.trim().to_owned()))?;
    Ok((direct, through, vec![server, proxy]))
}

/// The first line a child writes on `out`.
fn first_line(out: Option<impl std::io::Read>) -> Result<String, BenchError> {
    let out = out.ok_or(BenchError::Missing("a child's output"))?;
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line)?;
    if line.is_empty() {
        return Err(BenchError::Missing("a first line from a child"));
    }
    Ok(line)
}
