use super::*;
use crate::client::ClientDetails;
use crate::jws::SigningKey;
use crate::secret::Counter;

const T0: UnixTime = UnixTime(1_700_000_000);

fn mobile(team: Option<&str>, bundle: &str) -> Client {
    Client {
        client_id: "lkapp-phone".into(),
        project_id: "p".into(),
        name: "Phone".into(),
        client_type: ClientType::Mobile,
        redirect_uris: vec![],
        secrets: vec![],
        details: ClientDetails {
            bundle_id: Some(bundle.into()),
            team_id: team.map(Into::into),
            ..ClientDetails::default()
        },
        created_at: T0,
        deleted_at: None,
        last_used_at: None,
        app_check: AppCheck::default(),
        ownership_verified_at: None,
        registration: None,
        project_rotates: false,
    }
}

fn at_once(c: &Client, from: AppCheck, a: AppCheckAction, confirmed: bool) -> Result<AppCheck, AppCheckError> {
    apply(c, from, a, confirmed, T0, 0)
}

fn state(s: AppCheckState) -> AppCheck {
    AppCheck { state: s, pending: None }
}

#[test]
fn enabling_needs_a_team_id_and_a_bundle_id_without_a_wildcard() {
    let off = AppCheck::default();
    let c = mobile(None, "com.example.app");
    assert_eq!(at_once(&c, off, AppCheckAction::Enable, false), Err(AppCheckError::NeedsTeamId));
    let c = mobile(Some("TEAM"), "com.example.*");
    assert_eq!(at_once(&c, off, AppCheckAction::Enable, false), Err(AppCheckError::BadBundleId));
    let c = mobile(Some("TEAM"), "com.example.app");
    assert_eq!(at_once(&c, off, AppCheckAction::Enable, false), Ok(state(AppCheckState::Enabled)));
}

#[test]
fn only_mobile_clients_have_app_check() {
    let mut c = mobile(Some("TEAM"), "com.example.app");
    c.client_type = ClientType::Desktop;
    assert_eq!(at_once(&c, AppCheck::default(), AppCheckAction::Enable, false), Err(AppCheckError::NotMobile));
}

#[test]
fn enforcing_and_unenforcing_need_confirmation() {
    let c = mobile(Some("TEAM"), "com.example.app");
    let on = state(AppCheckState::Enabled);
    assert_eq!(at_once(&c, on, AppCheckAction::Enforce, false), Err(AppCheckError::NotConfirmed("enforcing")));
    let enforced = at_once(&c, on, AppCheckAction::Enforce, true).expect("enforce");
    assert_eq!(enforced, state(AppCheckState::Enforced));
    assert_eq!(
        at_once(&c, enforced, AppCheckAction::Unenforce, false),
        Err(AppCheckError::NotConfirmed("unenforcing"))
    );
    assert_eq!(at_once(&c, enforced, AppCheckAction::Unenforce, true), Ok(on));
}

#[test]
fn disabling_works_from_either_enabled_state_and_nothing_else_is_allowed() {
    let c = mobile(Some("TEAM"), "com.example.app");
    for from in [AppCheckState::Enabled, AppCheckState::Enforced] {
        assert_eq!(at_once(&c, state(from), AppCheckAction::Disable, false), Ok(AppCheck::default()));
    }
    let off = AppCheck::default();
    for a in [AppCheckAction::Enforce, AppCheckAction::Unenforce, AppCheckAction::Disable] {
        assert!(matches!(at_once(&c, off, a, true), Err(AppCheckError::Inapplicable { .. })), "{a:?}");
    }
    assert!(matches!(
        at_once(&c, state(AppCheckState::Enforced), AppCheckAction::Enable, true),
        Err(AppCheckError::Inapplicable { .. })
    ));
    assert!(matches!(
        at_once(&c, state(AppCheckState::Enabled), AppCheckAction::Unenforce, true),
        Err(AppCheckError::Inapplicable { .. })
    ));
}

