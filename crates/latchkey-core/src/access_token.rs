//! Access tokens: self-contained, MAC-protected handles on a grant.
//!
//! An access token names its grant, its expiry and its scopes, and carries an HMAC-SHA256 under a server key
//! kept in the store (so every instance verifies every other's tokens). Nothing is written to mint one, and
//! checking one needs no lookup but the grant's state, which a revocation changes. The token is opaque to clients.
//!
//! Layout before base64url: `version(1) | key_id(4) | holder(16 or 20) | expires_at(8) | scopes(4 or 8) | salt(8)
//! | mac(32)`. Version 1 names a user's grant (16 bytes), version 2 a service account's key (20 bytes): a
//! service account's token names the key that signed its assertion, so disabling or deleting either the key or
//! the account stops it at its next use. Version 3 is version 1 with 8 bytes of scopes, for a set that holds a
//! registered API's scope past the first 32 bits; the well-known scopes' tokens keep the shorter form.

use crate::scope::ScopeSet;
use crate::secret::Random;
use crate::time::UnixTime;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::{hkdf, hmac};
use std::sync::atomic::{AtomicU32, Ordering};

/// The prefix of every access token.
pub const PREFIX: &str = "lka_";
const GRANT: u8 = 1;
const SERVICE_KEY: u8 = 2;
const GRANT_WIDE: u8 = 3;
/// The longest token body and MAC (a service key's, or a grant's with wide scopes).
const MAX_LEN: usize = body_len(20, 8) + 32;

/// The bytes before the MAC for a holder of `holder` bytes and scopes of `scopes` bytes.
const fn body_len(holder: usize, scopes: usize) -> usize {
    1 + 4 + holder + 8 + scopes + 8
}

/// A version's holder and scopes lengths.
const fn lengths(version: u8) -> Option<(usize, usize)> {
    match version {
        GRANT => Some((16, 4)),
        SERVICE_KEY => Some((20, 4)),
        GRANT_WIDE => Some((16, 8)),
        _ => None,
    }
}

/// A grant's identifier: 16 random bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrantId(pub [u8; 16]);

impl GrantId {
    /// A fresh identifier of 16 bytes from `random`.
    pub fn generate(random: &dyn Random) -> Self {
        let mut id = [0u8; 16];
        random.fill(&mut id);
        Self(id)
    }

    /// A fresh identifier for a grant issued at `now`: 4 bytes of Unix seconds, 4 of a sequence this process
    /// counts up, then 8 random bytes. Grants issued together get neighbouring ids, so the store's id index
    /// takes a batch of them on one page instead of one random page each (a write to the log per grant);
    /// the random part keeps ids from different processes apart. The sequence is the one piece of state
    /// shared by the whole process, and only orders ids.
    pub fn generate_at(now: UnixTime, random: &dyn Random) -> Self {
        static SEQUENCE: AtomicU32 = AtomicU32::new(0);
        let mut id = [0u8; 16];
        id[..4].copy_from_slice(&(now.0 as u32).to_be_bytes());
        id[4..8].copy_from_slice(&SEQUENCE.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        random.fill(&mut id[8..]);
        Self(id)
    }

    /// The identifier's text form (22 base64url characters), as stored.
    pub fn encode(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0)
    }

    /// Parses the text form.
    pub fn decode(s: &str) -> Option<Self> {
        let v = URL_SAFE_NO_PAD.decode(s).ok()?;
        Some(Self(v.try_into().ok()?))
    }
}

/// A service account's key id: 20 bytes, written as 40 lower-case hex digits (the key file's `private_key_id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceKeyId(pub [u8; 20]);

impl ServiceKeyId {
    /// A fresh id from `random`.
    pub fn generate(random: &dyn Random) -> Self {
        let mut id = [0u8; 20];
        random.fill(&mut id);
        Self(id)
    }

    /// The hex form, as stored and as the assertions' `kid`.
    pub fn encode(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(40);
        for b in self.0 {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
        out
    }

    /// Parses the hex form (lower-case, 40 digits).
    pub fn decode(s: &str) -> Option<Self> {
        if s.len() != 40 || !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return None;
        }
        let mut id = [0u8; 20];
        for (i, byte) in id.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
        }
        Some(Self(id))
    }
}

/// Whom an access token acts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holder {
    /// A user, through the grant the token was issued under.
    Grant(GrantId),
    /// A service account, through the key that signed its assertion.
    ServiceKey(ServiceKeyId),
}

impl Holder {
    fn version_and_bytes(&self) -> (u8, &[u8]) {
        match self {
            Self::Grant(id) => (GRANT, &id.0),
            Self::ServiceKey(id) => (SERVICE_KEY, &id.0),
        }
    }
}

/// What an access token says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessClaims {
    /// Whom it acts for.
    pub holder: Holder,
    /// When it stops being valid.
    pub expires_at: UnixTime,
    /// The scopes it carries (a subset of the grant's).
    pub scopes: ScopeSet,
}

