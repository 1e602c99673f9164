//! Service accounts and content owners in the console's JSON API: a project's members make accounts and
//! keys (the key file handed out once; a P-256 public key uploaded and used for ES256 assertions); operators make
//! owners, name administrators and link channels; an owner's administrator grants and revokes the role, which
//! holds from the account's next call.

use crate::console_api::{assert_error, Api};
use crate::rfc7523_jwt_bearer::{claims_for, sign};
use crate::support::*;
use latchkey_admin::clock::OsRandom;
use latchkey_core::jws::SigningKey;
use latchkey_core::service_account::JWT_BEARER;
use latchkey_proto::key_file::KeyFile;
use serde_json::{json, Value};

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";
const OPS: &str = "ops@example.com";
const ARTIST: &str = "artist@example.com";

/// The SubjectPublicKeyInfo of a P-256 point, as PEM.
pub(crate) fn p256_pem(point: &[u8]) -> String {
    use base64::Engine;
    let mut der = hex_bytes("3059301306072a8648ce3d020106082a8648ce3d030107034200");
    der.extend_from_slice(point);
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    format!("-----BEGIN PUBLIC KEY-----\n{b64}\n-----END PUBLIC KEY-----\n")
}

fn hex_bytes(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

async fn exchange(server: &TestServer, assertion: &str) -> (u16, Value) {
    let r = server.token(&[("grant_type", JWT_BEARER), ("assertion", assertion)]).await;
    (r.status().as_u16(), r.json().await.expect("json"))
}

#[tokio::test]
async fn a_projects_members_manage_service_accounts_and_their_keys() {
    let server = TestServer::start().await;
    let (alice, bob) = (Api::new(&server, ALICE).await, Api::new(&server, BOB).await);
    let project = alice.project("Label tools").await;
    let accounts = format!("/console/api/v1/projects/{project}/service-accounts");
    let (status, sa) = alice.post(&accounts, json!({ "name": "uploader", "display_name": "Uploads" })).await;
    assert_eq!(status, 201, "{sa}");
    let email = sa["email"].as_str().expect("email").to_owned();
    assert_eq!(sa["display_name"], "Uploads");
    assert_error(&alice.post(&accounts, json!({ "name": "uploader" })).await, 409, "conflict");
    assert_error(&alice.post(&accounts, json!({ "name": "Bad_Name" })).await, 400, "invalid_request");
    assert_error(&bob.get(&accounts).await, 404, "not_found");
    let (_, listed) = alice.get(&accounts).await;
    assert_eq!(listed["service_accounts"][0]["email"], email.as_str());
    let account = format!("{accounts}/{email}");
    assert_eq!(alice.get(&account).await.1["unique_id"], sa["unique_id"]);
    assert_error(&alice.get(&format!("{accounts}/nobody@x.iam.latchkey.dev")).await, 404, "not_found");

    // A key made here: the key file, once, whose private key gets tokens.
    let (status, file) = alice.post(&format!("{account}/keys"), json!({})).await;
    assert_eq!(status, 201, "{file}");
    let file: KeyFile = serde_json::from_value(file).expect("a key file");
    assert_eq!((file.kind.as_str(), file.client_email.as_str()), ("service_account", email.as_str()));
    assert_eq!(file.token_uri, server.url("/token"));
    assert_eq!(exchange(&server, &sign(&file, &claims_for(&email, &file.token_uri))).await.0, 200);

    // A P-256 key uploaded: ES256 assertions under the id latchkey gave it.
    let rng = OsRandom;
    let ec = SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&rng).expect("pkcs8"), &rng).expect("key");
    let pem = p256_pem(&ec.public_jwk().to_point().expect("point"));
    let (status, uploaded) = alice.post(&format!("{account}/keys/upload"), json!({ "public_key": pem })).await;
    assert_eq!((status, uploaded["alg"].as_str()), (201, Some("ES256")), "{uploaded}");
    let kid = uploaded["key_id"].as_str().expect("key_id").to_owned();
    let es256 = ec.with_kid(&kid).sign("JWT", &claims_for(&email, &file.token_uri), &rng).expect("sign");
    let (status, token) = exchange(&server, &es256).await;
    assert_eq!(status, 200, "{token}");
    let bad = alice
        .post(
            &format!("{account}/keys/upload"),
            json!({ "public_key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----" }),
        )
        .await;
    assert_error(&bad, 400, "invalid_request");
    assert_eq!(alice.get(&format!("{account}/keys")).await.1["keys"].as_array().expect("keys").len(), 2);

    let key = format!("{account}/keys/{kid}");
    let (status, changed) = alice.call("PATCH", &key, Some(json!({ "disabled": true }))).await;
    assert_eq!((status, changed["disabled"].as_bool()), (200, Some(true)));
    assert_eq!(exchange(&server, &es256).await.1["error"], "invalid_grant", "a disabled key");
    assert_error(&bob.call("DELETE", &key, None).await, 404, "not_found");
    assert_eq!(alice.call("DELETE", &key, None).await.0, 200);
    assert_error(&alice.call("DELETE", &key, None).await, 404, "not_found");

    let (status, off) = alice.call("PATCH", &account, Some(json!({ "disabled": true }))).await;
    assert_eq!((status, off["disabled"].as_bool()), (200, Some(true)));
    assert_eq!(alice.call("DELETE", &account, None).await.0, 200);
    assert_error(&alice.get(&account).await, 404, "not_found");
}

