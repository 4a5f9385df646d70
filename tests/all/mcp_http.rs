//! `toolgate mcp --upstream <url>`: the proxy as a Streamable HTTP server in
//! front of the real server-everything run in its `streamableHttp` mode,
//! spoken to over real TCP (a scripted client here, the MCP Inspector's CLI
//! and Claude Code in the live tests), plus a small Python server for the
//! faults a reference server does not commit.

use crate::mcp::{everything, in_fixture, judged_fixture, state, text_of, trust_at};
use crate::serve_http::{Reply, raw};
use crate::support::*;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A process killed when the test ends.
pub(crate) struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child().kill();
        let _ = self.child().wait();
    }
}

impl Running {
    fn child(&mut self) -> &mut Child {
        &mut self.0
    }
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// server-everything over Streamable HTTP: the process, and its MCP URL.
pub(crate) fn everything_http() -> (Running, String) {
    let port = free_port();
    let mut cmd = Command::new(everything());
    cmd.arg("streamableHttp").env("PORT", port.to_string());
    serving(cmd, port)
}

/// `cmd` started quietly, once something listens on `port`; its MCP URL.
pub(crate) fn serving(mut cmd: Command, port: u16) -> (Running, String) {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let running = Running(child);
    wait_for_port(port);
    (running, format!("http://127.0.0.1:{port}/mcp"))
}

/// `toolgate mcp --name NAME --upstream URL` in the fixture: the process,
/// the `ip:port` it listens on, and the secret a client must present.
pub(crate) fn proxy_http(fx: &Fixture, name: &str, upstream: &str) -> (Running, String, String) {
    let mut cmd = in_fixture(fx);
    cmd.args(["mcp", "--name", name, "--upstream", upstream]);
    proxy_http_with(fx, cmd)
}

/// A scripted Streamable HTTP client: one request per connection, the
/// session id kept from `initialize`.
pub(crate) struct Client {
    addr: String,
    token: String,
    pub(crate) session: Option<String>,
    version: Option<String>,
}

/// The messages a reply carries: its JSON body, or its events' data.
fn messages(reply: &Reply) -> Vec<Value> {
    if reply.headers.contains("content-type: text/event-stream") {
        reply
            .body
            .split("\n\n")
            .filter_map(|event| {
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                let data = data.join("\n");
                (!data.trim().is_empty()).then(|| {
                    serde_json::from_str(&data).unwrap_or_else(|e| panic!("{e}: {data:?}"))
                })
            })
            .collect()
    } else if reply.status == 200 && !reply.body.trim().is_empty() {
        vec![reply.json()]
    } else {
        Vec::new()
    }
}

/// `body` with HTTP/1.1 chunked framing taken off.
fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    out
}

impl Client {
    pub(crate) fn new(addr: &str, token: &str) -> Self {
        Client {
            addr: addr.to_owned(),
            token: token.to_owned(),
            session: None,
            version: None,
        }
    }

