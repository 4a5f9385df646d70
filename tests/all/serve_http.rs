//! `toolgate serve --http`: Claude Code's http hooks, through the real
//! binary over real TCP. What a request must be to be evaluated (the secret,
//! the exact `Host`, no `Origin`, JSON), what is bounded (bodies, header
//! time, connections), how the secret is kept, and where the server agrees
//! to listen. That the answers are the command path's is pinned by the
//! differential test in `serve.rs`.

use crate::serve::Server;
use crate::support::{Fixture, state_home, toolgate};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The secret the run's servers use (the run's `XDG_STATE_HOME`).
pub(crate) fn token() -> String {
    std::fs::read_to_string(state_home().join("toolgate/http-token"))
        .unwrap()
        .trim()
        .to_owned()
}

/// An HTTP answer: status, headers (lowercased), body.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

/// Sends `request` as it is on a new connection and reads the answer to
/// the end (the request says `Connection: close`).
pub(crate) fn raw(addr: &str, request: &[u8]) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    stream.write_all(request).unwrap();
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    parse(&out)
}

fn parse(out: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(out).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {head:?}"));
    Reply {
        status,
        headers: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

/// A request as Claude Code sends it (live: these headers and no others
/// that matter), with `headers` replacing or adding to them (a `None`
/// value removes one).
pub(crate) fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, Option<String>)],
    body: &str,
) -> Vec<u8> {
    let mut all: Vec<(String, String)> = vec![
        ("Host".into(), addr.to_owned()),
        ("Content-Type".into(), "application/json".into()),
        ("Authorization".into(), format!("Bearer {}", token())),
        ("User-Agent".into(), "axios/1.15.2".into()),
        ("Content-Length".into(), body.len().to_string()),
        ("Connection".into(), "close".into()),
    ];
    for (name, value) in headers {
        all.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        if let Some(value) = value {
            all.push(((*name).to_owned(), value.clone()));
        }
    }
    let mut text = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in all {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.push_str(body);
    text.into_bytes()
}

/// POSTs a hook input the way Claude Code does.
pub(crate) fn post(addr: &str, body: &str) -> Reply {
    raw(addr, &request(addr, "POST", "/claude-code", &[], body))
}

/// Claude Code's PreToolUse input for Bash running `command` in `cwd`.
pub(crate) fn claude_pre(cwd: &std::path::Path, command: &str) -> String {
    json!({"session_id": "s", "transcript_path": "/dev/null", "cwd": cwd,
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command}})
    .to_string()
}

fn deny_all() -> Fixture {
    let fx = Fixture::new();
    let guard = fx.script(
        "guard.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"deny\",\"reason\":\"nope\"}'\n",
    );
    fx.workspace_hooks(json!([{"name": "guard", "command": [guard]}]));
    fx.trust();
    fx
}

