//! Registered APIs: a resource identifier and each scope name held once, each scope on its own bit (the lowest
//! free), a retired scope's bit held back from new scopes for a while, changes and deletion, and the secrets
//! replaced only while they are the ones read.

use super::{fixture, random_b64, T0};
use crate::prelude::*;
use crate::ResourceUpdate;
use latchkey_core::client::ClientSecret;
use latchkey_core::resource::{Resource, ResourceRefusal, ResourceScope, TokenFormat, Visibility, BIT_QUARANTINE};
use latchkey_core::scope::{ScopeSet, FIRST_REGISTERED};

fn api(project_id: &str, scopes: &[&str]) -> Resource {
    let unique = random_b64(9);
    Resource {
        id: format!("res_{unique}"),
        project_id: project_id.into(),
        uri: format!("https://{unique}.example.com/api"),
        name: "Notes".into(),
        visibility: Visibility::Project,
        token_format: TokenFormat::Opaque,
        scopes: scopes
            .iter()
            .map(|s| ResourceScope { bit: 0, name: format!("{unique}:{s}"), description: format!("About {s}") })
            .collect(),
        secrets: vec![super::clients::initial_secret()],
        created_at: T0,
    }
}

/// A registration takes free bits and unique names; it is found by id, by project and among all.
pub(super) async fn apis_hold_their_identifier_and_scope_names_once_each_on_its_own_bit(store: &dyn Store) {
    let (client_id, _) = fixture(store).await;
    let project = store.client(&client_id).await.expect("client").expect("there").project_id;
    let notes = store.create_resource(&api(&project, &["read", "write"]), T0).await.expect("create").expect("made");
    let bits: Vec<u32> = notes.scopes.iter().map(|s| s.bit).collect();
    assert_eq!(notes.scopes.len(), 2);
    assert!(bits.iter().all(|b| *b >= FIRST_REGISTERED) && bits[0] != bits[1], "{bits:?}");
    assert_eq!(store.resource(&notes.id).await.expect("find").as_ref(), Some(&notes));
    assert!(store.project_resources(&project).await.expect("list").contains(&notes));
    assert!(store.all_resources().await.expect("all").contains(&notes));

    let same_uri = Resource { uri: notes.uri.clone(), ..api(&project, &["x"]) };
    assert_eq!(store.create_resource(&same_uri, T0).await.expect("create"), Err(ResourceRefusal::UriTaken));
    let mut same_name = api(&project, &["y"]);
    same_name.scopes[0].name = notes.scopes[0].name.clone();
    let refused = store.create_resource(&same_name, T0).await.expect("create");
    assert_eq!(refused, Err(ResourceRefusal::ScopeTaken(notes.scopes[0].name.clone())));
    assert_eq!(store.resource(&same_name.id).await.expect("find"), None, "nothing of a refused registration stays");

    // A change: a new scope on a new bit, a description changed, a scope retired.
    let added = format!("{}-admin", notes.scopes[0].name);
    let update = ResourceUpdate {
        name: Some("Notes API".into()),
        visibility: Some(Visibility::Public),
        token_format: Some(TokenFormat::Jwt),
        scopes: vec![(added.clone(), "Administer".into()), (notes.scopes[0].name.clone(), "Read them".into())],
        remove_scopes: vec![notes.scopes[1].name.clone()],
    };
    let changed = store.update_resource(&notes.id, &update, T0.plus(10)).await.expect("update").expect("ok");
    let changed = changed.expect("known");
    assert_eq!(
        (changed.name.as_str(), changed.visibility, changed.token_format),
        ("Notes API", Visibility::Public, TokenFormat::Jwt)
    );
    let names: Vec<(&str, &str)> = changed.scopes.iter().map(|s| (s.name.as_str(), s.description.as_str())).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.contains(&(notes.scopes[0].name.as_str(), "Read them"))
            && names.contains(&(added.as_str(), "Administer"))
    );
    let retired_bit = notes.scopes[1].bit;
    assert!(changed.scopes.iter().all(|s| s.bit != retired_bit), "the retired scope's bit is not reused at once");
    let unknown = store.update_resource("res_nope", &ResourceUpdate::default(), T0).await.expect("update");
    assert_eq!(unknown, Ok(None));

    // The retired name is free at once; its bit only after the quarantine.
    let reuse = Resource {
        scopes: vec![ResourceScope { bit: 0, name: notes.scopes[1].name.clone(), description: String::new() }],
        ..api(&project, &[])
    };
    let reused = store.create_resource(&reuse, T0.plus(20)).await.expect("create").expect("the name is free again");
    assert_ne!(reused.scopes[0].bit, retired_bit);
    assert!(store.delete_resource(&reused.id, T0.plus(30)).await.expect("delete"));
    assert_eq!(store.resource(&reused.id).await.expect("find"), None);
    assert!(!store.delete_resource(&reused.id, T0.plus(31)).await.expect("delete"), "once");
    let later = store.create_resource(&api(&project, &["late"]), T0.plus(30 + BIT_QUARANTINE)).await.expect("create");
    let later_bit = later.expect("made").scopes[0].bit;
    assert!(later_bit <= retired_bit.max(reused.scopes[0].bit), "bits served their time come back: {later_bit}");

    // Secrets are replaced only while they are the ones read.
    let fresh = vec![ClientSecret { id: "cs_next".into(), hash: vec![8; 32], ..super::clients::initial_secret() }];
    assert!(store.set_resource_secrets(&notes.id, &notes.secrets, &fresh).await.expect("set"));
    assert!(!store.set_resource_secrets(&notes.id, &notes.secrets, &[]).await.expect("set"), "stale");
    assert_eq!(store.resource(&notes.id).await.expect("find").expect("there").secrets, fresh);
}

pub(super) async fn a_retired_scope_leaves_every_grant_and_code_that_held_its_bit(store: &dyn Store) {
    let (client_id, user_id) = fixture(store).await;
    let project = store.client(&client_id).await.expect("client").expect("there").project_id;
    let notes = store.create_resource(&api(&project, &["read", "write"]), T0).await.expect("create").expect("made");
    let (read, write) = (ScopeSet::bit(notes.scopes[0].bit), ScopeSet::bit(notes.scopes[1].bit));
    let limits = crate::GrantLimits { per_client_user: 50, per_user: 100 };
    let held = ScopeSet(0b1).union(read).union(write);
    let grant = super::issue_scopes(store, &client_id, &user_id, limits, held).await;
    let pending = latchkey_core::token::AuthCode { scopes: held, ..super::code(&client_id, &user_id) };
    store.insert_code(&pending).await.expect("code");

    let change = ResourceUpdate { remove_scopes: vec![notes.scopes[1].name.clone()], ..Default::default() };
    store.update_resource(&notes.id, &change, T0.plus(1)).await.expect("update").expect("known");
    let scopes_now = |g: Option<crate::GrantState>| g.expect("there").grant.scopes;
    assert_eq!(scopes_now(store.grant(&grant.id).await.expect("get")), ScopeSet(0b1).union(read), "write is gone");
    assert_eq!(store.code(&pending.code_hash).await.expect("get").expect("code").scopes, ScopeSet(0b1).union(read));

    assert!(store.delete_resource(&notes.id, T0.plus(2)).await.expect("delete"));
    assert_eq!(scopes_now(store.grant(&grant.id).await.expect("get")), ScopeSet(0b1), "the API's scopes are gone");
}
