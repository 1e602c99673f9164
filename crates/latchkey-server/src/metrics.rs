//! The server's metrics (`docs/operations.md`, "Metrics and alerts"), in the process's Prometheus registry beside the
//! store's (`latchkey_store`'s `measured` module) and the process's own (`process_*`); `/metrics` renders them all
//! ([`crate::routes`]).
//!
//! Every series a request touches is resolved once and then observed with atomics alone: the labelled families'
//! maps (and their lock) are read only the first time a route, status or label value is met. No label carries a
//! secret: routes are the router's patterns (`/console/projects/{id}`), never the path asked, and the other labels
//! come from fixed lists.

use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts};
use std::hash::BuildHasher;
use std::sync::{LazyLock, OnceLock};

/// Latency buckets of requests, in seconds: from a cached read to a password hash under load.
const LATENCY_BUCKETS: &[f64] =
    &[0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// Registers a metric in the process's registry (once: these are statics).
fn registered<M: prometheus::core::Collector + Clone + 'static>(metric: M) -> M {
    prometheus::register(Box::new(metric.clone())).expect("each metric is registered once");
    metric
}

fn histogram_vec(name: &str, help: &str, labels: &[&str]) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec());
    registered(HistogramVec::new(opts, labels).expect("valid histogram"))
}

fn counter_vec(name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(IntCounterVec::new(Opts::new(name, help), labels).expect("valid counter"))
}

/// A counter family with one label whose usual values are known: those are resolved once and found by a few
/// string comparisons; any other value goes through the family's map.
pub struct Counters {
    family: IntCounterVec,
    known: Vec<(&'static str, IntCounter)>,
}

impl Counters {
    fn new(name: &str, help: &str, label: &str, known: &[&'static str]) -> Self {
        let family = counter_vec(name, help, &[label]);
        let known = known.iter().map(|v| (*v, family.with_label_values(&[*v]))).collect();
        Self { family, known }
    }

    /// Counts one under `value`.
    pub fn inc(&self, value: &str) {
        self.inc_by(value, 1);
    }

    /// Counts `n` under `value`.
    pub fn inc_by(&self, value: &str, n: u64) {
        match self.known.iter().find(|(v, _)| *v == value) {
            Some((_, counter)) => counter.inc_by(n),
            None => self.family.with_label_values(&[value]).inc_by(n),
        }
    }
}

/// Requests by route and status, and their latency by route.
static HTTP_REQUESTS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec("latchkey_http_requests_total", "HTTP requests by route pattern and status.", &["route", "status"])
});
static HTTP_DURATION: LazyLock<HistogramVec> = LazyLock::new(|| {
    histogram_vec(
        "latchkey_http_request_duration_seconds",
        "Time from a request's head to its response, by route pattern.",
        &["route"],
    )
});

/// The statuses counted under their own number; any other is counted as `other`.
const STATUSES: [u16; 24] = [
    200, 201, 204, 301, 302, 303, 304, 400, 401, 403, 404, 405, 409, 410, 413, 414, 415, 422, 429, 431, 500, 501, 502,
    503,
];

