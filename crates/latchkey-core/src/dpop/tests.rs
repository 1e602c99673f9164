use super::*;
use crate::jws::sign_parts;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};

const URL: &str = "https://as.example:8443/token";
const NOW: UnixTime = UnixTime(1_700_000_000);

fn key() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).expect("key")
}

fn jwk_of(k: &EcdsaKeyPair) -> Value {
    serde_json::to_value(EcJwk::from_point(k.public_key().as_ref()).expect("point")).expect("json")
}

fn header(k: &EcdsaKeyPair) -> Value {
    json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": jwk_of(k) })
}

fn claims() -> Value {
    json!({ "jti": "id-1", "htm": "POST", "htu": URL, "iat": NOW.0 })
}

fn proof(k: &EcdsaKeyPair, header: Value, claims: Value) -> String {
    sign_parts(k, &header, &claims, &crate::secret::Counter::default()).expect("sign")
}

fn check(p: &str) -> Result<Proof, OAuthError> {
    verify(p, "POST", URL, NOW, Window::default())
}

fn refused(p: &str) {
    let e = check(p).expect_err("refused");
    assert_eq!(e.code, ErrorCode::InvalidDpopProof, "{e:?}");
}

#[test]
fn a_good_proof_passes_and_names_its_key_by_thumbprint() {
    let k = key();
    let p = check(&proof(&k, header(&k), claims())).expect("valid");
    assert_eq!(p.jkt, EcJwk::from_point(k.public_key().as_ref()).expect("jwk").thumbprint());
    assert_eq!((p.jti.as_str(), p.iat, p.nonce), ("id-1", NOW, None));
}

#[test]
fn typ_must_be_dpop_jwt() {
    let k = key();
    let mut h = header(&k);
    h["typ"] = "JWT".into();
    refused(&proof(&k, h, claims()));
}

#[test]
fn alg_must_be_es256_never_none() {
    let k = key();
    for alg in ["none", "RS256", "HS256", "ES384"] {
        let mut h = header(&k);
        h["alg"] = alg.into();
        refused(&proof(&k, h, claims()));
    }
    // An unsigned token: alg none with an empty signature.
    let h = URL_SAFE_NO_PAD.encode(json!({"typ":"dpop+jwt","alg":"none","jwk":jwk_of(&k)}).to_string());
    let c = URL_SAFE_NO_PAD.encode(claims().to_string());
    refused(&format!("{h}.{c}."));
}

#[test]
fn a_jwk_with_private_members_is_refused() {
    let k = key();
    let mut h = header(&k);
    h["jwk"]["d"] = "c2VjcmV0".into();
    refused(&proof(&k, h, claims()));
}

#[test]
fn the_jwk_must_be_a_p256_public_key() {
    let k = key();
    for (member, value) in [("kty", "RSA"), ("crv", "P-384"), ("x", "AAAA")] {
        let mut h = header(&k);
        h["jwk"][member] = value.into();
        refused(&proof(&k, h, claims()));
    }
    let mut h = header(&k);
    h.as_object_mut().expect("object").remove("jwk");
    refused(&proof(&k, h, claims()));
}

#[test]
fn members_of_the_wrong_type_or_null_are_refused_as_before() {
    let k = key();
    for (member, value) in [("d", Value::Null), ("k", json!({ "x": [1] }))] {
        let mut h = header(&k);
        h["jwk"][member] = value;
        refused(&proof(&k, h, claims()));
    }
    let jwk = jwk_of(&k);
    let as_array = json!([jwk["kty"], jwk["crv"], jwk["x"], jwk["y"]]);
    for (member, value) in [("typ", json!(["dpop+jwt"])), ("alg", Value::Null), ("jwk", json!("EC")), ("jwk", as_array)]
    {
        let mut h = header(&k);
        h[member] = value;
        refused(&proof(&k, h, claims()));
    }
    for (member, value) in [("jti", json!(7)), ("htm", Value::Null), ("htu", json!({})), ("nonce", json!(5))] {
        let mut c = claims();
        c[member] = value;
        refused(&proof(&k, header(&k), c));
    }
    // A `null` nonce is no nonce (the nonce rules then apply as to a proof without one).
    let mut c = claims();
    c["nonce"] = Value::Null;
    assert_eq!(check(&proof(&k, header(&k), c)).expect("valid").nonce, None);
}

