//! The loopback redirect (RFC 8252 §7.3): a one-shot web server on `127.0.0.1`, on a port the system picks or on a
//! fixed one.
//!
//! It accepts exactly one response that matches the request's `state`, answers it with a page telling the user
//! to close the browser and return to the app, and stops listening. Requests for other paths, or with another
//! `state` (a forged or stale response), get an error page and are otherwise ignored.

use crate::client::AuthorizationResponse;
use crate::Error;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path of the redirect URI.
const CALLBACK: &str = "/callback";
/// The most a request head may be.
const MAX_HEAD: usize = 16 * 1024;

/// A listener waiting for the authorization response.
#[derive(Debug)]
pub struct LoopbackListener {
    listener: TcpListener,
    port: u16,
}

impl LoopbackListener {
    /// Binds `127.0.0.1` on a port the system picks.
    pub async fn bind() -> Result<Self, Error> {
        Self::bind_port(0).await
    }

    /// Binds `127.0.0.1` on `port` (0: a port the system picks), for a port forwarded from another machine.
    pub async fn bind_port(port: u16) -> Result<Self, Error> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| Error::Transport(format!("binding 127.0.0.1:{port}: {e}")))?;
        let port = listener.local_addr().map_err(|e| Error::Transport(e.to_string()))?.port();
        Ok(Self { listener, port })
    }

    /// The redirect URI to send on the authorization request.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK}", self.port)
    }

    /// Waits for the response whose `state` is `expected_state`, for at most `timeout`. Consumes the listener:
    /// once the response is in, nothing listens on the port any more.
    pub async fn receive(self, expected_state: &str, timeout: Duration) -> Result<AuthorizationResponse, Error> {
        // Each connection is answered on its own, so one that never sends a request (a browser's speculative
        // preconnect, another local process) cannot hold up the real redirect. Unfinished ones are dropped with
        // the listener once the response is in.
        let wait = async {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = self.listener.accept() => {
                        if let Ok((stream, _)) = accepted {
                            let expected = expected_state.to_owned();
                            connections.spawn(async move { handle(stream, &expected).await });
                        }
                    }
                    // (Only an empty set fails this pattern; a refused request must not disable the branch.)
                    Some(done) = connections.join_next() => {
                        if let Ok(Some(response)) = done {
                            return response;
                        }
                    }
                }
            }
        };
        tokio::time::timeout(timeout, wait).await.map_err(|_| Error::Timeout(timeout.as_secs()))
    }
}

/// Answers one connection; returns the response when it is the one awaited.
async fn handle(mut stream: TcpStream, expected_state: &str) -> Option<AuthorizationResponse> {
    let target = match tokio::time::timeout(Duration::from_secs(10), read_target(&mut stream)).await {
        Ok(Some(t)) => t,
        _ => {
            respond(&mut stream, 400, "Bad request", "This address only receives the sign-in response.").await;
            return None;
        }
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path != CALLBACK {
        respond(&mut stream, 404, "Not found", "This address only receives the sign-in response.").await;
        return None;
    }
    let response = AuthorizationResponse::from_query(query);
    let matches = response.state.as_deref().is_some_and(|s| crate::client::same_state(s, expected_state));
    if !matches {
        respond(
            &mut stream,
            400,
            "Sign-in not recognised",
            "This response does not belong to the sign-in the app started. Return to the app and try again.",
        )
        .await;
        return None;
    }
    if response.error.is_some() {
        respond(
            &mut stream,
            200,
            "Sign-in not completed",
            "Access was not granted. You can close this window and return to the app.",
        )
        .await;
    } else {
        respond(&mut stream, 200, "Signed in", "You can close this window and return to the app.").await;
    }
    Some(response)
}

/// Reads the request line's target of a `GET`.
async fn read_target(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.ok()?;
        if n == 0 || head.len() + n > MAX_HEAD {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = std::str::from_utf8(&head).ok()?;
    let mut parts = text.lines().next()?.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target.to_owned()),
        _ => None,
    }
}

async fn respond(stream: &mut TcpStream, status: u16, heading: &str, text: &str) {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Bad Request",
    };
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{heading}</title>\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"></head>\
         <body style=\"font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem\">\
         <h1>{heading}</h1><p>{text}</p></body></html>"
    );
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nReferrer-Policy: no-referrer\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests;