/// One route's series.
pub struct RouteSeries {
    route: Box<str>,
    duration: Histogram,
    /// By [`STATUSES`] index, and `other` last.
    requests: [OnceLock<IntCounter>; STATUSES.len() + 1],
    /// The error codes met on this route, each with its counter, in the order met (past these, the family's map).
    errors: [OnceLock<(&'static str, IntCounter)>; ERRORS_PER_ROUTE],
}

/// Error codes counted per route without the family's map (a route meets a handful).
const ERRORS_PER_ROUTE: usize = 16;

/// Slots of the route table (the router has about 80 routes).
const ROUTE_SLOTS: usize = 256;

/// Routes met so far, by the hash of their pattern (open addressing; a slot once taken keeps its route).
static ROUTES: LazyLock<Vec<OnceLock<RouteSeries>>> =
    LazyLock::new(|| (0..ROUTE_SLOTS).map(|_| OnceLock::new()).collect());

fn route_series(route: &str) -> Option<&'static RouteSeries> {
    let start = foldhash::fast::FixedState::with_seed(0).hash_one(route) as usize;
    (0..ROUTE_SLOTS).map(|i| &ROUTES[(start + i) % ROUTE_SLOTS]).find_map(|slot| {
        let series = slot.get_or_init(|| RouteSeries {
            route: route.into(),
            duration: HTTP_DURATION.with_label_values(&[route]),
            requests: Default::default(),
            errors: Default::default(),
        });
        (*series.route == *route).then_some(series)
    })
}

/// A route's series, found once per request before the request goes on ([`route`]).
pub enum Route {
    /// The route's series, resolved.
    Known(&'static RouteSeries),
    /// A route past the table's capacity (a router grown beyond it): counted through the families' maps.
    Spilled(String),
}

/// The series of `route` (a pattern, or `unmatched`).
pub fn route(route: &str) -> Route {
    match route_series(route) {
        Some(series) => Route::Known(series),
        None => Route::Spilled(route.to_owned()),
    }
}

impl Route {
    /// Counts a request answered with `status` after `seconds`.
    pub fn request(&self, status: u16, seconds: f64) {
        let series = match self {
            Route::Known(series) => series,
            Route::Spilled(route) => {
                HTTP_DURATION.with_label_values(&[route]).observe(seconds);
                HTTP_REQUESTS.with_label_values(&[route, &status.to_string()]).inc();
                return;
            }
        };
        series.duration.observe(seconds);
        let index = STATUSES.iter().position(|s| *s == status).unwrap_or(STATUSES.len());
        series.requests[index]
            .get_or_init(|| {
                let label = STATUSES.get(index).map_or_else(|| "other".to_owned(), u16::to_string);
                HTTP_REQUESTS.with_label_values(&[&*series.route, label.as_str()])
            })
            .inc();
    }

    /// Counts an error code returned: resolved once per route and code, like the requests.
    pub fn error(&self, code: &'static str) {
        let (route, slots) = match self {
            Route::Known(series) => (&*series.route, Some(&series.errors)),
            Route::Spilled(route) => (route.as_str(), None),
        };
        let counter = slots.and_then(|slots| {
            slots.iter().find_map(|slot| {
                let (c, counter) = slot.get_or_init(|| (code, ERRORS.with_label_values(&[route, code])));
                (*c == code).then_some(counter)
            })
        });
        match counter {
            Some(counter) => counter.inc(),
            None => ERRORS.with_label_values(&[route, code]).inc(),
        }
    }
}

/// The grant types timed under their own name (the short names are the labels); any other is `other`.
const GRANT_TYPES: [(&str, &str); 3] = [
    ("authorization_code", "authorization_code"),
    ("refresh_token", "refresh_token"),
    ("urn:ietf:params:oauth:grant-type:jwt-bearer", "jwt_bearer"),
];

static TOKEN_DURATION: LazyLock<[Histogram; GRANT_TYPES.len() + 1]> = LazyLock::new(|| {
    let family = histogram_vec(
        "latchkey_token_request_duration_seconds",
        "Token endpoint requests by grant type (authorization_code, refresh_token, jwt_bearer, other).",
        &["grant_type"],
    );
    std::array::from_fn(|i| family.with_label_values(&[GRANT_TYPES.get(i).map_or("other", |g| g.1)]))
});

/// The index of a `grant_type` value among the ones timed (see [`token_request`]).
pub fn grant_index(grant_type: Option<&str>) -> usize {
    GRANT_TYPES.iter().position(|g| Some(g.0) == grant_type).unwrap_or(GRANT_TYPES.len())
}

/// Times a token request of the grant type at `index` ([`grant_index`]; `other` past the list).
pub fn token_request(index: usize, seconds: f64) {
    let timers = &*TOKEN_DURATION;
    timers[index.min(timers.len() - 1)].observe(seconds);
}

/// OAuth error codes (and the data API's and console's error reasons) returned, by route pattern.
static ERRORS: LazyLock<IntCounterVec> = LazyLock::new(|| {
    counter_vec(
        "latchkey_oauth_errors_total",
        "Error codes returned (OAuth error codes, the data API's reasons, the console's codes) by route pattern.",
        &["route", "error"],
    )
});

/// Failed sign-ins by reason.
pub static SIGNIN_FAILURES: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_signin_failures_total",
        "Sign-ins refused, by reason (wrong_password, unknown_account, throttled, busy, disabled, form_expired, \
         incomplete, too_many_accounts).",
        "reason",
        &[
            "wrong_password",
            "unknown_account",
            "throttled",
            "busy",
            "disabled",
            "form_expired",
            "incomplete",
            "too_many_accounts",
        ],
    )
});

