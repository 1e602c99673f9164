//! The pages a person uses, on a phone's screen (390 CSS pixels wide, in headless Chromium): sign-in, the account
//! chooser, consent, the account page and an error page with the request's details never scroll sideways, and
//! every control is within the screen.

use crate::account_browser::sign_in;
use crate::browser::{find, scope_box, with_chrome, Loopback};
use crate::support::*;
use fantoccini::Client;

/// A phone's screen: an iPhone 12 to 15's width in CSS pixels.
const WIDTH: u32 = 390;
const HEIGHT: u32 = 844;

/// Asserts that the page fits the screen's width, and that each element `controls` selects lies within it.
async fn fits(browser: &Client, page: &str, controls: &str) {
    let script = "const w = window.innerWidth; \
                  const out = [...document.querySelectorAll(arguments[0])] \
                    .map(e => e.getBoundingClientRect()) \
                    .filter(r => r.left < 0 || r.right > w + 0.5).length; \
                  return [document.documentElement.scrollWidth, w, out, \
                          document.querySelectorAll(arguments[0]).length];";
    let seen = browser.execute(script, vec![controls.into()]).await.expect("measure the page");
    // What sticks out, to say so when the page is too wide.
    let wide = "return [...document.body.querySelectorAll('*')] \
                  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5) \
                  .map(e => e.tagName + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '') \
                    + ' ' + Math.round(e.getBoundingClientRect().width)).slice(0, 8);";
    let wide = browser.execute(wide, vec![]).await.expect("what sticks out");
    let [scroll, width, outside, count] =
        [0, 1, 2, 3].map(|i| seen[i].as_f64().unwrap_or_else(|| panic!("{page}: a number: {seen}")));
    assert!(width <= f64::from(WIDTH), "{page}: the screen is {width} px wide");
    assert!(scroll <= width, "{page} scrolls sideways: {scroll} px of content on a {width} px screen ({wide})");
    assert!(count > 0.0, "{page}: no control matched {controls}");
    assert_eq!(outside, 0.0, "{page}: {outside} of {count} controls ({controls}) lie outside the screen");
}

#[tokio::test]
async fn sign_in_chooser_consent_account_and_error_pages_fit_a_390_pixel_screen() {
    with_chrome(|browser| async move {
        browser.set_window_size(WIDTH, HEIGHT).await.expect("a phone's screen");
        let server = TestServer::start().await;
        let app = server.app().await;
        server.user("alice.with.a.rather.long.address@example.com").await;
        let mut loopback = Loopback::bind().await;
        let redirect_uri = loopback.redirect_uri.clone();
        let pkce = Pkce::new();

        browser.goto(&authorize_url(&server, &app, &[READONLY], &pkce, &redirect_uri, "s")).await.expect("open");
        fits(&browser, "the sign-in page", "input, button").await;
        sign_in(&browser, "alice.with.a.rather.long.address@example.com").await;
        fits(&browser, "the consent page", "input[type=checkbox], button").await;
        find(&browser, &scope_box(READONLY)).await.click().await.expect("tick readonly");
        find(&browser, "button[name=decision][value=allow]").await.click().await.expect("click Allow");
        let callback = loopback.callback().await;
        let code = callback.get("code").expect("the app got its code");
        server.exchange(&app, code, &pkce, &redirect_uri).await;

        let chooser =
            format!("{}&prompt=select_account", authorize_url(&server, &app, &[READONLY], &pkce, &redirect_uri, "s"));
        browser.goto(&chooser).await.expect("open the chooser");
        fits(&browser, "the account chooser", "a").await;

        browser.goto(&server.url("/account")).await.expect("open the account page");
        let remove = find(&browser, "button.danger").await.text().await.expect("text");
        assert_eq!(remove, "Remove access");
        fits(&browser, "the account page", "button, input:not([type=hidden])").await;

        let long = format!("http://localhost:8080/{}", "callback/".repeat(30));
        let refused = authorize_url(&server, &app, &[READONLY], &pkce, &long, "s");
        browser.goto(&refused).await.expect("open a refused request");
        assert!(find(&browser, "#request-details").await.text().await.expect("text").contains("redirect_uri"));
        fits(&browser, "the error page", "a, code").await;
    })
    .await;
}
