//! `app login --no-browser --port N` (README, "Sign in as an app"): the CLI opens nothing, prints the address to open
//! on any machine, and takes the address the browser was finally sent to, pasted on its standard input, with `state`
//! and PKCE checked as for the loopback redirect, and `--resource` (RFC 8707) sent along. The person on the other
//! machine is the test's HTTP browser; nothing reaches the CLI's listener.

use super::{server_with_user, AppSide, COMMAND_LIMIT, EMAIL};
use crate::support::*;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::time::Instant;

#[tokio::test]
async fn login_without_a_browser_completes_with_the_redirect_address_pasted_on_a_fixed_port() {
    let (server, app) = server_with_user(|_| {}).await;
    let side = AppSide::new(&server, &app);
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port").local_addr().expect("addr").port();
    let (ca, port_arg) = (side.ca().display().to_string(), port.to_string());
    let args =
        ["login", "--issuer", &side.issuer, "--client-id", &side.client_id, "--ca-file", &ca, "--scope", READONLY];
    let data_api = server.url("/video/v3");
    let mut child = side
        .command(&args)
        .args(["--no-browser", "--port", &port_arg, "--resource", &data_api])
        .env("BROWSER", "/bin/false")
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn latchkey app login");
    let stderr = child.stderr.take().expect("stderr");
    // The address is printed on stderr, indented; read (blocking) on a thread of its own.
    let (url, stderr) = tokio::task::spawn_blocking(move || {
        let mut reader = BufReader::new(stderr);
        let mut seen = String::new();
        loop {
            let mut line = String::new();
            assert!(reader.read_line(&mut line).expect("read stderr") > 0, "no address printed: {seen}");
            seen.push_str(&line);
            if line.trim_start().starts_with("https://") {
                return (line.trim().to_owned(), reader);
            }
        }
    })
    .await
    .expect("reader");
    assert!(url.contains(&format!("redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback")), "{url}");
    let resource = url::form_urlencoded::byte_serialize(data_api.as_bytes()).collect::<String>();
    assert!(url.contains(&format!("resource={resource}")), "--resource names the API (RFC 8707): {url}");

    let browser = server.browser();
    let consent = browser.consent_page(&url, EMAIL).await;
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    let redirect = done.location().expect("the redirect back to the app").to_string();
    assert!(redirect.starts_with(&format!("http://127.0.0.1:{port}/callback?")), "{redirect}");
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "not the address\n{redirect}").expect("paste");

    let deadline = Instant::now() + COMMAND_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        assert!(Instant::now() < deadline, "`app login --no-browser` did not finish");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let (mut out, mut rest) = (String::new(), String::new());
    child.stdout.take().expect("stdout").read_to_string(&mut out).expect("stdout");
    BufReader::new(stderr).read_to_string(&mut rest).expect("stderr");
    assert!(status.success(), "{status:?}: {rest}");
    assert!(rest.contains("That is not an address starting with"), "a wrong line is answered: {rest}");
    assert!(rest.contains("error page instead of the sign-in"), "what to look for while it waits: {rest}");
    let report: Value = serde_json::from_str(&out).expect("one JSON object");
    assert_eq!(report["granted"], serde_json::json!([READONLY]), "{report}");
    assert!(side.tokens()["refresh_token"].as_str().is_some_and(|t| t.starts_with("lkr_")));
}
