//! Sealed codes over the in-memory ports: the exchange asks the store once, and what the store alone knows (a code
//! used, expired early, a disabled user) still decides.

use super::*;
use crate::auth_code;

/// Stores `record` under a sealed code made for it; the code.
fn sealed(ports: &Memory, record: AuthCode) -> String {
    let code = auth_code::issue(auth_code::sealing_key(&ports.keys), &record, &ports.random);
    ports.codes.lock().unwrap().push(AuthCode { code_hash: code.hash(), ..record });
    code.into_inner()
}

/// The form of an exchange of `code` by `client_id`.
fn exchange<'a>(code: &'a str, client_id: &'a str) -> Form<'a> {
    let mut pairs = EXCHANGE.to_vec();
    pairs[1].1 = code;
    pairs[3].1 = client_id;
    Form::new(pairs).unwrap()
}

fn asked(ports: &Memory) -> Vec<&'static str> {
    std::mem::take(&mut *ports.asked.lock().unwrap())
}

#[test]
fn a_sealed_code_is_exchanged_with_one_call_to_the_store_and_reads_the_user_for_profile_claims_only() {
    let ports = Memory::new();
    let code = sealed(&ports, auth_code("unused"));
    let issued = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap();
    assert_eq!(issued.response.id_token.as_deref(), Some("id-token-of-u"));
    assert_eq!(asked(&ports), ["redeem"]);

    let email = ScopeSet(Scope::OpenId.set().0 | Scope::Email.set().0);
    let code = sealed(&ports, AuthCode { scopes: email, ..auth_code("unused") });
    block_on(token(&ports, call(&exchange(&code, "app")))).unwrap();
    assert_eq!(asked(&ports), ["user", "redeem"]);

    let plain = "lkc_plain";
    ports.codes.lock().unwrap().push(auth_code(plain));
    block_on(token(&ports, call(&exchange(plain, "app")))).unwrap();
    assert_eq!(asked(&ports), ["code", "user", "redeem"], "a plain code is read from the store first");
}

#[test]
fn a_sealed_code_presented_again_revokes_its_grant_whatever_else_is_wrong() {
    let ports = Memory::new();
    let code = sealed(&ports, auth_code("unused"));
    block_on(token(&ports, call(&exchange(&code, "app")))).unwrap();
    asked(&ports);
    let err = block_on(token(&ports, call(&exchange(&code, "nobody")))).unwrap_err();
    let reused = "The authorization code was already used. Tokens issued from it are revoked.";
    assert_eq!((err.code, &*err.description), (ErrorCode::InvalidGrant, reused), "before the unknown client");
    assert_eq!(asked(&ports), ["code", "revoke"]);
    assert!(ports.grants.lock().unwrap().iter().all(|g| g.grant.revoked_at == Some(NOW)));

    let code = sealed(&ports, auth_code("unused"));
    block_on(token(&ports, call(&exchange(&code, "app")))).unwrap();
    asked(&ports);
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(&*err.description, reused, "found when spending it");
    assert_eq!(asked(&ports), ["redeem", "code", "revoke"]);
    assert!(ports.grants.lock().unwrap().iter().all(|g| g.grant.revoked_at == Some(NOW)));
}

#[test]
fn a_sealed_code_failing_a_check_keeps_the_checks_error_when_unused() {
    let ports = Memory::new();
    let code = sealed(&ports, AuthCode { redirect_uri: "http://127.0.0.1:4000/other".into(), ..auth_code("unused") });
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidGrant);
    assert!(err.description.contains("redirect"), "{}", err.description);
    assert_eq!(asked(&ports), ["code"], "the store is asked whether it was used, nothing spent");
    assert!(ports.grants.lock().unwrap().is_empty());
}

#[test]
fn a_sealed_code_the_store_expired_early_or_whose_user_was_disabled_issues_nothing() {
    let ports = Memory::new();
    // An organisation's change expires a pending code in the store; the code's own copy still says it is good.
    let code = sealed(&ports, auth_code("unused"));
    ports.codes.lock().unwrap().iter_mut().for_each(|c| c.expires_at = UnixTime(0));
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(&*err.description, "The code has expired.", "as when the store's record is read first");

    // A registered API's scope retired: the store's record lost it.
    let code = sealed(&ports, auth_code("unused"));
    ports.codes.lock().unwrap().iter_mut().for_each(|c| c.scopes = Scope::OpenId.set());
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(&*err.description, "The authorization code is invalid or has expired.");

    // The store spends no code of a disabled account.
    let code = sealed(&ports, AuthCode { user_id: "off".into(), ..auth_code("unused") });
    asked(&ports);
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(&*err.description, "The user account is deleted or disabled.");
    assert_eq!(asked(&ports), ["redeem", "code", "user"]);

    // Deleting it deletes them.
    let code = sealed(&ports, auth_code("unused"));
    ports.codes.lock().unwrap().clear();
    let err = block_on(token(&ports, call(&exchange(&code, "app")))).unwrap_err();
    assert_eq!(&*err.description, "The authorization code is invalid or has expired.");
    assert!(ports.grants.lock().unwrap().is_empty());
}
