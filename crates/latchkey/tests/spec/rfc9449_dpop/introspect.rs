//! Introspection of a DPoP-bound refresh token names the key it is bound to (`cnf.jkt`, RFC 9449 §6.2); an
//! access token, which latchkey does not bind, has none.

use super::*;
use crate::rfc8628_device::{allow, tv_app, DEVICE_GRANT};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

#[tokio::test]
async fn a_bound_refresh_token_introspects_with_its_keys_thumbprint() {
    let server = TestServer::start().await;
    server.user(crate::rfc8628_device::ANN).await;
    let tv = tv_app(&server).await;
    let codes = crate::rfc8628_device::codes(&server, &tv, READONLY).await;
    let form = [
        ("grant_type", DEVICE_GRANT),
        ("client_id", tv.client_id.as_str()),
        ("device_code", codes["device_code"].as_str().expect("device code")),
    ];
    allow(&server, codes["user_code"].as_str().expect("user code")).await;
    let key = Key::new();
    let tokens = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), None))]).await.tokens();
    let jwk = key.jwk();
    let members = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().expect("x"),
        jwk["y"].as_str().expect("y")
    );
    let thumbprint = URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, members.as_bytes()));
    let refresh = crate::rfc7662_introspection::introspect(&server, &tv, rt(&tokens)).await;
    assert_eq!(refresh["active"], true, "{refresh}");
    assert_eq!(refresh["cnf"]["jkt"], thumbprint.as_str(), "{refresh}");
    let access = crate::rfc7662_introspection::introspect(&server, &tv, &tokens.access_token).await;
    assert_eq!(access["active"], true, "{access}");
    assert!(access.get("cnf").is_none(), "the access token is a bearer token: {access}");
}
