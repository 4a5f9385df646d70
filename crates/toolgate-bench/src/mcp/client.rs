//! One bench client on one MCP server: over its stdio, or a kept-alive
//! HTTP connection (Streamable HTTP), sending a request and timing the
//! round trip. A few lines of its own rather than an MCP SDK's client: the
//! bench times the wire, and an SDK's own tasks and buffering would be in
//! every sample.

use super::Revision;
use crate::BenchError;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// How one client reaches its server.
pub(super) enum Wire {
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
pub(super) struct Line {
    wire: Wire,
    next_id: u64,
    revision: Revision,
}

impl Line {
    pub(super) fn start(mut cmd: Command, revision: Revision) -> Result<Self, BenchError> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(BenchError::Missing("a server's stdio"));
        };
        Line::begin(
            Wire::Stdio {
                child,
                stdin,
                stdout: BufReader::new(stdout),
            },
            revision,
        )
    }

    /// A client of the Streamable HTTP server at `host` (`ip:port`).
    pub(super) fn connect(
        host: &str,
        secret: Option<String>,
        revision: Revision,
    ) -> Result<Self, BenchError> {
        let stream = TcpStream::connect(host)?;
        stream.set_nodelay(true)?;
        Line::begin(
            Wire::Http {
                stream: BufReader::new(stream),
                host: host.to_owned(),
                secret,
                session: None,
            },
            revision,
        )
    }

    fn begin(wire: Wire, revision: Revision) -> Result<Self, BenchError> {
        let mut line = Line {
            wire,
            next_id: 0,
            revision,
        };
        if revision == Revision::Stateless {
            // No handshake: each request names its revision.
            return Ok(line);
        }
        line.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "toolgate-bench", "version": "0"}}),
        )?;
        line.send(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
            &[],
        )?;
        Ok(line)
    }

    /// Sends one message (`routing`: a 2026-07-28 request's headers, over
    /// HTTP); over HTTP, the body of the answer.
    fn send(&mut self, text: &str, routing: &[(&str, &str)]) -> Result<String, BenchError> {
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
            } => http_post(stream, host, secret.as_deref(), session, text, routing),
        }
    }

    fn request(&mut self, method: &str, mut params: Value) -> Result<Value, BenchError> {
        self.next_id += 1;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut routing = Vec::new();
        if self.revision == Revision::Stateless {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": Revision::Stateless.name(),
                "io.modelcontextprotocol/clientCapabilities": {},
            });
            routing.push(("Mcp-Protocol-Version", Revision::Stateless.name()));
            routing.push(("Mcp-Method", method));
            if let Some(name) = &name {
                routing.push(("Mcp-Name", name.as_str()));
            }
        }
        let text =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
                .to_string();
        let answered = self.send(&text, &routing)?;
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
    pub(super) fn call(&mut self, tool: &str, arguments: &Value) -> Result<f64, BenchError> {
        let started = Instant::now();
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}))?;
        let took = started.elapsed().as_secs_f64() * 1e6;
        if answer.get("error").is_some() || answer["result"]["isError"] == true {
            return Err(BenchError::Denied(format!("{tool}: {answer}")));
        }
        // A 2026-07-28 client cannot read a result without its kind.
        if self.revision == Revision::Stateless && answer["result"]["resultType"] != "complete" {
            return Err(BenchError::Denied(format!(
                "{tool}: a 2026-07-28 result without `resultType: complete`: {answer}"
            )));
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
    routing: &[(&str, &str)],
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
    for (name, value) in routing {
        request.push_str(&format!("{name}: {value}\r\n"));
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
