//! Each check of the flows on its own, and the flows end to end over in-memory ports.

use super::exchange::{self, code_known, nonce_rule, user_enabled};
use super::proof::{self, nonce_checked, NonceRule};
use super::refresh::{binding, grant_is_the_clients, grant_known, grant_usable};
use super::revoke::{revoke, token_is_the_clients, RevokeCall};
use super::*;
use crate::authorize::tests::desktop;
use crate::dpop::{self, issue_nonce, Proof};
use crate::scope::Scope;
use crate::secret::{Counter, Secret};
use std::future::Future;
use std::sync::Mutex;
use std::task::{Context, Poll, Waker};

const NOW: UnixTime = UnixTime(1_700_000_000);

/// Runs a future whose ports never wait (the in-memory ones below).
pub(super) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the in-memory ports never wait"),
    }
}

/// The ports over plain collections.
struct Memory {
    registry: ScopeRegistry,
    keys: Vec<MacKey>,
    random: Counter,
    clients: Vec<Client>,
    codes: Mutex<Vec<AuthCode>>,
    users: Vec<(String, Option<UnixTime>)>,
    grants: Mutex<Vec<GrantState>>,
    recorded: Mutex<Vec<Vec<u8>>>,
    /// From when the proof records are complete.
    complete_since: Mutex<UnixTime>,
    strict: bool,
    service_keys: Vec<ServiceKeyState>,
    retired: Mutex<Vec<(Vec<u8>, UnixTime)>>,
    grace: i64,
    /// The calls to the store's codes and users, in order.
    asked: Mutex<Vec<&'static str>>,
}

impl Memory {
    fn new() -> Self {
        let secret = crate::client::ClientSecret {
            id: "cs_1".into(),
            hash: crate::secret::hash("s3cret"),
            hint: None,
            created_at: UnixTime(0),
            disabled_at: None,
        };
        let client = Client { secrets: vec![secret], ..desktop() };
        Self {
            registry: ScopeRegistry::new("https://latchkey.dev"),
            keys: vec![MacKey::new(1, b"mac")],
            random: Counter::default(),
            clients: vec![client, Client { client_id: "other".into(), ..desktop() }],
            codes: Mutex::new(vec![]),
            users: vec![("u".into(), None), ("off".into(), Some(NOW))],
            grants: Mutex::new(vec![]),
            recorded: Mutex::new(vec![]),
            complete_since: Mutex::new(UnixTime(0)),
            strict: false,
            service_keys: vec![],
            retired: Mutex::new(vec![]),
            grace: 0,
            asked: Mutex::new(vec![]),
        }
    }
}

impl Ports for Memory {
    type Error = OAuthError;
    type User = String;

