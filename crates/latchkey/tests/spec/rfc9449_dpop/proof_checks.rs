//! RFC 9449 §4.3: the proof checks, each on an otherwise valid proof for a bound refresh.

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// RFC 9449 §4.3: the proof checks, each on an otherwise valid proof for a bound refresh

#[tokio::test]
async fn more_than_one_dpop_header_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let p1 = b.key.proof(&b.claims());
    let p2 = b.key.proof(&b.claims());
    b.refresh(&[&p1, &p2]).await.assert_refused("invalid_dpop_proof", "two DPoP headers");
    b.refresh(&[&p1, &p1]).await.assert_refused("invalid_dpop_proof", "the same proof twice");
    // Neither was used: one alone is accepted.
    b.accepted(&p1, "the first proof alone").await;
}

#[tokio::test]
async fn a_dpop_header_that_is_not_a_compact_jws_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let good = b.key.proof(&b.claims());
    let parts: Vec<&str> = good.split('.').collect();
    let json_serialization = json!({ "protected": parts[0], "payload": parts[1], "signature": parts[2] }).to_string();
    let padded = format!("{}=.{}.{}", parts[0], parts[1], parts[2]);
    let standard_base64 = good.replace('-', "+").replace('_', "/");
    let not_json = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("not json"), parts[1], parts[2]);
    for (proof, what) in [
        ("", "empty"),
        ("abc", "one part"),
        ("a.b", "two parts"),
        (&*format!("{good}.x"), "four parts"),
        (&*format!("{}.{}", parts[0], parts[1]), "no signature part"),
        (&*json_serialization, "the JWS JSON serialization"),
        (&*padded, "padded base64url"),
        (&*not_json, "a header that is not JSON"),
    ] {
        b.refused(proof, what).await;
    }
    if standard_base64 != good {
        b.refused(&standard_base64, "standard base64 instead of base64url").await;
    }
    b.accepted(&good, "the proof itself").await;
}

#[tokio::test]
async fn the_typ_header_must_be_dpop_jwt() {
    let mut b = Bound::new().await;
    for typ in [json!(null), json!("JWT"), json!("jwt"), json!("at+jwt"), json!("dpop"), json!(1)] {
        let mut h = b.key.header();
        if typ.is_null() {
            h.as_object_mut().expect("object").remove("typ");
        } else {
            h["typ"] = typ.clone();
        }
        b.refused(&b.key.sign(&h, &b.claims()), &format!("typ {typ}")).await;
    }
    b.still_works().await;
}

#[tokio::test]
async fn the_alg_must_be_es256_never_none_symmetric_or_another_asymmetric_one() {
    let mut b = Bound::new().await;
    // Each header names another alg over a genuine ES256 signature: only the alg check can refuse it.
    for alg in [
        json!(null),
        json!("none"),
        json!("HS256"),
        json!("RS256"),
        json!("PS256"),
        json!("ES384"),
        json!("ES512"),
        json!("EdDSA"),
        json!("es256"),
    ] {
        let mut h = b.key.header();
        if alg.is_null() {
            h.as_object_mut().expect("object").remove("alg");
        } else {
            h["alg"] = alg.clone();
        }
        b.refused(&b.key.sign(&h, &b.claims()), &format!("alg {alg}")).await;
    }
    // A real unsecured JWS, and a real HS256 one keyed with the public key's bytes.
    let mut h = b.key.header();
    h["alg"] = "none".into();
    b.refused(&format!("{}.", signing_input(&h, &b.claims())), "an unsecured JWS").await;
    h["alg"] = "HS256".into();
    let input = signing_input(&h, &b.claims());
    let mac_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b.key.jwk.x.as_bytes());
    let tag = ring::hmac::sign(&mac_key, input.as_bytes());
    b.refused(&format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref())), "an HS256 JWS").await;
    b.still_works().await;
}

