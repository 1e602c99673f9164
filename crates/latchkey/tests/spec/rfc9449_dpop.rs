//! DPoP (RFC 9449) at the token endpoint, as `docs/decisions.md` ("DPoP") narrows it: the proof (RFC 9449 §4.2), the
//! DPoP header of the code exchange and of the refresh, the DPoP rows of the token endpoint's errors (`docs/api.md`,
//! "DPoP (RFC 9449)"), and latchkey's rules (ES256 only, a 60 s / 5 s `iat` window, single-use 5-minute nonces, the
//! code-hash `jti` needing no nonce, replay state that holds across instances, a code presented again revoking its
//! grant).
//!
//! Each RFC 9449 §4.3 check has a test whose proof is valid but for the one thing checked, so the test fails if
//! the check goes; a control request with a good proof then succeeds, which also shows the refusals changed no
//! state.

use crate::support::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_admin::clock::OsRandom;
use latchkey_admin::clock::SystemClock;
use latchkey_core::access_token::MacKey;
use latchkey_core::dpop::{code_jti, issue_nonce};
use latchkey_core::jws::{sign_parts, EcJwk};
use latchkey_core::time::{Clock, UnixTime};
use latchkey_proto::TokenResponse;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_ASN1_SIGNING, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::Duration;

const REDIRECT: &str = "http://127.0.0.1:5555/callback";
const ALICE: &str = "alice@example.com";

// ---------------------------------------------------------------------------------------------------------------
// Proofs

/// A client's DPoP key pair.
struct Key {
    pkcs8: Vec<u8>,
    pair: EcdsaKeyPair,
    jwk: EcJwk,
}

impl Key {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key").as_ref().to_vec();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng).expect("pkcs8");
        let jwk = EcJwk::from_point(pair.public_key().as_ref()).expect("P-256 point");
        Self { pkcs8, pair, jwk }
    }

    /// The public JWK as JSON.
    fn jwk(&self) -> Value {
        serde_json::to_value(&self.jwk).expect("jwk")
    }

    /// The header latchkey accepts: typ, alg ES256 and the public jwk.
    fn header(&self) -> Value {
        json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": self.jwk() })
    }

    /// `header.claims` signed with this key (raw R|S), whatever the header says.
    fn sign(&self, header: &Value, claims: &Value) -> String {
        sign_parts(&self.pair, header, claims, &OsRandom).expect("sign")
    }

    /// A proof with the prescribed header.
    fn proof(&self, claims: &Value) -> String {
        self.sign(&self.header(), claims)
    }

    /// A proof signed the ASN.1 DER way instead of raw R|S.
    fn der_proof(&self, claims: &Value) -> String {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &self.pkcs8, &rng).expect("pkcs8");
        let input = signing_input(&self.header(), claims);
        let sig = der.sign(&rng, input.as_bytes()).expect("sign");
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

/// `b64(header).b64(claims)`.
fn signing_input(header: &Value, claims: &Value) -> String {
    let h = serde_json::to_vec(header).expect("json");
    let c = serde_json::to_vec(claims).expect("json");
    format!("{}.{}", URL_SAFE_NO_PAD.encode(h), URL_SAFE_NO_PAD.encode(c))
}

/// The server's clock (the real one), in seconds.
fn now() -> i64 {
    SystemClock.now().0
}

fn fresh_jti() -> String {
    latchkey_core::secret::random_b64(16, &OsRandom)
}

/// Good claims for a proof to `server`'s token endpoint.
fn claims(server: &TestServer, jti: &str, nonce: Option<&str>) -> Value {
    let mut c = json!({ "jti": jti, "htm": "POST", "htu": server.url("/token"), "iat": now() });
    if let Some(n) = nonce {
        c["nonce"] = n.into();
    }
    c
}

// ---------------------------------------------------------------------------------------------------------------
// Requests

/// A token endpoint answer, with the `DPoP-Nonce` header read before the body.
#[derive(Debug)]
struct Answer {
    status: u16,
    nonce: Option<String>,
    body: Value,
}

