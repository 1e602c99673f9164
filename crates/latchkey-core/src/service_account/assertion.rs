//! The JWT bearer assertion (RFC 7523 §3): parsed once, its signature verified with the account's public key
//! (*ring*), its claims checked against the token endpoint and the time.

use super::{GrantRefusal, CLOCK_SKEW_SECS, MAX_ASSERTION_BYTES, MAX_LIFETIME_SECS, PROVIDER_TOKEN_AUDIENCE};
use crate::time::UnixTime;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature;
use serde::Deserialize;

/// A service account's public key, as the store keeps it (never the private half).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// RSA (2048 bits or more): modulus and exponent, big-endian.
    Rs256 {
        /// The modulus.
        n: Vec<u8>,
        /// The public exponent.
        e: Vec<u8>,
    },
    /// EC P-256: the uncompressed point.
    Es256 {
        /// `0x04 | x | y`.
        point: Vec<u8>,
    },
}

impl PublicKey {
    /// The key as the store keeps it: its algorithm, and its public numbers as JSON (base64url).
    pub fn to_stored(&self) -> (&'static str, String) {
        let b = |v: &[u8]| URL_SAFE_NO_PAD.encode(v);
        let json = match self {
            Self::Rs256 { n, e } => serde_json::json!({ "n": b(n), "e": b(e) }),
            Self::Es256 { point } => serde_json::json!({ "point": b(point) }),
        };
        (self.alg(), json.to_string())
    }

    /// The key the store kept ([`PublicKey::to_stored`]); `None` for anything else.
    pub fn from_stored(alg: &str, json: &str) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_str(json).ok()?;
        let field = |k: &str| v.get(k).and_then(serde_json::Value::as_str).and_then(|s| URL_SAFE_NO_PAD.decode(s).ok());
        match alg {
            "RS256" => Some(Self::Rs256 { n: field("n")?, e: field("e")? }),
            "ES256" => field("point").filter(|p| p.len() == 65 && p[0] == 4).map(|point| Self::Es256 { point }),
            _ => None,
        }
    }

    /// The algorithm of the assertions it verifies.
    pub fn alg(&self) -> &'static str {
        match self {
            Self::Rs256 { .. } => "RS256",
            Self::Es256 { .. } => "ES256",
        }
    }

    fn verifies(&self, input: &[u8], sig: &[u8]) -> bool {
        match self {
            Self::Rs256 { n, e } => signature::RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, sig)
                .is_ok(),
            Self::Es256 { point } => crate::jws::verify_es256(point, input, sig),
        }
    }
}

/// The header members read.
#[derive(Deserialize)]
struct Header {
    alg: String,
    #[serde(default)]
    kid: Option<String>,
}

/// An audience: one string or several.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

/// The claims of an assertion.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct AssertionClaims {
    /// The service account's identifier.
    pub iss: String,
    /// The account the token acts as, when it is not the service account itself (delegation).
    #[serde(default)]
    pub sub: Option<String>,
    /// Space-separated scopes.
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    /// Issued at.
    #[serde(default)]
    pub iat: Option<i64>,
    /// Expires at.
    #[serde(default)]
    pub exp: Option<i64>,
    /// The assertion's unique id, when it has one.
    #[serde(default)]
    pub jti: Option<String>,
}

/// A parsed assertion, not yet trusted.
#[derive(Debug, Clone)]
pub struct Assertion {
    alg: String,
    kid: Option<String>,
    claims: AssertionClaims,
    signing_input: String,
    signature: Vec<u8>,
}

impl Assertion {
    /// Parses a compact JWS (at most [`MAX_ASSERTION_BYTES`]): `alg` must be RS256 or ES256 (`none` and HMAC are
    /// refused before anything else).
    pub fn parse(raw: &str) -> Result<Self, GrantRefusal> {
        if raw.len() > MAX_ASSERTION_BYTES {
            return Err(GrantRefusal::Malformed);
        }
        let mut parts = raw.split('.');
        let (Some(h), Some(c), Some(s), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(GrantRefusal::Malformed);
        };
        let json = |part: &str| URL_SAFE_NO_PAD.decode(part).map_err(|_| GrantRefusal::Malformed);
        let header: Header = serde_json::from_slice(&json(h)?).map_err(|_| GrantRefusal::Malformed)?;
        if header.alg != "RS256" && header.alg != "ES256" {
            return Err(GrantRefusal::Algorithm);
        }
        let claims: AssertionClaims = serde_json::from_slice(&json(c)?).map_err(|_| GrantRefusal::Malformed)?;
        let signature = json(s)?;
        let signing_input = raw[..h.len() + 1 + c.len()].to_owned();
        Ok(Self { alg: header.alg, kid: header.kid, claims, signing_input, signature })
    }

