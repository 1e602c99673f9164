//! Many instances, one truth (`docs/scaling.md`): real `latchkey serve` processes on one PostgreSQL database, each test
//! on a fresh, empty database that the instances migrate themselves. A round-robin TCP balancer made here stands in for
//! the operator's load balancer, and its address is the instances' shared public URL.
//!
//! - a code issued through one instance is redeemed exactly once, even when both redeem it at the same moment;
//! - a grant revoked at one instance is refused at the other's token endpoint at once, and at its data API
//!   within 1 s (there is no grant cache: every data-API call reads the grant);
//! - DPoP `jti`s and nonces are single use across instances;
//! - the refresh-token limits hold under concurrent issuance on both instances;
//! - database faults ([`faults`]) and SIGKILL under load ([`crash`], PostgreSQL and SQLite);
//! - security events ([`events`]): delivered once by two instances sharing the outbox, and none lost across a
//!   SIGKILL and a receiver down for a while;
//! - PostgreSQL failover ([`failover`]): under load on two instances, the primary of a synchronous pair made here
//!   ([`cluster`]) is SIGKILLed and its standby promoted; 503s with `Retry-After` meanwhile, then service again
//!   with no restart, nothing acknowledged lost, and DPoP proofs and codes used before still refused;
//! - service accounts ([`service_accounts`]): an assertion single use across instances, a disabled key's token
//!   refused everywhere;
//! - the device grant ([`device`]): a device code allowed through one instance gives tokens once when both are polled
//!   at the same moment;
//! - refresh-token rotation ([`rotation`]): a token rotated at one instance is retired at the other, and rotates
//!   once when both are sent it at the same moment.
//!
//! A test binary of its own, out of `spec`, under the harness of `latchkey_store::test_database` (libtest-mimic):
//! without a reachable PostgreSQL (`LATCHKEY_TEST_DATABASE_URL`, default the local server) the PostgreSQL tests are
//! reported as ignored, not passed, except under `CI=true`, where that fails them (docs/design.md, "Tests").

#[path = "../common/set_receiver.rs"]
mod set_receiver;
#[path = "../spec/support.rs"]
mod support;

mod cluster;
mod crash;
mod device;
mod events;
mod failover;
mod faults;
mod instance;
mod measure;
mod proxy;
mod resources;
mod rotation;
mod service_accounts;

use crate::support::Pkce;
use instance::*;
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_core::dpop::code_jti;
use latchkey_core::jws::{sign_parts, EcJwk};
use latchkey_core::time::Clock;
use latchkey_proto::TokenResponse;
use latchkey_store::test_database::{run, TestDatabase, Unreachable};
use proxy::Forwarder;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use tempfile::TempDir;

fn main() -> ExitCode {
    let mut tests = latchkey_store::trials!("";
        two_instances_on_an_empty_database_behind_a_round_robin_balancer_serve_one_consistent_service,
        a_code_issued_through_one_instance_is_redeemed_exactly_once_even_when_both_redeem_it_at_once,
        a_grant_revoked_at_one_instance_is_refused_by_the_others_token_and_introspection_endpoints_at_once_and_by_its_data_api_within_a_second,
        a_token_signed_with_a_key_rotated_in_elsewhere_is_accepted_and_revoked_by_every_instance,
        access_removed_with_the_admin_cli_ends_the_apps_tokens_on_every_instance,
        an_organisation_policy_set_through_one_instance_holds_on_the_next_authorization_at_the_other,
        dpop_jtis_and_nonces_are_single_use_across_instances,
        the_refresh_token_limits_hold_under_concurrent_issuance_on_two_instances,
        crash::on_postgresql_an_instance_killed_under_load_loses_no_token_it_sent_nor_a_revocation_it_acknowledged,
        crash::on_sqlite_an_instance_killed_under_load_and_restarted_loses_no_token_it_sent_nor_a_revocation_it_acknowledged,
        faults::while_postgresql_is_unreachable_requests_fail_fast_with_503_and_service_resumes_without_a_restart,
        faults::a_database_refusing_connections_or_dropped_is_an_outage_answered_503_until_it_is_back,
        failover::a_postgresql_failover_under_load_loses_nothing_acknowledged_and_what_was_used_once_stays_used,
        events::on_two_instances_sharing_postgresql_every_event_is_delivered_once,
        events::an_instance_killed_and_a_receiver_down_lose_no_event,
        service_accounts::an_assertion_is_single_use_across_instances_and_a_disabled_key_stops_tokens_everywhere,
        device::a_device_code_allowed_at_one_instance_gives_tokens_once_when_both_are_polled_at_once,
        resources::an_api_registered_with_the_cli_introspects_at_one_instance_what_the_other_issued_and_revoked,
        rotation::a_refresh_token_rotated_at_one_instance_is_retired_at_the_other_and_rotates_once_when_both_refresh_it,
    );
    // A measurement, not a check: run it by name with --ignored (measure.rs).
    let measurements =
        latchkey_store::trials!(""; measure::measure_token_and_data_api_throughput_for_the_capacity_plan);
    tests.extend(measurements.into_iter().map(|t| t.with_ignored_flag(true)));
    // Each test runs processes of its own (two or three servers, the admin CLI): one at a time per core.
    run(tests, 1)
}