impl Answer {
    async fn of(r: reqwest::Response) -> Self {
        let status = r.status().as_u16();
        let nonces: Vec<String> =
            r.headers().get_all("dpop-nonce").iter().map(|v| v.to_str().expect("nonce is text").to_owned()).collect();
        assert!(nonces.len() <= 1, "at most one DPoP-Nonce header: {nonces:?}");
        let body = r.json().await.expect("a JSON body");
        Self { status, nonce: nonces.into_iter().next(), body }
    }

    /// Status and `error` code.
    fn error(&self) -> (u16, &str) {
        (self.status, self.body["error"].as_str().unwrap_or("(no error)"))
    }

    /// The nonce of the answer, which must be there.
    fn nonce(&self) -> String {
        self.nonce.clone().unwrap_or_else(|| panic!("a DPoP-Nonce header on the answer {} {}", self.status, self.body))
    }

    /// The token response of a success.
    fn tokens(&self) -> TokenResponse {
        assert_eq!(self.status, 200, "success expected: {}", self.body);
        serde_json::from_value(self.body.clone()).expect("a token response")
    }

    /// Asserts a refusal with `error`, carrying a fresh nonce (every answer to a DPoP request does).
    fn assert_refused(&self, error: &str, what: &str) {
        assert_eq!(self.error(), (400, error), "{what}: {}", self.body);
        assert!(self.nonce.is_some(), "{what}: the refusal carries a DPoP-Nonce header");
    }
}

/// Posts `form` to `url` with one DPoP header per proof.
async fn post_to(server: &TestServer, url: &str, form: &[(&str, &str)], proofs: &[&str]) -> Answer {
    let mut request = server.http().post(url).form(form);
    for p in proofs {
        request = request.header("DPoP", *p);
    }
    Answer::of(request.send().await.expect("token request")).await
}

async fn post(server: &TestServer, form: &[(&str, &str)], proofs: &[&str]) -> Answer {
    post_to(server, &server.url("/token"), form, proofs).await
}

fn exchange_form<'a>(app: &'a App, code: &'a str, pkce: &'a Pkce) -> Vec<(&'a str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("client_id", &app.client_id),
        ("code", code),
        ("code_verifier", &pkce.verifier),
        ("redirect_uri", REDIRECT),
    ]
}

fn refresh_form<'a>(app: &'a App, refresh_token: &'a str) -> Vec<(&'a str, &'a str)> {
    vec![("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", refresh_token)]
}

async fn setup_with(change: impl FnOnce(&mut latchkey_config::Config)) -> (TestServer, App) {
    let server = TestServer::start_with(change).await;
    let app = server.app().await;
    server.user(ALICE).await;
    (server, app)
}

async fn setup() -> (TestServer, App) {
    setup_with(|_| {}).await
}

/// A fresh code for `readonly`, with its PKCE pair.
async fn code_for(server: &TestServer, app: &App) -> (String, Pkce) {
    let pkce = Pkce::new();
    let code = server.browser().code(server, app, ALICE, &[READONLY], &[READONLY], &pkce, REDIRECT).await;
    (code, pkce)
}

fn rt(t: &TokenResponse) -> &str {
    t.refresh_token.as_deref().expect("a refresh token on code exchange")
}

/// A server nonce got the cheap way: any answer to a request with a DPoP header carries one.
async fn some_nonce(server: &TestServer, app: &App) -> String {
    let a = post(server, &refresh_form(app, "lkr_nosuchtoken"), &["not-a-proof"]).await;
    a.nonce()
}

/// A server, an app, alice, a client key, and a refresh token bound to that key by a code exchange with the
/// code-hash proof (jti = code hash, no nonce); `nonce` is the one that exchange returned.
struct Bound {
    server: TestServer,
    app: App,
    key: Key,
    tokens: TokenResponse,
    nonce: String,
}

impl Bound {
    async fn new() -> Self {
        let (server, app) = setup().await;
        Self::on(server, app).await
    }

