//! What `latchkey app` prints, without a browser (the app's state is written from the test server's own flow):
//! one JSON object on stdout with times in RFC 3339, compact or indented with `--pretty`; a failure as one JSON
//! line on stderr with the exit code `admin` uses for the same meaning (README, "The admin and app CLIs").

use super::{server_with_user, AppSide, EMAIL};
use crate::support::*;
use latchkey_client::{FileTokenStore, TokenSet, TokenStore};
use serde_json::{json, Value};

/// 2100-01-01T00:00:00Z in Unix seconds.
const Y2100: i64 = 4_102_444_800;
/// 2101-01-01T00:00:00Z in Unix seconds.
const Y2101: i64 = 4_133_980_800;

/// Writes the state `app login` leaves for `requested` scopes: `app.json`, and the tokens of a real sign-in for
/// [`READONLY`] with `access_token` and the expiries changed to the given ones.
async fn sign_in(server: &TestServer, app: &App, side: &AppSide, change: impl FnOnce(&mut TokenSet)) -> TokenSet {
    let response = server.tokens(app, EMAIL, &[READONLY]).await;
    let mut tokens = TokenSet {
        issuer: server.base.clone(),
        client_id: app.client_id.clone(),
        access_token: response.access_token,
        expires_at: Y2100,
        refresh_token: response.refresh_token,
        refresh_expires_at: Some(Y2101),
        scope: response.scope,
        id_token: None,
        dpop_jkt: None,
    };
    change(&mut tokens);
    let saved = json!({
        "issuer": server.base, "client_id": app.client_id, "client_secret": null, "ca_file": side.ca(),
        "dpop": false, "requested": [READONLY, UPLOAD],
    });
    std::fs::create_dir_all(side.state()).expect("state directory");
    std::fs::write(side.state().join("app.json"), saved.to_string()).expect("app.json");
    FileTokenStore::new(side.state().join("tokens.json")).save(&tokens).expect("tokens.json");
    tokens
}

#[tokio::test]
async fn status_and_token_print_times_in_rfc_3339_compact_or_indented_with_pretty() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let tokens = sign_in(&server, &app, &side, |_| {}).await;
    let status = side.run(&["status"]).await.json("app status");
    let expected = json!({
        "issuer": server.base,
        "client_id": app.client_id,
        "granted": [READONLY],
        "not_granted": [UPLOAD],
        "access_token_expires_at": "2100-01-01T00:00:00Z",
        "refresh_token": true,
        "refresh_token_expires_at": "2101-01-01T00:00:00Z",
        "dpop_bound": null,
    });
    assert_eq!(status, expected);
    // `--pretty` is a flag of `app`, before or after the command.
    let indented = format!("{}\n", serde_json::to_string_pretty(&expected).expect("pretty"));
    assert!(indented.contains("\n  \"access_token_expires_at\": \"2100-01-01T00:00:00Z\",\n"), "{indented}");
    for args in [["--pretty", "status"], ["status", "--pretty"]] {
        assert_eq!(side.run(&args).await.ok("app status --pretty"), indented, "{args:?}");
    }

    let token = side.run(&["token"]).await.json("app token");
    let expected =
        json!({ "access_token": tokens.access_token, "token_type": "Bearer", "expires_at": "2100-01-01T00:00:00Z" });
    assert_eq!(token, expected, "the stored token, far from its expiry");

    // No refresh-token expiry is null.
    sign_in(&server, &app, &side, |t| t.refresh_expires_at = None).await;
    assert_eq!(side.run(&["status"]).await.json("app status")["refresh_token_expires_at"], Value::Null);
}

#[tokio::test]
async fn without_a_sign_in_each_command_exits_3_not_found_with_a_json_error_on_stderr() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let url = server.url("/video/v3/channels?part=snippet&mine=true");
    for args in [vec!["status"], vec!["token"], vec!["revoke"], vec!["call", url.as_str()], vec!["--pretty", "status"]]
    {
        let why = side.run(&args).await.failure(3, "not_signed_in");
        assert_eq!(why, "Not signed in: run `latchkey app login ...` first.", "{args:?}");
    }
    let out = side.run(&["logout"]).await;
    assert_eq!(out.json("logout"), json!({ "signed_out": true }), "nothing to forget is no failure");
}

#[tokio::test]
async fn a_server_that_cannot_be_reached_exits_6_unreachable() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("a port").local_addr().expect("address");
    let issuer = format!("https://{closed}");
    let ca = side.ca().display().to_string();
    let args = ["login", "--issuer", &issuer, "--client-id", &app.client_id, "--ca-file", &ca, "--scope", READONLY];
    let why = side.run(&args).await.failure(6, "unreachable");
    assert!(why.starts_with("transport: "), "{why}");
    assert!(!side.state().join("app.json").exists(), "nothing is stored");
}

#[tokio::test]
async fn a_refused_refresh_exits_5_invalid_grant_and_an_api_error_status_maps_as_for_admin() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let url = server.url("/video/v3/channels?part=snippet&mine=true");

    // The API answers 401 to a token it does not know: the app refreshes once and calls again.
    sign_in(&server, &app, &side, |t| t.access_token = "lka_unknown".into()).await;
    let out = side.run(&["call", &url]).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let body: Value = serde_json::from_str(&out.stdout).expect("the API's JSON");
    assert!(body["items"].is_array(), "{body}");
    // Another error status maps as for admin (404: 3), with the API's body still on stdout.
    let out = side.run(&["call", &server.url("/video/v3/nothing")]).await;
    assert_eq!(out.code, Some(3), "{out:?}");
    assert_eq!(out.stderr, "{\"error\":\"http_error\",\"error_description\":\"The API answered HTTP 404.\"}\n");
    assert!(!out.stdout.trim().is_empty(), "the API's body: {out:?}");

    // A 401 whose refresh is refused (the grant revoked elsewhere): 5, invalid_grant, sign in again.
    let tokens = sign_in(&server, &app, &side, |t| t.access_token = "lka_unknown".into()).await;
    let r = server.http().post(server.url("/revoke")).form(&[("token", &tokens.refresh_token.expect("rt"))]).send();
    assert_eq!(r.await.expect("revoke").status(), 200);
    let why = side.run(&["call", &url]).await.failure(5, "invalid_grant");
    assert!(why.starts_with("Sign in again ("), "{why}");

    // An expired access token whose grant was revoked elsewhere: the refresh gets invalid_grant.
    let tokens = sign_in(&server, &app, &side, |t| t.expires_at = 1_700_000_000).await;
    let refresh_token = tokens.refresh_token.expect("a refresh token");
    let r = server.http().post(server.url("/revoke")).form(&[("token", &refresh_token)]).send().await;
    assert_eq!(r.expect("revoke").status(), 200);
    let why = side.run(&["token"]).await.failure(5, "invalid_grant");
    assert!(why.starts_with("Sign in again (") && why.ends_with("): run `latchkey app login ...`."), "{why}");
    assert!(!side.state().join("tokens.json").exists(), "the dead tokens are forgotten");

    // A grant ended elsewhere while the stored access token is far from its expiry: status and token ask the
    // server, and say sign in again instead of showing the dead token as valid.
    for command in ["status", "token"] {
        let tokens = sign_in(&server, &app, &side, |_| {}).await;
        let rt = tokens.refresh_token.expect("a refresh token");
        let r = server.http().post(server.url("/revoke")).form(&[("token", &rt)]).send().await;
        assert_eq!(r.expect("revoke").status(), 200);
        let why = side.run(&[command]).await.failure(5, "invalid_grant");
        assert!(why.starts_with("Sign in again ("), "{command}: {why}");
    }
}
