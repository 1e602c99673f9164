//! DPoP (RFC 9449) at the token endpoint, as the spec narrows it: the "DPoP proof" resource, the DPoP header of
//! the code exchange (§2) and of the refresh (§3), the DPoP rows of the token endpoint's error table, and the DPoP
//! bullets of `DECISIONS.md` (ES256 only, a 60 s / 5 s `iat` window, single-use 5-minute nonces, the code-hash
//! `jti` needing no nonce, replay state that holds across instances, a code presented again revoking its grant).
//!
//! Each RFC 9449 §4.3 check has a test whose proof is valid but for the one thing checked, so the test fails if
//! the check goes; a control request with a good proof then succeeds, which also shows the refusals changed no
//! state.

use crate::support::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_core::access_token::MacKey;
use latchkey_core::dpop::{code_jti, issue_nonce};
use latchkey_core::jws::{sign_parts, EcJwk};
use latchkey_core::time::{Clock, UnixTime};
use latchkey_proto::TokenResponse;
use latchkey_server::clock::OsRandom;
use latchkey_server::clock::SystemClock;
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

    /// The header the spec prescribes: typ, alg ES256 and the public jwk.
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

async fn setup_with(change: impl FnOnce(&mut latchkey_server::config::Config)) -> (TestServer, App) {
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
/// spec's proof (jti = code hash, no nonce); `nonce` is the one that exchange returned.
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
// Code exchange (spec §2)

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
    let foreign = issue_nonce(&MacKey::new(mac, b"not the key of this server"), UnixTime(now() + 300), &OsRandom);
    let expired = issue_nonce(server.running.state.keys.get().mac_signer(), UnixTime(now() - 1), &OsRandom);
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
// A code presented a second time (DECISIONS.md)

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

// ---------------------------------------------------------------------------------------------------------------
// Refresh (spec §3)

#[tokio::test]
async fn a_refresh_with_a_bound_token_and_no_proof_fails() {
    let b = Bound::new().await;
    let a = post(&b.server, &refresh_form(&b.app, b.rt()), &[]).await;
    assert_eq!(a.error(), (400, "invalid_dpop_proof"), "{}", a.body);
    assert!(a.nonce.is_none(), "no DPoP header, no DPoP-Nonce");
}

#[tokio::test]
async fn a_refresh_with_a_bound_token_and_a_proof_by_another_key_is_invalid_grant() {
    let mut b = Bound::new().await;
    let other = Key::new();
    b.refresh(&[&other.proof(&b.claims())]).await.assert_refused("invalid_grant", "another key");
    // A jwk naming the bound key but signed by another is a bad signature, not a key match.
    let forged = other.sign(&b.key.header(), &b.claims());
    b.refused(&forged, "the bound key's jwk, another key's signature").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_bound_refresh_without_a_nonce_gets_use_dpop_nonce_and_the_retry_with_it_succeeds() {
    let b = Bound::new().await;
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await;
    a.assert_refused("use_dpop_nonce", "no nonce on refresh");
    assert_ne!(a.nonce(), b.nonce, "a fresh nonce");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_bound_refresh_with_a_forged_nonce_gets_use_dpop_nonce() {
    let mut b = Bound::new().await;
    let keys = b.server.running.state.keys.get();
    let signer = keys.mac_signer();
    let foreign = issue_nonce(&MacKey::new(signer.id, b"not the key of this server"), UnixTime(now() + 300), &OsRandom);
    let unknown_key_id =
        issue_nonce(&MacKey::new(signer.id.wrapping_add(1000), b"x"), UnixTime(now() + 300), &OsRandom);
    let mut tampered = URL_SAFE_NO_PAD.decode(&b.nonce).expect("base64url nonce");
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    let tampered = URL_SAFE_NO_PAD.encode(tampered);
    let random = latchkey_core::secret::random_b64(56, &OsRandom);
    for (nonce, what) in [
        (foreign.as_str(), "MAC'd by another key"),
        (unknown_key_id.as_str(), "an unknown key id"),
        (tampered.as_str(), "a tampered nonce"),
        (random.as_str(), "random bytes of the right length"),
        ("", "an empty nonce"),
        ("abc", "a short string"),
    ] {
        let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(nonce)))]).await;
        a.assert_refused("use_dpop_nonce", what);
    }
    b.still_works().await;
}

