//! `latchkey-bench trivial-server`: latchkey's own HTTPS listener (`latchkey_server::listener`: rustls, hyper,
//! axum) in front of handlers that answer at once with fixed bodies of the real answers' size. Driven with
//! `--target trivial`, it gives the ceiling of the load generator and of the TLS and HTTP layers: what no server
//! doing real work can pass on that core, and how much of a workload's cost the handler and the store add.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use std::net::SocketAddr;
use std::path::PathBuf;

/// The options of `trivial-server`.
#[derive(clap::Args)]
pub struct TrivialArgs {
    /// The address to listen on.
    #[arg(long, default_value = "127.0.0.1:9445")]
    listen: SocketAddr,
    /// The PEM certificate chain.
    #[arg(long)]
    cert: PathBuf,
    /// The PEM private key.
    #[arg(long)]
    key: PathBuf,
}

/// A token of the length of latchkey's access tokens.
const TOKEN: &str = "ya29.trivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivial\
                     trivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivial";
/// A nonce of the length of latchkey's.
const NONCE: &str = "trivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivialtrivi";

/// Serves until the process is stopped.
pub async fn serve(args: &TrivialArgs) -> anyhow::Result<()> {
    let tls = latchkey_server::tls::server_config(&args.cert, &args.key)?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    let app = Router::new()
        .route("/token", post(token))
        .route("/revoke", post(|| async { StatusCode::OK }))
        .route("/video/v3/channels", get(channels));
    let limits = latchkey_config::ConnectionsConfig::default();
    latchkey_server::listener::serve(listener, tls, app, limits, std::future::pending()).await;
    Ok(())
}

/// A token response; with a `DPoP` header, a DPoP-bound one with a new nonce, as latchkey answers.
async fn token(headers: HeaderMap) -> Response {
    let dpop = headers.contains_key("dpop");
    let body = format!(
        r#"{{"access_token":"{TOKEN}","expires_in":3599,"refresh_token_expires_in":604799,"scope":"https://latchkey.dev/auth/readonly","token_type":"{}"}}"#,
        if dpop { "DPoP" } else { "Bearer" }
    );
    let mut response =
        ([(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")], body).into_response();
    if dpop {
        response.headers_mut().insert("dpop-nonce", HeaderValue::from_static(NONCE));
    }
    response
}

/// A `channels.list` answer of one channel.
async fn channels() -> Response {
    let body = r#"{"kind":"video#channelListResponse","etag":"trivial","pageInfo":{"totalResults":1,"resultsPerPage":1},"items":[{"kind":"video#channel","etag":"trivial","id":"UCtrivialtrivialtrivial"}]}"#;
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}
