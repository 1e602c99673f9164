//! Integration tests: the real server over HTTPS, one module per spec section (and per RFC).

mod support;

mod flow;
mod interop_oauth2_rs;
