//! The PostgreSQL backend's own tests (beside the conformance suite). Where a test reads or writes the database
//! behind the store's back, it does so on a connection of its own to the same database.

use latchkey_core::time::UnixTime;
use latchkey_store::conformance::{fixture, grant_counts_bound_the_live_grants, issue, single_use_value};
use latchkey_store::postgres::PgStore;
use latchkey_store::prelude::*;
use latchkey_store::test_database::{TestDatabase, Trial, Unreachable};
use latchkey_store::{GrantLimits, PoolSettings, StoreError};
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// Every test here, named `postgres::<test>`.
pub fn tests() -> Vec<Trial> {
    latchkey_store::trials!("postgres::";
        reopening_a_database_keeps_its_data_and_migrates_once,
        instances_starting_together_on_an_empty_database_migrate_it_once,
        an_unreachable_server_is_reported_unavailable_quickly,
        a_database_url_names_its_backend,
        a_postgres_url_opens_the_postgres_backend,
        the_unrevoked_grant_counts_bound_the_live_grants_and_are_exact_after_a_limit_is_enforced,
        grants_marked_legacy_are_found_by_refresh_hash_and_others_only_by_id,
        single_use_values_of_the_earlier_form_are_purged_when_they_expire,
        a_revocation_and_its_audit_record_commit_together_or_not_at_all,
        new_deliveries_are_announced_to_every_listener,
        one_row_reads_share_a_connection_and_a_lost_one_is_made_again,
    )
}

/// A connection of the test's own to `db`.
async fn pool(db: &TestDatabase) -> Client {
    latchkey_store::postgres::connect_one(&db.url).await.expect("connect")
}

async fn reopening_a_database_keeps_its_data_and_migrates_once() -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let first = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let (client_id, _) = fixture(&first).await;
    let again = PgStore::open(&db.url, PoolSettings::default()).await.expect("reopen runs no migration twice");
    assert!(again.client(&client_id).await.expect("get").is_some());
    Ok(())
}

async fn instances_starting_together_on_an_empty_database_migrate_it_once() -> Result<(), Unreachable> {
    let db = TestDatabase::create_database().await?;
    let opens: Vec<_> = (0..4)
        .map(|_| {
            let url = db.url.clone();
            tokio::spawn(async move { PgStore::open(&url, PoolSettings::default()).await })
        })
        .collect();
    for o in opens {
        o.await.expect("join").expect("every instance opens the store");
    }
    Ok(())
}

async fn an_unreachable_server_is_reported_unavailable_quickly() -> Result<(), Unreachable> {
    // Nothing listens on port 1.
    let settings = PoolSettings { max_connections: 2, acquire_timeout: Duration::from_secs(2), shared_connections: 1 };
    let started = Instant::now();
    let e = PgStore::connect("postgres://postgres@127.0.0.1:1/none", settings).await.expect_err("no server");
    assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
    Ok(())
}

async fn a_database_url_names_its_backend() -> Result<(), Unreachable> {
    assert_eq!(latchkey_store::backend_of("postgres://u@h/db"), Some("postgres"));
    assert_eq!(latchkey_store::backend_of("postgresql://u@h/db"), Some("postgres"));
    assert_eq!(latchkey_store::backend_of("sqlite://x.db"), Some("sqlite"));
    assert_eq!(latchkey_store::backend_of("mysql://x"), None);
    assert!(matches!(latchkey_store::open("mysql://x").await, Err(StoreError::Other(_))));
    Ok(())
}

async fn a_postgres_url_opens_the_postgres_backend() -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = latchkey_store::open(&db.url).await.expect("open");
    store.ping().await.expect("ping");
    Ok(())
}

async fn the_unrevoked_grant_counts_bound_the_live_grants_and_are_exact_after_a_limit_is_enforced(
) -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let pool = pool(&db).await;
    let counted = || async {
        let row = pool
            .query_one(
                "SELECT (SELECT COALESCE(SUM(unrevoked), 0)::BIGINT FROM grant_counts), \
                 (SELECT count(*) FROM grants WHERE revoked_at IS NULL)",
                &[],
            )
            .await
            .expect("count");
        (row.get::<_, i64>(0), row.get::<_, i64>(1))
    };
    grant_counts_bound_the_live_grants(&store, counted).await;
    Ok(())
}

async fn grants_marked_legacy_are_found_by_refresh_hash_and_others_only_by_id() -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let (client_id, user_id) = fixture(&store).await;
    let old = issue(&store, &client_id, &user_id, GrantLimits::default()).await;
    let new = issue(&store, &client_id, &user_id, GrantLimits::default()).await;
    // Migration 0101 marks the grants that exist when it runs; mark one the same way.
    pool(&db)
        .await
        .execute("UPDATE grants SET legacy_refresh = TRUE WHERE id = $1", &[&&old.id.0[..]])
        .await
        .expect("mark legacy");
    let found = store.legacy_grant_by_refresh(&old.refresh_hash).await.expect("get").expect("found by hash");
    assert_eq!(found.grant, old);
    assert!(store.legacy_grant_by_refresh(&new.refresh_hash).await.expect("get").is_none());
    assert_eq!(store.grant(&new.id).await.expect("get").expect("found by id").grant, new);
    Ok(())
}

