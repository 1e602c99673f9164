//! Poll-based delivery (RFC 8936): the receiver asks the transmitter for SETs, acknowledging the ones it has
//! handled and reporting the ones it refused in the same request.

use super::claims::Received;
use super::error::SetError;
use super::receiver::SetReceiver;
use crate::http::HttpRequest;
use crate::Error;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// One SET of a poll's answer, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolledSet {
    /// The `jti` the transmitter listed the SET under: acknowledge it, or report the error under it.
    pub jti: String,
    /// The SET's event, or why it was refused.
    pub result: Result<Received, SetError>,
}

/// The answer to a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Polled {
    /// The SETs returned, each verified.
    pub sets: Vec<PolledSet>,
    /// Whether the transmitter holds more SETs: poll again.
    pub more_available: bool,
}

impl Polled {
    /// The `jti`s of the SETs that were refused, with why, for the next poll's `set_errs`.
    pub fn errors(&self) -> Vec<(String, SetError)> {
        self.sets.iter().filter_map(|s| Some((s.jti.clone(), s.result.as_ref().err()?.clone()))).collect()
    }
}

/// The body of a poll's answer.
#[derive(Deserialize)]
struct PollResponse {
    #[serde(default)]
    sets: Map<String, Value>,
    #[serde(default, rename = "moreAvailable")]
    more_available: bool,
}

impl SetReceiver {
    /// Polls `endpoint` (RFC 8936) with `Authorization: Bearer {bearer}`: acknowledges `ack` (the `jti`s of the
    /// SETs the app has acted on; acknowledge duplicates too), reports `set_errs` (SETs refused by an earlier
    /// poll, see [`Polled::errors`]), and asks for at most `max_events` SETs without waiting
    /// (`returnImmediately`). Each SET returned is verified with [`SetReceiver::receive`].
    ///
    /// Acknowledge a SET only once the app has acted on it: an unacknowledged SET is returned again.
    pub async fn poll(
        &self,
        endpoint: &str,
        bearer: &str,
        ack: &[String],
        set_errs: &[(String, SetError)],
        max_events: u32,
    ) -> Result<Polled, Error> {
        let mut body = json!({ "maxEvents": max_events, "returnImmediately": true, "ack": ack });
        if !set_errs.is_empty() {
            let errs: BTreeMap<&str, Value> =
                set_errs.iter().map(|(jti, e)| (jti.as_str(), e.response_body())).collect();
            body["setErrs"] = json!(errs);
        }
        let request = HttpRequest {
            method: "POST",
            url: endpoint.to_owned(),
            headers: vec![
                ("authorization".into(), format!("Bearer {bearer}")),
                ("content-type".into(), "application/json".into()),
                ("accept".into(), "application/json".into()),
            ],
            body: body.to_string().into_bytes(),
        };
        let response = self.http.send(request).await?;
        if response.status != 200 {
            return Err(poll_error(response.status, &response.body));
        }
        let answer: PollResponse = serde_json::from_slice(&response.body)
            .map_err(|e| Error::Protocol(format!("the poll answer from {endpoint}: {e}")))?;
        let mut sets = Vec::with_capacity(answer.sets.len());
        for (jti, set) in answer.sets {
            let result = match set.as_str() {
                Some(set) => self.receive(set).await.and_then(|received| self.listed_under(received, &jti)),
                None => Err(SetError::InvalidRequest("the SET is not a string".into())),
            };
            sets.push(PolledSet { jti, result });
        }
        Ok(Polled { sets, more_available: answer.more_available })
    }

    /// The SET, if its `jti` is the one the poll answer listed it under.
    fn listed_under(&self, received: Received, jti: &str) -> Result<Received, SetError> {
        if received.jti() == jti {
            return Ok(received);
        }
        if let Received::Event(event) = &received {
            self.forget(&event.jti);
        }
        Err(SetError::InvalidRequest(format!("the SET's jti {} is not the one it is listed under", received.jti())))
    }
}

/// The error for a poll answered with another status than 200.
fn poll_error(status: u16, body: &[u8]) -> Error {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let field = |name: &str| parsed.as_ref()?.get(name)?.as_str().map(str::to_owned);
    match field("error").or_else(|| field("err")) {
        Some(code) => Error::OAuth {
            code,
            description: field("error_description").or_else(|| field("description")).unwrap_or_default(),
        },
        None => Error::Protocol(format!("the poll was answered with HTTP {status}")),
    }
}
