//! What a SET must be to be accepted, and what it is typed as.

use super::*;
use crate::events::{event_type, Event, Received, SecurityEvent, SetError, Subject, TokenRevoked};

#[tokio::test]
async fn a_valid_set_is_accepted_and_typed() {
    let (receiver, http, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let received = receiver.receive(set(&claims("j1"))).await.expect("accepted");
    assert_eq!(
        received,
        Received::Event(SecurityEvent {
            jti: "j1".into(),
            iat: 1_764_170_000,
            txn: Some("t1".into()),
            subject: Subject::IssSub { iss: ISSUER.into(), sub: "u1".into() },
            event: Event::SessionsRevoked,
        })
    );
    assert_eq!(received.jti(), "j1");
    let requests = http.requests();
    assert_eq!((requests.len(), requests[0].method, requests[0].url.as_str()), (1, "GET", JWKS_URI));
    receiver.receive(set(&claims("j2"))).await.expect("a second SET");
    assert_eq!(http.requests().len(), 1, "the keys are cached");
}

#[tokio::test]
async fn a_set_delivered_again_is_a_duplicate_until_forgotten() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let body = set(&claims("j1"));
    assert!(matches!(receiver.receive(&body).await, Ok(Received::Event(_))));
    assert_eq!(receiver.receive(body.as_bytes()).await, Ok(Received::Duplicate { jti: "j1".into() }));
    receiver.forget("j1");
    assert!(matches!(receiver.receive(&body).await, Ok(Received::Event(_))));
}

#[tokio::test]
async fn the_issuer_and_audience_must_be_this_issuer_and_this_app() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let mut c = claims("j1");
    c["iss"] = json!("https://evil.example");
    assert_eq!(refused(&receiver, &set(&c)).await, "invalid_issuer");
    c["iss"] = json!(format!("{ISSUER}/"));
    assert_eq!(refused(&receiver, &set(&c)).await, "invalid_issuer", "exactly the issuer");
    let mut c = claims("j1");
    c["aud"] = json!("lkapp-other");
    assert_eq!(refused(&receiver, &set(&c)).await, "invalid_audience");
    c["aud"] = json!(["lkapp-other"]);
    assert_eq!(refused(&receiver, &set(&c)).await, "invalid_audience");
    c.as_object_mut().expect("object").remove("aud");
    assert_eq!(refused(&receiver, &set(&c)).await, "invalid_audience");
    c["aud"] = json!(["lkapp-other", CLIENT_ID]);
    assert!(receiver.receive(set(&c)).await.is_ok(), "an array naming the app");
}

#[tokio::test]
async fn a_signature_that_does_not_verify_is_an_invalid_key() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let good = set(&claims("j1"));
    let (input, _) = good.rsplit_once('.').expect("three parts");
    let other_claims = set(&claims("j2"));
    let (_, other_signature) = other_claims.rsplit_once('.').expect("three parts");
    assert_eq!(refused(&receiver, &format!("{input}.{other_signature}")).await, "invalid_key");
    let (ec, _) = ec_key(KID);
    assert_eq!(refused(&receiver, &sign_es256(&ec, KID, &claims("j3"))).await, "invalid_key", "alg of another key");
    assert!(receiver.receive(&good).await.is_ok(), "a refused SET marks no jti");
}

#[tokio::test]
async fn none_and_hmac_are_never_accepted() {
    let (receiver, http, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let none = format!("{}.", signing_input(&json!({"alg": "none", "typ": "secevent+jwt", "kid": KID}), &claims("j1")));
    assert_eq!(refused(&receiver, &none).await, "invalid_key");
    for alg in ["HS256", "RS384", "PS256"] {
        let header = json!({"alg": alg, "typ": "secevent+jwt", "kid": KID});
        assert_eq!(refused(&receiver, &sign_rs256(&header, &claims("j1"))).await, "invalid_key", "{alg}");
    }
    assert!(http.requests().is_empty(), "refused before any key is fetched");
}

#[tokio::test]
async fn the_header_must_type_the_token_as_a_set() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    for header in [json!({"alg": "RS256", "kid": KID}), json!({"alg": "RS256", "typ": "JWT", "kid": KID})] {
        assert_eq!(refused(&receiver, &sign_rs256(&header, &claims("j1"))).await, "invalid_request", "{header}");
    }
    let typed = json!({"alg": "RS256", "typ": "application/secevent+jwt", "kid": KID});
    assert!(receiver.receive(sign_rs256(&typed, &claims("j1"))).await.is_ok());
}

