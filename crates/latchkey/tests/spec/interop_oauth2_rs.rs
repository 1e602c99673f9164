//! Interoperability with the `oauth2` crate (ramosbugs/oauth2-rs v5), used unmodified as an installed app would:
//! RFC 6749 code grant, RFC 7636 PKCE S256, RFC 8252 loopback redirect, RFC 7009 revocation, and the RFC 6749
//! §5.2 error bodies parsed by the crate's own error type.

use crate::support::*;
use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicRevocationErrorResponse, BasicTokenType};
use oauth2::{
    AccessToken, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet,
    PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError, RevocationErrorResponseType,
    RevocationUrl, Scope, StandardRevocableToken, TokenResponse, TokenUrl,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use url::Url;

/// The `oauth2` client type with every endpoint this test uses set.
pub(crate) type Client = BasicClient<EndpointSet, EndpointNotSet, EndpointNotSet, EndpointSet, EndpointSet>;

/// The endpoints, read from discovery as a generic client would.
pub(crate) struct Endpoints {
    authorize: String,
    token: String,
    revoke: String,
}

pub(crate) async fn discover(server: &TestServer) -> Endpoints {
    let r = server.http().get(server.url("/.well-known/openid-configuration")).send().await.expect("discovery");
    assert_eq!(r.status(), 200, "discovery");
    let m: serde_json::Value = r.json().await.expect("discovery json");
    let field = |k: &str| m[k].as_str().unwrap_or_else(|| panic!("{k} in discovery")).to_owned();
    Endpoints {
        authorize: field("authorization_endpoint"),
        token: field("token_endpoint"),
        revoke: field("revocation_endpoint"),
    }
}

/// A public client (no secret), configured only through the crate's builder.
pub(crate) fn client(e: &Endpoints, client_id: &str, redirect: &str) -> Client {
    BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::new(e.authorize.clone()).expect("auth url"))
        .set_token_uri(TokenUrl::new(e.token.clone()).expect("token url"))
        .set_revocation_url(RevocationUrl::new(e.revoke.clone()).expect("revocation url"))
        .set_redirect_uri(RedirectUrl::new(redirect.to_owned()).expect("redirect url"))
}

/// An RFC 8252 §7.3 loopback listener: accepts one request, answers with a page telling the user to go back to
/// the app, and yields the full callback URL.
pub(crate) struct Loopback {
    listener: TcpListener,
    pub(crate) redirect: String,
}

impl Loopback {
    pub(crate) async fn bind() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("loopback listener");
        let port = listener.local_addr().expect("local addr").port();
        Self { listener, redirect: format!("http://127.0.0.1:{port}/cb") }
    }

    /// Serves one request and returns the URL it asked for.
    fn serve_once(self) -> tokio::task::JoinHandle<Url> {
        tokio::spawn(async move {
            let (mut stream, _) = self.listener.accept().await.expect("callback connection");
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = stream.read(&mut chunk).await.expect("read callback");
                assert!(n > 0, "callback connection closed early");
                buf.extend_from_slice(&chunk[..n]);
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            let target = head.split_whitespace().nth(1).expect("request target").to_owned();
            let body = "<!doctype html><title>Signed in</title><p>You can close this window and return to the app.";
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            stream.write_all(response.as_bytes()).await.expect("write callback response");
            stream.shutdown().await.ok();
            Url::parse(&self.redirect).expect("redirect").join(&target).expect("callback url")
        })
    }
}

/// Runs the browser part for a URL the crate built: sign-in, consent with `granted` ticked, then the browser
/// follows the 303 to the app's loopback listener. Returns the callback URL the app received.
pub(crate) async fn authorize_in_browser(server: &TestServer, url: &Url, loopback: Loopback, granted: &[&str]) -> Url {
    let app_side = loopback.serve_once();
    let browser = server.browser();
    let consent = browser.consent_page(url.as_str(), "alice@example.com").await;
    assert_eq!(consent.status, 200, "consent page: {}", consent.body);
    let done = browser.decide(&consent, granted, "allow").await;
    assert_eq!(done.status, 303, "consent redirects: {}", done.body);
    let location = done.location().expect("redirect location");
    let landed = browser.get(location.as_str()).await;
    assert_eq!(landed.status, 200, "the loopback listener answers");
    assert!(landed.body.contains("close this window"), "{}", landed.body);
    app_side.await.expect("loopback task")
}