#[tokio::test]
async fn a_bound_refresh_with_an_expired_nonce_gets_use_dpop_nonce() {
    let b = Bound::new().await;
    let expired = issue_nonce(b.server.running.state.keys.get().mac_signer(), UnixTime(now() - 1), &OsRandom);
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&expired)))]).await;
    a.assert_refused("use_dpop_nonce", "a genuine nonce past its expiry");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
}

#[tokio::test]
async fn a_nonce_expires_after_the_configured_lifetime() {
    let (server, app) = setup_with(|c| c.dpop_nonce_lifetime = 2).await;
    let b = Bound::on(server, app).await;
    tokio::time::sleep(Duration::from_millis(3100)).await;
    let a = b.refresh(&[&b.key.proof(&b.claims())]).await;
    a.assert_refused("use_dpop_nonce", "the nonce of the exchange, 3 s later");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "a nonce within its lifetime: {}", ok.body);
}

#[tokio::test]
async fn a_used_nonce_with_a_new_jti_gets_use_dpop_nonce() {
    let mut b = Bound::new().await;
    let used = b.nonce.clone();
    b.still_works().await;
    let a = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&used)))]).await;
    a.assert_refused("use_dpop_nonce", "the nonce again, with a new jti");
    let ok = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), Some(&a.nonce())))]).await;
    assert_eq!(ok.status, 200, "the retry with the new nonce: {}", ok.body);
}

#[tokio::test]
async fn a_proof_is_single_use_so_replaying_it_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let jti = fresh_jti();
    let proof = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
    b.accepted(&proof, "the first use").await;
    b.refused(&proof, "the same proof again").await;
    // A new proof, with a fresh nonce, but the same jti: still a replay.
    let same_jti = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
    b.refused(&same_jti, "a new proof reusing the jti").await;
    b.still_works().await;
}

#[tokio::test]
async fn an_unbound_refresh_token_accepts_a_proof_without_a_nonce_once_and_stays_unbound() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let key = Key::new();
    let proof = key.proof(&claims(&server, &fresh_jti(), None));
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&proof]).await;
    assert_eq!(a.tokens().token_type, "Bearer");
    assert!(a.nonce.is_some(), "a DPoP-Nonce on the success");
    let again = post(&server, &refresh_form(&app, rt(&t)), &[&proof]).await;
    again.assert_refused("invalid_dpop_proof", "the proof's jti is single use here too");
    // The proof did not bind the token: no proof, or another key, still works.
    let a = post(&server, &refresh_form(&app, rt(&t)), &[]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a =
        post(&server, &refresh_form(&app, rt(&t)), &[&Key::new().proof(&claims(&server, &fresh_jti(), None))]).await;
    assert_eq!(a.status, 200, "{}", a.body);
}

#[tokio::test]
async fn a_jti_is_remembered_per_key() {
    let (server, app) = setup().await;
    let t = server.tokens(&app, ALICE, &[READONLY]).await;
    let (k1, k2) = (Key::new(), Key::new());
    let jti = fresh_jti();
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k1.proof(&claims(&server, &jti, None))]).await;
    assert_eq!(a.status, 200, "{}", a.body);
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k2.proof(&claims(&server, &jti, None))]).await;
    assert_eq!(a.status, 200, "the same jti from another key is another proof: {}", a.body);
    let a = post(&server, &refresh_form(&app, rt(&t)), &[&k1.proof(&claims(&server, &jti, None))]).await;
    a.assert_refused("invalid_dpop_proof", "the jti again from the first key");
}

#[tokio::test]
async fn of_two_concurrent_requests_with_the_same_jti_exactly_one_succeeds() {
    let mut b = Bound::new().await;
    for round in 0..3 {
        // Two distinct proofs (each with its own valid nonce) that share a jti.
        let jti = fresh_jti();
        let second_nonce = b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await.nonce();
        let p1 = b.key.proof(&claims(&b.server, &jti, Some(&b.nonce)));
        let p2 = b.key.proof(&claims(&b.server, &jti, Some(&second_nonce)));
        let (h1, h2) = ([p1.as_str()], [p2.as_str()]);
        let (a1, a2) = tokio::join!(b.refresh(&h1), b.refresh(&h2));
        let (ok, refused) = match (a1.status, a2.status) {
            (200, _) => (a1, a2),
            (_, 200) => (a2, a1),
            _ => panic!("round {round}: one of the two must succeed: {a1:?} {a2:?}"),
        };
        refused.assert_refused("invalid_dpop_proof", &format!("round {round}: the other one"));
        b.nonce = ok.nonce();
        // The very same proof twice at once.
        let p = b.key.proof(&b.claims());
        let h = [p.as_str()];
        let (a1, a2) = tokio::join!(b.refresh(&h), b.refresh(&h));
        let statuses = [a1.status, a2.status];
        assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "round {round}: {a1:?} {a2:?}");
        let (ok, refused) = if a1.status == 200 { (a1, a2) } else { (a2, a1) };
        refused.assert_refused("invalid_dpop_proof", &format!("round {round}: the replayed proof"));
        b.nonce = ok.nonce();
    }
}

