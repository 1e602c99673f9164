//! 2-step verification's machinery: authenticator-app codes (RFC 6238 through `totp-rs`: 6 digits, 30 s, SHA-1, a
//! 20-byte secret), the enrolment QR code (SVG drawn here by `qrcode`, no outside service), the secrets sealed
//! under the system secrets, recovery codes, and the short-lived proof that a browser passed the password step.
//!
//! A stored secret is sealed (AES-256-GCM, [`latchkey_admin::secrets`]) with its account's id inside, so that one
//! account's secret moved to another's row does not open. An enrolment not yet confirmed keeps its secret in the
//! page's form, sealed the same way with its expiry: nothing is stored before the first code confirms it.

use crate::session::{self, LOGIN_CSRF_COOKIE};
use crate::state::AppState;
use axum::http::{HeaderMap, HeaderValue};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use latchkey_admin::clock::OsRandom;
use latchkey_core::secret::random_bytes;
use latchkey_core::sign_in::{self, TOTP_DIGITS, TOTP_SECRET_LEN, TOTP_STEP};
use latchkey_core::time::UnixTime;
use latchkey_store::{KeyKind, StoreError};
use totp_rs::{Algorithm, TOTP};

/// The browser cookie that carries the proof of a correct password to the second-step page.
pub const SECOND_STEP_COOKIE: &str = "__Host-lk_second_step";

/// What a sealed value could not be.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The system secrets could not be read or used.
    #[error("the system secrets: {0}")]
    Secrets(String),
    /// The value was not sealed by this server for this account, or it expired.
    #[error("This setup expired or is not this account's. Start again.")]
    Invalid,
}

impl From<SealError> for StoreError {
    fn from(e: SealError) -> Self {
        StoreError::Other(e.to_string())
    }
}

/// A new authenticator-app secret: 20 random bytes.
pub fn new_secret() -> Vec<u8> {
    random_bytes(TOTP_SECRET_LEN, &OsRandom)
}

fn totp(secret: &[u8], label: Option<(&str, &str)>) -> Option<TOTP> {
    let (issuer, account) =
        label.map_or((None, String::new()), |(i, a)| (Some(i.replace(':', " ")), a.replace(':', " ")));
    let step = u64::try_from(TOTP_STEP).ok()?;
    TOTP::new(Algorithm::SHA1, TOTP_DIGITS, 1, step, secret.to_vec(), issuer, account).ok()
}

/// The secret as an authenticator app takes it typed: base32, 32 characters.
pub fn secret_text(secret: &[u8]) -> String {
    totp(secret, None).map(|t| t.get_secret_base32()).unwrap_or_default()
}

/// The enrolment QR code, as an inline SVG element (no XML declaration): the `otpauth://` URI naming the service (`issuer`, e.g. the host)
/// and the account.
pub fn qr_svg(secret: &[u8], issuer: &str, account: &str) -> String {
    let Some(uri) = totp(secret, Some((issuer, account))).map(|t| t.get_url()) else { return String::new() };
    match qrcode::QrCode::new(uri.as_bytes()) {
        Ok(code) => {
            let svg = code.render::<qrcode::render::svg::Color<'_>>().min_dimensions(200, 200).build();
            svg.find("<svg").map_or(svg.clone(), |at| svg[at..].to_owned())
        }
        Err(_) => String::new(),
    }
}

/// The time step a typed code matches at `now`: its own step or one either side (the current first), compared in
/// constant time; `None` when it matches none.
pub fn matching_step(secret: &[u8], typed: &str, now: UnixTime) -> Option<i64> {
    let code = sign_in::totp_code(typed)?;
    let t = totp(secret, None)?;
    let mut found = None;
    for step in sign_in::candidate_steps(now.0) {
        let at = u64::try_from(step * TOTP_STEP).unwrap_or(0);
        if latchkey_core::secret::ct_eq(t.generate(at).as_bytes(), code.as_bytes()) && found.is_none() {
            found = Some(step);
        }
    }
    found
}

