//! The `latchkey` binary as an operator runs it: `serve` with no setup, the admin CLI on the same store while
//! the server runs, plaintext refused, graceful shutdown, and logs that carry no secret.

use crate::support::{Browser, Pkce, PASSWORD, READONLY};
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_latchkey");

/// Runs `latchkey admin --data-dir DIR <args>`, feeding `stdin`; returns (exit code, stdout, stderr).
pub(crate) fn admin(dir: &Path, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(BIN)
        .arg("admin")
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn admin");
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write stdin");
    let out = child.wait_with_output().expect("admin output");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A project with the API enabled and a desktop client, made with the admin CLI: its id and the client's JSON.
fn project_with_desktop_client(d: &Path) -> (String, serde_json::Value) {
    let project =
        json(&admin(d, &["project", "create", "--name", "P"], "").1)["project_id"].as_str().expect("id").to_owned();
    admin(d, &["project", "enable-api", "--project", &project], "");
    let client =
        json(&admin(d, &["client", "create", "--project", &project, "--type", "desktop", "--name", "A"], "").1);
    (project, client)
}

pub(crate) fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("not one JSON object ({e}): {text}"))
}

/// A `latchkey serve` process on a free port; killed on drop.
struct Served {
    child: Child,
    base: String,
    stdout: String,
}

impl Served {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .env("LATCHKEY_LOG", "debug")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut stdout = String::new();
        let mut base = None;
        for line in lines.by_ref() {
            let line = line.expect("line");
            stdout.push_str(&line);
            stdout.push('\n');
            if let Some(rest) = line.strip_prefix("  issuer:") {
                base = Some(rest.trim().to_owned());
            }
            if line.starts_with("Press Ctrl-C") {
                break;
            }
        }
        let base = base.unwrap_or_else(|| panic!("no issuer line in the start-up output: {stdout}"));
        Self { child, base, stdout }
    }

    fn stop(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let started = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                break status.code();
            }
            assert!(started.elapsed() < Duration::from_secs(15), "the server did not stop on SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut stderr = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        (code, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

#[tokio::test]
async fn serve_runs_with_no_setup_and_says_how_to_trust_its_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = Served::start(dir.path());
    let cert = dir.path().join("tls/cert.pem");
    assert!(cert.exists(), "the certificate is generated at <data-dir>/tls/cert.pem");
    assert!(dir.path().join("latchkey.db").exists(), "the SQLite database is in the data dir");
    assert!(
        served.stdout.contains(&cert.display().to_string()),
        "start-up output names the certificate: {}",
        served.stdout
    );
    assert!(served.stdout.contains("--cacert"), "start-up output says how a client trusts it");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join("tls/key.pem")).expect("key").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the private key is readable by its owner only");
    }
    let ca = std::fs::read(&cert).expect("cert");
    let browser = Browser::new(&served.base, &ca);
    let r = browser.get(&format!("{}/healthz", served.base)).await;
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    let (code, _) = served.stop();
    assert_eq!(code, Some(0), "SIGTERM stops the server cleanly");
}

#[tokio::test]
async fn a_plaintext_http_request_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let served = Served::start(dir.path());
    let plain = served.base.replace("https://", "http://");
    let r = reqwest::Client::new().get(format!("{plain}/healthz")).send().await.expect("answered");
    assert_eq!(r.status(), 400);
    assert!(r.text().await.expect("body").contains("HTTPS only"));
    served.stop();
}

