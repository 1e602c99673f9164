//! Passkeys: the WebAuthn relying party (through `webauthn-rs`, which parses and verifies every WebAuthn and COSE
//! structure; nothing of it is written here) and its ceremonies, kept in the store so that one begun on one instance
//! finishes on another.
//!
//! A ceremony's id is 32 random bytes that only the browser holds; the store keeps the library's state (with its
//! challenge) under the id's SHA-256, sealed with AES-256-GCM under a key derived from the id (HKDF-SHA-256), so a
//! reader of the database holds no usable challenge. The store hands a ceremony out once, within
//! [`CEREMONY_LIFETIME`] seconds.

use latchkey_admin::clock::OsRandom;
use latchkey_core::passkey::{self, RpIdUnavailable, CEREMONY_LIFETIME};
use latchkey_core::secret::{random_bytes, Random};
use latchkey_core::time::UnixTime;
use latchkey_store::{Ceremony, Store, StoreError};
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::hkdf;
use serde::de::DeserializeOwned;
use serde::Serialize;
use webauthn_rs::prelude::{Url, Uuid, Webauthn, WebauthnBuilder};

/// A ceremony that could not go on.
#[derive(Debug, thiserror::Error)]
pub enum CeremonyError {
    /// The ceremony is unknown, was used already, or expired.
    #[error("This passkey request expired or was already used. Try again.")]
    Expired,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why passkeys are unavailable on a server whose pages are under `issuer` (its host is an IP address), if they
/// are: what the pages that offer them say instead.
pub fn unavailable(issuer: &str) -> Option<String> {
    passkey::rp_id(issuer).err().map(|e: RpIdUnavailable| e.to_string())
}

/// The WebAuthn relying party of a server whose pages are under `issuer`: its id is the host, its origin the
/// issuer's; or why there is none. Made for each passkey request (a URL parse and a few small values), so that
/// the state every request clones holds nothing for passkeys.
pub fn relying_party(issuer: &str) -> Result<Webauthn, String> {
    let id = passkey::rp_id(issuer).map_err(|e| e.to_string())?;
    let origin = Url::parse(issuer).map_err(|e| e.to_string())?;
    let builder = WebauthnBuilder::new(&id, &origin).map_err(|e| e.to_string())?;
    builder.rp_name("latchkey").build().map_err(|e| e.to_string())
}

/// The user handle of an account, as the WebAuthn library carries it.
pub fn user_handle(user_id: &str) -> Uuid {
    Uuid::from_bytes(passkey::user_handle(user_id))
}

/// Keeps a ceremony's state for one use; returns the id the browser sends back to finish it.
pub async fn begin<S: Serialize>(
    store: &dyn Store,
    user_id: Option<&str>,
    state: &S,
    now: UnixTime,
) -> Result<String, CeremonyError> {
    let id = random_bytes(32, &OsRandom);
    let plain = serde_json::to_vec(state).map_err(|e| StoreError::Other(e.to_string()))?;
    let sealed = seal(&id, plain);
    let ceremony = Ceremony { user_id: user_id.map(str::to_owned), sealed };
    store.put_ceremony(&id_hash(&id), &ceremony, UnixTime(now.0 + CEREMONY_LIFETIME)).await?;
    Ok(base64_url(&id))
}

/// Takes the ceremony `id` once: its account (for a registration) and its state.
pub async fn finish<S: DeserializeOwned>(
    store: &dyn Store,
    id: &str,
    now: UnixTime,
) -> Result<(Option<String>, S), CeremonyError> {
    use base64::Engine;
    let id = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(id).map_err(|_| CeremonyError::Expired)?;
    if id.len() != 32 {
        return Err(CeremonyError::Expired);
    }
    let ceremony = store.take_ceremony(&id_hash(&id), now).await?.ok_or(CeremonyError::Expired)?;
    let plain = open(&id, ceremony.sealed).ok_or(CeremonyError::Expired)?;
    let state = serde_json::from_slice(&plain).map_err(|_| CeremonyError::Expired)?;
    Ok((ceremony.user_id, state))
}

fn base64_url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn id_hash(id: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, id).as_ref().to_vec()
}

/// The sealing key of a ceremony, derived from its id.
fn key_of(id: &[u8]) -> LessSafeKey {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"latchkey webauthn ceremony").extract(id);
    const INFO: [&[u8]; 1] = [b"state"];
    let okm = prk.expand(&INFO, &AES_256_GCM).expect("an AES-256 key is within HKDF's output limit");
    LessSafeKey::new(UnboundKey::from(okm))
}

/// `nonce || ciphertext || tag`.
fn seal(id: &[u8], mut plain: Vec<u8>) -> Vec<u8> {
    let mut nonce = [0u8; NONCE_LEN];
    OsRandom.fill(&mut nonce);
    key_of(id)
        .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::empty(), &mut plain)
        .expect("sealing a ceremony's state in memory");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&plain);
    out
}

fn open(id: &[u8], sealed: Vec<u8>) -> Option<Vec<u8>> {
    if sealed.len() < NONCE_LEN {
        return None;
    }
    let (nonce, body) = sealed.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut body = body.to_vec();
    let plain = key_of(id).open_in_place(nonce, Aad::empty(), &mut body).ok()?;
    Some(plain.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_with_its_own_id() {
        let sealed = seal(&[1; 32], b"{\"challenge\":\"abc\"}".to_vec());
        assert!(!sealed.windows(3).any(|w| w == b"abc"), "no plain text at rest");
        assert_eq!(open(&[1; 32], sealed.clone()).as_deref(), Some(&b"{\"challenge\":\"abc\"}"[..]));
        assert_eq!(open(&[2; 32], sealed.clone()), None);
        assert_eq!(open(&[1; 32], sealed[..5].to_vec()), None);
    }

    #[test]
    fn passkeys_need_a_host_name() {
        assert!(relying_party("https://localhost:8443").is_ok());
        assert_eq!(unavailable("https://localhost:8443"), None);
        let why = relying_party("https://127.0.0.1:8443").map(|_| ()).expect_err("an IP address");
        assert!(why.contains("127.0.0.1 is an IP address"), "{why}");
        assert_eq!(unavailable("https://127.0.0.1:8443"), Some(why));
    }
}
