//! Service accounts for content owners (`docs/service-accounts.md`), as the operator sets them up with the CLI: content
//! owners and the channels they manage, service accounts of a project, and the owners each may act for. (The JWT bearer
//! grant and the data API on behalf of an owner come with the next steps.)

use crate::cli::{admin, json};
use crate::support::PASSWORD;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use latchkey_core::service_account::Assertion;
use latchkey_core::time::UnixTime;

fn ok(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let (code, out, err) = admin(dir, args, "");
    assert_eq!(code, 0, "latchkey admin {args:?}: {err}");
    json(&out)
}

#[tokio::test]
async fn the_operator_sets_up_a_content_owner_its_channels_and_a_service_account_that_acts_for_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    ok(d, &["migrate"]);
    for email in ["artist@example.com", "band@example.com"] {
        let (code, _, err) =
            admin(d, &["user", "create", "--email", email, "--password-stdin"], &format!("{PASSWORD}\n"));
        assert_eq!(code, 0, "{err}");
    }
    let project = ok(d, &["project", "create", "--name", "Label tools"])["project_id"].as_str().expect("id").to_owned();

    let owner = ok(d, &["content-owner", "create", "--name", "Big Label"]);
    let owner = owner["content_owner_id"].as_str().expect("content_owner_id").to_owned();
    for email in ["artist@example.com", "band@example.com"] {
        let linked = ok(d, &["content-owner", "link-channel", "--owner", &owner, "--email", email]);
        assert_eq!(linked["linked"], true);
    }
    let (code, _, err) =
        admin(d, &["content-owner", "link-channel", "--owner", &owner, "--email", "band@example.com"], "");
    assert_ne!(code, 0, "linked already: {err}");
    assert!(err.contains("linked to it already"), "{err}");
    let (code, _, _) =
        admin(d, &["content-owner", "link-channel", "--owner", "co-nope", "--email", "band@example.com"], "");
    assert_ne!(code, 0, "no such owner");
    assert_eq!(ok(d, &["content-owner", "channels", "--owner", &owner])["channels"].as_array().expect("list").len(), 2);
    ok(d, &["content-owner", "unlink-channel", "--owner", &owner, "--email", "band@example.com"]);
    assert_eq!(ok(d, &["content-owner", "channels", "--owner", &owner])["channels"].as_array().expect("list").len(), 1);

    let (code, _, err) = admin(d, &["service-account", "create", "--project", &project, "--name", "Bad_Name"], "");
    assert_ne!(code, 0, "{err}");
    assert!(err.contains("6 to 30 characters"), "{err}");
    let sa = ok(d, &["service-account", "create", "--project", &project, "--name", "uploader-1"]);
    let email = sa["email"].as_str().expect("email").to_owned();
    assert_eq!(email, format!("uploader-1@{}.iam.latchkey.dev", project.to_ascii_lowercase()));
    assert_eq!(sa["unique_id"].as_str().expect("id").len(), 21);
    let (code, _, _) = admin(d, &["service-account", "create", "--project", &project, "--name", "uploader-1"], "");
    assert_ne!(code, 0, "the identifier is taken");

    let granted = ok(d, &["content-owner", "grant", "--owner", &owner, "--service-account", &email]);
    assert_eq!((granted["linked"].as_bool(), granted["service_account"].as_str()), (Some(true), Some(email.as_str())));
    let listed = ok(d, &["service-account", "list", "--project", &project]);
    assert_eq!(listed["service_accounts"][0]["email"], email.as_str());
    assert_eq!(ok(d, &["service-account", "disable", "--account", &email])["disabled"], true);
    assert_eq!(ok(d, &["service-account", "enable", "--account", &email])["disabled"], false);
    keys_are_handed_out_once_as_a_key_file_whose_private_key_signs_assertions(d, &email).await;
    assert_eq!(ok(d, &["service-account", "delete", "--account", &email])["deleted"], true);
    let (code, _, _) = admin(d, &["service-account", "disable", "--account", &email], "");
    assert_ne!(code, 0, "gone");
}

/// A key made by the CLI: the file (0600, the provider's field names) holds the only copy of its private key,
/// which signs an assertion that verifies with the public half latchkey stored; the eleventh key is refused.
async fn keys_are_handed_out_once_as_a_key_file_whose_private_key_signs_assertions(d: &std::path::Path, email: &str) {
    let path = d.join("key.json");
    let path_text = path.to_string_lossy().into_owned();
    let made = ok(d, &["service-account", "key", "create", "--account", email, "--out", &path_text]);
    assert!(!made.to_string().contains("PRIVATE KEY"), "the private key is not printed");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("file").permissions().mode();
        assert_eq!(mode & 0o077, 0, "the key file is its owner's only");
    }
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    assert_eq!((file["type"].as_str(), file["client_email"].as_str()), (Some("service_account"), Some(email)));
    assert_eq!(file["private_key_id"], made["key_id"]);
    let (code, _, err) = admin(d, &["service-account", "key", "create", "--account", email, "--out", &path_text], "");
    assert_ne!(code, 0, "an existing file is not overwritten: {err}");

    let pem = file["private_key"].as_str().expect("private_key");
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let signer =
        latchkey_core::jws::RsaSigningKey::from_pkcs8(&STANDARD.decode(body).expect("base64")).expect("PKCS#8");
    let token_uri = file["token_uri"].as_str().expect("token_uri");
    let now = UnixTime(1_800_000_000);
    let claims = serde_json::json!({"iss": email, "aud": token_uri, "scope": "s", "iat": now.0, "exp": now.0 + 600});
    let assertion = signer.sign("JWT", &claims, &latchkey_admin::clock::OsRandom).expect("sign");
    let store = latchkey_store::open_with(&format!("sqlite://{}/latchkey.db", d.display()), Default::default())
        .await
        .expect("store");
    let stored = store.service_account_key(made["key_id"].as_str().expect("id")).await.expect("get").expect("key");
    let verified = Assertion::parse(&assertion).expect("parse").verify(&stored.public_key, token_uri, now).map(drop);
    assert_eq!(verified, Ok(()), "the stored public half verifies what the file's private half signed");

    for i in 1..10 {
        let p = d.join(format!("key{i}.json")).to_string_lossy().into_owned();
        ok(d, &["service-account", "key", "create", "--account", email, "--out", &p]);
    }
    let p = d.join("key-eleven.json").to_string_lossy().into_owned();
    let (code, _, err) = admin(d, &["service-account", "key", "create", "--account", email, "--out", &p], "");
    assert_ne!(code, 0, "ten keys at most: {err}");
    assert!(err.contains("at most 10 keys"), "{err}");
    let key_id = made["key_id"].as_str().expect("id");
    assert_eq!(ok(d, &["service-account", "key", "disable", "--key", key_id])["disabled"], true);
    assert_eq!(
        ok(d, &["service-account", "key", "list", "--account", email])["keys"].as_array().expect("keys").len(),
        10
    );
    assert_eq!(ok(d, &["service-account", "key", "delete", "--key", key_id])["deleted"], true);
}