#[test]
fn a_change_takes_effect_after_the_propagation_delay() {
    let c = mobile(Some("TEAM"), "com.example.app");
    let s = apply(&c, AppCheck::default(), AppCheckAction::Enable, false, T0, 900).expect("enable");
    assert_eq!(s.effective(T0), AppCheckState::Disabled);
    assert_eq!(s.effective(T0.plus(899)), AppCheckState::Disabled);
    assert_eq!(s.effective(T0.plus(900)), AppCheckState::Enabled);
    assert_eq!(s.target(), AppCheckState::Enabled);
    // The next action starts from the state asked for, and keeps the one in force until its own delay.
    let s2 = apply(&c, s, AppCheckAction::Enforce, true, T0.plus(10), 900).expect("enforce");
    assert_eq!(s2.effective(T0.plus(10)), AppCheckState::Disabled);
    assert_eq!(s2.effective(T0.plus(910)), AppCheckState::Enforced);
    // Later, the change in force becomes the base.
    let s3 = apply(&c, s2, AppCheckAction::Unenforce, true, T0.plus(2000), 900).expect("unenforce");
    assert_eq!(s3.state, AppCheckState::Enforced);
    assert_eq!(s3.effective(T0.plus(2900)), AppCheckState::Enabled);
}

#[test]
fn requests_fall_into_the_four_categories() {
    assert_eq!(classify(Some(true), None), Category::Verified);
    assert_eq!(classify(Some(false), Some("MyApp/1.0 CFNetwork/1490")), Category::UnverifiedInvalid);
    assert_eq!(classify(None, Some("MyApp/1.0 CFNetwork/1490")), Category::UnverifiedOutdatedClient);
    assert_eq!(classify(None, Some("okhttp/4.12.0")), Category::UnverifiedOutdatedClient);
    assert_eq!(classify(None, None), Category::UnverifiedUnknownOrigin);
    assert_eq!(classify(None, Some("  ")), Category::UnverifiedUnknownOrigin);
    assert_eq!(classify(None, Some("Mozilla/5.0 (X11; Linux x86_64)")), Category::UnverifiedUnknownOrigin);
    for c in Category::ALL {
        assert_eq!(Category::parse(c.as_str()), Some(c));
    }
}

fn key() -> SigningKey {
    let rng = Counter::default();
    SigningKey::from_pkcs8(&SigningKey::generate_pkcs8(&rng).expect("gen"), &rng).expect("key")
}

fn jwks_of(k: &SigningKey) -> Jwks {
    let j = k.public_jwk();
    Jwks {
        keys: vec![Jwk {
            kty: "EC".into(),
            kid: Some(k.kid().into()),
            crv: Some(j.crv.clone()),
            x: Some(j.x.clone()),
            y: Some(j.y.clone()),
            n: None,
            e: None,
        }],
    }
}

#[test]
fn an_es256_token_verifies_for_its_client_issuer_and_lifetime() {
    let k = key();
    let jwks = jwks_of(&k);
    let claims = |iss: &str, sub: &str, aud: serde_json::Value, exp: i64| {
        k.sign("JWT", &serde_json::json!({ "iss": iss, "sub": sub, "aud": aud, "exp": exp }), &Counter::default())
            .expect("sign")
    };
    let good = claims("https://ac", "lkapp-phone", "lkapp-phone".into(), T0.0 + 60);
    assert_eq!(verify_token(&good, &jwks, "https://ac", "lkapp-phone", T0), Ok(()));
    let in_array = claims("https://ac", "lkapp-phone", serde_json::json!(["x", "lkapp-phone"]), T0.0 + 60);
    assert_eq!(verify_token(&in_array, &jwks, "https://ac", "lkapp-phone", T0), Ok(()));
    assert!(verify_token(&good, &jwks, "https://other", "lkapp-phone", T0).is_err(), "issuer");
    assert!(verify_token(&good, &jwks, "https://ac", "lkapp-other", T0).is_err(), "client");
    assert!(verify_token(&good, &jwks, "https://ac", "lkapp-phone", T0.plus(60)).is_err(), "expired");
    assert!(verify_token(&good, &jwks_of(&key()), "https://ac", "lkapp-phone", T0).is_err(), "another key");
    assert!(verify_token("a.b", &jwks, "https://ac", "lkapp-phone", T0).is_err(), "malformed");
    let mut tampered = good.clone();
    tampered.insert(good.find('.').expect("dot") + 2, 'A');
    assert!(verify_token(&tampered, &jwks, "https://ac", "lkapp-phone", T0).is_err(), "tampered");
}