async fn single_use_values_of_the_earlier_form_are_purged_when_they_expire() -> Result<(), Unreachable> {
    let db = TestDatabase::create_database().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let pool = pool(&db).await;
    // Before migration 0103 values were bare SHA-256 hashes, in no order; one expires at 10, one at 100.
    for (key, expires_at) in [([0xff_u8; 32], 10_i64), ([0x01; 32], 100)] {
        pool.execute("INSERT INTO replay (key_hash, expires_at) VALUES ($1, $2)", &[&&key[..], &expires_at])
            .await
            .expect("row");
    }
    let value = single_use_value(UnixTime(10));
    assert_eq!(store.record_once(&[(value, UnixTime(10))], UnixTime(0)).await.expect("record"), None);
    assert_eq!(store.purge_expired(UnixTime(50)).await.expect("purge"), 2, "one value of each form");
    assert_eq!(store.purge_expired(UnixTime(100)).await.expect("purge"), 1);
    let left: i64 = pool.query_one("SELECT count(*) FROM replay", &[]).await.expect("count").get(0);
    assert_eq!(left, 0);
    Ok(())
}

async fn a_revocation_and_its_audit_record_commit_together_or_not_at_all() -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let own = pool(&db).await;
    let break_audit = async move {
        own.batch_execute(
            "CREATE FUNCTION audit_fails() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
             RAISE EXCEPTION 'injected failure'; END $$; \
             CREATE TRIGGER audit_fails BEFORE INSERT ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_fails();",
        )
        .await
        .expect("trigger");
    };
    latchkey_store::conformance::a_revocation_and_its_audit_record_commit_together(&store, break_audit).await;
    Ok(())
}

/// PostgreSQL announces each new delivery (the trigger's `NOTIFY`) to every store that listens, the one that made
/// it and another instance's alike.
async fn new_deliveries_are_announced_to_every_listener() -> Result<(), Unreachable> {
    let db = TestDatabase::create().await?;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open");
    let other = PgStore::open(&db.url, PoolSettings::default()).await.expect("open another");
    let mut here = store.delivery_notices().await.expect("listen").expect("PostgreSQL has notices");
    let mut there = other.delivery_notices().await.expect("listen").expect("PostgreSQL has notices");
    let (client_id, _) = fixture(&store).await;
    let stream = latchkey_store::StreamRecord {
        method: latchkey_core::events::stream::POLL.into(),
        ..latchkey_store::StreamRecord::new("notified".into(), client_id, UnixTime(1_700_000_000))
    };
    assert!(store.create_stream(&stream).await.expect("stream"));
    store.request_verification("notified", None, UnixTime(1_700_000_000), 0).await.expect("verify").expect("queued");
    for notices in [&mut here, &mut there] {
        let notice = tokio::time::timeout(Duration::from_secs(10), notices.recv()).await.expect("announced");
        assert_eq!(notice, Some(latchkey_store::notices::Notice::Stream("notified".into())));
    }
    Ok(())
}

/// The client sessions open to the test's database, but `own`.
async fn connections(own: &Client) -> i64 {
    let sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
               AND backend_type = 'client backend' AND pid <> pg_backend_pid()";
    own.query_one(sql, &[]).await.expect("count").get(0)
}

/// Many one-row reads at once go over the shared connection, not one pooled connection each; when the server
/// ends that connection, the next reads make it again (a read caught by the loss is an outage, never another
/// error).
async fn one_row_reads_share_a_connection_and_a_lost_one_is_made_again() -> Result<(), Unreachable> {
    // A database of its own: the test counts and ends every other session on it.
    let db = TestDatabase::create_database().await?;
    let settings = PoolSettings { shared_connections: 1, ..PoolSettings::default() };
    let store = std::sync::Arc::new(PgStore::open(&db.url, settings).await.expect("open"));
    let (client_id, user_id) = fixture(&*store).await;
    // A grant: its reads go to the database each time (a client's are cached for a moment).
    let id = issue(&*store, &client_id, &user_id, GrantLimits::default()).await.id;
    let own = pool(&db).await;
    let reads = |n| {
        (0..n)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.grant(&id).await })
            })
            .collect::<Vec<_>>()
    };
    let before = connections(&own).await;
    for read in reads(64) {
        assert!(read.await.expect("join").expect("read").is_some());
    }
    assert!(connections(&own).await <= before + 1, "64 reads at once opened no connection but the shared one");
    // Every other session ended, each waited for (up to 5 s).
    let ended = "SELECT bool_and(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity \
                 WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()";
    assert_eq!(own.query_one(ended, &[]).await.expect("terminate").get::<_, Option<bool>>(0), Some(true));
    for read in reads(8) {
        if let Err(e) = read.await.expect("join") {
            assert!(matches!(e, StoreError::Unavailable(_)), "{e:?}");
        }
    }
    for read in reads(8) {
        assert!(read.await.expect("join").expect("the shared connection was made again").is_some());
    }
    Ok(())
}
