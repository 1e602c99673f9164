use super::*;

async fn get(port: u16, target: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    s.write_all(format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes()).await.expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    let status = out.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, out)
}

#[tokio::test]
async fn the_listener_takes_the_matching_response_and_tells_the_user_to_return() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    assert_eq!(l.redirect_uri(), format!("http://127.0.0.1:{port}/callback"));
    let waiting = tokio::spawn(l.receive("s1", Duration::from_secs(5)));
    let (status, page) = get(port, "/callback?code=abc&state=s1&iss=https%3A%2F%2Fas").await;
    assert_eq!(status, 200);
    assert!(page.contains("return to the app"));
    let r = waiting.await.expect("join").expect("response");
    assert_eq!((r.code.as_deref(), r.iss.as_deref()), (Some("abc"), Some("https://as")));
}

#[tokio::test]
async fn a_response_with_another_state_is_refused_and_ignored() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    let waiting = tokio::spawn(l.receive("right", Duration::from_secs(5)));
    assert_eq!(get(port, "/callback?code=evil&state=wrong").await.0, 400);
    assert_eq!(get(port, "/callback?code=evil").await.0, 400);
    assert_eq!(get(port, "/favicon.ico").await.0, 404);
    assert_eq!(get(port, "/callback?code=good&state=right").await.0, 200);
    assert_eq!(waiting.await.expect("join").expect("response").code.as_deref(), Some("good"));
}

#[tokio::test]
async fn a_second_redirect_after_the_response_finds_nobody_listening() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    let waiting = tokio::spawn(l.receive("s", Duration::from_secs(5)));
    assert_eq!(get(port, "/callback?code=first&state=s").await.0, 200);
    assert_eq!(waiting.await.expect("join").expect("response").code.as_deref(), Some("first"));
    assert!(TcpStream::connect(("127.0.0.1", port)).await.is_err(), "the port is closed after one response");
}

#[tokio::test]
async fn an_error_response_is_returned_to_the_app() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    let waiting = tokio::spawn(l.receive("s", Duration::from_secs(5)));
    get(port, "/callback?error=access_denied&state=s").await;
    assert_eq!(waiting.await.expect("join").expect("response").error.as_deref(), Some("access_denied"));
}

#[tokio::test]
async fn waiting_times_out_cleanly() {
    let l = LoopbackListener::bind().await.expect("bind");
    assert!(matches!(l.receive("s", Duration::from_millis(50)).await, Err(Error::Timeout(_))));
}
