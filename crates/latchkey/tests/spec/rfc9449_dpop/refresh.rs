//! DPoP at the refresh (`docs/decisions.md`, "DPoP"): a bound refresh token needs a proof by its key with a nonce of
//! this server, single-use proofs and nonces, and the DPoP-Nonce on every answer.

use super::*;

// ---------------------------------------------------------------------------------------------------------------
// Refresh

#[tokio::test]
async fn a_refresh_with_a_bound_token_and_no_proof_fails() {
    let b = Bound::new().await;
    let a = post(&b.server, &refresh_form(&b.app, b.rt()), &[]).await;
    assert_eq!(a.error(), (400, "invalid_dpop_proof"), "{}", a.body);
    assert!(a.nonce.is_none(), "no DPoP header, no DPoP-Nonce");
}

#[tokio::test]
async fn a_refresh_with_a_bound_token_and_a_proof_by_another_key_is_invalid_grant() {
    let mut b = Bound::new().await;
    let other = Key::new();
    b.refresh(&[&other.proof(&b.claims())]).await.assert_refused("invalid_grant", "another key");
    // A jwk naming the bound key but signed by another is a bad signature, not a key match.
    let forged = other.sign(&b.key.header(), &b.claims());
    b.refused(&forged, "the bound key's jwk, another key's signature").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_bound_refresh_without_a_nonce_gets_use_dpop_nonce_and_the_retry_with_it_succeeds() {
    let b = Bound::new().await;
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await;
    a.assert_refused("use_dpop_nonce", "no nonce on refresh");
    assert_ne!(a.nonce(), b.nonce, "a fresh nonce");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_bound_refresh_with_a_forged_nonce_gets_use_dpop_nonce() {
    let mut b = Bound::new().await;
    let keys = b.server.running.state.keys.get();
    let signer = keys.mac_signer();
    let foreign = issue_nonce(
        &MacKey::new(signer.id, b"not the key of this server"),
        UnixTime(now() - 400),
        UnixTime(now() + 300),
        &OsRandom,
    );
    let unknown_key_id = issue_nonce(
        &MacKey::new(signer.id.wrapping_add(1000), b"x"),
        UnixTime(now() - 400),
        UnixTime(now() + 300),
        &OsRandom,
    );
    let mut tampered = URL_SAFE_NO_PAD.decode(&b.nonce).expect("base64url nonce");
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let tampered = URL_SAFE_NO_PAD.encode(tampered);
    let random = latchkey_core::secret::random_b64(56, &OsRandom);
    for (nonce, what) in [
        (foreign.as_str(), "MAC'd by another key"),
        (unknown_key_id.as_str(), "an unknown key id"),
        (tampered.as_str(), "a tampered nonce"),
        (random.as_str(), "random bytes of the right length"),
        ("", "an empty nonce"),
        ("abc", "a short string"),
    ] {
        let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(nonce)))]).await;
        a.assert_refused("use_dpop_nonce", what);
    }
    b.still_works().await;
}

#[tokio::test]
async fn a_bound_refresh_with_an_expired_nonce_gets_use_dpop_nonce() {
    let b = Bound::new().await;
    let expired = issue_nonce(
        b.server.running.state.keys.get().mac_signer(),
        UnixTime(now() - 400),
        UnixTime(now() - 1),
        &OsRandom,
    );
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&expired)))]).await;
    a.assert_refused("use_dpop_nonce", "a genuine nonce past its expiry");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_nonce_expires_after_the_configured_lifetime() {
    let (server, app) = setup_with(|c| c.dpop_nonce_lifetime = 2).await;
    let b = Bound::on(server, app).await;
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let a = b.refresh(&[&b.key.proof(&b.claims())]).await;
    a.assert_refused("use_dpop_nonce", "the nonce of the exchange, 3 s later");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "a nonce within its lifetime: {}", ok.body);
}

#[tokio::test]
async fn a_used_nonce_with_a_new_jti_gets_use_dpop_nonce() {
    let mut b = Bound::new().await;
    let used = b.nonce.clone();
    b.still_works().await;
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&used)))]).await;
    a.assert_refused("use_dpop_nonce", "the nonce again, with a new jti");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "the retry with the new nonce: {}", ok.body);
}

#[tokio::test]
async fn a_proof_is_single_use_so_replaying_it_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let jti = fresh_jti();
    let proof = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
    b.accepted(&proof, "the first use").await;
    b.refused(&proof, "the same proof again").await;
    // A new proof, with a fresh nonce, but the same jti: still a replay.
    let same_jti = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
    b.refused(&same_jti, "a new proof reusing the jti").await;
    b.still_works().await;
}

