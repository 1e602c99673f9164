//! The issuer's public keys (a JWK Set, RFC 7517) and the signature check of a token with one of them.

use super::jws::Alg;
use super::JoseError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde::Deserialize;
use std::collections::HashMap;

/// A public key a token may be signed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PublicKey {
    /// An RSA key (RS256): modulus and exponent, big-endian without leading zeros.
    Rsa {
        /// The modulus.
        n: Vec<u8>,
        /// The public exponent.
        e: Vec<u8>,
    },
    /// A P-256 key (ES256): the uncompressed point `04 || x || y`.
    P256(Vec<u8>),
}

impl PublicKey {
    /// Checks `signature` over `message` made with `alg`; the key's type must match the algorithm.
    pub(crate) fn verify(&self, alg: Alg, message: &[u8], signature: &[u8]) -> Result<(), JoseError> {
        let ok = match (self, alg) {
            (Self::Rsa { n, e }, Alg::Rs256) => RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok(),
            (Self::P256(point), Alg::Es256) => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point).verify(message, signature).is_ok()
            }
            _ => return Err(JoseError::Key(format!("the key named by kid is not an {} key", alg.name()))),
        };
        if ok {
            Ok(())
        } else {
            Err(JoseError::Key("the signature does not verify".into()))
        }
    }
}

/// The signing keys of a JWK Set, by `kid`, with the algorithm each is restricted to when its JWK says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct KeySet {
    keys: HashMap<String, (PublicKey, Option<String>)>,
}

/// The JWK members that are read.
#[derive(Deserialize)]
struct Jwk {
    kty: Option<String>,
    kid: Option<String>,
    #[serde(rename = "use")]
    use_: Option<String>,
    alg: Option<String>,
    n: Option<String>,
    e: Option<String>,
    crv: Option<String>,
    x: Option<String>,
    y: Option<String>,
}

/// A JWK Set document.
#[derive(Deserialize)]
struct JwkSet {
    keys: Vec<serde_json::Value>,
}

impl KeySet {
    /// Reads a JWK Set. Keys that cannot sign a token (encryption keys, other types and curves, keys without a
    /// `kid`, malformed ones) are skipped; a document that is not a JWK Set is an error.
    pub(crate) fn from_json(body: &[u8]) -> Result<Self, String> {
        let set: JwkSet = serde_json::from_slice(body).map_err(|e| format!("not a JWK Set: {e}"))?;
        let keys = set
            .keys
            .into_iter()
            .filter_map(|v| serde_json::from_value::<Jwk>(v).ok())
            .filter_map(|jwk| {
                if jwk.use_.as_deref().is_some_and(|u| u != "sig") {
                    return None;
                }
                let key = public_key(&jwk)?;
                Some((jwk.kid.filter(|k| !k.is_empty())?, (key, jwk.alg)))
            })
            .collect();
        Ok(Self { keys })
    }

    /// The key named `kid`, if it may be used with `alg`.
    pub(crate) fn get(&self, kid: &str, alg: Alg) -> Option<Result<&PublicKey, JoseError>> {
        let (key, key_alg) = self.keys.get(kid)?;
        Some(match key_alg.as_deref() {
            Some(a) if a != alg.name() => {
                Err(JoseError::Key(format!("the key {kid} is for {a}, the token is signed with {}", alg.name())))
            }
            _ => Ok(key),
        })
    }

    /// Whether the set holds no usable key.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The public key of an RSA or P-256 JWK.
fn public_key(jwk: &Jwk) -> Option<PublicKey> {
    let decode = |v: &Option<String>| URL_SAFE_NO_PAD.decode(v.as_deref()?).ok();
    match jwk.kty.as_deref()? {
        "RSA" => {
            let (n, e) = (decode(&jwk.n)?, decode(&jwk.e)?);
            let strip = |b: Vec<u8>| b.iter().position(|x| *x != 0).map(|i| b[i..].to_vec());
            Some(PublicKey::Rsa { n: strip(n)?, e: strip(e)? })
        }
        "EC" if jwk.crv.as_deref() == Some("P-256") => {
            let (x, y) = (decode(&jwk.x)?, decode(&jwk.y)?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            Some(PublicKey::P256(point))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn signing_keys_are_read_and_others_skipped() {
        let b = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        let doc = json!({"keys": [
            {"kty": "RSA", "kid": "r", "alg": "RS256", "use": "sig", "n": b(&[0, 0xc5, 1]), "e": b(&[1, 0, 1])},
            {"kty": "EC", "crv": "P-256", "kid": "p", "x": b(&[1; 32]), "y": b(&[2; 32])},
            {"kty": "EC", "crv": "P-384", "kid": "p384", "x": b(&[1; 48]), "y": b(&[2; 48])},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": b(&[5]), "e": b(&[3])},
            {"kty": "RSA", "n": b(&[5]), "e": b(&[3])},
            {"kty": "oct", "kid": "hmac", "k": b(b"secret")},
            "not a key",
        ]});
        let set = KeySet::from_json(doc.to_string().as_bytes()).expect("a JWK Set");
        assert_eq!(set.keys.len(), 2);
        assert_eq!(set.keys["r"].0, PublicKey::Rsa { n: vec![0xc5, 1], e: vec![1, 0, 1] });
        assert!(matches!(set.get("r", Alg::Rs256), Some(Ok(_))));
        assert!(matches!(set.get("r", Alg::Es256), Some(Err(JoseError::Key(_)))));
        assert!(matches!(set.get("p", Alg::Es256), Some(Ok(PublicKey::P256(p))) if p.len() == 65 && p[0] == 4));
        assert!(set.get("hmac", Alg::Rs256).is_none());
        assert!(KeySet::from_json(b"{\"keys\": 1}").is_err());
    }

    #[test]
    fn a_key_of_the_other_type_does_not_verify() {
        let key = PublicKey::P256(vec![4; 65]);
        assert!(matches!(key.verify(Alg::Rs256, b"m", b"s"), Err(JoseError::Key(_))));
        assert!(matches!(key.verify(Alg::Es256, b"m", &[0; 64]), Err(JoseError::Key(_))));
    }
}
