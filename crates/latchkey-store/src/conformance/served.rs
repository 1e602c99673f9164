//! The served URLs: none until a server starts, then the last one recorded.

use super::T0;
use crate::prelude::*;
use crate::ServedUrls;

/// No URLs before a server records them; a second record replaces the first (one record per store).
pub(super) async fn the_served_urls_are_the_last_recorded(store: &dyn Store) {
    assert_eq!(store.served_urls().await.expect("read"), None, "no server has started");
    let first = ServedUrls {
        issuer: "https://127.0.0.1:9000".into(),
        auth: "https://127.0.0.1:9000".into(),
        token: "https://127.0.0.1:9000".into(),
        api: "https://127.0.0.1:9000".into(),
        recorded_at: T0,
    };
    store.record_served_urls(&first).await.expect("record");
    assert_eq!(store.served_urls().await.expect("read"), Some(first));
    let second = ServedUrls {
        issuer: "https://id.example".into(),
        auth: "https://accounts.example".into(),
        token: "https://oauth2.example".into(),
        api: "https://api.example".into(),
        recorded_at: T0.plus(60),
    };
    store.record_served_urls(&second).await.expect("record again");
    assert_eq!(store.served_urls().await.expect("read"), Some(second), "the last server to start");
}
