use super::KeyRing;
use crate::clock::OsRandom;
use crate::secrets::{SecretSource, SystemSecrets};
use latchkey_core::time::UnixTime;
use latchkey_store::sqlite::SqliteStore;
use std::sync::Arc;

const SECRET: &str = "a test system secret of at least 32 characters";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_starting_together_on_an_empty_store_sign_with_the_same_keys() {
    for _ in 0..10 {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&format!("sqlite://{}", dir.path().join("k.db").display())).await.expect("open");
        let now = UnixTime(1_700_000_000);
        let source = || SecretSource::Listed(Arc::new(SystemSecrets::parse([SECRET], "test").expect("secret")));
        let (a, b) = tokio::join!(KeyRing::load(&store, source(), now), KeyRing::load(&store, source(), now));
        let (a, b) = (a.expect("load").get(), b.expect("load").get());
        assert_eq!(a.mac_signer().id, b.mac_signer().id, "one access-token key signs");
        assert_eq!(a.id_token_signer().kid(), b.id_token_signer().kid(), "one id_token key signs");
    }
}

fn listed(secrets: &[&str]) -> SecretSource {
    SecretSource::Listed(Arc::new(SystemSecrets::parse(secrets.iter().copied(), "test").expect("secrets")))
}

async fn sqlite(dir: &tempfile::TempDir) -> SqliteStore {
    SqliteStore::open(&format!("sqlite://{}", dir.path().join("k.db").display())).await.expect("open")
}

#[tokio::test]
async fn keys_an_earlier_version_stored_in_the_clear_are_encrypted_at_start_and_keep_verifying() {
    use latchkey_core::access_token::MacKey;
    use latchkey_core::jws::SigningKey;
    use latchkey_store::{KeyKind, Keys};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(&dir).await;
    let now = UnixTime(1_700_000_000);
    let mac = latchkey_core::secret::random_bytes(32, &OsRandom);
    let pkcs8 = SigningKey::generate_pkcs8(&OsRandom).expect("key");
    let mac_id = store.add_key(KeyKind::Mac, &mac, now).await.expect("add");
    store.add_key(KeyKind::IdToken, &pkcs8, now).await.expect("add");
    let ring = KeyRing::load(&store, listed(&[SECRET]), now).await.expect("load");
    let set = ring.get();
    let tag = MacKey::new(mac_id, &mac).tag(b"signed before the upgrade");
    assert!(set.mac_signer().verify_tag(b"signed before the upgrade", &tag), "the same MAC key signs");
    assert_eq!(set.id_token_signer().kid(), SigningKey::from_pkcs8(&pkcs8, &OsRandom).expect("key").kid());
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        for k in store.keys(kind).await.expect("keys") {
            assert!(crate::secrets::sealed_by(&k.secret).expect("header").is_some(), "key {} is encrypted", k.id);
            assert!(k.secret != mac && k.secret != pkcs8);
        }
    }
}

#[tokio::test]
async fn reencryption_moves_every_key_under_the_first_secret() {
    use super::{reencrypt, Scope};
    use latchkey_store::{KeyKind, Keys};
    const NEW: &str = "the new system secret, also long enough for a key";
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(&dir).await;
    let now = UnixTime(1_700_000_000);
    KeyRing::load(&store, listed(&[SECRET]), now).await.expect("load");
    assert!(KeyRing::load(&store, listed(&[NEW]), now).await.is_err(), "the new secret alone cannot read the keys");
    let both = listed(&[NEW, SECRET]).load().expect("secrets");
    let done = reencrypt(&store, &both, Scope::NotCurrent).await.expect("reencrypt");
    assert_eq!((done.keys, done.reencrypted), (2, 2));
    let again = reencrypt(&store, &both, Scope::NotCurrent).await.expect("reencrypt");
    assert_eq!(again.reencrypted, 0, "nothing left to do");
    let ring = KeyRing::load(&store, listed(&[NEW]), now).await.expect("the new secret alone reads them now");
    ring.reload(&store, now).await.expect("reload");
    let stored = store.keys(KeyKind::Mac).await.expect("keys");
    assert!(stored.iter().all(|k| crate::secrets::sealed_by(&k.secret).expect("header") == Some(both.current())));
}

#[tokio::test]
async fn the_default_secret_file_is_made_only_while_no_key_is_encrypted() {
    use super::secrets_for;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(&dir).await;
    let source = SecretSource::from_settings(None, None, dir.path()).expect("source");
    let made = secrets_for(&store, &source).await.expect("made on first use").current();
    KeyRing::load(&store, SecretSource::from_settings(None, None, dir.path()).expect("source"), UnixTime(1))
        .await
        .expect("load");
    assert_eq!(secrets_for(&store, &source).await.expect("read").current(), made);
    let file = source.default_file().expect("default file").path().to_path_buf();
    std::fs::remove_file(&file).expect("lose the file");
    let e = secrets_for(&store, &source).await.expect_err("a new secret could not read the keys");
    assert!(e.to_string().contains("restore it from a backup"), "{e}");
    assert!(!file.exists(), "no new secret was made");
}

