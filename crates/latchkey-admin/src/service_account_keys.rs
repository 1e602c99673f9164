//! The keys of a service account: made here and handed out once as a key file (its private half is
//! never stored nor logged), or uploaded as a public key (RSA or P-256); listed, disabled and deleted, by the
//! members of the account's project (the operator at the CLI). At most ten per account.

use super::service_accounts::reachable;
use super::{Actor, AdminError, AdminResult, Right};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use latchkey_core::service_account::PublicKey;
use latchkey_core::time::UnixTime;
use latchkey_proto::key_file::{KeyFile, SERVICE_ACCOUNT};
use latchkey_store::{ServiceAccountKey, Store, StoreError, MAX_KEYS};
use rsa::pkcs8::spki::{ObjectIdentifier, SubjectPublicKeyInfoRef};
use rsa::pkcs8::{DecodePublicKey, EncodePrivateKey};
use rsa::traits::PublicKeyParts;
use serde::Serialize;

/// A key, as listed (never its private half, which latchkey does not have).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KeyView {
    /// The key id (the key file's `private_key_id`, the assertions' `kid`).
    pub key_id: String,
    /// The algorithm.
    pub alg: &'static str,
    /// When it was made (Unix seconds).
    pub created_at: i64,
    /// Whether it is disabled.
    pub disabled: bool,
}

impl From<&ServiceAccountKey> for KeyView {
    fn from(k: &ServiceAccountKey) -> Self {
        Self {
            key_id: k.id.clone(),
            alg: k.public_key.alg(),
            created_at: k.created_at.0,
            disabled: k.disabled_at.is_some(),
        }
    }
}

/// Makes a 2048-bit RSA key for an account: stores its public half and returns the key file (once).
/// `urls` are the authorization and token endpoints the file names.
pub async fn key_create(
    store: &dyn Store,
    actor: &Actor,
    account: &str,
    (auth_uri, token_uri): (&str, &str),
    now: UnixTime,
) -> AdminResult<KeyFile> {
    let a = reachable(store, actor, account, Right::Edit).await?;
    let private = tokio::task::spawn_blocking(|| rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048))
        .await
        .map_err(|e| StoreError::Other(format!("key generation: {e}")))?
        .map_err(|e| StoreError::Other(format!("key generation: {e}")))?;
    let public = PublicKey::Rs256 { n: private.n().to_bytes_be(), e: private.e().to_bytes_be() };
    let der = private.to_pkcs8_der().map_err(|e| StoreError::Other(e.to_string()))?;
    let key = add(store, &a.id, public, now).await?;
    Ok(KeyFile {
        kind: SERVICE_ACCOUNT.into(),
        project_id: a.project_id,
        private_key_id: key.id,
        private_key: pem("PRIVATE KEY", der.as_bytes()),
        client_email: a.email,
        client_id: a.id,
        auth_uri: auth_uri.to_owned(),
        token_uri: token_uri.to_owned(),
    })
}

/// Adds an uploaded public key to an account: PEM `PUBLIC KEY` of an RSA key of 2048 bits or more (RS256) or of a
/// P-256 key (ES256).
pub async fn key_upload(
    store: &dyn Store,
    actor: &Actor,
    account: &str,
    pem_text: &str,
    now: UnixTime,
) -> AdminResult<KeyView> {
    let a = reachable(store, actor, account, Right::Edit).await?;
    let key = public_key_of_pem(pem_text).ok_or_else(|| {
        AdminError::Invalid(
            "the public key must be a PEM \"PUBLIC KEY\" of an RSA key of 2048 bits or more, or of a P-256 key".into(),
        )
    })?;
    Ok(KeyView::from(&add(store, &a.id, key, now).await?))
}

/// The public key in a PEM `PUBLIC KEY` (SubjectPublicKeyInfo): RSA of 2048 to 4096 bits (the `rsa` crate reads
/// no larger) with an odd exponent of 3 to 2^33 - 1 (what the signature check accepts), or a P-256 point,
/// uncompressed. (A point off the curve is not
/// detected here: it never verifies, so its assertions are refused as "Invalid JWT Signature.")
pub fn public_key_of_pem(pem_text: &str) -> Option<PublicKey> {
    const EC_PUBLIC_KEY: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
    const P256: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
    let der = unpem(pem_text, "PUBLIC KEY")?;
    let spki = SubjectPublicKeyInfoRef::try_from(der.as_slice()).ok()?;
    if spki.algorithm.oid == EC_PUBLIC_KEY {
        let point = spki.subject_public_key.as_bytes()?;
        let ok = spki.algorithm.parameters_oid().ok()? == P256 && point.len() == 65 && point[0] == 4;
        return ok.then(|| PublicKey::Es256 { point: point.to_vec() });
    }
    let public = rsa::RsaPublicKey::from_public_key_der(&der).ok()?;
    let (bits, e) = (public.n().bits(), public.e());
    let e_ok = e.bits() <= 33 && e.bits() >= 2 && e.to_bytes_be().last().is_some_and(|b| b & 1 == 1);
    ((2048..=4096).contains(&bits) && e_ok)
        .then(|| PublicKey::Rs256 { n: public.n().to_bytes_be(), e: public.e().to_bytes_be() })
}

