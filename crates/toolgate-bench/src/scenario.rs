//! What is measured: the scenarios, how one call of each is made, and the
//! measurements that are not per-call latency (throughput, the machine).

use super::BenchError;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use toolgate::{BoxError, HookRequest, HookRunner, Interceptor, Request, Verdict};

/// How one call of a scenario is made.
pub(crate) enum Kind {
    /// Through a chain in this process.
    Chain(HookRunner, Request),
    /// `toolgate <command>` as a fresh process (`check`, or `claude-code`:
    /// the path an agent takes, one process per tool call).
    Process {
        exe: PathBuf,
        command: &'static str,
        workspace: PathBuf,
        cache: PathBuf,
        stdin: Vec<u8>,
        /// A running server's socket, for the rows through it; `None`:
        /// the child evaluates itself (`TOOLGATE_SERVER=off`).
        socket: Option<PathBuf>,
    },
    /// One request over a connection to a running `toolgate serve`.
    Socket(SocketClient),
    /// One Claude Code hook POSTed to a running `toolgate serve --http`.
    Http(HttpClient),
}

/// A `toolgate serve` the bench started; stopped on drop.
pub(crate) struct Server {
    child: std::process::Child,
    pub(crate) socket: PathBuf,
    /// Its HTTP listener (`ip:port`) and secret, when it answers HTTP.
    pub(crate) http: Option<(String, String)>,
}

impl Server {
    /// A server on a socket under `root`, also answering HTTP on a loopback
    /// port with a secret of its own (its state directory is under `root`)
    /// and `global` as the global config its HTTP requests load.
    pub(crate) fn start(
        exe: &std::path::Path,
        root: &std::path::Path,
        cache: &std::path::Path,
        global: &std::path::Path,
    ) -> Result<Server, BenchError> {
        let socket = root.join("serve/serve.sock");
        let mut cmd = Command::new(exe);
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .env("TOOLGATE_CACHE_DIR", cache)
            .env("TOOLGATE_CONFIG_DIR", global);
        let server = Server::spawn(cmd, socket, Some(&root.join("state")))?;
        if server.http.is_none() {
            return Err(BenchError::Missing(
                "`toolgate serve --http` said no address",
            ));
        }
        Ok(server)
    }