#[tokio::test]
async fn the_jwk_must_be_a_p256_public_key_without_private_members() {
    let mut b = Bound::new().await;
    let jwk = b.key.jwk();
    let with = |name: &str, value: Value| {
        let mut j = jwk.clone();
        j[name] = value;
        j
    };
    let without = |name: &str| {
        let mut j = jwk.clone();
        j.as_object_mut().expect("object").remove(name);
        j
    };
    let short_x = URL_SAFE_NO_PAD.encode([7u8; 31]);
    let cases = [
        (json!(null), "no jwk"),
        (with("d", json!(latchkey_core::secret::random_b64(32, &OsRandom))), "a private d member"),
        (with("kty", json!("RSA")), "kty RSA"),
        (with("kty", json!("OKP")), "kty OKP"),
        (with("crv", json!("P-384")), "crv P-384"),
        (with("crv", json!("secp256k1")), "crv secp256k1"),
        (without("crv"), "no crv"),
        (without("x"), "no x"),
        (without("y"), "no y"),
        (with("x", json!(short_x)), "a 31-byte x"),
        (json!("a string"), "a jwk that is not an object"),
        (json!({ "kty": "oct", "k": latchkey_core::secret::random_b64(32, &OsRandom) }), "a symmetric key"),
    ];
    for (jwk, what) in cases {
        let mut h = b.key.header();
        if jwk.is_null() {
            h.as_object_mut().expect("object").remove("jwk");
        } else {
            h["jwk"] = jwk;
        }
        b.refused(&b.key.sign(&h, &b.claims()), what).await;
    }
    // Members beyond kty, crv, x and y (kid, use, alg) are allowed: the key, and its thumbprint, are the same.
    let mut h = b.key.header();
    h["jwk"] = with("kid", json!("my-key"));
    h["jwk"]["use"] = json!("sig");
    h["jwk"]["alg"] = json!("ES256");
    b.accepted(&b.key.sign(&h, &b.claims()), "a jwk with kid, use and alg").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_crit_header_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let mut h = b.key.header();
    h["crit"] = json!(["exp"]);
    h["exp"] = json!(now() + 60);
    b.refused(&b.key.sign(&h, &b.claims()), "crit [exp]").await;
    let mut h = b.key.header();
    h["crit"] = json!([]);
    b.refused(&b.key.sign(&h, &b.claims()), "an empty crit").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_der_encoded_signature_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let der = b.key.der_proof(&b.claims());
    b.refused(&der, "an ASN.1 DER signature").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_signature_that_does_not_verify_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let good = b.key.proof(&b.claims());
    let parts: Vec<&str> = good.split('.').collect();
    // The payload changed after signing.
    let mut changed = b.claims();
    changed["jti"] = fresh_jti().into();
    let tampered = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(changed.to_string()), parts[2]);
    // A bit flipped in the signature.
    let mut sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature");
    sig[10] ^= 0x01;
    let flipped = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(&sig));
    // All zeros; and the signature of another proof.
    let zeros = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode([0u8; 64]));
    let other = b.key.proof(&b.claims());
    let swapped = format!("{}.{}.{}", parts[0], parts[1], other.split('.').nth(2).expect("signature"));
    // The same header and claims, re-encoded with other whitespace: the signature covers the exact bytes sent.
    let spaced_header = format!("{} ", serde_json::to_string(&b.key.header()).expect("json"));
    let respaced = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode(spaced_header), parts[1], parts[2]);
    for (proof, what) in [
        (&tampered, "a tampered payload"),
        (&flipped, "a flipped signature bit"),
        (&zeros, "a zero signature"),
        (&swapped, "another proof's signature"),
        (&respaced, "a re-encoded header"),
    ] {
        b.refused(proof, what).await;
    }
    b.accepted(&good, "the untouched proof").await;
}

#[tokio::test]
async fn htm_must_be_post() {
    let mut b = Bound::new().await;
    for htm in ["GET", "post", "PUT", "POST ", ""] {
        let mut c = b.claims();
        c["htm"] = htm.into();
        b.refused(&b.key.proof(&c), &format!("htm {htm:?}")).await;
    }
    b.still_works().await;
}

#[tokio::test]
async fn htu_must_be_the_token_endpoint_ignoring_query_and_fragment() {
    let mut b = Bound::new().await;
    let port = b.server.running.addr.port();
    let base = b.server.base.clone();
    for htu in [
        format!("{base}/revoke"),
        format!("{base}/o/oauth2/v2/auth"),
        format!("{base}/token/"),
        format!("{base}/tokens"),
        format!("{base}/"),
        format!("http://127.0.0.1:{port}/token"),
        format!("https://localhost:{port}/token"),
        format!("https://127.0.0.1:{}/token", port.wrapping_add(1)),
        format!("https://127.0.0.2:{port}/token"),
        format!("https://127.0.0.1:{port}/%2Ftoken"),
        format!("https://127.0.0.1:{port}/tok%20en"),
        "/token".to_string(),
        "token".to_string(),
        String::new(),
    ] {
        let mut c = b.claims();
        c["htu"] = htu.clone().into();
        b.refused(&b.key.proof(&c), &format!("htu {htu:?}")).await;
    }
    for htu in [
        format!("{base}/token?x"),
        format!("{base}/token?client_id=abc&x=1"),
        format!("{base}/token#fragment"),
        format!("HTTPS://127.0.0.1:{port}/token"),
        format!("https://127.0.0.1:{port}/./token"),
        // RFC 3986 §6.2.2.2: percent-encoded unreserved characters are decoded before comparing.
        format!("https://127.0.0.1:{port}/%74oken"),
        format!("https://127.0.0.1:{port}/%74%6F%6b%65%6E"),
    ] {
        let mut c = b.claims();
        c["htu"] = htu.clone().into();
        b.accepted(&b.key.proof(&c), &format!("htu {htu:?}")).await;
    }
}

