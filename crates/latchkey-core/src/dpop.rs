//! DPoP proofs (RFC 9449 §4.3, as `docs/decisions.md`, "DPoP", narrows it) and server nonces (§8).
//!
//! [`verify`] runs every check that needs no state: the JWS form, `typ`, `alg` (ES256 only), the public `jwk`,
//! the raw R|S signature over the exact bytes received, `htm`, `htu` and `iat`. What needs state, the `jti` and
//! nonce replay checks, is the store's job; this module says which replay keys to record ([`replay_key`]).
//!
//! Server nonces are self-contained: an HMAC under the server key over when they were issued, their expiry and
//! random bytes. Any instance can check one without a lookup; the store only remembers which were used, so each
//! is good once. The time of issue lets a proof show that it was made after a moment the store names
//! (`flow::proof`: single use across a loss of the replay records).

use crate::access_token::MacKey;
use crate::jws::{verify_es256, EcJwk};
use crate::secret::Random;
use crate::time::UnixTime;
use crate::{ErrorCode, OAuthError};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::de::{self, IgnoredAny, Visitor};
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;

/// The largest proof accepted, in bytes.
const MAX_PROOF: usize = 4096;
/// The longest `jti` accepted.
const MAX_JTI: usize = 256;

/// The window in which a proof's `iat` is accepted (`docs/decisions.md`, "DPoP": 60 s past, 5 s future).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Seconds a proof may be old.
    pub max_age: i64,
    /// Seconds a proof may come from the future (clock skew).
    pub max_future: i64,
}

impl Default for Window {
    fn default() -> Self {
        Self { max_age: 60, max_future: 5 }
    }
}

/// A proof that passed the stateless checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proof {
    /// The RFC 7638 thumbprint of the proof's key.
    pub jkt: String,
    /// The proof's unique identifier.
    pub jti: String,
    /// When the proof was made.
    pub iat: UnixTime,
    /// The server nonce it carries, if any.
    pub nonce: Option<String>,
}

/// The proof's header, read in place: its strings borrow from the decoded bytes (no allocation per member).
#[derive(Deserialize)]
struct Header<'a> {
    #[serde(default, borrow)]
    typ: Member<'a>,
    #[serde(default, borrow)]
    alg: Member<'a>,
    #[serde(default, borrow, deserialize_with = "jwk_object")]
    jwk: Option<Jwk<'a>>,
    crit: Option<IgnoredAny>,
}

/// The `jwk` header: the members of an EC key, and whether any private member is there (whatever its value). A
/// member given twice is refused (RFC 7515 §4 allows either refusing or taking the last).
#[derive(Deserialize)]
struct Jwk<'a> {
    #[serde(default, borrow)]
    kty: Member<'a>,
    #[serde(default, borrow)]
    crv: Member<'a>,
    #[serde(default, borrow)]
    x: Member<'a>,
    #[serde(default, borrow)]
    y: Member<'a>,
    #[serde(default)]
    d: Present,
    #[serde(default)]
    p: Present,
    #[serde(default)]
    q: Present,
    #[serde(default)]
    dp: Present,
    #[serde(default)]
    dq: Present,
    #[serde(default)]
    qi: Present,
    #[serde(default)]
    k: Present,
}

/// The proof's claims, read in place like the header.
#[derive(Deserialize)]
struct Claims<'a> {
    #[serde(default, borrow)]
    jti: Member<'a>,
    #[serde(default, borrow)]
    htm: Member<'a>,
    #[serde(default, borrow)]
    htu: Member<'a>,
    iat: Option<serde_json::Value>,
    #[serde(default, borrow)]
    nonce: Member<'a>,
}

/// A JSON member that must be a string: absent (or `null`), its text, or some other value (which each check
/// refuses with its own message, as it would a wrong string).
#[derive(Default)]
enum Member<'a> {
    #[default]
    Absent,
    Text(Cow<'a, str>),
    Other,
}

impl<'a> Member<'a> {
    /// Its text, when it is a string.
    fn text(&self) -> Option<&str> {
        match self {
            Member::Text(t) => Some(t),
            _ => None,
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Any<'a>(std::marker::PhantomData<Member<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Any<'a> {
            type Value = Member<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Member::Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Member::Text(Cow::Owned(v.to_owned())))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Member::Other)
            }
            // `null` reads as an absent member, as it always did.
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Member::Absent)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Member::Other)
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Member::Other)
            }
        }
        d.deserialize_any(Any(std::marker::PhantomData))
    }
}