    /// Starts `cmd` (a `toolgate serve` on `socket`) and waits until it
    /// listens. With `state` (its `XDG_STATE_HOME`, made 0700) it also
    /// answers HTTP on a loopback port: its address and the secret it
    /// keeps there, once it has said where (`http` stays `None` if it
    /// never does: a build without `--http` exits, and the wait ends).
    pub(crate) fn spawn(
        mut cmd: Command,
        socket: PathBuf,
        state: Option<&std::path::Path>,
    ) -> Result<Server, BenchError> {
        use std::io::BufRead;
        use std::os::unix::fs::DirBuilderExt;
        if let Some(state) = state {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(state)?;
            cmd.args(["--http", "127.0.0.1:0"])
                .env("XDG_STATE_HOME", state);
        }
        // A bench writes no decision log (and its callers name none, as a
        // server requires of them).
        let mut child = cmd
            .env_remove("TOOLGATE_DECISION_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let (tx, rx) = std::sync::mpsc::channel();
        if let Some(stderr) = child.stderr.take() {
            // It says where it answers HTTP; the rest of what it says is
            // read and dropped (a full pipe would stop it).
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stderr)
                    .lines()
                    .map_while(Result::ok)
                {
                    if let Some(addr) = line.strip_prefix("toolgate serve: http on http://") {
                        let _ = tx.send(addr.to_owned());
                    }
                }
            });
        }
        let started = Instant::now();
        let mut server = Server {
            child,
            socket,
            http: None,
        };
        let addr = match state {
            Some(_) => rx.recv_timeout(Duration::from_secs(30)).ok(),
            None => None,
        };
        while std::os::unix::net::UnixStream::connect(&server.socket).is_err() {
            if started.elapsed() > Duration::from_secs(30) {
                return Err(BenchError::Missing(
                    "`toolgate serve` did not start listening",
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let (Some(addr), Some(state)) = (addr, state) {
            let token = std::fs::read_to_string(state.join("toolgate/http-token"))?
                .trim()
                .to_owned();
            server.http = Some((addr, token));
        }
        Ok(server)
    }
}

impl Server {
    /// Its process id.
    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A connection to a running server and the one request line it repeats.
pub(crate) struct SocketClient {
    stream: std::sync::Mutex<std::io::BufReader<std::os::unix::net::UnixStream>>,
    line: Vec<u8>,
}

impl SocketClient {
    pub(crate) fn connect(
        socket: &std::path::Path,
        workspace: &std::path::Path,
        request: &Request,
    ) -> Result<SocketClient, BenchError> {
        let stream = std::os::unix::net::UnixStream::connect(socket)?;
        let hook = toolgate::contract::HookRequest {
            event: request.event,
            hook: "g",
            tool: &request.tool,
            input: &request.input,
            result: request.result.as_ref(),
            session_id: None,
            turn_id: None,
            tool_call_id: None,
            cwd: None,
            config: None,
            state: Default::default(),
        };
        use toolgate::serve;
        // The typed request the CLI's client sends (a hand-written line
        // once went stale when the protocol gained its version, and the
        // bench waited forever for an answer the server had refused).
        let request = serve::Request {
            id: serde_json::json!(1),
            version: serve::VERSION,
            op: serve::Op::Evaluate(serve::Evaluate {
                mode: serve::Mode::Check,
                workspace: workspace.to_owned(),
                input: toolgate::wire::request_json(&hook).to_string(),
                event: None,
                tool: None,
                deadline_ms: None,
                // What the server compares with its own (it loads only
                // its own): the global config, as its canonical path.
                context: serve::Context {
                    global: Some(
                        workspace
                            .canonicalize()
                            .unwrap_or_else(|_| workspace.to_owned()),
                    ),
                    // None: the bench's servers and processes are started
                    // without one (a bench writes no decision log).
                    ..serve::Context::default()
                },
            }),
        };
        let mut line = serde_json::to_vec(&request)
            .map_err(|_| BenchError::Missing("the request does not encode"))?;
        line.push(b'\n');
        Ok(SocketClient {
            stream: std::sync::Mutex::new(std::io::BufReader::new(stream)),
            line,
        })
    }

    fn call(&self) -> Result<(), BenchError> {
        use std::io::BufRead;
        let mut stream = self
            .stream
            .lock()
            .map_err(|_| BenchError::Missing("the socket client is poisoned"))?;
        use toolgate::serve::{Answer, Body};
        stream.get_mut().write_all(&self.line)?;
        // An acknowledgement, then the answer; anything else ends the row
        // (a refusal is one line: waiting for a second would hang).
        let mut line = String::new();
        loop {
            line.clear();
            if stream.read_line(&mut line)? == 0 {
                return Err(BenchError::Missing("the server closed the connection"));
            }
            match serde_json::from_str::<Answer>(&line).map(|a| a.body) {
                Ok(Body::Ack { .. }) => continue,
                Ok(Body::Evaluated { exit: 0, .. }) => return Ok(()),
                _ => {
                    return Err(BenchError::Denied(format!(
                        "the server answered {}",
                        toolgate::text::excerpt(&line, 300)
                    )));
                }
            }
        }
    }
}

/// The floor under the socket request: a thread of this process that
/// answers every line on a Unix socket with an acknowledgement and an
/// allow, reading nothing of it, so that [`SocketClient`] talking to it
/// pays only the kernel's round trip and its own parsing. On a VM a
/// wake-up on the other core is most of a round trip (two of them per
/// request), which no server can avoid.
pub(crate) fn floor_server(dir: &std::path::Path) -> Result<std::path::PathBuf, BenchError> {
    use std::io::{BufRead, Write};
    use toolgate::serve::{Answer, Body};
    let path = dir.join("floor.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path)?;
    let mut answer = Vec::new();
    Answer {
        id: serde_json::json!(1),
        body: Body::ack(),
    }
    .write_line(&mut answer);
    Answer {
        id: serde_json::json!(1),
        body: Body::Evaluated {
            exit: 0,
            stdout: None,
            warning: None,
        },
    }
    .write_line(&mut answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let answer = answer.clone();
            std::thread::spawn(move || {
                let mut writer = match stream.try_clone() {
                    Ok(writer) => writer,
                    Err(_) => return,
                };
                let mut reader = std::io::BufReader::new(stream);
                let mut line = Vec::new();
                while reader.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                    line.clear();
                    if writer.write_all(&answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(path)
}

/// A kept-alive connection to `toolgate serve --http` and the one hook
/// request it repeats, as Claude Code sends it.
pub(crate) struct HttpClient {
    stream: std::sync::Mutex<std::io::BufReader<std::net::TcpStream>>,
    request: Vec<u8>,
}

impl HttpClient {
    pub(crate) fn connect(
        (addr, token): &(String, String),
        input: &[u8],
    ) -> Result<HttpClient, BenchError> {
        let stream = std::net::TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        let mut request = format!(
            "POST /claude-code HTTP/1.1\r\nAccept: application/json, text/plain, */*\r\n\
             Content-Type: application/json\r\nAuthorization: Bearer {token}\r\n\
             User-Agent: toolgate-bench\r\nContent-Length: {}\r\nHost: {addr}\r\n\
             Connection: keep-alive\r\n\r\n",
            input.len()
        )
        .into_bytes();
        request.extend_from_slice(input);
        Ok(HttpClient {
            stream: std::sync::Mutex::new(std::io::BufReader::new(stream)),
            request,
        })
    }

    fn call(&self) -> Result<(), BenchError> {
        use std::io::{BufRead, Read};
        let mut stream = self
            .stream
            .lock()
            .map_err(|_| BenchError::Missing("the HTTP client is poisoned"))?;
        stream.get_mut().write_all(&self.request)?;
        let mut status = String::new();
        let mut length = 0usize;
        let mut line = String::new();
        loop {
            line.clear();
            if stream.read_line(&mut line)? == 0 {
                return Err(BenchError::Missing("the server closed the connection"));
            }
            if status.is_empty() {
                status = line.trim().to_owned();
            } else if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            } else if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        stream.read_exact(&mut body)?;
        let body = String::from_utf8_lossy(&body);
        if !status.starts_with("HTTP/1.1 200") || body.contains("\"deny\"") {
            return Err(BenchError::Denied(format!(
                "the server answered {status}: {}",
                toolgate::text::excerpt(&body, 300)
            )));
        }
        Ok(())
    }
}

/// One row being measured.
pub(crate) struct Scenario {
    pub(crate) name: String,
    pub(crate) kind: Kind,
    pub(crate) batch: usize,
    pub(crate) samples: Vec<f64>,
}

/// The in-process row: allows unless the input asks for a denial.
pub(crate) struct Allow;

#[async_trait::async_trait]
impl Interceptor for Allow {
    async fn pre_tool_use(&self, request: &HookRequest<'_>) -> Result<Verdict, BoxError> {
        Ok(if request.input.get("deny").is_some() {
            Verdict::deny("no")
        } else {
            Verdict::allow()
        })
    }
}

pub(crate) const NATIVE_HOOK_C: &str = r#"#include <stdio.h>
int main(void) {
    char buf[65536];
    while (fread(buf, 1, sizeof buf, stdin) > 0) {}
    fputs("{\"decision\":\"allow\"}\n", stdout);
    return 0;
}
"#;

/// The floor of any hook process: it reads its input to the end (an agent
/// writes it whole before it reads the answer) and exits 0. The lean client
/// is measured against it, spawned the same way.
pub(crate) const DO_NOTHING_C: &str = r#"#include <unistd.h>
int main(void) {
    char buf[65536];
    while (read(0, buf, sizeof buf) > 0) {}
    return 0;
}
"#;

pub(crate) const BASH_HOOK: &str =
    "#!/usr/bin/env bash\nIFS= read -r -d '' _ || true\necho '{\"decision\":\"allow\"}'\n";

pub(crate) const PYTHON_HOOK: &str = "#!/usr/bin/env python3\nimport json, sys\njson.load(sys.stdin)\nprint(json.dumps({\"decision\": \"allow\"}))\n";

/// Makes one call of a scenario; a denial or a failed process is an error
/// (every bench hook allows).
pub(crate) async fn call(kind: &Kind) -> Result<(), BenchError> {
    match kind {
        Kind::Chain(runner, request) => {
            let outcome = runner.evaluate(request).await;
            if !outcome.may_proceed() {
                return Err(BenchError::Denied(format!("{:?}", outcome.runs)));
            }
        }
        Kind::Socket(client) => client.call()?,
        Kind::Http(client) => client.call()?,
        Kind::Process {
            exe,
            command,
            workspace,
            cache,
            stdin,
            socket,
        } => {
            let mut child = Command::new(exe);
            child
                .arg(command)
                .arg("--workspace")
                .arg(workspace)
                .env("TOOLGATE_CONFIG_DIR", workspace)
                .env("TOOLGATE_CACHE_DIR", cache)
                .env_remove("TOOLGATE_DECISION_LOG");
            match socket {
                Some(socket) => child
                    .env("TOOLGATE_SOCKET", socket)
                    .env_remove("TOOLGATE_SERVER"),
                None => child.env("TOOLGATE_SERVER", "off"),
            };
            let mut child = child
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()?;
            if let Some(mut input) = child.stdin.take() {
                input.write_all(stdin)?;
            }
            let out = child.wait_with_output()?;
            // `check` exits 2 on a deny; an agent command exits 0 and says
            // so in its answer.
            let denied =
                *command != "check" && String::from_utf8_lossy(&out.stdout).contains("\"deny\"");
            if out.status.code() != Some(0) || denied {
                return Err(BenchError::Denied(format!(
                    "toolgate {command} exited with {}{}: {}{}",
                    out.status,
                    if denied { " and denied" } else { "" },
                    toolgate::text::excerpt(&String::from_utf8_lossy(&out.stdout), 300),
                    toolgate::text::excerpt(&String::from_utf8_lossy(&out.stderr), 300),
                )));
            }
        }
    }
    Ok(())
}

/// A wire-v1 request as Claude Code hands it to `toolgate claude-code`.
pub(crate) fn agent_input(request: &Request) -> Vec<u8> {
    let mut input = serde_json::json!({
        "hook_event_name": match request.event {
            toolgate::Event::PreToolUse => "PreToolUse",
            _ => "PostToolUse",
        },
        "session_id": "bench",
        "cwd": request.cwd.as_deref().unwrap_or("/"),
        "tool_name": request.tool,
        "tool_input": request.input,
        "tool_use_id": "bench",
    });
    if let Some(result) = &request.result {
        input["tool_response"] = result.output.clone();
    }
    input.to_string().into_bytes()
}

/// Calls per second of `tasks` concurrent tasks over `window`.
pub(crate) async fn throughput(
    runner: &HookRunner,
    request: &Request,
    tasks: usize,
    window: Duration,
) -> f64 {
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

/// The `p` quantile of sorted samples (NaN for none).
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

pub(crate) fn machine() -> super::report::Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|m| m.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    super::report::Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned(),
        loadavg: loadavg(),
    }
}

pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::percentile;

    #[test]
    fn percentiles_of_sorted_samples() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&s, 0.5), 3.0);
        assert_eq!(percentile(&s, 0.99), 5.0);
        assert_eq!(percentile(&s, 0.0), 1.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}