#[tokio::test]
async fn htu_is_the_configured_public_token_url_not_the_listener_address() {
    let (server, app) = setup_with(|c| c.token_url = Some("https://tokens.latchkey.test".into())).await;
    // An unbound refresh token: its proofs need no nonce but get every check.
    let mut b = Bound {
        key: Key::new(),
        nonce: String::new(),
        tokens: server.tokens(&app, ALICE, &[READONLY]).await,
        server,
        app,
    };
    let mut c = claims(&b.server, &fresh_jti(), None);
    b.refused(&b.key.proof(&c), "the listener's address").await;
    c["htu"] = "https://tokens.latchkey.test/token".into();
    b.accepted(&b.key.proof(&c), "the configured token URL").await;
}

#[tokio::test]
async fn iat_must_lie_within_60_seconds_past_and_5_seconds_future() {
    let mut b = Bound::new().await;
    for (offset, what) in [(-61, "61 s old"), (-3600, "an hour old"), (10, "10 s ahead"), (86_400, "a day ahead")] {
        let mut c = b.claims();
        c["iat"] = (now() + offset).into();
        b.refused(&b.key.proof(&c), what).await;
    }
    for (iat, what) in [(json!(now().to_string()), "iat as a string"), (json!(0), "iat 0")] {
        let mut c = b.claims();
        c["iat"] = iat;
        b.refused(&b.key.proof(&c), what).await;
    }
    for (offset, what) in [(-45, "45 s old"), (3, "3 s ahead")] {
        let mut c = b.claims();
        c["iat"] = (now() + offset).into();
        b.accepted(&b.key.proof(&c), what).await;
    }
}

#[tokio::test]
async fn a_fractional_iat_is_a_valid_numeric_date() {
    // RFC 9449 §4.2 makes iat an RFC 7519 NumericDate, which "can represent non-integer values" (what a client
    // using a floating-point clock, such as `time.time()` or `Date.now() / 1000`, sends).
    let mut b = Bound::new().await;
    let mut c = b.claims();
    c["iat"] = json!(now() as f64 - 0.25);
    b.accepted(&b.key.proof(&c), "iat with a fraction").await;
    let mut c = b.claims();
    c["iat"] = json!(now() as f64 - 61.5);
    b.refused(&b.key.proof(&c), "a fractional iat outside the window").await;
    b.still_works().await;
}

#[tokio::test]
async fn the_iat_window_follows_the_configuration() {
    let (server, app) = setup_with(|c| c.dpop_max_age = 10).await;
    let mut b = Bound::on(server, app).await;
    let mut c = b.claims();
    c["iat"] = (now() - 30).into();
    b.refused(&b.key.proof(&c), "30 s old, with a 10 s window").await;
    b.still_works().await;
}

#[tokio::test]
async fn jti_htm_htu_and_iat_are_required() {
    let mut b = Bound::new().await;
    for claim in ["jti", "htm", "htu", "iat"] {
        let mut c = b.claims();
        c.as_object_mut().expect("object").remove(claim);
        b.refused(&b.key.proof(&c), &format!("no {claim}")).await;
    }
    for (claim, value, what) in [
        ("jti", json!(""), "an empty jti"),
        ("jti", json!(12345), "a numeric jti"),
        ("jti", json!("x".repeat(1000)), "a 1000-character jti"),
        ("htm", json!(["POST"]), "htm as an array"),
        ("htu", json!({ "url": "x" }), "htu as an object"),
    ] {
        let mut c = b.claims();
        c[claim] = value;
        b.refused(&b.key.proof(&c), what).await;
    }
    b.still_works().await;
}
