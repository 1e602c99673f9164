//! The console's pages (issue 6) over real HTTPS with a cookie-keeping client: sign-in and back, projects and
//! their members (a developer sees only their projects), the client form of each type with a message next to
//! each invalid field, the secret shown once, delete and restore, App Check and owner verification, API keys,
//! CSRF refusal and the pages' security headers.

use crate::support::*;
use latchkey_core::secret;
use latchkey_core::time::Clock;
use latchkey_server::admin;
use latchkey_server::admin::{Actor, ClientRef};
use latchkey_server::clock::SystemClock;

const ALICE: &str = "alice@example.com";
const BOB: &str = "bob@example.com";

/// A signed-in developer's browser.
pub(crate) struct Dev {
    pub browser: Browser,
    pub base: String,
}

impl Dev {
    /// Creates the account and signs in through the console's redirect to the sign-in page.
    pub async fn sign_in(server: &TestServer, email: &str) -> Self {
        server.user(email).await;
        let browser = server.browser();
        let first = browser.get(&server.url("/console")).await;
        assert_eq!(first.status, 303, "not signed in: to the sign-in page");
        let to = first.headers["location"].to_str().expect("location").to_owned();
        assert_eq!(to, "/signin?continue=%2Fconsole");
        let login = browser.get(&server.url(&to)).await;
        let done = browser.sign_in(&login, email, PASSWORD).await;
        assert_eq!(done.status, 303, "signed in: {}", done.body);
        assert_eq!(done.headers["location"], "/console", "and back to the console");
        Self { browser, base: server.base.clone() }
    }

    pub async fn get(&self, path: &str) -> Page {
        self.browser.get(&format!("{}{path}", self.base)).await
    }

    /// The CSRF token of the console's pages.
    pub async fn csrf(&self) -> String {
        self.get("/console").await.input("csrf").expect("a CSRF token on the console")
    }

    /// Posts a console form with the CSRF token.
    pub async fn post(&self, path: &str, form: &[(&str, &str)]) -> Page {
        let csrf = self.csrf().await;
        let mut all = vec![("csrf", csrf.as_str())];
        all.extend_from_slice(form);
        self.browser.post(path, &all).await
    }

    /// Creates a project; returns its id.
    pub async fn project(&self, name: &str) -> String {
        let r = self.post("/console/projects", &[("name", name)]).await;
        assert_eq!(r.status, 303, "{}", r.body);
        let to = r.headers["location"].to_str().expect("location");
        to.trim_start_matches("/console/projects/").split('?').next().expect("id").to_owned()
    }

    /// Creates a client from the form; returns (client_id, client_secret).
    pub async fn client(&self, project: &str, form: &[(&str, &str)]) -> (String, String) {
        let r = self.post(&format!("/console/projects/{project}/clients"), form).await;
        assert_eq!(r.status, 200, "{}", r.body);
        (code_text(&r, "client-id").expect("client id shown"), code_text(&r, "client-secret").expect("secret shown"))
    }
}

/// The text of `<code id="...">`.
pub(crate) fn code_text(page: &Page, id: &str) -> Option<String> {
    let needle = format!("id=\"{id}\"");
    let start = page.body.find(&needle)?;
    let open = page.body[start..].find('>')? + start + 1;
    let end = page.body[open..].find('<')? + open;
    Some(unescape(&page.body[open..end]))
}

/// The error message shown next to a field, checking that the input points at it.
fn field_error(page: &Page, field: &str) -> Option<String> {
    let needle = format!("id=\"{field}-error\">");
    let start = page.body.find(&needle)? + needle.len();
    let end = page.body[start..].find('<')? + start;
    let input = page.body.find(&format!("id=\"{field}\" name=\"{field}\""))?;
    let tag_end = page.body[input..].find('>')? + input;
    let tag = &page.body[input..tag_end];
    assert!(tag.contains("aria-invalid=\"true\""), "{field} is marked invalid: {tag}");
    assert!(tag.contains(&format!("{field}-error")), "{field} is described by its error: {tag}");
    Some(unescape(&page.body[start..end]))
}