    fn settings(&self) -> Settings<'_> {
        Settings {
            dpop_window: Window::default(),
            dpop_strict_code_jti: self.strict,
            access_token_lifetime: 3600,
            jwt_access_token_lifetime: 300,
            token_endpoint: "https://as.example/token",
            scopes: &self.registry,
            refresh_rotation_grace: self.grace,
        }
    }
    fn random(&self) -> &dyn Random {
        &self.random
    }
    fn with_mac_keys<R>(&self, f: impl FnOnce(&[MacKey]) -> R) -> R {
        f(&self.keys)
    }
    async fn reload_keys(&self, _: UnixTime) -> Result<bool, OAuthError> {
        Ok(false)
    }
    async fn client(&self, id: &str) -> Result<Option<Client>, OAuthError> {
        Ok(self.clients.iter().find(|c| c.client_id == id).cloned())
    }
    async fn app_check(&self, _: &Client, _: UnixTime) -> Result<(), OAuthError> {
        Ok(())
    }
    async fn code(&self, hash: &[u8]) -> Result<Option<AuthCode>, OAuthError> {
        self.asked.lock().unwrap().push("code");
        Ok(self.codes.lock().unwrap().iter().find(|c| c.code_hash == hash).cloned())
    }
    async fn revoke_grants_of_code(&self, hash: &[u8], now: UnixTime) -> Result<u64, OAuthError> {
        self.asked.lock().unwrap().push("revoke");
        let mut grants = self.grants.lock().unwrap();
        let of_code = grants.iter_mut().filter(|g| g.grant.code_hash == hash);
        Ok(of_code.map(|g| g.grant.revoked_at = Some(now)).count() as u64)
    }
    async fn user(&self, id: &str) -> Result<Option<(String, Option<UnixTime>)>, OAuthError> {
        self.asked.lock().unwrap().push("user");
        Ok(self.users.iter().find(|(u, _)| u == id).cloned())
    }
    async fn poll_device(&self, _: &[u8], _: &str, _: UnixTime) -> Result<Option<crate::device::Poll>, OAuthError> {
        Ok(None)
    }
    async fn redeem_code(&self, grant: &Grant, now: UnixTime) -> Result<bool, OAuthError> {
        self.asked.lock().unwrap().push("redeem");
        let mut codes = self.codes.lock().unwrap();
        let Some(code) = codes.iter_mut().find(|c| c.code_hash == grant.code_hash) else { return Ok(false) };
        let disabled = self.users.iter().any(|(u, off)| *u == grant.user_id && off.is_some());
        if code.used || code.expires_at <= now || code.scopes != grant.scopes || disabled {
            return Ok(false);
        }
        code.used = true;
        let state =
            GrantState { grant: grant.clone(), user_disabled_at: None, client_deleted_at: None, api_enabled: true };
        self.grants.lock().unwrap().push(state);
        Ok(true)
    }
    fn id_token(&self, _: Option<&String>, code: &AuthCode, _: &str, _: UnixTime) -> Result<String, OAuthError> {
        Ok(format!("id-token-of-{}", code.user_id))
    }
    async fn jwt_access_token(&self, claims: &super::JwtAccessClaims<'_>) -> Result<String, OAuthError> {
        Ok(format!("jwt-for-{}", claims.audience))
    }
    async fn grant(&self, id: &GrantId) -> Result<Option<GrantState>, OAuthError> {
        Ok(self.grants.lock().unwrap().iter().find(|g| g.grant.id == *id).cloned())
    }
    async fn legacy_grant_by_refresh(&self, _: &[u8]) -> Result<Option<GrantState>, OAuthError> {
        Ok(None)
    }
    async fn revoke_grant(&self, id: &GrantId, now: UnixTime) -> Result<bool, OAuthError> {
        let mut grants = self.grants.lock().unwrap();
        let live = grants.iter_mut().find(|g| g.grant.id == *id && g.grant.revoked_at.is_none());
        Ok(live.map(|g| g.grant.revoked_at = Some(now)).is_some())
    }
    async fn rotate_refresh(&self, id: &GrantId, old: &[u8], new: &[u8], now: UnixTime) -> Result<bool, OAuthError> {
        let mut grants = self.grants.lock().unwrap();
        let Some(g) = grants.iter_mut().find(|g| g.grant.id == *id && g.grant.refresh_hash == old) else {
            return Ok(false);
        };
        g.grant.refresh_hash = new.to_vec();
        self.retired.lock().unwrap().push((old.to_vec(), now));
        Ok(true)
    }
    async fn retired_refresh(&self, hash: &[u8]) -> Result<Option<UnixTime>, OAuthError> {
        Ok(self.retired.lock().unwrap().iter().find(|(h, _)| h == hash).map(|(_, at)| *at))
    }
    async fn revoke_presented(
        &self,
        id: &GrantId,
        refresh_hash: Option<&[u8]>,
        client_id: Option<&str>,
        now: UnixTime,
    ) -> Result<bool, OAuthError> {
        let matches = self.grants.lock().unwrap().iter().any(|g| {
            g.grant.id == *id
                && g.grant.revoked_at.is_none()
                && refresh_hash.is_none_or(|h| g.grant.refresh_hash == h)
                && client_id.is_none_or(|c| g.grant.client_id == c)
        });
        Ok(matches && self.revoke_grant(id, now).await?)
    }
    async fn revoke_reused(&self, id: &GrantId, now: UnixTime) -> Result<bool, OAuthError> {
        self.revoke_grant(id, now).await
    }
    async fn record_proof(
        &self,
        values: &[(Vec<u8>, UnixTime)],
        admission: &dpop::Admission,
        _: UnixTime,
    ) -> Result<dpop::Recorded, OAuthError> {
        let mut recorded = self.recorded.lock().unwrap();
        let replayed = values.iter().position(|(v, _)| recorded.contains(v));
        let since = *self.complete_since.lock().unwrap();
        if replayed.is_none() && admission.check(since).is_ok() {
            recorded.extend(values.iter().map(|(v, _)| v.clone()));
        }
        Ok(dpop::Recorded { replayed, complete_since: *self.complete_since.lock().unwrap() })
    }
    async fn record_once(&self, values: &[(Vec<u8>, UnixTime)], _: UnixTime) -> Result<Option<usize>, OAuthError> {
        let mut recorded = self.recorded.lock().unwrap();
        if let Some(i) = values.iter().position(|(v, _)| recorded.contains(v)) {
            return Ok(Some(i));
        }
        recorded.extend(values.iter().map(|(v, _)| v.clone()));
        Ok(None)
    }

    async fn service_key(&self, key_id: &str) -> Result<Option<ServiceKeyState>, OAuthError> {
        Ok(self.service_keys.iter().find(|k| k.key_id == key_id).cloned())
    }

    async fn service_account_exists(&self, email: &str) -> Result<bool, OAuthError> {
        Ok(self.service_keys.iter().any(|k| k.email == email))
    }
}