    async fn on(server: TestServer, app: App) -> Self {
        let key = Key::new();
        let (code, pkce) = code_for(&server, &app).await;
        let proof = key.proof(&claims(&server, &code_jti(&code), None));
        let a = post(&server, &exchange_form(&app, &code, &pkce), &[&proof]).await;
        let tokens = a.tokens();
        let nonce = a.nonce();
        Self { server, app, key, tokens, nonce }
    }

    fn rt(&self) -> &str {
        rt(&self.tokens)
    }

    /// Good claims with a new jti and the current nonce.
    fn claims(&self) -> Value {
        claims(&self.server, &fresh_jti(), Some(&self.nonce))
    }

    async fn refresh(&self, proofs: &[&str]) -> Answer {
        post(&self.server, &refresh_form(&self.app, self.rt()), proofs).await
    }

    /// A refresh with `proof` must be refused with `invalid_dpop_proof`.
    async fn refused(&self, proof: &str, what: &str) {
        self.refresh(&[proof]).await.assert_refused("invalid_dpop_proof", what);
    }

    /// A refresh with `proof` must succeed; the next nonce is taken from its answer.
    async fn accepted(&mut self, proof: &str, what: &str) -> TokenResponse {
        let a = self.refresh(&[proof]).await;
        assert_eq!(a.status, 200, "{what}: {}", a.body);
        self.nonce = a.nonce();
        a.tokens()
    }