#[tokio::test]
async fn a_developer_who_is_not_signed_in_is_sent_to_sign_in_and_back() {
    let server = TestServer::start().await;
    let anonymous = server.browser();
    let r = anonymous.get(&server.url("/console/projects/p-1")).await;
    assert_eq!(r.status, 303);
    assert_eq!(r.headers["location"], "/signin?continue=%2Fconsole%2Fprojects%2Fp-1");
    let dev = Dev::sign_in(&server, ALICE).await;
    let page = dev.get("/console").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("alice@example.com"), "the header names the developer");
    for (name, value) in [
        ("content-security-policy", latchkey_server::views::CSP),
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
        ("x-content-type-options", "nosniff"),
    ] {
        assert_eq!(page.headers[name], value, "{name}");
    }
    // A form posted without a session goes to the sign-in page too.
    let r = anonymous.post("/console/projects", &[("name", "x")]).await;
    assert_eq!(r.status, 303);
    assert_eq!(r.headers["location"], "/signin?continue=%2Fconsole");
}

#[tokio::test]
async fn the_home_page_links_a_signed_in_developer_to_the_console() {
    let server = TestServer::start().await;
    let anonymous = server.browser().get(&server.url("/")).await;
    assert_eq!(anonymous.status, 200);
    assert!(!anonymous.body.contains("href=\"/console\""), "nobody signed in: no console link");
    let dev = Dev::sign_in(&server, ALICE).await;
    let home = dev.get("/").await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains("You are signed in as alice@example.com."), "{}", home.body);
    assert!(home.body.contains("<a class=\"button primary\" href=\"/console\">"), "{}", home.body);
    assert_eq!(home.headers["content-security-policy"], latchkey_server::views::CSP);
    assert_eq!(dev.get("/console").await.status, 200, "the link leads to the console");
}

#[tokio::test]
async fn a_new_project_is_owned_by_its_creator_and_a_missing_name_is_shown_next_to_the_field() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let empty = dev.post("/console/projects", &[("name", "  ")]).await;
    assert_eq!(empty.status, 400);
    assert_eq!(field_error(&empty, "name").as_deref(), Some("Enter a project name."));
    let id = dev.project("Video App").await;
    let page = dev.get(&format!("/console/projects/{id}?done=project-created")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Project created. You are its owner."));
    assert!(page.body.contains("your role: owner"));
    let members = admin::members::member_list(server.store(), &Actor::Operator, &id).await.expect("members");
    assert_eq!(members.members[0].email, ALICE);
    assert_eq!(members.members[0].role, "owner");

    // The data API switch.
    assert!(page.body.contains("Enable the data API"));
    let r = dev.post(&format!("/console/projects/{id}/api"), &[("enabled", "true")]).await;
    assert_eq!(r.status, 303);
    assert!(server.store().project(&id).await.expect("p").expect("p").api_enabled);
    let r = dev.post(&format!("/console/projects/{id}/api"), &[("enabled", "false")]).await;
    assert_eq!(r.status, 303);
    assert!(!server.store().project(&id).await.expect("p").expect("p").api_enabled);
}