/// The `jwk` header as a JSON object only (a derived struct would also take an array of its members in order), or
/// `null` as no key.
fn jwk_object<'de: 'a, 'a, D: Deserializer<'de>>(d: D) -> Result<Option<Jwk<'a>>, D::Error> {
    struct Object<'a>(std::marker::PhantomData<Jwk<'a>>);
    impl<'de: 'a, 'a> Visitor<'de> for Object<'a> {
        type Value = Option<Jwk<'a>>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            Jwk::deserialize(de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(Object(std::marker::PhantomData))
}

/// Whether a member is there, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(d).map(|_| Present(true))
    }
}

fn bad(text: &'static str) -> OAuthError {
    OAuthError::new(ErrorCode::InvalidDpopProof, text)
}

/// Runs the stateless checks of RFC 9449 §4.3 on the value of the `DPoP` header, for a request of `method` to
/// the endpoint at `endpoint_url` (the configured public URL), at `now`.
pub fn verify(
    proof: &str,
    method: &str,
    endpoint_url: &str,
    now: UnixTime,
    window: Window,
) -> Result<Proof, OAuthError> {
    if proof.len() > MAX_PROOF {
        return Err(bad("The DPoP proof is too large."));
    }
    let mut parts = proof.split('.');
    let (Some(h64), Some(p64), Some(s64), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad("The DPoP proof is not a compact JWS."));
    };
    let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|_| bad("The DPoP proof is not base64url."));
    let header_json = decode(h64)?;
    let header: Header =
        serde_json::from_slice(&header_json).map_err(|_| bad("The DPoP proof header is not a JSON object."))?;
    if header.typ.text() != Some("dpop+jwt") {
        return Err(bad("The DPoP proof's typ must be dpop+jwt."));
    }
    if header.alg.text() != Some("ES256") {
        return Err(bad("The DPoP proof's alg must be ES256."));
    }
    if header.crit.is_some() {
        return Err(bad("The DPoP proof has critical header parameters this server does not understand."));
    }
    let jwk = public_jwk(header.jwk.as_ref())?;
    let point = jwk.to_point().ok_or_else(|| bad("The DPoP proof's jwk is not a P-256 public key."))?;
    let signature = decode(s64)?;
    if signature.len() != 64 {
        return Err(bad("The DPoP proof's signature must be the raw 64-byte R|S form."));
    }
    let signing_input = &proof[..h64.len() + 1 + p64.len()];
    if !verify_es256(&point, signing_input.as_bytes(), &signature) {
        return Err(bad("The DPoP proof's signature is invalid."));
    }
    let claims_json = decode(p64)?;
    let claims: Claims =
        serde_json::from_slice(&claims_json).map_err(|_| bad("The DPoP proof payload is not a JSON object."))?;
    let jti = match claims.jti.text() {
        Some(j) if !j.is_empty() && j.len() <= MAX_JTI => j.to_owned(),
        _ => return Err(bad("The DPoP proof needs a jti of 1 to 256 characters.")),
    };
    if claims.htm.text() != Some(method) {
        return Err(bad("The DPoP proof's htm does not match the request method."));
    }
    // `endpoint_url` is the server's own (configured) URL: the same bytes need no parsing.
    match claims.htu.text() {
        Some(u) if u == endpoint_url || same_uri(u, endpoint_url) => {}
        _ => return Err(bad("The DPoP proof's htu does not match the endpoint's URL.")),
    }
    // A NumericDate may have a fraction (RFC 7519 §2): clients with a floating-point clock send one.
    let iat = match claims.iat.as_ref().and_then(serde_json::Value::as_f64) {
        Some(i) if i.is_finite() => i,
        _ => return Err(bad("The DPoP proof needs a numeric iat.")),
    };
    if iat < (now.0 - window.max_age) as f64 || iat > (now.0 + window.max_future) as f64 {
        return Err(bad("The DPoP proof's iat is outside the accepted window."));
    }
    let iat = UnixTime(iat.floor() as i64);
    let nonce = match claims.nonce {
        Member::Absent => None,
        Member::Text(n) => Some(n.into_owned()),
        Member::Other => return Err(bad("The DPoP proof's nonce must be a string.")),
    };
    Ok(Proof { jkt: jwk.thumbprint(), jti, iat, nonce })
}

