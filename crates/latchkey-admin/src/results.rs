//! The typed results of the administrative operations: what the CLI prints and the console's JSON API sends
//! (serialized as they are), and what the console's pages read. Times are seconds since the Unix epoch.

use latchkey_core::app_check::Category;
use latchkey_core::client::{Client, ClientDetails};
use latchkey_core::time::UnixTime;
use latchkey_store::{ApiKey, Listing, Member, Project, ProjectRole, Publisher, User};
use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// A project; with the asking developer's role when a developer asks.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProjectView {
    /// The project's id.
    pub project_id: String,
    /// Its name.
    pub name: String,
    /// Whether its data API is enabled.
    pub api_enabled: bool,
    /// Whether its clients' consent page offers time-based access.
    pub time_based_access: bool,
    /// Whether its clients' refresh tokens not bound by DPoP rotate on every refresh.
    pub rotate_refresh_tokens: bool,
    /// Whether apps may register themselves into it (RFC 7591).
    pub open_registration: bool,
    /// The organisation it belongs to, if any.
    pub org_id: Option<String>,
    /// Who its clients serve: `external` (any account) or `internal` (its organisation's members).
    pub audience: &'static str,
    /// When it was created (absent from the answer to its creation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<i64>,
    /// The asking developer's role in it (`owner`, `editor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = crate::schema::roles)]
    pub role: Option<&'static str>,
}

impl ProjectView {
    /// A stored project, seen with `role`.
    pub fn of(p: &Project, role: Option<ProjectRole>) -> Self {
        Self {
            project_id: p.id.clone(),
            name: p.name.clone(),
            api_enabled: p.api_enabled,
            time_based_access: p.time_based_access,
            rotate_refresh_tokens: p.rotate_refresh_tokens,
            open_registration: p.open_registration,
            org_id: p.org_id.clone(),
            audience: p.audience.as_str(),
            created_at: Some(p.created_at.0),
            role: role.map(ProjectRole::as_str),
        }
    }
}

/// A project with its clients.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProjectDetail {
    /// The project.
    #[serde(flatten)]
    pub project: ProjectView,
    /// Its clients, deleted ones included.
    pub clients: Vec<ClientView>,
}

/// Projects.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProjectList {
    /// The projects.
    pub projects: Vec<ProjectView>,
}

/// A project's data API switched on or off.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApiSwitched {
    /// The project.
    pub project_id: String,
    /// Whether the data API is now enabled.
    pub api_enabled: bool,
}

/// A project deleted for good.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ProjectDeleted {
    /// The project.
    pub project_id: String,
    /// Always true.
    pub deleted: bool,
    /// How many clients it had (live and deleted).
    pub clients_deleted: usize,
}

/// A change of App Check state and when it takes effect.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct PendingChange {
    /// The state asked for.
    pub state: &'static str,
    /// When it takes effect.
    pub effective_at: i64,
}

/// An OAuth client (never its secret, except in the answer to its creation).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientView {
    /// The client id.
    pub client_id: String,
    /// Its project.
    pub project_id: String,
    /// Its name.
    pub name: String,
    /// Its type (`desktop`, `mobile`, `universal-desktop`, `browser-extension`).
    #[serde(rename = "type")]
    #[schema(schema_with = crate::schema::client_types)]
    pub client_type: &'static str,
    /// Its redirect URIs.
    pub redirect_uris: Vec<String>,
    /// The type-specific fields (`bundle_id`, `store_id`, `team_id`, `app_check`, `uwp_store_id`, `package_sid`,
    /// `extension_item_id`), each present (null when unset) whatever the type.
    #[serde(flatten)]
    pub details: ClientDetails,
    /// When it was created.
    pub created_at: i64,
    /// When it was deleted (restorable for a while).
    pub deleted_at: Option<i64>,
    /// When it last got tokens.
    pub last_used_at: Option<i64>,
    /// The App Check state stored.
    #[schema(schema_with = crate::schema::app_check_states)]
    pub app_check_state: &'static str,
    /// The App Check change on its way.
    pub app_check_pending: Option<PendingChange>,
    /// When the browser extension's owner was verified.
    pub ownership_verified_at: Option<i64>,
    /// The client's secrets: never the secrets themselves, only their ids, last four characters and states.
    pub secrets: Vec<ClientSecretView>,
    /// How the client registered itself (`dynamic`: RFC 7591; `document`: a client ID metadata document); absent
    /// for a client made in the console.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration: Option<&'static str>,
    /// The client secret: only in the answer to the creation, shown this once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
}