/// Two instances on one fresh PostgreSQL database, behind a round-robin balancer whose address is their public
/// URL, with a desktop client and a user made by the admin CLI.
struct Cluster {
    a: Instance,
    b: Instance,
    lb: Forwarder,
    tls: Tls,
    client_id: String,
    /// The public URL: the balancer.
    public: String,
    dir: TempDir,
    db: TestDatabase,
}

impl Cluster {
    /// [`Unreachable`] when PostgreSQL is not reachable (outside CI).
    async fn start(env: &[(&str, &str)]) -> Result<Self, Unreachable> {
        let db = TestDatabase::create_database().await?;
        let dir = tempfile::tempdir().expect("tempdir");
        let tls = Tls::generate(&dir.path().join("tls"));
        let lb = Forwarder::bind().await;
        let public = format!("https://{}", lb.addr);
        let (dir_a, dir_b) = (dir.path().join("a"), dir.path().join("b"));
        let spec = |d| Spec { database_url: &db.url, dir: d, tls: &tls, public_url: Some(&public), env };
        // Both start at once on the empty database, with no other step: each migrates (under a lock) and they
        // settle on the same keys.
        let (starting_a, starting_b) = (Instance::spawn(&spec(&dir_a)), Instance::spawn(&spec(&dir_b)));
        let (a, b) = (starting_a.ready().await, starting_b.ready().await);
        lb.set_upstreams(vec![a.addr, b.addr]);
        let client_id = provision(&db.url).await;
        Ok(Self { a, b, lb, tls, client_id, public, dir, db })
    }

    /// A third instance on the same database and certificate.
    async fn another(&self, name: &str) -> Instance {
        let d = self.dir.path().join(name);
        let spec =
            Spec { database_url: &self.db.url, dir: &d, tls: &self.tls, public_url: Some(&self.public), env: &[] };
        Instance::start(&spec).await
    }

    /// Tokens for a code got through `base` and exchanged there.
    async fn tokens_via(&self, base: &str) -> TokenResponse {
        let (code, pkce) = codes(&browser(base, &self.tls, false), base, &self.client_id, 1).await.remove(0);
        exchange(&http(&self.tls, false), base, &self.client_id, &code, &pkce).await
    }
}

async fn two_instances_on_an_empty_database_behind_a_round_robin_balancer_serve_one_consistent_service(
) -> Result<(), Unreachable> {
    let mut c = Cluster::start(&[]).await?;
    // The operator's explicit migration step finds nothing left to do, and says which backend it ran on.
    let migrated = admin_ok(&c.db.url, &["migrate"], "").await;
    assert_eq!(
        migrated,
        json!({ "migrated": true, "backend": "postgres", "store": "the PostgreSQL database of database_url" })
    );
    let http = http(&c.tls, true);
    for base in [&c.a.base, &c.b.base] {
        let meta: Value = http
            .get(format!("{base}/.well-known/openid-configuration"))
            .send()
            .await
            .expect("metadata")
            .json()
            .await
            .expect("json");
        assert_eq!(meta["issuer"], c.public.as_str(), "every instance names the balancer as the issuer");
    }
    // A whole flow through the balancer, every request on a new connection, so the instances take turns: the
    // sign-in form of one is posted to the other, the consent of one is decided at the other, and so on.
    let browser = browser(&c.public, &c.tls, true);
    let (code, pkce) = codes(&browser, &c.public, &c.client_id, 1).await.remove(0);
    let t = exchange(&http, &c.public, &c.client_id, &code, &pkce).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    for _ in 0..3 {
        assert_eq!(channels(&http, &c.public, &t.access_token).await.expect("api"), 200);
        let (status, body) = refresh(&http, &c.public, &c.client_id, &rt).await.expect("refresh");
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(revoke(&http, &c.public, &c.client_id, &rt).await.expect("revoke"), 200);
    for base in [&c.a.base, &c.b.base] {
        assert_eq!(channels(&http, base, &t.access_token).await.expect("api"), 401, "revoked, at {base}");
        let (status, body) = refresh(&http, base, &c.client_id, &rt).await.expect("refresh");
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "at {base}");
    }
    let served = c.lb.served();
    assert!(served.iter().all(|n| *n >= 4), "both instances served the flow: {served:?}");
    c.a.assert_healthy();
    c.b.assert_healthy();
    Ok(())
}

