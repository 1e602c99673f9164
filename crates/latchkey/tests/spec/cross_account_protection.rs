//! Cross-account protection (`docs/events.md`): the Shared Signals transmitter. A real HTTPS receiver verifies every
//! SET against the JWKS and gets each event after the action that causes it, in order, only about accounts that granted
//! its app access; the framework's management endpoints refuse bad input; poll receivers fetch and acknowledge.

use crate::account_page::{form_input, granted};
use crate::login_consent::{ALICE, BOB};
use crate::set_receiver::TestReceiver;
use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as admin, api_keys, Actor};
use latchkey_client::events::{Event, Subject};
use latchkey_core::time::{Clock, UnixTime};
use latchkey_store::ProjectRole;
use serde_json::{json, Value};

const DANA: &str = "dana@example.com";

/// A developer of the app's project calling the framework's endpoints with a console API key.
pub(crate) struct Ssf<'s> {
    server: &'s TestServer,
    pub(crate) key: String,
}

impl<'s> Ssf<'s> {
    pub(crate) async fn member_of(server: &'s TestServer, app: &App, email: &str) -> Self {
        server.user(email).await;
        let now = SystemClock.now();
        admin::members::member_add(server.store(), &Actor::Operator, &app.project_id, email, ProjectRole::Editor, now)
            .await
            .expect("member");
        let key = api_keys::api_key_create(server.store(), email, "ssf", now).await.expect("key").api_key;
        Self { server, key }
    }

    pub(crate) async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut req = self.server.http().request(method, self.server.url(path)).bearer_auth(&self.key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.expect("request");
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    pub(crate) async fn create(&self, body: Value) -> Value {
        let (status, v) = self.call("POST", "/ssf/stream", Some(body)).await;
        assert_eq!(status, 201, "{v}");
        v
    }
}

/// A server that trusts a receiver certificate made in `receiver_dir` and looks for due events often.
pub(crate) async fn server_for(receiver_dir: &std::path::Path) -> TestServer {
    let cert = latchkey_server::tls::ensure_local_certificate(receiver_dir).expect("receiver cert").cert;
    TestServer::start_with(|c| {
        c.events.push_ca_file = Some(cert);
        c.events.worker_interval_ms = 100;
        // The receiver runs on this machine.
        c.events.allow_insecure_loopback_push = true;
    })
    .await
}

pub(crate) fn ca(server: &TestServer) -> std::path::PathBuf {
    server.running.cert_path.clone()
}

#[tokio::test]
async fn discovery_names_every_endpoint_and_the_jwks_publishes_the_event_key_once_a_stream_exists() {
    let server = TestServer::start().await;
    let http = server.http();
    let mut documents = Vec::new();
    for name in ["ssf-configuration", "risc-configuration"] {
        let r = http.get(server.url(&format!("/.well-known/{name}"))).send().await.expect("get");
        assert_eq!(r.status(), 200);
        documents.push(r.json::<Value>().await.expect("json"));
    }
    assert_eq!(documents[0], documents[1], "the older name serves the same document");
    let d = &documents[0];
    assert_eq!(d["spec_version"], "1_0");
    assert_eq!(d["issuer"], server.base);
    assert_eq!(d["jwks_uri"], server.url("/oauth2/v3/certs"));
    assert_eq!(d["delivery_methods_supported"], json!(["urn:ietf:rfc:8935", "urn:ietf:rfc:8936"]));
    for (field, path) in [
        ("configuration_endpoint", "/ssf/stream"),
        ("status_endpoint", "/ssf/status"),
        ("add_subject_endpoint", "/ssf/subjects/add"),
        ("remove_subject_endpoint", "/ssf/subjects/remove"),
        ("verification_endpoint", "/ssf/verify"),
    ] {
        assert_eq!(d[field], server.url(path), "{field}");
    }
    assert_eq!(d["authorization_schemes"], json!([{"spec_urn": "urn:ietf:rfc:6750"}]));
    assert_eq!(d["default_subjects"], "ALL");

    let rsa_keys = |jwks: &Value| jwks["keys"].as_array().expect("keys").iter().filter(|k| k["kty"] == "RSA").count();
    let jwks: Value = http.get(server.url("/oauth2/v3/certs")).send().await.expect("jwks").json().await.expect("j");
    assert_eq!(rsa_keys(&jwks), 0, "no event key before the first stream");
    let app = server.app().await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    ssf.create(json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})).await;
    let jwks: Value = http.get(server.url("/oauth2/v3/certs")).send().await.expect("jwks").json().await.expect("j");
    let key = jwks["keys"].as_array().expect("keys").iter().find(|k| k["kty"] == "RSA").expect("an RSA key");
    assert_eq!((&key["alg"], &key["use"], &key["e"]), (&json!("RS256"), &json!("sig"), &json!("AQAB")));
}

