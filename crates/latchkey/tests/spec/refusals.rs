//! "Bad input gets a clear error in the protocol's own format" (`docs/security.md`, "Bad input"): refusals made before
//! a handler reads the request, or by the web framework (a body too large, a method the path does not have, a content
//! type the endpoint does not read, an unknown path), answered in the endpoint's own format with the right status, over
//! real HTTP.

use crate::support::*;
use serde_json::Value;

/// A status, the content type's first part, and the body.
async fn answer(r: reqwest::Response) -> (u16, String, String, reqwest::header::HeaderMap) {
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let ct = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").split(';').next().unwrap_or("");
    (status, ct.to_owned(), r.text().await.expect("body"), headers)
}

/// POSTs `body` as a form to `path`.
async fn post_form(server: &TestServer, path: &str, body: String) -> reqwest::Response {
    let request = server.http().post(server.url(path)).header("content-type", "application/x-www-form-urlencoded");
    request.body(body).send().await.expect("the answer is read, not a connection reset")
}

fn oauth_error(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("RFC 6749 JSON: {body}"));
    assert!(v["error_description"].as_str().is_some_and(|d| !d.is_empty()), "{v}");
    v["error"].as_str().expect("error").to_owned()
}

fn data_api_reason(body: &str, status: u16) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|_| panic!("the data API's error body: {body}"));
    assert_eq!(v["error"]["code"], status, "{v}");
    v["error"]["errors"][0]["reason"].as_str().expect("reason").to_owned()
}

#[tokio::test]
async fn a_form_over_64_kib_at_the_token_endpoint_is_a_json_413_the_client_reads() {
    let server = TestServer::start().await;
    let form = format!("grant_type=refresh_token&refresh_token={}", "a".repeat(100 * 1024));
    for path in ["/token", "/revoke"] {
        let r = post_form(&server, path, form.clone()).await;
        let (status, ct, body, headers) = answer(r).await;
        assert_eq!((status, ct.as_str()), (413, "application/json"), "{path}: {body}");
        assert_eq!(oauth_error(&body), "invalid_request");
        assert_eq!(headers["cache-control"], "no-store");
    }
    // The same connection still serves: the body was read to its end.
    let r = server.http().get(server.url("/.well-known/openid-configuration")).send().await.expect("get");
    assert_eq!(r.status(), 200);
    // Every answer, a refusal or not, keeps to HTTPS and is not sniffed.
    assert_eq!(r.headers()["strict-transport-security"], "max-age=31536000");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
}