#[tokio::test]
async fn reencryption_moves_the_push_authorizations_too() {
    use super::{check_readable, reencrypt, Scope};
    use crate::{client_create, project_create, Actor, NewClient};
    use latchkey_core::events::stream::PUSH;
    use latchkey_store::{KeyKind, StreamRecord, Streams};
    const NEW: &str = "the new system secret, also long enough for a key";
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(&dir).await;
    let now = UnixTime(1_700_000_000);
    let old = listed(&[SECRET]).load().expect("secrets");
    KeyRing::load(&store, listed(&[SECRET]), now).await.expect("load");
    let project = project_create(&store, &Actor::Operator, "p", None, now).await.expect("project").project_id;
    let new_client = NewClient {
        project_id: project,
        client_type: latchkey_core::client::ClientType::Desktop,
        name: "app".into(),
        redirect_uris: vec![],
        details: Default::default(),
    };
    let client = client_create(&store, &Actor::Operator, new_client, now).await.expect("client").client_id;
    let sealed = old.seal(KeyKind::PushAuthorization, b"Bearer receiver-secret").expect("seal");
    let stream = StreamRecord {
        method: PUSH.into(),
        endpoint_url: Some("https://receiver.example/e".into()),
        push_auth: Some(sealed),
        ..StreamRecord::new("s1".into(), client, now)
    };
    assert!(store.create_stream(&stream).await.expect("stream"));
    let both = listed(&[NEW, SECRET]).load().expect("secrets");
    let done = reencrypt(&store, &both, Scope::NotCurrent).await.expect("reencrypt");
    assert_eq!((done.keys, done.reencrypted), (2, 3), "two keys and one push authorization");
    let new_only = listed(&[NEW]).load().expect("secrets");
    assert_eq!(check_readable(&store, &new_only).await.expect("readable"), 3);
    let stored = store.stream("s1").await.expect("get").expect("stream").push_auth.expect("auth");
    let opened = new_only.open(KeyKind::PushAuthorization, &stored).expect("open under the new secret");
    assert_eq!(opened.material.expose(), b"Bearer receiver-secret");
    assert!(old.open(KeyKind::PushAuthorization, &stored).is_err(), "no longer under the old one");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scheduled_rotation_replaces_each_key_when_due_and_the_old_mac_verifies_for_the_grace_period() {
    use super::{rotate_due, RETIRED_VERIFIES_FOR};
    use latchkey_store::KeyKind;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite(&dir).await;
    let start = UnixTime(1_700_000_000);
    let ring = KeyRing::load(&store, listed(&[SECRET]), start).await.expect("load");
    let before = ring.get();
    let csrf = before.mac_signer().tag(b"a form rendered before the rotation");
    let secrets = ring.secrets().expect("secrets");
    let day = 86_400;
    assert!(rotate_due(&store, &secrets, 90 * day, UnixTime(start.0 + 89 * day)).await.expect("early").is_empty());
    // Two instances at the same moment: each adds a key; the newest alone signs, whatever the order.
    let due = UnixTime(start.0 + 90 * day);
    let (a, b) = tokio::join!(rotate_due(&store, &secrets, 90 * day, due), rotate_due(&store, &secrets, 90 * day, due));
    let made: Vec<_> = a.expect("rotate").into_iter().chain(b.expect("rotate")).collect();
    assert!(made.iter().any(|(k, _)| *k == KeyKind::Mac) && made.iter().any(|(k, _)| *k == KeyKind::IdToken));
    assert!(!made.iter().any(|(k, _)| *k == KeyKind::Event), "no event key before the first stream");
    ring.reload(&store, due).await.expect("reload");
    let after = ring.get();
    assert_ne!(after.mac_signer().id, before.mac_signer().id, "a new MAC key signs");
    assert_ne!(after.id_token_signer().kid(), before.id_token_signer().kid(), "a new id_token key signs");
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        let live = latchkey_store::Keys::keys(&store, kind)
            .await
            .expect("keys")
            .iter()
            .filter(|k| k.retired_at.is_none())
            .count();
        assert_eq!(live, 1, "{kind:?}: one live key");
    }
    let verifies =
        |set: &super::KeySet| set.mac.iter().any(|k| k.verify_tag(b"a form rendered before the rotation", &csrf));
    assert!(verifies(&after), "the old MAC key still verifies: nobody is signed out, no open form breaks");
    assert!(
        after.id_token.iter().any(|k| k.kid() == before.id_token_signer().kid()),
        "the old id_token key is published"
    );
    ring.reload(&store, UnixTime(due.0 + RETIRED_VERIFIES_FOR)).await.expect("reload");
    let later = ring.get();
    assert!(!verifies(&later), "after the grace period the old MAC key verifies nothing");
    assert!(!later.id_token.iter().any(|k| k.kid() == before.id_token_signer().kid()), "nor is it published");
}