#[tokio::test]
async fn a_developer_sees_and_changes_only_the_projects_they_are_a_member_of() {
    let server = TestServer::start().await;
    let alice = Dev::sign_in(&server, ALICE).await;
    let bob = Dev::sign_in(&server, BOB).await;
    let project = alice.project("Alice's").await;
    let (client, _) = alice.client(&project, &[("type", "desktop"), ("name", "Desk")]).await;

    let theirs = bob.get(&format!("/console/projects/{project}")).await;
    let nothing = bob.get("/console/projects/project-doesnotexist").await;
    assert_eq!((theirs.status, nothing.status), (404, 404), "the same answer whether it exists or not");
    assert!(!theirs.body.contains("Alice's"));
    assert!(!bob.get("/console").await.body.contains("Alice's"), "not in Bob's list");
    for path in [
        format!("/console/projects/{project}/clients/{client}"),
        format!("/console/projects/{project}/clients/{client}/edit"),
        format!("/console/projects/{project}/clients/new"),
    ] {
        assert_eq!(bob.get(&path).await.status, 404, "{path}");
    }
    for (path, form) in [
        (format!("/console/projects/{project}/api"), vec![("enabled", "true")]),
        (format!("/console/projects/{project}/clients"), vec![("type", "desktop"), ("name", "Bob's")]),
        (format!("/console/projects/{project}/clients/{client}/delete"), vec![]),
        (format!("/console/projects/{project}/members"), vec![("email", BOB), ("role", "owner")]),
    ] {
        assert_eq!(bob.post(&path, &form).await.status, 404, "{path}");
    }
    assert!(!server.store().project(&project).await.expect("p").expect("p").api_enabled);
    assert!(server.store().client(&client).await.expect("c").expect("c").deleted_at.is_none());
    // Bob's own project cannot reach Alice's client either.
    let own = bob.project("Bob's").await;
    assert_eq!(bob.get(&format!("/console/projects/{own}/clients/{client}")).await.status, 404);

    // Added as an editor, Bob sees the project and manages clients, not members.
    let added =
        alice.post(&format!("/console/projects/{project}/members"), &[("email", BOB), ("role", "editor")]).await;
    assert_eq!(added.status, 303, "{}", added.body);
    let page = bob.get(&format!("/console/projects/{project}")).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("your role: editor"));
    assert!(!page.body.contains("Add a member"), "editors do not see the member form");
    let r = bob.post(&format!("/console/projects/{project}/members"), &[("email", "carol@example.com")]).await;
    assert_eq!(r.status, 403);
    let bob_id = server.store().user_by_email(BOB).await.expect("u").expect("bob").id;
    let alice_id = server.store().user_by_email(ALICE).await.expect("u").expect("alice").id;
    let r = bob.post(&format!("/console/projects/{project}/members/{alice_id}/remove"), &[]).await;
    assert_eq!(r.status, 403);
    let (c2, _) = bob.client(&project, &[("type", "desktop"), ("name", "By Bob")]).await;
    assert!(server.store().client(&c2).await.expect("c").is_some());

    // The last owner stays; a second owner lets the first go.
    let r = alice.post(&format!("/console/projects/{project}/members/{alice_id}/remove"), &[]).await;
    assert_eq!(r.status, 409);
    assert!(r.body.contains("at least one owner"), "{}", r.body);
    let r = alice.post(&format!("/console/projects/{project}/members/{alice_id}/role"), &[("role", "editor")]).await;
    assert_eq!(r.status, 409);
    let r = alice.post(&format!("/console/projects/{project}/members/{bob_id}/role"), &[("role", "owner")]).await;
    assert_eq!(r.status, 303);
    let r = alice.post(&format!("/console/projects/{project}/members/{alice_id}/remove"), &[]).await;
    assert_eq!((r.status, r.headers["location"].to_str().expect("l")), (303, "/console?done=member-removed"));
    assert_eq!(alice.get(&format!("/console/projects/{project}")).await.status, 404, "Alice is out");

    // Adding an unknown account or a member twice is refused next to the field.
    let r = bob.post(&format!("/console/projects/{project}/members"), &[("email", "nobody@example.com")]).await;
    assert_eq!(r.status, 400);
    let m = field_error(&r, "email").expect("message");
    assert!(m.contains("no latchkey account"), "{m}");
    let r = bob.post(&format!("/console/projects/{project}/members"), &[("email", BOB)]).await;
    assert_eq!(r.status, 409);
    assert!(field_error(&r, "email").expect("message").contains("already"));
}

