//! The console's pages (`docs/console.md`) over real HTTPS with a cookie-keeping client: sign-in and back, projects and
//! their members (a developer sees only their projects), the client form of each type with a message next to
//! each invalid field, the secret shown once, delete and restore, App Check and owner verification, API keys,
//! CSRF refusal and the pages' security headers.

use crate::support::*;
use latchkey_admin::clock::SystemClock;
use latchkey_admin::{self as admin, Actor, ClientRef};
use latchkey_core::secret;
use latchkey_core::time::Clock;

mod clients;
mod orgs;

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
