//! Property tests of the redirect and PKCE rules, against a reference model simple enough to read:
//! a redirect URI matches only a registered string exactly, or, for a desktop app, a loopback IP literal (RFC 8252
//! §7.3) or a registered `localhost` URI with another port; a PKCE verifier passes only with its own challenge.

#[path = "model/redirect.rs"]
mod model;

use latchkey_core::client::ClientType;
use latchkey_core::pkce::{self, ChallengeMethod};
use latchkey_core::redirect;
use model::{client, may_match, REGISTERED};
use proptest::prelude::*;

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
