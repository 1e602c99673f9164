//! The OpenAPI document's parts that are not an operation: its description, the security scheme, the error
//! responses every operation refers to, and the path parameters. The operations come from the handlers' `#[utoipa::path]` (see [`super::router`]).

use crate::error::ConsoleApiErrorBody;
use serde::Deserialize;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::OpenApi as Document;
use utoipa::{IntoParams, Modify, OpenApi, ToResponse};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "latchkey console API",
        version = "1",
        description = "The console's operations for scripts: projects, members, the data API switch, OAuth clients \
            of the four types, App Check and owner verification, registered APIs (resources), and the caller's own \
            API keys (list and revoke). \
            Authenticate with a developer's API key (created on the console's API keys page or with `latchkey \
            admin api-key create`): `Authorization: Bearer lk_...`. The caller acts only on the projects they are \
            a member of; any other project is 404. Errors are `{\"error\", \"error_description\", \"field\"}`. API \
            keys are listed and revoked here but never created: a key cannot mint keys, so that a leaked key \
            cannot make others that outlive its revocation. Create keys on the console's API keys page \
            (`/console/api-keys`, signed in) or with `latchkey admin api-key create`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    servers((url = "/")),
    security(("apiKey" = [])),
    modifiers(&ApiKeyScheme),
    components(
        schemas(ConsoleApiErrorBody),
        responses(BadRequest, Unauthorized, Forbidden, NotFound, Conflict, TooManyRequests)
    ),
    tags(
        (name = "projects"),
        (name = "members"),
        (name = "clients"),
        (name = "app-check"),
        (name = "resources", description = "A project's own APIs, registered as resources (RFC 8707): their scopes, \
            visibility and token format, their introspection secrets (rotated as a client's), and the protected \
            resource metadata (RFC 9728) each should serve (`docs/resources.md`)."),
        (name = "organisations", description = "Organisations: members, administrators and the API access controls \
            their administrators set (`docs/organisations.md`)."),
        (name = "users", description = "User accounts: the apps with access to an account (the caller's own, or any \
            for an operator) and the operator's changes. Operators are the accounts listed in the `operators` setting."),
        (name = "service-accounts", description = "Service accounts of a project and their keys: a content owner's \
            tools sign in as one with the JWT bearer grant (`docs/service-accounts.md`)."),
        (name = "content-owners", description = "Content owners: the channels they manage and the service accounts \
            their administrators let act for them. Operators make owners, name administrators and link channels."),
        (name = "api-keys", description = "The caller's own API keys: list and revoke. Creating a key is not an API \
            operation: a key cannot mint keys; use the console's API keys page or `latchkey admin api-key create`."),
    )
)]
pub(super) struct ApiDoc;

/// Adds the security scheme every operation but the document's own needs.
struct ApiKeyScheme;

impl Modify for ApiKeyScheme {
    fn modify(&self, doc: &mut Document) {
        let mut scheme = HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build();
        scheme.description = Some("A console API key, lk_<id>_<secret>.".into());
        doc.components.get_or_insert_with(Default::default).add_security_scheme("apiKey", SecurityScheme::Http(scheme));
    }
}

/// Adds the 429 to every operation that takes a key (each counts against its developer's rate limit,
/// `rate_limits.api_per_key`), once the router has added the operations.
pub(super) fn rate_limited(doc: &mut Document) {
    for item in doc.paths.paths.values_mut() {
        let operations = [&mut item.get, &mut item.put, &mut item.post, &mut item.delete, &mut item.patch];
        for op in operations.into_iter().flatten() {
            if op.responses.responses.contains_key("401") {
                let too_many = utoipa::openapi::Ref::from_response_name("TooManyRequests");
                op.responses.responses.insert("429".into(), too_many.into());
            }
        }
    }
}

/// The developer's API keys are over their rate limit (`too_many_requests`); `Retry-After` says when to retry.
#[derive(ToResponse)]
pub(super) struct TooManyRequests(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// The request or one of its fields breaks a rule (`invalid_request`, with `field`).
#[derive(ToResponse)]
pub(super) struct BadRequest(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// No API key, or not a valid one (`unauthorized`).
#[derive(ToResponse)]
pub(super) struct Unauthorized(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// The caller's role does not allow this (`forbidden`): members are managed, and the project and its registered APIs
/// deleted, by owners.
#[derive(ToResponse)]
pub(super) struct Forbidden(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// No such project, client or registered API, or the caller is not a member of its project; no such API key of
/// the caller (`not_found`).
#[derive(ToResponse)]
pub(super) struct NotFound(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// The change conflicts with the current state (`conflict`): already a member, the last owner, already deleted,
/// the restore window has passed.
#[derive(ToResponse)]
pub(super) struct Conflict(#[allow(dead_code)] ConsoleApiErrorBody<'static>);

/// The path of a project's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ProjectPath {
    /// The project id.
    pub project: String,
}

/// The path of a client's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ClientPath {
    /// The project id.
    pub project: String,
    /// The client_id.
    pub client: String,
}

/// The path of a client secret's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct SecretPath {
    /// The project id.
    pub project: String,
    /// The client_id.
    pub client: String,
    /// The secret's id (`cs_...`), as the client lists it.
    pub secret: String,
}

/// The path of a member's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct MemberPath {
    /// The project id.
    pub project: String,
    /// The member's user id or e-mail address.
    pub user: String,
}

/// The path of an API key's operations.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct KeyPath {
    /// The key's id: the part between `lk_` and the next `_`, as listed.
    pub id: String,
}