mod rotation;
mod sealed;

fn auth_code(value: &str) -> AuthCode {
    AuthCode {
        code_hash: secret::hash(value),
        client_id: "app".into(),
        user_id: "u".into(),
        redirect_uri: "http://127.0.0.1:4000/cb".into(),
        scopes: ScopeSet(Scope::OpenId.set().0 | Scope::Readonly.set().0),
        challenge: None,
        nonce: None,
        auth_time: NOW,
        expires_at: NOW.plus(600),
        used: false,
        grant_lifetime: None,
    }
}

fn grant_state(client_id: &str) -> GrantState {
    let grant = Grant {
        id: GrantId([7; 16]),
        client_id: client_id.into(),
        user_id: "u".into(),
        scopes: Scope::Readonly.set(),
        refresh_hash: vec![],
        dpop_jkt: None,
        created_at: NOW,
        expires_at: None,
        revoked_at: None,
        code_hash: vec![],
    };
    GrantState { grant, user_disabled_at: None, client_deleted_at: None, api_enabled: true }
}

fn proof(jti: &str, nonce: Option<String>) -> Proof {
    Proof { jkt: "jkt".into(), jti: jti.into(), iat: NOW, nonce }
}

/// The form of a code exchange of `lkc_1` by `app`.
const EXCHANGE: [(&str, &str); 4] = [
    ("grant_type", "authorization_code"),
    ("code", "lkc_1"),
    ("redirect_uri", "http://127.0.0.1:4000/cb"),
    ("client_id", "app"),
];

fn call<'a>(form: &'a Form<'a>) -> TokenCall<'a> {
    TokenCall { form, authorization: Ok(None), dpop: &[], now: NOW }
}

#[test]
fn code_known_refuses_an_unknown_code() {
    assert_eq!(code_known(None::<AuthCode>).unwrap_err().code, ErrorCode::InvalidGrant);
    assert!(code_known(Some(auth_code("c"))).is_ok());
}

#[test]
fn nonce_rule_follows_the_code_jti() {
    let code = Secret::new("lkc_x".into());
    let own = proof(&dpop::code_jti("lkc_x"), None);
    assert_eq!(nonce_rule(&own, &code, true).unwrap(), NonceRule::IfPresent);
    assert_eq!(nonce_rule(&proof("other", None), &code, false).unwrap(), NonceRule::Required);
    assert_eq!(nonce_rule(&proof("other", None), &code, true).unwrap_err().code, ErrorCode::InvalidDpopProof);
}

#[test]
fn user_enabled_refuses_a_missing_or_disabled_user() {
    assert_eq!(user_enabled(Some(("u", None))).unwrap(), "u");
    assert_eq!(user_enabled(Some(("u", Some(NOW)))).unwrap_err().code, ErrorCode::InvalidGrant);
    assert_eq!(user_enabled::<&str>(None).unwrap_err().code, ErrorCode::InvalidGrant);
}

#[test]
fn refresh_checks_each_refuse_with_invalid_grant() {
    assert_eq!(grant_known(None).unwrap_err().code, ErrorCode::InvalidGrant);
    let mine = grant_state("app");
    let app = Memory::new().clients[0].clone();
    assert!(grant_is_the_clients(&mine, &app).is_ok());
    assert_eq!(grant_is_the_clients(&grant_state("other"), &app).unwrap_err().code, ErrorCode::InvalidGrant);
    assert!(grant_usable(&mine, NOW).is_ok());
    for unusable in [
        GrantState { user_disabled_at: Some(NOW), ..mine.clone() },
        GrantState { client_deleted_at: Some(NOW), ..mine.clone() },
        GrantState { grant: Grant { revoked_at: Some(NOW), ..mine.grant.clone() }, ..mine.clone() },
        GrantState { grant: Grant { expires_at: Some(NOW), ..mine.grant.clone() }, ..mine.clone() },
    ] {
        assert_eq!(grant_usable(&unusable, NOW).unwrap_err().description, "Token has been expired or revoked.");
    }
}

