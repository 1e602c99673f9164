//! A real push receiver for the tests (RFC 8935): an HTTPS server of its own (a generated certificate, which
//! latchkey trusts through `events.push_ca_file`) that verifies every SET with the SDK's `SetReceiver` against
//! latchkey's JWKS (signature, `iss`, `aud`, `typ`) and keeps what arrives, duplicates counted by `jti`.

#![allow(dead_code)]

use latchkey_client::events::{Received, SecurityEvent, SetReceiver};
use latchkey_client::ReqwestHttp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;

/// What the receiver saw.
#[derive(Default)]
pub struct Seen {
    /// The events, in arrival order (first delivery of each `jti`).
    pub events: Vec<SecurityEvent>,
    /// How often each `jti` arrived.
    pub arrivals: HashMap<String, usize>,
    /// The `Authorization` headers of the pushes.
    pub authorizations: Vec<Option<String>>,
    /// SETs the receiver refused, with the error.
    pub refused: Vec<String>,
}

/// A running receiver.
pub struct TestReceiver {
    /// Where latchkey pushes (`https://127.0.0.1:PORT/events`).
    pub url: String,
    /// The receiver's certificate (PEM), for `events.push_ca_file`.
    pub cert: PathBuf,
    /// What it saw (kept across a restart).
    pub seen: Arc<Mutex<Seen>>,
    port: u16,
    dir: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestReceiver {
    /// Starts a receiver for `client_id` of the latchkey at `issuer` (whose certificate is `latchkey_ca`), with
    /// its certificate in `dir`.
    pub async fn start(issuer: &str, client_id: &str, latchkey_ca: &Path, dir: &Path) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut r = Self {
            url: format!("https://127.0.0.1:{port}/events"),
            cert: dir.join("cert.pem"),
            seen,
            port,
            dir: dir.to_path_buf(),
            stop: None,
            task: None,
        };
        r.serve(listener, issuer, client_id, latchkey_ca);
        r
    }

    fn serve(&mut self, listener: tokio::net::TcpListener, issuer: &str, client_id: &str, latchkey_ca: &Path) {
        let files = latchkey_server::tls::ensure_local_certificate(&self.dir).expect("receiver certificate");
        let tls = latchkey_server::tls::server_config(&files.cert, &files.key).expect("tls");
        let http = Arc::new(ReqwestHttp::with_ca_file(Some(latchkey_ca)).expect("http"));
        let jwks = format!("{issuer}/oauth2/v3/certs");
        let receiver = Arc::new(SetReceiver::new(issuer, client_id, &jwks, http));
        let seen = self.seen.clone();
        let app = axum::Router::new().route(
            "/events",
            axum::routing::post(move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let (receiver, seen) = (receiver.clone(), seen.clone());
                async move { handle(&receiver, &seen, &headers, &body).await }
            }),
        );
        let (tx, rx) = oneshot::channel();
        self.stop = Some(tx);
        self.task =
            Some(tokio::spawn(latchkey_server::listener::serve(listener, tls, app, Default::default(), async {
                let _ = rx.await;
            })));
    }

    /// Stops answering (connections are refused until [`TestReceiver::restart`]).
    pub async fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Starts again on the same port, keeping what it saw (the SDK's in-memory dedupe starts empty; `arrivals`
    /// still counts every `jti`).
    pub async fn restart(&mut self, issuer: &str, client_id: &str, latchkey_ca: &Path) {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port)).await.expect("rebind");
        self.serve(listener, issuer, client_id, latchkey_ca);
    }

    /// The event types received so far, in order.
    pub fn types(&self) -> Vec<String> {
        self.seen.lock().expect("seen").events.iter().map(|e| e.event.event_type().to_owned()).collect()
    }

    /// Waits until `n` distinct events arrived (or panics after `secs`), and returns them.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<SecurityEvent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            {
                let seen = self.seen.lock().expect("seen");
                if seen.events.len() >= n {
                    return seen.events.clone();
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{n} events expected, {} arrived: {:?} (refused {:?})",
                    seen.events.len(),
                    seen.events.iter().map(|e| e.event.event_type()).collect::<Vec<_>>(),
                    seen.refused
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn handle(
    receiver: &SetReceiver,
    seen: &Mutex<Seen>,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> (axum::http::StatusCode, String) {
    use axum::http::StatusCode;
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type != "application/secevent+jwt" {
        return (StatusCode::BAD_REQUEST, r#"{"err":"invalid_request","description":"content type"}"#.into());
    }
    let auth = headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned);
    let result = receiver.receive(body).await;
    let mut seen = seen.lock().expect("seen");
    seen.authorizations.push(auth);
    match result {
        Ok(Received::Event(e)) => {
            let arrivals = seen.arrivals.entry(e.jti.clone()).or_default();
            *arrivals += 1;
            // A restarted receiver forgot the jtis it had: the count still knows.
            if *arrivals == 1 {
                seen.events.push(e);
            }
            (StatusCode::ACCEPTED, String::new())
        }
        Ok(Received::Duplicate { jti }) => {
            *seen.arrivals.entry(jti).or_default() += 1;
            (StatusCode::ACCEPTED, String::new())
        }
        Err(e) => {
            seen.refused.push(format!("{}: {}", e.err(), e.description()));
            (StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST), e.response_body().to_string())
        }
    }
}
