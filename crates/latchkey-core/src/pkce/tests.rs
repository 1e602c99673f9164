use super::*;

/// RFC 7636 Appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

#[test]
fn rfc7636_appendix_b_vector() {
    assert_eq!(s256_challenge(VERIFIER), CHALLENGE);
    assert!(verify(ChallengeMethod::S256, CHALLENGE, VERIFIER).is_ok());
}

#[test]
fn a_wrong_verifier_is_invalid_grant() {
    let other = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXX";
    assert_eq!(verify(ChallengeMethod::S256, CHALLENGE, other).unwrap_err().code, crate::ErrorCode::InvalidGrant);
}

#[test]
fn plain_compares_the_verifier_itself() {
    assert!(verify(ChallengeMethod::Plain, VERIFIER, VERIFIER).is_ok());
    assert!(verify(ChallengeMethod::Plain, CHALLENGE, VERIFIER).is_err());
}

#[test]
fn verifier_length_is_43_to_128() {
    assert!(!is_valid_verifier(&"a".repeat(42)));
    assert!(is_valid_verifier(&"a".repeat(43)));
    assert!(is_valid_verifier(&"a".repeat(128)));
    assert!(!is_valid_verifier(&"a".repeat(129)));
}

#[test]
fn verifier_charset_is_unreserved_only() {
    let base = "a".repeat(42);
    for ok in ['-', '.', '_', '~', 'Z', '9'] {
        assert!(is_valid_verifier(&format!("{base}{ok}")), "{ok}");
    }
    for bad in ['+', '/', '=', ' ', '%', 'é'] {
        assert!(!is_valid_verifier(&format!("{base}{bad}")), "{bad}");
    }
}

#[test]
fn a_malformed_verifier_is_invalid_request() {
    let err = verify(ChallengeMethod::S256, CHALLENGE, "short").unwrap_err();
    assert_eq!(err.code, crate::ErrorCode::InvalidRequest);
}

#[test]
fn challenges_are_checked_for_their_method() {
    assert!(check_challenge(ChallengeMethod::S256, CHALLENGE).is_ok());
    assert!(check_challenge(ChallengeMethod::S256, &CHALLENGE[1..]).is_err());
    assert!(check_challenge(ChallengeMethod::S256, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw+cM").is_err());
    assert!(check_challenge(ChallengeMethod::Plain, VERIFIER).is_ok());
    assert_eq!(check_challenge(ChallengeMethod::Plain, "x").unwrap_err().code, crate::ErrorCode::InvalidGrant);
}

#[test]
fn method_defaults_to_plain_and_refuses_others() {
    assert_eq!(ChallengeMethod::parse(None).unwrap(), ChallengeMethod::Plain);
    assert_eq!(ChallengeMethod::parse(Some("S256")).unwrap(), ChallengeMethod::S256);
    assert!(ChallengeMethod::parse(Some("s256")).is_err());
}
