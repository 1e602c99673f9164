//! The reference model of redirect-URI matching, simple enough to read: a redirect URI matches only a registered
//! string exactly, or, for a desktop app, a loopback IP literal (RFC 8252 §7.3) or a registered `localhost` URI with
//! another port. Shared by the property tests (`tests/properties.rs`) and the fuzz target (`fuzz/`).

use latchkey_core::client::{Client, ClientDetails, ClientType};
use latchkey_core::time::UnixTime;

/// The redirect URIs the model's client registers.
pub const REGISTERED: [&str; 5] = [
    "com.example.app:/oauth2redirect",
    "https://app.example/cb",
    "http://127.0.0.1:8080/cb",
    "http://[::1]/cb?x=1",
    "http://localhost:9000/cb",
];

/// A client of type `t` registering [`REGISTERED`].
pub fn client(t: ClientType) -> Client {
    Client {
        client_id: "c".into(),
        project_id: "p".into(),
        name: "n".into(),
        client_type: t,
        redirect_uris: REGISTERED.iter().map(|s| s.to_string()).collect(),
        secrets: vec![],
        details: ClientDetails::default(),
        created_at: UnixTime(0),
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    }
}

/// `uri` without the port after a loopback host, if it has that shape.
fn without_loopback_port(uri: &str) -> Option<String> {
    for host in ["http://127.0.0.1", "http://[::1]", "http://localhost"] {
        if let Some(rest) = uri.strip_prefix(host) {
            let rest = match rest.strip_prefix(':') {
                Some(p) => &p[p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len())..],
                None => rest,
            };
            return Some(format!("{host}{rest}"));
        }
    }
    None
}

/// The reference: what may match, by plain string comparison.
pub fn may_match(t: ClientType, uri: &str) -> bool {
    if REGISTERED.contains(&uri) {
        return true;
    }
    if t != ClientType::Desktop {
        return false;
    }
    let ip_literal = uri.starts_with("http://127.0.0.1") || uri.starts_with("http://[::1]");
    let registered_but_port = without_loopback_port(uri)
        .is_some_and(|u| REGISTERED.iter().any(|r| without_loopback_port(r).as_deref() == Some(u.as_str())));
    ip_literal || registered_but_port
}