#[tokio::test]
async fn an_owner_deletes_a_project_with_its_clients_after_a_confirmation_and_an_editor_cannot() {
    let server = TestServer::start().await;
    let alice = Dev::sign_in(&server, ALICE).await;
    let bob = Dev::sign_in(&server, BOB).await;
    let project = alice.project("Doomed").await;
    let (live, _) = alice.client(&project, &[("type", "desktop"), ("name", "Live")]).await;
    let (gone, _) = alice.client(&project, &[("type", "desktop"), ("name", "Gone")]).await;
    let r = alice.post(&format!("/console/projects/{project}/clients/{gone}/delete"), &[]).await;
    assert_eq!(r.status, 303);
    let r = alice.post(&format!("/console/projects/{project}/members"), &[("email", BOB), ("role", "editor")]).await;
    assert_eq!(r.status, 303, "{}", r.body);

    let delete = format!("/console/projects/{project}/delete");
    let owners = alice.get(&format!("/console/projects/{project}")).await;
    assert!(owners.body.contains(&format!("href=\"{delete}\"")), "owners see Delete project");
    let editors = bob.get(&format!("/console/projects/{project}")).await;
    assert!(!editors.body.contains(&delete), "editors do not");
    assert_eq!(bob.get(&delete).await.status, 403, "an editor is refused the confirmation page");
    let r = bob.post(&delete, &[]).await;
    assert_eq!(r.status, 403, "and the deletion");
    assert!(r.body.contains("owners"), "{}", r.body);
    assert!(server.store().project(&project).await.expect("p").is_some());

    let confirm = alice.get(&delete).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains("Delete Doomed?"), "{}", confirm.body);
    assert!(
        confirm.body.contains("1 live client and 1 deleted client awaiting restore")
            && confirm.body.contains("cannot be restored"),
        "the page says what happens to the clients: {}",
        confirm.body
    );
    assert!(confirm.body.contains(&format!("action=\"{delete}\"")));
    let r = alice.post(&delete, &[]).await;
    assert_eq!((r.status, r.headers["location"].to_str().expect("l")), (303, "/console?done=project-deleted"));
    assert!(alice.get("/console?done=project-deleted").await.body.contains("Project deleted"));
    assert!(server.store().project(&project).await.expect("p").is_none());
    for id in [&live, &gone] {
        assert!(server.store().client(id).await.expect("c").is_none(), "{id} goes with the project, for good");
    }
    assert_eq!(alice.get(&format!("/console/projects/{project}")).await.status, 404);
    assert_eq!(bob.get(&format!("/console/projects/{project}")).await.status, 404);
    assert_eq!(alice.post(&delete, &[]).await.status, 404);
}

#[tokio::test]
async fn a_form_without_the_right_csrf_token_changes_nothing() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    for csrf in [None, Some("forged"), Some("dGhpcyBpcyBub3QgYSB0b2tlbg")] {
        let mut form = vec![("type", "desktop"), ("name", "Sneaky")];
        if let Some(c) = csrf {
            form.push(("csrf", c));
        }
        let r = dev.browser.post(&format!("/console/projects/{project}/clients"), &form).await;
        assert_eq!(r.status, 403, "{csrf:?}");
        assert!(r.body.contains("expired"));
        let r = dev.browser.post("/console/projects", &form).await;
        assert_eq!(r.status, 403);
    }
    assert!(server.store().clients(Some(&project)).await.expect("list").is_empty());
    // Another session's token does not work either.
    let other = Dev::sign_in(&server, BOB).await;
    let theirs = other.csrf().await;
    let r =
        dev.browser.post(&format!("/console/projects/{project}/api"), &[("csrf", &theirs), ("enabled", "true")]).await;
    assert_eq!(r.status, 403);
    assert!(!server.store().project(&project).await.expect("p").expect("p").api_enabled);
}

