//! The poll endpoint (RFC 8936): a receiver acknowledges the SETs it has, reports the ones it refused, and gets
//! the next ones, each signed as it is handed out.

use super::{bad, reply, streaming, Handled};
use crate::error::ConsoleApiError;
use crate::routes::console::api::{Body, Caller};
use crate::state::AppState;
use crate::transmitter::sign_set;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use latchkey_admin::Right;
use latchkey_core::events::stream::POLL;
use latchkey_store::Delivery;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// At most this many SETs per answer, whatever `maxEvents` asks.
const MAX_EVENTS: i64 = 100;
/// How long a poll with `returnImmediately: false` waits for an event (woken as `crate::long_polls` says).
const LONG_POLL: Duration = Duration::from_secs(5);

/// An error a receiver reports for a SET (RFC 8936 §2.4).
#[derive(Deserialize)]
pub(super) struct SetErr {
    err: String,
    #[serde(default)]
    description: String,
}

/// A poll request (RFC 8936 §2.1).
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
pub(super) struct PollIn {
    max_events: Option<i64>,
    return_immediately: Option<bool>,
    ack: Vec<String>,
    set_errs: BTreeMap<String, SetErr>,
}

/// `POST /ssf/poll/{stream_id}`.
pub(super) async fn poll_post(
    State(state): State<AppState>,
    Path(stream_id): Path<String>,
    caller: Caller,
    Body(body): Body<PollIn>,
) -> Handled {
    let cx = streaming(&state);
    let stream = cx.reach(&caller.actor(), &stream_id, Right::View).await?;
    if stream.method != POLL {
        return Err(bad("this stream delivers by push: its events are not polled"));
    }
    let id_of = |jti: &String| {
        Delivery::id_of(&stream_id, jti).ok_or_else(|| bad(format!("{jti} is not a jti of this stream")))
    };
    let ack = body.ack.iter().map(id_of).collect::<Result<Vec<_>, _>>()?;
    let mut errors = Vec::new();
    for (jti, e) in &body.set_errs {
        errors.push((id_of(jti)?, format!("{}: {}", e.err, e.description)));
    }
    let max = body.max_events.unwrap_or(MAX_EVENTS).clamp(0, MAX_EVENTS);
    let store_error = latchkey_admin::AdminError::from;
    // The acknowledgements and errors are recorded once (a write only when there are some); a long poll then only
    // reads while it waits.
    // RFC 8936 §2.1: returnImmediately defaults to false (a long poll), one at a time per stream. Its place is
    // taken before the first read, so that a notice of an event that comes after that read wakes it.
    let long = body.return_immediately != Some(true) && max > 0;
    let waiting = if long { state.long_polls.enter(&stream_id) } else { None };
    let now = state.clock.now();
    let (mut sets, mut more) = if ack.is_empty() && errors.is_empty() {
        state.store.pollable(&stream_id, max).await
    } else {
        state.store.poll_deliveries(&stream_id, &ack, &errors, max, now).await
    }
    .map_err(store_error)?;
    if long && sets.is_empty() {
        let busy =
            || ConsoleApiError::too_many("A long poll of this stream is already waiting: one at a time per stream.", 1);
        let waiting = waiting.ok_or_else(busy)?;
        let deadline = tokio::time::Instant::now() + LONG_POLL;
        while sets.is_empty() && tokio::time::Instant::now() < deadline {
            waiting.next(deadline).await;
            crate::metrics::LONG_POLL_READS.inc();
            (sets, more) = state.store.pollable(&stream_id, max).await.map_err(store_error)?;
        }
    }
    if !sets.is_empty() && state.keys.get().event_signer().is_none() {
        // The first event key was made elsewhere (another instance, the admin CLI): load it.
        state.keys.reload(&*state.store, state.clock.now()).await.map_err(latchkey_admin::AdminError::from)?;
    }
    let mut out = serde_json::Map::new();
    for d in &sets {
        let set = sign_set(&state.keys, &state.urls.issuer, &stream, d).map_err(|e| {
            tracing::error!(error = %e, "signing a polled security event");
            crate::error::ConsoleApiError::from(latchkey_admin::AdminError::Store(latchkey_store::StoreError::Other(e)))
        })?;
        out.insert(d.jti(), set.into());
    }
    reply(StatusCode::OK, &serde_json::json!({ "sets": out, "moreAvailable": more }))
}
