//! The data API (`docs/api.md`, "Data API"): `GET /video/v3/channels` with a bearer token (RFC 6750), its scopes
//! (`docs/decisions.md`, "Scopes"), and the access-token states (valid, expired, revoked).

use crate::support::*;
use latchkey_admin::clock::OsRandom;
use latchkey_admin::{Actor, ClientRef};
use latchkey_core::time::{Clock, UnixTime};
use serde_json::Value;
use std::time::Duration;

const ALICE: &str = "alice@example.com";
const NOW: UnixTime = UnixTime(1_700_000_000);

async fn setup() -> (TestServer, App) {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

/// `GET /video/v3/channels?{query}` with a bearer token.
async fn get(server: &TestServer, query: &str, token: &str) -> reqwest::Response {
    server.http().get(server.url(&format!("/video/v3/channels?{query}"))).bearer_auth(token).send().await.expect("get")
}

fn www_authenticate(r: &reqwest::Response) -> String {
    r.headers().get("www-authenticate").expect("WWW-Authenticate").to_str().expect("text").to_owned()
}

/// The status and the first error reason of a data-API error.
async fn reason_of(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: Value = r.json().await.expect("json error");
    assert_eq!(body["error"]["code"], status, "{body}");
    (status, body["error"]["errors"][0]["reason"].as_str().unwrap_or_default().to_owned())
}

#[tokio::test]
async fn channels_list_returns_the_users_channel_with_the_requested_parts() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let shown = latchkey_admin::user_show(server.store(), ALICE).await.expect("user");
    let channel_id = shown.channel_id.as_deref().expect("channel id");

    let r = get(&server, "part=snippet&mine=true", &t.access_token).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().expect("text").starts_with("application/json"));
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["kind"], "video#channelListResponse");
    assert_eq!(body["pageInfo"]["totalResults"], 1, "{body}");
    let items = body["items"].as_array().expect("items");
    assert_eq!(items.len(), 1);
    let channel = &items[0];
    assert_eq!(channel["kind"], "video#channel");
    assert_eq!(channel["id"], channel_id);
    assert!(channel_id.starts_with("UC"), "{channel_id}");
    assert_eq!(channel["snippet"]["title"], "Test User");
    assert!(channel["snippet"]["description"].is_string());
    assert!(channel["snippet"]["publishedAt"].as_str().expect("publishedAt").ends_with('Z'), "{channel}");
    for absent in ["contentDetails", "statistics", "status"] {
        assert!(channel.get(absent).is_none(), "{absent} was not asked for: {channel}");
    }

    let r = get(&server, "part=id,contentDetails,statistics,status&mine=true", &t.access_token).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    let channel = &body["items"][0];
    assert_eq!(channel["id"], channel_id);
    assert!(channel.get("snippet").is_none(), "{channel}");
    assert!(channel["contentDetails"]["relatedPlaylists"]["uploads"].as_str().expect("uploads").starts_with("UU"));
    assert!(channel["statistics"]["viewCount"].is_string(), "{channel}");
    assert!(channel["status"]["privacyStatus"].is_string(), "{channel}");
}

async fn channel_id_of(server: &TestServer, email: &str) -> Value {
    latchkey_admin::user_show(server.store(), email).await.expect("user").channel_id.into()
}

#[tokio::test]
async fn each_user_sees_their_own_channel() {
    let (server, app) = setup().await;
    server.user("bob@example.com").await;
    let alice = server.tokens(&app, ALICE, &[READONLY]).await;
    let bob = server.tokens(&app, "bob@example.com", &[READONLY]).await;
    let body: Value = get(&server, "part=id&mine=true", &alice.access_token).await.json().await.expect("json");
    assert_eq!(body["items"][0]["id"], channel_id_of(&server, ALICE).await);
    let body: Value = get(&server, "part=id&mine=true", &bob.access_token).await.json().await.expect("json");
    assert_eq!(body["items"][0]["id"], channel_id_of(&server, "bob@example.com").await);
    assert_ne!(channel_id_of(&server, ALICE).await, channel_id_of(&server, "bob@example.com").await);
}

#[tokio::test]
async fn the_access_token_query_parameter_works() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let mut url = url::Url::parse(&server.url("/video/v3/channels")).expect("url");
    url.query_pairs_mut()
        .append_pair("part", "id")
        .append_pair("mine", "true")
        .append_pair("access_token", &t.access_token);
    let r = server.http().get(url).send().await.expect("get");
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("json");
    assert_eq!(body["items"][0]["kind"], "video#channel");
}

#[tokio::test]
async fn a_token_in_both_the_header_and_the_query_is_400() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let query = format!("part=id&mine=true&access_token={}", t.access_token);
    let r = get(&server, &query, &t.access_token).await;
    assert_eq!(reason_of(r).await, (400, "invalidParameter".to_string()));
}

