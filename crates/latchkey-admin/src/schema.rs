//! The schemas of the console API's string fields that take one of a few values (for `#[schema(schema_with)]`),
//! each list from the type that names the values where there is one. A leaf module: the results, the error body
//! and the API's bodies all refer to it.

use latchkey_core::app_check::Category;
use latchkey_core::client::ClientType;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

/// One of `values`.
fn one_of(values: impl IntoIterator<Item = &'static str>) -> Object {
    ObjectBuilder::new().schema_type(Type::String).enum_values(Some(values)).build()
}

/// A member's role.
pub fn roles() -> Object {
    one_of(["owner", "editor"])
}

/// A client's type.
pub fn client_types() -> Object {
    one_of(ClientType::ALL.map(ClientType::as_str))
}

/// An App Check state.
pub fn app_check_states() -> Object {
    one_of(["disabled", "enabled", "enforced"])
}

/// An App Check action.
pub fn app_check_actions() -> Object {
    one_of(["enable", "enforce", "unenforce", "disable"])
}

/// An App Check metrics category.
pub fn categories() -> Object {
    one_of(Category::ALL.map(Category::as_str))
}

/// The `error` member of an error body.
pub fn error_codes() -> Object {
    one_of([
        "invalid_request",
        "unauthorized",
        "forbidden",
        "not_found",
        "conflict",
        "too_many_requests",
        "server_error",
        "temporarily_unavailable",
    ])
}
