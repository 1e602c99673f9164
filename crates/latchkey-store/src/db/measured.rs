//! The store's metrics (`docs/operations.md`, "Metrics and alerts"): every statement and unit of work timed by backend
//! and kind, every failure counted by kind, and the SQLite writer's queue and group commits. Registered in the
//! process's Prometheus registry, which the server's `/metrics` renders.
//!
//! Observing costs atomics only: each engine resolves its labelled series once, when it opens, so that no
//! request takes the label map's lock.

use crate::db::{Durability, Engine, Mapper, UnitFn};
use crate::sql::{Args, Sql};
use crate::{StoreError, StoreResult};
use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts};
use std::future::Future;
use std::sync::LazyLock;
use std::time::Instant;

/// Latency buckets of store operations, in seconds: from a cached read (tens of µs) to a stalled disk.
const LATENCY_BUCKETS: &[f64] =
    &[0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5, 10.0];

/// Registers a metric in the process's registry (once: these are statics).
fn registered<M: prometheus::core::Collector + Clone + 'static>(metric: M) -> M {
    // A second registration of the same name would be a programming error caught by the first test.
    prometheus::register(Box::new(metric.clone())).expect("each metric is registered once");
    metric
}

static DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    let opts = HistogramOpts::new(
        "latchkey_store_operation_duration_seconds",
        "Store operations by backend and kind (read, write, unit of work), queueing and sync included.",
    )
    .buckets(LATENCY_BUCKETS.to_vec());
    registered(HistogramVec::new(opts, &["backend", "op"]).expect("valid histogram"))
});

static ERRORS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let opts =
        Opts::new("latchkey_store_errors_total", "Store operations that failed, by backend and kind of failure.");
    registered(IntCounterVec::new(opts, &["backend", "kind"]).expect("valid counter"))
});

/// Jobs waiting for the SQLite writer when it last took a batch.
pub(crate) static WRITER_QUEUE: LazyLock<IntGauge> = LazyLock::new(|| {
    registered(
        IntGauge::new(
            "latchkey_sqlite_writer_queue_depth",
            "Write jobs left waiting when the SQLite writer last took a batch.",
        )
        .expect("valid gauge"),
    )
});

/// Jobs per SQLite commit.
pub(crate) static GROUP_COMMIT: LazyLock<Histogram> = LazyLock::new(|| {
    let opts =
        HistogramOpts::new("latchkey_sqlite_group_commit_size", "Write jobs committed together by the SQLite writer.")
            .buckets(vec![1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0]);
    registered(Histogram::with_opts(opts).expect("valid histogram"))
});

/// An engine with its operations timed and its failures counted.
pub(crate) struct Measured<E> {
    /// The engine measured.
    pub(crate) inner: E,
    read: Histogram,
    write: Histogram,
    unit: Histogram,
    /// Failures by kind: unavailable, conflict, other.
    errors: [IntCounter; 3],
}

impl<E: std::fmt::Debug> std::fmt::Debug for Measured<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<E: Engine> Measured<E> {
    /// `inner`, measured under its backend's name.
    pub(crate) fn new(inner: E) -> Self {
        let timer = |op| DURATION.with_label_values(&[E::BACKEND, op]);
        let errors = |kind| ERRORS.with_label_values(&[E::BACKEND, kind]);
        Self {
            inner,
            read: timer("read"),
            write: timer("write"),
            unit: timer("unit"),
            errors: [errors("unavailable"), errors("conflict"), errors("other")],
        }
    }

    /// Records one operation's time and failure.
    fn observe<T>(&self, timer: &Histogram, started: Instant, result: &StoreResult<T>) {
        timer.observe(started.elapsed().as_secs_f64());
        if let Err(e) = result {
            let kind = match e {
                StoreError::Unavailable(_) => 0,
                StoreError::Conflict(_) => 1,
                StoreError::Other(_) => 2,
            };
            self.errors[kind].inc();
        }
    }

    /// Runs `operation`, timed on `timer`: the clock starts before the engine is called, since an engine may do
    /// the work in the call itself and return a future already complete (SQLite's reads).
    async fn timed<T, F: Future<Output = StoreResult<T>>>(
        &self,
        timer: &Histogram,
        operation: impl FnOnce() -> F,
    ) -> StoreResult<T> {
        let started = Instant::now();
        let result = operation().await;
        self.observe(timer, started, &result);
        result
    }
}

impl<E: Engine> Engine for Measured<E> {
    const BACKEND: &'static str = E::BACKEND;

    async fn one<T: Send + 'static>(
        &self,
        sql: &'static Sql,
        args: Args<'_>,
        map: Mapper<T>,
    ) -> StoreResult<Option<T>> {
        self.timed(&self.read, || self.inner.one(sql, args, map)).await
    }

    async fn all<T: Send + 'static>(&self, sql: &'static Sql, args: Args<'_>, map: Mapper<T>) -> StoreResult<Vec<T>> {
        self.timed(&self.read, || self.inner.all(sql, args, map)).await
    }

    async fn exec(&self, durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<u64> {
        self.timed(&self.write, || self.inner.exec(durability, sql, args)).await
    }

    async fn scalar(&self, durability: Durability, sql: &'static Sql, args: Args<'_>) -> StoreResult<Option<i64>> {
        self.timed(&self.write, || self.inner.scalar(durability, sql, args)).await
    }

    async fn unit<S: Send + Sync + 'static, R: Send + 'static>(
        &self,
        durability: Durability,
        unit: UnitFn<S, R>,
        data: S,
    ) -> StoreResult<R> {
        self.timed(&self.unit, || self.inner.unit(durability, unit, data)).await
    }

    async fn record_proof(
        &self,
        values: &[(Vec<u8>, latchkey_core::time::UnixTime)],
        admission: &latchkey_core::dpop::Admission,
        now: latchkey_core::time::UnixTime,
    ) -> StoreResult<latchkey_core::dpop::Recorded> {
        self.timed(&self.write, || self.inner.record_proof(values, admission, now)).await
    }

    fn proofs_complete_since(&self) -> Option<latchkey_core::time::UnixTime> {
        self.inner.proofs_complete_since()
    }

    async fn purge_proofs(&self, now: latchkey_core::time::UnixTime) -> StoreResult<u64> {
        self.timed(&self.write, || self.inner.purge_proofs(now)).await
    }

    fn ping(&self) -> impl Future<Output = StoreResult<()>> + Send {
        self.inner.ping()
    }

    fn delivery_notices(&self) -> impl Future<Output = StoreResult<Option<crate::notices::Notices>>> + Send {
        self.inner.delivery_notices()
    }

    async fn redeem_fast<'a>(
        &'a self,
        redemption: &'a crate::records::Redemption,
    ) -> StoreResult<Option<crate::Redeemed>> {
        let started = Instant::now();
        let result = self.inner.redeem_fast(redemption).await;
        // `Ok(None)`: the engine has no quicker way, and the unit of work that follows is timed instead.
        if !matches!(result, Ok(None)) {
            self.observe(&self.unit, started, &result);
        }
        result
    }
}
