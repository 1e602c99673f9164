//! The API's organisations: their members and the API access controls their administrators set, and a project's
//! organisation and audience. The caller acts as an administrator of their organisation, or, when the
//! configuration lists them in `operators`, as the operator (who alone creates organisations and adds domains).
//! An organisation the caller does not administer is 404, whether it exists or not.

use super::doc::{BadRequest, Conflict, Forbidden, NotFound, ProjectPath, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::orgs::{self, app_access, data_scopes, OrgChanged, OrgCreated, OrgDetail, OrgList};
use latchkey_admin::results::{ProjectView, UserChanged};
use latchkey_admin::{Actor, AdminError};
use latchkey_core::org::{AppAccess, Audience, OrgChange};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// An organisation in a path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct OrgPath {
    /// The organisation id (`org_...`).
    org: String,
}

/// A member of an organisation in a path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct OrgMemberPath {
    /// The organisation id.
    org: String,
    /// The member's id or e-mail address.
    user: String,
}

/// An app of an organisation in a path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct OrgAppPath {
    /// The organisation id.
    org: String,
    /// The client id.
    client: String,
}

impl Caller {
    /// The caller as an actor on organisations: the operator when listed in `operators`.
    fn org_actor(&self, state: &AppState) -> Actor {
        match self.is_operator(state) {
            true => Actor::Operator,
            false => self.actor(),
        }
    }
}

/// Applies one change for the caller.
async fn change(state: &AppState, caller: &Caller, org: &str, c: OrgChange) -> Result<OrgChanged, AdminError> {
    orgs::org_change(&*state.store, &caller.org_actor(state), org, c, state.clock.now()).await
}

/// List the organisations the caller administers (every one for an operator).
#[utoipa::path(get, path = "/console/api/v1/orgs", tag = "organisations", operation_id = "listOrgs",
    responses((status = 200, body = OrgList), (status = 401, response = Unauthorized)))]
pub(super) async fn orgs_get(State(state): State<AppState>, caller: Caller) -> ApiResult {
    ok(orgs::org_list(&*state.store, &caller.org_actor(&state)).await?)
}

/// A new organisation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewOrg {
    /// Its name.
    #[schema(max_length = 100)]
    name: String,
    /// Its verified domains: accounts at them join.
    #[serde(default)]
    domains: Vec<String>,
}

/// Create an organisation (operators only).
#[utoipa::path(post, path = "/console/api/v1/orgs", tag = "organisations", operation_id = "createOrg",
    request_body = NewOrg,
    responses((status = 201, body = OrgCreated), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 409, response = Conflict)))]
pub(super) async fn orgs_post(State(state): State<AppState>, caller: Caller, Body(o): Body<NewOrg>) -> ApiResult {
    let actor = caller.org_actor(&state);
    created(orgs::org_create(&*state.store, &actor, &o.name, &o.domains, state.clock.now()).await?)
}

/// Show an organisation: its domains, members, API access controls and listed apps.
#[utoipa::path(get, path = "/console/api/v1/orgs/{org}", tag = "organisations", operation_id = "getOrg",
    params(OrgPath),
    responses((status = 200, body = OrgDetail), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn org_get(State(state): State<AppState>, caller: Caller, Path(p): Path<OrgPath>) -> ApiResult {
    ok(orgs::org_show(&*state.store, &caller.org_actor(&state), &p.org, &state.scopes.get()).await?)
}

/// A domain to add.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewDomain {
    /// The domain, like `example.com`.
    domain: String,
}

/// Add a verified domain (operators only): accounts at it that belong to no organisation join.
#[utoipa::path(post, path = "/console/api/v1/orgs/{org}/domains", tag = "organisations",
    operation_id = "addOrgDomain", params(OrgPath), request_body = NewDomain,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn org_domains_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgPath>,
    Body(d): Body<NewDomain>,
) -> ApiResult {
    ok(change(&state, &caller, &p.org, OrgChange::AddDomain(d.domain)).await?)
}

/// A member to add.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewOrgMember {
    /// An existing account, by e-mail address or id.
    email: String,
    /// Whether it administers the organisation (an existing member is made an administrator).
    #[serde(default)]
    admin: bool,
}