#[tokio::test]
async fn the_admin_cli_manages_projects_clients_and_users_as_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    assert_eq!(admin(d, &["migrate"], "").0, 0, "only migrate (or serve) creates a store");
    let (code, out, _) = admin(d, &["project", "create", "--name", "Demo"], "");
    assert_eq!(code, 0);
    let project = json(&out)["project_id"].as_str().expect("project_id").to_owned();
    assert_eq!(json(&admin(d, &["project", "enable-api", "--project", &project], "").1)["api_enabled"], true);
    let (code, _, err) = admin(d, &["project", "enable-api", "--project", "nope"], "");
    assert_eq!(code, 3, "an unknown project is 'not found': {err}");

    let (code, out, _) =
        admin(d, &["client", "create", "--project", &project, "--type", "desktop", "--name", "Demo App"], "");
    assert_eq!(code, 0);
    let client = json(&out);
    let client_id = client["client_id"].as_str().expect("client_id").to_owned();
    let secret = client["client_secret"].as_str().expect("client_secret").to_owned();
    assert!(client_id.bytes().chain(secret.bytes()).all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b)));
    let shown = admin(d, &["client", "show", &client_id], "").1;
    assert!(!shown.contains(&secret), "the secret is shown once, never again");
    assert_eq!(json(&admin(d, &["project", "show", &project], "").1)["clients"][0]["client_id"], client_id.as_str());

    let (code, _, err) = admin(d, &["client", "create", "--project", &project, "--type", "mobile", "--name", "M"], "");
    assert_eq!(code, 5, "a mobile client without a bundle ID is refused");
    assert!(err.contains("bundle"), "{err}");

    // A field of another type is refused, with the message the console and the JSON API give.
    let (code, _, err) = admin(d, &["client", "update", &client_id, "--bundle-id", "com.example.x"], "");
    assert_eq!(code, 5, "a desktop client has no bundle ID: {err}");
    assert!(err.contains("bundle_id: Desktop app clients have no bundle_id."), "{err}");
    let (code, _, err) =
        admin(d, &["client", "update", &client_id, "--name", "Renamed", "--extension-item-id", "item"], "");
    assert!(code == 5 && err.contains("Desktop app clients have no extension_item_id."), "{err}");
    assert_eq!(json(&admin(d, &["client", "show", &client_id], "").1)["name"], "Demo App", "nothing changed");
    let (code, _, err) = admin(
        d,
        &["client", "create", "--project", &project, "--type", "desktop", "--name", "D", "--uwp-store-id", "x"],
        "",
    );
    assert!(code == 5 && err.contains("Desktop app clients have no uwp_store_id."), "{err}");
    let (code, out, err) = admin(d, &["client", "update", &client_id, "--name", "Renamed"], "");
    assert_eq!((code, json(&out)["name"].as_str()), (0, Some("Renamed")), "{err}");

    let (code, out, _) = admin(
        d,
        &["user", "create", "--email", "ann@example.com", "--password-stdin", "--name", "Ann"],
        "s3cret-passw0rd\n",
    );
    assert_eq!(code, 0);
    let user_id = json(&out)["user_id"].as_str().expect("user_id").to_owned();
    let (code, _, _) =
        admin(d, &["user", "create", "--email", "ANN@example.com", "--password-stdin"], "another-passw0rd\n");
    assert_eq!(code, 4, "e-mail addresses are unique regardless of case: a conflict");
    let (code, _, _) = admin(d, &["user", "create", "--email", "bob@example.com"], "");
    assert_ne!(code, 0, "the password never goes on the command line");
    let shown = json(&admin(d, &["user", "show", "--email", "ann@example.com"], "").1);
    assert_eq!(shown["user_id"], user_id.as_str());
    assert_eq!(shown["methods"][0]["kind"], "password", "{shown}");
    let (code, _, err) = admin(d, &["user", "reset-2sv", "--email", "ann@example.com"], "");
    assert_eq!(code, 4, "no second step to reset: a conflict: {err}");
    let (code, out, err) =
        admin(d, &["user", "password", "--email", "ann@example.com", "--password-stdin"], "n3w-passw0rd\n");
    assert_eq!((code, json(&out)["user_id"].as_str()), (0, Some(user_id.as_str())), "{err}");
    assert_eq!(json(&admin(d, &["user", "list"], "").1)["users"].as_array().expect("users").len(), 1);
    assert_eq!(json(&admin(d, &["user", "disable", &user_id], "").1)["disabled"], true);
    assert_eq!(json(&admin(d, &["client", "delete", &client_id], "").1)["deleted"], true);
    assert_eq!(admin(d, &["client", "delete", &client_id], "").0, 4, "deleting twice: a conflict");
    assert_eq!(json(&admin(d, &["user", "delete", &user_id], "").1)["deleted"], true);
    let keys = json(&admin(d, &["keys", "list"], "").1);
    assert!(keys["keys"].as_array().expect("keys").is_empty(), "keys are made by the server's first start");
    assert_eq!(json(&admin(d, &["keys", "rotate", "--kind", "id-token"], "").1)["kind"], "id_token");
    assert!(!admin(d, &["keys", "list"], "").1.contains("secret"), "key material is never printed");
}

