//! A TCP forwarder run inside a test: a round-robin load balancer in front of two instances, or a link to
//! PostgreSQL that the test can cut (stop listening and reset every open connection) and restore.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A loopback port forwarding each new connection to the next upstream.
pub struct Forwarder {
    /// The address clients connect to.
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accepting: Mutex<Option<JoinHandle<()>>>,
}

struct Shared {
    upstreams: Mutex<Vec<SocketAddr>>,
    next: AtomicUsize,
    /// Connections handed to each upstream, by index.
    served: Mutex<Vec<usize>>,
    /// Bumped by [`Forwarder::cut`]: every open connection ends.
    generation: watch::Sender<u64>,
}

impl Forwarder {
    /// Listens on a free loopback port; forwards nowhere until [`Forwarder::set_upstreams`].
    pub async fn bind() -> Self {
        let listener = listen("127.0.0.1:0".parse().expect("addr"));
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            upstreams: Mutex::new(Vec::new()),
            next: AtomicUsize::new(0),
            served: Mutex::new(Vec::new()),
            generation: watch::channel(0).0,
        });
        let accepting = Mutex::new(Some(tokio::spawn(accept(listener, shared.clone()))));
        Self { addr, shared, accepting }
    }

    /// A forwarder to `upstreams`, round-robin.
    pub async fn to(upstreams: Vec<SocketAddr>) -> Self {
        let f = Self::bind().await;
        f.set_upstreams(upstreams);
        f
    }

    /// Where new connections go.
    pub fn set_upstreams(&self, upstreams: Vec<SocketAddr>) {
        *self.shared.served.lock().expect("lock") = vec![0; upstreams.len()];
        *self.shared.upstreams.lock().expect("lock") = upstreams;
    }

    /// How many connections each upstream got.
    pub fn served(&self) -> Vec<usize> {
        self.shared.served.lock().expect("lock").clone()
    }

    /// Stops listening (connections are refused) and ends every open connection.
    pub fn cut(&self) {
        if let Some(task) = self.accepting.lock().expect("lock").take() {
            task.abort();
        }
        self.shared.generation.send_modify(|g| *g += 1);
    }

    /// Listens again on the same port.
    pub fn restore(&self) {
        let listener = listen(self.addr);
        *self.accepting.lock().expect("lock") = Some(tokio::spawn(accept(listener, self.shared.clone())));
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.cut();
    }
}

fn listen(addr: SocketAddr) -> TcpListener {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket.bind(addr).unwrap_or_else(|e| panic!("binding {addr}: {e}"));
    socket.listen(128).expect("listen")
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    loop {
        let Ok((mut inbound, _)) = listener.accept().await else { continue };
        let upstreams = shared.upstreams.lock().expect("lock").clone();
        if upstreams.is_empty() {
            continue;
        }
        let i = shared.next.fetch_add(1, Ordering::Relaxed) % upstreams.len();
        shared.served.lock().expect("lock")[i] += 1;
        let upstream = upstreams[i];
        let mut cut = shared.generation.subscribe();
        tokio::spawn(async move {
            let Ok(mut outbound) = TcpStream::connect(upstream).await else { return };
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                _ = cut.changed() => {
                    // Reset rather than close: the peers see the link die, as when a network fails.
                    let _ = inbound.set_zero_linger();
                    let _ = outbound.set_zero_linger();
                }
            }
        });
    }
}
