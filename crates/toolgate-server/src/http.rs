//! `toolgate serve --http 127.0.0.1:PORT`: answer Claude Code's
//! `"type": "http"` hooks, so no process is started per tool call.
//!
//! # Why HTTP, and why only this much of it
//!
//! Claude Code spawns a command hook through a shell for every call (tens of
//! milliseconds inside the agent, most of it the spawn); an http hook is a
//! POST on a connection it keeps alive. The socket protocol cannot be
//! offered instead: Claude Code speaks only HTTP to a URL. So the server
//! listens on a loopback TCP port too, and everything on that port is
//! treated as coming from an attacker until shown otherwise, because unlike
//! the Unix socket (0700 directory, `SO_PEERCRED`) a TCP port on loopback is
//! open to every user on the machine and to every web page in the user's
//! browser:
//!
//! - **Loopback only**, given as an IP literal: a LAN address, `0.0.0.0` or
//!   a host name is refused at start.
//! - **A per-user secret**: 32 bytes from the OS, hex, in
//!   `$XDG_STATE_HOME/toolgate/http-token` (beside the trust store; created
//!   0600 atomically, refused if it is a symlink, another user's, or open to
//!   group or others, and its directory is checked as the trust store's is).
//!   Every request carries it as `Authorization: Bearer <token>`, compared in
//!   constant time. Claude Code reads it from `$TOOLGATE_HTTP_TOKEN`
//!   (`allowedEnvVars`), so the secret is in no settings file.
//! - **DNS rebinding**: the `Host` header must be exactly the literal
//!   `ip:port` the server listens on; `localhost:PORT` or a rebound name is
//!   refused before anything else is read.
//! - **No browser**: a request with any `Origin` header is refused (Claude
//!   Code sends none: live, 2.1.197 and 2.1.332 send `Content-Type`,
//!   `Authorization`, `User-Agent: axios/…`, `Host` and nothing else), as is
//!   a body that is not `application/json` (the form and `text/plain` posts a
//!   page may send without a preflight). A preflight (`OPTIONS`) is a 405
//!   without any `Access-Control-*` header, and no answer ever carries one.
//! - **Bounded**: headers must arrive within [`HEADER_TIMEOUT`] and within
//!   hyper's buffer; a body over [`MAX_BODY`] is refused by its length before
//!   it is read, and a chunked one is cut at the bound; at most
//!   [`MAX_CONNECTIONS`] connections are served at once (the rest wait in the
//!   kernel's queue).
//! - **This user's connections only**: a connection from a process of
//!   another user (found in the kernel's socket tables, `toolgate_loopback::peers`) is
//!   closed as it is accepted, before it takes a slot: nobody else has the
//!   token, and 300 idle connections of another user's held every slot.
//!   And the other way: `doctor` and `install --http` send the token only
//!   to a listener of this user's ([`probe`]).
//!
//! # The same answer as the command
//!
//! The hook input is evaluated by the server's own `evaluate`, in Claude
//! Code's mode, exactly as a forwarded `toolgate claude-code` call is. The
//! workspace is found from the input's `cwd` (walking up to the nearest
//! `.toolgate/`): Claude Code does not interpolate `$CLAUDE_PROJECT_DIR`
//! into an http hook's headers (live: the header arrives empty), so the
//! project variable the command path prefers is not available here. The
//! global config directory, the trust store and `PATH` are the server's own
//! environment's: it is the user's own process, started by the user.
//!
//! Where the command path blocks on toolgate's own failure (exit 2 with the
//! reason), the HTTP answer is a 200 with Claude Code's JSON block for the
//! event, with the reason: live, that is the only failure answer both
//! pinned releases block on. 2.1.197 lets the call through on a non-2xx
//! status, a body that is not JSON, a timeout or a refused connection,
//! `"onFailure": "block"` or not; 2.1.332 blocks on each of them when the
//! handler says `"onFailure": "block"`. Refusals before evaluation (a
//! missing secret, a wrong `Host`) are 4xx: they are not Claude Code's calls.

use crate::server::Server;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use toolgate::agent::AgentHook as _;
use toolgate::agent::{Outward, ReadAgentInputError};
use toolgate::serve::{Body, Evaluate, Mode};
use toolgate_loopback::{Peers, Token, accept_each, bind, loopback_gate, parse_addr, token_path};

/// The longest hook input: what `toolgate claude-code` accepts on stdin.
pub(crate) const MAX_BODY: u64 = toolgate_hook::env::MAX_STDIN;

/// How long a client has to send its request's headers (on a new or an
/// idle kept-alive connection).
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client has to send the body once the headers are in.
const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections served at once. Claude Code keeps its connection alive
/// between calls, and a kept-alive connection holds its slot until it has
/// been idle for [`HEADER_TIMEOUT`]: with 32, the 33rd concurrent session
/// waited in the kernel's queue for as long as the others kept calling
/// (the load bench's 128 clients showed it). Each connection costs a task
/// and at most its 64 KiB buffer; the work they bring is bounded by
/// `--max-in-flight`, not by this.
pub(crate) const MAX_CONNECTIONS: usize = 256;