#[tokio::test]
async fn a_dpop_client_exchanges_the_code_then_refreshes_twice_with_the_nonce_of_each_previous_answer() {
    let (server, app) = setup().await;
    let key = Key::new();
    let (code, pkce) = code_for(&server, &app).await;
    let exchange =
        post(&server, &exchange_form(&app, &code, &pkce), &[&key.proof(&claims(&server, &code_jti(&code), None))])
            .await;
    let t = exchange.tokens();
    let mut nonce = exchange.nonce();
    let mut seen = HashSet::from([nonce.clone()]);
    let mut access_tokens = vec![t.access_token.clone()];
    for n in 1..=2 {
        let a = post(&server, &refresh_form(&app, rt(&t)), &[&key.proof(&claims(&server, &fresh_jti(), Some(&nonce)))])
            .await;
        let r = a.tokens();
        assert_eq!(r.token_type, "Bearer", "refresh {n}");
        assert_eq!(r.scope, READONLY, "refresh {n}");
        assert!(r.refresh_token.is_none(), "refresh {n}");
        nonce = a.nonce();
        assert!(seen.insert(nonce.clone()), "refresh {n}: a fresh nonce");
        access_tokens.push(r.access_token);
    }
    for (i, token) in access_tokens.iter().enumerate() {
        assert_eq!(channels(&server, token).await.status(), 200, "access token {i}");
    }
}

// ---------------------------------------------------------------------------------------------------------------
// DPoP-Nonce on every answer

#[tokio::test]
async fn every_answer_to_a_request_with_a_dpop_header_carries_a_fresh_nonce() {
    let mut b = Bound::new().await;
    let mut seen = HashSet::from([b.nonce.clone()]);
    let good = b.key.proof(&b.claims());
    let answers = [
        b.refresh(&[&b.key.proof(&claims(&b.server, &fresh_jti(), None))]).await, // use_dpop_nonce
        b.refresh(&["not-a-proof"]).await,                                        // invalid_dpop_proof
        post(&b.server, &refresh_form(&b.app, "lkr_nosuchtoken"), &[&good]).await, // invalid_grant
        post(&b.server, &[("grant_type", "password"), ("client_id", &b.app.client_id)], &[&good]).await,
        post(
            &b.server,
            &[("grant_type", "refresh_token"), ("client_id", "nosuchclient"), ("refresh_token", "x")],
            &[&good],
        )
        .await,
        b.refresh(&[&good]).await, // success
    ];
    for a in &answers {
        assert!(seen.insert(a.nonce()), "a fresh nonce on {} {}", a.status, a.body);
    }
    assert_eq!(answers[5].status, 200, "{}", answers[5].body);
    b.nonce = answers[5].nonce();
    b.still_works().await;
    // Without a DPoP header, no nonce.
    let plain = b.server.token(&refresh_form(&b.app, "lkr_nosuchtoken")).await;
    assert!(plain.headers().get("dpop-nonce").is_none());
}

// ---------------------------------------------------------------------------------------------------------------
// RFC 9449 §4.3: the proof checks, each on an otherwise valid proof for a bound refresh

#[tokio::test]
async fn more_than_one_dpop_header_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let p1 = b.key.proof(&b.claims());
    let p2 = b.key.proof(&b.claims());
    b.refresh(&[&p1, &p2]).await.assert_refused("invalid_dpop_proof", "two DPoP headers");
    b.refresh(&[&p1, &p1]).await.assert_refused("invalid_dpop_proof", "the same proof twice");
    // Neither was used: one alone is accepted.
    b.accepted(&p1, "the first proof alone").await;
}

