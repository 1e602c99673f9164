//! Notices of new security events to poll: a stream that got a delivery, announced by the engine to every
//! instance, so that a long poll wakes when its stream has something instead of reading on a timer.
//!
//! PostgreSQL announces them (`LISTEN`/`NOTIFY`: a trigger on `set_deliveries` notifies at commit, from whatever
//! instance or process made the delivery); SQLite has no such channel between processes, so there a long poll
//! looks again on a timer ([`crate::Streams::delivery_notices`] is `None`).

use tokio::sync::mpsc;

/// The channel the PostgreSQL trigger notifies (its payload is the stream's id).
pub(crate) const CHANNEL: &str = "latchkey_set_deliveries";

/// How many notices wait for their reader before the listener waits in turn.
pub(crate) const QUEUE: usize = 1024;

/// What a notice says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    /// This stream got a delivery.
    Stream(String),
    /// Notices may have been missed (the listening connection was lost and made again): every waiting reader
    /// should look.
    All,
}

/// The notices of one listener, in order.
pub type Notices = mpsc::Receiver<Notice>;
