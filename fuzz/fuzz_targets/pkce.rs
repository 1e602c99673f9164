//! PKCE (RFC 7636): a verifier passes only when it follows the rules and its challenge is the one stored.
#![no_main]

use latchkey_core::pkce::{self, ChallengeMethod};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (bool, &str, &str)| {
    let (s256, challenge, verifier) = input;
    let method = if s256 { ChallengeMethod::S256 } else { ChallengeMethod::Plain };
    let _ = pkce::check_challenge(method, challenge);
    if pkce::verify(method, challenge, verifier).is_ok() {
        assert!(pkce::is_valid_verifier(verifier), "{verifier:?}");
        let expected = if s256 { pkce::s256_challenge(verifier) } else { verifier.to_owned() };
        assert_eq!(challenge, expected);
    }
});