/// The agent that POSTs hooks, and the path it POSTs them to.
const AGENT: Outward = Outward::ClaudeCode;

/// One HTTP listener's state.
pub(crate) struct Http {
    server: Arc<Server>,
    token: Token,
    /// The exact `Host` a request must carry.
    host: String,
}

/// Binds `addr`, says where on stderr, and answers until the runtime stops.
pub(crate) async fn listen(
    server: Arc<Server>,
    addr: SocketAddr,
    token: Token,
) -> anyhow::Result<()> {
    let (listener, host) = bind(addr).await?;
    eprintln!("toolgate serve: http on http://{host}");
    // For `toolgate install --http` and `doctor` to find (they check it
    // answers: a file left by a server that died is no answer).
    if let Some(path) = token_path().map(|p| p.with_file_name("http-url")) {
        let _ = std::fs::write(path, format!("http://{host}/{}\n", AGENT.name()));
    }
    let http = Arc::new(Http {
        server,
        token,
        host,
    });
    accept_each(listener, MAX_CONNECTIONS, Peers::ThisUser, move |stream| {
        connection(http.clone(), stream)
    });
    Ok(())
}

async fn connection(http: Arc<Http>, stream: tokio::net::TcpStream) {
    let service = hyper::service::service_fn(move |request| {
        let http = http.clone();
        async move { Ok::<_, std::convert::Infallible>(answer(&http, request).await) }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout())
        .max_buf_size(64 * 1024)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
        .await;
}

fn header_timeout() -> Duration {
    // For the test that pins the timeout without waiting ten seconds;
    // compiled out of release builds.
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("TOOLGATE_DEBUG_HTTP_HEADER_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_millis(ms);
    }
    HEADER_TIMEOUT
}

type Answer = Response<Full<Bytes>>;

fn text(status: StatusCode, why: &str) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(format!("toolgate: {why}\n"))));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    answer
}

fn json_answer(value: &Value) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(value.to_string())));
    answer.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    answer
}

/// Why a request is refused before anything is evaluated; `None`: it may be
/// read.
fn refusal(http: &Http, request: &Request<Incoming>) -> Option<Answer> {
    let headers = request.headers();
    if let Err((status, why)) = loopback_gate(&http.host, headers) {
        return Some(text(status, &why));
    }
    if request.uri().path() != format!("/{}", AGENT.name()) {
        return Some(text(
            StatusCode::NOT_FOUND,
            &format!("no such hook; POST /{}", AGENT.name()),
        ));
    }
    if request.method() != Method::POST {
        let mut answer = text(StatusCode::METHOD_NOT_ALLOWED, "only POST");
        answer.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("POST"),
        );
        return Some(answer);
    }
    if !http.token.admits(headers.get(AUTHORIZATION)) {
        return Some(text(
            StatusCode::UNAUTHORIZED,
            "refused: no or a wrong `Authorization: Bearer` secret (see toolgate install \
             claude-code --http)",
        ));
    }
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Some(text(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "refused: the body must be application/json",
        ));
    }
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|n| n > MAX_BODY) {
        return Some(too_large());
    }
    None
}

fn too_large() -> Answer {
    text(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!("refused: the body is longer than {MAX_BODY} bytes"),
    )
}

async fn answer(http: &Http, request: Request<Incoming>) -> Answer {
    if let Some(refused) = refusal(http, &request) {
        return refused;
    }
    let body = Limited::new(request.into_body(), MAX_BODY as usize);
    let bytes = match tokio::time::timeout(BODY_TIMEOUT, body.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
        Ok(Err(e)) => return text(StatusCode::BAD_REQUEST, &format!("the body: {e}")),
        Err(_) => {
            return text(
                StatusCode::REQUEST_TIMEOUT,
                &format!(
                    "the body did not arrive within {} s",
                    BODY_TIMEOUT.as_secs()
                ),
            );
        }
    };
    evaluated(http, &bytes).await
}