/// Why an access token was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessTokenError {
    /// Not a token of ours, or tampered with.
    Invalid,
    /// Well-formed, but signed with a key id this key set does not hold (a rotation elsewhere, or a forgery).
    UnknownKey,
    /// Past its expiry.
    Expired,
}

/// One HMAC key, named by its id.
pub struct MacKey {
    /// The key's id, written into every token it signs.
    pub id: u32,
    key: hmac::Key,
    /// The secret, extracted for HKDF: what sealed authorization codes derive their keys from.
    prk: hkdf::Prk,
}

impl MacKey {
    /// A key from its stored bytes.
    pub fn new(id: u32, secret: &[u8]) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"latchkey mac key").extract(secret);
        Self { id, key: hmac::Key::new(hmac::HMAC_SHA256, secret), prk }
    }

    /// The key's secret, extracted for HKDF (`crate::auth_code`).
    pub(crate) fn prk(&self) -> &hkdf::Prk {
        &self.prk
    }
}

impl MacKey {
    /// An HMAC-SHA256 tag over `data`, for other server-made tokens (CSRF tokens).
    pub fn tag(&self, data: &[u8]) -> Vec<u8> {
        hmac::sign(&self.key, data).as_ref().to_vec()
    }

    /// Whether `tag` is this key's tag over `data`, compared in constant time.
    pub fn verify_tag(&self, data: &[u8], tag: &[u8]) -> bool {
        hmac::verify(&self.key, data, tag).is_ok()
    }
}

impl std::fmt::Debug for MacKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MacKey({})", self.id)
    }
}

/// Mints an access token.
pub fn mint(key: &MacKey, claims: &AccessClaims, random: &dyn Random) -> String {
    let (mut version, holder) = claims.holder.version_and_bytes();
    let narrow = u32::try_from(claims.scopes.0).ok();
    if version == GRANT && narrow.is_none() {
        version = GRANT_WIDE;
    }
    let scopes_len = if version == GRANT_WIDE { 8 } else { 4 };
    let h = 5 + holder.len();
    let body = body_len(holder.len(), scopes_len);
    let mut raw = [0u8; MAX_LEN];
    raw[0] = version;
    raw[1..5].copy_from_slice(&key.id.to_be_bytes());
    raw[5..h].copy_from_slice(holder);
    raw[h..h + 8].copy_from_slice(&claims.expires_at.0.to_be_bytes());
    match narrow {
        Some(bits) if version != GRANT_WIDE => raw[h + 8..h + 12].copy_from_slice(&bits.to_be_bytes()),
        // A service key's scopes are the data API's, always narrow; a wide grant's take 8 bytes.
        _ => raw[h + 8..h + 16].copy_from_slice(&claims.scopes.0.to_be_bytes()),
    }
    random.fill(&mut raw[h + 8 + scopes_len..body]);
    let tag = hmac::sign(&key.key, &raw[..body]);
    raw[body..body + 32].copy_from_slice(tag.as_ref());
    let mut out = String::with_capacity(PREFIX.len() + 103);
    out.push_str(PREFIX);
    URL_SAFE_NO_PAD.encode_string(&raw[..body + 32], &mut out);
    out
}