async fn add(
    store: &dyn Store,
    account_id: &str,
    public_key: PublicKey,
    now: UnixTime,
) -> AdminResult<ServiceAccountKey> {
    // The access tokens of this key name it by these 20 bytes (`access_token::Holder::ServiceKey`).
    let id = latchkey_core::access_token::ServiceKeyId::generate(&crate::clock::OsRandom).encode();
    let key =
        ServiceAccountKey { id, account_id: account_id.to_owned(), public_key, created_at: now, disabled_at: None };
    if !store.add_service_account_key(&key).await? {
        return Err(AdminError::Conflict(format!("a service account holds at most {MAX_KEYS} keys: delete one first")));
    }
    Ok(key)
}

/// The keys of a service account.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct KeyList {
    /// The account's identifier.
    pub service_account: String,
    /// Its keys, oldest first.
    pub keys: Vec<KeyView>,
}

/// The keys of an account.
pub async fn key_list(store: &dyn Store, actor: &Actor, account: &str) -> AdminResult<KeyList> {
    let a = reachable(store, actor, account, Right::View).await?;
    let keys: Vec<KeyView> = store.service_account_keys(&a.id).await?.iter().map(KeyView::from).collect();
    Ok(KeyList { service_account: a.email, keys })
}

/// A key, if the actor may change its account.
async fn editable_key(store: &dyn Store, actor: &Actor, key_id: &str) -> AdminResult<ServiceAccountKey> {
    let not_found = || AdminError::NotFound(format!("key {key_id}"));
    let k = store.service_account_key(key_id).await?.ok_or_else(not_found)?;
    reachable(store, actor, &k.account_id, Right::Edit).await.map_err(|_| not_found())?;
    Ok(k)
}

/// Disables (its tokens and assertions refused) or enables a key.
pub async fn key_set_disabled(
    store: &dyn Store,
    actor: &Actor,
    key_id: &str,
    disabled: bool,
    now: UnixTime,
) -> AdminResult<KeyView> {
    let mut k = editable_key(store, actor, key_id).await?;
    k.disabled_at = disabled.then_some(now);
    store.set_key_disabled(&k.id, k.disabled_at).await?;
    Ok(KeyView::from(&k))
}

/// Deletes a key.
pub async fn key_delete(store: &dyn Store, actor: &Actor, key_id: &str) -> AdminResult<serde_json::Value> {
    let k = editable_key(store, actor, key_id).await?;
    if !store.delete_service_account_key(&k.id).await? {
        return Err(AdminError::NotFound(format!("key {key_id}")));
    }
    Ok(serde_json::json!({ "key_id": key_id, "deleted": true }))
}

/// PEM (RFC 7468): the base64 of `der` in lines of 64 between the label's lines.
fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The DER inside a PEM block with `label`, if there is one.
fn unpem(text: &str, label: &str) -> Option<Vec<u8>> {
    let begin = format!("-----BEGIN {label}-----");
    let end = format!("-----END {label}-----");
    let body = &text[text.find(&begin)? + begin.len()..];
    let body = &body[..body.find(&end)?];
    let b64: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD.decode(b64).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_wraps_base64_in_lines_of_64_and_reads_back() {
        let der: Vec<u8> = (0..=255).collect();
        let text = pem("PUBLIC KEY", &der);
        assert!(text.starts_with("-----BEGIN PUBLIC KEY-----\n") && text.ends_with("-----END PUBLIC KEY-----\n"));
        assert!(text.lines().all(|l| l.len() <= 64));
        assert_eq!(unpem(&text, "PUBLIC KEY"), Some(der));
        assert_eq!(unpem(&text, "PRIVATE KEY"), None);
    }

    #[test]
    fn an_uploaded_rsa_public_key_reads_back_as_its_modulus_and_exponent() {
        use rsa::pkcs8::EncodePublicKey;
        let private = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 2048).unwrap();
        let der = private.to_public_key().to_public_key_der().unwrap();
        let text = pem("PUBLIC KEY", der.as_bytes());
        let read = rsa::RsaPublicKey::from_public_key_der(&unpem(&text, "PUBLIC KEY").unwrap()).unwrap();
        assert_eq!((read.n(), read.e()), (private.n(), private.e()));
        let expected = PublicKey::Rs256 { n: private.n().to_bytes_be(), e: private.e().to_bytes_be() };
        assert_eq!(public_key_of_pem(&text), Some(expected));
        // Shorter than 2048 bits: refused at upload, not first at the signature check.
        let short = rsa::RsaPrivateKey::new(&mut rand::rngs::OsRng, 1024).unwrap();
        let der = short.to_public_key().to_public_key_der().unwrap();
        assert_eq!(public_key_of_pem(&pem("PUBLIC KEY", der.as_bytes())), None);
        assert_eq!(public_key_of_pem("not a key"), None);
    }
}
