//! Client ID metadata documents (draft-ietf-oauth-client-id-metadata-document): a `client_id` that is an `https`
//! URL names the app's metadata, which latchkey fetches, checks and keeps as a client of its own project
//! ([`registration::DOCUMENTS_PROJECT`]).
//!
//! **The fetch** goes only to public addresses: the host's name is resolved by a resolver that keeps public
//! addresses only, and the connection is made to one of those (an IP literal is judged before it is used); no
//! proxy, no redirect followed, at most [`registration::DOCUMENT_MAX_BYTES`] read, everything within
//! [`FETCH_TIMEOUT`], at most [`FETCHES_AT_ONCE`] fetches at a time. Documents are cached in the store, shared by the
//! instances, for what their `Cache-Control` says within 5 minutes and 24 hours.

use latchkey_config::ClientMetadataConfig;
use latchkey_core::client::{Client, RegistrationKind};
use latchkey_core::registration::{self, ClientMetadata};
use latchkey_core::time::UnixTime;
use latchkey_store::{CachedDocument, Store, StoreError};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How long a document's fetch may take, from the first byte sent to the last read.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Documents fetched at once, by this instance; more wait (within [`FETCH_TIMEOUT`]).
pub const FETCHES_AT_ONCE: usize = 16;

/// The fetcher, with its own HTTP client.
pub struct Documents {
    http: reqwest::Client,
    permits: Semaphore,
    allow_loopback: bool,
}

impl Documents {
    /// A fetcher under the `[client_metadata]` settings.
    pub fn new(config: &ClientMetadataConfig) -> anyhow::Result<Self> {
        let allow_loopback = config.allow_insecure_loopback;
        let http = crate::outbound::public_client(None, FETCH_TIMEOUT, allow_loopback, "client metadata")?;
        Ok(Self { http, permits: Semaphore::new(FETCHES_AT_ONCE), allow_loopback })
    }

    /// The client whose `client_id` is this document URL, when it is one: `None` when `client_id` is no document
    /// URL or the feature is off (a client stored from a document is then unknown to the authorization endpoint);
    /// `admit` is asked before each fetch (a limit per address, so that no one makes clients without end); else the client (from a fresh cached document or a new fetch, stored as a client
    /// of the documents' project), or why the document cannot be used.
    pub async fn client(
        &self,
        store: &dyn Store,
        config: &ClientMetadataConfig,
        client_id: &str,
        (now, admit): (UnixTime, &(dyn Fn() -> Result<(), String> + Sync)),
    ) -> Result<Option<Result<Client, String>>, StoreError> {
        if !config.enabled {
            return Ok(None);
        }
        let Some(url) = registration::document_url(client_id, self.allow_loopback) else { return Ok(None) };
        if config.blocks(client_id, url.host_str().unwrap_or_default()) {
            return Ok(Some(Err("the server's operator blocked this app's metadata".into())));
        }
        let cached = store.client_document(client_id).await?.filter(|d| d.expires_at > now);
        let body = match cached {
            Some(d) => d.document,
            None => {
                let fetched = match admit() {
                    Ok(()) => self.fetch(&url).await,
                    Err(why) => Err(why),
                };
                let (body, ttl) = match fetched {
                    Ok(fetched) => fetched,
                    Err(why) => return Ok(Some(Err(why))),
                };
                let document = CachedDocument {
                    url: client_id.to_owned(),
                    document: body.clone(),
                    fetched_at: now,
                    expires_at: now.plus(ttl),
                };
                store.put_client_document(&document).await?;
                body
            }
        };
        match registration::document(client_id, body.as_bytes()) {
            Ok(metadata) => Ok(Some(Ok(keep(store, client_id, metadata, now).await?))),
            Err(why) => Ok(Some(Err(why))),
        }
    }

    /// Fetches a document: its body and how long to keep it, or why it cannot be had.
    async fn fetch(&self, url: &reqwest::Url) -> Result<(String, i64), String> {
        // An address written in the URL is connected to as it is, without the resolver: judged here.
        let literal = url.host_str().unwrap_or_default().trim_matches(['[', ']']).parse::<std::net::IpAddr>();
        if literal.is_ok_and(|ip| !latchkey_core::events::stream::may_receive(ip, self.allow_loopback)) {
            return Err("the document's address is not a public one".into());
        }
        let fetched = tokio::time::timeout(FETCH_TIMEOUT, async {
            let _permit = self.permits.acquire().await.map_err(|_| "the server is stopping".to_owned())?;
            self.read(url).await
        })
        .await;
        fetched.unwrap_or_else(|_| Err(format!("the document took longer than {} s", FETCH_TIMEOUT.as_secs())))
    }

    async fn read(&self, url: &reqwest::Url) -> Result<(String, i64), String> {
        let request = self.http.get(url.clone()).header(reqwest::header::ACCEPT, "application/json");
        let mut response = request.send().await.map_err(|e| fetch_failure(&e))?;
        let status = response.status();
        if status.is_redirection() {
            return Err("the document's URL redirects, and redirects are not followed".into());
        }
        if status != reqwest::StatusCode::OK {
            return Err(format!("the document's URL answered {}", status.as_u16()));
        }
        let too_big = || format!("the document is larger than {} bytes", registration::DOCUMENT_MAX_BYTES);
        if response.content_length().is_some_and(|n| n > registration::DOCUMENT_MAX_BYTES as u64) {
            return Err(too_big());
        }
        let cache_control = response.headers().get(reqwest::header::CACHE_CONTROL).and_then(|v| v.to_str().ok());
        let ttl = registration::document_ttl(cache_control);
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| fetch_failure(&e))? {
            if body.len() + chunk.len() > registration::DOCUMENT_MAX_BYTES {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        String::from_utf8(body).map(|b| (b, ttl)).map_err(|_| "the document is not JSON".into())
    }
}

/// Why a fetch failed, as the error page says it.
fn fetch_failure(e: &reqwest::Error) -> String {
    let chain = std::iter::successors(Some(e as &dyn std::error::Error), |e| e.source());
    if chain.map(ToString::to_string).any(|m| m.contains(crate::outbound::NOT_PUBLIC)) {
        "the document's host resolves to no public address".into()
    } else if e.is_timeout() {
        format!("the document took longer than {} s", FETCH_TIMEOUT.as_secs())
    } else {
        "the document could not be fetched".into()
    }
}

/// Stores the client a usable document describes (or brings its stored row up to date): a desktop client with no
/// secret in the documents' project, marked as described by a document.
async fn keep(store: &dyn Store, url: &str, m: ClientMetadata, now: UnixTime) -> Result<Client, StoreError> {
    let described = registration::client(
        (url.to_owned(), registration::DOCUMENTS_PROJECT.to_owned()),
        m,
        RegistrationKind::Document,
        None,
        now,
    );
    if let Some(mut c) = store.client(url).await? {
        let unchanged = (&c.name, &c.redirect_uris, &c.registration)
            == (&described.name, &described.redirect_uris, &described.registration);
        // Deleted in the console or by the operator, it stays so (the authorization endpoint says it is).
        if !unchanged && c.deleted_at.is_none() {
            (c.name, c.redirect_uris, c.registration) =
                (described.name, described.redirect_uris, described.registration);
            store.update_client(&c).await?;
        }
        return Ok(c);
    }
    let client = described;
    match store.create_client(&client).await {
        Ok(()) => Ok(client),
        // Another instance stored it meanwhile.
        Err(StoreError::Conflict(_)) => Ok(store.client(url).await?.unwrap_or(client)),
        Err(e) => Err(e),
    }
}