async fn a_code_issued_through_one_instance_is_redeemed_exactly_once_even_when_both_redeem_it_at_once(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let codes = codes(&browser(&c.a.base, &c.tls, false), &c.a.base, &c.client_id, 8).await;
    let (to_a, to_b) = (http(&c.tls, false), http(&c.tls, false));
    // Open both connections first, so that the two requests leave together.
    for (h, base) in [(&to_a, &c.a.base), (&to_b, &c.b.base)] {
        h.get(format!("{base}/healthz")).send().await.expect("warm up");
    }
    for (code, pkce) in &codes {
        let form = exchange_form(&c.client_id, code, pkce);
        let (ra, rb) = tokio::join!(post(&to_a, &c.a.base, "/token", &form), post(&to_b, &c.b.base, "/token", &form));
        let answers = [ra.expect("answer from A"), rb.expect("answer from B")];
        let won: Vec<_> = answers.iter().filter(|(s, _)| *s == 200).collect();
        assert_eq!(won.len(), 1, "exactly one instance redeems the code: {answers:?}");
        let lost = answers.iter().find(|(s, _)| *s != 200).expect("a refusal");
        assert_eq!((lost.0, lost.1["error"].as_str()), (400, Some("invalid_grant")), "{answers:?}");
    }
    Ok(())
}

