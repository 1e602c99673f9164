//! Refresh-token rotation over the in-memory ports: each refresh a new token, a retired token revoking the grant,
//! the grace period giving the same successor again.

use super::*;

/// The ports, with `app`'s project rotating its refresh tokens (or not) and `grace` seconds of grace.
fn memory(rotates: bool, grace: i64) -> Memory {
    let mut ports = Memory { grace, ..Memory::new() };
    ports.clients[0].project_rotates = rotates;
    ports
}

/// A grant of `app` made by a code exchange; its first refresh token.
fn rotating(ports: &Memory) -> String {
    ports.codes.lock().unwrap().push(auth_code("lkc_1"));
    let form = Form::new(EXCHANGE.to_vec()).unwrap();
    let issued = block_on(token(ports, call(&form))).unwrap();
    issued.response.refresh_token.expect("refresh token")
}

fn refresh(ports: &Memory, refresh_token: &str, now: UnixTime) -> Result<Option<String>, OAuthError> {
    let pairs = [("grant_type", "refresh_token"), ("refresh_token", refresh_token), ("client_id", "app")];
    let form = Form::new(pairs.to_vec()).unwrap();
    let issued = block_on(token(ports, TokenCall { now, ..call(&form) }))?;
    Ok(issued.response.refresh_token)
}

fn revoked(ports: &Memory) -> bool {
    ports.grants.lock().unwrap()[0].grant.revoked_at.is_some()
}

#[test]
fn each_refresh_returns_a_new_token_and_retires_the_one_presented() {
    let ports = memory(true, 0);
    let first = rotating(&ports);
    let second = refresh(&ports, &first, NOW).unwrap().expect("a new refresh token");
    assert_ne!(second, first);
    let third = refresh(&ports, &second, NOW.plus(1)).unwrap().expect("a new refresh token again");
    assert_ne!(third, second);
    assert!(!revoked(&ports));
}

#[test]
fn a_retired_token_presented_again_revokes_the_grant() {
    let ports = memory(true, 0);
    let first = rotating(&ports);
    let second = refresh(&ports, &first, NOW).unwrap().expect("rotated");
    let reused = refresh(&ports, &first, NOW.plus(1)).unwrap_err();
    assert_eq!(reused.code, ErrorCode::InvalidGrant);
    assert!(revoked(&ports), "the whole grant goes");
    let current = refresh(&ports, &second, NOW.plus(2)).unwrap_err();
    assert_eq!(current.code, ErrorCode::InvalidGrant, "the newest token goes with it");
}

#[test]
fn within_the_grace_period_the_retired_token_gets_the_same_successor() {
    let ports = memory(true, 10);
    let first = rotating(&ports);
    let second = refresh(&ports, &first, NOW).unwrap().expect("rotated");
    assert_eq!(refresh(&ports, &first, NOW.plus(9)).unwrap().as_deref(), Some(second.as_str()), "the lost answer");
    assert!(!revoked(&ports));
    let third = refresh(&ports, &second, NOW.plus(9)).unwrap().expect("rotated on");
    assert_ne!(third, second);
    assert_eq!(
        refresh(&ports, &first, NOW.plus(9)).unwrap_err().code,
        ErrorCode::InvalidGrant,
        "two rotations back: reuse, even within the grace period"
    );
    assert!(revoked(&ports));
}

#[test]
fn after_the_grace_period_the_retired_token_revokes_the_grant() {
    let ports = memory(true, 10);
    let first = rotating(&ports);
    refresh(&ports, &first, NOW).unwrap().expect("rotated");
    assert_eq!(refresh(&ports, &first, NOW.plus(10)).unwrap_err().code, ErrorCode::InvalidGrant);
    assert!(revoked(&ports));
}

#[test]
fn a_token_never_issued_revokes_nothing_and_an_unrotated_grant_keeps_its_token() {
    let ports = memory(true, 0);
    let first = rotating(&ports);
    let id = refresh_token::grant_id(&first).expect("names its grant");
    let forged = refresh_token::generate(&id, &ports.random);
    let refused = refresh(&ports, forged.expose(), NOW).unwrap_err();
    assert_eq!((refused.code, &*refused.description), (ErrorCode::InvalidGrant, "Token has been expired or revoked."));
    assert!(!revoked(&ports), "a token of the grant's form but never issued is no reuse");

    let plain = memory(false, 0);
    let first = rotating(&plain);
    assert_eq!(refresh(&plain, &first, NOW).unwrap(), None, "no rotation: no new refresh token");
    assert_eq!(refresh(&plain, &first, NOW).unwrap(), None, "and the token keeps working");
}