/// Ten new recovery codes: as shown (`abcd-efgh-jkmn-pqrs`) and as stored (their hashes).
pub fn new_recovery_codes(user_id: &str) -> (Vec<String>, Vec<Vec<u8>>) {
    (0..sign_in::RECOVERY_CODES)
        .map(|_| {
            let chars: String = random_bytes(sign_in::RECOVERY_CODE_CHARS, &OsRandom)
                .iter()
                .map(|b| char::from(sign_in::RECOVERY_ALPHABET[usize::from(b & 31)]))
                .collect();
            let hash = sign_in::recovery_code_hash(user_id, &chars);
            (sign_in::format_recovery_code(&chars), hash)
        })
        .unzip()
}

const ENROLMENT: &[u8] = b"enrolment:";

fn seal(state: &AppState, material: &[u8]) -> Result<Vec<u8>, SealError> {
    let secrets = state.keys.secrets().map_err(|e| SealError::Secrets(e.to_string()))?;
    secrets.seal(KeyKind::TotpSecret, material).map_err(|e| SealError::Secrets(e.to_string()))
}

fn open(state: &AppState, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    let secrets = state.keys.secrets().map_err(|e| SealError::Secrets(e.to_string()))?;
    let opened = secrets.open(KeyKind::TotpSecret, sealed).map_err(|_| SealError::Invalid)?;
    Ok(opened.material.expose().to_vec())
}

/// A secret sealed for the store, bound to its account.
pub fn seal_secret(state: &AppState, user_id: &str, secret: &[u8]) -> Result<Vec<u8>, SealError> {
    seal(state, &[secret, user_id.as_bytes()].concat())
}

/// The secret a stored, sealed one holds, if it is this account's.
pub fn open_secret(state: &AppState, user_id: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
    let material = open(state, sealed)?;
    match material.split_at_checked(TOTP_SECRET_LEN) {
        Some((secret, owner)) if owner == user_id.as_bytes() => Ok(secret.to_vec()),
        _ => Err(SealError::Invalid),
    }
}

/// An enrolment's secret sealed for the page's form, with the account and when it expires.
pub fn seal_enrolment(state: &AppState, user_id: &str, secret: &[u8]) -> Result<String, SealError> {
    let expires = state.clock.now().plus(sign_in::ENROLMENT_LIFETIME).0.to_be_bytes();
    let sealed = seal(state, &[ENROLMENT, &expires, secret, user_id.as_bytes()].concat())?;
    Ok(URL_SAFE_NO_PAD.encode(sealed))
}

/// The secret of an enrolment form, if it is this account's and has not expired.
pub fn open_enrolment(state: &AppState, user_id: &str, form: &str) -> Result<Vec<u8>, SealError> {
    let sealed = URL_SAFE_NO_PAD.decode(form).map_err(|_| SealError::Invalid)?;
    let material = open(state, &sealed)?;
    let rest = material.strip_prefix(ENROLMENT).ok_or(SealError::Invalid)?;
    let (expires, rest) = rest.split_at_checked(8).ok_or(SealError::Invalid)?;
    let (secret, owner) = rest.split_at_checked(TOTP_SECRET_LEN).ok_or(SealError::Invalid)?;
    let expires = i64::from_be_bytes(expires.try_into().map_err(|_| SealError::Invalid)?);
    if owner != user_id.as_bytes() || expires <= state.clock.now().0 {
        return Err(SealError::Invalid);
    }
    Ok(secret.to_vec())
}

/// What the second-step cookie proves: a correct password for `user_id`, and whether the account must enrol
/// before its session starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passed {
    /// The account.
    pub user_id: String,
    /// Whether it must turn on 2-step verification first (its organisation requires it, and it has none).
    pub enrol: bool,
}

