//! The console's pages: one askama struct per page, all rendered inside `console/base.html` (a header with the
//! signed-in developer, the navigation and the sign-out form).

use askama::Template;
use latchkey_core::client::{ClientSecret, MAX_SECRETS};
use latchkey_core::time::UnixTime;

/// What every console page shows in its header.
#[derive(Debug, Clone)]
pub struct Layout {
    /// The signed-in developer's e-mail address.
    pub email: String,
    /// The session's CSRF token, for every form of the page.
    pub csrf: String,
}

/// A date and time as the console shows it: `2024-05-01 12:34 UTC`.
pub fn date(t: UnixTime) -> String {
    match time::OffsetDateTime::from_unix_timestamp(t.0) {
        Ok(d) => {
            format!("{:04}-{:02}-{:02} {:02}:{:02} UTC", d.year(), u8::from(d.month()), d.day(), d.hour(), d.minute())
        }
        Err(_) => t.0.to_string(),
    }
}

/// A project in a list or a page heading.
#[derive(Debug, Clone)]
pub struct ProjectRow {
    /// The project id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The developer's role.
    pub role: &'static str,
    /// Whether the data API is enabled.
    pub api_enabled: bool,
    /// Whether its clients' consent page offers time-based access.
    pub time_based_access: bool,
    /// Whether its clients' refresh tokens rotate.
    pub rotate_refresh_tokens: bool,
    /// Whether apps may register themselves into it.
    pub open_registration: bool,
    /// The organisation it belongs to, if any.
    pub org_id: Option<String>,
    /// Whether its clients serve only its organisation's members.
    pub internal: bool,
    /// When it was created.
    pub created: String,
}

/// `GET /console`: the developer's projects and the form that creates one.
#[derive(Template)]
#[template(path = "console/projects.html")]
pub struct ProjectsPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// The projects.
    pub projects: Vec<ProjectRow>,
    /// The name typed into the form.
    pub name: String,
    /// What is wrong with it.
    pub name_error: Option<String>,
}

/// A live client in the project's list.
#[derive(Debug, Clone)]
pub struct ClientRow {
    /// The client_id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The type, as people read it.
    pub type_label: &'static str,
    /// Whether it registered itself (not made in the console).
    pub registered: bool,
    /// When it was created.
    pub created: String,
}

/// A deleted client in the project's list.
#[derive(Debug, Clone)]
pub struct DeletedRow {
    /// The client_id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The type, as people read it.
    pub type_label: &'static str,
    /// When it was deleted.
    pub deleted: String,
    /// Until when it can be restored.
    pub restorable_until: String,
    /// Whether the restore window is still open.
    pub restorable: bool,
}

/// A member in the project's list.
#[derive(Debug, Clone)]
pub struct MemberRow {
    /// The user id.
    pub user_id: String,
    /// The e-mail address.
    pub email: String,
    /// The role.
    pub role: &'static str,
    /// Whether this is the signed-in developer.
    pub is_me: bool,
    /// Whether this is the project's only owner: no "Remove" or "Make editor" is offered (a project keeps an
    /// owner, so either would be refused).
    pub last_owner: bool,
}

/// `GET /console/projects/{project}`.
#[derive(Template)]
#[template(path = "console/project.html")]
pub struct ProjectPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// An error of the last action.
    pub error: Option<String>,
    /// The project.
    pub project: ProjectRow,
    /// Whether the developer is an owner (manages the members).
    pub is_owner: bool,
    /// Live clients.
    pub clients: Vec<ClientRow>,
    /// Deleted clients, restorable for `restore_days`.
    pub deleted: Vec<DeletedRow>,
    /// The restore window in days.
    pub restore_days: i64,
    /// Members.
    pub members: Vec<MemberRow>,
    /// The add-member form's e-mail address.
    pub member_email: String,
    /// The add-member form's role.
    pub member_role: String,
    /// What is wrong with the add-member form.
    pub member_error: Option<String>,
    /// The organisation the developer administers, where they may place the project.
    pub admin_of: Option<String>,
    /// Its registered APIs.
    pub resources: Vec<super::resource_forms::ResourceRow>,
    /// The form that registers an API.
    pub resource_form: super::resource_forms::ResourceForm,
}

/// One client type on the type chooser.
#[derive(Debug, Clone)]
pub struct TypeChoice {
    /// The value (`mobile`, ...).
    pub value: &'static str,
    /// The type's name.
    pub label: &'static str,
    /// When to choose it.
    pub description: &'static str,
}

/// `GET /console/projects/{project}/clients/new`: the type chooser, the first step of creating a client.
#[derive(Template)]
#[template(path = "console/client_type.html")]
pub struct ClientTypePage {
    /// The header.
    pub layout: Layout,
    /// The project.
    pub project: ProjectRow,
    /// The four types.
    pub types: Vec<TypeChoice>,
    /// A message when no type was chosen.
    pub error: Option<String>,
}

/// How a form field is entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    /// One line of text.
    Text,
    /// Several lines (one redirect URI per line).
    Lines,
    /// A checkbox.
    Checkbox,
}

