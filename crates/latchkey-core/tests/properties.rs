//! Property tests of the redirect and PKCE rules (issue 24), against a reference model simple enough to read:
//! a redirect URI matches only a registered string exactly, or, for a desktop app, a loopback IP literal (RFC 8252
//! §7.3) or a registered `localhost` URI with another port; a PKCE verifier passes only with its own challenge.

use latchkey_core::client::{Client, ClientDetails, ClientType};
use latchkey_core::pkce::{self, ChallengeMethod};
use latchkey_core::redirect;
use latchkey_core::time::UnixTime;
use proptest::prelude::*;

const REGISTERED: [&str; 5] = [
    "com.example.app:/oauth2redirect",
    "https://app.example/cb",
    "http://127.0.0.1:8080/cb",
    "http://[::1]/cb?x=1",
    "http://localhost:9000/cb",
];

fn client(t: ClientType) -> Client {
    Client {
        client_id: "c".into(),
        project_id: "p".into(),
        name: "n".into(),
        client_type: t,
        redirect_uris: REGISTERED.iter().map(|s| s.to_string()).collect(),
        secret_hash: vec![],
        details: ClientDetails::default(),
        created_at: UnixTime(0),
        deleted_at: None,
        last_used_at: None,
        app_check: Default::default(),
        ownership_verified_at: None,
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
fn may_match(t: ClientType, uri: &str) -> bool {
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

/// A registered URI with a few characters inserted, removed or replaced.
fn near_miss() -> impl Strategy<Value = String> {
    let alphabet = prop::sample::select(vec![
        ':', '/', '.', '%', '?', '#', '@', '\\', '0', '1', '9', 'a', 'A', 'l', 'x', '[', ']', '-', ' ', 'é',
    ]);
    (prop::sample::select(REGISTERED.to_vec()), prop::collection::vec((0usize..64, 0u8..3, alphabet), 0..4)).prop_map(
        |(base, edits)| {
            let mut chars: Vec<char> = base.chars().collect();
            for (at, kind, c) in edits {
                let i = at % (chars.len() + 1);
                match kind {
                    0 => chars.insert(i, c),
                    1 if i < chars.len() => drop(chars.remove(i)),
                    _ if i < chars.len() => chars[i] = c,
                    _ => chars.push(c),
                }
            }
            chars.into_iter().collect()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn a_redirect_uri_matches_only_where_the_strings_agree_outside_a_loopback_port(
        uri in prop_oneof![near_miss(), ".{0,80}"],
        t in prop::sample::select(vec![ClientType::Desktop, ClientType::Mobile]),
    ) {
        let accepted = redirect::check(&client(t), &uri).is_ok();
        prop_assert!(!accepted || may_match(t, &uri), "{t:?} accepted {uri:?}");
    }

    #[test]
    fn a_verifier_passes_only_with_its_own_challenge(
        v in "[A-Za-z0-9._~-]{43,128}",
        w in "[A-Za-z0-9._~-]{43,128}",
    ) {
        let challenge = pkce::s256_challenge(&v);
        prop_assert!(pkce::check_challenge(ChallengeMethod::S256, &challenge).is_ok());
        prop_assert!(pkce::verify(ChallengeMethod::S256, &challenge, &v).is_ok());
        prop_assert!(pkce::verify(ChallengeMethod::Plain, &v, &v).is_ok());
        if v != w {
            prop_assert!(pkce::verify(ChallengeMethod::S256, &challenge, &w).is_err());
            prop_assert!(pkce::verify(ChallengeMethod::Plain, &v, &w).is_err());
        }
    }

    #[test]
    fn a_verifier_outside_the_rules_never_passes(v in ".{0,140}") {
        let valid = (43..=128).contains(&v.len())
            && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
        prop_assume!(!valid);
        prop_assert!(pkce::verify(ChallengeMethod::S256, &pkce::s256_challenge(&v), &v).is_err());
        prop_assert!(pkce::verify(ChallengeMethod::Plain, &v, &v).is_err());
    }
}