#[tokio::test]
async fn a_form_that_is_not_utf8_once_decoded_is_400_invalid_request() {
    let server = TestServer::start().await;
    for body in ["grant_type=refresh_token&refresh_token=%FF%FE", "grant_type=refresh_token&refresh_token=a\u{FFFD}"] {
        let bytes: Vec<u8> = if body.contains('\u{FFFD}') { body.as_bytes().to_vec() } else { body.into() };
        let r = server
            .http()
            .post(server.url("/token"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(bytes)
            .send()
            .await
            .expect("post");
        let (status, _, text, _) = answer(r).await;
        assert_eq!(status, 400, "{text}");
        let v: Value = serde_json::from_str(&text).expect("json");
        if body.contains("%FF") {
            assert!(v["error_description"].as_str().expect("text").contains("UTF-8"), "{v}");
        } else {
            assert!(!v["error_description"].as_str().expect("text").contains("UTF-8"), "a real U+FFFD is text: {v}");
        }
    }
    let raw = b"grant_type=refresh_token&refresh_token=\xff".to_vec();
    let r =
        server.http().post(server.url("/token")).header("content-type", "application/x-www-form-urlencoded").body(raw);
    let (status, _, text, _) = answer(r.send().await.expect("post")).await;
    assert_eq!(status, 400);
    assert!(text.contains("UTF-8"), "raw invalid bytes: {text}");
}

#[tokio::test]
async fn a_wrong_method_is_405_with_allow_in_the_endpoints_format() {
    let server = TestServer::start().await;
    let r = server.http().get(server.url("/token")).send().await.expect("get");
    let (status, ct, body, headers) = answer(r).await;
    assert_eq!((status, ct.as_str()), (405, "application/json"), "{body}");
    assert_eq!(oauth_error(&body), "invalid_request");
    assert!(headers["allow"].to_str().expect("allow").contains("POST"));
    assert_eq!(headers["cache-control"], "no-store");

    let r = server.http().post(server.url("/video/v3/channels")).send().await.expect("post");
    let (status, _, body, headers) = answer(r).await;
    assert_eq!((status, data_api_reason(&body, 405).as_str()), (405, "httpMethodNotAllowed"));
    assert!(headers["allow"].to_str().expect("allow").contains("GET"));

    let r = server.http().put(server.url("/console/api/v1/projects")).send().await.expect("put");
    let (status, ct, body, _) = answer(r).await;
    assert_eq!((status, ct.as_str()), (405, "application/json"), "{body}");

    let r = server.http().delete(server.url("/signin")).send().await.expect("delete");
    let (status, ct, _, headers) = answer(r).await;
    assert_eq!((status, ct.as_str()), (405, "text/html"), "a page for the browser");
    assert!(headers.contains_key("allow"));
}

#[tokio::test]
async fn an_unknown_path_is_404_in_the_format_of_its_prefix() {
    let server = TestServer::start().await;
    let get = |path: &'static str| {
        let server = &server;
        async move { answer(server.http().get(server.url(path)).send().await.expect("get")).await }
    };
    let (status, _, body, _) = get("/video/v3/playlists").await;
    assert_eq!((status, data_api_reason(&body, 404).as_str()), (404, "notFound"));
    let (status, ct, body, _) = get("/console/api/v1/nothing-here").await;
    assert_eq!((status, ct.as_str()), (404, "application/json"), "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["error"], "invalid_request");
    let (status, ct, _, _) = get("/nothing-here").await;
    assert_eq!((status, ct.as_str()), (404, "text/html"));
}

#[tokio::test]
async fn a_path_and_query_over_8_kib_is_414_in_the_endpoints_format() {
    let server = TestServer::start().await;
    let long = "x".repeat(9 * 1024);
    let r = server.http().get(server.url(&format!("/video/v3/channels?part=id&q={long}"))).send().await.expect("get");
    let (status, _, body, _) = answer(r).await;
    assert_eq!((status, data_api_reason(&body, 414).as_str()), (414, "uriTooLong"));
    let r = server.http().get(server.url(&format!("/o/oauth2/v2/auth?scope={long}"))).send().await.expect("get");
    let (status, ct, _, _) = answer(r).await;
    assert_eq!((status, ct.as_str()), (414, "text/html"), "a page for the browser");
    let r = server.http().post(server.url(&format!("/token?x={long}"))).send().await.expect("post");
    let (status, _, body, _) = answer(r).await;
    assert_eq!((status, oauth_error(&body).as_str()), (414, "invalid_request"));
    // Just under the limit is read as usual.
    let near = "x".repeat(8 * 1024 - 40);
    let r = server.http().get(server.url(&format!("/video/v3/channels?part=id&q={near}"))).send().await.expect("get");
    assert_eq!(r.status(), 401, "no token: the request was read");
}

#[tokio::test]
async fn a_body_over_64_kib_to_the_data_api_and_the_console_api_is_413_in_their_formats() {
    let server = TestServer::start().await;
    let big = "x".repeat(70 * 1024);
    let r = server.http().get(server.url("/video/v3/channels")).body(big.clone()).send().await.expect("get");
    let (status, _, body, _) = answer(r).await;
    assert_eq!((status, data_api_reason(&body, 413).as_str()), (413, "requestTooLarge"));
    let r = server
        .http()
        .post(server.url("/console/api/v1/projects"))
        .header("content-type", "application/json")
        .body(big)
        .send()
        .await
        .expect("post");
    let (status, ct, body, _) = answer(r).await;
    assert_eq!((status, ct.as_str()), (413, "application/json"), "{body}");
}

#[tokio::test]
async fn header_fields_over_16_kib_are_431_in_the_endpoints_format() {
    let server = TestServer::start().await;
    let big = "x".repeat(9 * 1024);
    let send = |path: &'static str| {
        let (a, b) = (big.clone(), big.clone());
        let http = server.http();
        let url = server.url(path);
        async move { http.get(url).header("x-one", a).header("x-two", b).send().await.expect("sent") }
    };
    let (status, _, body, _) = answer(send("/video/v3/channels").await).await;
    assert_eq!(status, 431, "{body}");
    assert_eq!(data_api_reason(&body, 431), "headersTooLarge");
    let (status, ct, _, _) = answer(send("/account").await).await;
    assert_eq!((status, ct.as_str()), (431, "text/html"), "a page for the browser");
    let r = server.http().post(server.url("/token")).header("cookie", big.repeat(2)).send().await.expect("sent");
    let (status, _, body, headers) = answer(r).await;
    assert_eq!((status, oauth_error(&body).as_str()), (431, "invalid_request"));
    assert_eq!(headers["cache-control"], "no-store");
    // One large header under the limit is read as usual.
    let r = server.http().get(server.url("/video/v3/channels")).header("x-one", big).send().await.expect("sent");
    assert_eq!(r.status(), 401, "no token: the request was read");
}

#[tokio::test]
async fn a_form_of_sixteen_thousand_names_is_refused_by_its_length_not_checked_for_repeats() {
    let server = TestServer::start().await;
    // About 16,000 distinct short names in under 64 KiB: the pairs are not compared with each other, the form is
    // refused because it has more parameters than any token request.
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let char_of = |i: usize| char::from(ALPHABET[i % ALPHABET.len()]);
    let two = (0..ALPHABET.len().pow(2)).map(|i| format!("{}{}", char_of(i / 62), char_of(i)));
    let three = (0..).map(|i: usize| format!("{}{}{}", char_of(i / 3844), char_of(i / 62), char_of(i)));
    let names: Vec<String> = two.chain(three).take(16_000).collect();
    let form = names.join("&");
    assert!(form.len() < 64 * 1024);
    for path in ["/token", "/revoke"] {
        let r = post_form(&server, path, form.clone()).await;
        let (status, _, body, _) = answer(r).await;
        assert_eq!((status, oauth_error(&body).as_str()), (400, "invalid_request"), "{path}: {body}");
        assert!(body.contains("more than 64 parameters"), "{path}: {body}");
    }
    // A repeat among more pairs than are compared one by one is still found.
    let mut form: Vec<String> = (0..30).map(|i| format!("p{i}=v")).collect();
    form.push("p7=w".into());
    let r = post_form(&server, "/token", form.join("&")).await;
    let (status, _, body, _) = answer(r).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("Parameter sent more than once: p7"), "{body}");
}
