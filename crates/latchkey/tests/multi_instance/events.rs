//! Security events on many instances (`docs/events.md`): instances sharing PostgreSQL share the outbox and deliver each
//! event once in a run without faults; a `kill -9` of an instance and a receiver down for a while lose none (each
//! arrives, duplicates only under the same `jti`), in order.

use crate::instance::*;
use crate::set_receiver::TestReceiver;
use crate::Cluster;
use latchkey_store::test_database::Unreachable;
use std::path::Path;

/// A cluster whose instances trust the receiver certificate made in `receiver_dir` and deliver promptly.
async fn cluster_for(receiver_dir: &Path) -> Result<(Cluster, String), Unreachable> {
    let cert = latchkey_server::tls::ensure_local_certificate(receiver_dir).expect("receiver certificate").cert;
    let cert = cert.to_string_lossy().into_owned();
    let env = [
        ("LATCHKEY_EVENTS_PUSH_CA_FILE", cert.as_str()),
        ("LATCHKEY_EVENTS_WORKER_INTERVAL_MS", "50"),
        ("LATCHKEY_EVENTS_PUSH_TIMEOUT_SECS", "2"),
        ("LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH", "true"),
    ];
    let c = Cluster::start(&env).await?;
    Ok((c, cert))
}

/// The cluster's receiver and stream for its client, and one grant of the test user (events are only about
/// accounts that granted the app access).
async fn receiver_and_stream(c: &Cluster, dir: &Path) -> TestReceiver {
    c.tokens_via(&c.a.base).await;
    let receiver = TestReceiver::start(&c.public, &c.client_id, &c.tls.cert, dir).await;
    // The operator's CLI checks the push URL with the instances' settings: a loopback receiver is allowed.
    let config = dir.join("admin.toml");
    std::fs::write(&config, "[events]\nallow_insecure_loopback_push = true\n").expect("config");
    let config = config.to_string_lossy().into_owned();
    let args = ["--config", &config, "stream", "create", "--client", &c.client_id, "--push-url", &receiver.url];
    admin_ok(&c.db.url, &args, "").await;
    receiver
}

/// Disables then enables the test user `n` times through the admin CLI: `2n` events, each acknowledged by the
/// CLI's success before the next.
async fn toggle(c: &Cluster, n: usize) {
    for _ in 0..n {
        admin_ok(&c.db.url, &["user", "disable", "--email", EMAIL], "").await;
        admin_ok(&c.db.url, &["user", "enable", "--email", EMAIL], "").await;
    }
}

/// The event types expected for `n` toggles.
fn alternating(n: usize) -> Vec<String> {
    let t = "https://schemas.openid.net/secevent/risc/event-type/";
    (0..n).flat_map(|_| [format!("{t}account-disabled"), format!("{t}account-enabled")]).collect()
}

/// Two instances lease from one outbox: every event arrives exactly once, in order.
pub async fn on_two_instances_sharing_postgresql_every_event_is_delivered_once() -> Result<(), Unreachable> {
    let receiver_dir = tempfile::tempdir().expect("dir");
    let (mut c, _) = cluster_for(receiver_dir.path()).await?;
    let receiver = receiver_and_stream(&c, receiver_dir.path()).await;
    toggle(&c, 15).await;
    receiver.wait_for(30, 60).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(receiver.types(), alternating(15), "in order");
    let seen = receiver.seen.lock().expect("seen");
    let twice: Vec<_> = seen.arrivals.iter().filter(|(_, n)| **n != 1).collect();
    let warnings = |logs: String| {
        logs.lines().filter(|l| l.contains("WARN") || l.contains("ERROR")).collect::<Vec<_>>().join("\n")
    };
    assert!(
        twice.is_empty(),
        "each event once without faults: {twice:?}; warnings of A:\n{}\nof B:\n{}",
        warnings(c.a.logs()),
        warnings(c.b.logs())
    );
    assert!(seen.refused.is_empty(), "{:?}", seen.refused);
    drop(seen);
    c.a.assert_healthy();
    c.b.assert_healthy();
    Ok(())
}

/// An instance SIGKILLed while events flow, and a receiver down for a while: every acknowledged change's event
/// arrives, in order; a duplicate only ever repeats a `jti`.
pub async fn an_instance_killed_and_a_receiver_down_lose_no_event() -> Result<(), Unreachable> {
    let receiver_dir = tempfile::tempdir().expect("dir");
    let (mut c, cert) = cluster_for(receiver_dir.path()).await?;
    let mut receiver = receiver_and_stream(&c, receiver_dir.path()).await;
    toggle(&c, 3).await;
    c.a.kill();
    toggle(&c, 3).await;
    receiver.stop().await;
    toggle(&c, 3).await;
    c.b.kill();
    let env = [
        ("LATCHKEY_EVENTS_PUSH_CA_FILE", cert.as_str()),
        ("LATCHKEY_EVENTS_WORKER_INTERVAL_MS", "50"),
        ("LATCHKEY_EVENTS_PUSH_TIMEOUT_SECS", "2"),
        ("LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH", "true"),
    ];
    let dir = c.dir.path().join("a-again");
    let spec = Spec { database_url: &c.db.url, dir: &dir, tls: &c.tls, public_url: Some(&c.public), env: &env };
    let mut again = Instance::start(&spec).await;
    c.lb.set_upstreams(vec![again.addr]);
    toggle(&c, 3).await;
    receiver.restart(&c.public, &c.client_id, &c.tls.cert).await;
    receiver.wait_for(24, 90).await;
    assert_eq!(receiver.types(), alternating(12), "every acknowledged change's event, in order");
    assert!(receiver.seen.lock().expect("seen").refused.is_empty());
    again.assert_healthy();
    Ok(())
}