#[tokio::test]
async fn the_type_chooser_comes_first_and_each_type_has_exactly_its_fields() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let chooser = dev.get(&format!("/console/projects/{project}/clients/new")).await;
    assert_eq!(chooser.status, 200);
    for t in ["desktop", "mobile", "universal-desktop", "browser-extension"] {
        assert!(chooser.body.contains(&format!("name=\"type\" value=\"{t}\"")), "{t} on the chooser");
    }
    let all = ["bundle_id", "store_id", "team_id", "app_check", "uwp_store_id", "package_sid", "extension_item_id"];
    for (t, own) in [
        ("desktop", vec![]),
        ("mobile", vec!["bundle_id", "store_id", "team_id", "app_check"]),
        ("universal-desktop", vec!["uwp_store_id", "package_sid"]),
        ("browser-extension", vec!["extension_item_id"]),
    ] {
        let form = dev.get(&format!("/console/projects/{project}/clients/new?type={t}")).await;
        assert_eq!(form.status, 200);
        for f in ["name", "redirect_uris"] {
            assert!(form.body.contains(&format!("name=\"{f}\"")), "{t}: {f}");
            assert!(form.body.contains(&format!("<label for=\"{f}\"")), "{t}: {f} has a label");
        }
        for f in all {
            assert_eq!(form.body.contains(&format!("name=\"{f}\"")), own.contains(&f), "{t}: {f}");
        }
    }
    let bad = dev.get(&format!("/console/projects/{project}/clients/new?type=tv")).await;
    assert_eq!(bad.status, 400);
    assert!(bad.body.contains("Choose the type of your application."));
}

#[tokio::test]
async fn every_invalid_field_is_shown_again_with_its_value_and_a_message_next_to_it() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let post = |form: Vec<(&'static str, String)>| {
        let dev = &dev;
        let project = project.clone();
        async move {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            dev.post(&format!("/console/projects/{project}/clients"), &form).await
        }
    };
    let s = |v: &str| v.to_owned();

    // Mobile: name, bundle ID required; store ID digits; with App Check a team ID and no * in the bundle ID.
    let r = post(vec![("type", s("mobile")), ("name", s("")), ("store_id", s("12ab")), ("app_check", s("on"))]).await;
    assert_eq!(r.status, 400);
    assert_eq!(field_error(&r, "name").as_deref(), Some("Enter a client name."));
    assert!(field_error(&r, "bundle_id").expect("bundle").contains("needs its app's bundle ID"));
    assert!(field_error(&r, "store_id").expect("store").contains("digits only"));
    assert!(field_error(&r, "team_id").expect("team").contains("required when App Check is enabled"));
    assert!(r.body.contains("value=\"12ab\""), "the value typed stays");
    assert!(r.body.contains("Fix 4 fields to continue"), "a summary links to the fields");
    let r = post(vec![
        ("type", s("mobile")),
        ("name", s("M")),
        ("bundle_id", s("com.example.*")),
        ("app_check", s("on")),
        ("team_id", s("T1")),
    ])
    .await;
    assert!(field_error(&r, "bundle_id").expect("bundle").contains("must not contain *"));
    assert!(r.body.contains("value=\"com.example.*\""));
    let r = post(vec![
        ("type", s("mobile")),
        ("name", s("M")),
        ("bundle_id", s("com.example.m")),
        ("redirect_uris", s("http://127.0.0.1:9/cb")),
    ])
    .await;
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("only for desktop app clients"));

    // Universal desktop: the store ID is exactly 12 characters; the package SID lower case; the scheme ≤ 39.
    let long = format!("{}://s-1-15-2-1", "a".repeat(40));
    let r = post(vec![
        ("type", s("universal-desktop")),
        ("name", s("U")),
        ("uwp_store_id", s("9NBLGGH4NNS")),
        ("package_sid", s("S-1-15-2")),
        ("redirect_uris", long.clone()),
    ])
    .await;
    assert_eq!(r.status, 400);
    assert!(field_error(&r, "uwp_store_id").expect("store").contains("exactly 12 characters"));
    assert!(field_error(&r, "package_sid").expect("sid").contains("lower case"));
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("at most 39 characters"));
    assert!(r.body.contains(&long), "the URIs typed stay");

    // Browser extension: the item ID; no custom schemes.
    let r =
        post(vec![("type", s("browser-extension")), ("name", s("E")), ("redirect_uris", s("com.example:/cb"))]).await;
    assert!(field_error(&r, "extension_item_id").expect("item").contains("item ID"));
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("identity API"));

    // Desktop: no out-of-band flow.
    let r =
        post(vec![("type", s("desktop")), ("name", s("D")), ("redirect_uris", s("urn:ietf:wg:oauth:2.0:oob"))]).await;
    assert!(field_error(&r, "redirect_uris").expect("uri").contains("out-of-band"));
    assert!(server.store().clients(Some(&project)).await.expect("list").is_empty(), "nothing was created");
}