/// A field of the client form, with its value and what is wrong with it.
#[derive(Debug, Clone)]
pub struct Field {
    /// The input's name (as in the JSON API).
    pub name: &'static str,
    /// Its label.
    pub label: &'static str,
    /// A hint under the label.
    pub hint: String,
    /// The value typed (or stored).
    pub value: String,
    /// What is wrong with it.
    pub error: Option<String>,
    /// How it is entered.
    pub kind: FieldKind,
    /// Whether it must be filled in.
    pub required: bool,
    /// Whether it cannot be changed (the bundle ID once App Check is used).
    pub readonly: bool,
    /// `inputmode` for on-screen keyboards (`numeric`), or empty.
    pub inputmode: &'static str,
}

impl Field {
    /// Whether the field is a one-line text input.
    pub fn is_text(&self) -> bool {
        self.kind == FieldKind::Text
    }
    /// Whether the field is a textarea.
    pub fn is_lines(&self) -> bool {
        self.kind == FieldKind::Lines
    }
    /// Whether the checkbox is ticked.
    pub fn checked(&self) -> bool {
        self.value == "on"
    }
    /// The ids the input is described by: its hint and its error.
    pub fn described_by(&self) -> String {
        let mut ids = Vec::new();
        if !self.hint.is_empty() {
            ids.push(format!("{}-hint", self.name));
        }
        if self.error.is_some() {
            ids.push(format!("{}-error", self.name));
        }
        ids.join(" ")
    }
}

/// The create and edit forms of a client.
#[derive(Template)]
#[template(path = "console/client_form.html")]
pub struct ClientFormPage {
    /// The header.
    pub layout: Layout,
    /// The project.
    pub project: ProjectRow,
    /// The page's heading.
    pub heading: String,
    /// Where the form posts.
    pub action: String,
    /// The submit button's label.
    pub submit_label: &'static str,
    /// The client type (`mobile`, ...), posted along.
    pub type_value: &'static str,
    /// The client type, as people read it.
    pub type_label: &'static str,
    /// What this type is for and how it redirects.
    pub type_help: &'static str,
    /// The fields of this type.
    pub fields: Vec<Field>,
    /// Where Cancel goes.
    pub cancel_href: String,
}

impl ClientFormPage {
    /// The fields with an error, for the summary at the top.
    pub fn invalid(&self) -> Vec<&Field> {
        self.fields.iter().filter(|f| f.error.is_some()).collect()
    }
    /// The name of the first invalid field, which gets the focus.
    pub fn first_invalid(&self) -> &str {
        self.fields.iter().find(|f| f.error.is_some()).map_or("", |f| f.name)
    }
}

/// A label and a value on the client page.
#[derive(Debug, Clone)]
pub struct Detail {
    /// The label.
    pub label: &'static str,
    /// The value.
    pub value: String,
}

/// A client on its page.
#[derive(Debug, Clone)]
pub struct ClientView {
    /// The client_id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The type, as people read it.
    pub type_label: &'static str,
    /// When it was created.
    pub created: String,
    /// When it last got tokens.
    pub last_used: String,
    /// When it was deleted (a deleted client shows only Restore).
    pub deleted: Option<String>,
    /// The redirect URIs.
    pub redirect_uris: Vec<String>,
    /// The type's fields.
    pub details: Vec<Detail>,
    /// The client's secrets.
    pub secrets: SecretsPanel,
}

/// The secrets of a client or a registered API on its page (`console/secrets.html`): each with its actions, and
/// the button that adds one.
#[derive(Debug, Clone)]
pub struct SecretsPanel {
    /// The secrets.
    pub rows: Vec<SecretRow>,
    /// Where their forms post: `{action}` adds one, `{action}/{id}/{disable|enable|delete}` changes one.
    pub action: String,
    /// Whether they can be changed (not while a client is deleted).
    pub editable: bool,
    /// Whether another secret can be added (fewer than two).
    pub can_add: bool,
}

impl SecretsPanel {
    /// The secrets of a client or a registered API as its page lists them, their forms posting to `action`.
    pub fn of(secrets: &[ClientSecret], action: String, editable: bool) -> Self {
        let enabled = secrets.iter().filter(|s| s.enabled()).count();
        let rows = secrets
            .iter()
            .map(|s| SecretRow {
                id: s.id.clone(),
                shown: s
                    .hint
                    .as_deref()
                    .map_or_else(|| "(made before rotation; not shown)".into(), |h| format!("••••{h}")),
                created: date(s.created_at),
                disabled: s.disabled_at.map(date),
                can_disable: s.enabled() && enabled > 1,
            })
            .collect();
        Self { rows, action, editable, can_add: secrets.len() < MAX_SECRETS }
    }
}

/// One of the secrets of a client or a registered API on its page.
#[derive(Debug, Clone)]
pub struct SecretRow {
    /// Its id.
    pub id: String,
    /// Its last four characters, as shown (`••••abcd`).
    pub shown: String,
    /// When it was made.
    pub created: String,
    /// When it was disabled, if it is.
    pub disabled: Option<String>,
    /// Whether it may be disabled now (another secret is enabled): no button bound to fail.
    pub can_disable: bool,
}

