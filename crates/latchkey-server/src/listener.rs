//! The HTTPS listener: TLS on every connection, a plain-text answer for a plaintext request, a limit on every step
//! of a connection and on how many are open, and graceful shutdown.
//!
//! Limits ([`ConnectionsConfig`], `docs/security.md`, "Connections"): the TLS handshake; the time from the
//! handshake to the first request (the HTTP version's detection, the HTTP/2 preface, the first head); each
//! HTTP/1.1 head, from the moment the connection waits for it (so also HTTP/1.1's idle timeout); an HTTP/2
//! connection with no request in flight; and each request. Open connections are capped in all (the listener stops
//! accepting) and per address (a new one is closed at once).
//!
//! One watchdog task per connection keeps every limit after the handshake, with no timer of its own per request
//! (a timer per request, or hyper's per head, costs more than 1% of a refresh on the hot path; `docs/performance.md`).
//! It wakes at the connection's next deadline, and at least every quarter of the request limit while requests are
//! in flight: then it wakes them ([`RequestDeadline`]), and each one past its limit is answered 408 in its
//! endpoint's format by the router's middleware (`crate::routes`). So a request ends within a quarter of its limit
//! after it.

use crate::config::ConnectionsConfig;
use crate::error::refusal::HEADERS_LIMIT;
use crate::extract::ClientAddr;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify, Semaphore};
use tokio::time::Instant;
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;
/// How long open connections get to finish after shutdown starts.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection asked to close (idle, or never sent a request) gets before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// HTTP/2 pings: sent after this long without a frame from the client...
const H2_PING_INTERVAL: Duration = Duration::from_secs(30);
/// ... and the connection closed when one is not answered within this.
const H2_PING_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `app` over TLS on `listener` until `shutdown` completes, then drains open connections.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    limits: ConnectionsConfig,
    shutdown: impl Future<Output = ()> + Send,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // The watchdog keeps the head's limit (hyper's own would start a timer for every head).
    builder.http1().header_read_timeout(None);
    // HTTP/2 takes header lists up to four times the router's own limit, so that the router answers one over its
    // limit in the endpoint's format rather than hyper with an empty 431 (HTTP/1.1 reads up to about 400 KiB).
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING_INTERVAL)
        .keep_alive_timeout(H2_PING_TIMEOUT)
        .max_header_list_size(u32::try_from(HEADERS_LIMIT).unwrap_or(u32::MAX).saturating_mul(4));
    let open = Arc::new(Semaphore::new(limits.max_connections));
    let per_address = Arc::new(PerAddress::new(limits.max_connections_per_address));
    let (stop, stopping) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        // At the cap, no connection is accepted until one closes: new ones wait in the kernel's backlog.
        let permit = tokio::select! {
            permit = Arc::clone(&open).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
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
        let Some(slot) = PerAddress::enter(&per_address, peer.ip()) else {
            crate::metrics::CONNECTIONS_REFUSED.inc("per_address");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (acceptor, app, builder, stopping) = (acceptor.clone(), app.clone(), builder.clone(), stopping.clone());
        tokio::spawn(async move {
            let _held = (permit, slot);
            let Some(tls) = handshake(stream, &acceptor, limits.handshake()).await else { return };
            connection(tls, peer, app, &builder, limits, stopping).await;
        });
    }
    let _ = stop.send(true);
    tracing::info!("shutting down: draining open connections");
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = open.acquire_many(all) => {}
        () = tokio::time::sleep(DRAIN_TIMEOUT) => tracing::warn!("connections still open after the drain timeout"),
    }
}

/// Serves one connection until it ends: closed by the client, idle past its limit, or asked to stop.
async fn connection(
    tls: tokio_rustls::server::TlsStream<TcpStream>,
    peer: SocketAddr,
    app: Router,
    builder: &auto::Builder<TokioExecutor>,
    limits: ConnectionsConfig,
    stopping: watch::Receiver<bool>,
) {
    // HTTP/2 when ALPN chose it; a connection that skipped ALPN gets HTTP/1.1's shorter wait between requests.
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let between_requests = if h2 { limits.idle() } else { limits.header_read() };
    let activity = Arc::new(Activity::new());
    let tracked = Arc::clone(&activity);
    let deadline = RequestDeadline(Arc::clone(&activity));
    let app = tower::ServiceExt::map_request(app, move |mut req: hyper::Request<hyper::body::Incoming>| {
        let extensions = req.extensions_mut();
        extensions.insert(ClientAddr(peer));
        extensions.insert(deadline.clone());
        req
    });
    let app = tower::ServiceExt::map_future(app, move |answer| {
        let request = Activity::begin(&tracked);
        async move {
            let response = answer.await;
            drop(request);
            response
        }
    });
    let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), TowerToHyperService::new(app));
    tokio::pin!(conn);
    // The watchdog runs as a task of its own, so that the connection's many wake-ups poll one channel, not its
    // timer and the server's stop signal.
    let (ask, mut asked) = mpsc::channel(2);
    let watchdog = tokio::spawn(keep_limits(activity, limits, between_requests, stopping, ask));
    loop {
        tokio::select! {
            biased;
            ended = conn.as_mut() => {
                if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
                break;
            }
            asked = asked.recv() => match asked {
                Some(Ask::Close) => conn.as_mut().graceful_shutdown(),
                Some(Ask::Drop) | None => break,
            },
        }
    }
    watchdog.abort();
}

