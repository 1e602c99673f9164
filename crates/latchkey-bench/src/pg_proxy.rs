//! `latchkey-bench pg-proxy`: a TCP proxy between a server and PostgreSQL that forwards every byte unchanged and
//! reads the protocol's message framing on the way, to count the round trips the server makes to its database.
//!
//! A round trip is a message, or a pipelined batch of messages, that the client sends and then waits for. The
//! client waits on a `Sync` ('S', the end of an extended-protocol batch) or a simple `Query` ('Q'), each of which
//! the server answers with exactly one `ReadyForQuery` ('Z'). So each connection keeps the number of them still
//! unanswered: a `Sync` or `Query` sent while none is unanswered starts a round trip, one sent while others are
//! (a pipelined batch) does not. `BEGIN`, `COMMIT` and a connection pool's pings (a `Sync` alone, or an empty
//! query) count like any other statement. The totals also count every `Sync` and `Query` (messages).
//!
//! The startup packet and an `SSLRequest` or `GSSENCRequest` before it are forwarded as they are; when the server
//! accepts encryption the rest of that connection is forwarded without being read, and counts nothing.
//!
//! `--stats ADDR` answers every TCP connection with one line of JSON, the totals since the proxy started, and
//! closes it: `{"round_trips":N,"messages":M,"connections":C}`.

use anyhow::Context;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

/// The options of `pg-proxy`.
#[derive(clap::Args)]
pub struct PgProxyArgs {
    /// The address the server connects to instead of PostgreSQL's.
    #[arg(long)]
    listen: String,
    /// PostgreSQL's address (host:port).
    #[arg(long)]
    upstream: String,
    /// The address that answers each connection with the totals, one line of JSON.
    #[arg(long)]
    stats: String,
}

/// The protocol code of an `SSLRequest`.
const SSL_REQUEST: u32 = 80_877_103;
/// The protocol code of a `GSSENCRequest`.
const GSSENC_REQUEST: u32 = 80_877_104;
/// The protocol code of a `CancelRequest`.
const CANCEL_REQUEST: u32 = 80_877_102;

/// What the bytes of one direction are, at the current position.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Client: a startup-format packet (length, protocol code), no type byte.
    Startup,
    /// Server: the single byte answering an `SSLRequest` or `GSSENCRequest`.
    Answer,
    /// A message with a type byte and a length.
    Typed,
}

/// One direction's position in its stream of messages: the header read so far, then the body bytes to skip.
#[derive(Debug)]
struct Framer {
    mode: Mode,
    header: [u8; 8],
    have: usize,
    skip: usize,
}

impl Framer {
    fn new(mode: Mode) -> Self {
        Self { mode, header: [0; 8], have: 0, skip: 0 }
    }

    /// The header's size in this mode: a startup packet's length and protocol code, a message's type and length.
    fn header_len(&self) -> usize {
        match self.mode {
            Mode::Startup => 8,
            Mode::Answer => 1,
            Mode::Typed => 5,
        }
    }
}

/// A header read whole.
enum Header {
    /// A startup-format packet: its length and protocol code.
    Startup(u32, u32),
    /// The server's answer to an encryption request.
    Answer(u8),
    /// A typed message: its type and length (which counts itself, not the type).
    Typed(u8, u32),
}

/// What a chunk of bytes added to the totals.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Counts {
    /// Round trips started.
    pub round_trips: u64,
    /// `Sync` and `Query` messages.
    pub messages: u64,
}

/// The reading of one proxied connection, both directions: fed the bytes as they pass, it counts round trips.
#[derive(Debug)]
pub struct Conversation {
    client: Framer,
    server: Framer,
    /// `Sync`s and `Query`s sent and not yet answered by a `ReadyForQuery`.
    outstanding: u64,
    /// Encrypted, or a framing it cannot read: the rest is not read.
    opaque: bool,
}

impl Default for Conversation {
    fn default() -> Self {
        Self::new()
    }
}

