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

#[tokio::test]
async fn an_idle_connection_does_not_hold_up_the_real_redirect() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    let waiting = tokio::spawn(l.receive("s", Duration::from_secs(30)));
    // A browser's speculative preconnect, or another local process, that never sends a request.
    let _idle = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = std::time::Instant::now();
    let answered = tokio::time::timeout(Duration::from_secs(3), get(port, "/callback?code=c&state=s")).await;
    assert_eq!(answered.expect("answered while the idle connection is open").0, 200);
    assert_eq!(waiting.await.expect("join").expect("response").code.as_deref(), Some("c"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_refused_request_that_ends_while_the_real_one_is_arriving_does_not_stall_the_listener() {
    let l = LoopbackListener::bind().await.expect("bind");
    let port = l.port;
    let waiting = tokio::spawn(l.receive("s", Duration::from_secs(30)));
    let mut forged = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    forged.write_all(b"GET /callback?code=evil&state=wrong HTTP/1.1\r\n").await.expect("write");
    let mut real = TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    real.write_all(b"GET /callback?code=good&state=s HTTP/1.1\r\n").await.expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The forged request is refused while the real one is still in progress; then the real one completes.
    forged.write_all(b"Host: 127.0.0.1\r\n\r\n").await.expect("write");
    let mut refused = String::new();
    forged.read_to_string(&mut refused).await.expect("read");
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    real.write_all(b"Host: 127.0.0.1\r\n\r\n").await.expect("write");
    let mut page = String::new();
    real.read_to_string(&mut page).await.expect("read");
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let received = tokio::time::timeout(Duration::from_secs(3), waiting).await.expect("not stalled");
    assert_eq!(received.expect("join").expect("response").code.as_deref(), Some("good"));
}