#[tokio::test]
async fn a_set_carries_exactly_one_event_a_jti_an_iat_and_a_subject() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let mut two = claims("j1");
    two["events"][event_type::ACCOUNT_PURGED] = json!({});
    assert_eq!(refused(&receiver, &set(&two)).await, "invalid_request");
    let mut none = claims("j1");
    none["events"] = json!({});
    assert_eq!(refused(&receiver, &set(&none)).await, "invalid_request");
    for missing in ["jti", "iat", "events", "sub_id"] {
        let mut c = claims("j1");
        c.as_object_mut().expect("object").remove(missing);
        assert_eq!(refused(&receiver, &set(&c)).await, "invalid_request", "without {missing}");
    }
    for garbage in ["", "not a jws", "a.b.c"] {
        assert_eq!(refused(&receiver, garbage).await, "invalid_request", "{garbage:?}");
    }
    let mut without_txn = claims("j1");
    without_txn.as_object_mut().expect("object").remove("txn");
    let Ok(Received::Event(e)) = receiver.receive(set(&without_txn)).await else { panic!("accepted") };
    assert_eq!(e.txn, None);
}

#[tokio::test]
async fn a_token_revoked_event_names_the_refresh_token_by_its_double_sha512() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let mut c = claims("j1");
    c["events"] = json!({ event_type::TOKEN_REVOKED: {
        "token_identifier_alg": "hash_base64_sha512_sha512",
        "token": "eebH879BhTp5VcDKxe35F6H+CliYkDbfXSQa/OeJnzjevDxTnrCtCdweXw7/OaKvQyzweBaoMrsHb0L7jK4FhA==",
    }});
    let Ok(Received::Event(e)) = receiver.receive(set(&c)).await else { panic!("accepted") };
    let Event::TokenRevoked(revoked) = e.event else { panic!("a token-revoked event: {:?}", e.event) };
    assert!(revoked.token_matches("lkr_example-refresh-token"));
    assert!(!revoked.token_matches("lkr_another"));
    assert!(!revoked.covers_all_tokens());
    assert_eq!(revoked.token_identifier_alg.as_deref(), Some(TokenRevoked::HASH_ALG));
}

#[tokio::test]
async fn stream_level_and_unknown_events_are_handed_over() {
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID)])]);
    let mut c = claims("j1");
    c["sub_id"] = json!({"format": "opaque", "id": "stream-1"});
    c["events"] = json!({ "https://example.com/event-type/new": {"x": 1} });
    let Ok(Received::Event(e)) = receiver.receive(set(&c)).await else { panic!("accepted") };
    assert_eq!(e.subject, Subject::Opaque { id: "stream-1".into() });
    assert_eq!(
        e.event,
        Event::Other { event_type: "https://example.com/event-type/new".into(), payload: json!({"x": 1}) }
    );
}

#[tokio::test]
async fn es256_sets_verify_with_a_p256_key() {
    let (ec, ec_jwk) = ec_key("set-ec-1");
    let (receiver, _, _) = receiver(vec![jwks(vec![rsa_jwk(KID), ec_jwk])]);
    assert!(matches!(receiver.receive(sign_es256(&ec, "set-ec-1", &claims("j1"))).await, Ok(Received::Event(_))));
    assert!(receiver.receive(set(&claims("j2"))).await.is_ok(), "and RS256 with the RSA key");
}

#[test]
fn an_error_carries_its_rfc8935_code_and_body() {
    let e = SetError::InvalidAudience("not for us".into());
    assert_eq!((e.err(), e.description(), e.status()), ("invalid_audience", "not for us".to_owned(), 400));
    assert_eq!(e.response_body(), json!({"err": "invalid_audience", "description": "not for us"}));
    assert_eq!(e.to_string(), "invalid_audience: not for us");
    let unavailable = SetError::KeysUnavailable("down".into());
    assert_eq!((unavailable.err(), unavailable.status()), ("invalid_key", 503));
}