#[tokio::test]
async fn a_dpop_header_that_is_not_a_compact_jws_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let good = b.key.proof(&b.claims());
    let parts: Vec<&str> = good.split('.').collect();
    let json_serialization = json!({ "protected": parts[0], "payload": parts[1], "signature": parts[2] }).to_string();
    let padded = format!("{}=.{}.{}", parts[0], parts[1], parts[2]);
    let standard_base64 = good.replace('-', "+").replace('_', "/");
    let not_json = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode("not json"), parts[1], parts[2]);
    for (proof, what) in [
        ("", "empty"),
        ("abc", "one part"),
        ("a.b", "two parts"),
        (&*format!("{good}.x"), "four parts"),
        (&*format!("{}.{}", parts[0], parts[1]), "no signature part"),
        (&*json_serialization, "the JWS JSON serialization"),
        (&*padded, "padded base64url"),
        (&*not_json, "a header that is not JSON"),
    ] {
        b.refused(proof, what).await;
    }
    if standard_base64 != good {
        b.refused(&standard_base64, "standard base64 instead of base64url").await;
    }
    b.accepted(&good, "the proof itself").await;
}

#[tokio::test]
async fn the_typ_header_must_be_dpop_jwt() {
    let mut b = Bound::new().await;
    for typ in [json!(null), json!("JWT"), json!("jwt"), json!("at+jwt"), json!("dpop"), json!(1)] {
        let mut h = b.key.header();
        if typ.is_null() {
            h.as_object_mut().expect("object").remove("typ");
        } else {
            h["typ"] = typ.clone();
        }
        b.refused(&b.key.sign(&h, &b.claims()), &format!("typ {typ}")).await;
    }
    b.still_works().await;
}

#[tokio::test]
async fn the_alg_must_be_es256_never_none_symmetric_or_another_asymmetric_one() {
    let mut b = Bound::new().await;
    // Each header names another alg over a genuine ES256 signature: only the alg check can refuse it.
    for alg in [
        json!(null),
        json!("none"),
        json!("HS256"),
        json!("RS256"),
        json!("PS256"),
        json!("ES384"),
        json!("ES512"),
        json!("EdDSA"),
        json!("es256"),
    ] {
        let mut h = b.key.header();
        if alg.is_null() {
            h.as_object_mut().expect("object").remove("alg");
        } else {
            h["alg"] = alg.clone();
        }
        b.refused(&b.key.sign(&h, &b.claims()), &format!("alg {alg}")).await;
    }
    // A real unsecured JWS, and a real HS256 one keyed with the public key's bytes.
    let mut h = b.key.header();
    h["alg"] = "none".into();
    b.refused(&format!("{}.", signing_input(&h, &b.claims())), "an unsecured JWS").await;
    h["alg"] = "HS256".into();
    let input = signing_input(&h, &b.claims());
    let mac_key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b.key.jwk.x.as_bytes());
    let tag = ring::hmac::sign(&mac_key, input.as_bytes());
    b.refused(&format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref())), "an HS256 JWS").await;
    b.still_works().await;
}

#[tokio::test]
async fn the_jwk_must_be_a_p256_public_key_without_private_members() {
    let mut b = Bound::new().await;
    let jwk = b.key.jwk();
    let with = |name: &str, value: Value| {
        let mut j = jwk.clone();
        j[name] = value;
        j
    };
    let without = |name: &str| {
        let mut j = jwk.clone();
        j.as_object_mut().expect("object").remove(name);
        j
    };
    let short_x = URL_SAFE_NO_PAD.encode([7u8; 31]);
    let cases = [
        (json!(null), "no jwk"),
        (with("d", json!(latchkey_core::secret::random_b64(32, &OsRandom))), "a private d member"),
        (with("kty", json!("RSA")), "kty RSA"),
        (with("kty", json!("OKP")), "kty OKP"),
        (with("crv", json!("P-384")), "crv P-384"),
        (with("crv", json!("secp256k1")), "crv secp256k1"),
        (without("crv"), "no crv"),
        (without("x"), "no x"),
        (without("y"), "no y"),
        (with("x", json!(short_x)), "a 31-byte x"),
        (json!("a string"), "a jwk that is not an object"),
        (json!({ "kty": "oct", "k": latchkey_core::secret::random_b64(32, &OsRandom) }), "a symmetric key"),
    ];
    for (jwk, what) in cases {
        let mut h = b.key.header();
        if jwk.is_null() {
            h.as_object_mut().expect("object").remove("jwk");
        } else {
            h["jwk"] = jwk;
        }
        b.refused(&b.key.sign(&h, &b.claims()), what).await;
    }
    // Members beyond kty, crv, x and y (kid, use, alg) are allowed: the key, and its thumbprint, are the same.
    let mut h = b.key.header();
    h["jwk"] = with("kid", json!("my-key"));
    h["jwk"]["use"] = json!("sig");
    h["jwk"]["alg"] = json!("ES256");
    b.accepted(&b.key.sign(&h, &b.claims()), "a jwk with kid, use and alg").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_crit_header_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let mut h = b.key.header();
    h["crit"] = json!(["exp"]);
    h["exp"] = json!(now() + 60);
    b.refused(&b.key.sign(&h, &b.claims()), "crit [exp]").await;
    let mut h = b.key.header();
    h["crit"] = json!([]);
    b.refused(&b.key.sign(&h, &b.claims()), "an empty crit").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_der_encoded_signature_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let der = b.key.der_proof(&b.claims());
    b.refused(&der, "an ASN.1 DER signature").await;
    b.still_works().await;
}