#[tokio::test]
async fn a_push_receiver_gets_each_event_after_its_action_in_order_and_only_about_its_users() {
    let receiver_dir = tempfile::tempdir().expect("dir");
    let server = server_for(receiver_dir.path()).await;
    let (app, other_app) = (server.app().await, server.app().await);
    let alice = server.user(ALICE).await;
    server.user(BOB).await;
    let (browser, tokens) = granted(&server, &app, ALICE).await;
    granted(&server, &other_app, BOB).await;
    let receiver = TestReceiver::start(&server.base, &app.client_id, &ca(&server), receiver_dir.path()).await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let stream = ssf
        .create(json!({
            "aud": app.client_id,
            "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": receiver.url,
                         "authorization_header": "Bearer receiver-secret"},
            "description": "the app's backend",
        }))
        .await;
    assert_eq!(stream["delivery"], json!({"method": "urn:ietf:rfc:8935", "endpoint_url": receiver.url}));
    assert!(!stream.to_string().contains("receiver-secret"), "the authorization header is never shown back");
    let stream_id = stream["stream_id"].as_str().expect("id").to_owned();
    let (status, changed) = ssf
        .call(
            "PUT",
            "/ssf/stream",
            Some(json!({"stream_id": stream_id, "delivery": stream["delivery"], "description": "sent back as read"})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    let (status, v) = ssf.call("POST", &format!("/ssf/poll/{stream_id}"), Some(json!({"maxEvents": 1}))).await;
    assert_eq!(status, 400, "a push stream is not polled: {v}");

    let (status, _) = ssf.call("POST", "/ssf/verify", Some(json!({"stream_id": stream_id, "state": "s1"}))).await;
    assert_eq!(status, 204);
    let verification = receiver.wait_for(1, 20).await.remove(0);
    assert_eq!(verification.event, Event::Verification(serde_json::from_value(json!({"state": "s1"})).expect("v")));
    assert_eq!(verification.subject, Subject::Opaque { id: stream_id.clone() });

    let page = browser.get(&server.url("/account")).await;
    let csrf = form_input(&page, "/account/sessions/end-others", "csrf");
    let (elsewhere, _) = granted(&server, &app, ALICE).await;
    browser.post("/account/sessions/end-others", &[("csrf", &csrf), ("account", &alice)]).await;
    assert_eq!(elsewhere.get(&server.url("/account")).await.status, 303);
    let new_password = [("csrf", csrf.as_str()), ("account", &alice), ("current_password", PASSWORD)];
    let new_password = [&new_password[..], &[("new_password", "a new long password")]].concat();
    assert_eq!(browser.post("/account/password", &new_password).await.status, 303);
    let now = SystemClock.now();
    admin::user_set_disabled(server.store(), ALICE, true, now).await.expect("disable");
    admin::user_set_disabled(server.store(), ALICE, false, now).await.expect("enable");
    admin::user_require_password_change(server.store(), ALICE, now).await.expect("require");
    admin::user_set_disabled(server.store(), BOB, true, now).await.expect("bob has no grant of this app");
    // Last: once the app's access is removed, it hears no more about alice (a change in the same second as the
    // removal still reaches it, so nothing may follow here).
    let removed = admin::accounts::user_revoke_app(server.store(), ALICE, &app.client_id, now).await.expect("remove");
    assert_eq!(removed.revoked, 2, "both of alice's grants of the app");

    let events = receiver.wait_for(11, 30).await;
    let t = "https://schemas.openid.net/secevent/";
    let expected = [
        "ssf/event-type/verification",
        "risc/event-type/sessions-revoked",
        "caep/event-type/session-revoked",
        "caep/event-type/credential-change",
        "risc/event-type/sessions-revoked",
        "caep/event-type/session-revoked",
        "risc/event-type/account-disabled",
        "risc/event-type/account-enabled",
        "risc/event-type/account-credential-change-required",
        "oauth/event-type/token-revoked",
        "oauth/event-type/token-revoked",
    ];
    assert_eq!(receiver.types(), expected.iter().map(|e| format!("{t}{e}")).collect::<Vec<_>>());
    let alice_sub = Subject::IssSub { iss: server.base.clone(), sub: alice.clone() };
    assert!(events[1..].iter().all(|e| e.subject == alice_sub), "every account event is about alice");
    assert_eq!(events[3].txn, events[5].txn, "one password change, one txn");
    assert_ne!(events[1].txn, events[3].txn);
    let refresh_token = tokens.refresh_token.as_deref().expect("refresh");
    let revoked: Vec<_> = events[9..11]
        .iter()
        .map(|e| match &e.event {
            Event::TokenRevoked(r) => r.clone(),
            other => panic!("token-revoked, not {other:?}"),
        })
        .collect();
    assert_eq!(revoked.iter().filter(|r| r.token_matches(refresh_token)).count(), 1, "one per grant (two browsers)");
    assert!(revoked.iter().all(|r| r.token_identifier_alg.as_deref() == Some("prefix")));
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let seen = receiver.seen.lock().expect("seen");
    assert_eq!(seen.events.len(), 11, "nothing about bob, who never granted this app");
    assert!(seen.arrivals.values().all(|n| *n == 1), "each SET once in a run without faults");
    assert!(
        seen.authorizations.iter().all(|a| a.as_deref() == Some("Bearer receiver-secret")),
        "the configuration sent back as read kept the authorization it does not show: {:?}",
        seen.authorizations
    );
    assert!(seen.refused.is_empty(), "{:?}", seen.refused);
}

#[tokio::test]
async fn events_wait_for_a_receiver_that_is_down_and_arrive_once_it_is_back() {
    let receiver_dir = tempfile::tempdir().expect("dir");
    let server = server_for(receiver_dir.path()).await;
    let app = server.app().await;
    server.user(ALICE).await;
    granted(&server, &app, ALICE).await;
    let mut receiver = TestReceiver::start(&server.base, &app.client_id, &ca(&server), receiver_dir.path()).await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let body = json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": receiver.url}});
    let stream_id = ssf.create(body).await["stream_id"].as_str().expect("id").to_owned();
    receiver.stop().await;
    let now = SystemClock.now();
    admin::user_set_disabled(server.store(), ALICE, true, now).await.expect("disable");
    admin::user_set_disabled(server.store(), ALICE, false, now).await.expect("enable");
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let d = deliveries(&server, &stream_id).await;
        if d.iter().any(|d| d.attempts >= 1 && d.last_error.is_some()) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "a failed push is recorded: {d:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    receiver.restart(&server.base, &app.client_id, &ca(&server)).await;
    receiver.wait_for(2, 30).await;
    let t = "https://schemas.openid.net/secevent/risc/event-type/";
    assert_eq!(receiver.types(), [format!("{t}account-disabled"), format!("{t}account-enabled")], "in order");
}

/// A stream's deliveries, newest first.
async fn deliveries(server: &TestServer, stream_id: &str) -> Vec<latchkey_store::Delivery> {
    server.store().deliveries(stream_id, 100).await.expect("deliveries")
}

#[tokio::test]
async fn the_management_endpoints_refuse_bad_input_and_other_projects_streams_and_change_nothing() {
    let server = TestServer::start().await;
    let (app, other_app) = (server.app().await, server.app().await);
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let stranger = Ssf::member_of(&server, &other_app, "erin@example.com").await;
    let push =
        |url: &str| json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8935", "endpoint_url": url}});
    for (body, why) in [
        (push("http://receiver.example/events"), "https"),
        (push("http://127.0.0.1:9/events"), "allow_insecure_loopback_push"),
        (push("not a url"), "URL"),
        (json!({"aud": app.client_id, "delivery": {"method": "urn:example:carrier-pigeon"}}), "not supported"),
        (json!({"aud": app.client_id}), "delivery"),
        (json!({"delivery": {"method": "urn:ietf:rfc:8936"}}), "aud"),
    ] {
        let (status, v) = ssf.call("POST", "/ssf/stream", Some(body)).await;
        assert_eq!((status, v["error"].as_str()), (400, Some("invalid_request")), "{v}");
        let description = v["error_description"].as_str().expect("description").to_lowercase();
        assert!(description.contains(&why.to_lowercase()), "{v}");
    }
    let (status, _) = stranger.call("POST", "/ssf/stream", Some(push("https://receiver.example/e"))).await;
    assert_eq!(status, 404, "a client of another project is not found");
    assert!(server.store().streams().await.expect("streams").is_empty(), "nothing was made");

    let created = ssf
        .create(json!({"aud": [app.client_id], "delivery": {"method": "urn:ietf:rfc:8936"},
                       "events_requested": ["https://schemas.openid.net/secevent/oauth/event-type/token-revoked",
                                            "urn:example:unknown"]}))
        .await;
    let id = created["stream_id"].as_str().expect("id").to_owned();
    let (status, mine) = ssf.call("GET", "/ssf/stream", None).await;
    assert_eq!((status, mine.as_array().map(Vec::len)), (200, Some(1)), "the caller's streams: {mine}");
    assert_eq!(stranger.call("GET", "/ssf/stream", None).await.1, json!([]), "none of another project's");
    assert_eq!(
        created["events_delivered"],
        json!(["https://schemas.openid.net/secevent/oauth/event-type/token-revoked"])
    );
    assert_eq!(created["delivery"]["endpoint_url"], server.url(&format!("/ssf/poll/{id}")));
    let (status, v) = ssf
        .call("POST", "/ssf/stream", Some(json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}})))
        .await;
    assert_eq!((status, v["error"].as_str()), (409, Some("conflict")), "one stream per client");

    for (method, path, body) in [
        ("GET", format!("/ssf/stream?stream_id={id}"), None),
        ("PATCH", "/ssf/stream".into(), Some(json!({"stream_id": id, "description": "mine now"}))),
        ("DELETE", format!("/ssf/stream?stream_id={id}"), None),
        ("GET", format!("/ssf/status?stream_id={id}"), None),
        ("POST", "/ssf/verify".into(), Some(json!({"stream_id": id}))),
        ("POST", format!("/ssf/poll/{id}"), Some(json!({"maxEvents": 1}))),
    ] {
        let (status, v) = stranger.call(method, &path, body).await;
        assert_eq!(status, 404, "{method} {path}: another project's stream is not found: {v}");
    }
    let unauthenticated =
        server.http().get(server.url(&format!("/ssf/stream?stream_id={id}"))).send().await.expect("r");
    assert_eq!(unauthenticated.status(), 401);

    let subject = |s: Value| json!({"stream_id": id, "subject": s});
    for bad in [json!({"format": "phone_number", "phone_number": "+1"}), json!({"format": "email"}), json!("alice")] {
        let (status, v) = ssf.call("POST", "/ssf/subjects/remove", Some(subject(bad))).await;
        assert_eq!(status, 400, "{v}");
    }
    let (status, v) = ssf
        .call(
            "POST",
            "/ssf/subjects/remove",
            Some(subject(json!({"format": "iss_sub", "iss": "https://elsewhere", "sub": "x"}))),
        )
        .await;
    assert_eq!(status, 400, "{v}");
    let (status, _) = ssf
        .call("POST", "/ssf/subjects/remove", Some(subject(json!({"format": "email", "email": "nobody@example.com"}))))
        .await;
    assert_eq!(status, 204, "an unknown account is accepted and says nothing");

    let (status, v) = ssf.call("POST", "/ssf/status", Some(json!({"stream_id": id, "status": "asleep"}))).await;
    assert_eq!(status, 400, "{v}");
    let (status, v) =
        ssf.call("POST", "/ssf/status", Some(json!({"stream_id": id, "status": "paused", "reason": "upgrade"}))).await;
    assert_eq!((status, &v), (200, &json!({"stream_id": id, "status": "paused", "reason": "upgrade"})));
    assert_eq!(ssf.call("POST", "/ssf/verify", Some(json!({"stream_id": id}))).await.0, 204);
    let (status, v) = ssf.call("POST", "/ssf/verify", Some(json!({"stream_id": id}))).await;
    assert_eq!((status, v["error"].as_str()), (429, Some("too_many_requests")), "min_verification_interval: {v}");
    let (status, v) = ssf.call("PATCH", "/ssf/stream", Some(json!({"stream_id": id, "events_requested": []}))).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["events_delivered"].as_array().expect("delivered").len(), 8, "none asked for: every one");
    assert_eq!(ssf.call("DELETE", &format!("/ssf/stream?stream_id={id}"), None).await.0, 204);
    assert_eq!(ssf.call("GET", &format!("/ssf/stream?stream_id={id}"), None).await.0, 404);
}

