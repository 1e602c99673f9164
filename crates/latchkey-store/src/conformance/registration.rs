//! Apps that register themselves: one project at a time collects them, their registration is stored as it came,
//! their refresh tokens rotate, and they are deleted after their own days without use.

use super::{fixture, issue, T0};
use crate::prelude::*;
use crate::{GrantLimits, ProjectSetting, StoreError};
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
    let rotates = |id| async move { store.grant(&id).await.expect("get").expect("grant").rotates };
    assert!(rotates(of_registered.id).await, "a self-registered client's tokens rotate");
    assert!(!rotates(of_console.id).await, "not the console's, without the project's switch");

    let now = T0.plus(40 * 86_400);
    assert_eq!(store.delete_unused_clients(T0, T0.plus(1), now).await.expect("unused"), 1, "only the registered one");
    assert_eq!(store.client(&registered.client_id).await.expect("get").expect("c").deleted_at, Some(now));
    assert_eq!(store.client(&console_made).await.expect("get").expect("c").deleted_at, None);
    assert!(store.set_project_setting(&project, open, false).await.expect("close"));
    assert!(store.set_project_setting(&other, open, true).await.expect("now the other may"));
}