impl Conversation {
    /// A connection before its first byte.
    pub fn new() -> Self {
        Self { client: Framer::new(Mode::Startup), server: Framer::new(Mode::Typed), outstanding: 0, opaque: false }
    }

    /// Reads bytes the client sent (before they are forwarded); what they add to the totals.
    pub fn client(&mut self, mut bytes: &[u8]) -> Counts {
        let mut counts = Counts::default();
        while !self.opaque {
            let Some(header) = next_header(&mut self.client, &mut bytes) else { break };
            match header {
                Header::Startup(len, code) => {
                    if len < 8 || code == CANCEL_REQUEST {
                        self.opaque = true;
                    } else if code == SSL_REQUEST || code == GSSENC_REQUEST {
                        self.server.mode = Mode::Answer;
                        self.client.skip = len as usize - 8;
                    } else {
                        self.client.mode = Mode::Typed;
                        self.client.skip = len as usize - 8;
                    }
                }
                Header::Typed(kind, len) => {
                    if len < 4 {
                        self.opaque = true;
                        break;
                    }
                    if kind == b'S' || kind == b'Q' {
                        counts.messages += 1;
                        if self.outstanding == 0 {
                            counts.round_trips += 1;
                        }
                        self.outstanding += 1;
                    }
                    self.client.skip = len as usize - 4;
                }
                // The client sends no answer (its framer is never in that mode).
                Header::Answer(_) => self.opaque = true,
            }
        }
        counts
    }

    /// Reads bytes the server sent (before they are forwarded).
    pub fn server(&mut self, mut bytes: &[u8]) {
        while !self.opaque {
            let Some(header) = next_header(&mut self.server, &mut bytes) else { break };
            match header {
                // 'N': no encryption, the client sends its next startup packet; else the rest is encrypted.
                Header::Answer(b'N') => self.server.mode = Mode::Typed,
                Header::Answer(_) => self.opaque = true,
                Header::Typed(kind, len) => {
                    if len < 4 {
                        self.opaque = true;
                        break;
                    }
                    if kind == b'Z' {
                        self.outstanding = self.outstanding.saturating_sub(1);
                    }
                    self.server.skip = len as usize - 4;
                }
                // The server sends no startup packet (its framer is never in that mode).
                Header::Startup(..) => self.opaque = true,
            }
        }
    }

    /// Whether the rest of the connection is no longer read.
    pub fn is_opaque(&self) -> bool {
        self.opaque
    }
}

/// Skips what is left of the current message's body, then reads the next header: None when `bytes` ran out first
/// (what was read is kept for the next chunk).
fn next_header(framer: &mut Framer, bytes: &mut &[u8]) -> Option<Header> {
    let skipped = framer.skip.min(bytes.len());
    framer.skip -= skipped;
    *bytes = &bytes[skipped..];
    let want = framer.header_len();
    let take = (want - framer.have).min(bytes.len());
    framer.header[framer.have..framer.have + take].copy_from_slice(&bytes[..take]);
    framer.have += take;
    *bytes = &bytes[take..];
    if framer.have < want {
        return None;
    }
    framer.have = 0;
    let h = framer.header;
    let be = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    Some(match framer.mode {
        Mode::Startup => Header::Startup(be(0), be(4)),
        Mode::Answer => Header::Answer(h[0]),
        Mode::Typed => Header::Typed(h[0], be(1)),
    })
}

/// The totals of every connection since the proxy started.
#[derive(Default)]
struct Totals {
    round_trips: AtomicU64,
    messages: AtomicU64,
    connections: AtomicU64,
}

impl Totals {
    fn json(&self) -> String {
        format!(
            "{{\"round_trips\":{},\"messages\":{},\"connections\":{}}}\n",
            self.round_trips.load(Ordering::Relaxed),
            self.messages.load(Ordering::Relaxed),
            self.connections.load(Ordering::Relaxed)
        )
    }
}