    /// The key id (the key file's `private_key_id`).
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// The signed part, `header.claims` (an ECDSA signature has two valid forms, so the signature is no identity).
    pub fn signing_input(&self) -> &str {
        &self.signing_input
    }

    /// The claims, not yet verified: what to look the account up by.
    pub fn claims(&self) -> &AssertionClaims {
        &self.claims
    }

    /// Verifies the signature with the account's key (whose algorithm must be the header's), then checks the
    /// claims: `aud` the token endpoint, `iat` and `exp` present, not in the future nor past beyond the skew,
    /// and at most an hour apart. Returns the claims, now trusted, and when the assertion stops being usable (how
    /// long its `jti` must be remembered).
    pub fn verify(
        &self,
        key: &PublicKey,
        token_endpoint: &str,
        now: UnixTime,
    ) -> Result<(&AssertionClaims, UnixTime), GrantRefusal> {
        if key.alg() != self.alg {
            return Err(GrantRefusal::Algorithm);
        }
        if !key.verifies(self.signing_input.as_bytes(), &self.signature) {
            return Err(GrantRefusal::Signature);
        }
        let c = &self.claims;
        let ours = |a: &String| a == token_endpoint || a == PROVIDER_TOKEN_AUDIENCE;
        let audience_ok = match &c.aud {
            Some(Audience::One(a)) => ours(a),
            Some(Audience::Many(all)) => all.iter().any(ours),
            None => false,
        };
        if !audience_ok {
            return Err(GrantRefusal::Audience);
        }
        let (Some(iat), Some(exp)) = (c.iat, c.exp) else { return Err(GrantRefusal::Lifetime) };
        let fresh = iat <= now.0.saturating_add(CLOCK_SKEW_SECS)
            && exp > now.0.saturating_sub(CLOCK_SKEW_SECS)
            && exp > iat
            && exp.saturating_sub(iat) <= MAX_LIFETIME_SECS;
        if !fresh {
            return Err(GrantRefusal::Lifetime);
        }
        Ok((c, UnixTime(exp.saturating_add(CLOCK_SKEW_SECS))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jws::SigningKey;
    use crate::secret::Counter;
    use serde_json::json;

    const TOKEN: &str = "https://127.0.0.1:8443/token";
    const NOW: UnixTime = UnixTime(1_700_000_000);

    fn es256() -> (SigningKey, PublicKey) {
        let rng = Counter::default();
        let key = SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&rng).unwrap(), &rng).unwrap();
        let point = key.public_jwk().to_point().unwrap().to_vec();
        (key, PublicKey::Es256 { point })
    }

    fn signed(key: &SigningKey, claims: serde_json::Value) -> String {
        key.sign("JWT", &claims, &Counter::default()).unwrap()
    }

    fn claims() -> serde_json::Value {
        json!({"iss": "sa@p.iam.latchkey.dev", "scope": "s", "aud": TOKEN, "iat": NOW.0, "exp": NOW.0 + 3600})
    }

    #[test]
    fn a_fresh_assertion_for_the_token_endpoint_verifies_and_is_remembered_until_it_expires() {
        let (key, public) = es256();
        let a = Assertion::parse(&signed(&key, claims())).unwrap();
        assert_eq!(a.kid(), Some(key.kid()));
        let (c, until) = a.verify(&public, TOKEN, NOW).unwrap();
        assert_eq!((c.iss.as_str(), c.scope.as_deref()), ("sa@p.iam.latchkey.dev", Some("s")));
        assert_eq!(until, UnixTime(NOW.0 + 3600 + CLOCK_SKEW_SECS));
    }

    #[test]
    fn an_rs256_assertion_verifies_with_the_modulus_and_exponent_kept() {
        let key = crate::jws::RsaSigningKey::from_pkcs8(include_bytes!("../jws/rsa-test-key.pk8")).unwrap();
        let raw = key.sign("JWT", &claims(), &Counter::default()).unwrap();
        let jwk = key.public_jwk();
        let public =
            PublicKey::Rs256 { n: URL_SAFE_NO_PAD.decode(&jwk.n).unwrap(), e: URL_SAFE_NO_PAD.decode(&jwk.e).unwrap() };
        let a = Assertion::parse(&raw).unwrap();
        assert!(a.verify(&public, TOKEN, NOW).is_ok());
        let (_, es) = es256();
        assert_eq!(a.verify(&es, TOKEN, NOW).unwrap_err(), GrantRefusal::Algorithm);
        let tampered = format!("{}x", &raw[..raw.len() - 1]);
        let tampered = Assertion::parse(&tampered).map(|t| t.verify(&public, TOKEN, NOW).map(drop));
        assert!(matches!(tampered, Ok(Err(GrantRefusal::Signature)) | Err(GrantRefusal::Malformed)));
    }

    #[test]
    fn every_truncation_and_every_changed_character_of_an_assertion_is_refused_without_a_panic() {
        // A deterministic sweep (the `service_account_assertion` fuzz target goes further): no mutation panics, none
        // verifies.
        let (key, public) = es256();
        let raw = signed(&key, claims());
        let refused =
            |text: &str| Assertion::parse(text).and_then(|a| a.verify(&public, TOKEN, NOW).map(drop)).is_err();
        for end in 0..raw.len() {
            assert!(refused(&raw[..end]), "truncated at {end}");
        }
        let bytes = raw.as_bytes();
        for i in 0..bytes.len() {
            for replacement in [b'A', b'_', b'.', b'~'] {
                if bytes[i] == replacement {
                    continue;
                }
                let mut changed = bytes.to_vec();
                changed[i] = replacement;
                assert!(refused(&String::from_utf8(changed).unwrap()), "byte {i} changed");
            }
        }
        assert!(!refused(&raw), "the original still verifies");
    }

    #[test]
    fn a_public_key_reads_back_as_it_was_stored() {
        let (_, es) = es256();
        let rsa = PublicKey::Rs256 { n: vec![7; 256], e: vec![1, 0, 1] };
        for key in [es, rsa] {
            let (alg, json) = key.to_stored();
            assert_eq!(PublicKey::from_stored(alg, &json), Some(key));
        }
        assert_eq!(PublicKey::from_stored("HS256", "{}"), None);
        assert_eq!(PublicKey::from_stored("ES256", r#"{"point":"AAAA"}"#), None, "not a P-256 point");
    }

    #[test]
    fn each_refusal_under_its_condition() {
        let (key, public) = es256();
        let (_, other) = es256();
        let check =
            |c: serde_json::Value, k: &PublicKey| Assertion::parse(&signed(&key, c))?.verify(k, TOKEN, NOW).map(drop);
        let with = |k: &str, v: serde_json::Value| {
            let mut c = claims();
            c[k] = v;
            c
        };
        assert_eq!(check(claims(), &other), Err(GrantRefusal::Signature));
        assert_eq!(check(with("aud", json!("https://elsewhere/token")), &public), Err(GrantRefusal::Audience));
        assert_eq!(check(with("aud", json!(["https://a", TOKEN])), &public), Ok(()), "an array with the endpoint");
        let provider = with("aud", json!(PROVIDER_TOKEN_AUDIENCE));
        assert_eq!(check(provider, &public), Ok(()), "the audience the provider's libraries hard-code");
        assert_eq!(check(with("exp", json!(NOW.0 + 3601)), &public), Err(GrantRefusal::Lifetime), "too long-lived");
        assert_eq!(check(with("iat", json!(NOW.0 + 120)), &public), Err(GrantRefusal::Lifetime), "from the future");
        assert_eq!(check(with("exp", json!(NOW.0 - 61)), &public), Err(GrantRefusal::Lifetime), "expired");
        assert_eq!(check(with("exp", json!(NOW.0 - 30)), &public), Err(GrantRefusal::Lifetime), "exp before iat");
        let mut no_exp = claims();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(check(no_exp, &public), Err(GrantRefusal::Lifetime));
        let skewed = json!({"iss": "sa", "aud": TOKEN, "iat": NOW.0 + 50, "exp": NOW.0 + 1000});
        assert_eq!(check(skewed, &public), Ok(()), "within the clock skew");
        let rsa = PublicKey::Rs256 { n: vec![1; 256], e: vec![1, 0, 1] };
        assert_eq!(check(claims(), &rsa), Err(GrantRefusal::Algorithm), "an ES256 assertion for an RSA key");
    }

    #[test]
    fn malformed_and_unsigned_assertions_are_refused_before_any_key_is_looked_up() {
        let b64 = |v: serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        let body = b64(claims());
        for (alg, refusal) in [("none", GrantRefusal::Algorithm), ("HS256", GrantRefusal::Algorithm)] {
            let raw = format!("{}.{body}.", b64(json!({"alg": alg})));
            assert_eq!(Assertion::parse(&raw).unwrap_err(), refusal, "{alg}");
        }
        for raw in ["", "a.b", "a.b.c.d", "!!.!!.!!", &format!("{}.{body}.sig", b64(json!("not an object")))] {
            assert_eq!(Assertion::parse(raw).unwrap_err(), GrantRefusal::Malformed, "{raw}");
        }
        let huge = format!("{}.{}.x", b64(json!({"alg": "RS256"})), "A".repeat(MAX_ASSERTION_BYTES));
        assert_eq!(Assertion::parse(&huge).unwrap_err(), GrantRefusal::Malformed, "oversized");
    }
}
