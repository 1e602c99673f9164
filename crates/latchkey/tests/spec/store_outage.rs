//! A store that cannot take a write is an outage, not a failure (`docs/security.md`, "Store outages"): `503
//! temporarily_unavailable` with
//! `Retry-After`, nothing issued and nothing changed, and the service recovers by itself. On SQLite, another
//! process holding the database file's write lock (an operator's `sqlite3` session, a backup tool); PostgreSQL's
//! outages (server gone, connections refused, database dropped, pool exhausted) are tested with `latchkey serve`
//! processes in `tests/multi_instance/faults.rs`.

use crate::support::*;
use serde_json::Value;

#[tokio::test]
async fn a_sqlite_file_locked_by_another_process_is_503_with_retry_after_and_the_code_stays_usable() {
    if backend() != "sqlite" {
        return;
    }
    let server = TestServer::start().await;
    let app = server.app().await;
    server.user("alice@example.com").await;
    let (pkce, redirect) = (Pkce::new(), "http://127.0.0.1:5555/callback");
    let code =
        server.browser().code(&server, &app, "alice@example.com", &[READONLY], &[READONLY], &pkce, redirect).await;
    let earlier = server.tokens(&app, "alice@example.com", &[READONLY]).await;
    let exchange = [
        ("grant_type", "authorization_code"),
        ("client_id", app.client_id.as_str()),
        ("code", code.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("redirect_uri", redirect),
    ];

    let holder = rusqlite::Connection::open(server.dir.path().join("latchkey.db")).expect("open the file");
    holder.execute_batch("BEGIN EXCLUSIVE").expect("take the write lock");
    // The server waits for the lock as long as its busy timeout allows, then answers an outage.
    let r = server.token(&exchange).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "5");
    assert_eq!(r.headers()["cache-control"], "no-store");
    let v: Value = r.json().await.expect("RFC 6749 JSON");
    assert_eq!(v["error"], "temporarily_unavailable", "{v}");
    // Reads go on (WAL): the data API still answers a token issued before.
    assert_eq!(channels(&server, &earlier.access_token).await.status(), 200);
    holder.execute_batch("ROLLBACK").expect("release the lock");

    // Nothing was issued or spent: the same code is exchanged once the file is free, and only once.
    let r = server.token(&exchange).await;
    assert_eq!(r.status(), 200, "the code survived the outage");
    assert_eq!(server.token(&exchange).await.status(), 400, "and is single-use as ever");
}
