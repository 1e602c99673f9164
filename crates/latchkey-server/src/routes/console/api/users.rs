//! The API's user accounts: the apps with access to an account (the account's own key, or an operator's), and the
//! operator's changes to accounts. An operator is an account whose e-mail address the configuration lists in
//! `operators`; anyone else asking about another account, or for an operator's change, is refused with 403.

use super::doc::{Conflict, Forbidden, NotFound, Unauthorized};
use super::{ok, ApiResult, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::accounts::{self, AccessRemoved, AppList};
use latchkey_admin::results::{SignInMethods, UserChanged};
use latchkey_admin::{self as admin, AdminError};
use latchkey_store::User;
use serde::Deserialize;
use utoipa::IntoParams;

/// A user account in a path: its id or e-mail address.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct UserPath {
    /// The user's id or e-mail address.
    user: String,
}

/// An app of a user account in a path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct UserAppPath {
    /// The user's id or e-mail address.
    user: String,
    /// The client id.
    client: String,
}

impl Caller {
    /// Whether the caller is an operator (`operators` in the configuration).
    pub(super) fn is_operator(&self, state: &AppState) -> bool {
        crate::routes::console::acting_as_operator(state, &self.0).is_some()
    }

    /// The account named, if the caller may see it: their own, or any for an operator. Another account is 403
    /// whether it exists or not.
    async fn account(&self, state: &AppState, user: &str) -> Result<User, AdminError> {
        let own = self.0.id == user || self.0.email.eq_ignore_ascii_case(user);
        if own {
            return Ok(self.0.clone());
        }
        self.operator(state)?;
        admin::find_user(&*state.store, user).await
    }

    /// Refuses a caller who is not an operator (403).
    pub(super) fn operator(&self, state: &AppState) -> Result<(), AdminError> {
        match self.is_operator(state) {
            true => Ok(()),
            false => Err(AdminError::Forbidden("only an operator acts on other accounts".into())),
        }
    }
}

/// List the apps with access to an account (the caller's own, or any for an operator).
#[utoipa::path(get, path = "/console/api/v1/users/{user}/apps", tag = "users", operation_id = "listUserApps",
    params(UserPath),
    responses((status = 200, body = AppList), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn user_apps_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    let user = caller.account(&state, &user).await?;
    ok(accounts::apps_of(&*state.store, &user, &state.scopes.get(), state.clock.now()).await?)
}

/// Remove an app's access to an account: every grant of the client is revoked at once.
///
/// 404 when there is no such account or the app has no access to it.
#[utoipa::path(delete, path = "/console/api/v1/users/{user}/apps/{client}", tag = "users",
    operation_id = "removeUserApp", params(UserAppPath),
    responses((status = 200, body = AccessRemoved), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden),
        (status = 404, response = NotFound)))]
pub(super) async fn user_app_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserAppPath { user, client }): Path<UserAppPath>,
) -> ApiResult {
    let user = caller.account(&state, &user).await?;
    ok(accounts::remove_app_access(&*state.store, &user, &client, state.clock.now()).await?)
}

/// Disable an account (operators only): no sign-in, its sessions end and its tokens stop working.
#[utoipa::path(post, path = "/console/api/v1/users/{user}/disable", tag = "users", operation_id = "disableUser",
    params(UserPath),
    responses((status = 200, body = UserChanged), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn user_disable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    caller.operator(&state)?;
    ok(admin::user_set_disabled(&*state.store, &user, true, state.clock.now()).await?)
}

/// Enable a disabled account again (operators only).
#[utoipa::path(post, path = "/console/api/v1/users/{user}/enable", tag = "users", operation_id = "enableUser",
    params(UserPath),
    responses((status = 200, body = UserChanged), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn user_enable_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    caller.operator(&state)?;
    ok(admin::user_set_disabled(&*state.store, &user, false, state.clock.now()).await?)
}

/// Delete an account with its channel, sessions and grants (operators only).
#[utoipa::path(delete, path = "/console/api/v1/users/{user}", tag = "users", operation_id = "deleteUser",
    params(UserPath),
    responses((status = 200, body = UserChanged), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn user_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    caller.operator(&state)?;
    ok(admin::user_delete(&*state.store, &user, state.clock.now()).await?)
}

/// List an account's sign-in methods (the caller's own, or any for an operator): the password, the authenticator
/// app and recovery codes while 2-step verification is on, and the passkeys; never a secret.
#[utoipa::path(get, path = "/console/api/v1/users/{user}/methods", tag = "users", operation_id = "listUserSignInMethods",
    params(UserPath),
    responses((status = 200, body = SignInMethods), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound)))]
pub(super) async fn user_methods_get(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    let user = caller.account(&state, &user).await?;
    let methods = admin::two_step::methods(&*state.store, &user).await?;
    ok(SignInMethods { user_id: user.id, methods })
}

/// Reset a locked-out person's second steps (operators only): the authenticator app, the recovery codes and the
/// passkeys go, and every session ends; they sign in with their password and enrol again.
#[utoipa::path(post, path = "/console/api/v1/users/{user}/reset-2sv", tag = "users", operation_id = "resetUserTwoStep",
    params(UserPath),
    responses((status = 200, body = UserChanged), (status = 401, response = Unauthorized),
        (status = 403, response = Forbidden), (status = 404, response = NotFound), (status = 409, response = Conflict)))]
pub(super) async fn user_reset_two_step_post(
    State(state): State<AppState>,
    caller: Caller,
    Path(UserPath { user }): Path<UserPath>,
) -> ApiResult {
    caller.operator(&state)?;
    ok(admin::user_reset_two_step(&*state.store, &user, state.clock.now()).await?)
}
