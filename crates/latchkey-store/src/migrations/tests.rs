use super::{plan, Applied, Change, Renumbering, Step, POSTGRES, POSTGRES_STEPS, SQLITE, SQLITE_STEPS};
use crate::postgres::PgStore;
use crate::sqlite::SqliteStore;
use crate::test_database::TestDatabase;
use crate::{KeyKind, PoolSettings, ProjectRole, Store};
use latchkey_core::access_token::GrantId;
use latchkey_core::time::UnixTime;
use std::path::Path;

static SQLITE_FOLDER: &[Step] = SQLITE_STEPS;
static POSTGRES_FOLDER: &[Step] = POSTGRES_STEPS;

/// The file names of a migration folder, in order.
fn folder(engine: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations").join(engine);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_two_migration_folders_list_the_same_steps_under_the_same_numbers_and_names() {
    let (sqlite, postgres) = (folder("sqlite"), folder("postgres"));
    let only = |a: &[String], b: &[String]| a.iter().filter(|n| !b.contains(n)).cloned().collect::<Vec<_>>();
    assert!(
        sqlite == postgres,
        "the migration folders differ: only in sqlite/ {:?}, only in postgres/ {:?}. Each step has the same number and \
         name in both; where one engine needs nothing, its file is a comment saying why",
        only(&sqlite, &postgres),
        only(&postgres, &sqlite)
    );
    let mut numbers = Vec::new();
    for name in &sqlite {
        let (number, rest) = name.split_once('_').unwrap_or_else(|| panic!("{name}: not NNNN_name.sql"));
        assert!(number.len() == 4 && number.bytes().all(|b| b.is_ascii_digit()), "{name}: a four-digit number first");
        assert!(
            rest.strip_suffix(".sql").is_some_and(|r| r.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')),
            "{name}: a lower-case name with underscores, then .sql"
        );
        assert!(!numbers.contains(&number), "{name}: number {number} is used twice");
        numbers.push(number);
    }
}

#[test]
fn the_steps_an_engine_does_not_need_are_only_a_comment_there() {
    for (engine, renumbering, migrator) in
        [("sqlite", &SQLITE, SQLITE_FOLDER), ("postgres", &POSTGRES, POSTGRES_FOLDER)]
    {
        for &version in renumbering.no_ops {
            let m = migrator.iter().find(|m| m.version == version).expect("the no-op step is in the folder");
            let code = m.sql.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("--")).count();
            assert_eq!(code, 0, "{engine}/{version:04}: only a comment, or a database carried over misses it");
        }
        for moved in renumbering.moved {
            assert!(migrator.iter().any(|m| m.version == moved.to), "{engine}: {} is in the folder", moved.to);
        }
    }
}

/// The ledger a migrator writes on a new database.
fn ledger_of(migrator: &[Step]) -> Vec<Applied> {
    migrator.iter().map(Applied::of).collect()
}

/// `ledger` with `changes` made, as the engines make them: every moved row leaves its version before any takes
/// its new one.
fn carried(mut ledger: Vec<Applied>, changes: &[Change]) -> Vec<Applied> {
    ledger.retain(|a| !changes.iter().any(|c| matches!(c, Change::Move { from, .. } if *from == a.version)));
    ledger.extend(changes.iter().map(|c| match c {
        Change::Move { to, .. } | Change::Record(to) => to.clone(),
    }));
    ledger.sort_by_key(|a| a.version);
    ledger
}

/// PostgreSQL's ledger as `53f1487` left it, up to `last` (its own numbering).
fn earlier_postgres_ledger(last: i64) -> Vec<Applied> {
    let now = ledger_of(POSTGRES_FOLDER);
    let step = |version| now.iter().find(|a| a.version == version).cloned().expect("step");
    let earlier =
        |from: i64, description: &str, to| Applied { version: from, description: description.into(), ..step(to) };
    [
        step(1),
        earlier(2, "client lifecycle", 3),
        earlier(3, "console", 4),
        step(100),
        earlier(101, "refresh by grant id", 102),
        earlier(102, "redeem function", 105),
        step(103),
        step(104),
    ]
    .into_iter()
    .filter(|a| a.version <= last)
    .collect()
}

