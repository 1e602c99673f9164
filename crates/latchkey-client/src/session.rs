//! A signed-in app: stored tokens, reused while valid, refreshed shortly before expiry with one refresh in
//! flight however many callers ask at once, and revoked.

#[cfg(test)]
use crate::client::unix_now;
use crate::client::OAuthClient;
use crate::dpop::DpopKey;
use crate::tokens::{TokenSet, TokenStore};
use crate::Error;
use std::sync::Arc;
use tokio::sync::Mutex;

/// Refresh when the access token has less than this many seconds left.
const REFRESH_MARGIN: i64 = 60;

/// The app's session with the issuer.
pub struct Session {
    client: Arc<OAuthClient>,
    store: Arc<dyn TokenStore>,
    dpop: Option<Arc<DpopKey>>,
    /// The tokens in memory; the lock also makes refreshes single-flight.
    tokens: Mutex<Option<TokenSet>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("client", &self.client).field("dpop", &self.dpop).finish_non_exhaustive()
    }
}

impl Session {
    /// A session over stored tokens (loaded on first use).
    pub fn new(client: Arc<OAuthClient>, store: Arc<dyn TokenStore>, dpop: Option<Arc<DpopKey>>) -> Self {
        Self { client, store, dpop, tokens: Mutex::new(None) }
    }

    /// Stores freshly obtained tokens (after sign-in).
    pub async fn save(&self, tokens: TokenSet) -> Result<(), Error> {
        self.store.save(&tokens)?;
        *self.tokens.lock().await = Some(tokens);
        Ok(())
    }

    /// The stored tokens, as they are.
    pub async fn tokens(&self) -> Result<Option<TokenSet>, Error> {
        let mut guard = self.tokens.lock().await;
        if guard.is_none() {
            *guard = self.store.load()?;
        }
        Ok(guard.clone())
    }

    /// A valid access token: the stored one while it has more than a minute left, else a refreshed one. Callers
    /// asking while a refresh runs wait for it and share its result. [`Error::SignInAgain`] means the grant is
    /// gone (revoked, or the period of time-based access ended, which is known without asking the server): the
    /// stored tokens are forgotten and the user must sign in again.
    pub async fn access_token(&self) -> Result<String, Error> {
        let mut guard = self.tokens.lock().await;
        if guard.is_none() {
            *guard = self.store.load()?;
        }
        let current = guard.as_ref().ok_or(Error::NotSignedIn)?;
        if current.refresh_expires_at.is_some_and(|end| end <= self.client.now()) {
            // Time-based access: the period the user granted has ended, and the server refuses the grant's tokens.
            self.store.clear()?;
            *guard = None;
            return Err(Error::SignInAgain("The time-limited access you granted has ended.".into()));
        }
        if current.expires_at - self.client.now() > REFRESH_MARGIN {
            return Ok(current.access_token.clone());
        }
        match self.client.refresh(current, self.dpop.as_deref()).await {
            Ok(fresh) => {
                self.store.save(&fresh)?;
                let token = fresh.access_token.clone();
                *guard = Some(fresh);
                Ok(token)
            }
            Err(Error::SignInAgain(why)) => {
                self.store.clear()?;
                *guard = None;
                Err(Error::SignInAgain(why))
            }
            Err(e) => Err(e),
        }
    }

    /// Refreshes now, whatever the access token's expiry.
    pub async fn refresh(&self) -> Result<TokenSet, Error> {
        let mut guard = self.tokens.lock().await;
        if guard.is_none() {
            *guard = self.store.load()?;
        }
        let current = guard.as_ref().ok_or(Error::NotSignedIn)?;
        match self.client.refresh(current, self.dpop.as_deref()).await {
            Ok(fresh) => {
                self.store.save(&fresh)?;
                *guard = Some(fresh.clone());
                Ok(fresh)
            }
            Err(Error::SignInAgain(why)) => {
                self.store.clear()?;
                *guard = None;
                Err(Error::SignInAgain(why))
            }
            Err(e) => Err(e),
        }
    }

    /// Revokes the grant at the server and forgets the tokens.
    pub async fn revoke(&self) -> Result<(), Error> {
        let mut guard = self.tokens.lock().await;
        if guard.is_none() {
            *guard = self.store.load()?;
        }
        let current = guard.as_ref().ok_or(Error::NotSignedIn)?;
        let token = current.refresh_token.as_deref().unwrap_or(&current.access_token);
        self.client.revoke(token).await?;
        self.store.clear()?;
        *guard = None;
        Ok(())
    }

    /// Forgets the tokens on this device without contacting the server.
    pub async fn forget(&self) -> Result<(), Error> {
        self.store.clear()?;
        *self.tokens.lock().await = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