/// Checks a token's MAC (in constant time) and expiry, with the key it names among `keys`.
pub fn verify(keys: &[MacKey], token: &str, now: UnixTime) -> Result<AccessClaims, AccessTokenError> {
    let body = token.strip_prefix(PREFIX).ok_or(AccessTokenError::Invalid)?;
    let mut raw = [0u8; MAX_LEN];
    let len = URL_SAFE_NO_PAD.decode_slice(body, &mut raw).map_err(|_| AccessTokenError::Invalid)?;
    let (holder_len, scopes_len) = lengths(raw[0]).ok_or(AccessTokenError::Invalid)?;
    let (h, body) = (5 + holder_len, body_len(holder_len, scopes_len));
    if len != body + 32 {
        return Err(AccessTokenError::Invalid);
    }
    let invalid = |_| AccessTokenError::Invalid;
    let key_id = u32::from_be_bytes(raw[1..5].try_into().map_err(invalid)?);
    let key = keys.iter().find(|k| k.id == key_id).ok_or(AccessTokenError::UnknownKey)?;
    hmac::verify(&key.key, &raw[..body], &raw[body..len]).map_err(|_| AccessTokenError::Invalid)?;
    let holder = match raw[0] {
        SERVICE_KEY => Holder::ServiceKey(ServiceKeyId(raw[5..h].try_into().map_err(invalid)?)),
        _ => Holder::Grant(GrantId(raw[5..h].try_into().map_err(invalid)?)),
    };
    let scopes = match scopes_len {
        4 => u64::from(u32::from_be_bytes(raw[h + 8..h + 12].try_into().map_err(invalid)?)),
        _ => u64::from_be_bytes(raw[h + 8..h + 16].try_into().map_err(invalid)?),
    };
    let claims = AccessClaims {
        holder,
        expires_at: UnixTime(i64::from_be_bytes(raw[h..h + 8].try_into().map_err(invalid)?)),
        scopes: ScopeSet(scopes),
    };
    if now >= claims.expires_at {
        return Err(AccessTokenError::Expired);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Counter;

    fn claims() -> AccessClaims {
        AccessClaims {
            holder: Holder::Grant(GrantId::generate(&Counter::default())),
            expires_at: UnixTime(1000),
            scopes: ScopeSet(0b101),
        }
    }

    #[test]
    fn a_minted_token_verifies_until_it_expires() {
        let key = MacKey::new(7, b"0123456789abcdef0123456789abcdef");
        let c = claims();
        let t = mint(&key, &c, &Counter::default());
        assert!(t.starts_with(PREFIX));
        assert_eq!(verify(std::slice::from_ref(&key), &t, UnixTime(999)), Ok(c));
        assert_eq!(verify(&[key], &t, UnixTime(1000)), Err(AccessTokenError::Expired));
    }

    #[test]
    fn two_tokens_for_the_same_claims_differ() {
        let key = MacKey::new(1, b"k");
        let c = claims();
        let rng = Counter::default();
        assert_ne!(mint(&key, &c, &rng), mint(&key, &c, &rng));
    }

    #[test]
    fn a_tampered_token_or_an_unknown_key_is_invalid() {
        let key = MacKey::new(1, b"k");
        let t = mint(&key, &claims(), &Counter::default());
        let mut bytes = t.into_bytes();
        let i = bytes.len() / 2;
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let tampered = String::from_utf8(bytes).unwrap();
        assert_eq!(verify(std::slice::from_ref(&key), &tampered, UnixTime(0)), Err(AccessTokenError::Invalid));
        let other = mint(&MacKey::new(2, b"k"), &claims(), &Counter::default());
        assert_eq!(verify(&[key], &other, UnixTime(0)), Err(AccessTokenError::UnknownKey));
    }

    #[test]
    fn a_service_key_token_names_its_key_and_verifies_like_a_grants() {
        let key = MacKey::new(3, b"k");
        let id = ServiceKeyId::generate(&Counter::default());
        assert_eq!(ServiceKeyId::decode(&id.encode()), Some(id));
        let c = AccessClaims { holder: Holder::ServiceKey(id), ..claims() };
        let t = mint(&key, &c, &Counter::default());
        assert_eq!(verify(std::slice::from_ref(&key), &t, UnixTime(999)), Ok(c));
        // The version decides the length: a grant's version on a key's length is refused.
        let mut raw = URL_SAFE_NO_PAD.decode(&t[PREFIX.len()..]).unwrap();
        raw[0] = GRANT;
        let relabelled = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(verify(&[key], &relabelled, UnixTime(0)), Err(AccessTokenError::Invalid));
        assert_eq!(ServiceKeyId::decode("AB"), None);
        assert_eq!(ServiceKeyId::decode(&"G".repeat(40)), None);
    }

    #[test]
    fn a_registered_apis_scope_past_32_bits_takes_the_wide_form_and_others_keep_the_short_one() {
        let key = MacKey::new(4, b"k");
        let narrow = mint(&key, &claims(), &Counter::default());
        let wide_claims = AccessClaims { scopes: ScopeSet(1 << 40 | 0b1), ..claims() };
        let wide = mint(&key, &wide_claims, &Counter::default());
        let raw_len = |t: &str| URL_SAFE_NO_PAD.decode(&t[PREFIX.len()..]).unwrap().len();
        assert_eq!(raw_len(&wide), raw_len(&narrow) + 4, "4 more bytes of scopes");
        assert_eq!(verify(std::slice::from_ref(&key), &wide, UnixTime(999)), Ok(wide_claims));
        let mut raw = URL_SAFE_NO_PAD.decode(&narrow[PREFIX.len()..]).unwrap();
        assert_eq!(raw[0], GRANT, "the short form is the one every token had");
        raw[0] = GRANT_WIDE;
        let relabelled = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&raw));
        assert_eq!(verify(&[key], &relabelled, UnixTime(0)), Err(AccessTokenError::Invalid));
    }

    #[test]
    fn garbage_is_invalid_not_a_panic() {
        let key = MacKey::new(1, b"k");
        for t in ["", "lka_", "lka_!!!", "Bearer x", &format!("lka_{}", "A".repeat(200))] {
            assert_eq!(verify(std::slice::from_ref(&key), t, UnixTime(0)), Err(AccessTokenError::Invalid));
        }
    }

    #[test]
    fn grant_ids_issued_together_are_neighbours_and_still_unique() {
        let (now, rng) = (UnixTime(1_700_000_000), Counter::default());
        let a = GrantId::generate_at(now, &rng);
        let b = GrantId::generate_at(now, &rng);
        assert_ne!(a, b);
        assert_eq!(a.0[..4], b.0[..4], "same second");
        assert!(a.0[4..8] < b.0[4..8], "issuance order");
        assert_eq!(GrantId::decode(&a.encode()), Some(a));
    }
}
