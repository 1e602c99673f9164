//! Integration tests: the real server over HTTPS, one module per area of `docs/api.md` and `docs/decisions.md` (and
//! per RFC).

#[path = "../common/set_receiver.rs"]
mod set_receiver;
mod support;

mod account_browser;
mod browser;
mod connections;
mod console_browser;
mod flow;
mod interop_oauth2_rs;
mod narrow_screens;
mod org_browser;
mod passkeys_browser;
mod token_exchange;

mod account_page;
mod accounts;
mod app_check;
mod app_cli;
mod authorize_endpoint;
mod cli;
mod client_lifecycle;
mod client_metadata_documents;
mod client_secrets;
mod console;
mod console_api;
mod console_resources;
mod cross_account_protection;
mod data_api;
mod event_limits;
mod login_consent;
mod metadata;
mod oidc_prompt;
mod operations;
mod organisations;
mod organisations_api;
mod passkeys;
mod quotas;
mod rate_limits;
mod refresh;
mod refusals;
mod resources;
mod resources_flow;
mod rfc7009_revoke;
mod rfc7523_jwt_bearer;
mod rfc7591_registration;
mod rfc7636_pkce;
mod rfc7662_introspection;
mod rfc8252_loopback;
mod rfc8628_device;
mod rfc8707_resource_indicators;
mod rfc9449_dpop;
mod rfc9700_rotation;
mod rfc9728_resource_metadata;
mod secrets_at_rest;
mod service_accounts;
mod service_accounts_api;
mod service_accounts_browser;
mod sign_in_policy;
mod signin_throttle;
mod store_outage;
mod time_based_access;
mod two_step;