#[tokio::test]
async fn each_type_is_created_and_its_secret_is_shown_once_and_stored_only_as_a_hash() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let forms: [&[(&str, &str)]; 4] = [
        &[("type", "desktop"), ("name", "Desk"), ("redirect_uris", "http://localhost:8080/cb\n\ncom.example.desk:/cb")],
        &[
            ("type", "mobile"),
            ("name", "Phone"),
            ("bundle_id", "com.example.phone"),
            ("store_id", "123456"),
            ("team_id", "TEAM1"),
            ("app_check", "on"),
            ("redirect_uris", "com.example.phone:/oauth2redirect"),
        ],
        &[
            ("type", "universal-desktop"),
            ("name", "Uwp"),
            ("uwp_store_id", "9NBLGGH4NNS1"),
            ("package_sid", "s-1-15-2-1"),
            ("redirect_uris", "ms-app://s-1-15-2-1"),
        ],
        &[("type", "browser-extension"), ("name", "Ext"), ("extension_item_id", "abcdefghijklmnop")],
    ];
    for form in forms {
        let (id, secret_shown) = dev.client(&project, form).await;
        let c = server.store().client(&id).await.expect("get").expect("created");
        assert_eq!(c.secret_hash, secret::hash(&secret_shown), "only the hash is stored");
        let page = dev.get(&format!("/console/projects/{project}/clients/{id}")).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains(&id));
        assert!(!page.body.contains(&secret_shown), "the secret is never shown again");
        let list = dev.get(&format!("/console/projects/{project}")).await;
        assert!(!list.body.contains(&secret_shown));
        assert!(list.body.contains(&id) && list.body.contains(c.client_type.label()), "listed with its type");
    }
    let phone = server
        .store()
        .clients(Some(&project))
        .await
        .expect("list")
        .into_iter()
        .find(|c| c.name == "Phone")
        .expect("phone");
    assert_eq!(phone.redirect_uris, vec!["com.example.phone:/oauth2redirect".to_string()]);
    assert_eq!(phone.details.store_id.as_deref(), Some("123456"));
    assert!(phone.details.app_check);
    let desk = server
        .store()
        .clients(Some(&project))
        .await
        .expect("list")
        .into_iter()
        .find(|c| c.name == "Desk")
        .expect("desk");
    assert_eq!(desk.redirect_uris.len(), 2, "blank lines are left out");
}