#[tokio::test]
async fn a_full_flow_against_the_binary_leaves_no_secret_in_the_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let served = Served::start(d);
    // The admin CLI works on the same store while the server runs.
    let (_, client) = project_with_desktop_client(d);
    let client_id = client["client_id"].as_str().expect("id");
    let secret = client["client_secret"].as_str().expect("secret");
    admin(d, &["user", "create", "--email", "log@example.com", "--password-stdin"], &format!("{PASSWORD}\n"));

    let ca = std::fs::read(d.join("tls/cert.pem")).expect("cert");
    let browser = Browser::new(&served.base, &ca);
    let pkce = Pkce::new();
    let redirect = "http://127.0.0.1:4444/cb";
    let mut url = url::Url::parse(&format!("{}/o/oauth2/v2/auth", served.base)).expect("url");
    url.query_pairs_mut()
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect)
        .append_pair("response_type", "code")
        .append_pair("scope", READONLY)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("state", "s");
    let consent = browser.consent_page(url.as_str(), "log@example.com").await;
    let done = browser.decide(&consent, &[READONLY], "allow").await;
    let code = done.redirect_param("code").expect("code");
    let token: serde_json::Value = browser
        .http
        .post(format!("{}/token", served.base))
        .form(&[
            ("grant_type", "authorization_code"),
            ("client_id", client_id),
            ("client_secret", secret),
            ("code", &code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", redirect),
        ])
        .send()
        .await
        .expect("token")
        .json()
        .await
        .expect("json");
    let access = token["access_token"].as_str().expect("access token").to_owned();
    let refresh = token["refresh_token"].as_str().expect("refresh token").to_owned();
    let r = browser
        .http
        .get(format!("{}/video/v3/channels?part=id&mine=true&access_token={access}", served.base))
        .send()
        .await
        .expect("channels");
    assert_eq!(r.status(), 200);
    let (code_status, logs) = served.stop();
    assert_eq!(code_status, Some(0));
    assert!(logs.contains("request"), "request logs are written: {logs}");
    for (what, value) in [
        ("code", code.as_str()),
        ("access token", access.as_str()),
        ("refresh token", refresh.as_str()),
        ("client secret", secret),
        ("password", PASSWORD),
        ("verifier", pkce.verifier.as_str()),
    ] {
        assert!(!logs.contains(value), "the logs contain the {what}");
    }
}