#[test]
fn binding_of_a_refresh_token_to_its_dpop_key() {
    let unbound = grant_state("app");
    let bound =
        GrantState { grant: Grant { dpop_jkt: Some("jkt".into()), ..unbound.grant.clone() }, ..unbound.clone() };
    let p = proof("j", None);
    assert!(binding(&unbound, None).unwrap().is_none());
    assert_eq!(binding(&unbound, Some(&p)).unwrap().map(|(_, r)| r), Some(NonceRule::IfPresent));
    assert_eq!(binding(&bound, Some(&p)).unwrap().map(|(_, r)| r), Some(NonceRule::Required));
    assert_eq!(binding(&bound, None).unwrap_err().code, ErrorCode::InvalidDpopProof);
    let other_key = Proof { jkt: "else".into(), ..p };
    assert_eq!(binding(&bound, Some(&other_key)).unwrap_err().code, ErrorCode::InvalidGrant);
}

#[test]
fn revocation_refuses_another_clients_token() {
    let app = Memory::new().clients[0].clone();
    assert!(token_is_the_clients(Some("app"), &app).is_ok());
    assert!(token_is_the_clients(None, &app).is_ok(), "a grant gone has no owner to check");
    assert_eq!(token_is_the_clients(Some("other"), &app).unwrap_err().code, ErrorCode::InvalidRequest);
}

#[test]
fn reading_the_dpop_header() {
    let settings = Memory::new();
    let settings = settings.settings();
    assert_eq!(proof::read(&[], &settings, NOW).unwrap(), None);
    let two = proof::read(&[b"a", b"b"], &settings, NOW).unwrap_err();
    assert_eq!((two.code, &*two.description), (ErrorCode::InvalidDpopProof, "Send exactly one DPoP header."));
    let binary = proof::read(&["é".as_bytes()], &settings, NOW).unwrap_err();
    assert_eq!(&*binary.description, "The DPoP header is not text.");
    let bad = proof::read(&[b"not-a-jws"], &settings, NOW).unwrap_err();
    assert_eq!(&*bad.description, "The DPoP proof is not a compact JWS.");
}

#[test]
fn the_nonce_rule_and_the_nonce_itself() {
    let ports = Memory::new();
    let none = proof("j", None);
    assert_eq!(nonce_checked(&ports, &none, NonceRule::IfPresent, NOW).unwrap(), None);
    assert_eq!(nonce_checked(&ports, &none, NonceRule::Required, NOW).unwrap_err().code, ErrorCode::UseDpopNonce);
    let nonce = issue_nonce(&ports.keys[0], NOW, NOW.plus(300), &ports.random);
    let with = proof("j", Some(nonce));
    assert_eq!(
        nonce_checked(&ports, &with, NonceRule::IfPresent, NOW).unwrap(),
        Some(dpop::Nonce { issued_at: NOW, expires_at: NOW.plus(300) })
    );
    let expired = nonce_checked(&ports, &with, NonceRule::IfPresent, NOW.plus(300)).unwrap_err();
    assert_eq!(
        (expired.code, &*expired.description),
        (ErrorCode::UseDpopNonce, "The DPoP nonce expired: use the new DPoP-Nonce.")
    );
    let forged = proof("j", Some("forged".into()));
    assert_eq!(nonce_checked(&ports, &forged, NonceRule::IfPresent, NOW).unwrap_err().code, ErrorCode::UseDpopNonce);
}

#[test]
fn a_proof_and_a_nonce_are_each_good_once() {
    let ports = Memory::new();
    let nonce = issue_nonce(&ports.keys[0], NOW, NOW.plus(300), &ports.random);
    block_on(proof::use_once(&ports, &proof("j1", Some(nonce.clone())), NonceRule::Required, NOW)).unwrap();
    let replay = block_on(proof::use_once(&ports, &proof("j1", None), NonceRule::IfPresent, NOW)).unwrap_err();
    assert_eq!(
        (replay.code, &*replay.description),
        (ErrorCode::InvalidDpopProof, "The DPoP proof's jti was used before.")
    );
    let nonce_again = block_on(proof::use_once(&ports, &proof("j2", Some(nonce)), NonceRule::Required, NOW));
    assert_eq!(nonce_again.unwrap_err().code, ErrorCode::UseDpopNonce);
}