    /// The control: a good proof with the current nonce still works.
    async fn still_works(&mut self) {
        let proof = self.key.proof(&self.claims());
        self.accepted(&proof, "a good proof after the refusals").await;
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Metadata

#[tokio::test]
async fn the_metadata_advertises_es256_as_the_only_dpop_signing_algorithm() {
    let server = TestServer::start().await;
    let r = server.http().get(server.url("/.well-known/oauth-authorization-server")).send().await.expect("get");
    assert_eq!(r.status(), 200);
    let doc: Value = r.json().await.expect("json");
    assert_eq!(doc["dpop_signing_alg_values_supported"], json!(["ES256"]), "{doc}");
}

// ---------------------------------------------------------------------------------------------------------------
// Code exchange

#[tokio::test]
async fn a_code_exchange_with_the_code_hash_jti_needs_no_nonce_and_answers_with_one() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let c = claims(&server, &code_jti(&code), None);
    assert!(c.get("nonce").is_none());
    let a = post(&server, &exchange_form(&app, &code, &pkce), &[&key.proof(&c)]).await;
    let t = a.tokens();
    assert!(!a.nonce().is_empty(), "the success carries a DPoP-Nonce for the next proof");
    assert_eq!(t.token_type, "Bearer", "token_type stays Bearer with DPoP");
    assert_eq!(t.scope, READONLY);
    assert!(t.refresh_token.is_some(), "a refresh token is always returned to installed apps");
}

#[tokio::test]
async fn a_dpop_code_exchange_binds_the_refresh_token_to_the_key_but_not_the_access_token() {
    let mut b = Bound::new().await;
    // The access token is not bound: a plain Bearer token at the data API.
    assert_eq!(channels(&b.server, &b.tokens.access_token).await.status(), 200);
    // The refresh token is: no proof fails, so does a proof by another key.
    let a = post(&b.server, &refresh_form(&b.app, b.rt()), &[]).await;
    assert_eq!(a.error(), (400, "invalid_dpop_proof"), "a bound refresh token needs a proof: {}", a.body);
    let other = Key::new();
    b.refresh(&[&other.proof(&b.claims())]).await.assert_refused("invalid_grant", "a proof by another key");
    // With the key (and the nonce): a new Bearer access token, no new refresh token.
    let proof = b.key.proof(&b.claims());
    let t = b.accepted(&proof, "a proof by the bound key").await;
    assert_eq!(t.token_type, "Bearer");
    assert!(t.refresh_token.is_none(), "refresh tokens are not rotated");
    assert_eq!(channels(&b.server, &t.access_token).await.status(), 200);
}

#[tokio::test]
async fn a_code_exchange_with_another_jti_and_no_nonce_gets_use_dpop_nonce_and_changes_nothing() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let jti = fresh_jti();
    let first = post(&server, &exchange_form(&app, &code, &pkce), &[&key.proof(&claims(&server, &jti, None))]).await;
    first.assert_refused("use_dpop_nonce", "a generic jti without a nonce");
    // No state changed: not the code (still exchangeable), not even the proof's jti (not recorded as used).
    let retry = key.proof(&claims(&server, &jti, Some(&first.nonce())));
    let second = post(&server, &exchange_form(&app, &code, &pkce), &[&retry]).await;
    let t = second.tokens();
    // The exchange bound the refresh token to the key.
    let a = post(&server, &refresh_form(&app, rt(&t)), &[]).await;
    assert_eq!(a.error(), (400, "invalid_dpop_proof"), "bound: {}", a.body);
    let ok = post(
        &server,
        &refresh_form(&app, rt(&t)),
        &[&key.proof(&claims(&server, &fresh_jti(), Some(&second.nonce())))],
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_code_exchange_with_another_jti_needs_an_unused_nonce_of_this_server() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce);
    let mac = server.running.state.keys.get().mac_signer().id;
    let foreign = issue_nonce(
        &MacKey::new(mac, b"not the key of this server"),
        UnixTime(now() - 400),
        UnixTime(now() + 300),
        &OsRandom,
    );
    let expired = issue_nonce(
        server.running.state.keys.get().mac_signer(),
        UnixTime(now() - 400),
        UnixTime(now() - 1),
        &OsRandom,
    );
    for (nonce, what) in [(foreign.as_str(), "a nonce MAC'd by another key"), (expired.as_str(), "an expired nonce")] {
        let a = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), Some(nonce)))]).await;
        a.assert_refused("use_dpop_nonce", what);
    }
    // A nonce used once (here by an unbound refresh) is used up for the exchange too.
    let plain = server.tokens(&app, ALICE, &[READONLY]).await;
    let used = some_nonce(&server, &app).await;
    let a = post(&server, &refresh_form(&app, rt(&plain)), &[&key.proof(&claims(&server, &fresh_jti(), Some(&used)))])
        .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), Some(&used)))]).await;
    a.assert_refused("use_dpop_nonce", "a used nonce");
    // The code survived all of it.
    let ok = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_code_hash_proof_with_an_unacceptable_nonce_gets_use_dpop_nonce_and_the_retry_succeeds() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce);
    let a = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&code), Some("made-up")))]).await;
    a.assert_refused("use_dpop_nonce", "a nonce is optional here but must be good when present");
    let ok = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&code), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn with_the_strict_setting_a_code_exchange_proof_must_carry_the_code_hash_jti() {
    let (server, app) = setup_with(|c| c.dpop_strict_code_jti = true).await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce);
    let nonce = some_nonce(&server, &app).await;
    let a = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), Some(&nonce)))]).await;
    a.assert_refused("invalid_dpop_proof", "another jti, even with a valid nonce");
    let ok = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&code), None))]).await;
    assert_eq!(ok.status, 200, "the code hash jti: {}", ok.body);
}

#[tokio::test]
async fn the_code_hash_jti_of_another_code_is_just_another_jti() {
    let (server, app) = setup_with(|c| c.dpop_strict_code_jti = true).await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let (other_code, _) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce);
    let a = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&other_code), None))]).await;
    a.assert_refused("invalid_dpop_proof", "the hash of another code");
    let a = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&format!("{code} ")), None))]).await;
    a.assert_refused("invalid_dpop_proof", "the hash of something else");
}

// ---------------------------------------------------------------------------------------------------------------
// A code presented a second time (docs/decisions.md, "Lifetimes")

#[tokio::test]
async fn a_code_presented_again_with_the_same_proof_is_invalid_grant_and_revokes_its_grant() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let proof = key.proof(&claims(&server, &code_jti(&code), None));
    let form = exchange_form(&app, &code, &pkce);
    let first = post(&server, &form, &[&proof]).await;
    let t = first.tokens();
    assert_eq!(channels(&server, &t.access_token).await.status(), 200);
    // The proof's jti is a replay too, but that must not pre-empt the revocation.
    let again = post(&server, &form, &[&proof]).await;
    again.assert_refused("invalid_grant", "the code again, with the same proof");
    let a =
        post(&server, &refresh_form(&app, rt(&t)), &[&key.proof(&claims(&server, &fresh_jti(), Some(&again.nonce())))])
            .await;
    a.assert_refused("invalid_grant", "the refresh token of the revoked grant");
    assert_eq!(channels(&server, &t.access_token).await.status(), 401, "the access token is revoked");
}