#[tokio::test]
async fn no_token_is_401_with_a_bearer_challenge_and_no_error_code() {
    let (server, _app) = setup().await;
    let r = server.http().get(server.url("/video/v3/channels?part=id&mine=true")).send().await.expect("get");
    assert_eq!(r.status(), 401);
    let challenge = www_authenticate(&r);
    assert!(challenge.starts_with("Bearer realm="), "{challenge}");
    // RFC 6750 §3.1: a request without authentication information gets no error code.
    assert!(!challenge.contains("error="), "{challenge}");
    assert_eq!(reason_of(r).await, (401, "authError".to_string()));
}

#[tokio::test]
async fn a_garbage_or_tampered_token_is_401_invalid_token() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let mut tampered: Vec<char> = t.access_token.chars().collect();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    let truncated = &t.access_token[..t.access_token.len() - 1];
    for bad in ["garbage", "lka_garbage", tampered.as_str(), truncated, t.refresh_token.as_deref().expect("rt")] {
        let r = get(&server, "part=id&mine=true", bad).await;
        assert_eq!(r.status(), 401, "{bad}");
        let challenge = www_authenticate(&r);
        assert!(challenge.starts_with("Bearer realm="), "{challenge}");
        assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
        assert_eq!(reason_of(r).await, (401, "authError".to_string()), "{bad}");
    }
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 200, "the real one works");
}

#[tokio::test]
async fn an_authorization_header_of_another_scheme_is_401() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let r = server
        .http()
        .get(server.url("/video/v3/channels?part=id&mine=true"))
        .header("authorization", format!("Basic {}", t.access_token))
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), 401);
    assert!(www_authenticate(&r).starts_with("Bearer"));
}

#[tokio::test]
async fn an_expired_access_token_is_401_invalid_token() {
    let server = TestServer::start_with(|c| c.access_token_lifetime = 1).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(t.expires_in, 1);
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let r = get(&server, "part=id&mine=true", &t.access_token).await;
    assert_eq!(r.status(), 401);
    assert!(www_authenticate(&r).contains("error=\"invalid_token\""));
}

#[tokio::test]
async fn a_revoked_access_token_is_401_invalid_token() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 200);
    let r = server
        .http()
        .post(server.url("/revoke"))
        .form(&[("token", t.access_token.as_str())])
        .send()
        .await
        .expect("revoke");
    assert_eq!(r.status(), 200);
    let r = get(&server, "part=id&mine=true", &t.access_token).await;
    assert_eq!(r.status(), 401);
    assert!(www_authenticate(&r).contains("error=\"invalid_token\""));
}

#[tokio::test]
async fn a_token_without_a_channels_scope_is_403_insufficient_scope() {
    let (server, app) = setup().await;
    for scope in ["upload", "channel-memberships.creator", "partner-channel-audit"] {
        let scope = format!("{BASE}{scope}");
        let t = server.tokens(&app, ALICE, &[&scope]).await;
        let r = get(&server, "part=id&mine=true", &t.access_token).await;
        assert_eq!(r.status(), 403, "{scope}");
        let challenge = www_authenticate(&r);
        assert!(challenge.contains("error=\"insufficient_scope\""), "{challenge}");
        assert!(challenge.contains(READONLY), "the challenge names the scopes that would do: {challenge}");
        assert_eq!(reason_of(r).await, (403, "insufficientPermissions".to_string()));
    }
}

#[tokio::test]
async fn each_of_readonly_force_ssl_manage_and_partner_alone_is_enough() {
    let (server, app) = setup().await;
    for scope in ["readonly", "force-ssl", "manage", "partner"] {
        let scope = format!("{BASE}{scope}");
        let t = server.tokens(&app, ALICE, &[&scope]).await;
        assert_eq!(t.scope, scope);
        let r = get(&server, "part=id&mine=true", &t.access_token).await;
        assert_eq!(r.status(), 200, "{scope}");
    }
}

#[tokio::test]
async fn a_missing_part_is_400() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for query in ["mine=true", "part=&mine=true"] {
        let r = get(&server, query, &t.access_token).await;
        assert_eq!(reason_of(r).await, (400, "required".to_string()), "{query}");
    }
}

#[tokio::test]
async fn an_unknown_part_is_400() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for query in ["part=bogus&mine=true", "part=snippet,bogus&mine=true", "part=Snippet&mine=true"] {
        let r = get(&server, query, &t.access_token).await;
        assert_eq!(reason_of(r).await, (400, "unknownPart".to_string()), "{query}");
    }
}

#[tokio::test]
async fn a_request_without_the_mine_filter_is_400() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for query in ["part=id", "part=id&mine=false"] {
        let r = get(&server, query, &t.access_token).await;
        assert_eq!(reason_of(r).await, (400, "missingRequiredParameter".to_string()), "{query}");
    }
    let r = get(&server, "part=id&mine=yes", &t.access_token).await;
    assert_eq!(reason_of(r).await, (400, "invalidParameter".to_string()));
}