/// Add a member or an administrator (a user belongs to at most one organisation: 409 otherwise).
#[utoipa::path(post, path = "/console/api/v1/orgs/{org}/members", tag = "organisations",
    operation_id = "addOrgMember", params(OrgPath), request_body = NewOrgMember,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn org_members_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgPath>,
    Body(m): Body<NewOrgMember>,
) -> ApiResult {
    let actor = caller.org_actor(&state);
    ok(orgs::org_add_member(&*state.store, &actor, &p.org, &m.email, m.admin, state.clock.now()).await?)
}

/// Remove a member; the grants the organisation's internal apps had for it are revoked.
#[utoipa::path(delete, path = "/console/api/v1/orgs/{org}/members/{user}", tag = "organisations",
    operation_id = "removeOrgMember", params(OrgMemberPath),
    responses((status = 200, body = OrgChanged), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn org_member_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgMemberPath>,
) -> ApiResult {
    let actor = caller.org_actor(&state);
    ok(orgs::org_remove_member(&*state.store, &actor, &p.org, &p.user, state.clock.now()).await?)
}

/// Disable a member's account: no sign-in, its sessions end and its tokens stop working (`invalid_grant`).
#[utoipa::path(post, path = "/console/api/v1/orgs/{org}/members/{user}/disable", tag = "organisations",
    operation_id = "disableOrgMember", params(OrgMemberPath),
    responses((status = 200, body = UserChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_member_disable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgMemberPath>,
) -> ApiResult {
    let actor = caller.org_actor(&state);
    ok(orgs::org_member_set_disabled(&*state.store, &actor, &p.org, &p.user, true, state.clock.now()).await?)
}

/// Enable a member's disabled account again.
#[utoipa::path(post, path = "/console/api/v1/orgs/{org}/members/{user}/enable", tag = "organisations",
    operation_id = "enableOrgMember", params(OrgMemberPath),
    responses((status = 200, body = UserChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_member_enable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgMemberPath>,
) -> ApiResult {
    let actor = caller.org_actor(&state);
    ok(orgs::org_member_set_disabled(&*state.store, &actor, &p.org, &p.user, false, state.clock.now()).await?)
}

/// An app's access.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AccessBody {
    /// `trusted`, `limited`, `specific`, `blocked`, or `default` (no listing: the organisation's default).
    access: String,
    /// The data-API scopes of a `specific` access.
    #[serde(default)]
    scopes: Vec<String>,
}

/// Set an app's access; the grants it no longer allows are revoked.
#[utoipa::path(put, path = "/console/api/v1/orgs/{org}/apps/{client}", tag = "organisations",
    operation_id = "setOrgAppAccess", params(OrgAppPath), request_body = AccessBody,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_app_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgAppPath>,
    Body(b): Body<AccessBody>,
) -> ApiResult {
    let access = match b.access.as_str() {
        "default" if b.scopes.is_empty() => None,
        "default" => return Err(AdminError::Invalid("default access takes no scopes".into()).into()),
        name => Some(app_access(&state.scopes.get(), name, &b.scopes)?),
    };
    ok(change(&state, &caller, &p.org, OrgChange::AppAccess { client_id: p.client, access }).await?)
}

/// Scopes to restrict or release.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ScopeAccessBody {
    /// Data-API scopes.
    scopes: Vec<String>,
    /// Restricted (only trusted or specifically allowed apps may have them) or not.
    restricted: bool,
}

/// Restrict data-API scopes, or lift their restriction; the grants no longer allowed are revoked.
#[utoipa::path(put, path = "/console/api/v1/orgs/{org}/scopes", tag = "organisations",
    operation_id = "setOrgScopeAccess", params(OrgPath), request_body = ScopeAccessBody,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_scopes_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgPath>,
    Body(b): Body<ScopeAccessBody>,
) -> ApiResult {
    let scopes = data_scopes(&state.scopes.get(), &b.scopes)?;
    if scopes.is_empty() {
        return Err(AdminError::Invalid("name at least one scope".into()).into());
    }
    ok(change(&state, &caller, &p.org, OrgChange::ScopeAccess { scopes, restricted: b.restricted }).await?)
}

/// An organisation's settings; each one given is changed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct SettingsBody {
    /// Trust every client of the organisation's own projects.
    trust_internal_apps: Option<bool>,
    /// Block every app that registered itself (else they are apps not listed).
    block_self_registered_apps: Option<bool>,
    /// The access of apps not listed: `trusted`, `limited` or `blocked`.
    default_access: Option<String>,
    /// Members who sign in with a password need a second step.
    require_2sv: Option<bool>,
    /// Members sign in with passkeys only (it wins over `require_2sv`).
    passkeys_only: Option<bool>,
}

