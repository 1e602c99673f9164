//! Client secrets: stored as their hashes, changed only while they are the list read.

use super::*;
use latchkey_core::client::ClientSecret;

/// The secret of the suite's client ([`fixture`]).
pub(super) fn initial_secret() -> ClientSecret {
    ClientSecret {
        id: "cs_initial".into(),
        hash: vec![7; 32],
        hint: Some("abcd".into()),
        created_at: T0,
        disabled_at: None,
    }
}

/// A client's secrets are kept in order, and a change made from a list that changed meanwhile is refused.
pub(super) async fn client_secrets_change_only_while_unchanged(store: &dyn Store) {
    let (client_id, _) = fixture(store).await;
    let before = store.client(&client_id).await.expect("read").expect("client").secrets;
    assert_eq!(
        before.iter().map(|s| (s.id.as_str(), s.hint.as_deref())).collect::<Vec<_>>(),
        [("cs_initial", Some("abcd"))]
    );
    let second = ClientSecret {
        id: "cs_second".into(),
        hash: vec![8; 32],
        hint: None,
        created_at: T0.plus(1),
        disabled_at: None,
    };
    let two = [before.clone(), vec![second.clone()]].concat();
    assert!(store.set_client_secrets(&client_id, &before, &two).await.expect("add"));
    assert_eq!(store.client(&client_id).await.expect("read").expect("client").secrets, two, "read back as written");
    assert!(
        !store.set_client_secrets(&client_id, &before, std::slice::from_ref(&second)).await.expect("stale"),
        "a stale list"
    );
    let mut disabled = two.clone();
    disabled[0].disabled_at = Some(T0.plus(2));
    assert!(store.set_client_secrets(&client_id, &two, &disabled).await.expect("disable"));
    assert_eq!(store.client(&client_id).await.expect("read").expect("client").secrets[0].disabled_at, Some(T0.plus(2)));
    assert!(store.set_client_secrets(&client_id, &disabled, std::slice::from_ref(&second)).await.expect("delete"));
    assert_eq!(store.client(&client_id).await.expect("read").expect("client").secrets, vec![second.clone()]);
    assert!(!store.set_client_secrets("no-such-client", &[], &[second]).await.expect("unknown"));
}