#[tokio::test]
async fn an_edit_keeps_the_rules_and_a_deleted_client_is_restored_from_the_project_page() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let (id, _) = dev
        .client(
            &project,
            &[
                ("type", "mobile"),
                ("name", "Phone"),
                ("bundle_id", "com.example.p"),
                ("team_id", "T"),
                ("app_check", "on"),
            ],
        )
        .await;
    let edit = dev.get(&format!("/console/projects/{project}/clients/{id}/edit")).await;
    assert_eq!(edit.status, 200);
    assert!(
        edit.body.contains("value=\"com.example.p\" required readonly"),
        "the bundle ID is frozen: App Check is used"
    );
    let path = format!("/console/projects/{project}/clients/{id}/edit");
    let r = dev.post(&path, &[("name", ""), ("bundle_id", "com.example.p"), ("store_id", "x"), ("team_id", "T")]).await;
    assert_eq!(r.status, 400);
    assert!(field_error(&r, "name").is_some() && field_error(&r, "store_id").is_some());
    let r = dev
        .post(&path, &[("name", "Phone 2"), ("bundle_id", "com.example.other"), ("store_id", "42"), ("team_id", "T")])
        .await;
    assert_eq!(r.status, 303, "{}", r.body);
    let c = server.store().client(&id).await.expect("get").expect("c");
    assert_eq!((c.name.as_str(), c.details.store_id.as_deref()), ("Phone 2", Some("42")));
    assert_eq!(c.details.bundle_id.as_deref(), Some("com.example.p"), "a frozen bundle ID is not changed");

    // A field of another type, posted though the form does not show it, is refused with the message the CLI and
    // the JSON API give, and changes nothing.
    let r = dev.post(&path, &[("name", "Phone 3"), ("team_id", "T"), ("uwp_store_id", "9NBLGGH4NNS1")]).await;
    assert_eq!(r.status, 400, "{}", r.body);
    let shown = field_error(&r, "name").expect("the error is shown at the top of the form");
    assert_eq!(shown, "Mobile platform app clients have no uwp_store_id.");
    assert_eq!(server.store().client(&id).await.expect("get").expect("c").name, "Phone 2");
    let r = dev
        .post(
            &format!("/console/projects/{project}/clients"),
            &[("type", "desktop"), ("name", "D"), ("bundle_id", "b")],
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(field_error(&r, "name").as_deref(), Some("Desktop app clients have no bundle_id."));

    let confirm = dev.get(&format!("/console/projects/{project}/clients/{id}/delete")).await;
    assert_eq!(confirm.status, 200);
    assert!(confirm.body.contains("Delete Phone 2?") && confirm.body.contains("within 30 days"));
    let r = dev.post(&format!("/console/projects/{project}/clients/{id}/delete"), &[]).await;
    assert_eq!(r.headers["location"].to_str().expect("l"), format!("/console/projects/{project}?done=client-deleted"));
    let page = dev.get(&format!("/console/projects/{project}")).await;
    assert!(page.body.contains("Deleted clients") && page.body.contains("Restorable until"));
    assert!(page.body.contains(&format!("/clients/{id}/restore")));
    let r = dev.post(&format!("/console/projects/{project}/clients/{id}/restore"), &[]).await;
    assert_eq!(r.status, 303);
    assert!(server.store().client(&id).await.expect("get").expect("c").deleted_at.is_none());
    let again = dev.post(&format!("/console/projects/{project}/clients/{id}/restore"), &[]).await;
    assert_eq!(again.status, 400);
    assert!(again.body.contains("not deleted"));
}

