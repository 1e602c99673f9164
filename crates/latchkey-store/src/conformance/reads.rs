//! Reads by key made by many requests at once (PostgreSQL answers them together, `postgres/batch.rs`): each gets
//! its own key's row, or none for a key the store lacks.

use super::*;

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