/// The `jwk` header: an EC P-256 public key, with no private member.
fn public_jwk(jwk: Option<&Jwk<'_>>) -> Result<EcJwk, OAuthError> {
    let jwk = jwk.ok_or_else(|| bad("The DPoP proof header needs a jwk."))?;
    if [&jwk.d, &jwk.p, &jwk.q, &jwk.dp, &jwk.dq, &jwk.qi, &jwk.k].iter().any(|m| m.0) {
        return Err(bad("The DPoP proof's jwk carries a private key member."));
    }
    match (jwk.kty.text(), jwk.crv.text(), jwk.x.text(), jwk.y.text()) {
        (Some("EC"), Some("P-256"), Some(x), Some(y)) => {
            Ok(EcJwk { kty: "EC".into(), crv: "P-256".into(), x: x.to_owned(), y: y.to_owned() })
        }
        _ => Err(bad("The DPoP proof's jwk must be an EC P-256 public key (kty, crv, x, y).")),
    }
}

/// Compares two HTTP URIs without query and fragment, after syntax- and scheme-based normalisation
/// (RFC 9449 §4.3 item 9; RFC 3986 §6.2.2, §6.2.3).
pub fn same_uri(a: &str, b: &str) -> bool {
    // The usual case, the same bytes: one parse, no normalisation (the same input normalises the same way).
    if a == b {
        return url::Url::parse(a).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
    }
    fn normal(s: &str) -> Option<String> {
        let mut u = url::Url::parse(s).ok()?;
        if !matches!(u.scheme(), "http" | "https") {
            return None;
        }
        u.set_query(None);
        u.set_fragment(None);
        let path = normal_percent(u.path());
        u.set_path(&path);
        Some(u.to_string())
    }
    matches!((normal(a), normal(b)), (Some(x), Some(y)) if x == y)
}

/// Percent-encoding normalisation (RFC 3986 §6.2.2.1, §6.2.2.2), which the URL parser leaves out: escapes of
/// unreserved characters decoded, the others in upper case. `path` is ASCII, as `Url::path` returns it.
fn normal_percent(path: &str) -> String {
    let hex = |b: u8| char::from(b).to_digit(16);
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let c = char::from_u32(h * 16 + l).unwrap_or('%');
                if c.is_ascii_alphanumeric() || "-._~".contains(c) {
                    out.push(c);
                } else {
                    out.push('%');
                    out.push(char::from(bytes[i + 1].to_ascii_uppercase()));
                    out.push(char::from(bytes[i + 2].to_ascii_uppercase()));
                }
                i += 3;
                continue;
            }
        }
        out.push(char::from(bytes[i]));
        i += 1;
    }
    out
}

/// Base64url(SHA-256(code)): the `jti` of a code-exchange proof that needs no nonce (`docs/decisions.md`, "DPoP").
pub fn code_jti(code: &str) -> String {
    URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, code.as_bytes()))
}

/// The key under which a proof's `jti` is remembered: one per (key, `jti`), whatever the proof's `iat`, so that a
/// `jti` used once is refused under any other `iat` too (RFC 9449 §11.1).
pub fn replay_key(proof: &Proof) -> Vec<u8> {
    untimed_key(&format!("jti:{}:{}", proof.jkt, proof.jti))
}

/// The key under which a used nonce is remembered until its expiry. A nonce carries its expiry (under the MAC),
/// so a replay computes the same key: it starts with the expiry, and the store's index of recorded values then
/// grows at one end, like a log, instead of taking each new value at a random place.
pub fn nonce_replay_key(nonce: &str, expires_at: UnixTime) -> Vec<u8> {
    time_ordered_key(expires_at, &format!("nonce:{nonce}"))
}

/// A replay record's key: its expiry first (so the store's purge reads one range), then SHA-256 of `input`. Only
/// for values whose replay has the same expiry.
pub(crate) fn time_ordered_key(expires_at: UnixTime, input: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + 32);
    key.extend_from_slice(&expires_at.0.to_be_bytes());
    key.extend_from_slice(ring::digest::digest(&ring::digest::SHA256, input.as_bytes()).as_ref());
    key
}

/// A replay record's key for a value that a replay may present with another expiry: the byte 0xFF (which no
/// expiry before the year 2106 starts with), then SHA-256 of `input`. The store keeps its expiry beside it.
pub fn untimed_key(input: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + 32);
    key.push(0xFF);
    key.extend_from_slice(ring::digest::digest(&ring::digest::SHA256, input.as_bytes()).as_ref());
    key
}

/// Until when a proof's `jti` is remembered, from `now`, when it is first used: the whole width of the window of
/// `iat`s that [`verify`] accepts, so that no proof with that `jti` is accepted within it, whatever its `iat`.
pub fn jti_expiry(now: UnixTime, window: Window) -> UnixTime {
    now.plus(window.max_age + window.max_future + 1)
}

