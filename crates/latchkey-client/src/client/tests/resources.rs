//! Resource indicators (RFC 8707): the APIs an app names go as repeated `resource` parameters on the
//! authorization request; one API is named on the code exchange and the refresh too, several are not; nothing
//! changes for an app that names none.

use super::*;
use crate::fake_http::form_values;

const ORDERS: &str = "https://api.example.com/orders";
const BILLING: &str = "https://api.example.com/billing?v=2";

/// A client of an app that names two APIs.
fn client_for_apis(http: Arc<FakeHttp>) -> OAuthClient {
    let config = AppConfig::new(ISSUER, "lkapp-test").with_resource(ORDERS).with_resource(BILLING);
    OAuthClient::new(config, fake_http::discovery(true), http)
}

/// Every value of `name` in the query of `url`.
fn query_values(url: &str, name: &str) -> Vec<String> {
    let url = url::Url::parse(url).expect("a URL");
    url.query_pairs().filter(|(k, _)| k == name).map(|(_, v)| v.into_owned()).collect()
}

#[test]
fn the_authorization_request_names_each_resource() {
    let c = client_for_apis(FakeHttp::new(vec![]));
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    assert_eq!(query_values(a.url(), "resource"), [ORDERS, BILLING]);
    assert!(format!("{:?}", c.config()).contains(ORDERS));
}

#[tokio::test]
async fn the_code_exchange_and_the_refresh_name_one_resource_and_not_several() {
    let http = FakeHttp::new(vec![
        token_answer("lka_1", Some("lkr_1"), READONLY, 3600),
        token_answer("lka_2", None, READONLY, 3600),
    ]);
    let config = AppConfig::new(ISSUER, "lkapp-test").with_resource(ORDERS);
    let c = OAuthClient::new(config, fake_http::discovery(true), http.clone());
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", Some(ISSUER));
    let t = c.exchange(a, &r, None).await.expect("tokens");
    c.refresh(&t, None).await.expect("refreshed");
    for request in http.requests() {
        assert_eq!(form_values(&request, "resource"), [ORDERS]);
    }
    several_are_named_on_the_authorization_request_only().await;
}

async fn several_are_named_on_the_authorization_request_only() {
    let http = FakeHttp::new(vec![
        token_answer("lka_1", Some("lkr_1"), READONLY, 3600),
        token_answer("lka_2", None, READONLY, 3600),
    ]);
    let c = client_for_apis(http.clone());
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    let r = response(&a, "lkc_1", Some(ISSUER));
    let t = c.exchange(a, &r, None).await.expect("tokens");
    c.refresh(&t, None).await.expect("refreshed");
    let sent = http.requests();
    assert_eq!(sent.len(), 2);
    for (request, grant) in sent.iter().zip(["authorization_code", "refresh_token"]) {
        assert_eq!(form(request)["grant_type"], grant);
        assert!(form_values(request, "resource").is_empty(), "{grant}: the person may have declined one API");
    }
}

#[tokio::test]
async fn without_resources_none_is_sent() {
    let http = FakeHttp::new(vec![
        token_answer("lka_1", Some("lkr_1"), READONLY, 3600),
        token_answer("lka_2", None, READONLY, 3600),
    ]);
    let c = client(http.clone(), true);
    let a = c.authorize(REDIRECT, &[READONLY]).expect("authorize");
    assert!(query_values(a.url(), "resource").is_empty());
    let r = response(&a, "lkc_1", Some(ISSUER));
    let t = c.exchange(a, &r, None).await.expect("tokens");
    c.refresh(&t, None).await.expect("refreshed");
    for request in http.requests() {
        assert!(form_values(&request, "resource").is_empty());
    }
}