#[tokio::test]
async fn app_check_follows_the_state_table_with_confirmations_and_the_propagation_delay() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let (id, _) = dev.client(&project, &[("type", "mobile"), ("name", "Phone"), ("bundle_id", "com.example.p")]).await;
    let client = format!("/console/projects/{project}/clients/{id}");
    let page = dev.get(&client).await;
    assert!(page.body.contains("id=\"app-check-state\" class=\"badge disabled\">Disabled<"));
    assert!(page.body.contains("a team ID is required to enable App Check"), "why it cannot be enabled yet");
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enable")]).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("A team ID is required to enable App Check."));

    admin::client_update(
        server.store(),
        &Actor::Operator,
        ClientRef::id(&id),
        admin::ClientEdit { team_id: Some("TEAM1".into()), ..Default::default() },
    )
    .await
    .expect("team id");
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enable")]).await;
    assert_eq!(r.status, 303);
    let page = dev.get(&client).await;
    assert!(page.body.contains("Changing to “Enabled, not enforced”"), "pending for 15 minutes");
    assert!(page.body.contains("up to 15 minutes"));
    assert!(page.body.contains("/app-check/enforce\">Enforce…"));

    let confirm = dev.get(&format!("{client}/app-check/enforce")).await;
    assert!(confirm.body.contains("all unverified requests are rejected"));
    assert_eq!(confirm.input("confirm").as_deref(), Some("yes"));
    let unconfirmed = dev.post(&format!("{client}/app-check"), &[("action", "enforce")]).await;
    assert_eq!(unconfirmed.status, 400);
    assert!(unconfirmed.body.contains("must be confirmed"));
    let r = dev.post(&format!("{client}/app-check"), &[("action", "enforce"), ("confirm", "yes")]).await;
    assert_eq!(r.status, 303);
    let c = server.store().client(&id).await.expect("get").expect("c");
    assert_eq!(c.app_check.target(), latchkey_core::app_check::AppCheckState::Enforced);

    // Metrics per category and hour.
    let hour = latchkey_core::time::UnixTime(SystemClock.now().0 / 3600 * 3600);
    for cat in latchkey_core::app_check::Category::ALL {
        server.store().count_app_check(&id, hour, cat).await.expect("count");
    }
    server.store().count_app_check(&id, hour, latchkey_core::app_check::Category::Verified).await.expect("count");
    let page = dev.get(&client).await;
    assert!(page.body.contains("Unverified: likely outdated client"));
    assert!(page.body.contains("<td class=\"num\">2</td>"), "two verified requests");
    assert!(page.body.contains("<rect class=\"s1\""), "a bar per category");

    let secret = dev.post(&format!("{client}/app-check/debug-secret"), &[]).await;
    assert_eq!(secret.status, 200);
    let shown = code_text(&secret, "debug-secret").expect("shown once");
    assert!(shown.starts_with("lkd_"));
    assert!(!dev.get(&client).await.body.contains(&shown));
    let r = dev.post(&format!("{client}/app-check"), &[("action", "disable")]).await;
    assert_eq!(r.status, 303);
}

#[tokio::test]
async fn verify_ownership_shows_the_success_notice_or_the_error_prompt() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let project = dev.project("P").await;
    let item = "itemforownershiptest";
    let (id, _) =
        dev.client(&project, &[("type", "browser-extension"), ("name", "Ext"), ("extension_item_id", item)]).await;
    let client = format!("/console/projects/{project}/clients/{id}");
    assert!(dev.get(&client).await.body.contains("Not verified"));
    let r = dev.post(&format!("{client}/verify-ownership"), &[]).await;
    assert_eq!(r.status, 400);
    assert!(r.body.contains("role=\"alert\" id=\"action-error\">Ownership not verified"), "{}", r.body);

    let now = SystemClock.now();
    let members = vec!["someone@example.com".to_string(), ALICE.to_string()];
    admin::listing_add(server.store(), item, None, Some(("Example Group", &members)), now).await.expect("listing");
    let r = dev.post(&format!("{client}/verify-ownership"), &[]).await;
    assert_eq!(r.status, 303);
    let page = dev.get(r.headers["location"].to_str().expect("location")).await;
    assert!(page.body.contains("Ownership verified: you are the publisher"));
    assert!(page.body.contains("badge on\">Verified"));
}

#[tokio::test]
async fn an_api_key_is_shown_once_works_and_stops_working_when_revoked() {
    let server = TestServer::start().await;
    let dev = Dev::sign_in(&server, ALICE).await;
    let r = dev.post("/console/api-keys", &[("name", "")]).await;
    assert_eq!(r.status, 400);
    assert!(field_error(&r, "name").is_some());
    let r = dev.post("/console/api-keys", &[("name", "laptop")]).await;
    assert_eq!(r.status, 200);
    let key = code_text(&r, "api-key").expect("shown");
    assert!(key.starts_with("lk_"));
    let list = dev.get("/console/api-keys").await;
    assert!(list.body.contains("laptop") && !list.body.contains(&key));
    let call = || server.http().get(server.url("/console/api/v1/projects")).bearer_auth(&key).send();
    assert_eq!(call().await.expect("call").status(), 200);
    let id = key.trim_start_matches("lk_").split('_').next().expect("id").to_owned();
    let r = dev.post(&format!("/console/api-keys/{id}/revoke"), &[]).await;
    assert_eq!(r.status, 303);
    assert_eq!(call().await.expect("call").status(), 401);
}
