//! PostgreSQL's notices of new deliveries ([`crate::notices`]): one listening connection per call, `LISTEN`ing
//! on the channel the `set_deliveries` trigger notifies, its notices handed on in order.

use super::errors::map_err;
use crate::notices::{Notice, Notices, CHANNEL, QUEUE};
use crate::StoreResult;
use sqlx::postgres::{PgListener, PgPool};
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the listener waits before it connects again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Listens on the channel; the notices end when the receiver is dropped.
pub(super) async fn listen(pool: PgPool) -> StoreResult<Option<Notices>> {
    let mut listener = PgListener::connect_with(&pool).await.map_err(map_err)?;
    listener.listen(CHANNEL).await.map_err(map_err)?;
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(async move {
        loop {
            let notice = match listener.try_recv().await {
                Ok(Some(n)) => Notice::Stream(n.payload().to_owned()),
                // The connection was lost; the next call connects again and listens anew. What was notified
                // meanwhile is missed: every reader looks.
                Ok(None) => Notice::All,
                Err(e) => {
                    tracing::warn!(error = %e, "listening for new security events");
                    tokio::time::sleep(RECONNECT_AFTER).await;
                    Notice::All
                }
            };
            if tx.send(notice).await.is_err() {
                return;
            }
        }
    });
    Ok(Some(rx))
}
