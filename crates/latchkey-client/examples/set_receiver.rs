//! A push endpoint for latchkey's security events (RFC 8935): `POST /events` with a Security Event Token
//! (`Content-Type: application/secevent+jwt`) answers `202 Accepted` when the SET verifies, or `400` with
//! `{"err": ..., "description": ...}` when it does not (`503` when the issuer's keys cannot be fetched), and
//! prints each event it receives.
//!
//! Run it next to a latchkey server:
//!
//! ```text
//! cargo run -p latchkey-client --example set_receiver -- \
//!     --issuer https://localhost:8443 --client-id lkapp-... --listen 127.0.0.1:9090 \
//!     --ca-file latchkey-data/tls/cert.pem
//! ```
//!
//! or with the environment variables `LATCHKEY_ISSUER`, `LATCHKEY_CLIENT_ID`, `SET_RECEIVER_LISTEN` and
//! `LATCHKEY_CA_FILE` (the issuer defaults to `https://localhost:8443`, the address to `127.0.0.1:9090`; the CA
//! file is needed when the server's certificate is self-signed). Then register
//! `http://127.0.0.1:9090/events` as the app's push endpoint. latchkey pushes to plain `http://` only on the
//! loopback interface and only with `events.allow_insecure_loopback_push` set in its configuration; anywhere
//! else the endpoint must be `https://` (put this example behind a TLS-terminating proxy).

#[path = "common/options.rs"]
mod options;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use latchkey_client::events::{Event, Received, SecurityEvent, SetError, SetReceiver};
use latchkey_client::ReqwestHttp;
use std::sync::Arc;

/// What the example is told on its command line or in its environment.
struct Options {
    issuer: String,
    client_id: String,
    listen: String,
    ca_file: Option<String>,
}

impl Options {
    /// Reads `--name value` arguments, falling back to the environment and then to the defaults.
    fn read() -> Result<Self, String> {
        let arg = options::arg;
        Ok(Self {
            issuer: arg("issuer", "LATCHKEY_ISSUER").unwrap_or_else(|| "https://localhost:8443".into()),
            client_id: arg("client-id", "LATCHKEY_CLIENT_ID")
                .ok_or("give the app's client id: --client-id lkapp-... (or LATCHKEY_CLIENT_ID)")?,
            listen: arg("listen", "SET_RECEIVER_LISTEN").unwrap_or_else(|| "127.0.0.1:9090".into()),
            ca_file: arg("ca-file", "LATCHKEY_CA_FILE"),
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let options = Options::read()?;
    let http = Arc::new(ReqwestHttp::with_ca_file(options.ca_file.as_deref().map(std::path::Path::new))?);
    let receiver = SetReceiver::discover(&options.issuer, &options.client_id, http).await?;
    if let Err(e) = receiver.refresh_keys().await {
        eprintln!("the issuer's keys could not be fetched yet ({e}); trying again when a SET arrives");
    }
    println!(
        "receiving the SETs {} sends {} (keys at {})",
        receiver.issuer(),
        receiver.client_id(),
        receiver.jwks_uri()
    );
    let app = Router::new().route("/events", post(receive)).with_state(Arc::new(receiver));
    let listener = tokio::net::TcpListener::bind(&options.listen).await?;
    println!("POST http://{}/events", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// `POST /events`: one SET, verified, answered as RFC 8935 §2.2-2.3 says.
async fn receive(State(receiver): State<Arc<SetReceiver>>, headers: HeaderMap, body: Bytes) -> Response {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let media_type = content_type.split(';').next().unwrap_or("").trim();
    if !media_type.eq_ignore_ascii_case("application/secevent+jwt") {
        let e = SetError::InvalidRequest(format!("the body must be application/secevent+jwt, not {content_type:?}"));
        return refuse(&e);
    }
    match receiver.receive(&body).await {
        Ok(Received::Event(event)) => {
            // A real app acts here; if that fails, it calls `receiver.forget(&event.jti)` and answers 5xx so
            // that the SET is sent again. Several instances deduplicate `event.jti` in their shared store.
            println!("{}", describe(&event));
            StatusCode::ACCEPTED.into_response()
        }
        Ok(Received::Duplicate { jti }) => {
            println!("{jti}: received already");
            StatusCode::ACCEPTED.into_response()
        }
        Err(e) => refuse(&e),
    }
}

/// The error answer: the status and `{"err": ..., "description": ...}`.
fn refuse(e: &SetError) -> Response {
    eprintln!("refused: {e}");
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(e.response_body())).into_response()
}

/// What the event asks of the app, in a sentence.
fn describe(e: &SecurityEvent) -> String {
    let what = match &e.event {
        Event::SessionsRevoked => "every session was revoked: sign the user out everywhere".to_owned(),
        Event::SessionRevoked(s) => format!("a session was revoked (by {:?})", s.initiating_entity),
        Event::CredentialChange(c) => format!("the {} credential changed ({:?})", c.credential_type, c.change_type),
        Event::TokenRevoked(t) if t.covers_all_tokens() => "every refresh token of the app was revoked".to_owned(),
        Event::TokenRevoked(_) => "a refresh token was revoked: forget the one `token_matches`".to_owned(),
        Event::AccountDisabled(d) => format!("the account was disabled ({:?})", d.reason),
        Event::AccountEnabled => "the account was enabled again".to_owned(),
        Event::AccountPurged => "the account was deleted: delete what the app keeps about the user".to_owned(),
        Event::AccountCredentialChangeRequired => "the user must change a credential".to_owned(),
        Event::Verification(v) => format!("the stream is verified (state {:?})", v.state),
        Event::StreamUpdated(s) => format!("the stream is now {:?} ({:?})", s.status, s.reason),
        other => format!("an event of type {}", other.event_type()),
    };
    format!("{} [{:?}, txn {:?}]: {what}", e.jti, e.subject, e.txn)
}
