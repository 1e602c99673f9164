//! The API's content owners. Operators (the `operators` setting) make owners, name their
//! administrators and link channels; an owner's administrators, and operators, see the owner and grant or revoke
//! the content-owner role of service accounts. To anyone else an owner does not exist (404).

use super::doc::{BadRequest, Conflict, Forbidden, NotFound, Unauthorized};
use super::{created, ok, ApiResult, Body, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::content_owners::{self as owners, ContentOwnerDetail, ContentOwnerView, OwnerAdmin, OwnerLink};
use latchkey_admin::Actor;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

/// The path of an owner's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct OwnerPath {
    /// The content owner's id.
    owner: String,
}

/// The path of an owner's channel.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ChannelPath {
    /// The content owner's id.
    owner: String,
    /// The e-mail address of the account whose channel it is.
    email: String,
}

/// The path of an owner's service account.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct GrantPath {
    /// The content owner's id.
    owner: String,
    /// The service account's identifier (e-mail form) or id.
    account: String,
}

/// A new content owner.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct NewOwner {
    /// Its name (1 to 200 characters).
    name: String,
}

/// An account named by its e-mail address.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Account {
    /// The account's e-mail address.
    email: String,
}

impl Caller {
    /// The actor for an owner's operations: an operator holds every owner; anyone else those they administer.
    fn owner_actor(&self, state: &AppState) -> Actor {
        if self.is_operator(state) {
            Actor::Operator
        } else {
            self.actor()
        }
    }
}

/// Make a content owner (operators).
#[utoipa::path(post, path = "/console/api/v1/content-owners", tag = "content-owners",
    operation_id = "createContentOwner", request_body = NewOwner,
    responses((status = 201, body = ContentOwnerView), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized), (status = 403, response = Forbidden)))]
pub(super) async fn owners_post(State(state): State<AppState>, caller: Caller, Body(b): Body<NewOwner>) -> ApiResult {
    caller.operator(&state)?;
    created(owners::content_owner_create(&*state.store, &b.name, state.clock.now()).await?)
}

/// Show a content owner: its administrators, channels and service accounts (its administrators, operators).
#[utoipa::path(get, path = "/console/api/v1/content-owners/{owner}", tag = "content-owners",
    operation_id = "getContentOwner", params(OwnerPath),
    responses((status = 200, body = ContentOwnerDetail), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound)))]
pub(super) async fn owner_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(OwnerPath { owner }): Path<OwnerPath>,
) -> ApiResult {
    ok(owners::content_owner_show(&*state.store, &caller.owner_actor(&state), &owner).await?)
}

/// Name an administrator of a content owner (operators).
#[utoipa::path(post, path = "/console/api/v1/content-owners/{owner}/administrators", tag = "content-owners",
    operation_id = "addContentOwnerAdministrator", params(OwnerPath), request_body = Account,
    responses((status = 201, body = OwnerAdmin), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn admins_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(OwnerPath { owner }): Path<OwnerPath>,
    Body(b): Body<Account>,
) -> ApiResult {
    caller.operator(&state)?;
    created(owners::content_owner_add_admin(&*state.store, &owner, &b.email, state.clock.now()).await?)
}

/// Link the channel of an account to a content owner (operators, with the channel's user's consent).
#[utoipa::path(post, path = "/console/api/v1/content-owners/{owner}/channels", tag = "content-owners",
    operation_id = "linkContentOwnerChannel", params(OwnerPath), request_body = Account,
    responses((status = 201, body = OwnerLink), (status = 400, response = BadRequest),
        (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn channels_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(OwnerPath { owner }): Path<OwnerPath>,
    Body(b): Body<Account>,
) -> ApiResult {
    caller.operator(&state)?;
    created(owners::content_owner_link_channel(&*state.store, &owner, &b.email, true, state.clock.now()).await?)
}

/// Unlink the channel of an account from a content owner (operators).
#[utoipa::path(delete, path = "/console/api/v1/content-owners/{owner}/channels/{email}", tag = "content-owners",
    operation_id = "unlinkContentOwnerChannel", params(ChannelPath),
    responses((status = 200, body = OwnerLink), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound),
        (status = 409, response = Conflict)))]
pub(super) async fn channel_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(p): Path<ChannelPath>,
) -> ApiResult {
    caller.operator(&state)?;
    ok(owners::content_owner_link_channel(&*state.store, &p.owner, &p.email, false, state.clock.now()).await?)
}

/// Grant a service account the content-owner role: it may list the owner's channels on its behalf.
#[utoipa::path(put, path = "/console/api/v1/content-owners/{owner}/service-accounts/{account}",
    tag = "content-owners", operation_id = "grantContentOwnerRole", params(GrantPath),
    responses((status = 200, body = OwnerLink), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn grant_put(State(state): State<AppState>, caller: Caller, Path(p): Path<GrantPath>) -> ApiResult {
    grant(&state, &caller, &p, true).await
}

/// Revoke a service account's content-owner role: its next call on the owner's behalf is 403.
#[utoipa::path(delete, path = "/console/api/v1/content-owners/{owner}/service-accounts/{account}",
    tag = "content-owners", operation_id = "revokeContentOwnerRole", params(GrantPath),
    responses((status = 200, body = OwnerLink), (status = 401, response = Unauthorized),
        (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn grant_delete(State(state): State<AppState>, caller: Caller, Path(p): Path<GrantPath>) -> ApiResult {
    grant(&state, &caller, &p, false).await
}

async fn grant(state: &AppState, caller: &Caller, p: &GrantPath, grant: bool) -> ApiResult {
    let (store, actor, now) = (&*state.store, caller.owner_actor(state), state.clock.now());
    ok(owners::content_owner_grant(store, &actor, &p.owner, &p.account, grant, now).await?)
}
