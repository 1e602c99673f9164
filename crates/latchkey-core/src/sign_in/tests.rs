use super::*;

const NONE: Factors = Factors { password: true, totp: false, passkeys: false };

#[test]
fn a_password_alone_signs_in_unless_a_second_step_exists_or_is_required() {
    let open = Policy::default();
    assert_eq!(after_password(NONE, open), AfterPassword::SignedIn);
    assert_eq!(after_password(Factors { passkeys: true, ..NONE }, open), AfterPassword::SignedIn);
    assert_eq!(after_password(Factors { totp: true, ..NONE }, open), AfterPassword::SecondStep { totp: true });
    let required = Policy { require_two_step: true, passkeys_only: false };
    assert_eq!(after_password(NONE, required), AfterPassword::Enrol);
    assert_eq!(after_password(Factors { passkeys: true, ..NONE }, required), AfterPassword::SecondStep { totp: false });
    let only = Policy { require_two_step: true, passkeys_only: true };
    assert_eq!(
        after_password(Factors { totp: true, ..NONE }, only),
        AfterPassword::PasskeysOnly,
        "a code does not help"
    );
}

#[test]
fn sessions_satisfy_the_policy_their_method_meets() {
    let open = Policy::default();
    let required = Policy { require_two_step: true, passkeys_only: false };
    let only = Policy { require_two_step: false, passkeys_only: true };
    assert!(Method::ALL.iter().all(|m| satisfies(*m, open)));
    assert!(!satisfies(Method::Password, required));
    assert!(satisfies(Method::TwoStep, required) && satisfies(Method::Passkey, required));
    assert!(!satisfies(Method::TwoStep, only) && !satisfies(Method::Password, only));
    assert!(satisfies(Method::Passkey, only));
    for m in Method::ALL {
        assert_eq!(Method::parse(m.as_str()), Some(m));
    }
}

#[test]
fn a_code_matches_its_step_and_one_either_side() {
    assert_eq!(candidate_steps(59), [1, 0, 2]);
    assert_eq!(candidate_steps(60), [2, 1, 3]);
    assert_eq!(totp_code(" 123 456 "), Some("123456".into()));
    assert_eq!(totp_code("12345"), None);
    assert_eq!(totp_code("12345a"), None);
    assert_eq!(totp_code("1234567"), None);
}

#[test]
fn recovery_codes_ignore_case_spaces_and_dashes() {
    let shown = format_recovery_code("0123456789abcdef");
    assert_eq!(shown, "0123-4567-89ab-cdef");
    assert_eq!(recovery_code(&shown), Some("0123456789abcdef".into()));
    assert_eq!(recovery_code(" 0123 4567-89AB-CDEF "), Some("0123456789abcdef".into()));
    assert_eq!(recovery_code("0123-4567-89ab-cdeu"), None, "u is not in the alphabet");
    assert_eq!(recovery_code("0123-4567-89ab"), None);
    assert_ne!(recovery_code_hash("a", "x"), recovery_code_hash("b", "x"), "each account's hashes are its own");
    let distinct: std::collections::HashSet<_> = RECOVERY_ALPHABET.iter().collect();
    assert_eq!(distinct.len(), 32);
}
