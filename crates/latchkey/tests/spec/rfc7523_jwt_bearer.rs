//! RFC 7523 §2.1, the JWT bearer grant for service accounts (`docs/service-accounts.md`): a content owner's service
//! account signs an assertion with its key file, exchanges it at `/token` for an access token, and lists the owner's
//! channels on its behalf. Every refusal of the grant, and of the data API on behalf of an owner, under its condition.

use crate::support::*;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_admin::content_owners as owners;
use latchkey_admin::service_account_keys as keys;
use latchkey_admin::service_accounts as accounts;
use latchkey_admin::Actor;
use latchkey_core::jws::RsaSigningKey;
use latchkey_core::service_account::JWT_BEARER;
use latchkey_core::time::Clock;
use latchkey_proto::key_file::KeyFile;
use serde_json::{json, Value};

const ARTIST: &str = "artist@example.com";
const BAND: &str = "band@example.com";

/// A content owner with two linked channels and a service account granted its role, with one key file.
struct Label {
    server: TestServer,
    owner: String,
    email: String,
    file: KeyFile,
}

impl Label {
    async fn new() -> Self {
        Self::with_config(|_| {}).await
    }

    async fn with_config(change: impl FnOnce(&mut latchkey_config::Config)) -> Self {
        let server = TestServer::start_with(change).await;
        let store = server.store();
        let now = SystemClock.now();
        let app = server.app().await;
        let owner = owners::content_owner_create(store, "Big Label", now).await.expect("owner").content_owner_id;
        for email in [ARTIST, BAND] {
            server.user(email).await;
            owners::content_owner_link_channel(store, &owner, email, true, now).await.expect("link");
        }
        let sa = accounts::service_account_create(
            store,
            &Actor::Operator,
            &app.project_id,
            "uploader",
            None,
            "latchkey.dev",
            now,
        )
        .await
        .expect("service account");
        owners::content_owner_grant(store, &Actor::Operator, &owner, &sa.email, true, now).await.expect("grant");
        let file = Self::key(&server, &sa.email).await;
        Self { server, owner, email: sa.email, file }
    }

    async fn key(server: &TestServer, email: &str) -> KeyFile {
        let urls = (server.url("/o/oauth2/v2/auth"), server.url("/token"));
        keys::key_create(server.store(), &Actor::Operator, email, (&urls.0, &urls.1), SystemClock.now())
            .await
            .expect("key")
    }

    /// The claims a standard library sends, valid now.
    fn claims(&self) -> Value {
        claims_for(&self.email, &self.file.token_uri)
    }

    fn sign(file: &KeyFile, claims: &Value) -> String {
        sign(file, claims)
    }

    /// A valid assertion of the account's key file.
    fn signed(&self) -> String {
        Self::sign(&self.file, &self.claims())
    }

    async fn exchange(&self, assertion: &str) -> reqwest::Response {
        self.server.token(&[("grant_type", JWT_BEARER), ("assertion", assertion)]).await
    }

    /// A fresh access token for the account.
    async fn token(&self) -> String {
        let r = self.exchange(&self.signed()).await;
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.expect("json");
        body["access_token"].as_str().expect("access_token").to_owned()
    }

    async fn channels(&self, query: &str, token: &str) -> reqwest::Response {
        let url = self.server.url(&format!("/video/v3/channels?part=id,snippet&{query}"));
        self.server.http().get(url).bearer_auth(token).send().await.expect("channels")
    }
}

/// `claims` signed RS256 with `file`'s private key, named by its `private_key_id`.
pub(crate) fn sign(file: &KeyFile, claims: &Value) -> String {
    let body: String = file.private_key.lines().filter(|l| !l.starts_with("-----")).collect();
    let key = RsaSigningKey::from_pkcs8(&STANDARD.decode(body).expect("base64")).expect("PKCS#8");
    key.with_kid(&file.private_key_id).sign("JWT", claims, &OsRandom).expect("sign")
}

