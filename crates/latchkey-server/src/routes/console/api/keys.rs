//! The caller's own API keys: list and revoke. A key cannot mint keys: they are created on the console's page and
//! with the CLI.

use super::doc::{KeyPath, NotFound, Unauthorized};
use super::{ok, ApiResult, Caller};
use crate::state::AppState;
use axum::extract::{Path, State};
use latchkey_admin::api_keys;
use latchkey_admin::results::{ApiKeyList, ApiKeyRevoked};

/// List your API keys.
///
/// The keys of the developer the calling key acts for, without the keys themselves. There is no POST: a key
/// cannot mint keys; create them on the console's API keys page or with `latchkey admin api-key create`.
#[utoipa::path(get, path = "/console/api/v1/api-keys", tag = "api-keys", operation_id = "listApiKeys",
    responses((status = 200, body = ApiKeyList), (status = 401, response = Unauthorized)))]
pub(super) async fn api_keys_get(State(state): State<AppState>, caller: Caller) -> ApiResult {
    ok(api_keys::api_key_list(&*state.store, &caller.0.id).await?)
}

/// Revoke one of your API keys.
///
/// Revokes a key of the developer the calling key acts for; the calling key itself may be revoked. Another
/// developer's key, or one revoked already, is 404.
#[utoipa::path(delete, path = "/console/api/v1/api-keys/{id}", tag = "api-keys", operation_id = "revokeApiKey",
    params(KeyPath),
    responses((status = 200, body = ApiKeyRevoked, description = "Revoked: the key stops working at once."),
        (status = 401, response = Unauthorized), (status = 404, response = NotFound)))]
pub(super) async fn api_key_delete(
    State(state): State<AppState>,
    caller: Caller,
    Path(KeyPath { id }): Path<KeyPath>,
) -> ApiResult {
    ok(api_keys::api_key_revoke(&*state.store, &caller.0.id, &id).await?)
}