#[tokio::test]
async fn a_poll_receiver_fetches_verified_sets_acknowledges_them_and_gets_each_once() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user(ALICE).await;
    // Alice lets the app read her e-mail address, so the stream may name her by it.
    let (scopes, pkce) = ([READONLY, "email"], Pkce::new());
    let code =
        server.browser().code(&server, &app, ALICE, &scopes, &scopes, &pkce, crate::login_consent::REDIRECT).await;
    crate::login_consent::exchange(&server, &app, &code, &pkce).await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let body = json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}, "subject_format": "email"});
    let created = ssf.create(body).await;
    let poll_url = created["delivery"]["endpoint_url"].as_str().expect("poll url").to_owned();
    admin::user_set_disabled(server.store(), ALICE, true, UnixTime(SystemClock.now().0)).await.expect("disable");

    let http = std::sync::Arc::new(latchkey_client::ReqwestHttp::with_ca_file(Some(&ca(&server))).expect("http"));
    let receiver = latchkey_client::events::SetReceiver::discover(&server.base, &app.client_id, http).await.expect("r");
    let first = receiver.poll(&poll_url, &ssf.key, &[], &[], 10).await.expect("poll");
    assert!(!first.more_available);
    assert_eq!(first.sets.len(), 1);
    let set = first.sets[0].result.as_ref().expect("verified against the JWKS");
    let latchkey_client::events::Received::Event(e) = set else { panic!("new") };
    assert_eq!(e.subject, Subject::Email { email: ALICE.into() });
    assert!(matches!(e.event, Event::AccountDisabled(_)));
    let again = receiver.poll(&poll_url, &ssf.key, &[], &[], 10).await.expect("poll");
    assert_eq!(again.sets.len(), 1, "not acknowledged: handed out again");
    let acked = receiver.poll(&poll_url, &ssf.key, std::slice::from_ref(&e.jti), &[], 10).await.expect("poll");
    assert!(acked.sets.is_empty(), "acknowledged: gone");
    // A poll without returnImmediately waits (RFC 8936's default) and returns the event that arrives meanwhile.
    let path = poll_url.replace(&server.base, "");
    let enable = async {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        admin::user_set_disabled(server.store(), ALICE, false, SystemClock.now()).await.expect("enable");
    };
    let ((status, long), ()) = tokio::join!(ssf.call("POST", &path, Some(json!({"maxEvents": 5}))), enable);
    assert_eq!(status, 200, "{long}");
    assert_eq!(long["sets"].as_object().expect("sets").len(), 1, "the account-enabled event, waited for: {long}");
    let (status, v) = ssf.call("POST", &poll_url.replace(&server.base, ""), Some(json!({"ack": ["other.1"]}))).await;
    assert_eq!(status, 400, "a jti of another stream: {v}");
}