/// Claims a standard library sends for `email`, valid now, for the token endpoint `aud`.
pub(crate) fn claims_for(email: &str, aud: &str) -> Value {
    let now = SystemClock.now().0;
    json!({"iss": email, "scope": READONLY, "aud": aud, "iat": now, "exp": now + 3600,
           "jti": format!("{now}-{}", rand_suffix())})
}

fn rand_suffix() -> u64 {
    let mut b = [0u8; 8];
    latchkey_core::secret::Random::fill(&OsRandom, &mut b);
    u64::from_le_bytes(b)
}

/// The status, the RFC 6749 error code and its description.
async fn refusal(r: reqwest::Response) -> (u16, String, String) {
    let status = r.status().as_u16();
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.expect("json error");
    (
        status,
        body["error"].as_str().unwrap_or_default().into(),
        body["error_description"].as_str().unwrap_or_default().into(),
    )
}

/// The status and the first reason of a data-API error.
async fn reason(r: reqwest::Response) -> (u16, String) {
    let status = r.status().as_u16();
    let body: Value = r.json().await.expect("json error");
    (status, body["error"]["errors"][0]["reason"].as_str().unwrap_or_default().to_owned())
}

fn ids(body: &Value) -> Vec<String> {
    body["items"].as_array().expect("items").iter().map(|c| c["id"].as_str().expect("id").to_owned()).collect()
}

#[tokio::test]
async fn a_signed_assertion_buys_an_access_token_that_lists_the_owners_channels() {
    let label = Label::new().await;
    let metadata: Value = label
        .server
        .http()
        .get(label.server.url("/.well-known/openid-configuration"))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json");
    assert!(metadata["grant_types_supported"].as_array().expect("list").iter().any(|g| g == JWT_BEARER));

    let r = label.exchange(&label.signed()).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: Value = r.json().await.expect("json");
    assert_eq!((body["token_type"].as_str(), body["scope"].as_str()), (Some("Bearer"), Some(READONLY)));
    assert!(body.get("refresh_token").is_none() && body.get("id_token").is_none(), "an access token only: {body}");
    let lifetime = body["expires_in"].as_u64().expect("expires_in");
    assert!((1..=3600).contains(&lifetime), "{lifetime}");
    let token = body["access_token"].as_str().expect("token");

    let owned = label.channels(&format!("managedByMe=true&onBehalfOfContentOwner={}", label.owner), token).await;
    assert_eq!(owned.status(), 200);
    let all: Value = owned.json().await.expect("json");
    let all_ids = ids(&all);
    assert_eq!((all_ids.len(), all["pageInfo"]["totalResults"].as_u64()), (2, Some(2)), "{all}");
    assert!(all_ids.windows(2).all(|w| w[0] < w[1]), "by id");

    let one =
        label.channels(&format!("id={},UCnot-theirs&onBehalfOfContentOwner={}", all_ids[1], label.owner), token).await;
    assert_eq!(ids(&one.json().await.expect("json")), vec![all_ids[1].clone()]);

    // Pages: one channel each, the token continuing after the first.
    let q = format!("managedByMe=true&onBehalfOfContentOwner={}&maxResults=1", label.owner);
    let first: Value = label.channels(&q, token).await.json().await.expect("json");
    assert_eq!(ids(&first), vec![all_ids[0].clone()]);
    let next = first["nextPageToken"].as_str().expect("nextPageToken");
    let second: Value = label.channels(&format!("{q}&pageToken={next}"), token).await.json().await.expect("json");
    assert_eq!((ids(&second), second.get("nextPageToken")), (vec![all_ids[1].clone()], None));
}

