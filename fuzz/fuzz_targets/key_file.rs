//! A service-account key file (JSON, with a PKCS#8 PEM private key) as the SDK reads it: refused with an error,
//! never a panic.
#![no_main]

use latchkey_client::{Error, HttpClient, HttpRequest, HttpResponse, ServiceAccountCredentials};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

/// No network: reading a key file sends nothing.
struct Offline;

#[async_trait::async_trait]
impl HttpClient for Offline {
    async fn send(&self, _request: HttpRequest) -> Result<HttpResponse, Error> {
        Err(Error::Storage("offline".into()))
    }
}

fuzz_target!(|json: &str| {
    let _ = ServiceAccountCredentials::from_json(json, &["scope"], Arc::new(Offline));
});
