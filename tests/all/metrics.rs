//! `toolgate serve --metrics`: Prometheus scrapes the real server and the
//! series are read back through Prometheus's own HTTP API, with exact counts
//! by label; and the endpoint itself (loopback only, `GET /metrics` only,
//! text `promtool` accepts, the same text over the socket).
//!
//! Prometheus is Debian's `prometheus` package (test.sh installs it). Debian
//! starts a system service on install; these tests neither use nor touch
//! it: each starts its own on a free 127.0.0.1 port with its own storage in
//! a temp dir, scraping every second.

use crate::serve::Server;
use crate::serve_http::raw;
use crate::support::{Fixture, free_port, run_with_stdin, toolgate, write_executable};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// A server with `--metrics` on an ephemeral loopback port, started with
/// `fx`'s global config (as its callers are), and that port.
fn start(fx: &Fixture) -> (Server, String) {
    let mut serve = toolgate();
    serve.env("TOOLGATE_CONFIG_DIR", fx.global());
    let server = Server::start_as(serve, &["--metrics", "127.0.0.1:0"]);
    let addr = server
        .said_after("toolgate serve: metrics on http://")
        .trim_end_matches("/metrics")
        .to_owned();
    (server, addr)
}

fn get(addr: &str, path: &str) -> crate::serve_http::Reply {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// `toolgate serve metrics` against `server`'s socket.
fn serve_metrics(server: &Server) -> std::process::Output {
    server
        .client()
        .args(["serve", "metrics", "--socket"])
        .arg(server.socket())
        .output()
        .unwrap()
}

/// `toolgate check` of a Bash `command` in `workspace`, through `server`.
fn check(server: &Server, fx: &Fixture, workspace: &Path, command: &str) -> Option<i32> {
    let request = json!({"event": "pre_tool_use", "tool": "Bash", "input": {"command": command}});
    let out = run_with_stdin(
        server
            .client()
            .args(["check", "--workspace"])
            .arg(workspace)
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        &request.to_string(),
    );
    out.status.code()
}

/// A Prometheus of the test's own, scraping `target` every second; killed
/// on drop.
struct Prometheus {
    child: std::process::Child,
    addr: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(target: &str) -> Prometheus {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: toolgate\n    static_configs:\n      \
                 - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr = format!("127.0.0.1:{}", free_port());
        let child = std::process::Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("Debian's prometheus is installed (test.sh installs it)");
        let prometheus = Prometheus {
            child,
            addr,
            _dir: dir,
        };
        let started = Instant::now();
        while std::net::TcpStream::connect(&prometheus.addr).is_err()
            || get(&prometheus.addr, "/-/ready").status != 200
        {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "prometheus did not become ready"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        prometheus
    }

    /// The instant vector for `query`: (labels, value) pairs.
    fn query(&self, query: &str) -> Vec<(Value, f64)> {
        let encoded: String = query
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() || b"_-.".contains(&b) {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        let reply = get(&self.addr, &format!("/api/v1/query?query={encoded}"));
        assert_eq!(reply.status, 200, "{query}: {}", reply.body);
        let answer = reply.json();
        answer["data"]["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let value = r["value"][1].as_str().unwrap().parse::<f64>().unwrap();
                (r["metric"].clone(), value)
            })
            .collect()
    }

    /// The one value of `query` (0 when it has none).
    fn value(&self, query: &str) -> f64 {
        let found = self.query(query);
        assert!(found.len() <= 1, "{query}: {found:?}");
        found.first().map_or(0.0, |(_, v)| *v)
    }

    /// Waits until a scrape shows `query` at `want`.
    fn until(&self, query: &str, want: f64) {
        let started = Instant::now();
        while self.value(query) != want {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{query} never reached {want}: {:?}",
                self.query(query)
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn prometheus_reads_back_decisions_failures_latency_reloads_and_trust_refusals_by_label() {
    let fx = Fixture::new();
    let py = |name: &str, body: &str| {
        let path = fx.global().join(name);
        write_executable(
            &path,
            &format!("#!/usr/bin/env python3\nimport sys, json\n{body}\n"),
        );
        path
    };
    let allow = py(
        "allow.py",
        "sys.stdin.read(); print(json.dumps({'decision': 'allow'}))",
    );
    let deny = py(
        "deny.py",
        "i = sys.stdin.read()\n\
         print(json.dumps({'decision': 'deny', 'reason': 'no rm -rf'} if 'rm -rf' in i \
         else {'decision': 'allow'}))",
    );
    let crash = py(
        "crash.py",
        "i = sys.stdin.read()\n\
         if 'crash-me' in i: sys.exit(3)\n\
         print(json.dumps({'decision': 'allow'}))",
    );
    fx.global_hooks(json!([
        {"name": "allow-all", "command": [allow]},
        {"name": "deny-rm", "command": [deny]},
        {"name": "crash", "command": [crash]},
        {"name": "wasm-allow", "wasm": crate::guests::path("allow")}
    ]));
    // A second workspace whose own hook nobody trusted: the call is blocked
    // (`untrusted_hooks` defaults to deny) and counted as a trust refusal.
    let untrusted = fx.dir.path().join("untrusted");
    std::fs::create_dir_all(untrusted.join(".toolgate/hooks")).unwrap();
    write_executable(
        &untrusted.join(".toolgate/hooks/ws.sh"),
        "#!/bin/sh\necho '{\"decision\":\"allow\"}'\n",
    );
    std::fs::write(
        untrusted.join(".toolgate/hooks.json"),
        json!({"schema": 1, "hooks": [{"name": "ws-hook", "command": ["./.toolgate/hooks/ws.sh"]}]})
            .to_string(),
    )
    .unwrap();

    let (server, addr) = start(&fx);
    let prometheus = Prometheus::start(&addr);
    let ws = fx.workspace();
    for _ in 0..3 {
        assert_eq!(check(&server, &fx, &ws, "ls"), Some(0));
    }
    for _ in 0..2 {
        assert_eq!(check(&server, &fx, &ws, "rm -rf /"), Some(2));
    }
    assert_eq!(check(&server, &fx, &ws, "crash-me"), Some(3));
    assert_ne!(check(&server, &fx, &untrusted, "ls"), Some(0));
    // The global config rewritten as it is (a new mtime): a reload; then
    // broken: a failed reload, and the last good config answers.
    let global = std::fs::read(fx.global().join("hooks.json")).unwrap();
    crate::support::replace_file(&fx.global().join("hooks.json"), &global);
    assert_eq!(check(&server, &fx, &ws, "ls"), Some(0));
    crate::support::replace_file(&fx.global().join("hooks.json"), b"{not json");
    assert_eq!(check(&server, &fx, &ws, "ls"), Some(0));

    // The evaluation's time is counted last, after everything else the
    // call counts: a scrape that has all nine has all of the rest.
    prometheus.until(
        "toolgate_evaluation_duration_seconds_count{mode=\"check\"}",
        9.0,
    );
    prometheus.until("sum(toolgate_decisions_total)", 9.0);
    let decisions = |hook: &str, decision: &str, source: &str| {
        prometheus.value(&format!(
            "toolgate_decisions_total{{hook=\"{hook}\",decision=\"{decision}\",source=\"{source}\"}}"
        ))
    };
    assert_eq!(decisions("none", "allow", "none"), 5.0);
    assert_eq!(decisions("deny-rm", "deny", "global"), 2.0);
    assert_eq!(decisions("crash", "failed", "global"), 1.0);
    assert_eq!(decisions("ws-hook", "failed", "workspace"), 1.0);
    assert_eq!(prometheus.query("toolgate_decisions_total").len(), 4);

    let failures = |hook: &str, kind: &str| {
        prometheus.value(&format!(
            "toolgate_hook_failures_total{{hook=\"{hook}\",kind=\"{kind}\"}}"
        ))
    };
    assert_eq!(failures("crash", "exited_non_zero"), 1.0);
    assert_eq!(failures("ws-hook", "not_trusted"), 1.0);
    assert_eq!(prometheus.value("sum(toolgate_hook_failures_total)"), 2.0);
    assert_eq!(
        prometheus.value("toolgate_trust_refusals_total{hook=\"ws-hook\",policy=\"deny\"}"),
        1.0
    );

    // Every hook that ran, once per run: the three commands on each call
    // up to the one that decided, the component on each call all allowed.
    // ls ×5 in ws: 3 commands + wasm; rm ×2: 2 commands; crash-me: 3
    // commands; the untrusted workspace: 3 commands + wasm (its own hook
    // did not run).
    assert_eq!(
        prometheus.value("toolgate_hook_duration_seconds_count{binding=\"subprocess\"}"),
        (5 * 3 + 2 * 2 + 3 + 3) as f64
    );
    assert_eq!(
        prometheus.value("toolgate_hook_duration_seconds_count{binding=\"wasm\"}"),
        6.0
    );
    assert_eq!(
        prometheus.value("toolgate_evaluation_duration_seconds_count{mode=\"check\"}"),
        9.0
    );

    let loads = |trigger: &str, result: &str| {
        prometheus.value(&format!(
            "toolgate_config_loads_total{{trigger=\"{trigger}\",result=\"{result}\"}}"
        ))
    };
    assert_eq!(loads("first", "ok"), 2.0);
    assert_eq!(loads("reload", "ok"), 1.0);
    assert_eq!(loads("reload", "failed"), 1.0);
    assert_eq!(
        prometheus.value("toolgate_fallbacks_total{reason=\"last_good_config\"}"),
        1.0
    );
}

#[test]
fn the_endpoint_answers_only_get_metrics_with_text_promtool_accepts_and_the_socket_says_the_same() {
    let fx = Fixture::new();
    let (server, addr) = start(&fx);
    fx.global_hooks(json!([{"name": "wasm-allow", "wasm": crate::guests::path("allow")}]));
    assert_eq!(check(&server, &fx, &fx.workspace(), "ls"), Some(0));

    let reply = get(&addr, "/metrics");
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(
        reply
            .headers
            .contains("content-type: text/plain; version=0.0.4"),
        "{}",
        reply.headers
    );
    assert!(
        reply.body.contains("toolgate_decisions_total{"),
        "{}",
        reply.body
    );
    let mut promtool = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package)");
    use std::io::Write;
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(reply.body.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // Anything but GET /metrics, with the literal Host, from no browser.
    let post = raw(
        &addr,
        format!("POST /metrics HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(post.status, 405);
    assert!(post.headers.contains("allow: get"), "{}", post.headers);
    assert_eq!(get(&addr, "/").status, 404);
    assert_eq!(get(&addr, "/claude-code").status, 404);
    let rebound = raw(
        &addr,
        b"GET /metrics HTTP/1.1\r\nHost: evil.example:80\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(rebound.status, 421);
    let browser = raw(
        &addr,
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nOrigin: http://evil.example\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    assert_eq!(browser.status, 403);

    // Over the socket, only this user can read them: the same series.
    let out = serve_metrics(&server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let series = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.starts_with("toolgate_decisions_total"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(series(&text), series(&reply.body));
}

#[test]
fn metrics_are_served_only_on_a_loopback_ip_literal() {
    for addr in [
        "0.0.0.0:0",
        "192.168.1.10:9100",
        "[::]:0",
        "localhost:0",
        "127.0.0.1",
    ] {
        let out = toolgate()
            .args(["serve", "--metrics", addr])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--metrics")
                && (err.contains("loopback") || err.contains("not an IP address with a port")),
            "{addr}: {err}"
        );
    }
}

#[test]
fn a_server_without_metrics_says_so_over_the_socket() {
    let server = Server::start_as(toolgate(), &[]);
    let out = serve_metrics(&server);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("started without --metrics"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A guard whose agents stopped calling it must be visible (issue 40): the
/// server says when it last heard from each agent and each recent session,
/// in `serve status` and as `toolgate_last_call_timestamp_seconds`; the
/// shipped alerting rules pass `promtool test rules`, and every series they
/// name is one this server exposes.
#[test]
fn the_server_says_when_it_last_heard_from_each_agent_and_the_alert_rules_pass_promtool() {
    let fx = Fixture::new();
    let (server, addr) = start(&fx);
    let allow = fx.global_script(
        "allow.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"decision\":\"allow\"}'\n",
    );
    fx.global_hooks(json!([{"name": "allow", "command": [allow]}]));
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for _ in 0..2 {
        let out = run_with_stdin(
            server
                .client()
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global()),
            r#"{"event":"pre_tool_use","tool":"Bash","input":{"command":"ls"},"session_id":"s-7"}"#,
        );
        assert_eq!(out.status.code(), Some(0));
    }
    let claude = json!({
        "session_id": "s-9", "transcript_path": "/nonexistent", "cwd": fx.workspace(),
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "ls"}, "tool_use_id": "t",
    });
    let out = run_with_stdin(
        server
            .client()
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        &claude.to_string(),
    );
    assert_eq!(out.status.code(), Some(0));
    // The result of a call the server was never asked about (a mod ran it
    // past the guard): withheld, and counted for ToolgateTamperEvidence.
    let mut past = claude.clone();
    past["hook_event_name"] = json!("PostToolUse");
    past["tool_use_id"] = json!("never-asked");
    past["tool_response"] =
        json!({"stdout": "out", "stderr": "", "interrupted": false, "isImage": false});
    let out = run_with_stdin(
        server
            .client()
            .args(["claude-code", "--workspace"])
            .arg(fx.workspace())
            .env("TOOLGATE_CONFIG_DIR", fx.global()),
        &past.to_string(),
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("ran it past the guard"), "{said}");

    let heard = server.status()["heard"].clone();
    let find = |agent: &str, session: Value| {
        heard
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["agent"] == agent && h["session_id"] == session)
            .cloned()
            .unwrap_or_else(|| panic!("{agent} {session} not in {heard:#}"))
    };
    assert_eq!(find("check", Value::Null)["calls"], 2);
    assert_eq!(find("check", json!("s-7"))["calls"], 2);
    assert_eq!(find("claude-code", json!("s-9"))["calls"], 2);
    assert!(
        find("claude-code", Value::Null)["last_unix_s"]
            .as_u64()
            .unwrap()
            >= before
    );
    let text = server
        .client()
        .args(["serve", "status", "--socket"])
        .arg(server.socket())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("last heard, claude-code session s-9: "),
        "{text}"
    );
    assert!(
        text.contains("last heard, check (every session): "),
        "{text}"
    );

    let body = get(&addr, "/metrics").body;
    let line = body
        .lines()
        .find(|l| l.starts_with("toolgate_last_call_timestamp_seconds{agent=\"claude-code\"}"))
        .unwrap_or_else(|| panic!("{body}"));
    let at: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(at >= before && at <= before + 120, "{line}");

    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/prometheus");
    for args in [
        ["check", "rules", "toolgate-alerts.yml"],
        ["test", "rules", "toolgate-alerts.test.yml"],
    ] {
        let out = std::process::Command::new("promtool")
            .args(args)
            .current_dir(&rules)
            .output()
            .expect("promtool (Debian's prometheus package)");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Every toolgate series the rules name is one the server exposes.
    let text = std::fs::read_to_string(rules.join("toolgate-alerts.yml")).unwrap();
    let named: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with("toolgate_"))
        .collect();
    assert!(!named.is_empty());
    for name in named {
        assert!(
            body.contains(&format!("{name}{{")),
            "{name} is not exposed: {body}"
        );
    }
}

/// Issue 40, the operator's pipeline as docs/decision-log.md shows it:
/// `toolgate serve --metrics` scraped by a real Prometheus, and the
/// decision log shipped as it is written by `toolgate log --json
/// --follow` (started before the first call, as a collector at boot is).
/// Every decision reaches both: Prometheus counts it by label, and the
/// stream carries each record once, in order, across a rotation, each one
/// valid against the published schema.
#[test]
fn the_books_pipeline_prometheus_and_a_followed_log_see_every_decision_once() {
    use std::io::BufRead;
    let fx = Fixture::new();
    let deny = fx.global().join("deny.py");
    write_executable(
        &deny,
        "#!/usr/bin/env python3\nimport sys, json\ni = sys.stdin.read()\n\
         print(json.dumps({'decision': 'deny', 'reason': 'no rm -rf'} if 'rm -rf' in i \
         else {'decision': 'allow'}))\n",
    );
    fx.global_hooks(json!([{"name": "deny-rm", "command": [deny]}]));
    let log = fx.dir.path().join("logs/decisions.jsonl");
    let mut serve = toolgate();
    serve
        .env("TOOLGATE_CONFIG_DIR", fx.global())
        .env("TOOLGATE_DECISION_LOG", &log)
        // Small, so the log rotates while it is followed.
        .env("TOOLGATE_DEBUG_DECISION_LOG_MAX_BYTES", "4000");
    let server = Server::start_as(serve, &["--metrics", "127.0.0.1:0"]);
    let addr = server
        .said_after("toolgate serve: metrics on http://")
        .trim_end_matches("/metrics")
        .to_owned();
    let prometheus = Prometheus::start(&addr);
    let mut follower = toolgate()
        .args(["log", "--json", "--follow", "--file"])
        .arg(&log)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stream = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let into = stream.clone();
    let out = follower.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            into.lock().unwrap().push(line);
        }
    });
    let commands: Vec<String> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                format!("rm -rf /tmp/x{i}")
            } else {
                format!("ls {i}")
            }
        })
        .collect();
    for command in &commands {
        let request =
            json!({"event": "pre_tool_use", "tool": "Bash", "input": {"command": command}});
        run_with_stdin(
            server
                .client()
                .args(["check", "--workspace"])
                .arg(fx.workspace())
                .env("TOOLGATE_CONFIG_DIR", fx.global())
                .env("TOOLGATE_DECISION_LOG", &log),
            &request.to_string(),
        );
    }
    let started = Instant::now();
    while stream.lock().unwrap().len() < commands.len() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the followed log stopped at {:#?}",
            stream.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // A moment for anything printed twice to show.
    std::thread::sleep(Duration::from_millis(600));
    let _ = follower.kill();
    let _ = follower.wait();
    assert!(
        Path::new(&format!("{}.1", log.display())).exists(),
        "the log rotated while followed"
    );
    let records: Vec<Value> = stream
        .lock()
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let shown: Vec<&str> = records
        .iter()
        .map(|r| r["input"].as_str().unwrap_or_default())
        .collect();
    let asked: Vec<String> = commands
        .iter()
        .map(|c| json!({"command": c}).to_string())
        .collect();
    assert_eq!(shown, asked, "each record once, in order");
    let seqs: Vec<u64> = records.iter().map(|r| r["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=12).collect::<Vec<u64>>(), "{records:#?}");
    let mut validator = crate::log_chain::record_validator();
    for record in &records {
        let errors = validator.errors(record);
        assert!(errors.is_empty(), "{errors:?} in {record:#}");
    }
    prometheus.until("sum(toolgate_decisions_total)", 12.0);
    assert_eq!(
        prometheus.value("toolgate_decisions_total{hook=\"deny-rm\",decision=\"deny\"}"),
        4.0
    );
    let denied = records.iter().filter(|r| r["decision"] == "deny").count();
    assert_eq!(denied, 4);
}