#[test]
fn a_request_that_is_not_the_agents_is_refused_before_anything_is_evaluated() {
    let fx = deny_all();
    let server = Server::start_http(|_| {});
    let addr = server.http.clone().unwrap();
    let port = addr.rsplit(':').next().unwrap().to_owned();
    let body = claude_pre(&fx.workspace(), "ls");
    let some = |v: &str| Some(v.to_owned());
    let refused: Vec<(&str, Vec<u8>, u16)> = vec![
        (
            "no secret",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Authorization", None)],
                &body,
            ),
            401,
        ),
        (
            "a wrong secret",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Authorization", some(&format!("Bearer {}x", token())))],
                &body,
            ),
            401,
        ),
        (
            "the secret without Bearer",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Authorization", Some(token()))],
                &body,
            ),
            401,
        ),
        (
            "a rebound name (DNS rebinding)",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Host", some(&format!("evil.example:{port}")))],
                &body,
            ),
            421,
        ),
        (
            "localhost, not the literal",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Host", some(&format!("localhost:{port}")))],
                &body,
            ),
            421,
        ),
        (
            "no Host",
            request(&addr, "POST", "/claude-code", &[("Host", None)], &body),
            421,
        ),
        (
            "an Origin (a browser's cross-origin POST)",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Origin", some("http://evil.example"))],
                &body,
            ),
            403,
        ),
        (
            "an opaque Origin (a sandboxed page's)",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Origin", some("null"))],
                &body,
            ),
            403,
        ),
        (
            "the listener's own host by another name",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Origin", some(&format!("http://localhost:{port}")))],
                &body,
            ),
            403,
        ),
        (
            "the listener's own origin over https",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Origin", some(&format!("https://{addr}")))],
                &body,
            ),
            403,
        ),
        (
            "a text/plain simple request",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Content-Type", some("text/plain"))],
                &body,
            ),
            415,
        ),
        (
            "a form simple request",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Content-Type", some("application/x-www-form-urlencoded"))],
                &body,
            ),
            415,
        ),
        (
            "no Content-Type",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Content-Type", None)],
                &body,
            ),
            415,
        ),
        (
            "a preflight",
            request(
                &addr,
                "OPTIONS",
                "/claude-code",
                &[
                    ("Origin", some("http://evil.example")),
                    ("Access-Control-Request-Method", some("POST")),
                ],
                "",
            ),
            403,
        ),
        (
            "OPTIONS",
            request(&addr, "OPTIONS", "/claude-code", &[], ""),
            405,
        ),
        ("GET", request(&addr, "GET", "/claude-code", &[], ""), 405),
        (
            "another path",
            request(&addr, "POST", "/codex", &[], &body),
            404,
        ),
        (
            "a length over the bound",
            request(
                &addr,
                "POST",
                "/claude-code",
                &[("Content-Length", some("67109000"))],
                "",
            ),
            413,
        ),
    ];
    for (what, bytes, want) in refused {
        let reply = raw(&addr, &bytes);
        assert_eq!(reply.status, want, "{what}: {}", reply.body);
        assert!(
            !reply.headers.contains("access-control-"),
            "{what}: {}",
            reply.headers
        );
    }
    assert_eq!(
        server.status()["requests"],
        0,
        "a refused request was evaluated"
    );
    // The same request as Claude Code sends it is evaluated (the guard says
    // no), and that answer carries no CORS header either.
    let reply = post(&addr, &body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        !reply.headers.contains("access-control-"),
        "{}",
        reply.headers
    );
    assert_eq!(
        reply.json()["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    assert_eq!(server.status()["requests"], 1);
}

#[test]
fn a_chunked_body_is_cut_at_the_bound() {
    let server = Server::start_http(|_| {});
    let addr = server.http.clone().unwrap();
    let mut stream = TcpStream::connect(&addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let head = format!(
        "POST /claude-code HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        token()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // 1 MiB chunks, past the 64 MiB bound; the server may close before all
    // are sent.
    let chunk = vec![b' '; 1 << 20];
    for _ in 0..80 {
        let sent = stream
            .write_all(format!("{:x}\r\n", chunk.len()).as_bytes())
            .and_then(|()| stream.write_all(&chunk))
            .and_then(|()| stream.write_all(b"\r\n"));
        if sent.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n");
    let mut out = Vec::new();
    let _ = stream.read_to_end(&mut out);
    assert_eq!(parse(&out).status, 413);
    assert_eq!(server.status()["requests"], 0);
}

#[test]
#[cfg(debug_assertions)]
fn a_client_that_sends_no_headers_is_cut_off_and_connections_are_bounded() {
    let fx = deny_all();
    let server = Server::start_http(|cmd| {
        cmd.env("TOOLGATE_DEBUG_HTTP_HEADER_TIMEOUT_MS", "4000");
    });
    let addr = server.http.clone().unwrap();
    // A slow client: half a request line, then nothing. It is closed at the
    // header timeout, not kept forever.
    let mut slow = TcpStream::connect(&addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    slow.write_all(b"POST /claude-code HT").unwrap();
    let started = Instant::now();
    let mut out = Vec::new();
    let _ = slow.read_to_end(&mut out);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(1000) && took < Duration::from_secs(10),
        "closed after {took:?}"
    );
    // 256 idle connections take every slot: the 257th waits in the
    // kernel's queue, and is answered once they are cut off.
    let fds = || {
        std::fs::read_dir(format!("/proc/{}/fd", server.pid()))
            .unwrap()
            .count()
    };
    let before = fds();
    let idle: Vec<TcpStream> = (0..256)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    // Each accepted (its peer looked up in the kernel's tables) before the
    // next is tried: a descriptor each in the server.
    let accepting = Instant::now();
    while fds() < before + 256 && accepting.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        fds() >= before + 256,
        "the idle connections were not all accepted"
    );
    let mut waiting = TcpStream::connect(&addr).unwrap();
    waiting
        .write_all(&request(
            &addr,
            "POST",
            "/claude-code",
            &[],
            &claude_pre(&fx.workspace(), "ls"),
        ))
        .unwrap();
    waiting
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut first = [0u8; 1];
    assert!(
        waiting.read(&mut first).is_err(),
        "a connection past the bound was served at once"
    );
    waiting
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut out = Vec::new();
    let _ = waiting.read_to_end(&mut out);
    assert_eq!(parse(&out).status, 200);
    drop(idle);
}

#[test]
fn only_a_loopback_ip_literal_is_listened_on() {
    for addr in [
        "0.0.0.0:0",
        "192.168.1.10:0",
        "[::]:0",
        "localhost:0",
        "127.0.0.1",
    ] {
        let out = toolgate().args(["serve", "--http", addr]).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("loopback") || err.contains("not an IP address with a port"),
            "{addr}: {err}"
        );
    }
}

#[test]
fn the_secret_is_made_0600_and_refused_when_others_could_read_it_or_it_is_a_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let state = tempfile::tempdir().unwrap();
    let start = || {
        let socket = state.path().join("serve.sock");
        toolgate()
            .env("XDG_STATE_HOME", state.path())
            .args(["serve", "--http", "127.0.0.1:0", "--socket"])
            .arg(&socket)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap()
    };
    let path = state.path().join("toolgate/http-token");
    // Made on first start: 0600, 32 random bytes as hex.
    let mut child = start();
    let started = Instant::now();
    while !path.exists() {
        assert!(started.elapsed() < Duration::from_secs(20));
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    let meta = std::fs::symlink_metadata(&path).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let secret = std::fs::read_to_string(&path).unwrap();
    assert_eq!(secret.len(), 64);
    assert!(secret.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(secret, token(), "two state dirs share a secret");
    // Readable by others: refused, and the server does not start.
    let refused = |why: &str| {
        let out = start().wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{why}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("http-token") && err.contains(why), "{err}");
    };
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    refused("readable or writable by group or others");
    // A symlink (to a secret someone else chose): refused.
    std::fs::remove_file(&path).unwrap();
    let elsewhere = state.path().join("chosen");
    std::fs::write(&elsewhere, "a".repeat(64)).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    refused("symlink");
    // A directory others can enter: refused.
    std::fs::remove_file(&path).unwrap();
    std::fs::set_permissions(
        state.path().join("toolgate"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    refused("open to group or others");
}

#[test]
fn toolgates_own_failure_is_a_deny_claude_code_blocks_on() {
    // The command path exits 2 with the reason; over HTTP the answer is the
    // JSON deny both pinned releases block on (a 5xx is let through by
    // 2.1.197; see the live tests).
    let fx = Fixture::new();
    fx.workspace_raw("{\"schema\": 1, \"hooks\": [oops]}");
    let server = Server::start_http(|_| {});
    let addr = server.http.clone().unwrap();
    let reply = post(&addr, &claude_pre(&fx.workspace(), "ls"));
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answer = reply.json();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.contains("toolgate could not evaluate this call, so it is blocked"),
        "{reason}"
    );
    // The command path blocks the same call, with the same cause.
    let out = crate::support::run_with_stdin(
        toolgate().arg("claude-code").current_dir(fx.workspace()),
        &claude_pre(&fx.workspace(), "ls"),
    );
    assert_eq!(out.status.code(), Some(2));
    // After the call: a block with the reason.
    let post_input = json!({"session_id": "s", "cwd": fx.workspace(),
        "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_response": {"stdout": "x"}});
    let answer = post(&addr, &post_input.to_string()).json();
    assert_eq!(answer["decision"], "block", "{answer}");
    // An input that is not Claude Code's at all: a 400, which 2.1.332
    // blocks on.
    assert_eq!(post(&addr, "[1, 2]").status, 400);
}

#[test]
fn install_http_writes_the_users_settings_dry_run_shows_it_uninstall_removes_it_doctor_asks() {
    // A state directory of its own: the servers of other tests would
    // otherwise say where they run in the same one.
    let state = tempfile::tempdir().unwrap();
    let server = Server::start_http(|cmd| {
        cmd.env("XDG_STATE_HOME", state.path());
    });
    let url = format!("http://{}/claude-code", server.http.clone().unwrap());
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let settings = home.path().join(".claude/settings.json");
    let run = |args: &[&str]| {
        toolgate()
            .env("HOME", home.path())
            .env("XDG_STATE_HOME", state.path())
            .current_dir(project.path())
            .args(args)
            .output()
            .unwrap()
    };
    // A project's settings: refused (the server and its secret are the
    // user's).
    let out = run(&["install", "claude-code", "--http", "--project"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the user's settings only"));
    // --dry-run shows the handler, writes nothing.
    let out = run(&["install", "claude-code", "--http", "--dry-run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diff = String::from_utf8_lossy(&out.stdout);
    for wanted in [
        format!(r#""url": "{url}""#),
        r#""onFailure": "block""#.to_owned(),
        r#""Authorization": "Bearer $TOOLGATE_HTTP_TOKEN""#.to_owned(),
        r#""TOOLGATE_HTTP_TOKEN""#.to_owned(),
    ] {
        assert!(diff.contains(&wanted), "{wanted}: {diff}");
    }
    assert!(!settings.exists());
    // Installed: the running server's URL on every event, on the handler.
    let out = run(&["install", "claude-code", "--http"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("export TOOLGATE_HTTP_TOKEN="));
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    for event in ["PreToolUse", "PostToolUse", "PostToolUseFailure"] {
        let handlers = &written["hooks"][event][0]["hooks"];
        assert_eq!(handlers.as_array().unwrap().len(), 1, "{event}: {written}");
        assert_eq!(handlers[0]["type"], "http");
        assert_eq!(handlers[0]["url"], url.as_str());
        assert_eq!(handlers[0]["onFailure"], "block");
    }
    // Installing the command hook replaces it (never both), and --http
    // back again.
    assert!(run(&["install", "claude-code"]).status.success());
    let text = std::fs::read_to_string(&settings).unwrap();
    assert!(
        !text.contains("\"http\"") && text.contains("\"command\""),
        "{text}"
    );
    assert!(run(&["install", "claude-code", "--http"]).status.success());
    // Doctor: installed, its server answers.
    let doctor = |want_problem: bool| {
        let out = run(&["doctor", "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
        let text = report.to_string();
        assert_eq!(
            text.contains("the http hook's server does not answer"),
            want_problem,
            "{report:#}"
        );
    };
    doctor(false);
    drop(server);
    doctor(true);
    // Uninstall removes it, and the file it alone filled.
    let out = run(&["uninstall", "claude-code"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left = std::fs::read_to_string(&settings).unwrap_or_default();
    assert!(!left.contains("http"), "{left}");
}