#[tokio::test]
async fn disabling_the_projects_api_after_issuance_is_403_access_not_configured() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 200);
    latchkey_admin::project_set_api(server.store(), &Actor::Operator, &app.project_id, false)
        .await
        .expect("disable api");
    let r = get(&server, "part=id&mine=true", &t.access_token).await;
    assert_eq!(reason_of(r).await, (403, "accessNotConfigured".to_string()));
    latchkey_admin::project_set_api(server.store(), &Actor::Operator, &app.project_id, true).await.expect("enable api");
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_token_of_a_deleted_client_is_401() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::client_delete(server.store(), &Actor::Operator, ClientRef::id(&app.client_id), NOW)
        .await
        .expect("delete");
    let r = get(&server, "part=id&mine=true", &t.access_token).await;
    assert_eq!(r.status(), 401);
    assert!(www_authenticate(&r).contains("error=\"invalid_token\""));
}

#[tokio::test]
async fn a_token_of_a_disabled_user_is_401() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::user_set_disabled(server.store(), ALICE, true, NOW).await.expect("disable");
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 401);
}

#[tokio::test]
async fn the_bearer_scheme_name_is_case_insensitive() {
    // RFC 7235 §2.1: auth-scheme names are case-insensitive.
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for scheme in ["bearer", "BEARER"] {
        let r = server
            .http()
            .get(server.url("/video/v3/channels?part=id&mine=true"))
            .header("authorization", format!("{scheme} {}", t.access_token))
            .send()
            .await
            .expect("get");
        assert_eq!(r.status(), 200, "{scheme}");
    }
}

#[tokio::test]
async fn an_access_token_query_parameter_sent_twice_is_400() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let url =
        server.url(&format!("/video/v3/channels?part=id&mine=true&access_token={0}&access_token={0}", t.access_token));
    let r = server.http().get(url).send().await.expect("get");
    assert_eq!(reason_of(r).await, (400, "invalidParameter".to_string()));
}

#[tokio::test]
async fn any_parameter_channels_list_reads_sent_twice_is_400_invalid_parameter() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    for query in ["part=id&part=snippet&mine=true", "part=id&mine=true&mine=false", "part=id&id=A&id=B"] {
        let r = get(&server, query, &t.access_token).await;
        assert_eq!(reason_of(r).await, (400, "invalidParameter".to_string()), "{query}");
    }
    let r = get(&server, "part=id&mine=true&utm=1&utm=2", &t.access_token).await;
    assert_eq!(r.status(), 200, "a parameter it does not read is ignored, repeated or not");
}

#[tokio::test]
async fn access_tokens_minted_before_a_key_rotation_keep_working() {
    let (server, app) = setup().await;
    let before = server.tokens(&app, ALICE, &[READONLY]).await;
    let at = latchkey_admin::clock::SystemClock.now();
    let secrets = server.running.state.keys.secret_source();
    latchkey_admin::key_rotate(server.store(), secrets, latchkey_store::KeyKind::Mac, at).await.expect("rotate");
    server.running.state.keys.reload(server.store(), at).await.expect("reload");
    let after = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(get(&server, "part=id&mine=true", &before.access_token).await.status(), 200);
    assert_eq!(get(&server, "part=id&mine=true", &after.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_token_of_a_deleted_user_is_401() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    latchkey_admin::user_delete(server.store(), ALICE, latchkey_core::time::UnixTime(1_700_000_000))
        .await
        .expect("delete");
    assert_eq!(get(&server, "part=id&mine=true", &t.access_token).await.status(), 401);
}

#[tokio::test]
async fn a_token_signed_by_a_key_another_instance_rotated_in_is_accepted_without_a_restart() {
    use latchkey_core::access_token::{self, MacKey};
    use latchkey_store::KeyKind;
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let at = latchkey_admin::clock::SystemClock.now();
    // Another instance (or the admin CLI) adds a key; this instance has not reloaded yet.
    let keys = &server.running.state.keys;
    let new_id = latchkey_admin::key_rotate(server.store(), keys.secret_source(), KeyKind::Mac, at)
        .await
        .expect("rotate")
        .key_id
        .into();
    // The store holds the keys encrypted; the system secret opens them.
    let secrets = keys.secrets().expect("system secrets");
    let stored = server.store().keys(KeyKind::Mac).await.expect("keys");
    let mac = |k: &latchkey_store::StoredKey| {
        MacKey::new(k.id, secrets.open(KeyKind::Mac, &k.secret).expect("open").material.expose())
    };
    let key = |id: u64| mac(stored.iter().find(|k| u64::from(k.id) == id).expect("key"));
    let old = stored.iter().find(|k| u64::from(k.id) != new_id).expect("old key");
    let claims = access_token::verify(&[mac(old)], &t.access_token, at).expect("claims");
    let minted_elsewhere = access_token::mint(&key(new_id), &claims, &OsRandom);
    assert_eq!(get(&server, "part=id&mine=true", &minted_elsewhere).await.status(), 200);
    // A forged key id is refused, and costs at most one reload per second.
    let forged = access_token::mint(&MacKey::new(999_999, b"forged"), &claims, &OsRandom);
    assert_eq!(get(&server, "part=id&mine=true", &forged).await.status(), 401);
}