#[test]
fn a_ledger_of_the_earlier_numbering_is_carried_over_once_and_a_new_one_never() {
    for (renumbering, migrator) in [(&SQLITE, SQLITE_FOLDER), (&POSTGRES, POSTGRES_FOLDER)] {
        assert_eq!(plan(renumbering, migrator, &ledger_of(migrator)).expect("plan"), [], "a new database");
        assert_eq!(plan(renumbering, migrator, &[]).expect("plan"), [], "an empty one");
    }
    let earlier = earlier_postgres_ledger(i64::MAX);
    let changes = plan(&POSTGRES, POSTGRES_FOLDER, &earlier).expect("plan");
    assert_eq!(changes.len(), 4 + 2, "four steps move, two no-op steps are recorded: {changes:?}");
    let after = carried(earlier, &changes);
    // Steps added since (numbered from 0106) are the migrations' to apply, not the carry-over's.
    let mut steps = ledger_of(POSTGRES_FOLDER);
    steps.retain(|a| a.version <= 105);
    assert_eq!(after, steps, "the ledger a new database got from the steps 53f1487 knew");
    assert_eq!(plan(&POSTGRES, POSTGRES_FOLDER, &after).expect("plan"), [], "carried over once");
}

#[test]
fn a_database_that_had_not_reached_the_last_earlier_step_is_carried_over_as_far_as_it_got() {
    let earlier = earlier_postgres_ledger(2);
    let after = carried(earlier.clone(), &plan(&POSTGRES, POSTGRES_FOLDER, &earlier).expect("plan"));
    let versions: Vec<i64> = after.iter().map(|a| a.version).collect();
    assert_eq!(versions, [1, 2, 3, 101], "init, the no-ops, and client_lifecycle at its new number; the rest runs");
}

#[test]
fn a_moved_step_whose_new_version_is_held_by_another_row_is_refused() {
    let mut ledger = earlier_postgres_ledger(2);
    ledger.push(Applied { version: 3, description: "something else".into(), checksum: vec![0] });
    let e = plan(&POSTGRES, POSTGRES_FOLDER, &ledger).expect_err("refused");
    assert!(e.to_string().contains("version 3 is `something else`"), "{e}");
}

/// What `make-fixtures.sh` made in a fixture (see `tests/fixtures/README.md`).
struct Made {
    project: &'static str,
    client: &'static str,
    alice: &'static str,
    revoked_grant: &'static str,
    live_grant: &'static str,
}

/// A little after the fixtures were made.
const THEN: UnixTime = UnixTime(1_795_603_100);

/// Checks, through the store, that everything `make-fixtures.sh` made is there and still works.
async fn check_made(store: &dyn Store, made: &Made) {
    let project = store.project(made.project).await.expect("read").expect("the project");
    assert_eq!((project.name.as_str(), project.api_enabled), ("Fixture project", true));
    let client = store.client(made.client).await.expect("read").expect("the client");
    assert_eq!((client.name.as_str(), client.project_id.as_str()), ("Fixture app", made.project));
    assert!(client.deleted_at.is_none());
    // Its secret became the first of its list (migration 0113), in the form the store compares before a change.
    assert_eq!(
        client.secrets.iter().map(|s| (s.id.as_str(), s.hash.len(), s.enabled())).collect::<Vec<_>>(),
        [("cs_initial", 32, true)]
    );
    let mut rotated = client.secrets.clone();
    rotated[0].hint = Some("test".into());
    assert!(
        store.set_client_secrets(made.client, &client.secrets, &rotated).await.expect("write"),
        "the list read is the list stored"
    );
    let alice = store.user_by_email("alice@example.com").await.expect("read").expect("alice");
    assert_eq!((alice.id.as_str(), alice.name.as_deref()), (made.alice, Some("Alice")));
    assert!(alice.password_hash.starts_with("$argon2id$"));
    assert!(store.channel_of(made.alice).await.expect("read").is_some(), "her channel");
    assert_eq!(store.project_role(made.project, made.alice).await.expect("read"), Some(ProjectRole::Owner));
    let keys = store.api_keys_of(made.alice).await.expect("read");
    assert_eq!(keys.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(), ["fixture"], "her console API key");
    assert_eq!(store.users().await.expect("read").len(), 2, "alice and the user of seed-grants");
    let grant = |id: &str| GrantId::decode(id).expect("a grant id");
    let revoked = store.grant(&grant(made.revoked_grant)).await.expect("read").expect("the revoked grant");
    let live = store.grant(&grant(made.live_grant)).await.expect("read").expect("the live grant");
    for g in [&revoked, &live] {
        assert_eq!((g.grant.client_id.as_str(), g.grant.user_id.as_str()), (made.client, made.alice));
        let code = store.code(&g.grant.code_hash).await.expect("read").expect("the code of the grant");
        assert!(code.used, "the code was exchanged");
    }
    assert!(revoked.grant.revoked_at.is_some() && !revoked.is_usable(THEN), "revoked stays revoked");
    assert!(live.is_usable(THEN), "the live grant works");
    for (kind, len) in [(KeyKind::Mac, 32), (KeyKind::IdToken, 138)] {
        let keys = store.keys(kind).await.expect("read");
        assert_eq!(keys.iter().map(|k| k.secret.len()).collect::<Vec<_>>(), [len], "{kind:?}: the key serve made");
    }
    // The migrated schema takes writes: a reused code revokes its grant, found through the code.
    assert_eq!(store.revoke_grants_of_code(&live.grant.code_hash, THEN).await.expect("revoke"), 1);
    assert!(store.grant(&live.grant.id).await.expect("read").expect("grant").grant.revoked_at.is_some());
}

