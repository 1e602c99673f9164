//! Apps that register themselves: one project at a time collects them, their registration is stored as it came,
//! their refresh tokens rotate, and they are deleted after their own days without use.

use super::{fixture, issue, T0};
use crate::prelude::*;
use crate::{CachedDocument, GrantLimits, ProjectSetting, StoreError};
use latchkey_core::client::{Client, Registration, RegistrationKind};
use latchkey_core::secret;

/// Open registration is held by one project at most; a self-registered client keeps its registration, rotates its
/// refresh tokens without the project's switch, and goes unused after its own cutoff while a console-made one
/// stays.
pub(super) async fn one_project_collects_self_registered_clients_which_rotate_and_expire_on_their_own_days(
    store: &dyn Store,
) {
    let (console_made, user) = fixture(store).await;
    let project = store.client(&console_made).await.expect("get").expect("client").project_id;
    let (other_client, _) = fixture(store).await;
    let other = store.client(&other_client).await.expect("get").expect("client").project_id;
    assert_eq!(store.open_registration_project().await.expect("read"), None, "closed by default");
    let open = ProjectSetting::OpenRegistration;
    assert!(store.set_project_setting(&project, open, true).await.expect("open"));
    assert_eq!(store.open_registration_project().await.expect("read").map(|p| p.id), Some(project.clone()));
    let second = store.set_project_setting(&other, open, true).await;
    assert!(matches!(second, Err(StoreError::Conflict(_))), "one project at a time: {second:?}");
    assert!(!store.project(&other).await.expect("get").expect("p").open_registration);

    let registration = Registration {
        kind: RegistrationKind::Dynamic,
        token_hash: Some(secret::hash("lkreg_token")),
        client_uri: Some("https://app.example/".into()),
        logo_uri: None,
    };
    let base = store.client(&console_made).await.expect("get").expect("client");
    let registered = Client {
        client_id: format!("{console_made}-registered"),
        secrets: vec![],
        registration: Some(registration.clone()),
        ..base
    };
    store.create_client(&registered).await.expect("create");
    let read = store.client(&registered.client_id).await.expect("get").expect("stored");
    assert_eq!(read.registration.as_ref(), Some(&registration), "kept as it came");
    let changed = Registration { client_uri: Some("https://app.example/new".into()), ..registration };
    let edit = Client { name: "Renamed".into(), registration: Some(changed.clone()), ..read };
    assert!(store.update_client(&edit).await.expect("update"));
    assert_eq!(store.client(&edit.client_id).await.expect("get").expect("c").registration, Some(changed));

    let of_registered = issue(store, &registered.client_id, &user, GrantLimits::default()).await;
    let of_console = issue(store, &console_made, &user, GrantLimits::default()).await;
    let rotates = |id, client: &str| {
        let client = client.to_owned();
        async move {
            let client = store.client(&client).await.expect("get").expect("client");
            store.grant(&id).await.expect("get").expect("grant").rotates(&client)
        }
    };
    assert!(rotates(of_registered.id, &registered.client_id).await, "a self-registered client's tokens rotate");
    assert!(!rotates(of_console.id, &console_made).await, "not the console's, without the project's switch");

    let metadata = latchkey_core::registration::parse(br#"{"redirect_uris":["http://127.0.0.1/cb"]}"#).expect("ok");
    let ids = ("https://app.example/client.json".to_owned(), latchkey_core::registration::DOCUMENTS_PROJECT.to_owned());
    let documented = latchkey_core::registration::client(ids, metadata, RegistrationKind::Document, None, T0);
    store.create_client(&documented).await.expect("documented");
    let now = T0.plus(40 * 86_400);
    let gone = store.delete_unused_clients(T0, T0.plus(1), now).await.expect("unused");
    assert_eq!(gone, 2, "the registered one, and the documented one");
    assert_eq!(store.client(&documented.client_id).await.expect("get"), None, "removed: its document makes it again");
    assert_eq!(store.client(&registered.client_id).await.expect("get").expect("c").deleted_at, Some(now));
    assert_eq!(store.client(&console_made).await.expect("get").expect("c").deleted_at, None);
    assert!(store.set_project_setting(&project, open, false).await.expect("close"));
    assert!(store.set_project_setting(&other, open, true).await.expect("now the other may"));
}

/// A metadata document is cached as it came, replaced by a new fetch, and purged a day past its caching; the
/// documents' project exists from the start, with no member and the data API off.
pub(super) async fn metadata_documents_are_cached_replaced_and_purged(store: &dyn Store) {
    let project = latchkey_core::registration::DOCUMENTS_PROJECT;
    let holder = store.project(project).await.expect("get").expect("made by the migrations");
    assert!(!holder.api_enabled, "no data API unless the operator enables it");
    assert!(store.project_members(project).await.expect("members").is_empty(), "no developer's project");
    let url = "https://app.example/client.json";
    assert_eq!(store.client_document(url).await.expect("get"), None);
    let first = CachedDocument { url: url.into(), document: "{}".into(), fetched_at: T0, expires_at: T0.plus(300) };
    store.put_client_document(&first).await.expect("put");
    assert_eq!(store.client_document(url).await.expect("get"), Some(first.clone()), "as it came");
    let again =
        CachedDocument { document: "{\"a\":1}".into(), fetched_at: T0.plus(400), expires_at: T0.plus(700), ..first };
    store.put_client_document(&again).await.expect("replace");
    assert_eq!(store.client_document(url).await.expect("get"), Some(again), "the newer fetch");
    store.purge_expired(T0.plus(700 + 86_400 - 1)).await.expect("purge");
    assert!(store.client_document(url).await.expect("get").is_some(), "kept a day past its caching");
    store.purge_expired(T0.plus(700 + 86_400)).await.expect("purge");
    assert_eq!(store.client_document(url).await.expect("get"), None, "then purged");
}
