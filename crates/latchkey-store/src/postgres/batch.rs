//! The hot paths' reads by key ([`Sql::by_key`]: a grant by its id, a code by its hash), answered together.
//!
//! Pipelining on the shared connections ([`super::shared`]) saves the wake-ups and the system calls of many
//! statements, but the database still runs each one: binds its parameters, starts and ends its executor, takes
//! its snapshot, commits its implicit transaction. Those are most of what an indexed read costs it. So the reads of
//! one such statement that requests make while one of them is already on its way wait for it, and then go
//! together, as one statement over all their keys:
//!
//! ```sql
//! SELECT k.key AS batch_key, x.* FROM unnest($1::BYTEA[]) AS k(key)
//!   CROSS JOIN LATERAL (<the statement, with k.key for $1>) x
//! ```
//!
//! The lateral join keeps each key's plan the one-key statement's (index lookups, nested loops); an `= ANY($1)`
//! lets the planner choose hash joins over whole tables. Each request gets the first row of its key, as the
//! statement alone would have given it. A read alone (the server idle, or one request at a time) goes at once, as
//! a batch of one: batching adds no wait, only an ordering.
//!
//! What a read sees is unchanged: the statement that answers it began after the request asked, so it sees every
//! change committed before (a revocation is seen by the next read on any instance).

use super::shared::Shared;
use crate::sql::{Sql, Value};
use crate::StoreResult;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio_postgres::Row;

/// At most this many keys in one statement; more wait for the next.
const MOST_KEYS: usize = 128;

/// Hands a read's outcome (its key's first row, or the failure) to the request that asked.
pub(super) type Answer = Box<dyn FnOnce(StoreResult<Option<&Row>>) + Send>;

/// The statements' queues, made on a statement's first read.
#[derive(Default)]
pub(super) struct Batches {
    queues: Mutex<HashMap<usize, Arc<Queue>>>,
}

/// One statement's reads.
struct Queue {
    /// The statement over many keys.
    many: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Whether a batch is on its way (the task sending it sends the next).
    busy: bool,
    waiting: Vec<(Vec<u8>, Answer)>,
}

impl Batches {
    /// Reads `sql`'s row for `key` with the other reads of it asked meanwhile; `answer` gets the outcome.
    pub(super) fn read(&self, shared: &Arc<Shared>, sql: &'static Sql, key: Vec<u8>, answer: Answer) {
        let queue = self.queue(sql);
        let lead = {
            let mut state = queue.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.waiting.push((key, answer));
            !std::mem::replace(&mut state.busy, true)
        };
        if lead {
            tokio::spawn(send_all(shared.clone(), queue));
        }
    }

    fn queue(&self, sql: &'static Sql) -> Arc<Queue> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        let id = std::ptr::from_ref(sql) as usize;
        queues
            .entry(id)
            .or_insert_with(|| Arc::new(Queue { many: many(sql.postgres()), state: Default::default() }))
            .clone()
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

/// Sends the queue's reads, a batch at a time, until none is waiting.
async fn send_all(shared: Arc<Shared>, queue: Arc<Queue>) {
    loop {
        let batch: Vec<_> = {
            let mut state = queue.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.waiting.is_empty() {
                state.busy = false;
                return;
            }
            let n = state.waiting.len().min(MOST_KEYS);
            state.waiting.drain(..n).collect()
        };
        let keys: Vec<&[u8]> = batch.iter().map(|(key, _)| key.as_slice()).collect();
        match shared.by_keys(&queue.many, &keys).await {
            Ok(rows) => {
                for (key, answer) in batch {
                    answer(Ok(rows.iter().find(|row| row.try_get::<_, &[u8]>(0).is_ok_and(|k| k == key.as_slice()))));
                }
            }
            Err(e) => {
                for (_, answer) in batch {
                    answer(Err(e.clone()));
                }
            }
        }
    }
}