#[test]
fn a_jwk_member_given_twice_is_refused() {
    let k = key();
    let x = jwk_of(&k)["x"].as_str().expect("x").to_owned();
    let header_json = serde_json::to_string(&header(&k))
        .expect("json")
        .replace(&format!("\"x\":\"{x}\""), &format!("\"x\":\"{x}\",\"x\":\"{x}\""));
    assert!(header_json.matches("\"x\"").count() == 2, "{header_json}");
    let mut p = format!("{}.{}", URL_SAFE_NO_PAD.encode(header_json), URL_SAFE_NO_PAD.encode(claims().to_string()));
    let signature = k.sign(&SystemRandom::new(), p.as_bytes()).expect("sign");
    p.push('.');
    URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut p);
    refused(&p);
}

#[test]
fn escaped_strings_read_as_their_text() {
    let k = key();
    // `+` and `d` written as JSON escapes: the members are read as their text, not as the bytes sent.
    let header_json = serde_json::to_string(&header(&k)).expect("json").replace("dpop+jwt", "dpop\\u002bjwt");
    let claims_json = serde_json::to_string(&claims()).expect("json").replace("\"id-1\"", "\"i\\u0064-1\"");
    let mut p = format!("{}.{}", URL_SAFE_NO_PAD.encode(header_json), URL_SAFE_NO_PAD.encode(claims_json));
    let signature = k.sign(&SystemRandom::new(), p.as_bytes()).expect("sign");
    p.push('.');
    URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut p);
    assert_eq!(check(&p).expect("valid").jti, "id-1");
}

#[test]
fn critical_headers_are_refused() {
    let k = key();
    let mut h = header(&k);
    h["crit"] = json!(["exp"]);
    refused(&proof(&k, h, claims()));
}

#[test]
fn a_der_encoded_signature_is_refused() {
    let rng = SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).expect("key");
    let k = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, der.as_ref(), &rng).expect("key");
    refused(&proof(&k, header(&k), claims()));
}

#[test]
fn the_signature_covers_the_exact_bytes_received() {
    let k = key();
    let p = proof(&k, header(&k), claims());
    let mut parts: Vec<&str> = p.split('.').collect();
    let other = URL_SAFE_NO_PAD.encode(json!({ "jti": "id-2", "htm": "POST", "htu": URL, "iat": NOW.0 }).to_string());
    parts[1] = &other;
    refused(&parts.join("."));
    // Same claims re-encoded with different whitespace: the signature no longer covers them.
    let spaced = URL_SAFE_NO_PAD.encode(serde_json::to_string_pretty(&claims()).expect("json"));
    let mut parts: Vec<&str> = p.split('.').collect();
    parts[1] = &spaced;
    refused(&parts.join("."));
    // Another key's signature.
    let other_key = key();
    refused(&proof(&other_key, header(&k), claims()));
}

#[test]
fn htm_must_equal_the_method() {
    let k = key();
    for htm in ["GET", "post"] {
        let mut c = claims();
        c["htm"] = htm.into();
        refused(&proof(&k, header(&k), c));
    }
}

#[test]
fn htu_is_compared_without_query_after_normalisation() {
    let k = key();
    for ok in ["https://as.example:8443/token?x=1", "https://AS.example:8443/token#f", "HTTPS://as.example:8443/token"]
    {
        let mut c = claims();
        c["htu"] = ok.into();
        assert!(check(&proof(&k, header(&k), c)).is_ok(), "{ok}");
    }
    let default_port = verify(
        &proof(&k, header(&k), json!({ "jti": "j", "htm": "POST", "htu": "https://as.example/token", "iat": NOW.0 })),
        "POST",
        "https://as.example:443/token",
        NOW,
        Window::default(),
    );
    assert!(default_port.is_ok(), "the default port is normalised away");
    for bad in
        ["https://as.example:8443/revoke", "http://as.example:8443/token", "https://evil.example:8443/token", "/token"]
    {
        let mut c = claims();
        c["htu"] = bad.into();
        refused(&proof(&k, header(&k), c));
    }
}