pub(crate) fn param(url: &Url, name: &str) -> Option<String> {
    url.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
}

#[tokio::test]
async fn the_oauth2_crate_completes_authorize_exchange_refresh_and_revoke_unmodified() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let endpoints = discover(&server).await;
    let loopback = Loopback::bind().await;
    let client = client(&endpoints, &app.client_id, &loopback.redirect);
    let http = server.http();

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(Scope::new(READONLY.to_owned()))
        .set_pkce_challenge(challenge)
        .url();
    assert_eq!(param(&url, "code_challenge_method").as_deref(), Some("S256"));

    let callback = authorize_in_browser(&server, &url, loopback, &[READONLY]).await;
    assert_eq!(callback.path(), "/cb");
    assert_eq!(param(&callback, "state").as_deref(), Some(csrf.secret().as_str()), "state comes back unchanged");
    assert_eq!(param(&callback, "iss").as_deref(), Some(server.base.as_str()), "RFC 9207 iss");
    let code = param(&callback, "code").expect("code in the callback");

    let tokens = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .request_async(&http)
        .await
        .expect("the crate exchanges the code");
    assert_eq!(*tokens.token_type(), BasicTokenType::Bearer);
    assert_eq!(tokens.expires_in().map(|d| d.as_secs()), Some(3600));
    let scopes: Vec<String> = tokens.scopes().expect("scope in the response").iter().map(|s| s.to_string()).collect();
    assert_eq!(scopes, vec![READONLY.to_owned()]);
    let refresh = tokens.refresh_token().expect("refresh token for an installed app").clone();
    assert_eq!(channels(&server, tokens.access_token().secret()).await.status(), 200);

    let refreshed =
        client.exchange_refresh_token(&refresh).request_async(&http).await.expect("the crate refreshes the token");
    assert_eq!(*refreshed.token_type(), BasicTokenType::Bearer);
    assert_ne!(refreshed.access_token().secret(), tokens.access_token().secret());
    assert_eq!(channels(&server, refreshed.access_token().secret()).await.status(), 200);

    client
        .revoke_token(StandardRevocableToken::RefreshToken(refresh.clone()))
        .expect("revocation url is set")
        .request_async(&http)
        .await
        .expect("the crate revokes the refresh token");
    assert_eq!(channels(&server, refreshed.access_token().secret()).await.status(), 401);

    let after = client.exchange_refresh_token(&refresh).request_async(&http).await;
    match after {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), BasicErrorResponseType::InvalidGrant, "{e:?}")
        }
        other => panic!("refresh after revocation must be invalid_grant, got {other:?}"),
    }
}

#[tokio::test]
async fn the_oauth2_crate_parses_a_bad_code_as_invalid_grant() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let endpoints = discover(&server).await;
    let client = client(&endpoints, &app.client_id, "http://127.0.0.1:8765/cb");
    let result = client
        .exchange_code(AuthorizationCode::new("not-a-code".to_owned()))
        .set_pkce_verifier(PkceCodeVerifier::new("a".repeat(43)))
        .request_async(&server.http())
        .await;
    match result {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), BasicErrorResponseType::InvalidGrant, "{e:?}");
            assert!(e.error_description().is_some_and(|d| !d.is_empty()), "a description: {e:?}");
        }
        other => panic!("a bad code must be invalid_grant, got {other:?}"),
    }
}

