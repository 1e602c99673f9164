//! The listener's limits (`docs/security.md`, "Connections"): a client that stops halfway through a head, never sends
//! its HTTP/2 preface, idles on HTTP/2, sends its body too slowly, or opens too many connections is cut off. Over
//! raw TLS connections, which stop where a slow client would.

use crate::support::*;
use latchkey_config::ConnectionsConfig;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// Longer than any limit these tests set, by far: a connection still open after it was not cut off.
const BOUND: Duration = Duration::from_secs(20);

async fn server_with(change: impl FnOnce(&mut ConnectionsConfig)) -> TestServer {
    TestServer::start_with(|c| change(&mut c.connections)).await
}

fn connector(server: &TestServer, alpn: &[u8]) -> TlsConnector {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut server.ca.as_slice()) {
        roots.add(cert.expect("certificate")).expect("trusted");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    TlsConnector::from(Arc::new(config))
}

/// A TCP connection to the server from `local`.
async fn tcp_from(server: &TestServer, local: &str) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::new(local.parse::<IpAddr>().expect("address"), 0)).expect("bind");
    socket.connect(server.running.addr).await.expect("connect")
}

/// A TLS connection (ALPN `alpn`) from `local`, its handshake done.
async fn tls_from(server: &TestServer, local: &str, alpn: &[u8]) -> TlsStream<TcpStream> {
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    connector(server, alpn).connect(name, tcp_from(server, local).await).await.expect("TLS handshake")
}

/// Reads until the server closes the connection; returns what it sent. Panics if it is still open after [`BOUND`].
async fn read_until_closed(conn: &mut TlsStream<TcpStream>) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    let closed = tokio::time::timeout(BOUND, async {
        loop {
            match conn.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server kept the connection open; it sent {:?}", String::from_utf8_lossy(&seen));
    seen
}

#[tokio::test]
async fn a_client_that_stops_halfway_through_a_head_is_cut_off() {
    let server = server_with(|c| c.header_read_timeout_secs = 1).await;
    let mut conn = tls_from(&server, "127.0.0.1", b"http/1.1").await;
    // A whole first request, so that the next head is read under the header timeout alone.
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n").await.expect("write");
    let mut first = [0u8; 256];
    let n = conn.read(&mut first).await.expect("answer");
    assert!(first[..n].starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&first[..n]));
    conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: loc").await.expect("write");
    read_until_closed(&mut conn).await;
}

#[tokio::test]
async fn a_connection_that_never_sends_its_http2_preface_or_first_request_is_cut_off() {
    let server = server_with(|c| c.first_request_timeout_secs = 1).await;
    let mut h2 = tls_from(&server, "127.0.0.1", b"h2").await;
    read_until_closed(&mut h2).await;
    let mut h1 = tls_from(&server, "127.0.0.1", b"http/1.1").await;
    h1.write_all(b"GE").await.expect("write");
    read_until_closed(&mut h1).await;
}

/// An HTTP/2 frame's header: length, type, flags, stream.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).expect("short").to_be_bytes();
    let mut f = vec![len[1], len[2], len[3], kind, flags];
    f.extend_from_slice(&stream.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

#[tokio::test]
async fn an_idle_http2_connection_is_sent_goaway_and_closed_after_the_idle_timeout() {
    let server = server_with(|c| c.idle_timeout_secs = 1).await;
    let mut conn = tls_from(&server, "127.0.0.1", b"h2").await;
    let mut hello = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    hello.extend(frame(0x4, 0, 0, &[])); // SETTINGS, none changed
                                         // GET /healthz: :method GET (static 2), :scheme https (7), :path literal (name 4), :authority literal (name 1).
    let mut block = vec![0x82, 0x87, 0x04, 8];
    block.extend_from_slice(b"/healthz");
    block.extend_from_slice(&[0x01, 9]);
    block.extend_from_slice(b"localhost");
    hello.extend(frame(0x1, 0x5, 1, &block)); // HEADERS, END_STREAM | END_HEADERS
    conn.write_all(&hello).await.expect("write");
    let seen = read_until_closed(&mut conn).await;
    // The frames the server sent: its SETTINGS, the answer (HEADERS, DATA), then GOAWAY (and the PING of a graceful
    // shutdown, which this client leaves unanswered: the server closes anyway).
    let mut kinds = Vec::new();
    let mut rest = seen.as_slice();
    while rest.len() >= 9 {
        let len = usize::from(rest[0]) << 16 | usize::from(rest[1]) << 8 | usize::from(rest[2]);
        kinds.push(rest[3]);
        rest = &rest[(9 + len).min(rest.len())..];
    }
    let answered = kinds.iter().position(|k| *k == 0x1).expect("the request was answered (HEADERS)");
    assert!(kinds[answered..].contains(&0x7), "GOAWAY after the answer: {kinds:?}");
}

#[tokio::test]
async fn a_request_whose_body_comes_too_slowly_is_answered_408_in_the_endpoints_format() {
    let server = server_with(|c| c.request_timeout_secs = 1).await;
    let mut conn = tls_from(&server, "127.0.0.1", b"http/1.1").await;
    let head = "POST /token HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                Content-Length: 100\r\n\r\ngrant_type=refresh_token";
    conn.write_all(head.as_bytes()).await.expect("write");
    let seen = String::from_utf8(read_until_closed(&mut conn).await).expect("text");
    assert!(seen.starts_with("HTTP/1.1 408"), "{seen}");
    assert!(seen.contains("\"error\":\"invalid_request\""), "RFC 6749 JSON: {seen}");
    assert!(seen.contains("longer than 1 seconds"), "{seen}");
}

#[tokio::test]
async fn connections_past_the_per_address_cap_are_closed_at_once_and_other_addresses_are_served() {
    let server = server_with(|c| c.max_connections_per_address = 2).await;
    let held = [tls_from(&server, "127.0.0.1", b"http/1.1").await, tls_from(&server, "127.0.0.1", b"http/1.1").await];
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let third = connector(&server, b"http/1.1").connect(name.clone(), tcp_from(&server, "127.0.0.1").await).await;
    assert!(third.is_err(), "a third connection from the address is closed before its handshake");
    let mut other = tls_from(&server, "127.0.0.2", b"http/1.1").await;
    other.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").await.expect("write");
    let answer = String::from_utf8(read_until_closed(&mut other).await).expect("text");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // Once one closes, the address may open another.
    drop(held);
    let again = tokio::time::timeout(BOUND, async {
        loop {
            let tcp = tcp_from(&server, "127.0.0.1").await;
            if connector(&server, b"http/1.1").connect(name.clone(), tcp).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(again.is_ok(), "a slot came back when a connection closed");
}

#[tokio::test]
async fn past_the_overall_cap_the_listener_waits_for_a_connection_to_close() {
    let server = server_with(|c| c.max_connections = 2).await;
    let held = [tls_from(&server, "127.0.0.1", b"http/1.1").await, tls_from(&server, "127.0.0.2", b"http/1.1").await];
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let waiting = connector(&server, b"http/1.1").connect(name, tcp_from(&server, "127.0.0.3").await);
    tokio::pin!(waiting);
    assert!(
        tokio::time::timeout(Duration::from_millis(500), &mut waiting).await.is_err(),
        "a third connection is not served while two are open"
    );
    drop(held);
    let served = tokio::time::timeout(BOUND, waiting).await;
    assert!(matches!(served, Ok(Ok(_))), "served once one closed");
}
