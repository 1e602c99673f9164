//! ES256 and RS256 JSON Web Signatures (RFC 7515, RFC 7518 §3.3 and §3.4) and JWK thumbprints (RFC 7638).
//!
//! The JWS compact form is three base64url parts; signing and verifying it is a few lines over `ring`, which
//! also lets the DPoP check verify over the exact bytes received and refuse anything but raw R|S signatures.
//! Making, loading and using a key takes randomness from the caller ([`Random::ring`] says why in *ring*'s form).

use crate::secret::Random;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde::Serialize;

/// An error of key handling or signing.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JwsError(&'static str);

/// A public EC P-256 key as a JWK.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct EcJwk {
    /// Always `EC`.
    pub kty: String,
    /// Always `P-256`.
    pub crv: String,
    /// The x coordinate, base64url.
    pub x: String,
    /// The y coordinate, base64url.
    pub y: String,
}

impl EcJwk {
    /// The JWK of an uncompressed SEC1 point (`0x04 | x | y`).
    pub fn from_point(point: &[u8]) -> Option<Self> {
        if point.len() != 65 || point[0] != 4 {
            return None;
        }
        Some(Self {
            kty: "EC".into(),
            crv: "P-256".into(),
            x: URL_SAFE_NO_PAD.encode(&point[1..33]),
            y: URL_SAFE_NO_PAD.encode(&point[33..]),
        })
    }

    /// The uncompressed point, when both coordinates are 32 bytes.
    pub fn to_point(&self) -> Option<[u8; 65]> {
        if self.kty != "EC" || self.crv != "P-256" {
            return None;
        }
        let mut p = [0u8; 65];
        p[0] = 4;
        if URL_SAFE_NO_PAD.decode_slice(&self.x, &mut p[1..33]).ok()? != 32 {
            return None;
        }
        if URL_SAFE_NO_PAD.decode_slice(&self.y, &mut p[33..]).ok()? != 32 {
            return None;
        }
        Some(p)
    }

    /// The RFC 7638 thumbprint: base64url(SHA-256 of the canonical JSON of the required members).
    pub fn thumbprint(&self) -> String {
        let canonical = format!(r#"{{"crv":"{}","kty":"{}","x":"{}","y":"{}"}}"#, self.crv, self.kty, self.x, self.y);
        URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()))
    }
}

/// An ES256 private key with its key id (the public key's thumbprint).
pub struct SigningKey {
    pair: EcdsaKeyPair,
    jwk: EcJwk,
    kid: String,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SigningKey({})", self.kid)
    }
}

impl SigningKey {
    /// A fresh key from `random`, as PKCS#8 DER to store.
    pub fn generate_pkcs8(random: &dyn Random) -> Result<Vec<u8>, JwsError> {
        EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, random.ring())
            .map(|d| d.as_ref().to_vec())
            .map_err(|_| JwsError("cannot generate a P-256 key"))
    }

    /// The key stored as PKCS#8 DER; *ring* seeds the key's signature nonces from `random`.
    pub fn from_pkcs8(der: &[u8], random: &dyn Random) -> Result<Self, JwsError> {
        let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, random.ring())
            .map_err(|_| JwsError("not a P-256 PKCS#8 key"))?;
        let jwk = EcJwk::from_point(pair.public_key().as_ref()).ok_or(JwsError("unexpected public key form"))?;
        let kid = jwk.thumbprint();
        Ok(Self { pair, jwk, kid })
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The same key named `kid` in the headers it signs (a service account's uploaded key has latchkey's id).
    pub fn with_kid(mut self, kid: &str) -> Self {
        kid.clone_into(&mut self.kid);
        self
    }

    /// The public key as a JWK.
    pub fn public_jwk(&self) -> &EcJwk {
        &self.jwk
    }

    /// Signs `claims` as a compact JWS with header `{"alg":"ES256","kid":...,"typ":typ}`, with a nonce drawn
    /// from `random`.
    pub fn sign<T: Serialize>(&self, typ: &str, claims: &T, random: &dyn Random) -> Result<String, JwsError> {
        let header = serde_json::json!({ "alg": "ES256", "kid": self.kid, "typ": typ });
        sign_parts(&self.pair, &header, claims, random)
    }
}

/// Signs a header and claims with a key pair, with a nonce drawn from `random`: `b64(header).b64(claims).b64(R|S)`.
pub fn sign_parts<H: Serialize, T: Serialize>(
    pair: &EcdsaKeyPair,
    header: &H,
    claims: &T,
    random: &dyn Random,
) -> Result<String, JwsError> {
    let mut out = signing_input(header, claims)?;
    let sig = pair.sign(random.ring(), out.as_bytes()).map_err(|_| JwsError("signing failed"))?;
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(sig.as_ref(), &mut out);
    Ok(out)
}

/// A public RSA key as a JWK (RFC 7518 §6.3), published for RS256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RsaJwk {
    /// Always `RSA`.
    pub kty: String,
    /// The modulus, base64url.
    pub n: String,
    /// The public exponent, base64url.
    pub e: String,
}

impl RsaJwk {
    /// The RFC 7638 thumbprint: base64url(SHA-256 of `{"e":..,"kty":"RSA","n":..}`).
    pub fn thumbprint(&self) -> String {
        let canonical = format!(r#"{{"e":"{}","kty":"{}","n":"{}"}}"#, self.e, self.kty, self.n);
        URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes()))
    }
}

/// An RS256 private key with its key id (the public key's thumbprint): the key that signs security events, for
/// the receivers that accept nothing else. *ring* cannot make RSA keys; the server makes them
/// (`latchkey-server`'s `keys`) and this loads them.
pub struct RsaSigningKey {
    pair: RsaKeyPair,
    jwk: RsaJwk,
    kid: String,
}

