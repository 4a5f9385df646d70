//! The loopback HTTP kit: what every loopback TCP listener of toolgate's
//! answers by, and what a client checks before it sends a secret to one.
//! `toolgate serve --http` and `--metrics`, and `toolgate mcp --listen`
//! (with its `--upstream` check) use it; nothing else of the server.
//!
//! # Why a crate of its own
//!
//! A loopback port is open to every user on the machine and to every page
//! in the user's browser, so each listener must refuse the same things the
//! same way: an address that is not a loopback IP literal, a `Host` that is
//! not the literal address (DNS rebinding), an `Origin` (a browser page), a
//! connection from another user's process (the kernel's socket tables,
//! [`peers`]), a request without the per-user secret ([`Token`]). The MCP
//! proxy took these from the server crate, and so depended on all of the
//! server to share one module; here they are the one thing both import,
//! and the crate graph (`tests/all/layers.rs`) says so.

use hyper::StatusCode;
use hyper::header::{HOST, ORIGIN};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub mod backoff;
pub mod peers;

/// What `--http` was given: a loopback IP literal with a port.
pub fn parse_addr(given: &str) -> anyhow::Result<SocketAddr> {
    parse_loopback("--http", given)
}

/// What `flag` was given: a loopback IP literal with a port (`--http`,
/// `--metrics`).
pub fn parse_loopback(flag: &str, given: &str) -> anyhow::Result<SocketAddr> {
    let addr: SocketAddr = given.parse().map_err(|_| {
        anyhow::anyhow!(
            "{flag} {given:?} is not an IP address with a port (e.g. 127.0.0.1:8787 or \
             [::1]:0); a host name is not accepted, so what it resolves to cannot change"
        )
    })?;
    if !addr.ip().is_loopback() {
        anyhow::bail!(
            "{flag} {given}: {} is not a loopback address; toolgate serve answers only on \
             127.0.0.0/8 or ::1, never on an address other machines can reach",
            addr.ip()
        );
    }
    Ok(addr)
}

/// Where the secret is kept: `$XDG_STATE_HOME/toolgate/http-token`, else
/// `~/.local/state/toolgate/http-token` (beside the trust store).
pub fn token_path() -> Option<PathBuf> {
    toolgate_hook::env::dir("XDG_STATE_HOME")
        .map(|d| d.join("toolgate"))
        .or_else(|| toolgate_hook::env::dir("HOME").map(|h| h.join(".local/state/toolgate")))
        .map(|d| d.join("http-token"))
}

/// The per-user secret, created when there is none yet.
pub struct Token(String);

/// Never prints the secret.
impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Reads the secret at `path`, or creates it (0600, atomically: written
    /// beside it, then linked into place only if nothing is there).
    pub fn load_or_create(path: &Path) -> anyhow::Result<Token> {
        use std::os::unix::fs::DirBuilderExt;
        let refuse = |why: String| anyhow::anyhow!("the HTTP secret {}: {why}", path.display());
        let dir = path
            .parent()
            .ok_or_else(|| refuse("it has no directory".into()))?;
        if std::fs::symlink_metadata(dir).is_err() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| refuse(format!("its directory cannot be created: {e}")))?;
        }
        check_dir(dir).map_err(|why| refuse(format!("its directory {}", why)))?;
        if let Some(token) = Token::read(path)? {
            return Ok(token);
        }
        let mut secret = [0u8; 32];
        getrandom::fill(&mut secret)
            .map_err(|e| refuse(format!("no randomness from the OS: {e}")))?;
        let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        let mut file = tempfile::Builder::new()
            .prefix(".http-token")
            .tempfile_in(dir)
            .map_err(|e| refuse(format!("it cannot be written: {e}")))?;
        std::io::Write::write_all(&mut file, hex.as_bytes())
            .map_err(|e| refuse(format!("it cannot be written: {e}")))?;
        match file.persist_noclobber(path) {
            Ok(_) => Ok(Token(hex)),
            // Another server created it meanwhile: use theirs.
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                Token::read(path)?.ok_or_else(|| refuse("it vanished while created".into()))
            }
            Err(e) => Err(refuse(format!("it cannot be written: {}", e.error))),
        }
    }

    /// The secret at `path`; `None` when there is none. Refused when it is a
    /// symlink, not a regular file, another user's, or open to group or
    /// others (judged on the open descriptor, not on the path).
    pub fn read(path: &Path) -> anyhow::Result<Option<Token>> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let refuse = |why: String| anyhow::anyhow!("the HTTP secret {}: {why}", path.display());
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
                return Err(refuse("it is a symlink; remove it".into()));
            }
            Err(e) => return Err(refuse(format!("it cannot be opened: {e}"))),
        };
        let meta = file
            .metadata()
            .map_err(|e| refuse(format!("it cannot be inspected: {e}")))?;
        if !meta.is_file() {
            return Err(refuse("it is not a regular file".into()));
        }
        let me = nix::unistd::geteuid().as_raw();
        if meta.uid() != me {
            return Err(refuse(format!(
                "it belongs to uid {}, not to this user (uid {me})",
                meta.uid()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(refuse(format!(
                "it is readable or writable by group or others (mode {:o}); chmod 600 it, or \
                 remove it for a new one",
                meta.mode() & 0o777
            )));
        }
        let mut text = String::new();
        file.take(1024)
            .read_to_string(&mut text)
            .map_err(|e| refuse(format!("it cannot be read: {e}")))?;
        let text = text.trim();
        if text.len() < 32 || !text.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(refuse(
                "it does not hold a secret toolgate wrote; remove it for a new one".into(),
            ));
        }
        Ok(Some(Token(text.to_owned())))
    }

    /// The secret, to send as `Authorization: Bearer …` to this user's
    /// own listener (and nowhere else).
    pub fn secret(&self) -> &str {
        &self.0
    }

    /// Whether `header` is `Bearer <this secret>`, in constant time.
    #[must_use]
    pub fn admits(&self, header: Option<&hyper::header::HeaderValue>) -> bool {
        use subtle::ConstantTimeEq;
        let Some(given) = header.and_then(|h| h.as_bytes().strip_prefix(b"Bearer ")) else {
            return false;
        };
        bool::from(given.ct_eq(self.0.as_bytes()))
    }
}

