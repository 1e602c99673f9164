//! What many requests ask at once: each read by key gets its own key's row, or none for a key the store lacks
//! (PostgreSQL answers such reads together, `postgres/batch.rs`); each DPoP proof's values are recorded once, all
//! of a proof's or none.

use super::*;
use latchkey_core::dpop::{untimed_key, Admission};

/// Reads at once: every grant (some twice), each grant with its channel, each code with its user, and unknown
/// keys of each; every answer is the one for its key.
pub(super) async fn concurrent_reads_by_key_each_get_their_own_row(store: Arc<dyn Store>) {
    let (client_id, _) = fixture(&*store).await;
    let limits = GrantLimits { per_client_user: 100, per_user: 100 };
    let mut grants = Vec::new();
    let mut codes = Vec::new();
    for _ in 0..6 {
        let user_id = another_user(&*store).await;
        grants.push(issue(&*store, &client_id, &user_id, limits).await);
        let c = code(&client_id, &user_id);
        store.insert_code(&c).await.expect("code");
        codes.push(c);
    }
    let unknown = GrantId::generate(&TestRandom);
    let mut reads = Vec::new();
    for round in 0..2 {
        for g in &grants {
            let (store, id, user) = (store.clone(), g.id, g.user_id.clone());
            reads.push(tokio::spawn(async move {
                let state = store.grant(&id).await.expect("grant").expect("kept");
                assert_eq!((&state.grant.id, &state.grant.user_id), (&id, &user), "round {round}");
                let (state, _) = store.grant_with_channel(&id).await.expect("with channel").expect("kept");
                assert_eq!(state.grant.id, id);
            }));
        }
        for c in &codes {
            let (store, c) = (store.clone(), c.clone());
            reads.push(tokio::spawn(async move {
                let (code, user) = store.code_with_user(&c.code_hash).await.expect("code").expect("kept");
                assert_eq!((&code.code_hash, &code.user_id), (&c.code_hash, &c.user_id));
                assert_eq!(user.expect("its user").id, c.user_id);
            }));
        }
        let store = store.clone();
        reads.push(tokio::spawn(async move {
            assert!(store.grant(&unknown).await.expect("grant").is_none());
            assert!(store.grant_with_channel(&unknown).await.expect("grant").is_none());
            assert!(store.code_with_user(b"no such code").await.expect("code").is_none());
        }));
    }
    for read in reads {
        read.await.expect("each read's answer is its own");
    }
}

/// Proofs recorded at once, eight sharing a `jti` (each with a nonce of its own) and sixteen with their own: one of
/// the eight is recorded and the rest refused, with nothing of theirs recorded; the sixteen are all recorded.
pub(super) async fn concurrent_proofs_record_each_value_once(store: Arc<dyn Store>) {
    // The nonce was issued after the moment the records are complete from (a fresh store's first recording).
    let admission = Admission { iat: T0, nonce_issued_at: Some(T0.plus(1)), max_future: 5 };
    let value = |name: String| (untimed_key(&format!("{name}-{}", random_b64(9))), T0.plus(300));
    let record = |values: Vec<(Vec<u8>, UnixTime)>| {
        let store = store.clone();
        tokio::spawn(async move { store.record_proof(&values, &admission, T0).await.expect("recorded").replayed })
    };
    assert_eq!(record(vec![value("first".into())]).await.expect("join"), None);
    let shared = value("shared jti".into());
    let nonces: Vec<_> = (0..8).map(|i| value(format!("nonce {i}"))).collect();
    // Those with values of their own first, so that the eight sharing a jti are recorded while others are.
    let own: Vec<_> = (0..16).map(|i| record(vec![value(format!("jti {i}"))])).collect();
    let sharing: Vec<_> = nonces.iter().map(|n| record(vec![shared.clone(), n.clone()])).collect();
    let mut winners = Vec::new();
    for (nonce, task) in nonces.iter().zip(sharing) {
        match task.await.expect("join") {
            None => winners.push(nonce.clone()),
            Some(replayed) => assert_eq!(replayed, 0, "the shared jti is the value found recorded"),
        }
    }
    assert_eq!(winners.len(), 1, "one proof of those sharing a jti is recorded");
    for task in own {
        assert_eq!(task.await.expect("join"), None, "a proof with values of its own is recorded");
    }
    for nonce in &nonces {
        let again = record(vec![value("new jti".into()), nonce.clone()]).await.expect("join");
        let expected = if winners.contains(nonce) { Some(1) } else { None };
        assert_eq!(again, expected, "a refused proof's nonce was not recorded; the recorded one's was");
    }
}
