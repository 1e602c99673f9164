//! PostgreSQL's notices of new deliveries ([`crate::notices`]): a connection of its own `LISTEN`ing on the channel
//! the `set_deliveries` trigger notifies, its notices handed on in order. When the connection is lost it connects
//! again (to whichever host accepts writes by then), and says [`Notice::All`] once it listens again: what was
//! notified meanwhile is missed, so every reader looks.

use super::connect::Target;
use super::errors::map_err;
use crate::notices::{Notice, Notices, CHANNEL, QUEUE};
use crate::{StoreError, StoreResult};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::AsyncMessage;

/// How long the listener waits before it connects again after a failure.
const RECONNECT_AFTER: Duration = Duration::from_secs(1);

/// Listens on the channel; the notices end when the receiver is dropped. Returns once the first connection
/// listens, so that every delivery made after it is announced.
pub(super) async fn listen(target: Arc<Target>) -> StoreResult<Option<Notices>> {
    let (tx, rx) = mpsc::channel(QUEUE);
    let (listening, first) = oneshot::channel();
    tokio::spawn(async move {
        let mut listening = Some(listening);
        loop {
            let ended = session(&target, &tx, &mut listening).await;
            if let Some(first) = listening.take() {
                // The first connection failed: the caller is told, and nothing listens.
                let _ = first.send(ended.map_err(map_err));
                return;
            }
            if tx.is_closed() {
                return;
            }
            if let Err(e) = ended {
                tracing::warn!(error = %e, "listening for new security events");
            }
            tokio::time::sleep(RECONNECT_AFTER).await;
        }
    });
    match first.await {
        Ok(Ok(())) => Ok(Some(rx)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(StoreError::Other("the listener stopped".into())),
    }
}

/// One listening connection, until it fails or the receiver goes. Once it listens, it tells `first` if that is
/// still waiting, and otherwise says [`Notice::All`] (a connection made again may have missed notices).
async fn session(
    target: &Target,
    tx: &mpsc::Sender<Notice>,
    first: &mut Option<oneshot::Sender<StoreResult<()>>>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = target.config.connect(target.tls.clone()).await?;
    let listen = format!("LISTEN {CHANNEL}");
    let mut listening = std::pin::pin!(client.batch_execute(&listen));
    let mut listened = false;
    loop {
        tokio::select! {
            done = &mut listening, if !listened => {
                done?;
                listened = true;
                let told = match first.take() {
                    Some(first) => first.send(Ok(())).is_ok(),
                    None => tx.send(Notice::All).await.is_ok(),
                };
                if !told {
                    return Ok(());
                }
            }
            message = std::future::poll_fn(|cx| connection.poll_message(cx)) => match message {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    if tx.send(Notice::Stream(n.payload().to_owned())).await.is_err() {
                        return Ok(());
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            },
        }
    }
}