/// The directory holding the secret: this user's, not a symlink, closed to
/// group and others, in a parent others cannot rename it out of.
fn check_dir(dir: &Path) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("cannot be read: {e}"))?;
    if meta.file_type().is_symlink() {
        return Err("is a symlink".into());
    }
    if !meta.is_dir() {
        return Err("is not a directory".into());
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(format!("belongs to uid {}, not to uid {me}", meta.uid()));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(format!(
            "is open to group or others (mode {:o})",
            meta.mode() & 0o777
        ));
    }
    if let Some(parent) = dir.canonicalize().ok().as_deref().and_then(Path::parent) {
        let meta = std::fs::metadata(parent).map_err(|e| format!("'s parent: {e}"))?;
        if (meta.uid() != me && meta.uid() != 0) || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "is in {}, which another user could change",
                parent.display()
            ));
        }
    }
    Ok(())
}

/// Binds the loopback `addr` (`--http`, `--metrics`): the listener, and the
/// exact `Host` a request to it must carry (`ip:port`, `[ip]:port`).
/// `toolgate mcp --upstream` listens through it too.
pub async fn bind(addr: SocketAddr) -> anyhow::Result<(tokio::net::TcpListener, String)> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
    let bound = listener.local_addr()?;
    let host = match bound.ip() {
        IpAddr::V4(ip) => format!("{ip}:{}", bound.port()),
        IpAddr::V6(ip) => format!("[{ip}]:{}", bound.port()),
    };
    Ok((listener, host))
}

/// Whose connections a listener serves.
#[derive(Clone, Copy, Debug)]
pub enum Peers {
    /// Only processes of the user the server runs as (the hook endpoint:
    /// nobody else has the token, so another user's connection can only
    /// take a slot from the user's agent). Judged from the kernel's socket
    /// tables (`peers`) as each connection is accepted, and
    /// closed at once otherwise, so it never holds a slot.
    ThisUser,
    /// Anyone on loopback (`--metrics`: Prometheus may run as a user of
    /// its own).
    Anyone,
}

/// Serves each connection `listener` accepts with `serve`, at most `max` at
/// once (the rest wait in the kernel's queue), until the runtime stops; a
/// failing `accept` (out of descriptors) backs off instead of spinning. A
/// connection from a peer `peers` does not admit is closed before it takes
/// a slot.
pub fn accept_each<F, S>(listener: tokio::net::TcpListener, max: usize, peers: Peers, serve: F)
where
    F: Fn(tokio::net::TcpStream) -> S + Send + 'static,
    S: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(tokio::sync::Semaphore::new(max));
    tokio::spawn(async move {
        let mut backoff = crate::backoff::Backoff::default();
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            match listener.accept().await {
                Ok((stream, theirs)) => {
                    backoff.succeeded();
                    let admitted = match peers {
                        Peers::ThisUser => this_user(&stream, theirs),
                        Peers::Anyone => true,
                    };
                    if !admitted {
                        drop(stream);
                        continue;
                    }
                    let _ = stream.set_nodelay(true);
                    let served = serve(stream);
                    tokio::spawn(async move {
                        served.await;
                        drop(slot);
                    });
                }
                Err(e) => tokio::time::sleep(backoff.failed(&e)).await,
            }
        }
    });
}