/// Claude Code's answer to the hook input `bytes`.
async fn evaluated(http: &Http, bytes: &[u8]) -> Answer {
    let unreadable = |why: String| {
        text(
            StatusCode::BAD_REQUEST,
            &format!("toolgate could not read this hook input, so the call is blocked: {why}"),
        )
    };
    let Ok(input) = std::str::from_utf8(bytes) else {
        return unreadable("it is not UTF-8".into());
    };
    let call = match toolgate::agent::read_agent_input(bytes, AGENT) {
        Ok(call) => call,
        // An event toolgate does not know or judge is refused in the answer
        // that blocks (a non-2xx status lets the call through in releases
        // before 2.1.295), never read as nothing to say.
        Err(
            e @ (ReadAgentInputError::UnknownEvent(_) | ReadAgentInputError::UnjudgedToolEvent(_)),
        ) => return blocked("", &toolgate::text::error_chain(&e)),
        Err(e) => return unreadable(toolgate::text::error_chain(&e)),
    };
    if call.request.is_none() {
        // An event toolgate has no part in: nothing to say.
        return json_answer(&json!({}));
    }
    let event = call.hook_event_name.clone();
    let Some(cwd) = call.cwd.as_deref() else {
        return blocked(
            &event,
            "the hook input names no cwd, so no workspace can be found",
        );
    };
    let workspace = match toolgate_hook::hook_process::workspace_from_cwd(Some(cwd)) {
        Ok(workspace) => workspace,
        Err(e) => return blocked(&event, &format!("{e:#}")),
    };
    let deadline = toolgate_hook::hook_process::deadline_within(
        call.timeout.unwrap_or_else(|| AGENT.default_hook_timeout()),
    );
    // Claude Code has no fallback to hand a busy call back to: it waits for
    // a slot within its deadline, and is blocked (never let through) if
    // none frees; the wait comes off the chain's deadline.
    let asked = std::time::Instant::now();
    let _slot = match http.server.admit_by(asked + deadline).await {
        Ok(slot) => slot,
        Err(busy) => {
            return blocked(
                &event,
                &format!(
                    "the toolgate server is busy ({} calls in flight, at most {}) and no slot \
                     freed within the call's {} ms",
                    busy.in_flight,
                    busy.limit,
                    deadline.as_millis()
                ),
            );
        }
    };
    let deadline = deadline.saturating_sub(asked.elapsed());
    let evaluation = Evaluate {
        mode: Mode::Agent(AGENT),
        workspace,
        input: input.to_owned(),
        event: None,
        tool: None,
        deadline_ms: Some(u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX)),
        context: http.server.own_context().clone(),
    };
    match crate::server::evaluate(&http.server, evaluation).await {
        Body::Evaluated { stdout, .. } => json_answer(&stdout.unwrap_or_else(|| json!({}))),
        Body::Error { error, .. } => blocked(&event, &error),
        Body::Ack { .. } | Body::Busy { .. } | Body::Status { .. } | Body::Metrics { .. } => {
            blocked(&event, "the server gave no answer to this call")
        }
    }
}

/// Claude Code's block for `event`, with toolgate's reason: a deny before
/// the call, `decision: block` after it (the model reads the reason).
fn blocked(event: &str, why: &str) -> Answer {
    let reason = format!(
        "toolgate could not evaluate this call, so it is blocked: {}",
        toolgate::text::sanitize(why)
    );
    json_answer(&match event {
        "PreToolUse" => json!({"hookSpecificOutput": {"hookEventName": event,
            "permissionDecision": "deny", "permissionDecisionReason": reason}}),
        // Judged as its call, refused in its own form.
        "PermissionRequest" => json!({"hookSpecificOutput": {"hookEventName": event,
            "decision": {"behavior": "deny", "message": reason}}}),
        // Every other event (after the call, or one toolgate refuses
        // unread): the top-level block.
        _ => json!({"decision": "block", "reason": reason}),
    })
}

/// The URL a running server answers Claude Code's hooks on, if one does.
pub fn running_url() -> Option<String> {
    let path = token_path()?.with_file_name("http-url");
    let url = std::fs::read_to_string(path).ok()?.trim().to_owned();
    probe(&url).ok().map(|()| url)
}

/// Whether the server at `url` answers a hook with this user's secret
/// (an event toolgate has no part in, so nothing is evaluated).
pub fn probe(url: &str) -> Result<(), String> {
    use std::io::{Read, Write};
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("{url} is not an http:// URL"))?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = parse_addr(host).map_err(|e| e.to_string())?;
    let token = token_path()
        .ok_or_else(|| "no place for the secret (HOME is not set)".to_owned())
        .and_then(|p| Token::read(&p).map_err(|e| e.to_string()))?
        .ok_or_else(|| "no secret yet (no server with --http has run as this user)".to_owned())?;
    let body =
        json!({"session_id": "toolgate-probe", "hook_event_name": "Notification"}).to_string();
    let request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Authorization: Bearer {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        token.secret(),
        body.len()
    );
    let wait = Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&addr, wait)
        .map_err(|e| format!("nothing answers on {addr}: {e}"))?;
    // The token goes only to a listener of this user's: another user may
    // listen on a port a stopped server recorded.
    let me = nix::unistd::geteuid().as_raw();
    let owner = stream
        .local_addr()
        .ok()
        .and_then(|ours| toolgate_loopback::peers::peer_uid(ours, addr));
    if owner != Some(me) {
        return Err(match owner {
            Some(uid) => format!(
                "what listens on {addr} runs as uid {uid}, not as this user (uid {me}): it is \
                 not this user's toolgate server, and the secret was not sent to it"
            ),
            None => format!(
                "who listens on {addr} cannot be told (the kernel lists no such connection): \
                 the secret was not sent"
            ),
        });
    }
    let _ = stream.set_read_timeout(Some(wait));
    stream
        .write_all(request.as_bytes())
        .map_err(|e| format!("{addr}: {e}"))?;
    let mut answer = Vec::new();
    let _ = stream.take(64 * 1024).read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    let status = answer.split_whitespace().nth(1).unwrap_or("no answer");
    if status == "200" {
        Ok(())
    } else {
        let why = answer.split("\r\n\r\n").nth(1).unwrap_or("").trim();
        Err(format!(
            "{url} answered {status}: {}",
            toolgate::text::sanitize(why)
        ))
    }
}
