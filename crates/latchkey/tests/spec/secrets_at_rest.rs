//! Secrets safe at rest (`docs/security.md`, "What is stored, and how"): the data directory is the server's alone
//! (0700), the database files and the system secret file 0600; the signing and MAC keys are stored encrypted under the
//! system secret, keys an earlier version stored in the clear are encrypted at the next start, and the system secret
//! rotates with one command while the server keeps working. On PostgreSQL the raw check reads the `keys` table (the
//! database files are the database server's).

use crate::support::{backend, channels, TestServer, READONLY};
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_admin::secrets::{sealed_by, SecretsError, SystemSecrets};
use latchkey_core::access_token::{self, MacKey};
use latchkey_core::jws::SigningKey;
use latchkey_core::time::Clock;
use latchkey_store::test_database::TestDatabase;
use latchkey_store::KeyKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

const BIN: &str = env!("CARGO_BIN_EXE_latchkey");
const ALICE: &str = "alice@example.com";
const FIRST: &str = "the first system secret of this test and long enough";
const SECOND: &str = "the second system secret of this test and long enough";

/// A data directory the server has not seen, and on PostgreSQL a database of its own.
struct Place {
    _root: tempfile::TempDir,
    data: PathBuf,
    db: Option<TestDatabase>,
}

impl Place {
    async fn new() -> Self {
        let root = tempfile::tempdir().expect("tempdir");
        let data = root.path().join("data");
        let db = match backend() {
            "postgres" => Some(TestDatabase::create().await.expect("LATCHKEY_TEST_BACKEND=postgres needs PostgreSQL")),
            _ => None,
        };
        Self { _root: root, data, db }
    }

    fn database_url(&self) -> Option<String> {
        self.db.as_ref().map(|d| d.url.clone())
    }

    /// A server on this place, with `secrets` as `secrets_system` when given.
    async fn serve(&self, secrets: Option<&[&str]>) -> TestServer {
        let secrets = secrets.map(|s| latchkey_config::SecretList::new(s.iter().map(|s| s.to_string()).collect()));
        TestServer::start_with(|c| {
            c.data_dir = self.data.clone();
            c.database_url = self.database_url();
            c.secrets_system = secrets;
        })
        .await
    }

    /// `latchkey admin` on this place with `env`; returns (exit code, stdout, stderr).
    fn admin(&self, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
        let mut command = Command::new(BIN);
        command.arg("admin").arg("--data-dir").arg(&self.data);
        if let Some(url) = self.database_url() {
            command.args(["--database-url", &url]);
        }
        let out = command.args(args).envs(env.iter().copied()).output().expect("run latchkey admin");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }

    fn admin_ok(&self, args: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
        let (code, out, err) = self.admin(args, env);
        assert_eq!(code, 0, "latchkey admin {args:?}: {err}");
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display())).permissions().mode() & 0o777
}

/// The SQLite database files of a data directory.
fn database_files(data: &Path) -> Vec<PathBuf> {
    ["latchkey.db", "latchkey.db-wal", "latchkey.db-shm"].iter().map(|f| data.join(f)).collect()
}

/// Every stored key with its material, opened with the server's system secrets.
async fn materials(server: &TestServer) -> Vec<(KeyKind, u32, Vec<u8>)> {
    let secrets = server.running.state.keys.secrets().expect("system secrets");
    let mut out = Vec::new();
    for kind in KeyKind::STORED {
        for k in server.store().keys(kind).await.expect("keys") {
            let opened = secrets.open(kind, &k.secret).expect("the system secret opens every stored key");
            out.push((kind, k.id, opened.material.expose().to_vec()));
        }
    }
    out
}

/// The 32 secret bytes of a key: a MAC key itself, or the private scalar of an ES256 PKCS#8 key (after
/// `INTEGER 1, OCTET STRING (32)` in its ECPrivateKey).
fn secret_bytes(kind: KeyKind, material: &[u8]) -> Vec<u8> {
    match kind {
        KeyKind::Mac => material.to_vec(),
        KeyKind::IdToken => {
            let at = material.windows(5).position(|w| w == [0x02, 0x01, 0x01, 0x04, 0x20]).expect("ECPrivateKey") + 5;
            material[at..at + 32].to_vec()
        }
        // An RSA PKCS#8 key ends with its private parts (the CRT values).
        KeyKind::Event | KeyKind::PushAuthorization | KeyKind::TotpSecret => {
            material[material.len().saturating_sub(128)..].to_vec()
        }
    }
}

/// Whether any 16 consecutive bytes of `secret` occur in `haystack`.
fn leaks(haystack: &[u8], secret: &[u8]) -> bool {
    secret.windows(16).any(|w| haystack.windows(16).any(|h| h == w))
}

