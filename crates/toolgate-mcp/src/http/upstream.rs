//! The server at a URL, and the headers the proxy gives it on every
//! request (`--upstream-header`): most remote MCP servers want a key or a
//! token, and the client's own `Authorization` is the proxy's secret, never
//! forwarded.
//!
//! # Why static headers, and why these refusals
//!
//! A header the operator gives is what gateways (Envoy's
//! `request_headers_to_add`, agentgateway's backend auth) and the clients
//! themselves (`headers` in Claude Code's and Gemini CLI's MCP config)
//! offer first; an OAuth flow toward the server is a program of its own
//! and is not done here. The headers are set once on the client that
//! reaches the server, so the relay and `mcp trust --upstream` send the
//! same. What is refused, before anything is sent:
//!
//! - a header the proxy sets itself or that frames the request (`Host`,
//!   `Content-Type`, `Mcp-Session-Id`, …): one given twice would make the
//!   request ambiguous, and the proxy's own are what the transport needs;
//! - any header toward a plain `http://` server that is not on loopback:
//!   a token would cross the network in clear text (use `https://`);
//! - a name or value that is not a valid header, said by the header's
//!   name and position, never by its value (it is usually a secret).
//!
//! Each value is marked sensitive, so it is never printed by the HTTP
//! stack's debug output; redirects are not followed (see `client_for`),
//! so a header never reaches a host the operator did not name.

use crate::McpError;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// Headers the proxy sets itself, or that frame the request.
const RESERVED: [&str; 12] = [
    "host",
    "content-length",
    "content-type",
    "accept",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "keep-alive",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// An MCP server at a URL, with the headers it is given.
#[derive(Debug, Clone)]
pub struct Upstream {
    pub(crate) url: reqwest::Url,
    pub(crate) headers: HeaderMap,
    /// The URL as messages show it ([`masked`]).
    pub(crate) shown: String,
}

impl Upstream {
    /// The server at `url` (an `http` or `https` URL), given `headers`
    /// (each `Name: value`) on every request.
    ///
    /// # Errors
    ///
    /// [`McpError::Upstream`] when `url` is not an http(s) URL with a
    /// host, and [`McpError::UpstreamHeader`] when a header is malformed,
    /// reserved, or would be sent in clear text off the machine.
    pub fn new(url: &str, headers: &[String]) -> Result<Self, McpError> {
        let refuse = |why: &str| McpError::Upstream {
            url: masked_str(url),
            why: why.to_owned(),
        };
        let parsed = reqwest::Url::parse(url).map_err(|e| refuse(&e.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(refuse("only http:// and https:// URLs are MCP servers"));
        }
        if parsed.host().is_none() {
            return Err(refuse("it names no host"));
        }
        let mut map = HeaderMap::new();
        for (at, given) in headers.iter().enumerate() {
            let (name, value) =
                header(given).map_err(|why| McpError::UpstreamHeader { at: at + 1, why })?;
            if parsed.scheme() == "http" && !is_loopback(&parsed) {
                return Err(McpError::UpstreamHeader {
                    at: at + 1,
                    why: format!(
                        "{name} would cross the network in clear text to {}: use an https:// URL",
                        parsed.host_str().unwrap_or_default()
                    ),
                });
            }
            map.append(name, value);
        }
        Ok(Upstream {
            shown: masked(&parsed),
            url: parsed,
            headers: map,
        })
    }

    /// The server's URL.
    pub fn url(&self) -> &str {
        self.url.as_str()
    }

    /// The server's URL as a message may show it: [`masked`].
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

/// One `Name: value`, checked; the error names the header, never its value.
fn header(given: &str) -> Result<(HeaderName, HeaderValue), String> {
    let Some((name, value)) = given.split_once(':') else {
        return Err("not `Name: value` (no colon)".to_owned());
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| "its name is not a valid HTTP header name".to_owned())?;
    if RESERVED.contains(&name.as_str()) {
        return Err(format!(
            "{name} is set by the proxy itself (the transport needs its own)"
        ));
    }
    let value = value.trim();
    if value.is_empty() {
        return Err(format!("{name} has an empty value"));
    }
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        format!("the value of {name} is not a valid header value (a control character?)")
    })?;
    value.set_sensitive(true);
    Ok((name, value))
}

/// `url` as a message shows it. Messages about the server (a refusal, a
/// 404, a server that cannot be reached, the command that reviews it)
/// reach the client and the model; a URL often carries a key (`?api_key=`,
/// `user:token@`, a token as a path segment), and header values were
/// already masked where URLs were not. So: the user info, every query
/// value, the fragment, and any path segment that looks like a token (20
/// characters or more, letters and digits mixed) are shown as `<…>`;
/// the scheme, host, port and the rest of the path stay, so the server is
/// still recognisable.
pub(crate) fn masked(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://", url.scheme());
    if !url.username().is_empty() || url.password().is_some() {
        shown.push_str("<userinfo>@");
    }
    shown.push_str(url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        shown.push_str(&format!(":{port}"));
    }
    let path: Vec<&str> = url
        .path()
        .split('/')
        .map(|segment| {
            if looks_like_token(segment) {
                "<token>"
            } else {
                segment
            }
        })
        .collect();
    shown.push_str(&path.join("/"));
    if let Some(query) = url.query() {
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}=<value>"),
                None => "<value>".to_owned(),
            })
            .collect();
        shown.push('?');
        shown.push_str(&pairs.join("&"));
    }
    if url.fragment().is_some() {
        shown.push_str("#<fragment>");
    }
    shown
}