#[tokio::test]
async fn a_code_presented_again_with_a_broken_proof_still_revokes_its_grant() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let form = exchange_form(&app, &code, &pkce);
    let t = post(&server, &form, &[&key.proof(&claims(&server, &code_jti(&code), None))]).await.tokens();
    let again = post(&server, &form, &["not-a-proof"]).await;
    again.assert_refused("invalid_grant", "the code again, with a proof that is no JWS");
    assert_eq!(channels(&server, &t.access_token).await.status(), 401);
    let a =
        post(&server, &refresh_form(&app, rt(&t)), &[&key.proof(&claims(&server, &fresh_jti(), Some(&again.nonce())))])
            .await;
    a.assert_refused("invalid_grant", "the refresh token of the revoked grant");
}

mod device;
mod introspect;
mod proof_checks;
mod refresh;

// ---------------------------------------------------------------------------------------------------------------
// Replay state lives in the store (docs/decisions.md, "DPoP")

/// A second instance on the first one's store (and issuer), with its token endpoint's URL.
async fn second_instance(first: &TestServer) -> (TestServer, String) {
    let (dir, issuer) = (first.dir.path().to_path_buf(), first.base.clone());
    let second = TestServer::start_with(|c| {
        c.data_dir = dir;
        c.public_url = Some(issuer);
    })
    .await;
    let url = format!("https://{}/token", second.running.addr);
    (second, url)
}

#[tokio::test]
async fn used_jtis_and_nonces_are_remembered_across_server_instances_sharing_a_store() {
    let mut b = Bound::new().await;
    let (second, second_url) = second_instance(&b.server).await;
    assert_ne!(second_url, b.server.url("/token"), "two listeners");
    let (app, refresh_token) = (b.app.clone(), b.rt().to_owned());
    let form = refresh_form(&app, &refresh_token);
    // A proof used at the first instance is a replay at the second.
    let proof = b.key.proof(&b.claims());
    let used_nonce = b.nonce.clone();
    b.accepted(&proof, "at the first instance").await;
    post_to(&second, &second_url, &form, &[&proof])
        .await
        .assert_refused("invalid_dpop_proof", "replayed at the second");
    // Its nonce is used up at the second instance too.
    let p = b.key.proof(&claims(&b.server, &fresh_jti(), Some(&used_nonce)));
    let a = post_to(&second, &second_url, &form, &[&p]).await;
    a.assert_refused("use_dpop_nonce", "the used nonce at the second");
    // A nonce issued by the second instance is good at the first.
    let p = b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())));
    b.accepted(&p, "the second instance's nonce at the first").await;
}

#[tokio::test]
async fn a_spent_jti_under_another_iat_is_refused_at_either_instance_sharing_a_store() {
    let mut b = Bound::new().await;
    let (second, second_url) = second_instance(&b.server).await;
    let (app, refresh_token) = (b.app.clone(), b.rt().to_owned());
    let form = refresh_form(&app, &refresh_token);
    let jti = fresh_jti();
    let first = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
    b.accepted(&first, "the jti's first use").await;
    // The same key and jti, signed anew with other iats inside the window (and a fresh nonce): still the jti spent.
    for (iat_shift, at_second) in [(-30, false), (-59, true), (4, true)] {
        let mut c = claims(&b.server, &jti, Some(&b.nonce));
        c["iat"] = (now() + iat_shift).into();
        let proof = b.key.proof(&c);
        let a = if at_second {
            post_to(&second, &second_url, &form, &[&proof]).await
        } else {
            post(&b.server, &form, &[&proof]).await
        };
        a.assert_refused("invalid_dpop_proof", &format!("the jti again with iat {iat_shift:+} s"));
    }
    b.still_works().await;
}
