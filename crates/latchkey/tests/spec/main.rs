//! Integration tests: the real server over HTTPS, one module per spec section (and per RFC).

mod support;

mod flow;
mod interop_oauth2_rs;
mod token_exchange;
mod browser;

mod authorize_endpoint;
mod login_consent;
mod rfc8252_loopback;
mod rfc7636_pkce;
mod refresh;
mod rfc7009_revoke;
mod data_api;
mod metadata;
mod cli;
mod rfc9449_dpop;
mod app_cli;
mod multi_instance;