/// Whether the process at the other end of `stream` runs as this user.
fn this_user(stream: &tokio::net::TcpStream, theirs: SocketAddr) -> bool {
    let me = nix::unistd::geteuid().as_raw();
    stream
        .local_addr()
        .ok()
        .and_then(|ours| crate::peers::peer_uid(ours, theirs))
        == Some(me)
}

/// The first rules of every loopback listener that answers a secret
/// holder (the hook endpoint, `toolgate mcp --upstream`): the `Host` header
/// is exactly the literal address listened on (no DNS rebinding), and no
/// `Origin` header but the listener's own, `http://<host>` (a page of any
/// other origin is a browser's; the listener serves no page, so its own
/// origin is no web page's, and the MCP transport tells clients that send
/// one to send it: the conformance suite's DNS-rebinding scenario does).
/// `Err`: the status and why, to answer before anything else is read.
///
/// # Errors
///
/// The status to refuse with, and why.
pub fn loopback_gate(host: &str, headers: &hyper::HeaderMap) -> Result<(), (StatusCode, String)> {
    let mut hosts = headers.get_all(HOST).iter();
    let host_ok =
        matches!((hosts.next(), hosts.next()), (Some(h), None) if h.as_bytes() == host.as_bytes());
    if !host_ok {
        return Err((
            StatusCode::MISDIRECTED_REQUEST,
            format!("refused: the Host header must be exactly {host}"),
        ));
    }
    let own = format!("http://{host}");
    let mut origins = headers.get_all(ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (None, _) => Ok(()),
        (Some(origin), None) if origin.as_bytes() == own.as_bytes() => Ok(()),
        _ => Err((
            StatusCode::FORBIDDEN,
            format!(
                "refused: a request with an Origin header other than {own} comes from a \
                 browser page"
            ),
        )),
    }
}

/// Whether what listens on `addr` (a loopback address another program
/// serves) is this user's, before anything is sent to it: a loopback port
/// is open to every user, and one who listens on the port of a server that
/// is not running receives whatever is sent there (a token in a header).
/// `Err` says who listens instead, or that nothing does (closed world: a
/// listener that cannot be found is not this user's).
pub fn listener_is_this_users(addr: SocketAddr) -> Result<(), String> {
    let me = nix::unistd::geteuid().as_raw();
    let uids = crate::peers::listener_uids(addr);
    match uids.iter().find(|&&uid| uid != me) {
        Some(uid) => Err(format!(
            "what listens on {addr} runs as uid {uid}, not as this user (uid {me}): nothing was \
             sent to it"
        )),
        None if uids.is_empty() => Err(format!(
            "nothing of this user's listens on {addr}: nothing was sent"
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(hyper::header::HeaderName, &str)]) -> hyper::HeaderMap {
        let mut headers = hyper::HeaderMap::new();
        for (name, value) in pairs {
            headers.append(name.clone(), value.parse().unwrap());
        }
        headers
    }

    #[test]
    fn the_gate_takes_the_exact_host_and_no_origin_but_the_listeners_own() {
        let host = "127.0.0.1:8788";
        let ok = |pairs: &[(hyper::header::HeaderName, &str)]| {
            loopback_gate(host, &with(pairs)).map_err(|(status, _)| status.as_u16())
        };
        assert_eq!(ok(&[(HOST, host)]), Ok(()));
        assert_eq!(
            ok(&[(HOST, host), (ORIGIN, "http://127.0.0.1:8788")]),
            Ok(())
        );
        for origin in [
            "http://localhost:8788",
            "https://127.0.0.1:8788",
            "null",
            "http://127.0.0.1:8789",
            "http://evil.example",
        ] {
            assert_eq!(ok(&[(HOST, host), (ORIGIN, origin)]), Err(403), "{origin}");
        }
        let twice = [
            (HOST, host),
            (ORIGIN, "http://127.0.0.1:8788"),
            (ORIGIN, "http://evil.example"),
        ];
        assert_eq!(ok(&twice), Err(403));
        assert_eq!(ok(&[(HOST, "localhost:8788")]), Err(421));
        assert_eq!(ok(&[(HOST, host), (HOST, host)]), Err(421));
    }
}
