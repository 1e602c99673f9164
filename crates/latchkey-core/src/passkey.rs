//! Passkeys (WebAuthn discoverable credentials): the rules around them that need no WebAuthn parsing, which the
//! server leaves to `webauthn-rs`. The relying-party id a public URL allows, the user handle an account presents
//! to authenticators, a passkey's name, and how long a ceremony may take.

use crate::time::UnixTime;

/// How long a ceremony (its challenge) may take, from the options to the answer: 5 minutes.
pub const CEREMONY_LIFETIME: i64 = 300;

/// The longest name of a passkey, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A passkey of an account as the store keeps it: the credential's public half and counter (serialized by the
/// WebAuthn library), never a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PasskeyRecord {
    /// The credential id (base64url, as WebAuthn sends it).
    pub credential_id: String,
    /// The account.
    pub user_id: String,
    /// The name its owner gave it.
    pub name: String,
    /// The credential (public key, algorithm, counter) as the WebAuthn library serializes it.
    pub credential: String,
    /// When it was added.
    pub created_at: UnixTime,
    /// When it last signed someone in.
    pub last_used_at: Option<UnixTime>,
}

/// Why passkeys are unavailable on a server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RpIdUnavailable {
    /// The public URL's host is an IP address, which WebAuthn refuses as a relying-party id.
    #[error(
        "passkeys need the server's public URL to name a host, and {0} is an IP address (WebAuthn refuses those): \
         serve it as https://localhost or under a domain name"
    )]
    IpAddress(String),
    /// The public URL has no host, or is not HTTPS.
    #[error("passkeys need an https:// public URL with a host name")]
    NoHost,
}

/// The relying-party id of a server whose pages are served under `issuer`: the URL's host. WebAuthn binds every
/// passkey to it, so passkeys made under one host do not sign in under another.
pub fn rp_id(issuer: &str) -> Result<String, RpIdUnavailable> {
    let url = url::Url::parse(issuer).map_err(|_| RpIdUnavailable::NoHost)?;
    if url.scheme() != "https" {
        return Err(RpIdUnavailable::NoHost);
    }
    match url.host() {
        Some(url::Host::Domain(d)) => Ok(d.to_ascii_lowercase()),
        Some(url::Host::Ipv4(ip)) => Err(RpIdUnavailable::IpAddress(ip.to_string())),
        Some(url::Host::Ipv6(ip)) => Err(RpIdUnavailable::IpAddress(ip.to_string())),
        None => Err(RpIdUnavailable::NoHost),
    }
}

/// The user handle of an account: 16 bytes derived from its id, so that an authenticator never holds the id (nor
/// an e-mail address), and a discoverable credential names its account without a table to look it up in.
pub fn user_handle(user_id: &str) -> [u8; 16] {
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("latchkey passkey user\0{user_id}").as_bytes());
    let mut handle = [0u8; 16];
    handle.copy_from_slice(&digest.as_ref()[..16]);
    // A UUID's version (8: custom) and variant bits, as WebAuthn libraries carry the handle as a UUID.
    handle[6] = (handle[6] & 0x0f) | 0x80;
    handle[8] = (handle[8] & 0x3f) | 0x80;
    handle
}

/// A passkey's name, trimmed: refused when empty or longer than [`MAX_NAME_CHARS`].
pub fn name(input: &str) -> Result<String, &'static str> {
    let name = input.trim();
    if name.is_empty() {
        return Err("Give the passkey a name, such as the device it is on.");
    }
    if name.chars().count() > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err("A passkey's name has at most 64 characters, and no control characters.");
    }
    Ok(name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rp_id_is_the_host_and_never_an_ip_address() {
        assert_eq!(rp_id("https://localhost:8443").as_deref(), Ok("localhost"));
        assert_eq!(rp_id("https://ID.Example.com/base").as_deref(), Ok("id.example.com"));
        assert!(matches!(rp_id("https://127.0.0.1:8443"), Err(RpIdUnavailable::IpAddress(ip)) if ip == "127.0.0.1"));
        assert!(matches!(rp_id("https://[::1]:8443"), Err(RpIdUnavailable::IpAddress(_))));
        assert_eq!(rp_id("http://localhost:8443"), Err(RpIdUnavailable::NoHost));
        assert_eq!(rp_id("not a url"), Err(RpIdUnavailable::NoHost));
    }

    #[test]
    fn a_user_handle_is_stable_distinct_and_a_uuid() {
        assert_eq!(user_handle("123"), user_handle("123"));
        assert_ne!(user_handle("123"), user_handle("124"));
        let h = user_handle("123");
        assert_eq!((h[6] >> 4, h[8] >> 6), (8, 2));
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(name("  Laptop  ").as_deref(), Ok("Laptop"));
        assert!(name("   ").is_err());
        assert!(name(&"x".repeat(65)).is_err());
        assert!(name(&"é".repeat(64)).is_ok());
        assert!(name("a\u{7}b").is_err());
    }
}