/// What a connection's watchdog asks of it.
enum Ask {
    /// Finish the requests in flight and close (HTTP/2: `GOAWAY`).
    Close,
    /// Drop the connection now.
    Drop,
}

/// A connection's watchdog: wakes at the connection's next deadline, and every quarter of the request limit to
/// wake the requests in flight; asks it to close once it is past its limit (or the server stops), and drops it
/// when it has not closed within its grace.
async fn keep_limits(
    activity: Arc<Activity>,
    limits: ConnectionsConfig,
    between_requests: Duration,
    mut stopping: watch::Receiver<bool>,
    ask: mpsc::Sender<Ask>,
) {
    let tick = limits.request() / 4;
    let grace = loop {
        let wake = activity.deadline(limits.first_request(), between_requests).min(Instant::now() + tick);
        tokio::select! {
            () = tokio::time::sleep_until(wake) => {
                activity.tick.notify_waiters();
                if activity.deadline(limits.first_request(), between_requests) <= Instant::now() {
                    break CLOSE_GRACE;
                }
            }
            _ = stopping.changed() => break DRAIN_TIMEOUT,
        }
    };
    if ask.send(Ask::Close).await.is_err() {
        return;
    }
    let dropped_at = Instant::now() + grace;
    while Instant::now() < dropped_at {
        tokio::time::sleep_until(dropped_at.min(Instant::now() + tick)).await;
        activity.tick.notify_waiters();
    }
    let _ = ask.send(Ask::Drop).await;
}

/// What a connection has done: when it opened, its requests in flight, and when its last one ended.
struct Activity {
    opened: Instant,
    in_flight: AtomicUsize,
    any: AtomicBool,
    /// Milliseconds from `opened` to the end of the last request.
    last_done: AtomicU64,
    /// The watchdog's wake-up of the requests in flight.
    tick: Notify,
}

/// The limit of a request's time, kept by its connection's watchdog; the listener puts it in every request's
/// extensions.
#[derive(Clone)]
pub struct RequestDeadline(Arc<Activity>);

impl RequestDeadline {
    /// Completes once the request that started at `started` has taken `limit` (noticed at the watchdog's next
    /// wake-up: within a quarter of the connection's request limit).
    pub async fn passed(&self, started: std::time::Instant, limit: Duration) {
        loop {
            let woken = self.0.tick.notified();
            if started.elapsed() >= limit {
                return;
            }
            woken.await;
        }
    }
}

/// A request in flight on its connection; its end is noted when dropped.
struct InFlight(Arc<Activity>);

impl Activity {
    fn new() -> Self {
        Self {
            opened: Instant::now(),
            in_flight: AtomicUsize::new(0),
            any: AtomicBool::new(false),
            last_done: 0.into(),
            tick: Notify::new(),
        }
    }

    fn begin(this: &Arc<Self>) -> InFlight {
        this.in_flight.fetch_add(1, Ordering::Relaxed);
        this.any.store(true, Ordering::Relaxed);
        InFlight(Arc::clone(this))
    }

    /// When the connection is past its limit, as of now: the first request's (`first`), or the one between
    /// requests (`between`) from the end of the last. With requests in flight, a whole period from now (each request
    /// has its own limit).
    fn deadline(&self, first: Duration, between: Duration) -> Instant {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return Instant::now() + between;
        }
        if !self.any.load(Ordering::Relaxed) {
            return self.opened + first;
        }
        self.opened + Duration::from_millis(self.last_done.load(Ordering::Relaxed)) + between
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let elapsed = u64::try_from(self.0.opened.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_done.fetch_max(elapsed, Ordering::Relaxed);
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Open connections per address (an IPv4 address or an IPv6 /64), each held by a [`Slot`].
struct PerAddress {
    most: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open connection counted under its address.
struct Slot(Arc<PerAddress>, IpAddr);

impl PerAddress {
    fn new(most: usize) -> Self {
        Self { most, open: Mutex::new(HashMap::new()) }
    }

    /// A slot for a connection from `addr`, unless the address holds the most already.
    fn enter(this: &Arc<Self>, addr: IpAddr) -> Option<Slot> {
        let key = crate::rate_limit::address_group_ip(addr);
        let mut open = this.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = open.entry(key).or_insert(0);
        if *n >= this.most {
            return None;
        }
        *n += 1;
        Some(Slot(Arc::clone(this), key))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.0.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(n) = open.get_mut(&self.1) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.1);
            }
        }
    }
}

/// Completes the TLS handshake within `limit`, or answers a plaintext HTTP request with a short refusal.
async fn handshake(
    stream: TcpStream,
    acceptor: &TlsAcceptor,
    limit: Duration,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let deadline = Instant::now() + limit;
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return None,
    }
    if first[0] != TLS_HANDSHAKE {
        refuse_plaintext(stream).await;
        return None;
    }
    match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
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
