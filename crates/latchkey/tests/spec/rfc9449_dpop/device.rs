//! DPoP on the device grant: a poll refused for its nonce is no poll (no `slow_down` after it), and a proof on the
//! poll that gets the tokens binds their refresh token, as in the code exchange.

use super::*;
use crate::rfc8628_device::{allow, tv_app, DEVICE_GRANT};

#[tokio::test]
async fn a_nonce_refusal_is_no_poll_and_the_polls_proof_binds_the_refresh_token() {
    let server = TestServer::start().await;
    server.user(crate::rfc8628_device::ANN).await;
    let tv = tv_app(&server).await;
    let codes = crate::rfc8628_device::codes(&server, &tv, READONLY).await;
    let device_code = codes["device_code"].as_str().expect("device code");
    let form = [("grant_type", DEVICE_GRANT), ("client_id", tv.client_id.as_str()), ("device_code", device_code)];
    let key = Key::new();
    let stale = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), Some("not-a-nonce")))]).await;
    stale.assert_refused("use_dpop_nonce", "a nonce this server never gave");
    let pending = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), None))]).await;
    assert_eq!(pending.error(), (400, "authorization_pending"), "not slow_down: the refused request was no poll");

    allow(&server, codes["user_code"].as_str().expect("user code")).await;
    let tokens = post(&server, &form, &[&key.proof(&claims(&server, &fresh_jti(), None))]).await.tokens();
    let refresh_token = rt(&tokens).to_owned();
    let unproven = post(&server, &refresh_form(&tv, &refresh_token), &[]).await;
    assert_eq!(unproven.status, 400, "a bound refresh token needs its key's proof: {}", unproven.body);
    let nonce = some_nonce(&server, &tv).await;
    let proof = key.proof(&claims(&server, &fresh_jti(), Some(&nonce)));
    let proven = post(&server, &refresh_form(&tv, &refresh_token), &[&proof]).await;
    assert_eq!(proven.status, 200, "{}", proven.body);
}
