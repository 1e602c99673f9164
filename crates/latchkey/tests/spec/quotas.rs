//! Quotas (`docs/security.md`, "Quotas"): what one developer or project may make, each refused past its bound with
//! a conflict that says what to do, through the same operations the console, its API and the CLI call.

use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as admin, api_keys, quotas, Actor, NewClient};
use latchkey_core::client::{ClientDetails, ClientType};
use latchkey_core::time::Clock;

#[tokio::test]
async fn a_developer_has_at_most_twenty_api_keys_and_a_project_two_hundred_clients() {
    let server = TestServer::start().await;
    let store = server.store();
    let now = SystemClock.now();
    server.user("dev@example.com").await;
    for i in 0..quotas::API_KEYS_PER_DEVELOPER {
        api_keys::api_key_create(store, "dev@example.com", &format!("key {i}"), now).await.expect("key");
    }
    let e = api_keys::api_key_create(store, "dev@example.com", "one more", now).await.unwrap_err();
    assert!(e.to_string().starts_with("conflict") && e.to_string().contains("20 API keys"), "{e}");

    let app = server.app().await;
    let new = |i: usize| NewClient {
        project_id: app.project_id.clone(),
        client_type: ClientType::Desktop,
        name: format!("App {i}"),
        redirect_uris: Vec::new(),
        details: ClientDetails::default(),
    };
    for i in 1..quotas::CLIENTS_PER_PROJECT {
        admin::client_create(store, &Actor::Operator, new(i), now).await.expect("client");
    }
    let e = admin::client_create(store, &Actor::Operator, new(0), now).await.unwrap_err();
    assert!(e.to_string().starts_with("conflict"), "{e}");
}