impl From<&Client> for ClientView {
    fn from(c: &Client) -> Self {
        Self {
            client_id: c.client_id.clone(),
            project_id: c.project_id.clone(),
            name: c.name.clone(),
            client_type: c.client_type.as_str(),
            redirect_uris: c.redirect_uris.clone(),
            details: c.details.clone(),
            created_at: c.created_at.0,
            deleted_at: c.deleted_at.map(|t| t.0),
            last_used_at: c.last_used_at.map(|t| t.0),
            app_check_state: c.app_check.state.as_str(),
            app_check_pending: c
                .app_check
                .pending
                .map(|(s, at)| PendingChange { state: s.as_str(), effective_at: at.0 }),
            ownership_verified_at: c.ownership_verified_at.map(|t| t.0),
            secrets: c.secrets.iter().map(ClientSecretView::from).collect(),
            registration: c.registration.as_ref().map(|r| r.kind.as_str()),
            client_secret: None,
        }
    }
}

/// One of a client's secrets, as the console and its API show it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientSecretView {
    /// Its id, to disable, enable or delete it.
    pub secret_id: String,
    /// Its last four characters (absent for a secret made before secrets rotated).
    pub last4: Option<String>,
    /// When it was made.
    pub created_at: i64,
    /// Whether it authenticates requests.
    pub enabled: bool,
    /// When it was disabled.
    pub disabled_at: Option<i64>,
}

impl From<&latchkey_core::client::ClientSecret> for ClientSecretView {
    fn from(s: &latchkey_core::client::ClientSecret) -> Self {
        Self {
            secret_id: s.id.clone(),
            last4: s.hint.clone(),
            created_at: s.created_at.0,
            enabled: s.enabled(),
            disabled_at: s.disabled_at.map(|t| t.0),
        }
    }
}

/// Clients.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientList {
    /// The clients.
    pub clients: Vec<ClientView>,
}

/// A client deleted (restorable) or restored.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientChanged {
    /// The client.
    pub client_id: String,
    /// Present (true) after a deletion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<bool>,
    /// Present (true) after a restore.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restored: Option<bool>,
}

/// What a purge did.
#[derive(Debug, Clone, Serialize)]
pub struct Purged {
    /// Clients deleted (restorably) for being unused.
    pub deleted_unused: u64,
    /// Deleted clients removed for good.
    pub purged: u64,
}

/// The App Check state in force and the change on its way.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppCheckStatus {
    /// The client.
    pub client_id: String,
    /// The state in force.
    #[schema(schema_with = crate::schema::app_check_states)]
    pub state: &'static str,
    /// The change not yet in force.
    pub pending: Option<PendingChange>,
}

impl AppCheckStatus {
    /// The status of a client at `now`.
    pub fn of(c: &Client, now: UnixTime) -> Self {
        Self {
            client_id: c.client_id.clone(),
            state: c.app_check.effective(now).as_str(),
            pending: c
                .app_check
                .pending
                .filter(|(_, at)| *at > now)
                .map(|(s, at)| PendingChange { state: s.as_str(), effective_at: at.0 }),
        }
    }
}

/// App Check requests of one hour and category.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HourCount {
    /// The hour's start.
    pub hour: i64,
    /// The category.
    #[serde(serialize_with = "category_name")]
    #[schema(schema_with = crate::schema::categories)]
    pub category: Category,
    /// How many requests.
    pub count: u64,
}

fn category_name<S: serde::Serializer>(c: &Category, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.as_str())
}

/// App Check counts of a client.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AppCheckMetrics {
    /// The client.
    pub client_id: String,
    /// The start of the first hour counted.
    pub since: i64,
    /// Totals per category (every category, zero included).
    pub totals: BTreeMap<&'static str, u64>,
    /// Counts per hour and category.
    pub hourly: Vec<HourCount>,
}

/// A new App Check debug secret, shown this once.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DebugSecret {
    /// The client.
    pub client_id: String,
    /// The secret.
    pub debug_secret: String,
}

/// A user account.
#[derive(Debug, Clone, Serialize)]
pub struct UserView {
    /// The user id.
    pub user_id: String,
    /// The e-mail address.
    pub email: String,
    /// The name.
    pub name: Option<String>,
    /// When it was created.
    pub created_at: i64,
    /// When it was disabled.
    pub disabled_at: Option<i64>,
}

impl From<&User> for UserView {
    fn from(u: &User) -> Self {
        Self {
            user_id: u.id.clone(),
            email: u.email.clone(),
            name: u.name.clone(),
            created_at: u.created_at.0,
            disabled_at: u.disabled_at.map(|t| t.0),
        }
    }
}

/// A user with their channel.
#[derive(Debug, Clone, Serialize)]
pub struct UserDetail {
    /// The user.
    #[serde(flatten)]
    pub user: UserView,
    /// Their channel.
    pub channel_id: Option<String>,
    /// How they sign in: the password, then each passkey (never a secret).
    pub methods: Vec<SignInMethod>,
}