/// One bar segment of the metrics chart.
#[derive(Debug, Clone)]
pub struct Bar {
    /// The category (CSS class).
    pub class: &'static str,
    /// Where it starts, in pixels.
    pub x: u32,
    /// Its width, in pixels.
    pub width: u32,
}

/// One hour of App Check metrics.
#[derive(Debug, Clone)]
pub struct MetricRow {
    /// The hour.
    pub hour: String,
    /// Counts per category, in the order of `Category::ALL`.
    pub counts: Vec<u64>,
    /// The bar.
    pub bars: Vec<Bar>,
}

/// The App Check panel of a mobile-platform client.
#[derive(Debug, Clone)]
pub struct AppCheckView {
    /// The state in force (`disabled`, `enabled`, `enforced`).
    pub state: &'static str,
    /// The state in force, as people read it.
    pub state_label: &'static str,
    /// The change on its way, as people read it.
    pub pending: Option<String>,
    /// The state last asked for, which the buttons start from.
    pub target: &'static str,
    /// Why App Check cannot be enabled yet (no team ID, a `*` in the bundle ID).
    pub enable_blocker: Option<String>,
    /// The propagation delay, as people read it.
    pub propagation: String,
    /// The category names, in order.
    pub categories: Vec<&'static str>,
    /// Metrics per hour, the last 24 hours.
    pub metrics: Vec<MetricRow>,
    /// Totals per category.
    pub totals: Vec<u64>,
}

/// The ownership panel of a browser-extension client.
#[derive(Debug, Clone)]
pub struct OwnershipView {
    /// The extension's item ID.
    pub item_id: String,
    /// When ownership was verified.
    pub verified: Option<String>,
}

/// `GET /console/projects/{project}/clients/{client}`.
#[derive(Template)]
#[template(path = "console/client.html")]
pub struct ClientPage {
    /// The header.
    pub layout: Layout,
    /// The project.
    pub project: ProjectRow,
    /// A notice after a change.
    pub notice: Option<String>,
    /// An error of the last action.
    pub error: Option<String>,
    /// The client.
    pub client: ClientView,
    /// Mobile: App Check.
    pub app_check: Option<AppCheckView>,
    /// Browser extension: owner verification.
    pub ownership: Option<OwnershipView>,
}

/// A confirmation before a consequential action.
#[derive(Template)]
#[template(path = "console/confirm.html")]
pub struct ConfirmPage {
    /// The header.
    pub layout: Layout,
    /// The question.
    pub heading: String,
    /// What will happen.
    pub paragraphs: Vec<String>,
    /// Where the form posts.
    pub action: String,
    /// Hidden fields beside the CSRF token.
    pub hidden: Vec<(&'static str, String)>,
    /// The confirm button's label.
    pub confirm_label: String,
    /// Where Cancel goes.
    pub cancel_href: String,
}

/// A value shown with its label on the page that shows a secret.
#[derive(Debug, Clone)]
pub struct Shown {
    /// The label.
    pub label: &'static str,
    /// The value.
    pub value: String,
    /// The element id (tests and people copy from it).
    pub id: &'static str,
}

/// A secret shown once, right after it was made: a client secret, a debug secret, an API key.
#[derive(Template)]
#[template(path = "console/secret.html")]
pub struct SecretPage {
    /// The header.
    pub layout: Layout,
    /// The heading.
    pub heading: String,
    /// The values shown, the secret among them.
    pub shown: Vec<Shown>,
    /// What the secret is for.
    pub note: String,
    /// Where to go next.
    pub continue_href: String,
    /// The link's label.
    pub continue_label: String,
    /// A file to download with the secret in it (a client's `client_secret.json`).
    pub download: Option<Download>,
}

/// A file offered for download from a page. The console's script makes it a `blob:` URL when it is clicked: its
/// content is never in a URL the browser keeps in its history, and nothing is kept on the server.
#[derive(Debug, Clone)]
pub struct Download {
    /// The file's name.
    pub filename: String,
    /// Its content (JSON).
    pub json: String,
}

/// An API key in the list.
#[derive(Debug, Clone)]
pub struct KeyRow {
    /// The key id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created: String,
    /// When it was last used.
    pub last_used: String,
}

/// `GET /console/api-keys`.
#[derive(Template)]
#[template(path = "console/api_keys.html")]
pub struct ApiKeysPage {
    /// The header.
    pub layout: Layout,
    /// A notice after a change.
    pub notice: Option<String>,
    /// The keys.
    pub keys: Vec<KeyRow>,
    /// The name typed into the form.
    pub name: String,
    /// What is wrong with it.
    pub name_error: Option<String>,
}

/// A console page with a heading and a message (not found, forbidden, expired form).
#[derive(Template)]
#[template(path = "console/message.html")]
pub struct MessagePage {
    /// The header, when a developer is signed in.
    pub layout: Layout,
    /// The heading.
    pub heading: String,
    /// The message.
    pub message: String,
}
