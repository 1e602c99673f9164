//! The device authorization grant on many instances: a device code asked for at one instance is entered and
//! allowed through the other, and when the device polls both at the same moment, exactly one answers with tokens
//! and the other with `invalid_grant` (the device code is single use, and the loser revokes nothing).

use crate::instance::*;
use crate::support::{PASSWORD, READONLY};
use crate::Cluster;
use latchkey_store::test_database::Unreachable;

const DEVICE_GRANT: &str = "urn:ietf:params:oauth:grant-type:device_code";

pub(crate) async fn a_device_code_allowed_at_one_instance_gives_tokens_once_when_both_are_polled_at_once(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let url = &c.db.url;
    let project = admin_ok(url, &["project", "create", "--name", "Devices"], "").await["project_id"].clone();
    let project = project.as_str().expect("project_id");
    admin_ok(url, &["project", "enable-api", "--project", project], "").await;
    let tv = admin_ok(url, &["client", "create", "--project", project, "--type", "tv", "--name", "TV"], "").await;
    let client_id = tv["client_id"].as_str().expect("client_id");
    let (to_a, to_b) = (http(&c.tls, false), http(&c.tls, false));
    let form = [("client_id", client_id), ("scope", READONLY)];
    let (status, codes) = post(&to_a, &c.a.base, "/device/code", &form).await.expect("codes");
    assert_eq!(status, 200, "{codes}");
    let (device_code, user_code) =
        (codes["device_code"].as_str().expect("dc"), codes["user_code"].as_str().expect("uc"));

    // The person, at the other instance.
    let person = browser(&c.b.base, &c.tls, false);
    let first = person.get(&format!("{}/device?user_code={user_code}", c.b.base)).await;
    let login = person.get(&format!("{}{}", c.b.base, first.headers["location"].to_str().expect("location"))).await;
    let signed_in = person.sign_in(&login, EMAIL, PASSWORD).await;
    let page = person.get(&format!("{}{}", c.b.base, signed_in.headers["location"].to_str().expect("location"))).await;
    let (csrf, account) = (page.input("csrf").expect("csrf"), page.input("account").expect("account"));
    let consent = person.post("/device", &[("csrf", &csrf), ("account", &account), ("user_code", user_code)]).await;
    let request = consent.input("request").expect("the consent page");
    let allow = [("csrf", csrf.as_str()), ("request", &request), ("scope", READONLY), ("decision", "allow")];
    assert_eq!(person.post("/device/consent", &allow).await.status, 200);

    for (h, base) in [(&to_a, &c.a.base), (&to_b, &c.b.base)] {
        h.get(format!("{base}/healthz")).send().await.expect("warm up");
    }
    let poll = [("grant_type", DEVICE_GRANT), ("client_id", client_id), ("device_code", device_code)];
    let (ra, rb) = tokio::join!(post(&to_a, &c.a.base, "/token", &poll), post(&to_b, &c.b.base, "/token", &poll));
    let answers = [ra.expect("answer from A"), rb.expect("answer from B")];
    let won: Vec<_> = answers.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(won.len(), 1, "exactly one instance issues the tokens: {answers:?}");
    let lost = answers.iter().find(|(s, _)| *s != 200).expect("a refusal");
    assert_eq!((lost.0, lost.1["error"].as_str()), (400, Some("invalid_grant")), "{answers:?}");
    let access = won[0].1["access_token"].as_str().expect("access token");
    for base in [&c.a.base, &c.b.base] {
        assert_eq!(channels(&to_a, base, access).await.expect("api"), 200, "the loser revoked nothing, at {base}");
    }
    Ok(())
}
