//! `GET /metrics` on the loopback address `--metrics` names: the series
//! [`super::Metrics`] counts, served by the rules every loopback listener
//! of the server keeps (`crate::http`). Apart from the counters: counting
//! needs no HTTP, and the counters are what every host's observer uses.

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::{Method, Request, Response, StatusCode};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use toolgate_loopback::Peers;

/// Connections served at once; a scraper needs one.
const MAX_CONNECTIONS: usize = 4;

/// How long a scraper has to send its request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Binds `addr`, says where on stderr, and answers `GET /metrics` until the
/// runtime stops.
pub(crate) async fn listen(
    server: Arc<crate::server::Server>,
    addr: SocketAddr,
) -> anyhow::Result<()> {
    let (listener, host) = toolgate_loopback::bind(addr).await?;
    eprintln!("toolgate serve: metrics on http://{host}/metrics");
    let host: Arc<str> = host.into();
    toolgate_loopback::accept_each(listener, MAX_CONNECTIONS, Peers::Anyone, move |stream| {
        let (server, host) = (server.clone(), host.clone());
        async move {
            let service = hyper::service::service_fn(move |request| {
                let answer = answer(&server, &host, &request);
                async move { Ok::<_, std::convert::Infallible>(answer) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .max_buf_size(16 * 1024)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        }
    });
    Ok(())
}

fn plain(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut answer = Response::new(Full::new(Bytes::from(body)));
    *answer.status_mut() = status;
    answer.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    answer
}

fn answer(
    server: &crate::server::Server,
    host: &str,
    request: &Request<Incoming>,
) -> Response<Full<Bytes>> {
    let refuse = |status, why: &str| {
        plain(
            status,
            "text/plain; charset=utf-8",
            format!("toolgate: {why}\n"),
        )
    };
    if let Err((status, why)) = toolgate_loopback::loopback_gate(host, request.headers()) {
        return refuse(status, &why);
    }
    let Some(text) = server
        .metrics_text()
        .filter(|_| request.uri().path() == "/metrics")
    else {
        return refuse(StatusCode::NOT_FOUND, "no such page; GET /metrics");
    };
    if request.method() != Method::GET {
        let mut answer = refuse(StatusCode::METHOD_NOT_ALLOWED, "only GET");
        answer.headers_mut().insert(
            hyper::header::ALLOW,
            hyper::header::HeaderValue::from_static("GET"),
        );
        return answer;
    }
    plain(
        StatusCode::OK,
        prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        text,
    )
}