/// An RS256 token made with OpenSSL (2048-bit key, e = 65537) for `lkapp-phone`, issuer `https://ac`, exp T0+60.
const RS_TOKEN: &str = "eyJhbGciOiJSUzI1NiIsImtpZCI6InIxIiwidHlwIjoiSldUIn0.eyJpc3MiOiJodHRwczovL2FjIiwic3ViIjoibGthcHAtcGhvbmUiLCJhdWQiOiJsa2FwcC1waG9uZSIsImV4cCI6MTcwMDAwMDA2MH0.BWNvPBi0SO0t8UgpUqd6xXLk3CXJ3G7xjkrlghLOhHjjUPaP-ynukF-zOGMvi1sXyb_WI-d3pTTe3C1KkvvZ1LOy4MtGJczvaLPwm59sZ4OxwgsglSblkgwzIQAM1fWCjrQ2cDszFjP5N5wfiFD-4izr1yTvH5hfFTrx4jfof401q6hJl0caZddqNB-SSNS2UIjoYWlXzw-XWwjfh-_Nm6GfJ0nC5gGTGvj5hu5kMJPRTpR402yWi6IJgT3z1a49iP-tpLdfKah4Mz3S_jIw_t3azTzFVgoE2vuIlAWFP2MJsXpKdre8lLBovEeguwIarVqd0CBCOF3FtPlgMnk_FQ";
/// The key's modulus, base64url.
const RS_N: &str = "zs6KTOQUG7NYQHcez4On6MMxp6q4HP4WXtVYq0ZFok0FmSIuB_R9pbSH7NiC2VcPjB4JSrqXPHNocohxOId986fqmmIn1cUPdYbeCOjHVPftnEqfR3v6xDAtx2Lf1wb0WC4f92BJs12CY9sBHs9bITTG0gkjsWaLtyNMCJ9u2pHk4TzXP0_GsA4XT5YuW2nr6iMzAbkOeK1wkJjKfTDx8YW9wXUnh6b9SG__OnERgdG6YB5eQZDHsLj97DT4nexhvamYUaNJAnRsoO9eTitRClMNINMgceQjG2gpUUwKfLLGls1Q738VreIvNn_NOknI5b4qXEj1_627Lltxw5Jblw";

#[test]
fn an_rs256_token_verifies_against_an_rsa_jwk() {
    let rsa = |kid: &str| Jwk {
        kty: "RSA".into(),
        kid: Some(kid.into()),
        crv: None,
        x: None,
        y: None,
        n: Some(RS_N.into()),
        e: Some("AQAB".into()),
    };
    let jwks = Jwks { keys: vec![rsa("r1")] };
    assert_eq!(verify_token(RS_TOKEN, &jwks, "https://ac", "lkapp-phone", T0), Ok(()));
    assert!(verify_token(RS_TOKEN, &jwks, "https://ac", "lkapp-phone", T0.plus(60)).is_err(), "expired");
    let other_kid = Jwks { keys: vec![rsa("r2")] };
    assert!(verify_token(RS_TOKEN, &other_kid, "https://ac", "lkapp-phone", T0).is_err(), "kid must match");
    let mut wrong_alg = rsa("r1");
    wrong_alg.kty = "EC".into();
    assert!(verify_token(RS_TOKEN, &Jwks { keys: vec![wrong_alg] }, "https://ac", "lkapp-phone", T0).is_err());
}

#[test]
fn the_key_id_of_a_token_is_read_from_its_header() {
    let k = key();
    let token = k.sign("JWT", &serde_json::json!({ "iss": "https://ac" }), &Counter::default()).expect("sign");
    assert_eq!(key_id(&token).as_deref(), Some(k.kid()));
    assert!(jwks_of(&k).has_key(k.kid()));
    assert!(!jwks_of(&key()).has_key(k.kid()));
    assert_eq!(key_id(RS_TOKEN).as_deref(), Some("r1"));
    assert_eq!(key_id("not a token"), None);
    assert_eq!(key_id("e30.e30.sig"), None, "a header without kid");
}
