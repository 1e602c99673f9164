//! Statements that many requests make at once, sent as one: the hot paths' reads by key ([`Sql::by_key`]: a
//! grant by its id, a code by its hash).
//!
//! Pipelining on the shared connections ([`super::shared`]) saves the wake-ups and the system calls of many
//! statements, but the database still runs each one: binds its parameters, starts and ends its executor, takes
//! its snapshot, commits its implicit transaction. Those are most of what an indexed read costs it. So what
//! requests ask of one such statement while one batch of it is on its way waits for that batch, and then goes
//! together with the others that waited, as one statement over all of them ([`Queue`]). A request alone (the
//! server idle, or one request at a time) goes at once, as a batch of one; under load a read waits at most for
//! the batch on its way. What it sees is unchanged: the statement that answers it began after the request asked,
//! so it sees every change committed before (a revocation is seen by the next read on any instance).
//!
//! A read by key goes as
//!
//! ```sql
//! SELECT k.key AS batch_key, x.* FROM unnest($1::BYTEA[]) AS k(key)
//!   CROSS JOIN LATERAL (<the statement, with k.key for $1>) x
//! ```
//!
//! The lateral join keeps each key's plan the one-key statement's (index lookups, nested loops); an `= ANY($1)`
//! lets the planner choose hash joins over whole tables. Each request gets the first row of its key, as the
//! statement alone would have given it.

use super::shared::Shared;
use crate::sql::{Sql, Value};
use crate::StoreResult;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_postgres::types::Type;
use tokio_postgres::Row;

/// At most this many requests in one statement; more wait for the next.
const MOST: usize = 128;

/// What requests ask of one statement, waiting to go together.
pub(super) struct Queue<E> {
    state: Mutex<State<E>>,
}

struct State<E> {
    /// Whether a batch is on its way (the task sending it sends the next).
    busy: bool,
    waiting: Vec<E>,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Self { state: Mutex::new(State { busy: false, waiting: Vec::new() }) }
    }
}

impl<E: Send + 'static> Queue<E> {
    /// Adds `entry`. When no batch is on its way, a task sends the waiting entries, [`MOST`] at a time, in
    /// their order: `send` sends a batch and answers its entries.
    pub(super) fn push<S, F>(self: &Arc<Self>, entry: E, send: S)
    where
        S: Fn(Vec<E>) -> F + Send + 'static,
        F: Future<Output = ()> + Send,
    {
        let lead = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting.push(entry);
            !std::mem::replace(&mut state.busy, true)
        };
        if lead {
            let sender = Sender { queue: self.clone(), done: false };
            tokio::spawn(async move {
                while let Some(batch) = sender.queue.next() {
                    send(batch).await;
                }
                sender.finish();
            });
        }
    }

    /// The next batch; none, and no batch on its way, when nothing waits.
    fn next(&self) -> Option<Vec<E>> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.waiting.is_empty() {
            state.busy = false;
            return None;
        }
        let n = state.waiting.len().min(MOST);
        Some(state.waiting.drain(..n).collect())
    }
}

/// The task sending a queue's batches. Should it end before it found the queue empty (a panic, the runtime
/// shutting down), the entries still waiting are dropped, so that their requests get an error instead of waiting
/// for ever, and the next entry starts a task again. Once it found the queue empty, the queue is another task's.
struct Sender<E> {
    queue: Arc<Queue<E>>,
    /// Whether it found the queue empty ([`Queue::next`] gave up the queue then).
    done: bool,
}

impl<E> Sender<E> {
    /// Ends the task once it found the queue empty.
    fn finish(mut self) {
        self.done = true;
    }
}

impl<E> Drop for Sender<E> {
    fn drop(&mut self) {
        if !self.done {
            let mut state = self.queue.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.busy = false;
            state.waiting.clear();
        }
    }
}

/// Hands a read's outcome (its key's first row, or the failure) to the request that asked.
pub(super) type Answer = Box<dyn FnOnce(StoreResult<Option<&Row>>) + Send>;

/// A read by key: the key, and where its answer goes.
type Read = (Vec<u8>, Answer);

/// A statement read by key: its text over many keys, and its queue.
type Statement = (Arc<str>, Arc<Queue<Read>>);

/// The queues of the statements read by key, made on a statement's first read.
#[derive(Default)]
pub(super) struct Reads {
    queues: Mutex<HashMap<usize, Statement>>,
}

impl Reads {
    /// Reads `sql`'s row for `key` with the other reads of it asked meanwhile; `answer` gets the outcome.
    pub(super) fn read(&self, shared: &Arc<Shared>, sql: &'static Sql, key: Vec<u8>, answer: Answer) {
        let (many, queue) = {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            let id = std::ptr::from_ref(sql) as usize;
            queues.entry(id).or_insert_with(|| (many(sql.postgres()).into(), Arc::default())).clone()
        };
        let shared = shared.clone();
        queue.push((key, answer), move |batch| send_reads(shared.clone(), many.clone(), batch));
    }
}

/// The statement over many keys: `single`'s `$1` is each key in turn.
pub(super) fn many(single: &str) -> String {
    debug_assert!(!single.contains("$2"), "a statement read by key has one parameter");
    format!(
        "SELECT k.key AS batch_key, x.* FROM unnest($1::BYTEA[]) AS k(key) CROSS JOIN LATERAL ({}) x",
        single.replace("$1", "k.key")
    )
}

/// The key a statement read by key is bound to: its one parameter, as bytes.
pub(super) fn key(args: &[Value<'_>]) -> Option<Vec<u8>> {
    match args {
        [Value::Bytes(Some(bytes))] => Some(bytes.to_vec()),
        [Value::Grant(id)] => Some(id.0.to_vec()),
        _ => None,
    }
}

/// Sends one batch of reads and answers each with its key's first row.
async fn send_reads(shared: Arc<Shared>, many: Arc<str>, batch: Vec<Read>) {
    let keys: Vec<&[u8]> = batch.iter().map(|(key, _)| key.as_slice()).collect();
    match shared.query(&many, &[Type::BYTEA_ARRAY], &[&keys]).await {
        Ok(rows) => {
            // Each key's first row, as the one-key statement would have answered.
            let mut first = HashMap::with_capacity(rows.len());
            for row in &rows {
                if let Ok(key) = row.try_get::<_, &[u8]>(0) {
                    first.entry(key).or_insert(row);
                }
            }
            for (key, answer) in batch {
                answer(Ok(first.get(key.as_slice()).copied()));
            }
        }
        Err(e) => {
            for (_, answer) in batch {
                answer(Err(e.clone()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::many;

    #[test]
    fn the_statement_over_many_keys_binds_only_the_array() {
        let text = many("SELECT g.id FROM grants g JOIN users u ON u.id = g.user_id WHERE g.id = $1");
        assert_eq!(
            text,
            "SELECT k.key AS batch_key, x.* FROM unnest($1::BYTEA[]) AS k(key) CROSS JOIN LATERAL \
             (SELECT g.id FROM grants g JOIN users u ON u.id = g.user_id WHERE g.id = k.key) x"
        );
        assert_eq!(text.matches('$').count(), 1, "the array is its one parameter");
    }
}
