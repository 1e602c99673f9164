//! `app login --device` (README, "Sign in as an app"): the CLI asks for a device's codes, prints the user code and
//! where to type it, and polls until the person, here the test's HTTP browser on "another device", signs in, enters
//! the code and allows; then it stores the tokens like any login.

use super::{AppSide, COMMAND_LIMIT, EMAIL};
use crate::rfc8628_device::tv_app;
use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::time::Instant;

#[tokio::test]
async fn login_with_the_device_flow_prints_the_code_and_polls_until_the_person_allows() {
    // Polls a second apart, so that the login ends within the command's limit.
    let server = TestServer::start_with(|c| c.device_poll_interval = 1).await;
    server.user(EMAIL).await;
    let app = tv_app(&server).await;
    let side = AppSide::new(&server, &app);
    let ca = side.ca().display().to_string();
    let args =
        ["login", "--issuer", &side.issuer, "--client-id", &side.client_id, "--ca-file", &ca, "--scope", READONLY];
    let mut child = side.command(&args).arg("--device").spawn().expect("spawn latchkey app login --device");
    let stderr = child.stderr.take().expect("stderr");
    // The address and the code are printed on stderr, each on a line of its own, indented.
    let (address, code, stderr) = tokio::task::spawn_blocking(move || {
        let mut reader = BufReader::new(stderr);
        let (mut seen, mut address) = (String::new(), None);
        loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).expect("read stderr") > 0, "no code printed: {seen}");
            seen.push_str(&line);
            let text = line.trim();
            if text.starts_with("https://") && address.is_none() {
                address = Some(text.to_owned());
            } else if let Some(a) = &address {
                if text.len() == 9 && text.as_bytes()[4] == b'-' {
                    return (a.clone(), text.to_owned(), reader);
                }
            }
        }
    })
    .await
    .expect("reader");
    assert_eq!(address, server.url("/device"));

    let browser = server.browser();
    let first = browser.get(&address).await;
    let login = browser.get(&server.url(first.headers["location"].to_str().expect("location"))).await;
    let signed_in = browser.sign_in(&login, EMAIL, PASSWORD).await;
    let page = browser.get(&server.url(signed_in.headers["location"].to_str().expect("location"))).await;
    let (csrf, account) = (page.input("csrf").expect("csrf"), page.input("account").expect("account"));
    let consent = browser.post("/device", &[("csrf", &csrf), ("account", &account), ("user_code", &code)]).await;
    assert_eq!(consent.status, 200, "{}", consent.body);
    let request = consent.input("request").expect("request");
    let form = [("csrf", csrf.as_str()), ("request", &request), ("scope", READONLY), ("decision", "allow")];
    assert_eq!(browser.post("/device/consent", &form).await.status, 200);

    let deadline = Instant::now() + COMMAND_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "`app login --device` did not finish");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let (mut out, mut rest) = (String::new(), String::new());
    child.stdout.take().expect("stdout").read_to_string(&mut out).expect("stdout");
    BufReader::new(stderr).read_to_string(&mut rest).expect("stderr");
    assert!(status.success(), "{status:?}: {rest}");
    let report: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(report["granted"], serde_json::json!([READONLY]), "{report}");
    assert!(side.tokens()["refresh_token"].as_str().is_some_and(|t| t.starts_with("lkr_")));
}