#[test]
fn after_the_records_were_lost_a_proof_or_nonce_from_before_is_refused_and_a_new_nonce_lets_a_proof_through() {
    let ports = Memory::new();
    let old_nonce = issue_nonce(&ports.keys[0], NOW.plus(-10), NOW.plus(300), &ports.random);
    // The records are complete from NOW: whatever was used before may have been forgotten.
    *ports.complete_since.lock().unwrap() = NOW;
    let refused = |p: &Proof| block_on(proof::use_once(&ports, p, NonceRule::IfPresent, NOW.plus(1))).unwrap_err();
    let old = refused(&proof("j1", Some(old_nonce)));
    assert_eq!(
        (old.code, &*old.description),
        (ErrorCode::UseDpopNonce, "The DPoP nonce is older than the server's records: use the new DPoP-Nonce.")
    );
    // A proof without a nonce whose iat could be from before (NOW plus the 5 s future allowance): a nonce is asked.
    let mut unanchored = proof("j2", None);
    unanchored.iat = NOW.plus(5);
    assert_eq!(refused(&unanchored).code, ErrorCode::UseDpopNonce);
    let new_nonce = issue_nonce(&ports.keys[0], NOW.plus(1), NOW.plus(300), &ports.random);
    // The refused proof's jti was not used up: sent again with a new nonce, it goes through.
    block_on(proof::use_once(&ports, &proof("j2", Some(new_nonce)), NonceRule::IfPresent, NOW.plus(1))).unwrap();
    let mut later = proof("j4", None);
    later.iat = NOW.plus(6);
    block_on(proof::use_once(&ports, &later, NonceRule::IfPresent, NOW.plus(6))).expect("made after the loss");
}

#[test]
fn an_exchange_then_a_refresh_then_a_revocation() {
    let ports = Memory::new();
    ports.codes.lock().unwrap().push(auth_code("lkc_1"));
    let form = Form::new(EXCHANGE.to_vec()).unwrap();
    let issued = block_on(token(&ports, call(&form))).unwrap();
    assert_eq!(issued.client.expect("a client").client_id, "app");
    assert_eq!(issued.response.id_token.as_deref(), Some("id-token-of-u"));
    let refresh_token = issued.response.refresh_token.expect("refresh token");
    let claims = access_token::verify(&ports.keys, &issued.response.access_token, NOW).unwrap();
    assert_eq!(claims.expires_at, NOW.plus(3600));

    let pairs = [
        ("grant_type", "refresh_token"),
        ("refresh_token", &refresh_token),
        ("client_id", "app"),
        ("scope", "https://latchkey.dev/auth/readonly"),
    ];
    let form = Form::new(pairs.to_vec()).unwrap();
    let refreshed = block_on(token(&ports, call(&form))).unwrap();
    assert_eq!(refreshed.response.scope, "https://latchkey.dev/auth/readonly");
    assert_eq!(refreshed.response.refresh_token, None);

    let pairs = [("token", refreshed.response.access_token.as_str())];
    let form = Form::new(pairs.to_vec()).unwrap();
    block_on(revoke(&ports, RevokeCall { form: &form, authorization: Ok(None), now: NOW })).unwrap();
    let pairs = [("grant_type", "refresh_token"), ("refresh_token", &refresh_token), ("client_id", "app")];
    let form = Form::new(pairs.to_vec()).unwrap();
    let gone = block_on(token(&ports, call(&form))).unwrap_err();
    assert_eq!((gone.code, &*gone.description), (ErrorCode::InvalidGrant, "Token has been expired or revoked."));
}

#[test]
fn a_reused_code_revokes_its_grant_before_anything_else_is_checked() {
    let ports = Memory::new();
    ports.codes.lock().unwrap().push(auth_code("lkc_1"));
    let form = Form::new(EXCHANGE.to_vec()).unwrap();
    block_on(token(&ports, call(&form))).unwrap();
    let bad_client =
        [("grant_type", "authorization_code"), ("code", "lkc_1"), ("redirect_uri", "x"), ("client_id", "nobody")];
    let form = Form::new(bad_client.to_vec()).unwrap();
    let err = block_on(token(&ports, call(&form))).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidGrant, "the reuse is found before the unknown client");
    assert!(ports.grants.lock().unwrap().iter().all(|g| g.grant.revoked_at == Some(NOW)));
}

