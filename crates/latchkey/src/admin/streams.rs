//! `latchkey admin stream`: the Shared Signals streams of the apps' backends, as the operator manages them (the
//! same operations as the framework's HTTP endpoints, `latchkey_admin::streams`).

use super::out;
use clap::{ArgGroup, Subcommand};
use latchkey_admin::keys::KeyRing;
use latchkey_admin::streams::{StreamSettings, Streaming};
use latchkey_admin::{Actor, AdminError, AdminResult};
use latchkey_config::Config;
use latchkey_core::events::stream::{self, Delivery, Status};
use latchkey_core::events::SubjectFormat;
use latchkey_core::time::UnixTime;
use latchkey_store::Store;
use serde_json::json;

#[derive(Subcommand)]
pub(super) enum StreamCmd {
    /// Makes the stream of a client: its backend receives the security events of the accounts that granted it
    /// access, pushed to --push-url or fetched from the poll endpoint printed (--poll).
    #[command(group(ArgGroup::new("delivery").required(true).args(["push_url", "poll"])))]
    Create {
        /// The client whose backend receives the events.
        #[arg(long)]
        client: String,
        /// The receiver's HTTPS URL (RFC 8935 push).
        #[arg(long)]
        push_url: Option<String>,
        /// The Authorization header value sent with each push (never shown again).
        #[arg(long, requires = "push_url")]
        push_authorization: Option<String>,
        /// The receiver polls latchkey (RFC 8936).
        #[arg(long)]
        poll: bool,
        /// An event type URI to deliver (repeat; default every supported one).
        #[arg(long = "event")]
        events: Vec<String>,
        /// How SETs name the account: iss_sub (default) or email.
        #[arg(long)]
        subject_format: Option<String>,
        /// A description of the stream.
        #[arg(long)]
        description: Option<String>,
    },
    /// Lists every stream.
    List,
    /// Counts the deliveries of every stream by state: pending, delivered, failed (refused by the receiver),
    /// dead (dead letters: not delivered within events.max_age_secs), dropped (their stream was disabled).
    Stats,
    /// Shows a stream's configuration.
    Show {
        /// The stream id.
        stream_id: String,
    },
    /// Lists a stream's latest deliveries (newest first), dead letters included.
    Deliveries {
        /// The stream id.
        stream_id: String,
        /// How many (1 to 1000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(i64).range(1..=1000))]
        limit: i64,
    },
    /// Sends the stream a verification event.
    Verify {
        /// The stream id.
        stream_id: String,
        /// The state the event carries.
        #[arg(long)]
        state: Option<String>,
    },
    /// Enables, pauses or disables a stream (a stream-updated event goes first).
    Status {
        /// The stream id.
        stream_id: String,
        /// enabled, paused or disabled.
        status: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deletes a stream and its undelivered events.
    Delete {
        /// The stream id.
        stream_id: String,
    },
}

/// Runs a `stream` command as the operator.
pub(super) async fn stream(
    store: &dyn Store,
    config: &Config,
    cmd: StreamCmd,
    now: UnixTime,
) -> anyhow::Result<AdminResult> {
    let keys = KeyRing::load(store, config.secret_source()?, now).await?;
    let urls = super::served::served_urls(store, config).await;
    let cx = Streaming {
        store,
        keys: &keys,
        issuer: &urls.issuer,
        allow_loopback_http: config.events.allow_insecure_loopback_push,
        min_verification_interval: config.events.min_verification_interval,
    };
    let op = &Actor::Operator;
    Ok(match cmd {
        StreamCmd::Create { client, push_url, push_authorization, poll, events, subject_format, description } => {
            let unsupported = stream::unsupported(&events);
            if !unsupported.is_empty() {
                return Ok(Err(AdminError::Invalid(format!("event types not supported: {}", unsupported.join(", ")))));
            }
            let subject_format = match subject_format.as_deref() {
                None | Some("iss_sub") => SubjectFormat::IssSub,
                Some("email") => SubjectFormat::Email,
                Some(other) => {
                    return Ok(Err(AdminError::Invalid(format!("subject format is iss_sub or email, not {other}"))))
                }
            };
            let delivery = match (push_url, poll) {
                (Some(endpoint_url), false) => {
                    Delivery::Push { endpoint_url, authorization_header: push_authorization }
                }
                _ => Delivery::Poll,
            };
            let settings = StreamSettings {
                delivery: Some(delivery),
                events_requested: Some(events),
                subject_format: Some(subject_format),
                description,
            };
            out(cx.create(op, &client, settings, now).await)
        }
        StreamCmd::List => out(cx.list(op).await),
        StreamCmd::Stats => store.delivery_counts().await.map_err(AdminError::from).map(|counts| {
            let by_state: serde_json::Map<_, _> =
                counts.into_iter().map(|(state, n)| (state.as_str().to_owned(), n.into())).collect();
            json!({ "deliveries": by_state })
        }),
        StreamCmd::Show { stream_id } => out(cx.show(op, &stream_id).await),
        StreamCmd::Deliveries { stream_id, limit } => cx.deliveries(op, &stream_id, limit).await.map(|list| {
            let rows: Vec<_> = list
                .iter()
                .map(|d| {
                    json!({
                        "jti": d.jti(), "txn": d.txn, "event_type": d.event_type, "subject": d.subject,
                        "state": d.state.as_str(), "attempts": d.attempts, "last_error": d.last_error,
                        "created_at": d.created_at.0, "done_at": d.done_at.map(|t| t.0),
                    })
                })
                .collect();
            json!({ "stream_id": stream_id, "deliveries": rows })
        }),
        StreamCmd::Verify { stream_id, state } => cx
            .verify(op, &stream_id, state.as_deref(), now)
            .await
            .map(|()| json!({ "stream_id": stream_id, "verification": "queued" })),
        StreamCmd::Status { stream_id, status, reason } => match Status::parse(&status) {
            Some(s) => cx
                .set_status(op, &stream_id, s, reason, now)
                .await
                .map(|(s, reason)| json!({ "stream_id": stream_id, "status": s.as_str(), "reason": reason })),
            None => Err(AdminError::Invalid(format!("status is enabled, paused or disabled, not {status}"))),
        },
        StreamCmd::Delete { stream_id } => {
            cx.delete(op, &stream_id).await.map(|()| json!({ "stream_id": stream_id, "deleted": true }))
        }
    })
}