#[tokio::test]
async fn the_admin_cli_manages_project_members_and_console_api_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    assert_eq!(admin(d, &["migrate"], "").0, 0, "only migrate (or serve) creates a store");
    let project =
        json(&admin(d, &["project", "create", "--name", "Team"], "").1)["project_id"].as_str().expect("id").to_owned();
    for email in ["owner@example.com", "editor@example.com"] {
        let (code, _, err) =
            admin(d, &["user", "create", "--email", email, "--password-stdin"], &format!("{PASSWORD}\n"));
        assert_eq!(code, 0, "{err}");
    }
    let add = |email: &str, role: &str| {
        admin(d, &["project", "member", "add", "--project", &project, "--email", email, "--role", role], "")
    };
    assert_eq!(json(&add("owner@example.com", "owner").1)["role"], "owner");
    assert_eq!(json(&add("editor@example.com", "editor").1)["role"], "editor");
    let (code, _, err) = add("editor@example.com", "editor");
    assert!(code == 4 && err.contains("already"), "{err}");
    let (code, _, err) = add("nobody@example.com", "editor");
    assert!(code == 5 && err.contains("no latchkey account"), "{err}");
    let list = json(&admin(d, &["project", "member", "list", "--project", &project], "").1);
    assert_eq!(list["members"].as_array().map(Vec::len), Some(2));
    let (code, _, err) =
        admin(d, &["project", "member", "remove", "--project", &project, "--email", "owner@example.com"], "");
    assert!(code == 4 && err.contains("at least one owner"), "{err}");
    let (code, out, _) = admin(
        d,
        &["project", "member", "set-role", "--project", &project, "--email", "editor@example.com", "--role", "owner"],
        "",
    );
    assert_eq!((code, json(&out)["role"].as_str()), (0, Some("owner")));
    let (code, _, _) =
        admin(d, &["project", "member", "remove", "--project", &project, "--email", "owner@example.com"], "");
    assert_eq!(code, 0);

    let (code, out, _) = admin(d, &["api-key", "create", "--email", "editor@example.com", "--name", "ci"], "");
    assert_eq!(code, 0);
    let created = json(&out);
    let key = created["api_key"].as_str().expect("key shown once");
    assert!(key.starts_with("lk_"));
    let listed = admin(d, &["api-key", "list", "--email", "editor@example.com"], "").1;
    assert!(!listed.contains(key) && json(&listed)["api_keys"][0]["name"] == "ci", "{listed}");
    let id = created["id"].as_str().expect("id");
    assert_eq!(admin(d, &["api-key", "revoke", "--email", "editor@example.com", "--id", id], "").0, 0);
    assert_eq!(
        admin(d, &["api-key", "revoke", "--email", "editor@example.com", "--id", id], "").0,
        3,
        "revoking twice: not found"
    );
}

#[test]
fn admin_commands_refuse_a_data_directory_without_a_store_and_name_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = dir.path().join("latchkey-dta");
    let (code, out, err) = admin(&typo, &["project", "list"], "");
    assert_eq!((code, out.as_str()), (5, ""), "refused: {err}");
    let e = json(&err);
    assert_eq!(e["error"], "no_store");
    let text = e["error_description"].as_str().expect("description");
    assert!(text.contains(&typo.join("latchkey.db").display().to_string()) && text.contains("admin migrate"), "{text}");
    assert!(!typo.exists(), "nothing is created");
    let (code, out, err) = admin(&typo, &["migrate"], "");
    assert_eq!((code, json(&out)["migrated"].as_bool()), (0, Some(true)), "{err}");
    assert!(typo.join("latchkey.db").exists(), "migrate creates the store");
    assert_eq!(json(&admin(&typo, &["project", "list"], "").1)["projects"], serde_json::json!([]));
}

#[test]
fn project_create_takes_an_owner_ids_are_flags_and_the_old_positional_forms_still_work() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    assert_eq!(admin(d, &["migrate"], "").0, 0);
    let (code, out, err) = admin(d, &["project", "create", "--name", "P", "--owner", "ann@example.com"], "");
    assert_eq!(code, 3, "the owner must be an existing account: {err}");
    assert_eq!((json(&err)["error"].as_str(), out.as_str()), (Some("not_found"), ""));
    let (code, _, err) =
        admin(d, &["user", "create", "--email", "ann@example.com", "--password-stdin"], "pw-long-enough\n");
    assert_eq!(code, 0, "{err}");
    let created = json(&admin(d, &["project", "create", "--name", "P", "--owner", "ann@example.com"], "").1);
    assert_eq!(created["role"], "owner");
    let id = created["project_id"].as_str().expect("id");
    let members = json(&admin(d, &["project", "member", "list", "--project", id], "").1);
    assert_eq!(members["members"][0]["email"], "ann@example.com", "the owner sees it in the console");
    let by_flag = json(&admin(d, &["project", "show", "--project", id], "").1);
    assert_eq!(by_flag, json(&admin(d, &["project", "show", id], "").1), "the hidden positional form still works");
    let created_at = by_flag["created_at"].as_str().expect("an RFC 3339 time");
    assert!(created_at.len() == 20 && created_at.ends_with('Z') && created_at.as_bytes()[10] == b'T', "{created_at}");
    let (code, _, err) = admin(d, &["project", "show", id, "--project", id], "");
    assert_eq!(code, 2, "one form at a time: a usage error: {err}");
    let (code, out, _) = admin(d, &["project", "show", "--help"], "");
    assert!(code == 0 && out.contains("--project") && !out.contains("LEGACY"), "{out}");
    let (_, help, _) = admin(d, &["--help"], "");
    assert!(!help.contains("--listen") && !help.contains("--tls-cert") && !help.contains("--public-url"), "{help}");
    let (code, out, _) = admin(d, &["project", "list", "--pretty"], "");
    assert!(code == 0 && out.contains("\n  \"projects\": ["), "{out}");
}