#[tokio::test]
async fn an_unbound_refresh_token_accepts_a_proof_without_a_nonce_once_and_stays_unbound() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let key = Key::new();
    let proof = key.proof(&claims(&server, &fresh_jti(), None));
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&proof]).await;
    assert_eq!(a.tokens().token_type, "Bearer");
    assert!(a.nonce.is_some(), "a DPoP-Nonce on the success");
    let again = post(&server, &refresh_form(&app, rt(&t)), &[&proof]).await;
    again.assert_refused("invalid_dpop_proof", "the proof's jti is single use here too");
    // The proof did not bind the token: no proof, or another key, still works.
    let a = post(&server, &refresh_form(&app, rt(&t)), &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a =
        post(&server, &refresh_form(&app, rt(&t)), &[&Key::new().proof(&claims(&server, &fresh_jti(), None))]).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn a_jti_is_remembered_per_key() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let (k1, k2) = (Key::new(), Key::new());
    let jti = fresh_jti();
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k1.proof(&claims(&server, &jti, None))]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k2.proof(&claims(&server, &jti, None))]).await;
    assert_eq!(a.status, 200, "the same jti from another key is another proof: {}", a.body);
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k1.proof(&claims(&server, &jti, None))]).await;
    a.assert_refused("invalid_dpop_proof", "the jti again from the first key");
}

#[tokio::test]
async fn of_two_concurrent_requests_with_the_same_jti_exactly_one_succeeds() {
    let mut b = Bound::new().await;
    for round in 0..3 {
        // Two distinct proofs (each with its own valid nonce) that share a jti.
        let jti = fresh_jti();
        let second_nonce = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await.nonce();
        let p1 = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
        let p2 = b.key.proof(&claims(&b.server, &jti, Some(&second_nonce)));
        let (h1, h2) = ([p1.as_str()], [p2.as_str()]);
        let (a1, a2) = tokio::join!(b.refresh(&h1), b.refresh(&h2));
        let (ok, refused) = match (a1.status, a2.status) {
            (200, _) => (a1, a2),
            (_, 200) => (a2, a1),
            _ => panic!("round {round}: one of the two must succeed: {a1:?} {a2:?}"),
        };
        refused.assert_refused("invalid_dpop_proof", &format!("round {round}: the other one"));
        b.nonce = ok.nonce();
        // The very same proof twice at once.
        let p = b.key.proof(&b.claims());
        let h = [p.as_str()];
        let (a1, a2) = tokio::join!(b.refresh(&h), b.refresh(&h));
        let statuses = [a1.status, a2.status];
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "round {round}: {a1:?} {a2:?}");
        let (ok, refused) = if a1.status == 200 { (a1, a2) } else { (a2, a1) };
        refused.assert_refused("invalid_dpop_proof", &format!("round {round}: the replayed proof"));
        b.nonce = ok.nonce();
    }
}

#[tokio::test]
async fn a_dpop_client_exchanges_the_code_then_refreshes_twice_with_the_nonce_of_each_previous_answer() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let exchange =
        post(&server, &exchange_form(&app, &code, &pkce), &[&key.proof(&claims(&server, &code_jti(&code), None))])
            .await;
    let t = exchange.tokens();
    let mut nonce = exchange.nonce();
    let mut seen = HashSet::from([nonce.clone()]);
    let mut access_tokens = vec![t.access_token.clone()];
    for n in 1..=2 {
        let a = post(&server, &refresh_form(&app, rt(&t)), &[&key.proof(&claims(&server, &fresh_jti(), Some(&nonce)))])
            .await;
        let r = a.tokens();
        assert_eq!(r.token_type, "Bearer", "refresh {n}");
        assert_eq!(r.scope, READONLY, "refresh {n}");
        assert!(r.refresh_token.is_none(), "refresh {n}");
        nonce = a.nonce();
        assert!(seen.insert(nonce.clone()), "refresh {n}: a fresh nonce");
        access_tokens.push(r.access_token);
    }
    for (i, token) in access_tokens.iter().enumerate() {
        assert_eq!(channels(&server, token).await.status(), 200, "access token {i}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// DPoP-Nonce on every answer

#[tokio::test]
async fn every_answer_to_a_request_with_a_dpop_header_carries_a_fresh_nonce() {
    let mut b = Bound::new().await;
    let mut seen = HashSet::from([b.nonce.clone()]);
    let good = b.key.proof(&b.claims());
    let answers = [
        b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await, // use_dpop_nonce
        b.refresh(&["not-a-proof"]).await,                                        // invalid_dpop_proof
        post(&b.server, &refresh_form(&b.app, "lkr_nosuchtoken"), &[&good]).await, // invalid_grant
        post(&b.server, &[("grant_type", "password"), ("client_id", &b.app.client_id)], &[&good]).await,
        post(
            &b.server,
            &[("grant_type", "refresh_token"), ("client_id", "nosuchclient"), ("refresh_token", "x")],
            &[&good],
        )
        .await,
        b.refresh(&[&good]).await, // success
    ];
    for a in &answers {
        assert!(seen.insert(a.nonce()), "a fresh nonce on {} {}", a.status, a.body);
    }
    assert_eq!(answers[5].status, 200, "{}", answers[5].body);
    b.nonce = answers[5].nonce();
    b.still_works().await;
    // Without a DPoP header, no nonce.
    let plain = b.server.token(&refresh_form(&b.app, "lkr_nosuchtoken")).await;
    assert!(plain.headers().get("dpop-nonce").is_none());
}