async fn a_grant_revoked_at_one_instance_is_refused_by_the_others_token_and_introspection_endpoints_at_once_and_by_its_data_api_within_a_second(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let http = http(&c.tls, false);
    let t = c.tokens_via(&c.a.base).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    assert_eq!(channels(&http, &c.b.base, &t.access_token).await.expect("api"), 200);
    let (status, body) = refresh(&http, &c.b.base, &c.client_id, &rt).await.expect("refresh");
    assert_eq!(status, 200, "{body}");
    let from_b = body["access_token"].as_str().expect("access token").to_owned();
    let introspect = |token: &str| {
        let (http, base, client_id) = (&http, &c.b.base, &c.client_id);
        let token = token.to_owned();
        async move {
            let form = [("token", token.as_str()), ("client_id", client_id.as_str())];
            post(http, base, "/introspect", &form).await.expect("introspect").1["active"].clone()
        }
    };
    assert_eq!(introspect(&from_b).await, true, "B's introspection knows A's grant");
    assert_eq!(revoke(&http, &c.a.base, &c.client_id, &rt).await.expect("revoke"), 200);
    let acknowledged = Instant::now();
    let (status, body) = refresh(&http, &c.b.base, &c.client_id, &rt).await.expect("refresh");
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "B's token endpoint, at once");
    for token in [rt.as_str(), &t.access_token, &from_b] {
        assert_eq!(introspect(token).await, false, "B's introspection, at once");
    }
    for access in [&t.access_token, &from_b] {
        loop {
            let status = channels(&http, &c.b.base, access).await.expect("api");
            if status == 401 {
                break;
            }
            assert_eq!(status, 200);
            assert!(acknowledged.elapsed() < Duration::from_secs(1), "B's data API still accepts after 1 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    assert!(acknowledged.elapsed() < Duration::from_secs(1));
    Ok(())
}

async fn access_removed_with_the_admin_cli_ends_the_apps_tokens_on_every_instance() -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let http = http(&c.tls, false);
    let t = c.tokens_via(&c.a.base).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    assert_eq!(channels(&http, &c.b.base, &t.access_token).await.expect("api"), 200);
    let listed = admin_ok(&c.db.url, &["user", "grants", "--email", EMAIL], "").await;
    assert_eq!(listed["apps"][0]["client_id"], c.client_id.as_str(), "{listed}");
    let args = ["user", "revoke-app", "--email", EMAIL, "--client", &c.client_id];
    assert_eq!(admin_ok(&c.db.url, &args, "").await["revoked"], 1);
    let removed = Instant::now();
    for base in [&c.a.base, &c.b.base] {
        let (status, body) = refresh(&http, base, &c.client_id, &rt).await.expect("refresh");
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{base}, at once");
        loop {
            let status = channels(&http, base, &t.access_token).await.expect("api");
            if status == 401 {
                break;
            }
            assert_eq!(status, 200);
            assert!(removed.elapsed() < Duration::from_secs(1), "{base}'s data API still accepts after 1 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let (code, _, err) = admin(&c.db.url, &args, "").await;
    assert_eq!(code, 3, "nothing left to remove is not found: {err}");
    Ok(())
}

/// An administrator blocks the app through instance A's JSON API: the next authorization, served by B, is refused
/// with the `admin_policy_enforced` page, and the grant issued before is refused by both (no policy is cached).
async fn an_organisation_policy_set_through_one_instance_holds_on_the_next_authorization_at_the_other(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let http = http(&c.tls, false);
    let t = c.tokens_via(&c.b.base).await;
    let org = admin_ok(&c.db.url, &["org", "create", "--name", "Many", "--domain", "example.com"], "").await;
    let org = org["org_id"].as_str().expect("org_id").to_owned();
    admin_ok(&c.db.url, &["org", "add-admin", "--org", &org, "--email", EMAIL], "").await;
    let key = admin_ok(&c.db.url, &["api-key", "create", "--email", EMAIL, "--name", "admin"], "").await;
    let key = key["api_key"].as_str().expect("api_key").to_owned();
    let path = format!("{}/console/api/v1/orgs/{org}/apps/{}", c.a.base, c.client_id);
    let r = http.put(path).bearer_auth(&key).json(&json!({ "access": "blocked" })).send().await.expect("put");
    assert_eq!(r.status(), 200, "{:?}", r.text().await);
    let browser = browser(&c.b.base, &c.tls, false);
    let refused = browser.consent_page(&authorize_url(&c.b.base, &c.client_id, &Pkce::new()), EMAIL).await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(refused.body.contains("admin_policy_enforced"), "{}", refused.body);
    for base in [&c.a.base, &c.b.base] {
        let rt = t.refresh_token.as_deref().expect("refresh token");
        let (status, body) = refresh(&http, base, &c.client_id, rt).await.expect("refresh");
        assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "{base}");
    }
    Ok(())
}

async fn a_token_signed_with_a_key_rotated_in_elsewhere_is_accepted_and_revoked_by_every_instance(
) -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let http = http(&c.tls, false);
    // A new access-token key; a fresh instance signs with it, while A and B have not reloaded yet.
    admin_ok(&c.db.url, &["keys", "rotate", "--kind", "access-token"], "").await;
    let third = c.another("c").await;
    let t = c.tokens_via(&third.base).await;
    let rt = t.refresh_token.clone().expect("refresh token");
    assert_eq!(channels(&http, &c.a.base, &t.access_token).await.expect("api"), 200, "A looks the new key up");
    // B has never seen the key: revoking by the access token must still find the grant.
    assert_eq!(revoke(&http, &c.b.base, &c.client_id, &t.access_token).await.expect("revoke"), 200);
    let (status, body) = refresh(&http, &c.a.base, &c.client_id, &rt).await.expect("refresh");
    assert_eq!((status, body["error"].as_str()), (400, Some("invalid_grant")), "the revocation at B held");
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------------
// DPoP across instances

/// A client's DPoP key.
struct DpopKey {
    pair: EcdsaKeyPair,
    jwk: Value,
}

impl DpopKey {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).expect("pkcs8");
        let jwk = serde_json::to_value(EcJwk::from_point(pair.public_key().as_ref()).expect("point")).expect("jwk");
        Self { pair, jwk }
    }

    /// A proof for `POST {public}/token`.
    fn proof(&self, public: &str, jti: &str, nonce: Option<&str>) -> String {
        let header = json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk });
        let mut claims =
            json!({ "jti": jti, "htm": "POST", "htu": format!("{public}/token"), "iat": SystemClock.now().0 });
        if let Some(n) = nonce {
            claims["nonce"] = n.into();
        }
        sign_parts(&self.pair, &header, &claims, &OsRandom).expect("sign")
    }
}

/// A token request with a DPoP proof: status, `error`, and the `DPoP-Nonce` of the answer.
async fn dpop_post(http: &reqwest::Client, base: &str, form: &[(&str, &str)], proof: &str) -> (u16, String, String) {
    let r = http.post(format!("{base}/token")).form(form).header("DPoP", proof).send().await.expect("token");
    let status = r.status().as_u16();
    let nonce = r.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let body: Value = r.json().await.expect("json");
    (status, body["error"].as_str().unwrap_or_default().to_owned(), nonce)
}