#[tokio::test]
async fn the_oauth2_crate_parses_a_wrong_pkce_verifier_as_invalid_grant() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let endpoints = discover(&server).await;
    let loopback = Loopback::bind().await;
    let client = client(&endpoints, &app.client_id, &loopback.redirect);
    let (challenge, _verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, _csrf) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(Scope::new(READONLY.to_owned()))
        .set_pkce_challenge(challenge)
        .url();
    let callback = authorize_in_browser(&server, &url, loopback, &[READONLY]).await;
    let code = param(&callback, "code").expect("code");
    let (_, other_verifier) = PkceCodeChallenge::new_random_sha256();
    let result = client
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(other_verifier)
        .request_async(&server.http())
        .await;
    match result {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), BasicErrorResponseType::InvalidGrant, "{e:?}")
        }
        other => panic!("a wrong verifier must be invalid_grant, got {other:?}"),
    }
}

#[tokio::test]
async fn the_oauth2_crate_with_a_client_secret_in_basic_auth_completes_the_exchange() {
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let endpoints = discover(&server).await;
    let loopback = Loopback::bind().await;
    // The crate's default AuthType is client_secret_basic (RFC 6749 §2.3.1).
    let client =
        client(&endpoints, &app.client_id, &loopback.redirect).set_client_secret(ClientSecret::new(app.client_secret));
    let http = server.http();
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, csrf) = client
        .authorize_url(CsrfToken::new_random)
        .add_scope(Scope::new(READONLY.to_owned()))
        .set_pkce_challenge(challenge)
        .url();
    let callback = authorize_in_browser(&server, &url, loopback, &[READONLY]).await;
    assert_eq!(param(&callback, "state").as_deref(), Some(csrf.secret().as_str()));
    let tokens = client
        .exchange_code(AuthorizationCode::new(param(&callback, "code").expect("code")))
        .set_pkce_verifier(verifier)
        .request_async(&http)
        .await
        .expect("exchange with client_secret_basic");
    let refresh = tokens.refresh_token().expect("refresh token").clone();
    client.exchange_refresh_token(&refresh).request_async(&http).await.expect("refresh with client_secret_basic");

    // Revoking the access token revokes its grant, refresh token included.
    client
        .revoke_token(StandardRevocableToken::AccessToken(tokens.access_token().clone()))
        .expect("revocation url is set")
        .request_async(&http)
        .await
        .expect("revoke with client_secret_basic");
    match client.exchange_refresh_token(&refresh).request_async(&http).await {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), BasicErrorResponseType::InvalidGrant, "{e:?}")
        }
        other => panic!("refresh after revoking the access token must be invalid_grant, got {other:?}"),
    }
}

#[tokio::test]
async fn the_oauth2_crate_parses_a_wrong_client_secret_as_invalid_client() {
    let server = TestServer::start().await;
    let app = server.app().await;
    let endpoints = discover(&server).await;
    let client = client(&endpoints, &app.client_id, "http://127.0.0.1:8765/cb")
        .set_client_secret(ClientSecret::new("wrong-secret".to_owned()));
    let result =
        client.exchange_refresh_token(&RefreshToken::new("whatever".to_owned())).request_async(&server.http()).await;
    match result {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), BasicErrorResponseType::InvalidClient, "{e:?}")
        }
        other => panic!("a wrong secret must be invalid_client, got {other:?}"),
    }
    let revoked = client
        .revoke_token(StandardRevocableToken::AccessToken(AccessToken::new("whatever".to_owned())))
        .expect("revocation url is set")
        .request_async(&server.http())
        .await;
    let parsed: Result<(), RequestTokenError<_, BasicRevocationErrorResponse>> = revoked;
    match parsed {
        Err(RequestTokenError::ServerResponse(e)) => {
            assert_eq!(*e.error(), RevocationErrorResponseType::Basic(BasicErrorResponseType::InvalidClient), "{e:?}")
        }
        other => panic!("revocation with a wrong secret must be invalid_client, got {other:?}"),
    }
}