    /// One request with the client's headers, `extra` added or replacing
    /// them (a `None` value removes one).
    pub(crate) fn send(&self, method: &str, body: &str, extra: &[(&str, Option<String>)]) -> Reply {
        let mut headers: Vec<(String, Option<String>)> = vec![
            ("Host".into(), Some(self.addr.clone())),
            (
                "Authorization".into(),
                Some(format!("Bearer {}", self.token)),
            ),
            (
                "Accept".into(),
                Some("application/json, text/event-stream".into()),
            ),
            ("Content-Type".into(), Some("application/json".into())),
            ("Content-Length".into(), Some(body.len().to_string())),
            ("Connection".into(), Some("close".into())),
        ];
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".into(), Some(session.clone())));
        }
        if let Some(version) = &self.version {
            headers.push(("Mcp-Protocol-Version".into(), Some(version.clone())));
        }
        for (name, value) in extra {
            headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
            headers.push(((*name).to_owned(), value.clone()));
        }
        let mut text = format!("{method} /mcp HTTP/1.1\r\n");
        for (name, value) in headers {
            if let Some(value) = value {
                text.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        text.push_str("\r\n");
        text.push_str(body);
        let mut reply = raw(&self.addr, text.as_bytes());
        if reply.headers.contains("transfer-encoding: chunked") {
            reply.body = dechunk(&reply.body);
        }
        reply
    }

    /// POSTs `message`: the reply, and the messages it carried.
    pub(crate) fn post(&mut self, message: &Value) -> (Reply, Vec<Value>) {
        let reply = self.send("POST", &message.to_string(), &[]);
        let carried = messages(&reply);
        (reply, carried)
    }

    /// The answer to request `id` (`method`, `params`).
    pub(crate) fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        let (reply, carried) =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        carried
            .into_iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| {
                panic!(
                    "no answer to {method} {id}: {} {}",
                    reply.status, reply.body
                )
            })
    }

    pub(crate) fn call(&mut self, id: i64, tool: &str, arguments: Value) -> Value {
        self.request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )["result"]
            .clone()
    }

    /// `initialize`, then `initialized`; the session the server named is
    /// kept.
    pub(crate) fn initialize(&mut self) -> Value {
        let (reply, carried) =
            self.post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18",
                       "capabilities": {"roots": {"listChanged": true}},
                       "clientInfo": {"name": "toolgate-tests", "version": "1"}}}));
        self.session = reply
            .headers
            .lines()
            .find_map(|l| l.strip_prefix("mcp-session-id: "))
            .map(|s| s.trim().to_owned());
        let answer = carried
            .into_iter()
            .find(|m| m["id"] == 0)
            .unwrap_or_else(|| panic!("no answer to initialize: {} {}", reply.status, reply.body));
        self.version = answer["result"]["protocolVersion"]
            .as_str()
            .map(str::to_owned);
        let (done, _) =
            self.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(done.status, 202, "{}", done.body);
        answer
    }

    fn tool_names(&mut self, id: i64) -> Vec<String> {
        self.request(id, "tools/list", json!({}))["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// server-everything over HTTP, approved, behind a proxy judged by
/// [`judged_fixture`]'s chain; a client of the proxy, initialized.
fn judged_everything(fx: &Fixture) -> (Running, Running, Client) {
    let (server, url) = everything_http();
    trust_at(fx, "everything", &["--upstream", &url], true);
    let (proxy, addr, token) = proxy_http(fx, "everything", &url);
    let mut client = Client::new(&addr, &token);
    client.initialize();
    (server, proxy, client)
}

#[test]
fn over_http_each_verdict_of_the_chain_reaches_the_client() {
    let fx = judged_fixture();
    let (_server, _proxy, mut client) = judged_everything(&fx);
    let denied = client.call(1, "get-env", json!({}));
    assert_eq!(denied["isError"], true, "{denied}");
    assert!(
        text_of(&denied).contains("the environment holds secrets"),
        "{denied}"
    );
    let modified = client.call(2, "echo", json!({"message": "rewrite me"}));
    assert_eq!(text_of(&modified), "Echo: rewritten by toolgate");
    let replaced = client.call(3, "get-sum", json!({"a": 1, "b": 2}));
    assert_eq!(text_of(&replaced), "42, said toolgate");
    let rewritten = client.call(4, "echo", json!({"message": "my SECRET"}));
    assert_eq!(text_of(&rewritten), "Echo: my [redacted]");
    let plain = client.call(5, "echo", json!({"message": "hello"}));
    assert_eq!(text_of(&plain), "Echo: hello");
}

#[test]
fn over_http_what_the_proxy_does_not_judge_is_the_servers_own_answer() {
    let fx = Fixture::new();
    let (_server, url) = everything_http();
    trust_at(&fx, "everything", &["--upstream", &url], true);
    let (_proxy, addr, token) = proxy_http(&fx, "everything", &url);
    let mut through = Client::new(&addr, &token);
    through.initialize();
    // The same server, spoken to directly (it wants no secret).
    let direct_addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut direct = Client::new(&direct_addr, "none");
    direct.initialize();
    for (id, method, params) in [
        (10, "ping", json!({})),
        (11, "resources/list", json!({})),
        (12, "resources/templates/list", json!({})),
        (13, "prompts/list", json!({})),
        (
            14,
            "prompts/get",
            json!({"name": "simple-prompt", "arguments": {}}),
        ),
        (
            15,
            "resources/read",
            json!({"uri": "demo://resource/static/document/architecture.md"}),
        ),
        (16, "no/such-method", json!({"x": 1})),
    ] {
        let got = through.request(id, method, params.clone());
        let want = direct.request(id, method, params);
        assert_eq!(got, want, "{method}");
    }
    // The tool list as approved is the server's list.
    assert_eq!(through.tool_names(20), direct.tool_names(20));
}

#[test]
fn over_http_a_server_never_reviewed_shows_no_tools_and_a_call_to_one_is_refused() {
    let fx = Fixture::new();
    let (_server, url) = everything_http();
    let (_proxy, addr, token) = proxy_http(&fx, "everything", &url);
    let mut client = Client::new(&addr, &token);
    client.initialize();
    assert_eq!(client.tool_names(1), Vec::<String>::new());
    let refused = client.call(2, "echo", json!({"message": "hi"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text_of(&refused).contains("toolgate mcp trust --name everything --upstream"),
        "{refused}"
    );
}

#[test]
fn over_http_a_request_without_the_secret_from_a_page_or_to_another_host_is_refused() {
    let fx = Fixture::new();
    let (_server, url) = everything_http();
    let (_proxy, addr, token) = proxy_http(&fx, "everything", &url);
    let client = Client::new(&addr, &token);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let port = addr.rsplit(':').next().unwrap();
    for (why, extra, status) in [
        ("no secret", vec![("Authorization", None)], 401),
        (
            "a wrong secret",
            vec![("Authorization", Some("Bearer 0000".to_owned()))],
            401,
        ),
        (
            "a browser page",
            vec![("Origin", Some("http://evil.example".to_owned()))],
            403,
        ),
        (
            "a rebound name",
            vec![("Host", Some(format!("localhost:{port}")))],
            421,
        ),
    ] {
        let reply = client.send("POST", &init, &extra);
        assert_eq!(reply.status, status, "{why}: {}", reply.body);
        assert!(!reply.body.contains("jsonrpc"), "{why}: {}", reply.body);
    }
    let ok = client.send("POST", &init, &[]);
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[test]
fn over_http_a_server_that_cannot_be_reached_is_an_error_answer_not_a_pass() {
    let fx = judged_fixture();
    let url = format!("http://127.0.0.1:{}/mcp", free_port());
    let (_proxy, addr, token) = proxy_http(&fx, "everything", &url);
    let mut client = Client::new(&addr, &token);
    let (_, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": "hi"}}}));
    // Never reviewed: refused before the server is even asked.
    assert_eq!(carried[0]["result"]["isError"], true, "{carried:?}");
    let (reply, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(carried[0]["id"], 8);
    assert!(
        carried[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be reached"),
        "{carried:?}"
    );
}

/// A key in the `--upstream` URL (`?api_key=…`, `user:key@`) was echoed in
/// what the client and the model read — a refusal, a 401, a server that
/// cannot be reached, the command that reviews the server — where header
/// values were already masked. Every such message shows the URL masked.
#[test]
fn over_http_a_secret_in_the_upstream_url_is_never_shown_to_the_client() {
    const KEY: &str = "SECRETKEY1";
    let leaks = |what: &str, text: &str| {
        assert!(!text.contains(KEY), "{what} shows the key: {text}");
    };
    // Cannot be reached.
    let fx = judged_fixture();
    let url = format!("http://127.0.0.1:{}/mcp?api_key={KEY}", free_port());
    let (_proxy, addr, token) = proxy_http(&fx, "everything", &url);
    let mut client = Client::new(&addr, &token);
    let (_, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    let said = carried[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("cannot be reached") && said.contains("api_key=<value>"),
        "{carried:?}"
    );
    leaks("an unreachable server's error", &carried[0].to_string());
    // Refused (401) and never reviewed (the review command).
    for (behaviour, url_of) in [
        (
            "keyed",
            (|u: &str| format!("{u}?api_key={KEY}")) as fn(&str) -> String,
        ),
        ("plain", |u: &str| format!("{u}?api_key={KEY}")),
        ("plain", |u: &str| {
            u.replacen("http://", &format!("http://me:{KEY}@"), 1)
        }),
    ] {
        let fx = Fixture::new();
        let (_server, url) = rogue_http(&fx, behaviour);
        let (_proxy, addr, token) = proxy_http(&fx, "rogue", &url_of(&url));
        let mut client = Client::new(&addr, &token);
        let (reply, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
        leaks(behaviour, &reply.body);
        if behaviour == "keyed" {
            assert_eq!(reply.status, 401, "{}", reply.body);
            assert!(reply.body.contains("answered 401"), "{}", reply.body);
            continue;
        }
        assert!(carried[0].get("result").is_some(), "{carried:?}");
        let (reply, _) = client.post(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "t", "arguments": {}}}));
        assert!(
            reply
                .body
                .contains("toolgate mcp trust --name rogue --upstream"),
            "{}",
            reply.body
        );
        leaks("the review command", &reply.body);
    }
    // `mcp trust` of a server that cannot be reached.
    let out = in_fixture(&fx)
        .args(["mcp", "trust", "--name", "x", "--upstream", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    leaks(
        "mcp trust",
        &format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout)),
    );
}

/// Another local user listening on a loopback upstream's port (a server
/// that is not running) received the `--upstream-header` token from `mcp
/// trust` and from the proxy, and answered as the server: the upstream
/// listener's owner was never checked. Now nothing is sent to a listener
/// that is not this user's, and both say who listens.
#[test]
fn over_http_nothing_is_sent_to_an_upstream_port_another_user_squats() {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test plays another user (setpriv): run the suite as root, as CI does"
    );
    const TOKEN: &str = "Bearer SQUATTED-TOKEN-1";
    let port = free_port();
    let seen = tempfile::tempdir().unwrap();
    let log = seen.path().join("received");
    let mut squatter = crate::doors::squatter(
        "127.0.0.1",
        port,
        &log,
        r#"{"jsonrpc": "2.0", "id": 1, "result": {}}"#,
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    let header = format!("Authorization: {TOKEN}");
    let fx = Fixture::new();
    let trust = in_fixture(&fx)
        .args([
            "mcp",
            "trust",
            "--name",
            "x",
            "--upstream",
            &url,
            "--upstream-header",
            &header,
        ])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut cmd = in_fixture(&fx);
    cmd.args([
        "mcp",
        "--name",
        "x",
        "--upstream",
        &url,
        "--upstream-header",
        &header,
    ]);
    let (proxy, addr, token) = proxy_http_with(&fx, cmd);
    let mut client = Client::new(&addr, &token);
    let (_, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}));
    drop(proxy);
    let _ = squatter.kill();
    let _ = squatter.wait();
    let received = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(received.is_empty(), "the squatter received: {received}");
    assert!(!trust.status.success());
    assert!(
        stderr(&trust).contains("runs as uid 65534, not as this user"),
        "{}",
        stderr(&trust)
    );
    let refused = carried[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(refused.contains("runs as uid 65534"), "{carried:?}");
}

/// A server that named its session anew in a later answer (which a client
/// then used) got a fresh judge: a tool a `list_tools` hook hid could be
/// called, and every hook's session state was forgotten. A session is the
/// one the server named at `initialize`: a later name is not passed on,
/// and a request under a name no `initialize` gave is answered 404 with
/// nothing sent to the server.
#[test]
fn over_http_a_server_that_renames_its_session_gets_no_fresh_judge() {
    let fx = Fixture::new();
    let mut hide = crate::mcp::policy(
        &fx,
        "hide",
        "list_tools",
        r#"return {"decision": "deny", "reason": "hidden"}"#,
    );
    hide["matcher"] = json!("mcp__rogue__t");
    fx.global_hooks(json!([hide]));
    let (_server, url) = rogue_http(&fx, "rename");
    trust_at(&fx, "rogue", &["--upstream", &url], true);
    let (_proxy, addr, token) = proxy_http(&fx, "rogue", &url);
    let mut client = Client::new(&addr, &token);
    client.initialize();
    assert_eq!(client.session.as_deref(), Some("first"));
    let (reply, carried) = client.post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
    assert_eq!(carried[0]["result"]["tools"], json!([]), "{carried:?}");
    assert!(
        !reply.headers.contains("mcp-session-id: second"),
        "the new name was passed on: {}",
        reply.headers
    );
    let refused = client.call(2, "t", json!({}));
    assert_eq!(refused["isError"], true, "{refused}");
    // The client takes the server's new name anyway (or makes one up).
    for name in ["second", "made-up"] {
        client.session = Some(name.to_owned());
        let (reply, carried) = client
            .post(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "t", "arguments": {}}}));
        assert_eq!(reply.status, 404, "{name}: {} {carried:?}", reply.body);
        assert!(!reply.body.contains("rename ok"), "{}", reply.body);
        assert!(
            reply.body.contains("does not know this MCP session"),
            "{}",
            reply.body
        );
    }
}

/// A Python Streamable HTTP server that answers `initialize` and
/// `tools/list` properly and misbehaves as `behaviour` says when a tool is
/// called; its URL.
fn rogue_http(fx: &Fixture, behaviour: &str) -> (Running, String) {
    let port = free_port();
    let script = fx.global_script(
        "rogue_http.py",
        &format!(
            r#"#!/usr/bin/env python3
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
BEHAVIOUR = {behaviour:?}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def answer(self, status, ctype, body, sid=None):
        self.send_response(status)
        if BEHAVIOUR == "rename":
            self.send_header("Mcp-Session-Id", sid or "second")
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):
        m = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if BEHAVIOUR == "keyed" and (self.headers.get_all("Authorization") != ["Bearer s3cret"] or self.headers.get("X-Api-Key") != "k1"):
            return self.answer(401, "application/json", json.dumps({{"jsonrpc": "2.0", "id": m.get("id"), "result": {{"content": [{{"type": "text", "text": "UNJUDGED"}}]}}}}).encode())
        method, mid = m.get("method"), m.get("id")
        if mid is None:
            return self.answer(202, "text/plain", b"")
        if method == "initialize":
            r = {{"protocolVersion": "2025-06-18", "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "rogue", "version": "0"}}}}
            if BEHAVIOUR == "rename":
                return self.answer(200, "application/json", json.dumps({{"jsonrpc": "2.0", "id": mid, "result": r}}).encode(), "first")
        elif method == "tools/list":
            r = {{"tools": [{{"name": "t", "inputSchema": {{"type": "object"}}}}]}}
        elif BEHAVIOUR in ("keyed", "rename"):
            r = {{"content": [{{"type": "text", "text": BEHAVIOUR + " ok"}}]}}
        else:
            unjudged = json.dumps({{"jsonrpc": "2.0", "id": mid, "result": {{"content": [{{"type": "text", "text": "UNJUDGED"}}]}}}}).encode()
            if BEHAVIOUR == "status":
                return self.answer(500, "application/json", unjudged)
            if BEHAVIOUR == "garbage":
                return self.answer(200, "text/event-stream", b"event: message\ndata: not json {{\n\n" + b"data: " + unjudged + b"\n\n")
            if BEHAVIOUR == "foreign-event":
                return self.answer(200, "text/event-stream", b"event: other\ndata: " + unjudged + b"\n\n")
            if BEHAVIOUR == "wrong-id":
                return self.answer(200, "application/json", unjudged.replace(b'"id": ' + str(mid).encode(), b'"id": 999'))
            if BEHAVIOUR == "oversized":
                big = json.dumps({{"jsonrpc": "2.0", "id": mid, "result": {{"content": [{{"type": "text", "text": "UNJUDGED" * 1000}}]}}}}).encode()
                return self.answer(200, "text/event-stream", b"data: " + big + b"\n\n")
            if BEHAVIOUR == "text":
                return self.answer(200, "text/plain", unjudged)
        self.answer(200, "application/json", json.dumps({{"jsonrpc": "2.0", "id": mid, "result": r}}).encode())
ThreadingHTTPServer(("127.0.0.1", {port}), H).serve_forever()
"#
        ),
    );
    let path = fx.global().join(script.trim_start_matches("./"));
    serving(Command::new(path), port)
}

#[test]
fn over_http_a_result_the_proxy_cannot_judge_never_reaches_the_client() {
    for behaviour in [
        "status",
        "garbage",
        "foreign-event",
        "wrong-id",
        "oversized",
        "text",
    ] {
        let fx = Fixture::new();
        let (_server, url) = rogue_http(&fx, behaviour);
        trust_at(&fx, "rogue", &["--upstream", &url], true);
        let mut cmd = in_fixture(&fx);
        cmd.args([
            "mcp",
            "--max-message",
            "4096",
            "--name",
            "rogue",
            "--upstream",
            &url,
        ]);
        let (_proxy, addr, token) = proxy_http_with(&fx, cmd);
        let mut client = Client::new(&addr, &token);
        client.initialize();
        let (reply, carried) = client
            .post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "t", "arguments": {}}}));
        assert!(
            !reply.body.contains("UNJUDGED"),
            "{behaviour}: {} {}",
            reply.status,
            reply.body
        );
        let answered = carried
            .iter()
            .any(|m| m["id"] == 5 && m.get("error").is_some());
        assert!(
            answered || reply.status >= 400,
            "{behaviour}: the client was left without an answer: {} {}",
            reply.status,
            reply.body
        );
    }
}

