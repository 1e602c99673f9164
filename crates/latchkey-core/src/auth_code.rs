//! Authorization codes that carry their own record, sealed with a server key.
//!
//! The store keeps every code's record (under the hash of the code) to spend it once, to see a code presented
//! again, to expire the pending codes an organisation's change refuses and to narrow their scopes. The code itself
//! also carries a copy of that record, encrypted and authenticated: the token endpoint opens it and runs every
//! check of the exchange before it calls the store, so an exchange takes one call to the store (the one that
//! spends the code) where it took two (read, then spend). What the store alone knows (used, expired early, the
//! account disabled, the scopes narrowed) is still decided by that call.
//!
//! Layout before base64url: `version(1) | key_id(4) | salt(16) | ciphertext | tag(16)`. The key is the MAC key
//! `key_id` names, through HKDF-SHA256 with the salt: one AES-256-GCM key per code, so the fixed nonce never
//! repeats under a key and no birthday bound on nonces limits how many codes a key seals. The header is the
//! additional data. A code that does not open (an earlier plain code, a key this instance has not loaded yet, a
//! forgery) is looked up in the store as before.

use crate::access_token::MacKey;
use crate::pkce::ChallengeMethod;
use crate::scope::ScopeSet;
use crate::secret::{self, Random, Secret};
use crate::time::UnixTime;
use crate::token::AuthCode;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};

/// The prefix of every authorization code.
pub const PREFIX: &str = "lkc_";
const VERSION: u8 = 1;
const HEADER_LEN: usize = 1 + 4 + 16;
/// The longest record a code carries; a longer one (a very long redirect URI or nonce) makes a plain code, which
/// the store answers for, so that a code stays short enough for any URL.
const MAX_RECORD: usize = 512;
const INFO: &[u8] = b"latchkey authorization code";