fn proof_input(user_id: &str, expires: i64, enrol: bool, browser: &str) -> Vec<u8> {
    format!("latchkey-second-step:{user_id}:{expires}:{enrol}:{browser}").into_bytes()
}

/// The `Set-Cookie` that carries the proof of a correct password for [`sign_in::SECOND_STEP_LIFETIME`] seconds:
/// the account, the expiry and a MAC over them and the browser's sign-in CSRF cookie (so that it works only in
/// the browser that typed the password). It is no session: only the second-step and enrolment pages take it.
pub fn passed_cookie(state: &AppState, headers: &HeaderMap, passed: &Passed) -> HeaderValue {
    let expires = state.clock.now().plus(sign_in::SECOND_STEP_LIFETIME).0;
    let browser = session::cookie(headers, LOGIN_CSRF_COOKIE).unwrap_or("");
    let tag = state.keys.get().mac_signer().tag(&proof_input(&passed.user_id, expires, passed.enrol, browser));
    let value = format!(
        "{}.{expires}.{}.{}",
        URL_SAFE_NO_PAD.encode(&passed.user_id),
        u8::from(passed.enrol),
        URL_SAFE_NO_PAD.encode(tag)
    );
    session::set_cookie(SECOND_STEP_COOKIE, &value, sign_in::SECOND_STEP_LIFETIME)
}

/// The proof the browser's second-step cookie carries, if it is ours, this browser's and not expired.
pub fn passed(state: &AppState, headers: &HeaderMap) -> Option<Passed> {
    let value = session::cookie(headers, SECOND_STEP_COOKIE)?;
    let mut parts = value.split('.');
    let (user, expires, enrol, tag) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let user_id = String::from_utf8(URL_SAFE_NO_PAD.decode(user).ok()?).ok()?;
    let expires: i64 = expires.parse().ok()?;
    let enrol = enrol == "1";
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    let browser = session::cookie(headers, LOGIN_CSRF_COOKIE).filter(|c| c.len() >= 32)?;
    let input = proof_input(&user_id, expires, enrol, browser);
    let ours = state.keys.get().mac.iter().any(|k| k.verify_tag(&input, &tag));
    (ours && parts.next().is_none() && expires > state.clock.now().0).then_some(Passed { user_id, enrol })
}

/// The `Set-Cookie` that removes the second-step cookie.
pub fn clear_passed_cookie() -> HeaderValue {
    session::set_cookie(SECOND_STEP_COOKIE, "", 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_their_step_and_one_either_side_only() {
        let secret = b"12345678901234567890".to_vec();
        // RFC 6238 Appendix B, SHA-1, T = 59: 94287082 (eight digits); six digits: 287082.
        assert_eq!(matching_step(&secret, "287082", UnixTime(59)), Some(1));
        assert_eq!(matching_step(&secret, "287 082", UnixTime(89)), Some(1), "the step before");
        assert_eq!(matching_step(&secret, "287082", UnixTime(30)), Some(1), "its own step");
        assert_eq!(matching_step(&secret, "287082", UnixTime(0)), Some(1), "the step after");
        assert_eq!(matching_step(&secret, "287082", UnixTime(90)), None, "two steps late");
        assert_eq!(matching_step(&secret, "287083", UnixTime(59)), None);
        assert_eq!(secret_text(&secret).len(), 32);
        assert!(qr_svg(&secret, "latchkey localhost", "ann@example.com").starts_with("<svg"));
    }

    #[test]
    fn recovery_codes_are_ten_distinct_and_hashed_per_account() {
        let (shown, hashes) = new_recovery_codes("u1");
        assert_eq!((shown.len(), hashes.len()), (10, 10));
        let distinct: std::collections::HashSet<_> = shown.iter().collect();
        assert_eq!(distinct.len(), 10);
        let typed = shown[0].to_uppercase().replace('-', " ");
        let normalised = sign_in::recovery_code(&typed).expect("a code");
        assert_eq!(sign_in::recovery_code_hash("u1", &normalised), hashes[0]);
    }
}