#[tokio::test]
async fn a_stream_asking_for_email_subjects_gets_iss_sub_for_an_account_that_did_not_grant_the_email_scope() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    granted(&server, &app, ALICE).await;
    let ssf = Ssf::member_of(&server, &app, DANA).await;
    let body = json!({"aud": app.client_id, "delivery": {"method": "urn:ietf:rfc:8936"}, "subject_format": "email"});
    let created = ssf.create(body).await;
    let poll_url = created["delivery"]["endpoint_url"].as_str().expect("poll url").to_owned();
    admin::user_set_disabled(server.store(), ALICE, true, SystemClock.now()).await.expect("disable");
    let http = std::sync::Arc::new(latchkey_client::ReqwestHttp::with_ca_file(Some(&ca(&server))).expect("http"));
    let receiver = latchkey_client::events::SetReceiver::discover(&server.base, &app.client_id, http).await.expect("r");
    let polled = receiver.poll(&poll_url, &ssf.key, &[], &[], 10).await.expect("poll");
    assert_eq!(polled.sets.len(), 1);
    let latchkey_client::events::Received::Event(e) = polled.sets[0].result.as_ref().expect("verified") else {
        panic!("an event")
    };
    assert_eq!(e.subject, Subject::IssSub { iss: server.base.clone(), sub: alice }, "no address without consent");
}
