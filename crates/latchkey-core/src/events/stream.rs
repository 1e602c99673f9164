//! A Shared Signals stream's settings and their rules (SSF 1.0 §8): how events reach the receiver, whether they
//! flow, and which ones it asked for.

use super::SUPPORTED;
use std::net::IpAddr;

/// The push delivery method (RFC 8935).
pub const PUSH: &str = "urn:ietf:rfc:8935";
/// The poll delivery method (RFC 8936).
pub const POLL: &str = "urn:ietf:rfc:8936";

/// A stream's status (SSF §8.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Events are delivered.
    Enabled,
    /// Events are held, and delivered once the stream is enabled again.
    Paused,
    /// Events are neither delivered nor held.
    Disabled,
}

impl Status {
    /// The status's name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Paused => "paused",
            Self::Disabled => "disabled",
        }
    }

    /// Parses a status's name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Enabled, Self::Paused, Self::Disabled].into_iter().find(|x| x.as_str() == s)
    }
}

/// How a stream's events reach its receiver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// latchkey POSTs each SET to the receiver's URL, with the `Authorization` header value the receiver gave.
    Push {
        /// The receiver's URL.
        endpoint_url: String,
        /// The `Authorization` header to send (a secret of the receiver's; never shown back).
        authorization_header: Option<String>,
    },
    /// The receiver fetches SETs from latchkey's poll endpoint.
    Poll,
}

impl Delivery {
    /// The method's URN.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Push { .. } => PUSH,
            Self::Poll => POLL,
        }
    }
}

/// A stream setting refused, with what to say about it (the framework's `400` with a description).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

/// Checks a push URL: HTTPS with a host, no fragment, no credentials, and not an address of a private network
/// written as an IP literal (a developer must not make latchkey post to the operator's internal services; the
/// names a URL holds are checked when they are resolved, with [`may_receive`]). A loopback receiver (tests,
/// local development), over `https://` or `http://`, only when the operator allows it.
pub fn check_push_url(raw: &str, allow_loopback: bool) -> Result<(), Invalid> {
    let url = url::Url::parse(raw).map_err(|e| Invalid(format!("endpoint_url is not a URL: {e}")))?;
    if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
        return Err(Invalid("endpoint_url must not carry a fragment or credentials".into()));
    }
    let ip = match url.host() {
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
        None => return Err(Invalid("endpoint_url must be an https URL".into())),
    };
    let loopback = ip.is_some_and(|ip| ip.is_loopback())
        || matches!(url.host(), Some(url::Host::Domain(d)) if d.eq_ignore_ascii_case("localhost"));
    if loopback && !allow_loopback {
        return Err(Invalid(
            "endpoint_url is a loopback address, accepted only with events.allow_insecure_loopback_push".into(),
        ));
    }
    if ip.is_some_and(|ip| !may_receive(ip, allow_loopback)) {
        return Err(Invalid("endpoint_url must not be an address of a private or link-local network".into()));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        _ => Err(Invalid("endpoint_url must be an https URL".into())),
    }
}

/// Whether latchkey may push to `ip`: a public address (loopback too when the operator allows it), not one of a
/// private, link-local, shared, unspecified, broadcast or reserved network.
pub fn may_receive(ip: IpAddr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return allow_loopback;
    }
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            !(v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_multicast()
                || (a == 100 && b & 0xc0 == 64)
                || (a == 192 && b == 0 && c == 0)
                || (a == 192 && b == 88 && c == 99)
                || (a == 198 && b & 0xfe == 18)
                || a == 0
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            // An IPv4 address carried inside an IPv6 one (mapped, IPv4-compatible, NAT64, 6to4) is judged as
            // that IPv4 address: NAT64 in particular reaches the IPv4 network from an IPv6-only host.
            if let Some(v4) = embedded_ipv4(v6) {
                return may_receive(IpAddr::V4(v4), allow_loopback);
            }
            let s = v6.segments();
            !(v6.is_unspecified()
                || v6.is_multicast()
                || s[0] & 0xfe00 == 0xfc00
                || s[0] & 0xffc0 == 0xfe80
                || s[0] & 0xffc0 == 0xfec0
                || (s[0] == 0x2001 && s[1] == 0) // Teredo
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0100 && s[1] == 0 && s[2] == 0 && s[3] == 0)) // discard
        }
    }
}

/// The IPv4 address inside an IPv6 one: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
/// (`64:ff9b::/96`, `64:ff9b:1::/48`) or 6to4 (`2002:aabb:ccdd::/48`).
fn embedded_ipv4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let o = v6.octets();
    let tail = std::net::Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    if s[..6] == [0; 6] && !v6.is_loopback() && !v6.is_unspecified() {
        return Some(tail);
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return Some(tail);
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        // Local-use NAT64: where the IPv4 address sits depends on the operator's prefix; none of it may be reached.
        return Some(std::net::Ipv4Addr::UNSPECIFIED);
    }
    if s[0] == 0x2002 {
        return Some(std::net::Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    None
}

/// Checks the `Authorization` header value a receiver gives for its pushes: visible ASCII and spaces, at most
/// 4 KiB (it is sent as an HTTP header).
pub fn check_authorization_header(value: &str) -> Result<(), Invalid> {
    if value.is_empty() || value.len() > 4096 || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(Invalid("authorization_header must be visible ASCII (at most 4096 characters)".into()));
    }
    Ok(())
}

