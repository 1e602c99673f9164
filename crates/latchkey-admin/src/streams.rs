//! Shared Signals streams, managed once for both surfaces: the framework's HTTP endpoints (a console API key of a
//! member of the client's project) and `latchkey admin stream` (the operator). A stream is reached through its
//! client, with the [`Right`] each operation needs: a developer who is not a member of the client's project is
//! told the stream does not exist.

use super::{Actor, AdminError, AdminResult, ClientRef, Right};
use crate::keys::{self, KeyRing};
use latchkey_core::events::stream::{self, Delivery, Status, POLL, PUSH};
use latchkey_core::events::{SubjectFormat, SUPPORTED};
use latchkey_core::secret::random_b64;
use latchkey_core::time::UnixTime;
use latchkey_store::{KeyKind, Store, StoreError, StreamRecord};
use serde::Serialize;

/// The most streams the clients of one project may have (one per client): a quota on what one tenant can make
/// the transmitter push to.
pub const MAX_STREAMS_PER_PROJECT: i64 = 100;
/// The most verification events one project's streams may ask for in an hour (each stream at most one per
/// `events.min_verification_interval` too).
pub const MAX_VERIFICATIONS_PER_HOUR: i64 = 120;

/// What the stream operations need beside the store.
#[derive(Clone, Copy)]
pub struct Streaming<'a> {
    /// The store.
    pub store: &'a dyn Store,
    /// The key ring: the event key, and the system secrets that encrypt push authorizations.
    pub keys: &'a KeyRing,
    /// The issuer (the SETs' `iss`, and the base of the poll endpoints).
    pub issuer: &'a str,
    /// Whether push URLs to loopback addresses (`https://` or `http://`) are accepted.
    pub allow_loopback_http: bool,
    /// The minimum interval between verification requests.
    pub min_verification_interval: i64,
}

/// A stream's settings as a receiver or the operator gives them.
#[derive(Debug, Clone, Default)]
pub struct StreamSettings {
    /// How events reach the receiver.
    pub delivery: Option<Delivery>,
    /// The event types asked for (empty: every supported one); unsupported ones are ignored.
    pub events_requested: Option<Vec<String>>,
    /// How accounts are named (`iss_sub` unless `email` is asked for).
    pub subject_format: Option<SubjectFormat>,
    /// The receiver's description.
    pub description: Option<String>,
}

