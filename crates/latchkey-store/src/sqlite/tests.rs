use super::SqliteStore;
use std::sync::Arc;
use tempfile::TempDir;

/// A store on a new file; the file lives as long as the directory returned with it.
async fn fresh() -> (TempDir, SqliteStore) {
    after_version(i64::MAX, "").await
}

/// A store on a file that the migrations up to `version` made and `rows` (SQL) filled, then opened, which
/// applies the migrations after `version`.
async fn after_version(version: i64, rows: &str) -> (TempDir, SqliteStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    if version < i64::MAX {
        let c = rusqlite::Connection::open(&path).expect("open");
        super::engine::migrate_up_to(&c, version).expect("migrate");
        c.execute_batch(rows).expect("rows");
    }
    let store = SqliteStore::open(&format!("sqlite://{}", path.display())).await.expect("open migrates");
    (dir, store)
}

#[tokio::test]
async fn reopening_a_database_keeps_its_data() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let (client_id, _) = crate::conformance::fixture(&SqliteStore::open(&url).await.expect("open")).await;
    let again = SqliteStore::open(&url).await.expect("reopen");
    assert!(crate::Clients::client(&again, &client_id).await.expect("get").is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_commits_and_a_failing_one_leaves_the_others_intact() {
    use crate::prelude::*;
    use crate::{NewUser, StoreError};
    use latchkey_core::time::UnixTime;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("t.db").display());
    let store = Arc::new(SqliteStore::open(&url).await.expect("open"));
    let user = |i: usize, channel: &str| {
        let u = NewUser {
            id: format!("u{i}"),
            email: format!("u{i}@example.com"),
            name: None,
            password_hash: "x".into(),
            created_at: UnixTime(0),
        };
        let ch = crate::Channel {
            id: channel.to_owned(),
            user_id: u.id.clone(),
            title: "t".into(),
            description: String::new(),
            created_at: UnixTime(0),
        };
        (u, ch)
    };
    // 64 users at once, every fourth with a channel id already taken: their second statement fails, and the
    // user row their first statement wrote must go too, while the other jobs of the batch commit.
    let (first, ch) = user(1000, "UCtaken");
    store.create_user(&first, &ch).await.expect("first");
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let store = store.clone();
            let channel = if i % 4 == 0 { "UCtaken".to_owned() } else { format!("UC{i}") };
            let (u, ch) = user(i, &channel);
            tokio::spawn(async move { store.create_user(&u, &ch).await })
        })
        .collect();
    for (i, t) in tasks.into_iter().enumerate() {
        let result = t.await.expect("join");
        if i % 4 == 0 {
            assert!(matches!(result, Err(StoreError::Conflict(_))), "user {i}: {result:?}");
        } else {
            result.unwrap_or_else(|e| panic!("user {i}: {e}"));
        }
    }
    assert_eq!(store.engine.inner.inner.queued(), 0, "the writer counts every job it takes");
    drop(store);
    let again = SqliteStore::open(&url).await.expect("reopen");
    let users = again.users().await.expect("users");
    assert_eq!(users.len(), 1 + 48, "every acknowledged user is there after reopening, and no failed one");
    assert!(again.channel_of("u1").await.expect("channel").is_some());
    assert!(again.user("u4").await.expect("user").is_none(), "a failed job's first statement is rolled back");
}

#[tokio::test]
async fn a_memory_url_is_refused_with_a_clear_message() {
    let err = SqliteStore::open("sqlite::memory:").await.expect_err("refused");
    assert!(err.to_string().contains("sqlite://PATH"), "{err}");
}