/// The events a stream delivers from those it asked for: the supported ones among them, in the order of
/// [`SUPPORTED`]; every supported event when it asked for none. The framework says to ignore event types a
/// transmitter does not support (SSF §8.1.1), and the management API does; the CLI refuses them
/// ([`unsupported`]), since there a typo is the operator's.
pub fn delivered(requested: &[String]) -> Vec<&'static str> {
    if requested.is_empty() {
        return SUPPORTED.to_vec();
    }
    SUPPORTED.into_iter().filter(|t| requested.iter().any(|r| r == t)).collect()
}

/// The requested event types latchkey does not send.
pub fn unsupported(requested: &[String]) -> Vec<&str> {
    requested.iter().map(String::as_str).filter(|r| !SUPPORTED.contains(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::types;

    #[test]
    fn push_urls_are_https_and_loopback_only_when_allowed() {
        assert!(check_push_url("https://app.example/events", false).is_ok());
        assert!(check_push_url("http://127.0.0.1:9000/events", true).is_ok());
        assert!(check_push_url("http://[::1]:9000/events", true).is_ok());
        assert!(check_push_url("https://localhost:9000/events", true).is_ok());
        for loopback in ["http://127.0.0.1:9000/events", "https://127.0.0.1:9443/e", "https://localhost/e"] {
            let refused = check_push_url(loopback, false).unwrap_err();
            assert!(refused.0.contains("allow_insecure_loopback_push"), "{loopback}: {refused}");
        }
        assert!(check_push_url("http://app.example/events", true).is_err(), "only loopback");
        assert!(check_push_url("https://u:p@app.example/", false).is_err());
        assert!(check_push_url("https://app.example/#x", false).is_err());
        assert!(check_push_url("not a url", false).is_err());
        assert!(check_push_url("ftp://app.example/", true).is_err());
        for internal in [
            "https://10.1.2.3/e",
            "https://192.168.0.1/e",
            "https://172.16.0.9/e",
            "https://169.254.169.254/latest",
            "https://100.64.0.1/e",
            "https://0.0.0.0/e",
            "https://[fd00::1]/e",
            "https://[fe80::1]/e",
            "https://[::ffff:10.0.0.1]/e",
            "https://[fec0::1]/e",
            "https://240.0.0.1/e",
        ] {
            assert!(check_push_url(internal, true).unwrap_err().0.contains("private"), "{internal}");
        }
        assert!(check_push_url("https://8.8.8.8/e", false).is_ok());
        assert!(check_push_url("https://[::ffff:8.8.8.8]/e", false).is_ok());
        assert!(may_receive("93.184.215.14".parse().unwrap(), false));
        assert!(!may_receive("10.0.0.8".parse().unwrap(), true));
        assert!(!may_receive("::1".parse().unwrap(), false) && may_receive("::1".parse().unwrap(), true));
    }

    #[test]
    fn special_purpose_ranges_and_ipv4_carried_in_ipv6_are_judged_as_what_they_reach() {
        for internal in [
            "64:ff9b::a9fe:a9fe", // NAT64 to 169.254.169.254
            "64:ff9b:1::808:808", // local-use NAT64: refused whatever it carries
            "::a9fe:a9fe",        // IPv4-compatible
            "2002:a00:1::1",      // 6to4 of 10.0.0.1
            "2001::1",            // Teredo
            "ff02::1",            // multicast
            "100::1",             // discard
            "2001:db8::1",        // documentation
            "198.18.0.1",
            "192.0.0.8",
            "192.88.99.1",
            "224.0.0.1",
            "203.0.113.5",
        ] {
            assert!(!may_receive(internal.parse().unwrap(), false), "{internal}");
        }
        for public in ["64:ff9b::808:808", "2002:808:808::1", "2606:4700::1111", "1.1.1.1"] {
            assert!(may_receive(public.parse().unwrap(), false), "{public}");
        }
    }

    #[test]
    fn an_authorization_header_is_one_line_of_visible_ascii() {
        assert!(check_authorization_header("Bearer abc.def").is_ok());
        for bad in ["", "Bearer a\r\nX-Injected: 1", "Bearer \u{e9}", &"x".repeat(4097)] {
            assert!(check_authorization_header(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_stream_gets_what_it_asked_for_among_what_is_supported() {
        assert_eq!(delivered(&[]), SUPPORTED.to_vec());
        let asked = vec![types::TOKEN_REVOKED.to_owned(), "urn:example:other".to_owned()];
        assert_eq!(delivered(&asked), [types::TOKEN_REVOKED]);
        assert_eq!(unsupported(&asked), ["urn:example:other"]);
    }

    #[test]
    fn statuses_read_back() {
        for s in [Status::Enabled, Status::Paused, Status::Disabled] {
            assert_eq!(Status::parse(s.as_str()), Some(s));
        }
        assert_eq!(Delivery::Poll.method(), POLL);
    }
}