/// Change an organisation's settings; the grants no longer allowed are revoked.
#[utoipa::path(put, path = "/console/api/v1/orgs/{org}/settings", tag = "organisations",
    operation_id = "setOrgSettings", params(OrgPath), request_body = SettingsBody,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_settings_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgPath>,
    Body(b): Body<SettingsBody>,
) -> ApiResult {
    let default = match b.default_access.as_deref().map(|a| app_access(&state.scopes.get(), a, &[])).transpose()? {
        Some(AppAccess::Specific(_)) => unreachable!("specific access needs scopes"),
        other => other,
    };
    let mut changes: Vec<OrgChange> = b.trust_internal_apps.map(OrgChange::TrustInternalApps).into_iter().collect();
    changes.extend(default.map(OrgChange::DefaultAccess));
    changes.extend(b.block_self_registered_apps.map(OrgChange::BlockSelfRegisteredApps));
    if b.require_2sv.is_some() || b.passkeys_only.is_some() {
        changes.push(OrgChange::SignInPolicy { require_two_step: b.require_2sv, passkeys_only: b.passkeys_only });
    }
    if changes.is_empty() {
        return Err(AdminError::Invalid("change at least one setting".into()).into());
    }
    let mut revoked_grants = 0;
    for c in changes {
        revoked_grants += change(&state, &caller, &p.org, c).await?.revoked_grants;
    }
    ok(OrgChanged { org_id: p.org, revoked_grants })
}

/// The scopes of a domain-wide delegation.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DelegationBody {
    /// Data-API scopes the client may have for every member without a consent page.
    scopes: Vec<String>,
}

/// Delegate a client domain-wide: it may have these scopes for every member without a consent page, and no other.
#[utoipa::path(put, path = "/console/api/v1/orgs/{org}/delegations/{client}", tag = "organisations",
    operation_id = "delegateOrgApp", params(OrgAppPath), request_body = DelegationBody,
    responses((status = 200, body = OrgChanged), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn org_delegation_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgAppPath>,
    Body(b): Body<DelegationBody>,
) -> ApiResult {
    let scopes = data_scopes(&state.scopes.get(), &b.scopes)?;
    if scopes.is_empty() {
        return Err(AdminError::Invalid("a delegation lists its scopes".into()).into());
    }
    ok(change(&state, &caller, &p.org, OrgChange::Delegate { client_id: p.client, scopes: Some(scopes) }).await?)
}

/// End a client's domain-wide delegation.
#[utoipa::path(delete, path = "/console/api/v1/orgs/{org}/delegations/{client}", tag = "organisations",
    operation_id = "removeOrgDelegation", params(OrgAppPath),
    responses((status = 200, body = OrgChanged), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn org_delegation_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<OrgAppPath>,
) -> ApiResult {
    ok(change(&state, &caller, &p.org, OrgChange::Delegate { client_id: p.client, scopes: None }).await?)
}

/// A project's organisation and audience; each one given is changed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PlacementBody {
    /// The organisation (one the caller administers); `null` takes the project out of any.
    #[serde(default, deserialize_with = "present")]
    org_id: Option<Option<String>>,
    /// `external` (any account) or `internal` (the organisation's members only).
    audience: Option<String>,
}

/// A field that is present (even as `null`) is `Some`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// Place a project in an organisation and set its audience; the grants an internal audience no longer allows are
/// revoked.
#[utoipa::path(put, path = "/console/api/v1/projects/{project}/placement", tag = "projects",
    operation_id = "setProjectPlacement", params(ProjectPath), request_body = PlacementBody,
    responses((status = 200, body = ProjectView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn project_placement_put(
    State(state): State<AppState>,
    caller: Caller,
    Path(ProjectPath { project }): Path<ProjectPath>,
    Body(b): Body<PlacementBody>,
) -> ApiResult {
    let audience = match b.audience.as_deref() {
        Some(a) => Some(Audience::parse(a).ok_or_else(|| AdminError::Invalid(format!("audience {a:?}")))?),
        None => None,
    };
    let org = b.org_id.as_ref().map(Option::as_deref);
    let actor = caller.org_actor(&state);
    ok(orgs::project_place(&*state.store, &actor, &project, org, audience, state.clock.now()).await?)
}