#[test]
fn authentication_refuses_unknown_deleted_and_wrong_secret() {
    let mut ports = Memory::new();
    ports.clients.push(Client { client_id: "gone".into(), deleted_at: Some(NOW), ..desktop() });
    let auth = |id: &str, secret: Option<&str>| ClientAuth {
        client_id: id.into(),
        secret: secret.map(|s| Secret::new(s.into())),
        method: token::AuthMethod::None,
    };
    assert!(block_on(authenticate(&ports, &auth("app", Some("s3cret")))).is_ok());
    for (id, secret, why) in [
        ("nobody", None, "The OAuth client was not found."),
        ("gone", None, "The OAuth client was deleted."),
        ("app", Some("wrong"), "The client secret is wrong."),
    ] {
        let err = block_on(authenticate(&ports, &auth(id, secret))).unwrap_err();
        assert_eq!((err.code, &*err.description), (ErrorCode::InvalidClient, why));
    }
}

#[test]
fn an_exchange_by_a_disabled_user_issues_nothing() {
    let ports = Memory::new();
    ports.codes.lock().unwrap().push(AuthCode { user_id: "off".into(), ..auth_code("lkc_2") });
    let record = block_on(ports.code(&secret::hash("lkc_2"))).unwrap();
    let presented = record.map(|record| exchange::Presented { record, sealed: false });
    let code = Secret::new("lkc_2".into());
    let exchange =
        exchange::Exchange { code: &code, presented, verifier: None, redirect_uri: "http://127.0.0.1:4000/cb" };
    let client = ports.clients[0].clone();
    let err =
        block_on(exchange::run(&ports, exchange, Checked { client: &client, proof: None, now: NOW, resources: &[] }))
            .unwrap_err();
    assert_eq!(&*err.description, "The user account is deleted or disabled.");
    assert!(ports.grants.lock().unwrap().is_empty());
}

#[test]
fn a_service_accounts_assertion_buys_an_access_token_once_even_with_its_ecdsa_signature_in_its_other_form() {
    use crate::jws::SigningKey;
    use crate::service_account::{PublicKey, JWT_BEARER};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    let rng = Counter::default();
    let kid = "ab".repeat(20);
    let key = SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&rng).unwrap(), &rng).unwrap().with_kid(&kid);
    let point = key.public_jwk().to_point().unwrap().to_vec();
    let mut ports = Memory::new();
    ports.service_keys.push(ServiceKeyState {
        key_id: kid,
        public_key: PublicKey::Es256 { point },
        key_disabled_at: None,
        account_id: "1".into(),
        email: "sa@p.iam.latchkey.dev".into(),
        account_disabled_at: None,
        api_enabled: true,
    });
    // google-auth's claims: no jti.
    let claims = serde_json::json!({"iss": "sa@p.iam.latchkey.dev", "aud": "https://as.example/token",
        "scope": "https://latchkey.dev/auth/readonly", "iat": NOW.0, "exp": NOW.0 + 600});
    let raw = key.sign("JWT", &claims, &rng).unwrap();
    let exchange = |assertion: &str| {
        let form = Form::new(vec![("grant_type", JWT_BEARER), ("assertion", assertion)]).unwrap();
        block_on(token(&ports, call(&form)))
    };
    let issued = exchange(&raw).unwrap();
    assert!(issued.client.is_none() && issued.response.refresh_token.is_none());
    let claims = access_token::verify(&ports.keys, &issued.response.access_token, NOW).unwrap();
    assert!(matches!(claims.holder, Holder::ServiceKey(_)));

    // (r, n - s) verifies as well as (r, s): the same claims are still a replay.
    const ORDER: [u8; 32] = [
        0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xbc, 0xe6, 0xfa, 0xad,
        0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
    ];
    let (head, sig) = raw.rsplit_once('.').unwrap();
    let mut rs = URL_SAFE_NO_PAD.decode(sig).unwrap();
    let mut borrow = 0i16;
    for i in (0..32).rev() {
        let d = i16::from(ORDER[i]) - i16::from(rs[32 + i]) - borrow;
        (rs[32 + i], borrow) = if d < 0 { ((d + 256) as u8, 1) } else { (d as u8, 0) };
    }
    let other_form = format!("{head}.{}", URL_SAFE_NO_PAD.encode(&rs));
    let parsed = crate::service_account::Assertion::parse(&other_form).unwrap();
    assert!(parsed.verify(&ports.service_keys[0].public_key, "https://as.example/token", NOW).is_ok());
    let refused = exchange(&other_form).unwrap_err();
    assert_eq!(refused.code, ErrorCode::InvalidGrant);
    assert!(refused.description.contains("used already"), "{}", refused.description);
}