#[test]
fn iat_must_be_within_60_seconds_past_and_5_seconds_future() {
    let k = key();
    for (offset, ok) in [(-60, true), (-61, false), (5, true), (6, false)] {
        let mut c = claims();
        c["iat"] = (NOW.0 + offset).into();
        assert_eq!(check(&proof(&k, header(&k), c)).is_ok(), ok, "offset {offset}");
    }
    let mut c = claims();
    c["iat"] = "1700000000".into();
    refused(&proof(&k, header(&k), c));
}

#[test]
fn jti_htm_htu_iat_are_required() {
    let k = key();
    for member in ["jti", "htm", "htu", "iat"] {
        let mut c = claims();
        c.as_object_mut().expect("object").remove(member);
        refused(&proof(&k, header(&k), c));
    }
    let mut c = claims();
    c["jti"] = "".into();
    refused(&proof(&k, header(&k), c));
    let mut c = claims();
    c["jti"] = "j".repeat(257).into();
    refused(&proof(&k, header(&k), c));
}

#[test]
fn malformed_proofs_are_refused_not_a_panic() {
    for p in ["", "a", "a.b", "a.b.c.d", "!!.!!.!!", &"A".repeat(5000)] {
        refused(p);
    }
}

#[test]
fn nonces_verify_until_they_expire_and_only_with_our_keys() {
    let (k, rng) = (MacKey::new(3, b"server key"), crate::secret::Counter::default());
    let n = issue_nonce(&k, NOW, NOW.plus(300), &rng);
    assert_ne!(n, issue_nonce(&k, NOW, NOW.plus(300), &rng), "nonces are unique");
    assert_eq!(
        check_nonce(std::slice::from_ref(&k), &n, NOW.plus(1)),
        Ok(Nonce { issued_at: NOW, expires_at: NOW.plus(300) })
    );
    assert_eq!(check_nonce(std::slice::from_ref(&k), &n, NOW.plus(300)), Err(NonceError::Expired));
    assert_eq!(check_nonce(&[MacKey::new(3, b"other")], &n, NOW), Err(NonceError::Invalid));
    assert_eq!(check_nonce(std::slice::from_ref(&k), "bm9wZQ", NOW), Err(NonceError::Invalid));
    let mut raw = URL_SAFE_NO_PAD.decode(&n).expect("b64");
    raw[10] ^= 1;
    assert_eq!(check_nonce(std::slice::from_ref(&k), &URL_SAFE_NO_PAD.encode(&raw), NOW), Err(NonceError::Invalid));
    raw[10] ^= 1;
    raw[14] ^= 1; // the time of issue is under the MAC too
    assert_eq!(check_nonce(&[k], &URL_SAFE_NO_PAD.encode(raw), NOW), Err(NonceError::Invalid));
}

#[test]
fn the_code_jti_is_the_base64url_sha256_of_the_code() {
    // SHA-256("abc") = ba7816bf...
    assert_eq!(code_jti("abc"), "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0");
}

#[test]
fn replay_keys_differ_per_key_and_per_jti() {
    let p = |jkt: &str, jti: &str| Proof { jkt: jkt.into(), jti: jti.into(), iat: NOW, nonce: None };
    let t = UnixTime(1_700_000_000);
    assert_eq!(replay_key(&p("a", "1")), replay_key(&p("a", "1")));
    assert_ne!(replay_key(&p("a", "1")), replay_key(&p("b", "1")));
    assert_ne!(replay_key(&p("a", "1")), replay_key(&p("a", "2")));
    assert_ne!(nonce_replay_key("n", t), replay_key(&p("a", "1")));
}

#[test]
fn nonce_keys_sort_by_expiry_and_a_jti_has_one_key_whatever_its_iat() {
    let p = |iat: i64| Proof { jkt: "k".into(), jti: "j".into(), iat: UnixTime(iat), nonce: None };
    let (early, late) = (UnixTime(1_700_000_000), UnixTime(1_700_000_001));
    assert_eq!(replay_key(&p(0)), replay_key(&p(1_000)), "another iat is the same jti");
    assert!(nonce_replay_key("z", early) < nonce_replay_key("a", late));
    assert!(nonce_replay_key("z", UnixTime(i64::from(u32::MAX))) < replay_key(&p(0)), "jtis sort after every expiry");
    let window = Window { max_age: 60, max_future: 5 };
    assert_eq!(jti_expiry(UnixTime(1_000), window), UnixTime(1_066), "remembered for the whole window of iats");
}