/// A server that wants a token and a key (`Authorization: Bearer s3cret`,
/// `X-Api-Key: k1`) is reached with the headers `--upstream-header`
/// gives, `${VAR}` read from the environment, for `mcp trust` and the
/// proxy alike; without them it answers 401 and the client is told how
/// to give them (the client's own secret for the proxy is never
/// forwarded: the server sees no token then). A header naming an unset
/// variable, or headed in clear text off the machine, stops the proxy
/// before it starts, and no message quotes a value.
#[test]
fn over_http_the_headers_upstream_header_gives_reach_the_server_and_nothing_else_does() {
    let fx = Fixture::new();
    let (_server, url) = rogue_http(&fx, "keyed");
    let headers = [
        "--upstream-header",
        "Authorization: Bearer ${KEYED_TOKEN}",
        "--upstream-header",
        "X-Api-Key: k${KEYED_SUFFIX}",
    ];
    // Without the headers: no listing, and the client is told why.
    let out = in_fixture(&fx)
        .args(["mcp", "trust", "--name", "keyed", "--upstream", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("401"), "{}", stderr(&out));
    let mut bare = in_fixture(&fx);
    bare.args(["mcp", "--name", "keyed", "--upstream", &url]);
    let (proxy, addr, token) = proxy_http_with(&fx, bare);
    let reply = Client::new(&addr, &token).send(
        "POST",
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
        &[],
    );
    assert_eq!(reply.status, 401, "{}", reply.body);
    assert!(reply.body.contains("--upstream-header"), "{}", reply.body);
    assert!(!reply.body.contains("UNJUDGED"), "{}", reply.body);
    drop(proxy);

    // With them: reviewed, approved, and called through the chain.
    let vars = [("KEYED_TOKEN", "s3cret"), ("KEYED_SUFFIX", "1")];
    let mut at = vec!["--upstream", url.as_str()];
    at.extend(headers);
    crate::mcp::trust_with(&fx, "keyed", &at, true, &vars);
    let mut keyed = in_fixture(&fx);
    keyed
        .args(["mcp", "--name", "keyed", "--upstream", &url])
        .args(headers);
    keyed.envs(vars);
    let (_proxy, addr, token) = proxy_http_with(&fx, keyed);
    let mut client = Client::new(&addr, &token);
    client.initialize();
    let result = client.call(1, "t", json!({}));
    assert_eq!(result["content"][0]["text"], "keyed ok", "{result}");

    // Refused before anything is sent, naming the header, never its value.
    for (to, given, said) in [
        (
            url.as_str(),
            "Authorization: Bearer ${KEYED_MISSING}",
            "KEYED_MISSING is not set",
        ),
        (
            url.as_str(),
            "Authorization: Bearer ${KEYED_TOKEN",
            "without its `}`",
        ),
        (url.as_str(), "Host: elsewhere", "set by the proxy itself"),
        (
            "http://mcp.example.com/mcp",
            "Authorization: Bearer ${KEYED_TOKEN}",
            "clear text",
        ),
    ] {
        let out = in_fixture(&fx)
            .args([
                "mcp",
                "--name",
                "keyed",
                "--upstream",
                to,
                "--upstream-header",
                given,
            ])
            .envs(vars)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{given}");
        assert!(stderr(&out).contains(said), "{given}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("s3cret"),
            "{given}: {}",
            stderr(&out)
        );
    }
}

/// [`proxy_http`] with a command of the test's own.
fn proxy_http_with(fx: &Fixture, mut cmd: Command) -> (Running, String, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let said = lines
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("the proxy said nothing: {:?}", child.try_wait()));
    std::thread::spawn(move || for _ in lines {});
    let addr = said
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {said:?}"))
        .to_owned();
    let token = std::fs::read_to_string(state(fx).join("toolgate/http-token"))
        .unwrap()
        .trim()
        .to_owned();
    (Running(child), addr, token)
}

