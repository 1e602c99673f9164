//! The long polls waiting on this instance (RFC 8936 §2.1): at most one per stream, so that a receiver cannot
//! hold many requests and store reads for one stream, each woken when its stream gets an event.
//!
//! Where the store announces new deliveries from every instance (PostgreSQL's `LISTEN`/`NOTIFY`), a waiting
//! poll reads again only when a notice names its stream (or says notices may have been missed); elsewhere
//! (SQLite) it looks again every [`STEP`].

use latchkey_store::notices::{Notice, Notices};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// How often a waiting poll looks again where the store gives no notices.
pub const STEP: Duration = Duration::from_millis(250);

/// The streams with a long poll waiting, and whether notices wake them.
#[derive(Clone, Default)]
pub struct LongPolls {
    waiting: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    notified: Arc<AtomicBool>,
}

/// A long poll waiting; its stream is free again when it is dropped.
pub struct Waiting {
    polls: LongPolls,
    stream_id: String,
    woken: Arc<Notify>,
}

impl LongPolls {
    /// The stream's one place for a long poll, unless one is waiting already.
    pub fn enter(&self, stream_id: &str) -> Option<Waiting> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.contains_key(stream_id) {
            return None;
        }
        let woken = Arc::new(Notify::new());
        waiting.insert(stream_id.to_owned(), Arc::clone(&woken));
        Some(Waiting { polls: self.clone(), stream_id: stream_id.to_owned(), woken })
    }

    /// Hands `notices` to the polls they name, from now on, in a task of their own.
    pub fn listen(&self, mut notices: Notices) {
        self.notified.store(true, Ordering::Release);
        let polls = self.clone();
        tokio::spawn(async move {
            while let Some(notice) = notices.recv().await {
                polls.wake(&notice);
            }
            // The listener ended: the polls look on a timer again.
            polls.notified.store(false, Ordering::Release);
        });
    }

    /// Wakes the poll of the stream a notice names, or every poll.
    fn wake(&self, notice: &Notice) {
        let waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        match notice {
            Notice::Stream(id) => waiting.get(id).into_iter().for_each(|w| w.notify_one()),
            Notice::All => waiting.values().for_each(|w| w.notify_one()),
        }
    }
}

impl Waiting {
    /// Returns when the stream may have something new: on a notice naming it (one that came since the last call
    /// counts), or after [`STEP`] where there are no notices; at the latest at `deadline`.
    pub async fn next(&self, deadline: Instant) {
        if self.polls.notified.load(Ordering::Acquire) {
            tokio::select! {
                () = self.woken.notified() => {}
                () = tokio::time::sleep_until(deadline) => {}
            }
        } else {
            tokio::time::sleep_until(deadline.min(Instant::now() + STEP)).await;
        }
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let mut waiting = self.polls.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        waiting.remove(&self.stream_id);
    }
}