/// A ledger row as the tests compare it: version, description, checksum, when it was applied (as text).
type Row = (i64, String, Vec<u8>, String);

/// Checks a ledger against the folder, and that the moved rows kept when they were applied.
fn check_ledger(before: &[Row], after: &[Row], renumbering: &Renumbering, migrator: &[Step]) {
    let steps: Vec<Applied> = after
        .iter()
        .map(|(version, description, checksum, _)| Applied {
            version: *version,
            description: description.clone(),
            checksum: checksum.clone(),
        })
        .collect();
    assert_eq!(steps, ledger_of(migrator), "the ledger a new database gets");
    for moved in renumbering.moved {
        let installed = |rows: &[Row], version| rows.iter().find(|r| r.0 == version).map(|r| r.3.clone());
        assert_eq!(installed(after, moved.to), installed(before, moved.from), "{} keeps its install time", moved.to);
    }
}

fn sqlite_ledger(path: &Path) -> Vec<Row> {
    let c = rusqlite::Connection::open(path).expect("open");
    let mut s = c
        .prepare("SELECT version, description, checksum, CAST(installed_on AS TEXT) FROM _sqlx_migrations ORDER BY 1")
        .expect("prepare");
    let rows = s.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))).expect("query");
    rows.collect::<Result<_, _>>().expect("rows")
}

#[tokio::test]
async fn a_sqlite_database_made_by_53f1487_opens_with_its_data_and_its_ledger_carried_over_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.db");
    std::fs::write(&path, include_bytes!("../../tests/fixtures/53f1487.sqlite")).expect("copy the fixture");
    let before = sqlite_ledger(&path);
    let url = format!("sqlite://{}", path.display());
    let store = SqliteStore::open(&url).await.expect("open migrates");
    let after = sqlite_ledger(&path);
    check_ledger(&before, &after, &SQLITE, SQLITE_FOLDER);
    check_made(
        &store,
        &Made {
            project: "project-kjfk0c6agd",
            client: "lkapp-jweuzidhjjwvvvgn41ndeuvc",
            alice: "671790990566348865362",
            revoked_grant: "awa6WAAAAACtJe7TXVEecA",
            live_grant: "awa6WQAAAAGM6iICndPmAg",
        },
    )
    .await;
    drop(store);
    SqliteStore::open(&url).await.expect("reopen");
    assert_eq!(sqlite_ledger(&path), after, "opening again changes nothing");
}

async fn postgres_ledger(url: &str) -> Vec<Row> {
    let c = crate::postgres::connect_one(url).await.expect("connect");
    let rows = c
        .query("SELECT version, description, checksum, installed_on::text FROM _sqlx_migrations ORDER BY version", &[])
        .await
        .expect("ledger");
    rows.iter().map(|r| (r.get(0), r.get(1), r.get(2), r.get(3))).collect()
}

#[tokio::test]
async fn a_postgres_database_made_by_53f1487_opens_with_its_data_and_its_ledger_carried_over_once() {
    // A lib test (it reads the crate's own tables of steps): with no server it returns early, as before; under
    // CI=true `create_database` fails it.
    let Ok(db) = TestDatabase::create_database().await else { return };
    // pg_dump's output, less its psql-only lines (`\restrict`, `\unrestrict`).
    let dump: String = include_str!("../../tests/fixtures/53f1487.postgres.sql")
        .lines()
        .filter(|l| !l.starts_with('\\'))
        .map(|l| format!("{l}\n"))
        .collect();
    let c = crate::postgres::connect_one(&db.url).await.expect("connect");
    c.batch_execute(&dump).await.expect("load the dump");
    drop(c);
    let before = postgres_ledger(&db.url).await;
    let store = PgStore::open(&db.url, PoolSettings::default()).await.expect("open migrates");
    let after = postgres_ledger(&db.url).await;
    check_ledger(&before, &after, &POSTGRES, POSTGRES_FOLDER);
    check_made(
        &store,
        &Made {
            project: "project-cxovmuswc1",
            client: "lkapp-lswl7gqmss5mw2znj7t0gtkk",
            alice: "579819681631625045131",
            revoked_grant: "awa6ZgAAAADkBbWMrZsa5A",
            live_grant: "awa6ZwAAAAGCUqIOcGlkzA",
        },
    )
    .await;
    PgStore::open(&db.url, PoolSettings::default()).await.expect("reopen");
    assert_eq!(postgres_ledger(&db.url).await, after, "opening again changes nothing");
}