#[test]
fn completions_are_printed_for_bash_zsh_and_fish() {
    for shell in ["bash", "zsh", "fish"] {
        let out = Command::new(BIN).args(["completions", shell]).output().expect("run");
        let script = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && script.contains("latchkey") && script.contains("enable-api"), "{shell}");
    }
    let out = Command::new(BIN).args(["completions", "tcsh"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "an unknown shell is a usage error");
    // A reader that stops early (`| head`): the pipe is closed before the script is written.
    let mut child = Command::new(BIN)
        .args(["completions", "bash"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "a closed pipe is no failure: {}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The admin CLI names the server that runs on its store, as `serve` recorded it at start: a server given its port
/// by `--listen` alone gets that port in the key files' `token_uri` and in the streams' `iss` and poll endpoint,
/// with no configuration of the admin command's to match; a configuration that names another server is warned of.
#[tokio::test]
async fn admin_commands_name_the_server_that_runs_not_their_own_configuration() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let served = Served::start(d);
    assert!(!served.base.ends_with(":8443"), "a port of its own: {}", served.base);
    let (project, client) = project_with_desktop_client(d);
    let client_id = client["client_id"].as_str().expect("id");

    let account = json(&admin(d, &["service-account", "create", "--project", &project, "--name", "uploader"], "").1);
    let key_path = d.join("sa-key.json");
    let key_path_text = key_path.to_str().expect("utf-8 path");
    let email = account["email"].as_str().expect("email");
    let (code, _, err) =
        admin(d, &["service-account", "key", "create", "--account", email, "--out", key_path_text], "");
    assert_eq!(code, 0, "{err}");
    let key = json(&std::fs::read_to_string(&key_path).expect("key file"));
    assert_eq!(key["token_uri"], format!("{}/token", served.base));

    let (code, out, err) = admin(d, &["stream", "create", "--client", client_id, "--poll"], "");
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "the command's configuration names no server: no warning ({err})");
    let stream = json(&out);
    assert_eq!(stream["iss"], served.base.as_str(), "{stream}");
    let endpoint = stream["delivery"]["endpoint_url"].as_str().expect("poll endpoint");
    assert!(endpoint.starts_with(&format!("{}/", served.base)), "{endpoint}");

    let other = d.join("other.toml");
    std::fs::write(&other, "listen = \"127.0.0.1:9\"\n").expect("config");
    let stream_id = stream["stream_id"].as_str().expect("id");
    let (code, out, err) =
        admin(d, &["--config", other.to_str().expect("utf-8 path"), "stream", "show", stream_id], "");
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["iss"], served.base.as_str(), "the running server's URLs, still");
    assert!(err.contains("https://127.0.0.1:9") && err.contains(&served.base), "warned: {err}");
}

/// A second `serve` on the data directory of a running one is refused, saying which process holds it and what to
/// do, instead of serving the same SQLite store under another issuer.
#[tokio::test]
async fn a_second_serve_on_the_same_sqlite_data_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Served::start(dir.path());
    let second = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run a second serve");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_ne!(second.status.code(), Some(0), "refused: {stderr}");
    let pid = first.child.id().to_string();
    assert!(stderr.contains("another `latchkey serve`") && stderr.contains(&pid), "{stderr}");
    assert!(String::from_utf8_lossy(&second.stdout).is_empty(), "it never said it was serving");
    let (code, _) = first.stop();
    assert_eq!(code, Some(0));
    // Once the first has stopped, the directory takes a server again.
    Served::start(dir.path());
}
