//! The HTTPS listener: TLS on every connection, a plain-text answer for a plaintext request, graceful shutdown.

use crate::error::refusal::HEADERS_LIMIT;
use crate::extract::ClientAddr;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;
/// How long a client may take to start its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long open connections get to finish after shutdown starts.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` over TLS on `listener` until `shutdown` completes, then drains open connections.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    shutdown: impl Future<Output = ()> + Send,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = GracefulShutdown::new();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // HTTP/2 takes header lists up to four times the router's own limit, so that the router answers one over its
    // limit in the endpoint's format rather than hyper with an empty 431 (HTTP/1.1 reads up to about 400 KiB).
    builder.http2().max_header_list_size(u32::try_from(HEADERS_LIMIT).unwrap_or(u32::MAX).saturating_mul(4));
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let builder = builder.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let Some(tls) = handshake(stream, &acceptor).await else { return };
            let app = tower::ServiceExt::map_request(app, move |mut req: hyper::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(ClientAddr(peer));
                req
            });
            let service = TowerToHyperService::new(app);
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service).into_owned();
            if let Err(e) = watcher.watch(conn).await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    tracing::info!("shutting down: draining open connections");
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(DRAIN_TIMEOUT) => tracing::warn!("connections still open after the drain timeout"),
    }
}

/// Completes the TLS handshake, or answers a plaintext HTTP request with a short refusal.
async fn handshake(stream: TcpStream, acceptor: &TlsAcceptor) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, stream.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return None,
    }
    if first[0] != TLS_HANDSHAKE {
        refuse_plaintext(stream).await;
        return None;
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(tls),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => None,
    }
}

async fn refuse_plaintext(mut stream: TcpStream) {
    const BODY: &str = "This server accepts HTTPS only. Use an https:// URL.\n";
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(2), stream.write_all(response.as_bytes())).await;
    let _ = stream.shutdown().await;
}