async fn dpop_jtis_and_nonces_are_single_use_across_instances() -> Result<(), Unreachable> {
    let c = Cluster::start(&[]).await?;
    let (to_a, to_b) = (http(&c.tls, false), http(&c.tls, false));
    let key = DpopKey::new();
    let (code, pkce) = codes(&browser(&c.a.base, &c.tls, false), &c.a.base, &c.client_id, 1).await.remove(0);
    let form = exchange_form(&c.client_id, &code, &pkce);
    let r = to_a.post(c.a.url("/token")).form(&form).header("DPoP", key.proof(&c.public, &code_jti(&code), None));
    let r = r.send().await.expect("exchange");
    assert_eq!(r.status(), 200);
    let mut nonce = r.headers()["dpop-nonce"].to_str().expect("nonce").to_owned();
    let t: TokenResponse = r.json().await.expect("tokens");
    let rt = t.refresh_token.expect("refresh token");
    let refresh = [("grant_type", "refresh_token"), ("client_id", c.client_id.as_str()), ("refresh_token", &rt)];

    // A nonce issued by A is good at B; the proof B accepted is a replay at A, and so is the nonce.
    let used_nonce = nonce.clone();
    let proof = key.proof(&c.public, &latchkey_core::secret::random_b64(16, &OsRandom), Some(&nonce));
    let (status, error, next) = dpop_post(&to_b, &c.b.base, &refresh, &proof).await;
    assert_eq!((status, error.as_str()), (200, ""), "A's nonce at B");
    nonce = next;
    let (status, error, _) = dpop_post(&to_a, &c.a.base, &refresh, &proof).await;
    assert_eq!((status, error.as_str()), (400, "invalid_dpop_proof"), "B's proof replayed at A");
    let fresh_jti = key.proof(&c.public, &latchkey_core::secret::random_b64(16, &OsRandom), Some(&used_nonce));
    let (status, error, _) = dpop_post(&to_a, &c.a.base, &refresh, &fresh_jti).await;
    assert_eq!((status, error.as_str()), (400, "use_dpop_nonce"), "the nonce used at B, again at A");

    // One proof sent to both at the same moment: exactly one accepts it.
    for round in 0..5 {
        let proof = key.proof(&c.public, &latchkey_core::secret::random_b64(16, &OsRandom), Some(&nonce));
        let (ra, rb) =
            tokio::join!(dpop_post(&to_a, &c.a.base, &refresh, &proof), dpop_post(&to_b, &c.b.base, &refresh, &proof));
        let answers = [ra, rb];
        let won: Vec<_> = answers.iter().filter(|a| a.0 == 200).collect();
        assert_eq!(won.len(), 1, "round {round}: exactly one instance accepts the proof: {answers:?}");
        let lost = answers.iter().find(|a| a.0 != 200).expect("a refusal");
        assert_eq!(lost.0, 400, "{answers:?}");
        assert!(lost.1 == "invalid_dpop_proof" || lost.1 == "use_dpop_nonce", "a replay: {answers:?}");
        nonce = won[0].2.clone();
    }
    Ok(())
}

async fn the_refresh_token_limits_hold_under_concurrent_issuance_on_two_instances() -> Result<(), Unreachable> {
    let env = [("LATCHKEY_REFRESH_TOKENS_PER_CLIENT_USER", "3"), ("LATCHKEY_REFRESH_TOKENS_PER_USER", "5")];
    let c = Cluster::start(&env).await?;
    let codes = codes(&browser(&c.a.base, &c.tls, false), &c.a.base, &c.client_id, 12).await;
    let tasks: Vec<_> = codes
        .into_iter()
        .enumerate()
        .map(|(i, (code, pkce)): (usize, (String, Pkce))| {
            let base = if i % 2 == 0 { c.a.base.clone() } else { c.b.base.clone() };
            let (http, client_id) = (http(&c.tls, true), c.client_id.clone());
            tokio::spawn(async move { exchange(&http, &base, &client_id, &code, &pkce).await })
        })
        .collect();
    let mut issued = Vec::new();
    for t in tasks {
        issued.push(t.await.expect("every exchange succeeds").refresh_token.expect("refresh token"));
    }
    let http = http(&c.tls, false);
    let mut live = 0;
    for (i, rt) in issued.iter().enumerate() {
        let base = if i % 2 == 0 { &c.b.base } else { &c.a.base };
        let (status, body) = refresh(&http, base, &c.client_id, rt).await.expect("refresh");
        match status {
            200 => live += 1,
            _ => assert_eq!(body["error"], "invalid_grant", "{body}"),
        }
    }
    assert_eq!(live, 3, "twelve issued at once on two instances, three survive (the per-client-user limit)");
    Ok(())
}