#[tokio::test]
async fn operators_make_owners_and_an_owners_administrator_grants_and_revokes_the_role() {
    let server = TestServer::start_with(|c| c.operators = vec![OPS.into()]).await;
    let (ops, alice, bob) =
        (Api::new(&server, OPS).await, Api::new(&server, ALICE).await, Api::new(&server, BOB).await);
    server.user(ARTIST).await;
    assert_error(&alice.post("/console/api/v1/content-owners", json!({ "name": "Big Label" })).await, 403, "forbidden");
    let (status, owner) = ops.post("/console/api/v1/content-owners", json!({ "name": "Big Label" })).await;
    assert_eq!(status, 201, "{owner}");
    let path = format!("/console/api/v1/content-owners/{}", owner["content_owner_id"].as_str().expect("id"));
    assert_eq!(ops.post(&format!("{path}/channels"), json!({ "email": ARTIST })).await.0, 201);
    assert_error(&alice.post(&format!("{path}/channels"), json!({ "email": ARTIST })).await, 403, "forbidden");
    assert_error(&alice.get(&path).await, 404, "not_found");
    assert_eq!(ops.post(&format!("{path}/administrators"), json!({ "email": ALICE })).await.0, 201);
    assert_error(&ops.post(&format!("{path}/administrators"), json!({ "email": ALICE })).await, 409, "conflict");
    let (status, shown) = alice.get(&path).await;
    assert_eq!((status, shown["administrators"].clone()), (200, json!([ALICE])), "{shown}");
    assert_eq!(shown["channels"].as_array().expect("channels").len(), 1);

    // Alice's project's service account, granted the role by Alice as the owner's administrator.
    let project = alice.project("Label tools").await;
    assert_eq!(
        alice.call("PUT", &format!("/console/api/v1/projects/{project}/api"), Some(json!({ "enabled": true }))).await.0,
        200
    );
    let accounts = format!("/console/api/v1/projects/{project}/service-accounts");
    let email =
        alice.post(&accounts, json!({ "name": "uploader" })).await.1["email"].as_str().expect("email").to_owned();
    let file: KeyFile =
        serde_json::from_value(alice.post(&format!("{accounts}/{email}/keys"), json!({})).await.1).expect("file");
    let grant = format!("{path}/service-accounts/{email}");
    assert_error(&bob.call("PUT", &grant, None).await, 404, "not_found");
    let (status, granted) = alice.call("PUT", &grant, None).await;
    assert_eq!((status, granted["linked"].as_bool()), (200, Some(true)), "{granted}");
    assert_error(&alice.call("PUT", &grant, None).await, 409, "conflict");
    assert_eq!(alice.get(&path).await.1["service_accounts"], json!([email]));

    let (_, token) = exchange(&server, &sign(&file, &claims_for(&email, &file.token_uri))).await;
    let token = token["access_token"].as_str().expect("token").to_owned();
    let owner_id = owner["content_owner_id"].as_str().expect("id");
    let channels = || async {
        let url = server.url(&format!("/video/v3/channels?part=id&managedByMe=true&onBehalfOfContentOwner={owner_id}"));
        server.http().get(url).bearer_auth(&token).send().await.expect("get").status().as_u16()
    };
    assert_eq!(channels().await, 200);
    assert_eq!(alice.call("DELETE", &grant, None).await.0, 200);
    assert_eq!(channels().await, 403, "revoked: the next call is refused");
    assert_eq!(ops.call("DELETE", &format!("{path}/channels/{ARTIST}"), None).await.0, 200);
    assert_eq!(alice.get(&path).await.1["channels"], json!([]));
}
