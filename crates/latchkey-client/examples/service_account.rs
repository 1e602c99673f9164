//! A content owner's server-side tool: loads a service account's key file, keeps an access token with
//! [`ServiceAccountCredentials`] (the JWT bearer grant, RFC 7523), and lists the channels the owner manages.
//!
//! ```text
//! latchkey admin service-account key create --account uploader@proj.iam.latchkey.dev --out key.json
//! cargo run -p latchkey-client --example service_account -- \
//!     --key-file key.json --owner co-123456789012 --ca-file latchkey-data/tls/cert.pem
//! ```
//!
//! The data API's address is the key file's `token_uri` without its path; `--scope` picks another scope than
//! `https://latchkey.dev/auth/readonly`.

use latchkey_client::{HttpClient, HttpRequest, ReqwestHttp, ServiceAccountCredentials};
use std::sync::Arc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned();
    let key_file = arg("--key-file").ok_or("--key-file FILE is required")?;
    let owner = arg("--owner").ok_or("--owner CONTENT_OWNER_ID is required")?;
    let scope = arg("--scope").unwrap_or_else(|| "https://latchkey.dev/auth/readonly".into());
    let http = Arc::new(ReqwestHttp::with_ca_file(arg("--ca-file").as_deref().map(std::path::Path::new))?);
    let credentials = ServiceAccountCredentials::from_file(key_file.as_ref(), &[&scope], http.clone())?;

    let token = credentials.access_token().await?;
    let key: serde_json::Value = serde_json::from_slice(&std::fs::read(&key_file)?)?;
    let token_uri = key["token_uri"].as_str().ok_or("the key file has no token_uri")?;
    let base = token_uri.strip_suffix("/token").unwrap_or(token_uri);
    let url =
        format!("{base}/video/v3/channels?part=snippet&managedByMe=true&maxResults=50&onBehalfOfContentOwner={owner}");
    let headers = vec![("authorization".to_owned(), format!("Bearer {token}"))];
    let response = http.send(HttpRequest { method: "GET", url, headers, body: Vec::new() }).await?;
    println!("{} as {}: HTTP {}", owner, credentials.email(), response.status);
    println!("{}", String::from_utf8_lossy(&response.body));
    Ok(())
}