/// [`masked`] for what was given, even when it is not a URL: cut at the
/// query and fragment, without what precedes an `@`.
pub fn masked_str(given: &str) -> String {
    if let Ok(url) = reqwest::Url::parse(given) {
        return masked(&url);
    }
    let cut = given.split(['?', '#']).next().unwrap_or_default();
    let cut = match (cut.split_once("://"), cut.rsplit_once('@')) {
        (Some((scheme, _)), Some((_, host))) => format!("{scheme}://<userinfo>@{host}"),
        _ => cut.to_owned(),
    };
    if cut.len() < given.len() && !given.contains('@') {
        format!("{cut}<…>")
    } else {
        cut
    }
}

fn looks_like_token(segment: &str) -> bool {
    segment.len() >= 20
        && segment.bytes().any(|b| b.is_ascii_digit())
        && segment.bytes().any(|b| b.is_ascii_alphabetic())
}

/// Before anything is sent to a server on this machine: whether what
/// listens there is this user's. A loopback port is open to every user;
/// one who listens on the port of an upstream that is not running received
/// the `--upstream-header` token (from the proxy and from `mcp trust`) and
/// answered for the server. Checked before every request (the kernel is
/// asked by address, tens of microseconds), so a port taken over between
/// two requests is caught too; a server elsewhere is the network's, and
/// TLS's to authenticate. `localhost` is checked as both loopback
/// addresses a client may try.
pub(crate) fn owned_here(url: &reqwest::Url) -> Result<(), String> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    if !is_loopback(url) {
        return Ok(());
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let ips: Vec<IpAddr> = match url.host_str() {
        Some("localhost") | None => vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()],
        Some(host) => host
            .trim_matches(['[', ']'])
            .parse::<IpAddr>()
            .map(|ip| vec![ip])
            .unwrap_or_default(),
    };
    let mut found = false;
    for ip in ips {
        match toolgate_loopback::listener_is_this_users(SocketAddr::new(ip, port)) {
            Ok(()) => found = true,
            // Nothing on one of localhost's two addresses is fine if this
            // user's server is on the other.
            Err(why) if why.starts_with("nothing of this user's") => {}
            Err(why) => return Err(why),
        }
    }
    if found {
        Ok(())
    } else {
        Err(format!(
            "nothing of this user's listens on port {port} of {}: nothing was sent",
            url.host_str().unwrap_or_default()
        ))
    }
}

/// Whether `url` names this machine: `localhost` or a loopback address.
pub(crate) fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host_str() {
        Some("localhost") => true,
        Some(host) => host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str, header: &str) -> String {
        match Upstream::new(url, &[header.to_owned()]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{header} was accepted"),
        }
    }

    #[test]
    fn a_header_never_crosses_the_network_in_clear_text() {
        let why = refused("http://mcp.example.com/mcp", "Authorization: Bearer s3cret");
        assert!(why.contains("clear text"), "{why}");
        assert!(!why.contains("s3cret"), "{why}");
        for url in [
            "https://mcp.example.com/mcp",
            "http://127.0.0.1:9/mcp",
            "http://[::1]:9/",
        ] {
            assert!(
                Upstream::new(url, &["Authorization: Bearer x".into()]).is_ok(),
                "{url}"
            );
        }
    }

    #[test]
    fn the_transports_own_headers_cannot_be_given() {
        for name in [
            "Host",
            "content-type",
            "Mcp-Session-Id",
            "Accept",
            "Content-Length",
        ] {
            let why = refused("https://h/mcp", &format!("{name}: x"));
            assert!(why.contains("set by the proxy"), "{name}: {why}");
        }
    }

    #[test]
    fn a_malformed_header_is_named_by_position_and_never_quoted() {
        for (given, said) in [
            ("Authorization Bearer s3cret", "no colon"),
            ("Bad Name: s3cret", "not a valid HTTP header name"),
            ("X-Key: s3cret\u{1}", "not a valid header value"),
            ("X-Key:   ", "empty value"),
        ] {
            let why = refused("https://h/mcp", given);
            assert!(why.contains(said), "{given:?}: {why}");
            assert!(why.contains("--upstream-header #1"), "{why}");
            assert!(!why.contains("s3cret"), "{given:?}: {why}");
        }
    }

    #[test]
    fn a_urls_secrets_are_never_shown() {
        for (given, shown) in [
            (
                "https://mcp.example.com/mcp?api_key=s3cret&v=2",
                "https://mcp.example.com/mcp?api_key=<value>&v=<value>",
            ),
            (
                "https://me:s3cret@mcp.example.com:8443/mcp#s3cret",
                "https://<userinfo>@mcp.example.com:8443/mcp#<fragment>",
            ),
            (
                "https://actions.example.com/mcp/sk-ak-s3cret0123456789abcdef/sse",
                "https://actions.example.com/mcp/<token>/sse",
            ),
            ("http://127.0.0.1:9/mcp", "http://127.0.0.1:9/mcp"),
        ] {
            let upstream = Upstream::new(given, &[]).unwrap();
            assert_eq!(upstream.shown(), shown);
        }
        let why = match Upstream::new("ftp://h/mcp?key=s3cret", &[]) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("ftp accepted"),
        };
        assert!(!why.contains("s3cret"), "{why}");
        assert!(!masked_str("not a url ?key=s3cret").contains("s3cret"));
        assert!(!masked_str("http://u:s3cret@[bad/").contains("s3cret"));
    }

    #[test]
    fn each_value_is_marked_sensitive() {
        let upstream =
            Upstream::new("https://h/mcp", &["Authorization: Bearer s3cret".into()]).unwrap();
        let value = upstream.headers.get("authorization").unwrap();
        assert!(value.is_sensitive());
        assert!(!format!("{upstream:?}").contains("s3cret"));
    }
}