/// Proxies until the process is stopped.
pub async fn run(args: &PgProxyArgs) -> anyhow::Result<()> {
    let listener = TcpListener::bind(&args.listen).await.with_context(|| format!("listening on {}", args.listen))?;
    let stats = TcpListener::bind(&args.stats).await.with_context(|| format!("listening on {}", args.stats))?;
    let totals = Arc::new(Totals::default());
    let t = totals.clone();
    tokio::spawn(async move {
        loop {
            if let Ok((mut socket, _)) = stats.accept().await {
                let line = t.json();
                tokio::spawn(async move {
                    let _ = socket.write_all(line.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        }
    });
    loop {
        let (client, _) = listener.accept().await?;
        let (upstream, totals) = (args.upstream.clone(), totals.clone());
        tokio::spawn(async move {
            if let Err(e) = proxy(client, &upstream, totals).await {
                eprintln!("pg-proxy: {e:#}");
            }
        });
    }
}

/// One connection: both directions, each chunk read (and counted) before it is forwarded, so that the count of a
/// client's `Sync` is in before the server can answer it, and a `ReadyForQuery` is counted before the client sees it.
async fn proxy(client: TcpStream, upstream: &str, totals: Arc<Totals>) -> anyhow::Result<()> {
    let server = TcpStream::connect(upstream).await.with_context(|| format!("connecting to {upstream}"))?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    totals.connections.fetch_add(1, Ordering::Relaxed);
    let conversation = Arc::new(Mutex::new(Conversation::new()));
    let (client_read, client_write) = client.into_split();
    let (server_read, server_write) = server.into_split();
    let up = pump(client_read, server_write, conversation.clone(), Some(totals));
    let down = pump(server_read, client_write, conversation, None);
    tokio::join!(up, down);
    Ok(())
}

/// Copies one direction until its end (or an error on either side), reading each chunk first: the client's when
/// `totals` is given (its counts are added to them), the server's otherwise; then closes the other side's writing.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    conversation: Arc<Mutex<Conversation>>,
    totals: Option<Arc<Totals>>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        {
            let mut c = conversation.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if !c.is_opaque() {
                match &totals {
                    Some(totals) => {
                        let counts = c.client(&buf[..n]);
                        totals.round_trips.fetch_add(counts.round_trips, Ordering::Relaxed);
                        totals.messages.fetch_add(counts.messages, Ordering::Relaxed);
                    }
                    None => c.server(&buf[..n]),
                }
            }
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}

/// The totals a `pg-proxy --stats` address answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireTotals {
    /// Round trips since the proxy started.
    pub round_trips: u64,
    /// `Sync` and `Query` messages since the proxy started.
    pub messages: u64,
}

/// Reads the totals from a `pg-proxy --stats` address.
pub async fn read_totals(stats: &str) -> anyhow::Result<WireTotals> {
    let mut socket = TcpStream::connect(stats).await.with_context(|| format!("connecting to {stats}"))?;
    let mut line = String::new();
    socket.read_to_string(&mut line).await?;
    let v: serde_json::Value = serde_json::from_str(line.trim()).with_context(|| format!("{stats} answered {line}"))?;
    let field = |k: &str| v[k].as_u64().with_context(|| format!("no {k} in {line}"));
    Ok(WireTotals { round_trips: field("round_trips")?, messages: field("messages")? })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed message with a body of `body`.
    fn msg(kind: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![kind];
        m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// A startup-format packet with protocol `code` and `body`.
    fn startup(code: u32, body: &[u8]) -> Vec<u8> {
        let mut m = (body.len() as u32 + 8).to_be_bytes().to_vec();
        m.extend_from_slice(&code.to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    fn startup_message() -> Vec<u8> {
        startup(196_608, b"user\0postgres\0database\0test\0\0")
    }

    /// The server's answer to a startup: authentication ok, a parameter, the key, ReadyForQuery.
    fn server_ready() -> Vec<u8> {
        [msg(b'R', &[0, 0, 0, 0]), msg(b'S', b"TimeZone\0UTC\0"), msg(b'K', &[0; 8]), msg(b'Z', b"I")].concat()
    }

    /// A connection after its startup.
    fn started() -> Conversation {
        let mut c = Conversation::new();
        assert_eq!(c.client(&startup_message()), Counts::default());
        c.server(&server_ready());
        c
    }

    /// An extended-protocol statement: Parse, Bind, Describe, Execute, Sync.
    fn statement(sql: &str) -> Vec<u8> {
        let parse = msg(b'P', &[b"\0", sql.as_bytes(), b"\0\0\0"].concat());
        let bind = msg(b'B', &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        [parse, bind, msg(b'D', b"P\0"), msg(b'E', &[0, 0, 0, 0, 0]), msg(b'S', b"")].concat()
    }

    /// The answer to one statement: ParseComplete, BindComplete, a row, CommandComplete, ReadyForQuery.
    fn answer() -> Vec<u8> {
        let row = msg(b'D', &[0, 1, 0, 0, 0, 1, b'1']);
        [msg(b'1', b""), msg(b'2', b""), row, msg(b'C', b"SELECT 1\0"), msg(b'Z', b"T")].concat()
    }

    #[test]
    fn startup_counts_nothing_and_each_exchange_is_a_round_trip() {
        let mut c = started();
        assert_eq!(c.client(&msg(b'Q', b"BEGIN\0")), Counts { round_trips: 1, messages: 1 });
        c.server(&[msg(b'C', b"BEGIN\0"), msg(b'Z', b"T")].concat());
        assert_eq!(c.client(&statement("SELECT 1")), Counts { round_trips: 1, messages: 1 });
        c.server(&answer());
        // A pool's ping: a Sync alone.
        assert_eq!(c.client(&msg(b'S', b"")), Counts { round_trips: 1, messages: 1 });
        c.server(&msg(b'Z', b"I"));
        assert_eq!(c.outstanding, 0);
        assert!(!c.is_opaque());
    }

    #[test]
    fn a_pipelined_batch_is_one_round_trip() {
        let mut c = started();
        let batch = [statement("SELECT 1"), statement("SELECT 2"), msg(b'Q', b"COMMIT\0")].concat();
        assert_eq!(c.client(&batch), Counts { round_trips: 1, messages: 3 });
        // The first answer comes back; a statement sent now joins the batch still in flight.
        c.server(&answer());
        assert_eq!(c.client(&statement("SELECT 3")), Counts { round_trips: 0, messages: 1 });
        c.server(&[answer(), msg(b'C', b"COMMIT\0"), msg(b'Z', b"I"), answer()].concat());
        assert_eq!(c.outstanding, 0);
        assert_eq!(c.client(&statement("SELECT 4")), Counts { round_trips: 1, messages: 1 });
    }

    #[test]
    fn messages_split_across_reads_are_reassembled() {
        let mut c = Conversation::new();
        let mut total = Counts::default();
        let mut bytewise = |c: &mut Conversation, client: &[u8], server: &[u8]| {
            for b in client {
                let n = c.client(std::slice::from_ref(b));
                total.round_trips += n.round_trips;
                total.messages += n.messages;
            }
            for b in server {
                c.server(std::slice::from_ref(b));
            }
        };
        // One byte at a time, both directions: the startup, a statement and its answer, a query.
        bytewise(&mut c, &startup_message(), &server_ready());
        bytewise(&mut c, &statement("SELECT 1"), &answer());
        assert_eq!(c.outstanding, 0);
        bytewise(&mut c, &msg(b'Q', b"SELECT 2\0"), &[]);
        assert_eq!(total, Counts { round_trips: 2, messages: 2 });
        // Its answer in uneven pieces, the second header cut in its length.
        let rest = [msg(b'T', &[0, 0]), msg(b'Z', b"I")].concat();
        c.server(&rest[..3]);
        c.server(&rest[3..8]);
        assert_eq!(c.outstanding, 1);
        c.server(&rest[8..]);
        assert_eq!(c.outstanding, 0);
        // A body bigger than a read.
        let big = msg(b'Q', &[b'x'; 100_000]);
        assert_eq!(c.client(&big[..70_000]), Counts { round_trips: 1, messages: 1 });
        assert_eq!(c.client(&[&big[70_000..], &msg(b'S', b"")[..]].concat()), Counts { round_trips: 0, messages: 1 });
        assert_eq!(c.outstanding, 2);
    }

    #[test]
    fn ssl_refused_goes_on_ssl_accepted_stops() {
        let mut c = Conversation::new();
        assert_eq!(c.client(&startup(SSL_REQUEST, b"")), Counts::default());
        c.server(b"N");
        assert_eq!(c.client(&startup_message()), Counts::default());
        c.server(&server_ready());
        assert_eq!(c.client(&msg(b'Q', b"SELECT 1\0")), Counts { round_trips: 1, messages: 1 });

        let mut c = Conversation::new();
        c.client(&startup(SSL_REQUEST, b""));
        c.server(b"S");
        assert!(c.is_opaque());
        assert_eq!(c.client(&[0x16, 3, 1, 0, 5, b'Q', b'S']), Counts::default());

        let mut c = Conversation::new();
        c.client(&startup(GSSENC_REQUEST, b""));
        c.server(b"N");
        c.client(&startup(SSL_REQUEST, b""));
        c.server(b"N");
        c.client(&startup_message());
        c.server(&server_ready());
        assert_eq!(c.client(&msg(b'S', b"")), Counts { round_trips: 1, messages: 1 });
    }

    #[test]
    fn a_cancel_request_or_a_bad_length_stops_the_reading() {
        let mut c = Conversation::new();
        c.client(&startup(CANCEL_REQUEST, &[0; 8]));
        assert!(c.is_opaque());
        let mut c = started();
        assert_eq!(c.client(&[b'Q', 0, 0, 0, 2, b'S', 0, 0, 0, 4]), Counts::default());
        assert!(c.is_opaque());
    }

    #[tokio::test]
    async fn the_proxy_forwards_and_counts() {
        let upstream = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let up_addr = upstream.local_addr().unwrap().to_string();
        // A fake server: answers the startup, then each Sync with its answer.
        tokio::spawn(async move {
            let (mut s, _) = upstream.accept().await.unwrap();
            let mut buf = vec![0u8; startup_message().len()];
            s.read_exact(&mut buf).await.unwrap();
            s.write_all(&server_ready()).await.unwrap();
            let mut buf = vec![0u8; statement("SELECT 1").len()];
            while s.read_exact(&mut buf).await.is_ok() {
                s.write_all(&answer()).await.unwrap();
            }
        });
        let probe = |a: &str| std::net::TcpListener::bind(a).unwrap().local_addr().unwrap().to_string();
        let (listen, stats) = (probe("127.0.0.1:0"), probe("127.0.0.1:0"));
        let args = PgProxyArgs { listen: listen.clone(), upstream: up_addr, stats: stats.clone() };
        tokio::spawn(async move { run(&args).await });
        let mut client = loop {
            match TcpStream::connect(&listen).await {
                Ok(s) => break s,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        };
        client.write_all(&startup_message()).await.unwrap();
        let mut buf = vec![0u8; server_ready().len()];
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, server_ready());
        for _ in 0..3 {
            client.write_all(&statement("SELECT 1")).await.unwrap();
            let mut buf = vec![0u8; answer().len()];
            client.read_exact(&mut buf).await.unwrap();
            assert_eq!(buf, answer());
        }
        assert_eq!(read_totals(&stats).await.unwrap(), WireTotals { round_trips: 3, messages: 3 });
    }
}