/// Connections closed at once because their address held the most open already.
pub static CONNECTIONS_REFUSED: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_connections_refused_total",
        "Connections closed as soon as accepted, by the cap they were over (per_address).",
        "cap",
        &["per_address"],
    )
});

/// Requests that took longer than the request timeout (answered 408).
pub static REQUEST_TIMEOUTS: LazyLock<IntCounter> = LazyLock::new(|| {
    registered(
        IntCounter::new("latchkey_request_timeouts_total", "Requests answered 408 after the request timeout.")
            .expect("valid"),
    )
});

/// The store reads of waiting long polls (RFC 8936): one each time a poll looks again for its stream's events.
pub static LONG_POLL_READS: LazyLock<IntCounter> = LazyLock::new(|| {
    registered(
        IntCounter::new("latchkey_long_poll_reads_total", "Store reads of long polls looking again for events.")
            .expect("valid"),
    )
});

/// Requests refused by a rate limit, by what was over it.
pub static RATE_LIMITED: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_rate_limited_total",
        "Requests refused with 429 by a rate limit, by what was over it (address, client: token and revocation \
         requests; api_key: the console's JSON API and the Shared Signals endpoints).",
        "by",
        &["address", "client", "api_key"],
    )
});

/// DPoP nonces issued.
pub static DPOP_NONCES: LazyLock<IntCounter> = LazyLock::new(|| {
    registered(
        IntCounter::new("latchkey_dpop_nonces_issued_total", "DPoP nonces issued (DPoP-Nonce headers).")
            .expect("valid"),
    )
});

/// Single-use values (DPoP proofs' and assertions' `jti`) recorded, and those refused as replays.
pub static REPLAY_RECORDS: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_replay_records_total",
        "Single-use values (the jti of DPoP proofs and of service-account assertions): recorded, or refused as replayed.",
        "outcome",
        &["recorded", "replayed"],
    )
});

/// App Check verdicts on token requests.
pub static APP_CHECK: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_app_check_verdicts_total",
        "App Check classifications of token requests from clients with App Check on, by verdict.",
        "verdict",
        &latchkey_core::app_check::Category::ALL.map(latchkey_core::app_check::Category::as_str),
    )
});

/// Security events waiting in the outbox, counted at each scrape.
pub static OUTBOX_DEPTH: LazyLock<IntGauge> = LazyLock::new(|| {
    registered(
        IntGauge::new(
            "latchkey_events_outbox_depth",
            "Security events waiting for delivery (pending in the outbox), counted at each scrape.",
        )
        .expect("valid"),
    )
});

/// Security event deliveries by result.
pub static DELIVERIES: LazyLock<Counters> = LazyLock::new(|| {
    Counters::new(
        "latchkey_event_deliveries_total",
        "Security event delivery attempts, by result (delivered, retry, refused, dead_lettered).",
        "result",
        &["delivered", "retry", "refused", "dead_lettered"],
    )
});

/// Makes every metric exist from the start (a counter at zero, not absent). (The process's own metrics are the
/// registry's, with the crate's `process` feature.)
pub fn register_all() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        LazyLock::force(&HTTP_REQUESTS);
        LazyLock::force(&HTTP_DURATION);
        LazyLock::force(&TOKEN_DURATION);
        LazyLock::force(&ERRORS);
        LazyLock::force(&SIGNIN_FAILURES);
        LazyLock::force(&CONNECTIONS_REFUSED);
        LazyLock::force(&REQUEST_TIMEOUTS);
        LazyLock::force(&LONG_POLL_READS);
        LazyLock::force(&RATE_LIMITED);
        LazyLock::force(&DPOP_NONCES);
        LazyLock::force(&REPLAY_RECORDS);
        LazyLock::force(&APP_CHECK);
        LazyLock::force(&OUTBOX_DEPTH);
        LazyLock::force(&DELIVERIES);
    });
}

/// Every metric of the process, in the Prometheus text format (version 0.0.4).
pub fn render() -> String {
    let families = prometheus::gather();
    prometheus::TextEncoder::new().encode_to_string(&families).unwrap_or_else(|e| {
        tracing::error!(error = %e, "rendering the metrics");
        String::new()
    })
}
