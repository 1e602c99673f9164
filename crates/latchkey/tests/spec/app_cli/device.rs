//! `app login --device` (README, "Sign in as an app"): the CLI asks for a device's codes, prints the user code and
//! where to type it, and polls until the person, here headless Chromium on "another device", signs in, enters the
//! code and allows; then it stores the tokens like any login, calls the data API and revokes.

use super::{AppSide, COMMAND_LIMIT, EMAIL};
use crate::browser::{find, scope_box, with_chrome, WAIT};
use crate::rfc8628_device::tv_app;
use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::time::Instant;

#[tokio::test]
async fn login_with_the_device_flow_prints_the_code_and_polls_until_the_person_allows_in_chromium() {
    with_chrome(|chrome| async move { device_login(&chrome).await }).await;
}

async fn device_login(chrome: &fantoccini::Client) {
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

    // The person, on another device: the address, the sign-in, the code typed, the warning, Allow.
    chrome.goto(&address).await.expect("open the address the app printed");
    find(chrome, "input[name=email]").await.send_keys(EMAIL).await.expect("type the email");
    find(chrome, "input[name=password]").await.send_keys(PASSWORD).await.expect("type the password");
    find(chrome, "form button[type=submit]").await.click().await.expect("sign in");
    find(chrome, "input[name=user_code]").await.send_keys(&code.to_lowercase()).await.expect("type the code");
    find(chrome, "#device-continue").await.click().await.expect("continue");
    let warning = find(chrome, "#device-warning").await.text().await.expect("the warning");
    assert!(warning.contains("a device you own"), "{warning}");
    find(chrome, &scope_box(READONLY)).await.click().await.expect("tick the scope");
    find(chrome, "button[name=decision][value=allow]").await.click().await.expect("allow");
    let until = Instant::now() + WAIT;
    loop {
        // The page may change under the read (the form's answer arriving): read again.
        let body = find(chrome, "body").await.text().await.unwrap_or_default();
        if body.contains("Go back to your device") {
            break;
        }
        assert!(Instant::now() < until, "no page saying to go back to the device: {body}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

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
    let called = side.run(&["call", &server.url("/video/v3/channels?part=snippet&mine=true")]).await;
    assert_eq!(called.code, Some(0), "{called:?}");
    let revoked = side.run(&["revoke"]).await;
    assert_eq!(revoked.json("revoke")["revoked"], true);
}