#[test]
fn over_http_an_upstream_that_is_not_a_url_is_refused_at_start() {
    let fx = Fixture::new();
    for (given, said) in [
        ("file:///etc/passwd", "only http:// and https://"),
        ("not a url", "--upstream not a url"),
    ] {
        let out = in_fixture(&fx)
            .args(["mcp", "--name", "x", "--upstream", given])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{given}");
        assert!(stderr(&out).contains(said), "{given}: {}", stderr(&out));
    }
    let out = in_fixture(&fx)
        .args([
            "mcp",
            "--name",
            "x",
            "--upstream",
            "http://127.0.0.1:1/mcp",
            "--listen",
            "0.0.0.0:0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a loopback address"),
        "{}",
        stderr(&out)
    );
}

/// The MCP Inspector's CLI, a real Streamable HTTP client (the official
/// TypeScript SDK's), through the proxy to server-everything over HTTP.
#[test]
fn over_http_the_mcp_inspector_cli_is_answered_through_the_chain() {
    let fx = judged_fixture();
    let (_server, _proxy, client) = judged_everything(&fx);
    let inspector = crate::live::agent_bin("MCP_INSPECTOR_VERSION", "mcp-inspector");
    let url = format!("http://{}/mcp", client.addr);
    let ask = |tool: &str, args: &[&str]| -> (bool, Value) {
        let mut cmd = Command::new(&inspector);
        hermetic(&mut cmd);
        let out = cmd
            .current_dir(fx.workspace())
            .args(["--cli", "--transport", "http", "--server-url", &url])
            .args([
                "--header",
                &format!("Authorization: Bearer {}", client.token),
            ])
            .args(["--method", "tools/call", "--tool-name", tool])
            .args(args)
            .output()
            .unwrap();
        let said = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{tool}: {e}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.success(), said)
    };
    let (ok, denied) = ask("get-env", &[]);
    assert!(!ok);
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(
        text_of(&denied),
        "toolgate: call blocked: the environment holds secrets"
    );
    let (_, modified) = ask("echo", &["--tool-arg", "message=rewrite me"]);
    assert_eq!(text_of(&modified), "Echo: rewritten by toolgate");
    let (_, replaced) = ask("get-sum", &["--tool-arg", "a=1", "b=2"]);
    assert_eq!(text_of(&replaced), "42, said toolgate");
    let (_, redacted) = ask("echo", &["--tool-arg", "message=a SECRET"]);
    assert_eq!(text_of(&redacted), "Echo: a [redacted]");
}

/// For the live agent tests: server-everything over HTTP, approved but for
/// `get-tiny-image`, behind a proxy judged by `fx`'s chain (a
/// [`judged_fixture`]): the two processes, the proxy's MCP URL and the
/// secret a client must send.
pub(crate) fn live_http_server(fx: &Fixture) -> (Running, Running, String, String) {
    let (server, url) = everything_http();
    trust_at(fx, "everything", &["--upstream", &url], true);
    crate::mcp::unapprove_tiny_image(fx);
    let (proxy, addr, token) = proxy_http(fx, "everything", &url);
    (server, proxy, format!("http://{addr}/mcp"), token)
}