#[tokio::test]
async fn a_signature_that_does_not_verify_is_invalid_dpop_proof() {
    let mut b = Bound::new().await;
    let good = b.key.proof(&b.claims());
    let parts: Vec<&str> = good.split('.').collect();
    // The payload changed after signing.
    let mut changed = b.claims();
    changed["jti"] = fresh_jti().into();
    let tampered = format!("{}.{}.{}", parts[0], URL_SAFE_NO_PAD.encode(changed.to_string()), parts[2]);
    // A bit flipped in the signature.
    let mut sig = URL_SAFE_NO_PAD.decode(parts[2]).expect("signature");
    sig[10] ^= 0x01;
    let flipped = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(&sig));
    // All zeros; and the signature of another proof.
    let zeros = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode([0u8; 64]));
    let other = b.key.proof(&b.claims());
    let swapped = format!("{}.{}.{}", parts[0], parts[1], other.split('.').nth(2).expect("signature"));
    // The same header and claims, re-encoded with other whitespace: the signature covers the exact bytes sent.
    let spaced_header = format!("{} ", serde_json::to_string(&b.key.header()).expect("json"));
    let respaced = format!("{}.{}.{}", URL_SAFE_NO_PAD.encode(spaced_header), parts[1], parts[2]);
    for (proof, what) in [
        (&tampered, "a tampered payload"),
        (&flipped, "a flipped signature bit"),
        (&zeros, "a zero signature"),
        (&swapped, "another proof's signature"),
        (&respaced, "a re-encoded header"),
    ] {
        b.refused(proof, what).await;
    }
    b.accepted(&good, "the untouched proof").await;
}

#[tokio::test]
async fn htm_must_be_post() {
    let mut b = Bound::new().await;
    for htm in ["GET", "post", "PUT", "POST ", ""] {
        let mut c = b.claims();
        c["htm"] = htm.into();
        b.refused(&b.key.proof(&c), &format!("htm {htm:?}")).await;
    }
    b.still_works().await;
}

#[tokio::test]
async fn htu_must_be_the_token_endpoint_ignoring_query_and_fragment() {
    let mut b = Bound::new().await;
    let port = b.server.running.addr.port();
    let base = b.server.base.clone();
    for htu in [
        format!("{base}/revoke"),
        format!("{base}/o/oauth2/v2/auth"),
        format!("{base}/token/"),
        format!("{base}/tokens"),
        format!("{base}/"),
        format!("http://127.0.0.1:{port}/token"),
        format!("https://localhost:{port}/token"),
        format!("https://127.0.0.1:{}/token", port.wrapping_add(1)),
        format!("https://127.0.0.2:{port}/token"),
        format!("https://127.0.0.1:{port}/%2Ftoken"),
        format!("https://127.0.0.1:{port}/tok%20en"),
        "/token".to_string(),
        "token".to_string(),
        String::new(),
    ] {
        let mut c = b.claims();
        c["htu"] = htu.clone().into();
        b.refused(&b.key.proof(&c), &format!("htu {htu:?}")).await;
    }
    for htu in [
        format!("{base}/token?x"),
        format!("{base}/token?client_id=abc&x=1"),
        format!("{base}/token#fragment"),
        format!("HTTPS://127.0.0.1:{port}/token"),
        format!("https://127.0.0.1:{port}/./token"),
        // RFC 3986 §6.2.2.2: percent-encoded unreserved characters are decoded before comparing.
        format!("https://127.0.0.1:{port}/%74oken"),
        format!("https://127.0.0.1:{port}/%74%6F%6b%65%6E"),
    ] {
        let mut c = b.claims();
        c["htu"] = htu.clone().into();
        b.accepted(&b.key.proof(&c), &format!("htu {htu:?}")).await;
    }
}

