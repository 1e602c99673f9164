//! Service accounts on many instances: an assertion is single use across instances (once at one, then
//! refused at the other; sent to both at the same moment, accepted by exactly one), and a key disabled with the
//! operator's CLI stops the token another instance issued at its next use.

use crate::instance::*;
use crate::Cluster;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_core::jws::RsaSigningKey;
use latchkey_core::service_account::JWT_BEARER;
use latchkey_core::time::Clock;
use latchkey_store::test_database::Unreachable;
use serde_json::{json, Value};

/// The account's identifier, the owner's id and the key file's signing key, set up with the operator's CLI.
async fn service_account(c: &Cluster) -> (String, String, RsaSigningKey) {
    let url = &c.db.url;
    let project = admin_ok(url, &["project", "create", "--name", "Label"], "").await["project_id"].clone();
    let project = project.as_str().expect("project_id");
    admin_ok(url, &["project", "enable-api", "--project", project], "").await;
    let owner = admin_ok(url, &["content-owner", "create", "--name", "Big Label"], "").await;
    let owner = owner["content_owner_id"].as_str().expect("content_owner_id").to_owned();
    admin_ok(url, &["content-owner", "link-channel", "--owner", &owner, "--email", EMAIL], "").await;
    let sa = admin_ok(url, &["service-account", "create", "--project", project, "--name", "uploader"], "").await;
    let email = sa["email"].as_str().expect("email").to_owned();
    admin_ok(url, &["content-owner", "grant", "--owner", &owner, "--service-account", &email], "").await;
    let path = c.dir.path().join("key.json");
    let out = path.to_string_lossy().into_owned();
    admin_ok(url, &["service-account", "key", "create", "--account", &email, "--out", &out], "").await;
    let file: Value = serde_json::from_slice(&std::fs::read(&path).expect("key file")).expect("json");
    let pem = file["private_key"].as_str().expect("private_key");
    let der = STANDARD.decode(pem.lines().filter(|l| !l.starts_with("-----")).collect::<String>()).expect("b64");
    let key = RsaSigningKey::from_pkcs8(&der).expect("PKCS#8").with_kid(file["private_key_id"].as_str().expect("id"));
    (email, owner, key)
}

/// A fresh assertion for the cluster's public token endpoint.
fn assertion(c: &Cluster, email: &str, key: &RsaSigningKey) -> String {
    let now = SystemClock.now().0;
    let jti = latchkey_core::secret::random_b64(16, &OsRandom);
    let claims = json!({"iss": email, "aud": format!("{}/token", c.public), "iat": now, "exp": now + 600,
        "scope": "https://latchkey.dev/auth/readonly", "jti": jti});
    key.sign("JWT", &claims, &OsRandom).expect("sign")
}

async fn exchange(http: &reqwest::Client, base: &str, assertion: &str) -> (u16, Value) {
    let form = [("grant_type", JWT_BEARER), ("assertion", assertion)];
    let r = http.post(format!("{base}/token")).form(&form).send().await.expect("token");
    (r.status().as_u16(), r.json().await.expect("json"))
}

pub(crate) async fn an_assertion_is_single_use_across_instances_and_a_disabled_key_stops_tokens_everywhere(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let http = http(&c.tls, false);
    let (email, owner, key) = service_account(&c).await;

    let once = assertion(&c, &email, &key);
    let (status, token) = exchange(&http, &c.a.base, &once).await;
    assert_eq!(status, 200, "{token}");
    let (status, again) = exchange(&http, &c.b.base, &once).await;
    assert_eq!((status, again["error"].as_str()), (400, Some("invalid_grant")), "replayed at the other instance");

    for round in 0..5 {
        let shared = assertion(&c, &email, &key);
        let (a, b) = tokio::join!(exchange(&http, &c.a.base, &shared), exchange(&http, &c.b.base, &shared));
        let won = [&a, &b].iter().filter(|r| r.0 == 200).count();
        assert_eq!(won, 1, "round {round}: exactly one instance accepts the assertion: {a:?} {b:?}");
    }

    let token = token["access_token"].as_str().expect("access_token");
    let channels = format!("{}/video/v3/channels?part=id&managedByMe=true&onBehalfOfContentOwner={owner}", c.b.base);
    assert_eq!(http.get(&channels).bearer_auth(token).send().await.expect("get").status(), 200);
    let key_id = key.kid().to_owned();
    admin_ok(&c.db.url, &["service-account", "key", "disable", "--key", &key_id], "").await;
    let r = http.get(&channels).bearer_auth(token).send().await.expect("get");
    assert_eq!(r.status(), 401, "A's token, its key disabled with the CLI, refused by B at once");
    Ok(())
}