/// Issues a nonce at `issued_at`, valid until `expires_at`.
pub fn issue_nonce(key: &MacKey, issued_at: UnixTime, expires_at: UnixTime, random: &dyn Random) -> String {
    let mut body = Vec::with_capacity(NONCE_BODY + 32);
    body.extend_from_slice(&key.id.to_be_bytes());
    body.extend_from_slice(&expires_at.0.to_be_bytes());
    body.extend_from_slice(&issued_at.0.to_be_bytes());
    let mut salt = [0u8; 12];
    random.fill(&mut salt);
    body.extend_from_slice(&salt);
    let tag = key.tag(&nonce_input(&body));
    body.extend_from_slice(&tag);
    URL_SAFE_NO_PAD.encode(body)
}

/// What recording a proof's single-use values found ([`crate::flow::Ports::record_proof`]). Nothing was recorded
/// when a value was already, or when [`Admission::check`] refuses the proof at `complete_since`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    /// The index of the first value already recorded and not expired, if one was.
    pub replayed: Option<usize>,
    /// From when the records are complete: every value used since this moment is among them. Records of proofs
    /// are kept off the durable path, so a restart of the process (SQLite) or of the database (PostgreSQL) loses
    /// those before it; the store then names the moment it noticed.
    pub complete_since: UnixTime,
}

/// What a proof shows of when it was made, against the moment from which the records of used proofs are complete
/// ([`Recorded::complete_since`]): see `flow::proof` for why these rules make every proof used before that moment
/// refused after it. The store records a proof's values only when its moment admits the proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// The proof's `iat`.
    pub iat: UnixTime,
    /// When the nonce it carries was issued, if it carries one.
    pub nonce_issued_at: Option<UnixTime>,
    /// How far in the future an `iat` is accepted (the window's allowance).
    pub max_future: i64,
}

/// Why a proof is not admitted after a loss of the records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unadmitted {
    /// Its nonce was issued at or before the records' moment.
    OldNonce,
    /// Its `iat` is at or before the moment plus the future allowance, and it carries no nonce issued after it.
    NonceNeeded,
}

impl Admission {
    /// Whether records complete since `complete_since` admit the proof.
    pub fn check(&self, complete_since: UnixTime) -> Result<(), Unadmitted> {
        match self.nonce_issued_at {
            Some(issued) if issued <= complete_since => Err(Unadmitted::OldNonce),
            Some(_) => Ok(()),
            None if self.iat <= complete_since.plus(self.max_future) => Err(Unadmitted::NonceNeeded),
            None => Ok(()),
        }
    }
}

/// A nonce's body: key id, expiry, time of issue, 12 random bytes.
const NONCE_BODY: usize = 4 + 8 + 8 + 12;

/// Why a nonce was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonceError {
    /// Not one of ours.
    Invalid,
    /// Past its lifetime.
    Expired,
}

/// A nonce that checked out: when it was issued and until when it is good (how long its use must be remembered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Nonce {
    /// When it was issued.
    pub issued_at: UnixTime,
    /// Its expiry.
    pub expires_at: UnixTime,
}

/// Checks a nonce's MAC and expiry.
pub fn check_nonce(keys: &[MacKey], nonce: &str, now: UnixTime) -> Result<Nonce, NonceError> {
    let raw = URL_SAFE_NO_PAD.decode(nonce).map_err(|_| NonceError::Invalid)?;
    if raw.len() != NONCE_BODY + 32 {
        return Err(NonceError::Invalid);
    }
    let (body, tag) = raw.split_at(NONCE_BODY);
    let field = |at: usize| body[at..at + 8].try_into().map(i64::from_be_bytes).map_err(|_| NonceError::Invalid);
    let id = u32::from_be_bytes(body[..4].try_into().map_err(|_| NonceError::Invalid)?);
    let key = keys.iter().find(|k| k.id == id).ok_or(NonceError::Invalid)?;
    if !key.verify_tag(&nonce_input(body), tag) {
        return Err(NonceError::Invalid);
    }
    let (expires_at, issued_at) = (UnixTime(field(4)?), UnixTime(field(12)?));
    if now >= expires_at {
        return Err(NonceError::Expired);
    }
    Ok(Nonce { issued_at, expires_at })
}

fn nonce_input(body: &[u8]) -> Vec<u8> {
    let mut v = b"latchkey-dpop-nonce:".to_vec();
    v.extend_from_slice(body);
    v
}

#[cfg(test)]
mod tests;