/// Every file under `dir`, with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((path.clone(), std::fs::read(&path).expect("read")));
        }
    }
    out
}

#[tokio::test]
async fn a_fresh_data_directory_is_0700_and_its_database_files_and_system_secret_0600() {
    let place = Place::new().await;
    let server = place.serve(None).await;
    assert_eq!(mode(&place.data), 0o700, "the data directory");
    assert_eq!(mode(&place.data.join("system-secret")), 0o600, "the system secret");
    if backend() == "sqlite" {
        for file in database_files(&place.data) {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }
    server.running.shutdown().await;
}

#[tokio::test]
async fn the_admin_cli_makes_a_fresh_data_directory_and_database_private_too() {
    let place = Place::new().await;
    place.admin_ok(&["migrate"], &[]);
    place.admin_ok(&["project", "create", "--name", "Private"], &[]);
    assert!(!place.data.join("system-secret").exists(), "commands that touch no key make no secret");
    if backend() == "sqlite" {
        assert_eq!(mode(&place.data), 0o700);
        let db = place.data.join("latchkey.db");
        assert_eq!(mode(&db), 0o600, "{}", db.display());
    }
    place.admin_ok(&["keys", "rotate", "--kind", "id-token"], &[]);
    assert_eq!((mode(&place.data), mode(&place.data.join("system-secret"))), (0o700, 0o600));
}

#[tokio::test]
async fn looser_permissions_found_at_start_are_tightened() {
    let place = Place::new().await;
    std::fs::create_dir(&place.data).expect("mkdir");
    let loose = |path: &Path, m| std::fs::set_permissions(path, std::fs::Permissions::from_mode(m)).expect("chmod");
    loose(&place.data, 0o755);
    let secret = place.data.join("system-secret");
    std::fs::write(&secret, format!("{FIRST}\n")).expect("write");
    loose(&secret, 0o644);
    let db = place.data.join("latchkey.db");
    if backend() == "sqlite" {
        std::fs::write(&db, b"").expect("an empty database");
        loose(&db, 0o644);
    }
    let server = place.serve(None).await;
    assert_eq!((mode(&place.data), mode(&secret)), (0o700, 0o600));
    if backend() == "sqlite" {
        for file in database_files(&place.data) {
            assert_eq!(mode(&file), 0o600, "{}", file.display());
        }
    }
    let first = SystemSecrets::parse([FIRST], "test").expect("secret").current();
    assert_eq!(server.running.state.keys.secrets().expect("secrets").current(), first, "the file's secret is used");
    server.running.shutdown().await;
}

#[tokio::test]
async fn no_key_material_is_in_the_clear_in_the_database_files_or_the_keys_table() {
    let place = Place::new().await;
    let server = place.serve(None).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let tokens = server.tokens(&app, ALICE, &["openid", READONLY]).await;
    let materials = materials(&server).await;
    assert_eq!(materials.len(), 2, "one key of each kind");
    // The opened material is the key the server uses: it verifies the access token, and its kid signs id_tokens.
    let (_, mac_id, mac) = materials.iter().find(|(k, ..)| *k == KeyKind::Mac).expect("MAC key");
    access_token::verify(&[MacKey::new(*mac_id, mac)], &tokens.access_token, SystemClock.now()).expect("verifies");
    let (_, _, pkcs8) = materials.iter().find(|(k, ..)| *k == KeyKind::IdToken).expect("id_token key");
    let kid = SigningKey::from_pkcs8(pkcs8, &OsRandom).expect("key").kid().to_owned();
    assert_eq!(kid, server.running.state.keys.get().id_token_signer().kid());

    let other = SystemSecrets::parse([SECOND], "another secret").expect("secret");
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        for k in server.store().keys(kind).await.expect("keys") {
            assert!(sealed_by(&k.secret).expect("format").is_some(), "key {} is stored encrypted", k.id);
            let (_, _, material) = materials.iter().find(|(_, id, _)| *id == k.id).expect("material");
            assert!(!leaks(&k.secret, &secret_bytes(kind, material)), "the keys table holds key {} in the clear", k.id);
            assert!(matches!(other.open(kind, &k.secret), Err(SecretsError::UnknownSecret(_))), "another secret");
        }
    }
    if backend() == "sqlite" {
        let files = files_under(&place.data);
        assert!(files.iter().any(|(p, b)| p.ends_with("latchkey.db-wal") && !b.is_empty()), "the WAL is read too");
        for (path, bytes) in &files {
            for (kind, id, material) in &materials {
                assert!(!leaks(bytes, &secret_bytes(*kind, material)), "key {id} in the clear in {}", path.display());
            }
        }
    }
    server.running.shutdown().await;
}