#[tokio::test]
async fn every_refusal_of_the_grant_is_rfc_6749_json_with_the_description_developers_search_for() {
    let label = Label::new().await;
    let other_key = Label::key(&label.server, &label.email).await;
    let now = SystemClock.now().0;
    let with = |change: Value| {
        let mut c = label.claims();
        for (k, v) in change.as_object().expect("object") {
            if v.is_null() {
                c.as_object_mut().expect("object").remove(k);
            } else {
                c[k] = v.clone();
            }
        }
        Label::sign(&label.file, &c)
    };
    let unsigned = |alg: &str| {
        let h = URL_SAFE_NO_PAD.encode(json!({"alg": alg, "kid": label.file.private_key_id}).to_string());
        let c = URL_SAFE_NO_PAD.encode(label.claims().to_string());
        format!("{h}.{c}.{}", URL_SAFE_NO_PAD.encode(b"sig"))
    };
    let wrong_key = KeyFile { private_key_id: label.file.private_key_id.clone(), ..other_key.clone() };
    let unknown_kid = KeyFile { private_key_id: "0".repeat(40), ..label.file.clone() };
    let rows: Vec<(&str, String, &str, &str)> = vec![
        ("not a JWT", "not.a.jwt".into(), "invalid_grant", "Invalid JWT"),
        ("alg none", unsigned("none"), "invalid_grant", "alg must be RS256 or ES256"),
        ("alg HS256", unsigned("HS256"), "invalid_grant", "alg must be RS256 or ES256"),
        ("unknown kid", Label::sign(&unknown_kid, &label.claims()), "invalid_grant", "Invalid JWT Signature"),
        (
            "another key's signature",
            Label::sign(&wrong_key, &label.claims()),
            "invalid_grant",
            "Invalid JWT Signature.",
        ),
        ("expired", with(json!({"iat": now - 4000, "exp": now - 400})), "invalid_grant", "short-lived token"),
        ("too long-lived", with(json!({"exp": now + 3601})), "invalid_grant", "short-lived token"),
        (
            "issued in the future",
            with(json!({"iat": now + 600, "exp": now + 1200})),
            "invalid_grant",
            "short-lived token",
        ),
        ("no exp", with(json!({"exp": null})), "invalid_grant", "short-lived token"),
        (
            "wrong audience",
            with(json!({"aud": "https://elsewhere.example/token"})),
            "invalid_grant",
            "Failed audience check",
        ),
        ("unknown account", with(json!({"iss": "nobody@p.iam.latchkey.dev"})), "invalid_grant", "account not found"),
        ("delegation", with(json!({"sub": ARTIST})), "unauthorized_client", "Client is unauthorized"),
        ("no scope", with(json!({"scope": null})), "invalid_scope", "Invalid scope"),
        ("unknown scope", with(json!({"scope": "https://elsewhere.example/auth/all"})), "invalid_scope", "invalid"),
        ("a person's scope", with(json!({"scope": "openid"})), "invalid_scope", "sign a person in"),
        ("oversized", format!("{}.e30.e30", "A".repeat(9000)), "invalid_grant", "Invalid JWT"),
    ];
    for (row, assertion, code, description) in rows {
        let (status, error, text) = refusal(label.exchange(&assertion).await).await;
        assert_eq!((status, error.as_str()), (400, code), "{row}: {text}");
        assert!(text.contains(description), "{row}: {text}");
    }
    let r = label.server.token(&[("grant_type", JWT_BEARER)]).await;
    assert_eq!(refusal(r).await.1, "invalid_request", "no assertion");

    // The scope may come as the RFC 7521 parameter instead of the claim; both only alike.
    let no_claim = with(json!({"scope": null}));
    let r = label.server.token(&[("grant_type", JWT_BEARER), ("assertion", &no_claim), ("scope", READONLY)]).await;
    assert_eq!(r.status(), 200, "the scope parameter");
    let r = label.server.token(&[("grant_type", JWT_BEARER), ("assertion", &label.signed()), ("scope", UPLOAD)]).await;
    let (status, error, text) = refusal(r).await;
    assert_eq!((status, error.as_str()), (400, "invalid_scope"));
    assert!(text.contains("differs"), "{text}");

    // Single use, within the assertion's lifetime.
    let first = label.claims();
    let once = Label::sign(&label.file, &first);
    assert_eq!(label.exchange(&once).await.status(), 200);
    let (status, error, text) = refusal(label.exchange(&once).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_grant"));
    assert!(text.contains("used already"), "{text}");
    // Its jti is spent until its exp, whatever another assertion's exp and iat.
    let mut again = first.clone();
    again["exp"] = (first["exp"].as_i64().expect("exp") - 600).into();
    again["iat"] = (first["iat"].as_i64().expect("iat") - 1).into();
    let (status, error, text) = refusal(label.exchange(&Label::sign(&label.file, &again)).await).await;
    assert_eq!((status, error.as_str()), (400, "invalid_grant"), "{text}");
    assert!(text.contains("used already"), "{text}");

    // A disabled account gets no token, even with a valid assertion; a disabled key is not found.
    accounts::service_account_set_disabled(
        label.server.store(),
        &Actor::Operator,
        &label.email,
        true,
        SystemClock.now(),
    )
    .await
    .expect("disable");
    let (_, error, text) = refusal(label.exchange(&label.signed()).await).await;
    assert_eq!(error, "invalid_grant");
    assert!(text.contains("disabled"), "{text}");
    accounts::service_account_set_disabled(
        label.server.store(),
        &Actor::Operator,
        &label.email,
        false,
        SystemClock.now(),
    )
    .await
    .expect("enable");
    keys::key_set_disabled(label.server.store(), &Actor::Operator, &label.file.private_key_id, true, SystemClock.now())
        .await
        .expect("disable key");
    let (_, _, text) = refusal(label.exchange(&label.signed()).await).await;
    assert!(text.contains("no live key"), "{text}");
}

#[tokio::test]
async fn disabling_the_key_or_the_account_stops_its_tokens_at_their_next_use() {
    let label = Label::new().await;
    let store = label.server.store();
    let token = label.token().await;
    let q = format!("managedByMe=true&onBehalfOfContentOwner={}", label.owner);
    assert_eq!(label.channels(&q, &token).await.status(), 200);
    let now = SystemClock.now();

    keys::key_set_disabled(store, &Actor::Operator, &label.file.private_key_id, true, now).await.expect("disable key");
    assert_eq!(reason(label.channels(&q, &token).await).await, (401, "authError".into()));
    keys::key_set_disabled(store, &Actor::Operator, &label.file.private_key_id, false, now).await.expect("enable key");
    assert_eq!(label.channels(&q, &token).await.status(), 200);

    accounts::service_account_set_disabled(store, &Actor::Operator, &label.email, true, now).await.expect("disable");
    assert_eq!(reason(label.channels(&q, &token).await).await, (401, "authError".into()));
    accounts::service_account_set_disabled(store, &Actor::Operator, &label.email, false, now).await.expect("enable");
    assert_eq!(label.channels(&q, &token).await.status(), 200);

    keys::key_delete(store, &Actor::Operator, &label.file.private_key_id).await.expect("delete key");
    assert_eq!(reason(label.channels(&q, &token).await).await, (401, "authError".into()));
}

#[tokio::test]
async fn a_token_that_may_not_act_for_the_owner_is_403_account_delegation_forbidden() {
    let label = Label::new().await;
    let store = label.server.store();
    let token = label.token().await;
    let forbidden = (403, "accountDelegationForbidden".to_string());
    let other = owners::content_owner_create(store, "Other Label", SystemClock.now()).await.expect("owner");
    for owner in [other.content_owner_id.as_str(), "co-000000000000"] {
        let r = label.channels(&format!("managedByMe=true&onBehalfOfContentOwner={owner}"), &token).await;
        assert_eq!(reason(r).await, forbidden, "{owner}");
    }
    // A user's token may not act for an owner either, and is otherwise unchanged.
    let app = label.server.app().await;
    let user = label.server.tokens(&app, ARTIST, &[READONLY]).await.access_token;
    let r = label.channels(&format!("managedByMe=true&onBehalfOfContentOwner={}", label.owner), &user).await;
    assert_eq!(reason(r).await, forbidden);
    assert_eq!(label.channels("mine=true", &user).await.status(), 200);

    let bad = [
        ("mine=true", "missingRequiredParameter"),
        ("managedByMe=true", "missingRequiredParameter"),
        ("", "missingRequiredParameter"),
        ("mine=true&managedByMe=true", "invalidParameter"),
        ("managedByMe=yes", "invalidParameter"),
        ("maxResults=51&managedByMe=true", "invalidParameter"),
        ("pageToken=%25%25&managedByMe=true", "invalidPageToken"),
    ];
    for (query, expected) in bad {
        let with_owner = format!("{query}&onBehalfOfContentOwner={}", label.owner);
        let q = if expected == "missingRequiredParameter" { query.to_owned() } else { with_owner };
        assert_eq!(reason(label.channels(&q, &token).await).await, (400, expected.to_string()), "{q}");
    }
    let r = label.channels(&format!("mine=true&onBehalfOfContentOwner={}", label.owner), &token).await;
    assert_eq!(reason(r).await, (400, "invalidParameter".into()));
}

#[tokio::test]
async fn a_service_accounts_token_is_not_a_persons_and_is_not_revoked_at_the_revocation_endpoint() {
    let label = Label::new().await;
    let token = label.token().await;
    let userinfo =
        label.server.http().get(label.server.url("/v1/userinfo")).bearer_auth(&token).send().await.expect("get");
    assert_eq!(userinfo.status(), 403);
    let r = label
        .server
        .http()
        .post(label.server.url("/revoke"))
        .form(&[("token", token.as_str())])
        .send()
        .await
        .expect("post");
    let (status, error, _) = refusal(r).await;
    assert_eq!((status, error.as_str()), (400, "unsupported_token_type"));
    let q = format!("managedByMe=true&onBehalfOfContentOwner={}", label.owner);
    assert_eq!(label.channels(&q, &token).await.status(), 200, "still valid");
}

#[tokio::test]
async fn the_sdk_loads_the_key_file_and_keeps_one_token_with_one_exchange_in_flight() {
    use latchkey_client::ServiceAccountCredentials;
    use std::sync::Arc;
    let label = Label::new().await;
    let json = serde_json::to_string(&label.file).expect("json");
    let http = Arc::new(latchkey_client::ReqwestHttp::from_client(label.server.http()));
    let sdk = Arc::new(ServiceAccountCredentials::from_json(&json, &[READONLY], http.clone()).expect("load"));
    assert_eq!(sdk.email(), label.email);
    let asked: Vec<_> = (0..8)
        .map(|_| {
            tokio::spawn({
                let sdk = sdk.clone();
                async move { sdk.access_token().await }
            })
        })
        .collect();
    let mut tokens = Vec::new();
    for t in asked {
        tokens.push(t.await.expect("join").expect("token"));
    }
    assert!(tokens.iter().all(|t| *t == tokens[0]), "one exchange, its token shared by all eight");
    let q = format!("managedByMe=true&onBehalfOfContentOwner={}", label.owner);
    assert_eq!(label.channels(&q, &tokens[0]).await.status(), 200);
    assert_eq!(sdk.access_token().await.expect("cached"), tokens[0], "cached while it has more than a minute");
    sdk.forget().await;
    assert_ne!(sdk.access_token().await.expect("new"), tokens[0], "a new assertion after forget");

    // A token that lives less than the SDK's one-minute margin is replaced on every call.
    let short = Label::with_config(|c| c.access_token_lifetime = 30).await;
    let json = serde_json::to_string(&short.file).expect("json");
    let http = Arc::new(latchkey_client::ReqwestHttp::from_client(short.server.http()));
    let sdk = ServiceAccountCredentials::from_json(&json, &[READONLY], http).expect("load");
    assert_ne!(sdk.access_token().await.expect("one"), sdk.access_token().await.expect("two"));

    // Refusals come back typed: a disabled account's.
    let store = short.server.store();
    accounts::service_account_set_disabled(store, &Actor::Operator, &short.email, true, SystemClock.now())
        .await
        .expect("off");
    match sdk.access_token().await {
        Err(latchkey_client::Error::OAuth { code, .. }) => assert_eq!(code, "invalid_grant"),
        other => panic!("{other:?}"),
    }
    let not_a_key = json.replace("service_account", "authorized_user");
    assert!(ServiceAccountCredentials::from_json(
        &not_a_key,
        &[READONLY],
        Arc::new(latchkey_client::ReqwestHttp::from_client(short.server.http()))
    )
    .is_err());
}