impl std::fmt::Debug for RsaSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RsaSigningKey({})", self.kid)
    }
}

impl RsaSigningKey {
    /// The key stored as PKCS#8 DER (2048 bits or more).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, JwsError> {
        let pair = RsaKeyPair::from_pkcs8(der).map_err(|_| JwsError("not an RSA PKCS#8 key"))?;
        let public = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
        let jwk =
            RsaJwk { kty: "RSA".into(), n: URL_SAFE_NO_PAD.encode(&public.n), e: URL_SAFE_NO_PAD.encode(&public.e) };
        let kid = jwk.thumbprint();
        Ok(Self { pair, jwk, kid })
    }

    /// The key id.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// The same key named `kid` in the headers it signs (a service account's key file names its key).
    pub fn with_kid(mut self, kid: &str) -> Self {
        kid.clone_into(&mut self.kid);
        self
    }

    /// The public key as a JWK.
    pub fn public_jwk(&self) -> &RsaJwk {
        &self.jwk
    }

    /// Signs `claims` as a compact JWS with header `{"alg":"RS256","typ":typ,"kid":...}` (PKCS#1 v1.5 is
    /// deterministic; *ring* takes `random` for its blinding).
    pub fn sign<T: Serialize>(&self, typ: &str, claims: &T, random: &dyn Random) -> Result<String, JwsError> {
        let header = serde_json::json!({ "alg": "RS256", "typ": typ, "kid": self.kid });
        let mut out = signing_input(&header, claims)?;
        let mut sig = vec![0u8; self.pair.public().modulus_len()];
        self.pair
            .sign(&signature::RSA_PKCS1_SHA256, random.ring(), out.as_bytes(), &mut sig)
            .map_err(|_| JwsError("signing failed"))?;
        out.push('.');
        URL_SAFE_NO_PAD.encode_string(sig, &mut out);
        Ok(out)
    }
}

/// `b64(header).b64(claims)`: what a JWS signs.
fn signing_input<H: Serialize, T: Serialize>(header: &H, claims: &T) -> Result<String, JwsError> {
    let h = serde_json::to_vec(header).map_err(|_| JwsError("header is not JSON"))?;
    let c = serde_json::to_vec(claims).map_err(|_| JwsError("claims are not JSON"))?;
    let mut out = URL_SAFE_NO_PAD.encode(h);
    out.push('.');
    URL_SAFE_NO_PAD.encode_string(c, &mut out);
    Ok(out)
}

/// Verifies a raw R|S ES256 signature over `signing_input` with an uncompressed P-256 point.
pub fn verify_es256(point: &[u8], signing_input: &[u8], signature_rs: &[u8]) -> bool {
    signature_rs.len() == 64
        && signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
            .verify(signing_input, signature_rs)
            .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7638_thumbprint_is_over_the_canonical_members() {
        // RFC 7638 §3.1 uses an RSA key; this P-256 vector is from RFC 9449 §6.1's example key.
        let jwk = EcJwk {
            kty: "EC".into(),
            crv: "P-256".into(),
            x: "l8tFrhx-34tV3hRICRDY9zCkDlpBhF42UQUfWVAWBFs".into(),
            y: "9VE4jf_Ok_o64zbTTlcuNJajHmt6v9TDVrU0CdvGRDA".into(),
        };
        assert_eq!(jwk.thumbprint(), "0ZcOCORZNYy-DWpqq30jZyJGHTN0d2HglBV3uiguA4I");
    }

    #[test]
    fn a_signed_jws_verifies_with_its_public_key_and_not_after_tampering() {
        let rng = crate::secret::Counter::default();
        let key = SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&rng).unwrap(), &rng).unwrap();
        let jws = key.sign("JWT", &serde_json::json!({"sub": "u"}), &rng).unwrap();
        let (input, sig) = jws.rsplit_once('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        let point = key.public_jwk().to_point().unwrap();
        assert!(verify_es256(&point, input.as_bytes(), &sig));
        assert!(!verify_es256(&point, format!("{input}x").as_bytes(), &sig));
    }

    #[test]
    fn an_rs256_jws_verifies_with_its_published_modulus_and_exponent() {
        // A 2048-bit key made for this test (`openssl genpkey -algorithm RSA`, then `openssl pkcs8 -topk8 -nocrypt`); it signs nothing else.
        let key = RsaSigningKey::from_pkcs8(include_bytes!("jws/rsa-test-key.pk8")).unwrap();
        let jws =
            key.sign("secevent+jwt", &serde_json::json!({"jti": "j"}), &crate::secret::Counter::default()).unwrap();
        let (input, sig) = jws.rsplit_once('.').unwrap();
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(input.split('.').next().unwrap()).unwrap()).unwrap();
        assert_eq!(header, serde_json::json!({"alg": "RS256", "typ": "secevent+jwt", "kid": key.kid()}));
        let jwk = key.public_jwk();
        let public = signature::RsaPublicKeyComponents {
            n: URL_SAFE_NO_PAD.decode(&jwk.n).unwrap(),
            e: URL_SAFE_NO_PAD.decode(&jwk.e).unwrap(),
        };
        let sig = URL_SAFE_NO_PAD.decode(sig).unwrap();
        assert!(public.verify(&signature::RSA_PKCS1_2048_8192_SHA256, input.as_bytes(), &sig).is_ok());
        assert!(public.verify(&signature::RSA_PKCS1_2048_8192_SHA256, b"other", &sig).is_err());
        assert_eq!(jwk.e, "AQAB");
    }
}
