//! A software passkey for the `login-passkey` workload: an ES256 key made here, registered in the store with
//! `--setup` as `webauthn-rs` keeps a passkey (its own `Credential` type, serialized), and assertions signed with
//! *ring* for the server's `webauthn-rs` to verify. The server's side is the real one; only the authenticator,
//! which a browser and a device play in production, is stood in for.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use latchkey_admin::clock::OsRandom;
use latchkey_core::passkey::{user_handle, PasskeyRecord};
use latchkey_core::time::UnixTime;
use ring::digest::{digest, SHA256};
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING};
use serde_json::json;
use webauthn_rs_core::proto::{
    AttestationFormat, COSEAlgorithm, COSEEC2Key, COSEKey, COSEKeyType, Credential, ECDSACurve, ParsedAttestation,
    RegisteredExtensions, UserVerificationPolicy,
};

/// A passkey of the bench's user: its credential id, key pair and user handle.
pub struct SoftPasskey {
    credential_id: Vec<u8>,
    key: EcdsaKeyPair,
    user_handle: [u8; 16],
}

impl SoftPasskey {
    /// A new key for `user_id`, and the record the store keeps of it (public half only).
    pub fn new(user_id: &str, now: UnixTime) -> anyhow::Result<(Self, PasskeyRecord)> {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .map_err(|_| anyhow::anyhow!("generating a P-256 key"))?;
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .map_err(|e| anyhow::anyhow!("P-256 key: {e}"))?;
        // An uncompressed point: 0x04, x (32 bytes), y (32 bytes).
        let point = key.public_key().as_ref();
        let credential_id = latchkey_core::secret::random_bytes(16, &OsRandom);
        let credential = Credential {
            cred_id: credential_id.clone().into(),
            cred: COSEKey {
                type_: COSEAlgorithm::ES256,
                key: COSEKeyType::EC_EC2(COSEEC2Key {
                    curve: ECDSACurve::SECP256R1,
                    x: point[1..33].to_vec().into(),
                    y: point[33..65].to_vec().into(),
                }),
            },
            counter: 0,
            transports: None,
            user_verified: true,
            backup_eligible: false,
            backup_state: false,
            registration_policy: UserVerificationPolicy::Required,
            extensions: RegisteredExtensions::none(),
            attestation: ParsedAttestation::default(),
            attestation_format: AttestationFormat::None,
        };
        // `webauthn_rs::prelude::Passkey` is its credential under `cred`.
        let stored = json!({ "cred": credential }).to_string();
        let record = PasskeyRecord {
            credential_id: URL_SAFE_NO_PAD.encode(&credential_id),
            user_id: user_id.to_owned(),
            name: "bench".into(),
            credential: stored,
            created_at: now,
            last_used_at: None,
        };
        Ok((Self { credential_id, key, user_handle: user_handle(user_id) }, record))
    }

    /// The answer to a sign-in ceremony's options (`publicKey` of `/signin/passkey/options`), as the page's script
    /// posts it: user present and verified, signed over the authenticator data and the client data's hash.
    pub fn answer(&self, origin: &str, options: &serde_json::Value) -> anyhow::Result<String> {
        let rp_id = options["rpId"].as_str().ok_or_else(|| anyhow::anyhow!("no rpId in {options}"))?;
        let challenge = options["challenge"].as_str().ok_or_else(|| anyhow::anyhow!("no challenge in {options}"))?;
        let client_data = json!({ "type": "webauthn.get", "challenge": challenge, "origin": origin }).to_string();
        // rpIdHash, flags (user present 0x01, user verified 0x04), signature counter 0 (none kept).
        let mut auth_data = digest(&SHA256, rp_id.as_bytes()).as_ref().to_vec();
        auth_data.extend_from_slice(&[0x05, 0, 0, 0, 0]);
        let signed = [auth_data.as_slice(), digest(&SHA256, client_data.as_bytes()).as_ref()].concat();
        let signature =
            self.key.sign(&SystemRandom::new(), &signed).map_err(|_| anyhow::anyhow!("signing the assertion"))?;
        let id = URL_SAFE_NO_PAD.encode(&self.credential_id);
        Ok(json!({
            "id": id,
            "rawId": id,
            "type": "public-key",
            "response": {
                "authenticatorData": URL_SAFE_NO_PAD.encode(&auth_data),
                "clientDataJSON": URL_SAFE_NO_PAD.encode(client_data.as_bytes()),
                "signature": URL_SAFE_NO_PAD.encode(signature.as_ref()),
                "userHandle": URL_SAFE_NO_PAD.encode(self.user_handle),
            },
            "extensions": {},
        })
        .to_string())
    }
}