#[tokio::test]
async fn keys_an_earlier_version_stored_in_the_clear_are_encrypted_at_the_next_start_and_their_tokens_verify() {
    let place = Place::new().await;
    let server = place.serve(None).await;
    let app = server.app().await;
    server.user(ALICE).await;
    // What an earlier version did: keys stored as they are. This instance signs with them after a reload.
    let now = SystemClock.now();
    let mac = latchkey_core::secret::random_bytes(32, &OsRandom);
    let pkcs8 = SigningKey::generate_pkcs8(&OsRandom).expect("key");
    let mac_id = server.store().add_key(KeyKind::Mac, &mac, now).await.expect("add");
    let id_token_id = server.store().add_key(KeyKind::IdToken, &pkcs8, now).await.expect("add");
    server.running.state.keys.reload(server.store(), now).await.expect("reload");
    let before = server.tokens(&app, ALICE, &["openid", READONLY]).await;
    let kid = SigningKey::from_pkcs8(&pkcs8, &OsRandom).expect("key").kid().to_owned();
    access_token::verify(&[MacKey::new(mac_id, &mac)], &before.access_token, now).expect("signed by the old key");
    let stored = server.store().keys(KeyKind::Mac).await.expect("keys");
    assert!(stored.iter().any(|k| k.id == mac_id && k.secret == mac), "in the clear before the restart");
    server.running.shutdown().await;

    let server = place.serve(None).await;
    let secrets = server.running.state.keys.secrets().expect("secrets");
    for (kind, id, material) in [(KeyKind::Mac, mac_id, &mac), (KeyKind::IdToken, id_token_id, &pkcs8)] {
        let row = server.store().keys(kind).await.expect("keys").into_iter().find(|k| k.id == id).expect("kept");
        assert_eq!(sealed_by(&row.secret).expect("format"), Some(secrets.current()), "key {id} is encrypted now");
        assert!(!leaks(&row.secret, &secret_bytes(kind, material)));
        assert_eq!(secrets.open(kind, &row.secret).expect("open").material.expose(), &material[..]);
    }
    assert_eq!(channels(&server, &before.access_token).await.status(), 200, "the access token still verifies");
    let jwks: serde_json::Value =
        server.http().get(server.url("/oauth2/v3/certs")).send().await.expect("jwks").json().await.expect("json");
    assert!(jwks["keys"].as_array().expect("keys").iter().any(|k| k["kid"] == kid.as_str()), "the kid is published");
    let refresh = before.refresh_token.expect("refresh token");
    let r = server
        .token(&[("grant_type", "refresh_token"), ("client_id", &app.client_id), ("refresh_token", &refresh)])
        .await;
    assert_eq!(r.status(), 200, "refresh after the upgrade");
    server.running.shutdown().await;
}

#[tokio::test]
async fn rotating_the_system_secret_with_one_command_keeps_the_running_server_working() {
    let place = Place::new().await;
    let server = place.serve(None).await;
    let app = server.app().await;
    server.user(ALICE).await;
    let before = server.tokens(&app, ALICE, &[READONLY]).await;
    let file = place.data.join("system-secret");
    let old_text = std::fs::read_to_string(&file).expect("secret file");
    let old = SystemSecrets::parse([old_text.trim()], "old").expect("old secret");

    let rotated = place.admin_ok(&["secrets", "rotate"], &[]);
    let new_fingerprint = rotated["fingerprint"].as_str().expect("fingerprint").to_owned();
    assert_ne!(new_fingerprint, old.current().to_string());
    assert_eq!(rotated["dropped"], serde_json::json!([old.current().to_string()]));
    assert_eq!((rotated["keys"].as_u64(), rotated["reencrypted"].as_u64()), (Some(2), Some(2)));
    assert!(!rotated.to_string().contains(old_text.trim()), "no secret is printed");
    let new_text = std::fs::read_to_string(&file).expect("secret file");
    assert_eq!((new_text.lines().count(), mode(&file)), (1, 0o600), "the old secret is dropped");
    for kind in [KeyKind::Mac, KeyKind::IdToken] {
        for k in server.store().keys(kind).await.expect("keys") {
            let under = sealed_by(&k.secret).expect("format").expect("encrypted").to_string();
            assert_eq!(under, new_fingerprint, "key {} is under the new secret", k.id);
            assert!(matches!(old.open(kind, &k.secret), Err(SecretsError::UnknownSecret(_))), "the old one is useless");
        }
    }
    // The running server reads the new secret at its next reload, and goes on signing with the same keys.
    server.running.state.keys.reload(server.store(), SystemClock.now()).await.expect("reload");
    assert_eq!(channels(&server, &before.access_token).await.status(), 200);
    let after = server.tokens(&app, ALICE, &[READONLY]).await;
    assert_eq!(channels(&server, &after.access_token).await.status(), 200);
    server.running.shutdown().await;
    let server = place.serve(None).await;
    assert_eq!(channels(&server, &before.access_token).await.status(), 200, "and after a restart");
    server.running.shutdown().await;
}

