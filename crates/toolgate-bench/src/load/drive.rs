//! One level of the load bench: its clients, each call they make, and the
//! server's gauges while they run.

use super::{Class, ClassLatency, LoadLevel, LoadOptions, Recorded, Transport};
use crate::BenchError;
use crate::scenario::percentile;
use crate::soak::{Answered, Client, NOT_TAKEN, expected};
use serde_json::{Value, json};
use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What every client of one level shares.
pub(super) struct Level<'a> {
    pub(super) options: &'a LoadOptions,
    pub(super) classes: &'a [Class],
    /// Indices into `classes` the clients cycle through.
    pub(super) lanes: &'a [usize],
    pub(super) transport: Transport,
    pub(super) clients: usize,
    /// The HTTP listener and its secret.
    pub(super) http: &'a (String, String),
    /// Paced: each client starts a call this often; `None`: closed loop.
    pub(super) pace: Option<Duration>,
}

impl Level<'_> {
    fn mode(&self) -> &'static str {
        match self.pace {
            Some(_) => "paced",
            None => "closed loop",
        }
    }

    fn offered_per_s(&self) -> Option<f64> {
        self.pace.map(|p| self.clients as f64 / p.as_secs_f64())
    }
}

/// Runs `level`: its clients, each cycling through its lanes from its own
/// offset until the window ends, while the server (`pid`)'s memory and
/// descriptors are sampled.
pub(super) fn drive(level: &Level<'_>, pid: u32) -> Result<LoadLevel, BenchError> {
    let recorded = Mutex::new(Recorded {
        samples: vec![Vec::new(); level.classes.len()],
        late: vec![Vec::new(); level.classes.len()],
        ..Recorded::default()
    });
    let running = AtomicBool::new(true);
    let (peak_rss, peak_fds) = (AtomicU64::new(0), AtomicU64::new(0));
    // Every client ready (an HTTP one connected), then the window starts
    // for all at once: two meetings, the window set between them.
    let ready = std::sync::Barrier::new(level.clients + 1);
    let window = std::sync::OnceLock::new();
    let mut started = Instant::now();
    std::thread::scope(|s| -> Result<(), BenchError> {
        s.spawn(|| {
            while running.load(Ordering::Relaxed) {
                let (rss, fds) = gauges(pid);
                peak_rss.fetch_max(rss, Ordering::Relaxed);
                peak_fds.fetch_max(fds, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let handles: Vec<_> = (0..level.clients)
            .map(|n| {
                let (recorded, ready, window) = (&recorded, &ready, &window);
                s.spawn(move || client(level, n, (ready, window), recorded))
            })
            .collect();
        ready.wait();
        started = Instant::now();
        let _ = window.set(started + level.options.window);
        ready.wait();
        let mut result = Ok(());
        for h in handles {
            let joined = h
                .join()
                .unwrap_or(Err(BenchError::Missing("a load client panicked")));
            if result.is_ok() {
                result = joined;
            }
        }
        running.store(false, Ordering::Relaxed);
        result
    })?;
    let recorded = recorded
        .into_inner()
        .map_err(|_| BenchError::Missing("a load client panicked"))?;
    let peaks = (peak_rss.into_inner(), peak_fds.into_inner());
    Ok(summary(level, recorded, started.elapsed(), peaks))
}

/// What `level`'s clients `recorded` in `wall`, with the server's peak
/// memory and descriptors.
fn summary(
    level: &Level<'_>,
    mut r: Recorded,
    wall: Duration,
    (peak_rss_kib, peak_fds): (u64, u64),
) -> LoadLevel {
    let calls = r.samples.iter().map(Vec::len).sum::<usize>();
    let classes = level
        .lanes
        .iter()
        .map(|&i| {
            // Recorded side by side: a call's time from when it began.
            let mut started: Vec<f64> = r.samples[i]
                .iter()
                .zip(&r.late[i])
                .map(|(us, late)| us - late)
                .collect();
            started.sort_by(f64::total_cmp);
            let samples = &mut r.samples[i];
            samples.sort_by(f64::total_cmp);
            let late = &mut r.late[i];
            late.sort_by(f64::total_cmp);
            ClassLatency {
                class: level.classes[i].name.clone(),
                calls: samples.len(),
                p50_us: percentile(samples, 0.5),
                p99_us: percentile(samples, 0.99),
                p999_us: percentile(samples, 0.999),
                late_p99_us: percentile(late, 0.99),
                started_p99_us: percentile(&started, 0.99),
            }
        })
        .collect();
    LoadLevel {
        mode: level.mode().into(),
        offered_per_s: level.offered_per_s(),
        transport: level.transport.name().into(),
        mix: if level.lanes.len() == 1 {
            "fast alone"
        } else {
            "mix"
        }
        .into(),
        clients: level.clients,
        calls,
        calls_per_s: calls as f64 / wall.as_secs_f64(),
        errors: r.errors,
        error_examples: r.examples,
        not_taken: r.not_taken,
        classes,
        peak_rss_kib,
        peak_fds,
    }
}

/// Client `n` of `level`, an agent session of its own: calls until `end`,
/// then adds what it saw to `recorded`.
fn client(
    level: &Level<'_>,
    n: usize,
    (ready, window): (&std::sync::Barrier, &std::sync::OnceLock<Instant>),
    recorded: &Mutex<Recorded>,
) -> Result<(), BenchError> {
    let session = format!(
        "load-{}-{}-{}-{n}",
        level.transport.name(),
        level.lanes.len(),
        level.clients
    );
    let workspace = level.options.root.join("load/workspace");
    // Claude Code keeps its connection: opened, accepted and used once
    // before the window, so its setup (a hundred clients' accepts, each
    // looked up in the kernel's socket tables) is not counted as a call's
    // latency.
    let conn = match level.transport {
        Transport::Http => HttpConn::open(level.http).and_then(|mut conn| {
            let first = &level.classes[level.lanes[n % level.lanes.len()]];
            conn.call(level.http, &workspace, first, &session)
                .map_err(BenchError::Denied)
                .map(|()| conn)
        }),
        Transport::Socket => Err(BenchError::Missing("no connection over the socket")),
    };
    // Met even when the connection failed, so no one waits for this client.
    ready.wait();
    ready.wait();
    let mut conn = match (level.transport, conn) {
        (Transport::Http, conn) => Some(conn?),
        (Transport::Socket, _) => None,
    };
    let end = *window
        .get()
        .ok_or(BenchError::Missing("the load window was never set"))?;
    let mut mine: Vec<(usize, f64, f64)> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    let mut not_taken = 0;
    let mut k = n;
    let mut schedule = Schedule::new(level, n, end);
    while let Some(due) = schedule.next() {
        let lane = level.lanes[k % level.lanes.len()];
        let class = &level.classes[lane];
        k += 1;
        // From when the call was due: a client that fell behind its pace
        // counts the wait (no coordinated omission).
        let t = due;
        let late = t.elapsed().as_secs_f64() * 1e6;
        let got = match conn.as_mut() {
            Some(conn) => conn.call(level.http, &workspace, class, &session),
            None => call_socket(&level.options.client, &workspace, class, &session),
        };
        let us = t.elapsed().as_secs_f64() * 1e6;
        match got {
            Ok(()) => mine.push((lane, us, late)),
            Err(why) if why == NOT_TAKEN => not_taken += 1,
            Err(why) => wrong.push(format!("{}: {why}", class.name)),
        }
    }
    let mut r = recorded
        .lock()
        .map_err(|_| BenchError::Missing("a load client panicked"))?;
    for (lane, us, late) in mine {
        r.samples[lane].push(us);
        r.late[lane].push(late);
    }
    r.errors += wrong.len() as u64;
    r.not_taken += not_taken;
    let room = 5usize.saturating_sub(r.examples.len());
    r.examples.extend(wrong.into_iter().take(room));
    Ok(())
}

/// When a client's calls are due. Closed loop: now, until the window
/// ends. Paced: call `i` at `first + i × period`, the clients' first calls
/// spread across one period; the client sleeps until each is due.
struct Schedule {
    end: Instant,
    paced: Option<(Instant, Duration)>,
    calls: u32,
}

impl Schedule {
    fn new(level: &Level<'_>, n: usize, end: Instant) -> Schedule {
        let spread = n as f64 / level.clients.max(1) as f64;
        Schedule {
            end,
            paced: level
                .pace
                .map(|period| (Instant::now() + period.mul_f64(spread), period)),
            calls: 0,
        }
    }

    /// When the next call is due (after sleeping until then); `None` past
    /// the window.
    fn next(&mut self) -> Option<Instant> {
        let Some((first, period)) = self.paced else {
            return (Instant::now() < self.end).then(Instant::now);
        };
        let due = first + period * self.calls;
        self.calls += 1;
        if due >= self.end {
            return None;
        }
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        Some(due)
    }
}

/// One call of `class` through the agent commands' client, in `session`.
/// `Err(NOT_TAKEN)` when the server did not take it.
pub(super) fn call_socket(
    client: &Client,
    workspace: &Path,
    class: &Class,
    session: &str,
) -> Result<(), String> {
    let mut wire = class.wire.clone();
    wire["session_id"] = json!(session);
    let input = wire.to_string();
    match client(workspace, input.as_bytes()) {
        Answered::NotTaken => Err(NOT_TAKEN.into()),
        Answered::Taken(Err(e)) => Err(format!("server error: {e}")),
        Answered::Taken(Ok((None, _))) => Err("no answer".into()),
        Answered::Taken(Ok((Some(answer), _))) => {
            let kind = crate::soak::classify(&answer);
            if expected(class.expect, &kind) {
                Ok(())
            } else {
                Err(format!("{kind} (expected {})", class.expect))
            }
        }
    }
}

/// A kept-alive connection to `toolgate serve --http`, as Claude Code
/// keeps one.
pub(super) struct HttpConn {
    stream: std::io::BufReader<std::net::TcpStream>,
}

impl HttpConn {
    pub(super) fn open((addr, _): &(String, String)) -> Result<HttpConn, BenchError> {
        let stream = std::net::TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(120)))?;
        Ok(HttpConn {
            stream: std::io::BufReader::new(stream),
        })
    }

    /// Posts `class`'s call as Claude Code's hook input in `session`; `Ok`
    /// when the answer is a 200 whose JSON is what the class expects.
    pub(super) fn call(
        &mut self,
        (addr, token): &(String, String),
        workspace: &Path,
        class: &Class,
        session: &str,
    ) -> Result<(), String> {
        let body = claude_input(&class.wire, workspace, session);
        let mut request = format!(
            "POST /claude-code HTTP/1.1\r\nContent-Type: application/json\r\n\
             Authorization: Bearer {token}\r\nUser-Agent: toolgate-bench\r\n\
             Content-Length: {}\r\nHost: {addr}\r\nConnection: keep-alive\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(&body);
        let io = |e: std::io::Error| format!("transport: {e}");
        self.stream.get_mut().write_all(&request).map_err(io)?;
        let (mut status, mut length, mut line) = (String::new(), 0usize, String::new());
        loop {
            line.clear();
            if self.stream.read_line(&mut line).map_err(io)? == 0 {
                return Err("transport: the server closed the connection".into());
            }
            if status.is_empty() {
                status = line.trim().to_owned();
            } else if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            } else if line == "\r\n" {
                break;
            }
        }
        let mut body = vec![0; length];
        self.stream.read_exact(&mut body).map_err(io)?;
        let answer: Value = serde_json::from_slice(&body)
            .map_err(|_| format!("{status}: an answer that is not JSON"))?;
        let text = answer.to_string();
        if !status.starts_with("HTTP/1.1 200") || text.contains("toolgate could not evaluate") {
            return Err(format!("{status}: {}", toolgate::text::excerpt(&text, 200)));
        }
        let denied = answer["hookSpecificOutput"]["permissionDecision"] == "deny";
        if denied != (class.expect == "deny") {
            return Err(format!(
                "expected {}: {}",
                class.expect,
                toolgate::text::excerpt(&text, 200)
            ));
        }
        Ok(())
    }
}

/// `wire` (a `toolgate check` input) as Claude Code's hook input.
fn claude_input(wire: &Value, workspace: &Path, session: &str) -> Vec<u8> {
    let post = wire["event"] == "post_tool_use";
    let mut input = json!({
        "session_id": session, "transcript_path": "/dev/null", "cwd": workspace,
        "hook_event_name": if post { "PostToolUse" } else { "PreToolUse" },
        "tool_name": wire["tool"], "tool_input": wire["input"],
    });
    if post {
        input["tool_response"] = wire["result"].clone();
    }
    input.to_string().into_bytes()
}

/// The server's resident memory (KiB) and open descriptors now.
pub(super) fn gauges(pid: u32) -> (u64, u64) {
    let rss = crate::soak::status(&pid.to_string(), "VmRSS:");
    (rss, crate::soak::count_fds(pid))
}