#[tokio::test]
async fn the_unrevoked_grant_counts_bound_the_live_grants_and_are_exact_after_a_limit_is_enforced() {
    let (_dir, store) = fresh().await;
    let counted = || async {
        store
            .engine
            .inner
            .inner
            .read(|c| {
                c.query_row(
                    "SELECT (SELECT COALESCE(SUM(unrevoked), 0) FROM grant_counts), \
                     (SELECT count(*) FROM grants WHERE revoked_at IS NULL)",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
            })
            .expect("count")
    };
    crate::conformance::grant_counts_bound_the_live_grants(&store, counted).await;
}

#[tokio::test]
async fn grants_issued_before_refresh_tokens_named_their_grant_stay_findable_by_hash() {
    use crate::prelude::*;
    // A database as the version before migration 0102 left it, holding one grant.
    let (_dir, store) = after_version(
        101,
        "INSERT INTO projects (id, name, api_enabled, created_at) VALUES ('p', 'P', 1, 0);
         INSERT INTO clients (client_id, project_id, name, client_type, redirect_uris, secret_hash, created_at)
             VALUES ('c', 'p', 'C', 'desktop', '[]', x'00', 0);
         INSERT INTO users (id, email, password_hash, created_at) VALUES ('u', 'u@example.com', 'x', 0);
         INSERT INTO grants (rowid, id, client_id, user_id, scopes, refresh_hash, created_at, code_hash)
             VALUES (7, 'AAAAAAAAAAAAAAAAAAAAAA', 'c', 'u', 1, x'01', 0, x'02');",
    )
    .await;
    let (rowid, counted, triggers) = store
        .engine
        .inner
        .inner
        .read(|c| {
            c.query_row(
                "SELECT rowid, (SELECT unrevoked FROM grant_counts WHERE user_id = 'u'), \
                 (SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'grants') FROM grants",
                [],
                |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)),
            )
        })
        .expect("read");
    assert_eq!(rowid, 7, "the rowid (issue order) is kept");
    assert_eq!((counted, triggers), (1, 2), "the grant counts and their triggers survive the table's rebuild");
    let old = store.legacy_grant_by_refresh(&[1]).await.expect("get").expect("the old grant is found by hash");
    assert_eq!(old.grant.user_id, "u");
    // A grant issued since is found by id, never by hash.
    let new = crate::conformance::issue(&store, "c", "u", crate::GrantLimits::default()).await;
    assert!(store.legacy_grant_by_refresh(&new.refresh_hash).await.expect("get").is_none());
    assert!(store.grant(&new.id).await.expect("get").is_some());
    store.revoke_grant(&old.grant.id, latchkey_core::time::UnixTime(1)).await.expect("revoke");
    let left: i64 = store
        .engine
        .inner
        .inner
        .read(|c| c.query_row("SELECT unrevoked FROM grant_counts WHERE user_id = 'u'", [], |r| r.get(0)))
        .expect("count");
    assert_eq!(left, 2, "the counts follow issuance, and bound the live grants after a revocation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_steady_concurrent_writes_the_wal_starts_again_instead_of_growing() {
    use crate::prelude::*;
    use latchkey_core::time::UnixTime;
    let (dir, store) = fresh().await;
    let (path, store) = (dir.path().join("t.db"), Arc::new(store));
    // 16 writers at once, never pausing: the checkpointer's passes alone never catch up with the WAL's end.
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..300 {
                    let id = format!("u{t}-{i}");
                    let user = crate::NewUser {
                        id: id.clone(),
                        email: format!("{id}@example.com"),
                        name: Some("x".repeat(200)),
                        password_hash: "x".repeat(100),
                        created_at: UnixTime(0),
                    };
                    let channel = crate::Channel {
                        id: format!("UC{id}"),
                        user_id: id,
                        title: "t".into(),
                        description: "d".repeat(3000),
                        created_at: UnixTime(0),
                    };
                    store.create_user(&user, &channel).await.expect("write");
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("join");
    }
    let mut wal = path.into_os_string();
    wal.push("-wal");
    let size = std::fs::metadata(&wal).expect("wal").len();
    let db = std::fs::metadata(dir.path().join("t.db")).expect("db").len();
    assert!(db > 4 * super::engine::WAL_SIZE_LIMIT as u64, "enough was written to matter: {db} bytes");
    // Without the writer's checkpoints the WAL ends up several times the database's size (95 MB for 20 MB here);
    // with them it stays near its limit, give or take what arrives between two of the checkpointer's reports.
    assert!(size < db / 2, "the WAL is {size} bytes after writing a database of {db}");
    assert_eq!(store.users().await.expect("users").len(), 16 * 300);
}

