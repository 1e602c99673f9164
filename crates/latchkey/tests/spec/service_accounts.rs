//! Service accounts for content owners (issue 23), as the operator sets them up with the CLI: content owners and
//! the channels they manage, service accounts of a project, and the owners each may act for. (The JWT bearer
//! grant and the data API on behalf of an owner come with the next steps.)

use crate::cli::{admin, json};
use crate::support::PASSWORD;

fn ok(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let (code, out, err) = admin(dir, args, "");
    assert_eq!(code, 0, "latchkey admin {args:?}: {err}");
    json(&out)
}

#[test]
fn the_operator_sets_up_a_content_owner_its_channels_and_a_service_account_that_acts_for_it() {
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
    assert_eq!(ok(d, &["service-account", "delete", "--account", &email])["deleted"], true);
    let (code, _, _) = admin(d, &["service-account", "disable", "--account", &email], "");
    assert_ne!(code, 0, "gone");
}
