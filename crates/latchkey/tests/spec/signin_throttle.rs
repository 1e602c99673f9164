//! The sign-in throttle (`docs/security.md`, "Sign-in throttling"): attempts are counted before their password is
//! checked, so concurrent guesses never check more passwords than the limit; an account has a limit of its own
//! whatever the addresses; a window that reached its limit is followed by a longer one; the account page's password
//! change is throttled alike. Over real HTTP, from several loopback addresses.

use crate::account_page::form_input;
use crate::login_consent::ALICE;
use crate::support::*;
use std::net::IpAddr;
use std::sync::Arc;

/// A scripted browser whose connections leave from `local` (Linux answers on all of 127.0.0.0/8).
fn browser_from(server: &TestServer, local: &str) -> Browser {
    let http = server
        .http_builder()
        .cookie_store(true)
        .local_address(local.parse::<IpAddr>().expect("address"))
        .build()
        .expect("client");
    Browser::with_http(&server.base, http)
}

/// The sign-in page's CSRF token, with its cookie now in the browser.
async fn sign_in_form(server: &TestServer, browser: &Browser) -> Page {
    let page = browser.get(&server.url("/signin?continue=/account")).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

fn retry_after(page: &Page) -> u64 {
    page.headers.get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.parse().ok()).expect("Retry-After")
}

#[tokio::test]
async fn a_thousand_concurrent_guesses_for_one_account_check_no_more_passwords_than_the_limit() {
    let server = TestServer::start().await;
    server.user(ALICE).await;
    let browser = Arc::new(server.browser());
    let login = Arc::new(sign_in_form(&server, &browser).await);
    let guesses: Vec<_> = (0..1000)
        .map(|i| {
            let (browser, login) = (Arc::clone(&browser), Arc::clone(&login));
            tokio::spawn(async move { browser.sign_in(&login, ALICE, &format!("guess {i}")).await.status })
        })
        .collect();
    let mut statuses = Vec::new();
    for g in guesses {
        statuses.push(g.await.expect("answered"));
    }
    let checked = statuses.iter().filter(|s| **s == 401).count();
    let held = statuses.iter().filter(|s| **s == 429).count();
    println!("1000 concurrent guesses: {checked} checked (401), {held} throttled (429)");
    assert_eq!(checked + held, 1000, "only 401 and 429: {statuses:?}");
    assert_eq!(checked, 5, "login_max_failures guesses were checked, however many came at once");
    let right = browser.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(right.status, 429, "the right password is not checked either: {}", right.body);
    assert!((1..=900).contains(&retry_after(&right)), "{:?}", right.headers);
}

#[tokio::test]
async fn guesses_from_many_addresses_share_the_accounts_limit_and_the_next_window_is_longer() {
    let clock = Arc::new(TestClock::default());
    let server = TestServer::start_with_clock(
        |c| {
            c.login_max_failures = 2;
            c.login_account_max_failures = 6;
        },
        clock.clone(),
    )
    .await;
    server.user(ALICE).await;
    // Three addresses, two guesses each: the account's six.
    for n in 1..=3 {
        let browser = browser_from(&server, &format!("127.0.0.{}", n + 1));
        let login = sign_in_form(&server, &browser).await;
        for _ in 0..2 {
            assert_eq!(browser.sign_in(&login, ALICE, "wrong").await.status, 401);
        }
    }
    // A fourth address has a guess of its own left, but the account has none.
    let fresh = browser_from(&server, "127.0.0.9");
    let login = sign_in_form(&server, &fresh).await;
    let refused = fresh.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!((1..=900).contains(&retry_after(&refused)), "within the first window of 900 s");
    // The window reached its limit: the next one lasts twice as long.
    clock.advance(900);
    for _ in 0..6 {
        let guess = fresh.sign_in(&login, ALICE, "wrong").await;
        assert!(matches!(guess.status, 401 | 429), "{}", guess.body);
    }
    let refused = fresh.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(refused.status, 429);
    assert!((901..=1800).contains(&retry_after(&refused)), "{:?}", refused.headers);
    // The account's own sign-in comes back once its window has passed.
    clock.advance(1800);
    let back = fresh.sign_in(&login, ALICE, PASSWORD).await;
    assert_eq!(back.status, 303, "{}", back.body);
}

#[tokio::test]
async fn the_account_pages_current_password_is_throttled_like_a_sign_in() {
    let server = TestServer::start().await;
    let alice = server.user(ALICE).await;
    let browser = server.browser();
    let login = sign_in_form(&server, &browser).await;
    assert_eq!(browser.sign_in(&login, ALICE, PASSWORD).await.status, 303);
    let page = browser.get(&server.url("/account")).await;
    let csrf = form_input(&page, "/account/password", "csrf");
    let change = |current: &'static str| {
        let (csrf, alice, browser) = (csrf.clone(), alice.clone(), &browser);
        async move {
            let form = [
                ("csrf", csrf.as_str()),
                ("account", alice.as_str()),
                ("current_password", current),
                ("new_password", "a new long password"),
            ];
            browser.post("/account/password", &form).await
        }
    };
    for attempt in 1..=5 {
        let wrong = change("nope").await;
        assert_eq!(wrong.status, 400, "attempt {attempt}: {}", wrong.body);
    }
    let held = change(PASSWORD).await;
    assert_eq!(held.status, 429, "{}", held.body);
    assert!(unescape(&held.body).contains("Too many wrong passwords"));
    assert!(retry_after(&held) >= 1);
    // The password did not change.
    let user = server.store().user_by_email(ALICE).await.expect("user").expect("alice");
    assert!(latchkey_admin::password::verify(PASSWORD, Some(&user.password_hash)));
}

#[tokio::test]
async fn guesses_from_elsewhere_do_not_keep_the_owner_out_of_an_address_they_signed_in_from() {
    let server = TestServer::start_with(|c| {
        c.login_max_failures = 2;
        c.login_account_max_failures = 4;
    })
    .await;
    server.user(ALICE).await;
    let home = browser_from(&server, "127.0.0.5");
    let login = sign_in_form(&server, &home).await;
    assert_eq!(home.sign_in(&login, ALICE, PASSWORD).await.status, 303, "the owner signs in from home once");
    // Someone else uses up the account's limit from two other addresses.
    for n in 6..=7 {
        let elsewhere = browser_from(&server, &format!("127.0.0.{n}"));
        let form = sign_in_form(&server, &elsewhere).await;
        for _ in 0..2 {
            assert_eq!(elsewhere.sign_in(&form, ALICE, "guess").await.status, 401);
        }
    }
    let third = browser_from(&server, "127.0.0.8");
    let form = sign_in_form(&server, &third).await;
    assert_eq!(third.sign_in(&form, ALICE, PASSWORD).await.status, 429, "a new address is held back");
    // From home, the owner still signs in.
    let again = browser_from(&server, "127.0.0.5");
    let form = sign_in_form(&server, &again).await;
    assert_eq!(again.sign_in(&form, ALICE, PASSWORD).await.status, 303);
}
