//! A client's secrets, rotated as the best-known consoles do it: add a second secret, move the app to
//! it while both work, disable the old one, then delete it. The rules live here; the console, its JSON API and the
//! CLI apply them through `latchkey_admin`.

use super::Client;
use crate::secret;
use crate::time::UnixTime;

/// The most secrets a client holds at once.
pub const MAX_SECRETS: usize = 2;

/// One of a client's secrets, stored only as its hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSecret {
    /// Its id (`cs_…`), which names it in the console, the API and the CLI.
    pub id: String,
    /// SHA-256 of the secret.
    pub hash: Vec<u8>,
    /// Its last four characters, to tell secrets apart (none for a secret made before secrets rotated).
    pub hint: Option<String>,
    /// When it was made.
    pub created_at: UnixTime,
    /// When it was disabled, if it is: a disabled secret authenticates nothing.
    pub disabled_at: Option<UnixTime>,
}

impl ClientSecret {
    /// Whether it authenticates requests.
    pub fn enabled(&self) -> bool {
        self.disabled_at.is_none()
    }
}

/// Why a change to a client's secrets is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretRefusal {
    /// The client already has [`MAX_SECRETS`]: delete a disabled one first.
    Full,
    /// No secret of the client has this id.
    Unknown,
    /// Disabling it would leave the client without an enabled secret.
    LastEnabled,
    /// Only a disabled secret can be deleted.
    StillEnabled,
}

impl std::fmt::Display for SecretRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Full => "the client has two secrets already: disable and delete one first",
            Self::Unknown => "the client has no secret with this id",
            Self::LastEnabled => "this is the client's only enabled secret: add another before disabling it",
            Self::StillEnabled => "only a disabled secret can be deleted: disable it first",
        })
    }
}

/// A change to a client's secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretChange {
    /// Adds this secret.
    Add(ClientSecret),
    /// Disables the secret with this id at this time.
    Disable(String, UnixTime),
    /// Enables the disabled secret with this id again.
    Enable(String),
    /// Deletes the disabled secret with this id.
    Delete(String),
}

/// The secrets after `change`, or why it is refused.
pub fn change_secrets(secrets: &[ClientSecret], change: &SecretChange) -> Result<Vec<ClientSecret>, SecretRefusal> {
    let mut next = secrets.to_vec();
    let position = |id: &str| next.iter().position(|s| s.id == id).ok_or(SecretRefusal::Unknown);
    match change {
        SecretChange::Add(secret) => {
            if next.len() >= MAX_SECRETS {
                return Err(SecretRefusal::Full);
            }
            next.push(secret.clone());
        }
        SecretChange::Disable(id, at) => {
            let i = position(id)?;
            if next[i].enabled() && next.iter().filter(|s| s.enabled()).count() == 1 {
                return Err(SecretRefusal::LastEnabled);
            }
            next[i].disabled_at.get_or_insert(*at);
        }
        SecretChange::Enable(id) => {
            let i = position(id)?;
            next[i].disabled_at = None;
        }
        SecretChange::Delete(id) => {
            let i = position(id)?;
            if next[i].enabled() {
                return Err(SecretRefusal::StillEnabled);
            }
            next.remove(i);
        }
    }
    Ok(next)
}

impl Client {
    /// Whether `presented` is one of the client's enabled secrets ([`accepts`]).
    pub fn accepts_secret(&self, presented: &str) -> bool {
        accepts(&self.secrets, presented)
    }
}

/// Whether `presented` is one of these enabled secrets (a client's, or an API's for introspection). Each is
/// compared in constant time, and all of them are, whichever matches.
pub fn accepts(secrets: &[ClientSecret], presented: &str) -> bool {
    secrets.iter().filter(|s| s.enabled()).fold(false, |ok, s| ok | secret::matches_hash(presented, &s.hash))
}