/// An account's sign-in methods.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SignInMethods {
    /// The account.
    pub user_id: String,
    /// Its methods, never a secret.
    pub methods: Vec<SignInMethod>,
}

/// One way an account signs in, as the operator sees it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SignInMethod {
    /// `password`, `passkey`, `totp` (an authenticator app) or `recovery_codes`.
    pub kind: &'static str,
    /// The passkey's name; for the others, what they are (`password`, `authenticator app`, and how many recovery
    /// codes are left).
    pub name: String,
    /// When it was made (the password: when the account was).
    pub created_at: i64,
    /// When it last signed the account in, where that is kept (passkeys).
    pub last_used_at: Option<i64>,
}

/// A user created.
#[derive(Debug, Clone, Serialize)]
pub struct UserCreated {
    /// The user id.
    pub user_id: String,
    /// The e-mail address.
    pub email: String,
    /// The name.
    pub name: Option<String>,
    /// Their channel.
    pub channel_id: String,
}

/// Users.
#[derive(Debug, Clone, Serialize)]
pub struct UserList {
    /// The users.
    pub users: Vec<UserView>,
}

/// A user deleted, disabled or enabled.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserChanged {
    /// The user.
    pub user_id: String,
    /// Present (true) after a deletion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<bool>,
    /// Present after disabling (true) or enabling (false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disabled: Option<bool>,
}

/// A listing of the built-in listing directory.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum ListingView {
    /// Published by one developer.
    Individual {
        /// The item ID.
        item_id: String,
        /// The publisher's e-mail address.
        publisher_email: String,
    },
    /// Published by a group.
    Group {
        /// The item ID.
        item_id: String,
        /// The group's name.
        group: String,
        /// The members' e-mail addresses.
        members: Vec<String>,
    },
}

impl From<&Listing> for ListingView {
    fn from(l: &Listing) -> Self {
        let item_id = l.item_id.clone();
        match &l.publisher {
            Publisher::Individual(e) => Self::Individual { item_id, publisher_email: e.clone() },
            Publisher::Group { name, members } => {
                Self::Group { item_id, group: name.clone(), members: members.clone() }
            }
        }
    }
}

/// A listing removed.
#[derive(Debug, Clone, Serialize)]
pub struct ListingRemoved {
    /// The item ID.
    pub item_id: String,
    /// Always true.
    pub removed: bool,
}

/// A browser extension's owner verified.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct OwnershipVerified {
    /// The client.
    pub client_id: String,
    /// The listing's item ID.
    pub item_id: String,
    /// Always true.
    pub ownership_verified: bool,
    /// When.
    pub verified_at: i64,
}

/// A member of a project.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberView {
    /// The user id.
    pub user_id: String,
    /// The e-mail address.
    pub email: String,
    /// The name.
    pub name: Option<String>,
    /// The role (`owner`, `editor`).
    #[schema(schema_with = crate::schema::roles)]
    pub role: &'static str,
    /// When they were added.
    pub added_at: i64,
}

impl From<&Member> for MemberView {
    fn from(m: &Member) -> Self {
        Self {
            user_id: m.user_id.clone(),
            email: m.email.clone(),
            name: m.name.clone(),
            role: m.role.as_str(),
            added_at: m.added_at.0,
        }
    }
}

/// The members of a project.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberList {
    /// The project.
    pub project_id: String,
    /// Its members.
    pub members: Vec<MemberView>,
}

/// A member added, removed or given a role.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MemberChanged {
    /// The project.
    pub project_id: String,
    /// The member.
    pub user_id: String,
    /// Their e-mail address (after an addition).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Their role (after an addition or a change of role).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<&'static str>,
    /// Present (true) after a removal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<bool>,
}

/// A console API key (never the key itself, except in the answer to its creation).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApiKeyView {
    /// The key's id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// When it was created.
    pub created_at: i64,
    /// When it was last used.
    pub last_used_at: Option<i64>,
}

impl From<&ApiKey> for ApiKeyView {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.clone(),
            name: k.name.clone(),
            created_at: k.created_at.0,
            last_used_at: k.last_used_at.map(|t| t.0),
        }
    }
}

/// A console API key created: the key is shown this once.
#[derive(Debug, Clone, Serialize)]
pub struct ApiKeyCreated {
    /// The key's record.
    #[serde(flatten)]
    pub key: ApiKeyView,
    /// The key (`lk_...`).
    pub api_key: String,
    /// The developer it acts for.
    pub user_id: String,
}

/// A developer's console API keys.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApiKeyList {
    /// The developer.
    pub user_id: String,
    /// Their keys.
    pub api_keys: Vec<ApiKeyView>,
}

/// A console API key revoked.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ApiKeyRevoked {
    /// The key's id.
    pub id: String,
    /// Always true.
    pub revoked: bool,
}