#[test]
fn a_row_reads_each_column_by_name_in_any_order() {
    use crate::rows::{SqliteRow, StoreRow};
    let conn = rusqlite::Connection::open_in_memory().expect("open");
    let read = |names: &[&str]| -> Vec<String> {
        conn.query_row("SELECT 'a' AS first, 'b' AS second, 'c' AS third", [], |r| {
            let row = SqliteRow::new(r);
            Ok(names.iter().map(|n| row.text(n).expect("column")).collect())
        })
        .expect("row")
    };
    assert_eq!(read(&["first", "second", "third"]), ["a", "b", "c"], "in order");
    assert_eq!(read(&["third", "first", "second", "first"]), ["c", "a", "b", "a"], "out of order, and again");
    assert_eq!(read(&["SECOND", "Third"]), ["b", "c"], "names match without regard to case, as in rusqlite");
    conn.query_row("SELECT 1 AS only", [], |r| {
        assert!(SqliteRow::new(r).int("missing").is_err(), "an unknown column is an error");
        Ok(())
    })
    .expect("row");
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn the_writer_syncer_and_checkpointer_run_under_sched_batch() {
    const SCHED_BATCH: &str = "3";
    // The SQLite threads by role: their names after `sqlite-`, as /proc shows them (15 characters at most).
    const ROLES: [&str; 3] = ["checkpoi", "syncer", "writer"];
    let (_dir, _store) = fresh().await;
    // Every SQLite thread of this process (other tests may have stores open too), with its scheduling policy: the
    // 41st field of /proc/self/task/TID/stat, the 39th after the parenthesised thread name. A thread sets its
    // policy as it starts, so one another test has just spawned may not have yet: look again a little later. A
    // thread also takes its name as it starts, so this store's own threads may not carry theirs yet either.
    let mut seen = std::collections::BTreeSet::new();
    for attempt in 0.. {
        seen.clear();
        let mut other = Vec::new();
        for task in std::fs::read_dir("/proc/self/task").expect("tasks") {
            let stat = std::fs::read_to_string(task.expect("task").path().join("stat")).unwrap_or_default();
            let Some((head, fields)) = stat.rsplit_once(')') else { continue };
            let Some((_, name)) = head.split_once('(') else { continue };
            if let Some(role) = name.strip_prefix("sqlite-") {
                let policy = fields.split_whitespace().nth(38).expect("policy field");
                if policy != SCHED_BATCH {
                    other.push(format!("sqlite-{role}: policy {policy}"));
                }
                seen.insert(role.to_owned());
            }
        }
        if other.is_empty() && seen.len() == ROLES.len() {
            break;
        }
        assert!(attempt < 100, "not under SCHED_BATCH: {other:?}; SQLite threads seen: {seen:?}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ROLES);
}

#[tokio::test]
async fn single_use_values_of_the_earlier_form_are_purged_when_they_expire() {
    use crate::prelude::*;
    use latchkey_core::time::UnixTime;
    // Before migration 0103 values were bare SHA-256 hashes, in no order; one expires at 10, one at 100.
    let (a, b) = ("ff".repeat(32), format!("01{}", "ab".repeat(31)));
    let rows = format!("INSERT INTO replay (key_hash, expires_at) VALUES (x'{a}', 10), (x'{b}', 100);");
    let (_dir, store) = after_version(102, &rows).await;
    let value = crate::conformance::single_use_value(UnixTime(10));
    assert_eq!(store.record_once(&[(value, UnixTime(10))], UnixTime(0)).await.expect("record"), None);
    let count = |sql: &'static str| {
        store.engine.inner.inner.read(|c| c.query_row(sql, [], |r| r.get::<_, i64>(0))).expect("count")
    };
    assert_eq!(count("SELECT count(*) FROM sqlite_master WHERE name = 'replay_expiry'"), 0, "the index is gone");
    assert_eq!(store.purge_expired(UnixTime(50)).await.expect("purge"), 2, "one value of each form");
    assert_eq!(count("SELECT count(*) FROM replay WHERE expires_at = 100"), 1);
    assert_eq!(store.purge_expired(UnixTime(100)).await.expect("purge"), 1);
    assert_eq!(count("SELECT count(*) FROM replay"), 0);
}

#[tokio::test]
async fn every_purge_reads_a_range_of_an_index_not_a_whole_table() {
    let (_dir, store) = fresh().await;
    for sql in crate::maintenance::PURGE_BY_TIME.iter().chain(&crate::maintenance::PURGE_SINGLE_USE) {
        let plan = store
            .engine
            .inner
            .inner
            .read(|c| {
                let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {}", sql.sqlite()))?;
                let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
                let steps = stmt
                    .query_map(rusqlite::params_from_iter(nulls), |r| r.get::<_, String>(3))?
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(steps.join("; "))
            })
            .expect("plan");
        assert!(plan.starts_with("SEARCH") && !plan.contains("SCAN"), "{}: {plan}", sql.sqlite());
    }
}

#[tokio::test]
async fn a_revocation_and_its_audit_record_commit_together_or_not_at_all() {
    let (dir, store) = fresh().await;
    let path = dir.path().join("t.db");
    let break_audit = async move {
        let c = rusqlite::Connection::open(&path).expect("open");
        c.execute_batch(
            "CREATE TRIGGER audit_fails BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'injected failure'); END;",
        )
        .expect("trigger");
    };
    crate::conformance::a_revocation_and_its_audit_record_commit_together(&store, break_audit).await;
}