#[tokio::test]
async fn htu_is_the_configured_public_token_url_not_the_listener_address() {
    let (server, app) = setup_with(|c| c.token_url = Some("https://tokens.latchkey.test".into())).await;
    // An unbound refresh token: its proofs need no nonce but get every check.
    let mut b = Bound {
        key: Key::new(),
        nonce: String::new(),
        tokens: server.tokens(&app, ALICE, &[READONLY]).await,
        server,
        app,
    };
    let mut c = claims(&b.server, &fresh_jti(), None);
    b.refused(&b.key.proof(&c), "the listener's address").await;
    c["htu"] = "https://tokens.latchkey.test/token".into();
    b.accepted(&b.key.proof(&c), "the configured token URL").await;
}

#[tokio::test]
async fn iat_must_lie_within_60_seconds_past_and_5_seconds_future() {
    let mut b = Bound::new().await;
    for (offset, what) in [(-61, "61 s old"), (-3600, "an hour old"), (10, "10 s ahead"), (86_400, "a day ahead")] {
        let mut c = b.claims();
        c["iat"] = (now() + offset).into();
        b.refused(&b.key.proof(&c), what).await;
    }
    for (iat, what) in [(json!(now().to_string()), "iat as a string"), (json!(0), "iat 0")] {
        let mut c = b.claims();
        c["iat"] = iat;
        b.refused(&b.key.proof(&c), what).await;
    }
    for (offset, what) in [(-45, "45 s old"), (3, "3 s ahead")] {
        let mut c = b.claims();
        c["iat"] = (now() + offset).into();
        b.accepted(&b.key.proof(&c), what).await;
    }
}

#[tokio::test]
async fn a_fractional_iat_is_a_valid_numeric_date() {
    // RFC 9449 §4.2 makes iat an RFC 7519 NumericDate, which "can represent non-integer values" (what a client
    // using a floating-point clock, such as `time.time()` or `Date.now() / 1000`, sends).
    let mut b = Bound::new().await;
    let mut c = b.claims();
    c["iat"] = json!(now() as f64 - 0.25);
    b.accepted(&b.key.proof(&c), "iat with a fraction").await;
    let mut c = b.claims();
    c["iat"] = json!(now() as f64 - 61.5);
    b.refused(&b.key.proof(&c), "a fractional iat outside the window").await;
    b.still_works().await;
}

#[tokio::test]
async fn the_iat_window_follows_the_configuration() {
    let (server, app) = setup_with(|c| c.dpop_max_age = 10).await;
    let mut b = Bound::on(server, app).await;
    let mut c = b.claims();
    c["iat"] = (now() - 30).into();
    b.refused(&b.key.proof(&c), "30 s old, with a 10 s window").await;
    b.still_works().await;
}

#[tokio::test]
async fn jti_htm_htu_and_iat_are_required() {
    let mut b = Bound::new().await;
    for claim in ["jti", "htm", "htu", "iat"] {
        let mut c = b.claims();
        c.as_object_mut().expect("object").remove(claim);
        b.refused(&b.key.proof(&c), &format!("no {claim}")).await;
    }
    for (claim, value, what) in [
        ("jti", json!(""), "an empty jti"),
        ("jti", json!(12345), "a numeric jti"),
        ("jti", json!("x".repeat(1000)), "a 1000-character jti"),
        ("htm", json!(["POST"]), "htm as an array"),
        ("htu", json!({ "url": "x" }), "htu as an object"),
    ] {
        let mut c = b.claims();
        c[claim] = value;
        b.refused(&b.key.proof(&c), what).await;
    }
    b.still_works().await;
}

// ---------------------------------------------------------------------------------------------------------------
// Replay state lives in the store (DECISIONS.md)

#[tokio::test]
async fn used_jtis_and_nonces_are_remembered_across_server_instances_sharing_a_store() {
    let mut b = Bound::new().await;
    let dir = b.server.dir.path().to_path_buf();
    let issuer = b.server.base.clone();
    let second = TestServer::start_with(|c| {
        c.data_dir = dir;
        c.public_url = Some(issuer);
    })
    .await;
    let second_url = format!("https://{}/token", second.running.addr);
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