/// The record as the code carries it (short names: it travels in a URL).
#[derive(Serialize, Deserialize)]
struct Carried {
    c: String,
    u: String,
    r: String,
    s: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<(bool, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<String>,
    a: i64,
    e: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    l: Option<i64>,
}

/// A new code for `record` (whose `code_hash` and `used` are ignored): sealed with `key` when the record fits,
/// else plain. The caller stores the record under the code's hash.
pub fn issue(key: Option<&MacKey>, record: &AuthCode, random: &dyn Random) -> Secret {
    key.and_then(|key| seal(key, record, random)).unwrap_or_else(|| Secret::generate(PREFIX, random))
}

fn seal(key: &MacKey, record: &AuthCode, random: &dyn Random) -> Option<Secret> {
    let carried = Carried {
        c: record.client_id.clone(),
        u: record.user_id.clone(),
        r: record.redirect_uri.clone(),
        s: record.scopes.0,
        p: record.challenge.clone().map(|(m, c)| (m == ChallengeMethod::S256, c)),
        n: record.nonce.clone(),
        a: record.auth_time.0,
        e: record.expires_at.0,
        l: record.grant_lifetime,
    };
    let mut raw = Vec::with_capacity(HEADER_LEN + MAX_RECORD + aead::MAX_TAG_LEN);
    raw.push(VERSION);
    raw.extend_from_slice(&key.id.to_be_bytes());
    let mut salt = [0u8; 16];
    random.fill(&mut salt);
    raw.extend_from_slice(&salt);
    serde_json::to_writer(&mut raw, &carried).ok()?;
    if raw.len() - HEADER_LEN > MAX_RECORD {
        return None;
    }
    let (header, body) = raw.split_at_mut(HEADER_LEN);
    let tag = code_key(key, &salt)?.seal_in_place_separate_tag(nonce(), Aad::from(&*header), body).ok()?;
    raw.extend_from_slice(tag.as_ref());
    let mut out = String::with_capacity(PREFIX.len() + raw.len() * 4 / 3 + 4);
    out.push_str(PREFIX);
    URL_SAFE_NO_PAD.encode_string(&raw, &mut out);
    Some(Secret::new(out))
}

/// The record a sealed code carries, opened with the key it names among `keys`; `None` for a code that does not
/// open (see the module's doc). The record's `code_hash` is the code's; `used` is false: the store decides that.
pub fn open(keys: &[MacKey], code: &str) -> Option<AuthCode> {
    let body = code.strip_prefix(PREFIX)?;
    let mut raw = URL_SAFE_NO_PAD.decode(body).ok()?;
    if raw.len() < HEADER_LEN + aead::MAX_TAG_LEN || raw[0] != VERSION {
        return None;
    }
    let key_id = u32::from_be_bytes(raw[1..5].try_into().ok()?);
    let key = keys.iter().find(|k| k.id == key_id)?;
    let salt: [u8; 16] = raw[5..HEADER_LEN].try_into().ok()?;
    let (header, body) = raw.split_at_mut(HEADER_LEN);
    let plain = code_key(key, &salt)?.open_in_place(nonce(), Aad::from(&*header), body).ok()?;
    let c: Carried = serde_json::from_slice(plain).ok()?;
    Some(AuthCode {
        code_hash: secret::hash(code),
        client_id: c.c,
        user_id: c.u,
        redirect_uri: c.r,
        scopes: ScopeSet(c.s),
        challenge: c.p.map(|(s256, c)| (if s256 { ChallengeMethod::S256 } else { ChallengeMethod::Plain }, c)),
        nonce: c.n,
        auth_time: UnixTime(c.a),
        expires_at: UnixTime(c.e),
        used: false,
        grant_lifetime: c.l,
    })
}

/// The one code's key: HKDF-SHA256 of the MAC key's secret, with the code's salt.
fn code_key(key: &MacKey, salt: &[u8; 16]) -> Option<LessSafeKey> {
    let info = [INFO, salt];
    let okm = key.prk().expand(&info, &aead::AES_256_GCM).ok()?;
    Some(LessSafeKey::new(UnboundKey::from(okm)))
}

/// Each code has a key of its own, used once: the nonce may be fixed.
fn nonce() -> Nonce {
    Nonce::assume_unique_for_key([0; aead::NONCE_LEN])
}

/// The key set's signing key, the one that seals new codes.
pub fn sealing_key(keys: &[MacKey]) -> Option<&MacKey> {
    keys.first()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::Scope;
    use crate::secret::Counter;

    fn record() -> AuthCode {
        AuthCode {
            code_hash: vec![],
            client_id: "app".into(),
            user_id: "u_1".into(),
            redirect_uri: "http://127.0.0.1:4000/cb".into(),
            scopes: Scope::OpenId.set(),
            challenge: Some((ChallengeMethod::S256, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into())),
            nonce: Some("n-0S6_WzA2Mj".into()),
            auth_time: UnixTime(1_700_000_000),
            expires_at: UnixTime(1_700_000_600),
            used: true,
            grant_lifetime: Some(3600),
        }
    }

    #[test]
    fn a_sealed_code_opens_to_its_record_with_its_own_hash() {
        let keys = [MacKey::new(7, b"secret")];
        let code = issue(sealing_key(&keys), &record(), &Counter::default());
        let opened = open(&keys, code.expose()).expect("opens");
        let expected = AuthCode { code_hash: code.hash(), used: false, ..record() };
        assert_eq!(opened, expected);
        let plain = AuthCode { challenge: Some((ChallengeMethod::Plain, "v".repeat(43))), nonce: None, ..record() };
        let code = issue(sealing_key(&keys), &plain, &Counter::default());
        assert_eq!(open(&keys, code.expose()).expect("opens").challenge, plain.challenge);
    }

    #[test]
    fn a_code_tampered_with_or_of_an_unknown_key_does_not_open() {
        let keys = [MacKey::new(7, b"secret")];
        let code = issue(sealing_key(&keys), &record(), &Counter::default());
        let mut raw = URL_SAFE_NO_PAD.decode(&code.expose()[PREFIX.len()..]).expect("base64url");
        for i in [0, 4, 5, HEADER_LEN, raw.len() - 1] {
            raw[i] ^= 1;
            let changed = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(&raw));
            assert_eq!(open(&keys, &changed), None, "byte {i} changed");
            raw[i] ^= 1;
        }
        assert_eq!(open(&[MacKey::new(8, b"secret")], code.expose()), None, "another key id");
        assert_eq!(open(&[MacKey::new(7, b"other")], code.expose()), None, "another secret under the same id");
        assert!(open(&keys, code.expose()).is_some());
    }

    #[test]
    fn a_plain_code_is_made_without_a_key_or_for_a_record_too_long_and_does_not_open() {
        let keys = [MacKey::new(7, b"secret")];
        let random = Counter::default();
        let plain = issue(None, &record(), &random);
        assert_eq!(plain.expose().len(), PREFIX.len() + 43);
        assert_eq!(open(&keys, plain.expose()), None);
        let long = AuthCode { redirect_uri: format!("http://127.0.0.1:4000/{}", "x".repeat(600)), ..record() };
        let code = issue(sealing_key(&keys), &long, &random);
        assert_eq!(code.expose().len(), PREFIX.len() + 43, "too long to carry: plain");
        let two = (issue(sealing_key(&keys), &record(), &random), issue(sealing_key(&keys), &record(), &random));
        assert_ne!(two.0.expose(), two.1.expose(), "each code its own salt");
    }
}