/// A stream as the framework's configuration endpoint shows it (SSF §8.1.1); the push authorization is never
/// shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StreamView {
    /// The stream's id.
    pub stream_id: String,
    /// The transmitter.
    pub iss: String,
    /// The client whose backend receives the events.
    pub aud: String,
    /// How events are delivered: `method`, and `endpoint_url` (the receiver's, or for poll latchkey's).
    pub delivery: serde_json::Value,
    /// Every event type latchkey sends.
    pub events_supported: Vec<&'static str>,
    /// What the receiver asked for.
    pub events_requested: Vec<String>,
    /// What it gets.
    pub events_delivered: Vec<&'static str>,
    /// Seconds between two verification requests.
    pub min_verification_interval: i64,
    /// How the SETs name accounts (latchkey's extension: `iss_sub` or `email`).
    pub subject_format: &'static str,
    /// Enabled, paused or disabled.
    pub status: &'static str,
    /// The receiver's description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Streaming<'_> {
    /// The poll endpoint of a stream.
    pub fn poll_url(&self, stream_id: &str) -> String {
        format!("{}/ssf/poll/{stream_id}", self.issuer)
    }

    fn view(&self, s: &StreamRecord) -> StreamView {
        let delivery = match s.method.as_str() {
            POLL => serde_json::json!({ "method": POLL, "endpoint_url": self.poll_url(&s.stream_id) }),
            _ => serde_json::json!({ "method": PUSH, "endpoint_url": s.endpoint_url }),
        };
        StreamView {
            stream_id: s.stream_id.clone(),
            iss: self.issuer.to_owned(),
            aud: s.client_id.clone(),
            delivery,
            events_supported: SUPPORTED.to_vec(),
            events_requested: s.events_requested.clone(),
            events_delivered: stream::delivered(&s.events_requested),
            min_verification_interval: self.min_verification_interval,
            subject_format: s.subject_format.as_str(),
            status: s.status.as_str(),
            description: s.description.clone(),
        }
    }

    /// The stream, if the actor holds `right` on its client's project.
    pub async fn reach(&self, actor: &Actor, stream_id: &str, right: Right) -> AdminResult<StreamRecord> {
        let missing = || AdminError::NotFound(format!("stream {stream_id}"));
        let s = self.store.stream(stream_id).await?.ok_or_else(missing)?;
        match actor.client(self.store, ClientRef::id(&s.client_id), right).await {
            Ok(_) => Ok(s),
            Err(AdminError::NotFound(_)) => Err(missing()),
            Err(e) => Err(e),
        }
    }

    /// Applies settings to a record: the push URL checked, the push authorization encrypted (and dropped when the
    /// push URL moves to another origin without a new one).
    fn apply(&self, s: &mut StreamRecord, settings: StreamSettings) -> AdminResult<()> {
        if let Some(delivery) = settings.delivery {
            let was_push = s.method == PUSH;
            let old_origin = s.endpoint_url.as_deref().and_then(origin);
            s.method = delivery.method().to_owned();
            (s.endpoint_url, s.push_auth) = match delivery {
                Delivery::Poll => (None, None),
                Delivery::Push { endpoint_url, authorization_header } => {
                    stream::check_push_url(&endpoint_url, self.allow_loopback_http)
                        .map_err(|e| AdminError::Invalid(e.0))?;
                    let sealed = match authorization_header {
                        Some(h) => {
                            stream::check_authorization_header(&h).map_err(|e| AdminError::Invalid(e.0))?;
                            Some(
                                self.keys
                                    .secrets()
                                    .and_then(|s| s.seal(KeyKind::PushAuthorization, h.as_bytes()))
                                    .map_err(StoreError::from)?,
                            )
                        }
                        // Never shown back, so a configuration sent back as it was read does not carry it: kept,
                        // but only for the same receiver. A new origin must be given its own: the stored value is
                        // the old receiver's secret, and is never sent anywhere else.
                        None if was_push && old_origin.is_some() && old_origin == origin(&endpoint_url) => {
                            s.push_auth.take()
                        }
                        None => None,
                    };
                    (Some(endpoint_url), sealed)
                }
            };
        }
        if let Some(requested) = settings.events_requested {
            s.events_requested = requested;
        }
        if let Some(format) = settings.subject_format {
            if format == SubjectFormat::Opaque {
                return Err(AdminError::Invalid("subject_format is iss_sub or email".into()));
            }
            s.subject_format = format;
        }
        if settings.description.is_some() {
            s.description = settings.description;
        }
        Ok(())
    }

    /// Makes the stream of a client (one per client: `Conflict` when it has one), and the event key if this is
    /// the first stream.
    pub async fn create(
        &self,
        actor: &Actor,
        client_id: &str,
        settings: StreamSettings,
        now: UnixTime,
    ) -> AdminResult<StreamView> {
        let client = actor.client(self.store, ClientRef::id(client_id), Right::Edit).await?;
        if settings.delivery.is_none() {
            return Err(AdminError::Invalid("delivery.method is required".into()));
        }
        let (streams, _) = self.store.stream_usage(&client.project_id, now).await?;
        if streams >= MAX_STREAMS_PER_PROJECT {
            return Err(AdminError::Conflict(format!(
                "the project's clients have {MAX_STREAMS_PER_PROJECT} streams, the most a project may have"
            )));
        }
        // A letter first: a random Base64url id may start with `-`, which a command line reads as a flag
        // (`latchkey admin stream show -k...`).
        let id = format!("s{}", random_b64(16, &crate::clock::OsRandom));
        let mut s = StreamRecord::new(id, client.client_id, now);
        self.apply(&mut s, settings)?;
        keys::ensure_event_key(self.keys, self.store, now).await?;
        if !self.store.create_stream(&s).await? {
            return Err(AdminError::Conflict(format!("client {client_id} has a stream already")));
        }
        Ok(self.view(&s))
    }

    /// A stream's configuration.
    pub async fn show(&self, actor: &Actor, stream_id: &str) -> AdminResult<StreamView> {
        Ok(self.view(&self.reach(actor, stream_id, Right::View).await?))
    }

    /// The streams the actor may see: every one for the operator, those of the developer's projects' clients.
    pub async fn list(&self, actor: &Actor) -> AdminResult<Vec<StreamView>> {
        let streams = match actor {
            Actor::Operator => self.store.streams().await?,
            Actor::Developer(user) => self.store.streams_of_member(&user.id).await?,
        };
        Ok(streams.iter().map(|s| self.view(s)).collect())
    }

    /// Changes a stream's settings (PATCH: what is given; PUT: a full replacement, where what is not given
    /// returns to its default).
    pub async fn update(
        &self,
        actor: &Actor,
        stream_id: &str,
        settings: StreamSettings,
        replace: bool,
        now: UnixTime,
    ) -> AdminResult<StreamView> {
        let mut s = self.reach(actor, stream_id, Right::Edit).await?;
        if replace {
            if settings.delivery.is_none() {
                return Err(AdminError::Invalid("delivery.method is required".into()));
            }
            (s.events_requested, s.subject_format, s.description) = (Vec::new(), SubjectFormat::IssSub, None);
        }
        self.apply(&mut s, settings)?;
        self.save(s, now).await
    }

    async fn save(&self, s: StreamRecord, now: UnixTime) -> AdminResult<StreamView> {
        if !self.store.update_stream(&s, now).await? {
            return Err(AdminError::NotFound(format!("stream {}", s.stream_id)));
        }
        Ok(self.view(&s))
    }

    /// Deletes a stream with its undelivered events.
    pub async fn delete(&self, actor: &Actor, stream_id: &str) -> AdminResult<()> {
        self.reach(actor, stream_id, Right::Edit).await?;
        self.store.delete_stream(stream_id).await?;
        Ok(())
    }

    /// A stream's status and the reason given for it.
    pub async fn status(&self, actor: &Actor, stream_id: &str) -> AdminResult<(Status, Option<String>)> {
        let s = self.reach(actor, stream_id, Right::View).await?;
        Ok((s.status, s.reason))
    }

    /// Sets a stream's status (a stream-updated event goes first when it changes).
    pub async fn set_status(
        &self,
        actor: &Actor,
        stream_id: &str,
        status: Status,
        reason: Option<String>,
        now: UnixTime,
    ) -> AdminResult<(Status, Option<String>)> {
        let mut s = self.reach(actor, stream_id, Right::Edit).await?;
        (s.status, s.reason) = (status, reason);
        let reason = s.reason.clone();
        self.save(s, now).await?;
        Ok((status, reason))
    }

    /// Leaves an account out of a stream (`included` false) or takes it back in. The subject is `iss_sub` with
    /// this issuer or `email`; one that names no account changes nothing (and says nothing about who exists).
    pub async fn set_subject(
        &self,
        actor: &Actor,
        stream_id: &str,
        subject: &serde_json::Value,
        included: bool,
    ) -> AdminResult<()> {
        self.reach(actor, stream_id, Right::Edit).await?;
        let field = |name: &str| subject.get(name).and_then(serde_json::Value::as_str);
        let user = match field("format") {
            Some("iss_sub") if field("iss") == Some(self.issuer) => match field("sub") {
                Some(sub) => self.store.user(sub).await?,
                None => return Err(malformed()),
            },
            Some("iss_sub") => return Err(AdminError::Invalid("subject: iss is not this transmitter".into())),
            Some("email") => match field("email") {
                Some(email) => self.store.user_by_email(email).await?,
                None => return Err(malformed()),
            },
            _ => return Err(malformed()),
        };
        if let Some(user) = user {
            self.store.set_subject(stream_id, &user.id, included).await?;
        }
        Ok(())
    }

    /// Asks for a verification event carrying `state` (at most once per `min_verification_interval`).
    pub async fn verify(&self, actor: &Actor, stream_id: &str, state: Option<&str>, now: UnixTime) -> AdminResult<()> {
        let stream = self.reach(actor, stream_id, Right::View).await?;
        if let Some(client) = self.store.client(&stream.client_id).await? {
            let (_, verifications) = self.store.stream_usage(&client.project_id, now.plus(-3600)).await?;
            if verifications >= MAX_VERIFICATIONS_PER_HOUR {
                return Err(AdminError::TooSoon(format!(
                    "the project's streams asked for {MAX_VERIFICATIONS_PER_HOUR} verifications in the last hour, the \
                     most a project may: retry later"
                )));
            }
        }
        match self.store.request_verification(stream_id, state, now, self.min_verification_interval).await? {
            Ok(()) => Ok(()),
            Err(latchkey_store::VerifyRefused::NoStream) => Err(AdminError::NotFound(format!("stream {stream_id}"))),
            Err(latchkey_store::VerifyRefused::TooSoon(secs)) => {
                Err(AdminError::TooSoon(format!("a verification was requested too recently: retry in {secs} s")))
            }
        }
    }

    /// A stream's latest deliveries, newest first.
    pub async fn deliveries(
        &self,
        actor: &Actor,
        stream_id: &str,
        limit: i64,
    ) -> AdminResult<Vec<latchkey_store::Delivery>> {
        self.reach(actor, stream_id, Right::View).await?;
        Ok(self.store.deliveries(stream_id, limit).await?)
    }
}

fn malformed() -> AdminError {
    AdminError::Invalid(
        "subject must be {\"format\":\"iss_sub\",\"iss\",\"sub\"} or {\"format\":\"email\",\"email\"}".into(),
    )
}

/// A push URL's origin (scheme, host and port), to tell whether a change of URL keeps the same receiver.
fn origin(url: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    Some(format!("{}://{}:{}", u.scheme(), u.host_str()?, u.port_or_known_default()?))
}