#[tokio::test]
async fn secrets_set_in_the_configuration_rotate_by_putting_a_new_one_first_reencrypting_and_removing_the_old() {
    let place = Place::new().await;
    let server = place.serve(Some(&[FIRST])).await;
    let app = server.app().await;
    let alice = server.user(ALICE).await;
    let before = server.tokens(&app, ALICE, &[READONLY]).await;
    // An authenticator-app secret is sealed under the system secrets too.
    let browser = server.browser();
    crate::two_step::password_step(&server, &browser, ALICE).await;
    let (totp, _) = crate::two_step::turn_on(&server, &browser, &alice, SystemClock.now().0).await;
    server.running.shutdown().await;
    let (code, _, err) = place.admin(&["secrets", "rotate"], &[("LATCHKEY_SECRETS_SYSTEM", FIRST)]);
    assert_eq!(code, 5, "the command cannot rewrite the configuration");
    assert!(err.contains("cannot rewrite") && !err.contains(FIRST), "{err}");

    // 1. Every instance restarts with the new secret first; the old one still decrypts.
    let server = place.serve(Some(&[SECOND, FIRST])).await;
    assert_eq!(channels(&server, &before.access_token).await.status(), 200);
    // 2. One command encrypts every key under the new secret.
    let both = format!("{SECOND},{FIRST}");
    let done = place.admin_ok(&["secrets", "reencrypt"], &[("LATCHKEY_SECRETS_SYSTEM", &both)]);
    assert_eq!((done["keys"].as_u64(), done["reencrypted"].as_u64()), (Some(2), Some(3)), "two keys, one TOTP secret");
    server.running.state.keys.reload(server.store(), SystemClock.now()).await.expect("reload");
    server.running.shutdown().await;
    // 3. The old secret is removed.
    let server = place.serve(Some(&[SECOND])).await;
    assert_eq!(channels(&server, &before.access_token).await.status(), 200, "tokens outlive the rotation");
    let phone = server.browser();
    assert_eq!(crate::two_step::password_step(&server, &phone, ALICE).await.status, 303);
    let page = phone.get(&server.url("/signin/second-step?continue=/account")).await;
    let csrf = page.input("csrf").expect("csrf");
    let code = crate::two_step::code_at(&totp, SystemClock.now().0 + 30);
    let form = [("csrf", csrf.as_str()), ("continue", "/account"), ("code", &code)];
    assert_eq!(phone.post("/signin/second-step", &form).await.status, 303, "the app's codes outlive the rotation");
    server.running.shutdown().await;
    assert!(!place.data.join("system-secret").exists(), "no secret file when secrets_system is set");

    // The old secret alone reads nothing now, and says why.
    let config = latchkey_config::Config {
        data_dir: place.data.clone(),
        listen: "127.0.0.1:0".parse().expect("addr"),
        database_url: place.database_url(),
        secrets_system: Some(latchkey_config::SecretList::new(vec![FIRST.into()])),
        ..Default::default()
    };
    let refused = latchkey_server::start(config, Arc::new(SystemClock)).await.err().expect("refused");
    assert!(format!("{refused:#}").contains("not configured here"), "{refused:#}");
}

#[tokio::test]
async fn a_key_rotated_in_by_the_admin_cli_is_encrypted_under_the_servers_secret() {
    let place = Place::new().await;
    let server = place.serve(None).await;
    let added = place.admin_ok(&["keys", "rotate", "--kind", "access-token"], &[]);
    let id = added["key_id"].as_u64().expect("id");
    let listed = place.admin_ok(&["keys", "list"], &[]);
    let current = server.running.state.keys.secrets().expect("secrets").current().to_string();
    let keys = listed["keys"].as_array().expect("keys");
    assert!(keys.iter().all(|k| k["encrypted_under"] == current.as_str()), "{listed}");
    server.running.state.keys.reload(server.store(), SystemClock.now()).await.expect("reload");
    assert_eq!(u64::from(server.running.state.keys.get().mac_signer().id), id, "the new key signs");
    // An admin CLI with another secret is refused: the servers could not read what it would add.
    let (code, _, err) = place.admin(&["keys", "rotate", "--kind", "id-token"], &[("LATCHKEY_SECRETS_SYSTEM", SECOND)]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not configured here"), "{err}");
    server.running.shutdown().await;
}
