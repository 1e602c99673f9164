//! The tokens an app holds, and where it keeps them.

use crate::storage::{read_optional, remove, write_private};
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the app holds after signing in: kept in long-term storage and reused while valid.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    /// The issuer that issued them.
    pub issuer: String,
    /// The app's client id.
    pub client_id: String,
    /// The access token.
    pub access_token: String,
    /// When the access token expires (Unix seconds).
    pub expires_at: i64,
    /// The refresh token.
    pub refresh_token: Option<String>,
    /// When the refresh token expires, for time-limited access (Unix seconds).
    #[serde(default)]
    pub refresh_expires_at: Option<i64>,
    /// The granted scopes, as the server reported them.
    pub scope: String,
    /// The id_token, when an identity scope was granted.
    #[serde(default)]
    pub id_token: Option<String>,
    /// The thumbprint of the DPoP key the refresh token is bound to.
    #[serde(default)]
    pub dpop_jkt: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSet")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .field("dpop_jkt", &self.dpop_jkt)
            .finish_non_exhaustive()
    }
}

impl TokenSet {
    /// Whether the user granted `scope`. Apps turn off the features that need a denied scope.
    pub fn granted(&self, scope: &str) -> bool {
        self.scope.split(' ').any(|s| s == scope)
    }

    /// The granted scopes.
    pub fn scopes(&self) -> impl Iterator<Item = &str> {
        self.scope.split(' ').filter(|s| !s.is_empty())
    }
}

/// Long-term storage of the app's tokens.
pub trait TokenStore: Send + Sync {
    /// The stored tokens, if any.
    fn load(&self) -> Result<Option<TokenSet>, Error>;
    /// Stores tokens.
    fn save(&self, tokens: &TokenSet) -> Result<(), Error>;
    /// Forgets them.
    fn clear(&self) -> Result<(), Error>;
}

/// A JSON file with mode 0600.
#[derive(Debug, Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A token file at `path`.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self { path: path.into() }
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> Result<Option<TokenSet>, Error> {
        match read_optional(&self.path)? {
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| Error::Storage(format!("{}: {e}", self.path.display()))),
            None => Ok(None),
        }
    }

    fn save(&self, tokens: &TokenSet) -> Result<(), Error> {
        let bytes = serde_json::to_vec_pretty(tokens).map_err(|e| Error::Storage(e.to_string()))?;
        write_private(&self.path, &bytes)
    }

    fn clear(&self) -> Result<(), Error> {
        remove(&self.path)
    }
}

#[cfg(test)]
mod tests;
