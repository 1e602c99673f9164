//! One keep-alive connection with a signed-in browser session, and the protocol steps it takes: an authorization
//! code through the real pages, the code exchange, refresh.

use crate::html::Page;
use crate::setup::Target;
use crate::TargetKind;
use anyhow::{bail, Context};
use latchkey_admin::clock::{OsRandom, SystemClock};
use latchkey_client::DpopKey;
use latchkey_core::time::Clock;
use reqwest::redirect::Policy;
use reqwest::Url;
use std::sync::Arc;

const REDIRECT_URI: &str = "http://127.0.0.1:8765/callback";
const CHROME_UA: &str =
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Safari/537.36";

/// One keep-alive connection (HTTP/1.1, one socket) with a signed-in browser session.
#[derive(Clone)]
pub struct Conn {
    /// The connection's client, with its cookies.
    pub http: reqwest::Client,
    /// Where it sends requests and as whom.
    pub target: Arc<Target>,
    /// Its place among the connections, which names its user ([`Target::email`]).
    pub index: usize,
}

/// Opens `n` connections and signs each one in.
pub async fn connect(target: &Arc<Target>, n: usize) -> anyhow::Result<Vec<Conn>> {
    let mut set = tokio::task::JoinSet::new();
    for index in 0..n {
        let http = reqwest::Client::builder()
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&target.ca)?)
            .redirect(Policy::none())
            .cookie_store(true)
            .http1_only()
            .pool_max_idle_per_host(1)
            .user_agent(CHROME_UA)
            .build()?;
        let conn = Conn { http, target: target.clone(), index };
        set.spawn(async move {
            if conn.target.kind != TargetKind::Trivial {
                conn.code(&Pkce::new()).await?; // signs in once; the session cookie stays
            }
            Ok::<_, anyhow::Error>(conn)
        });
    }
    let mut conns = Vec::with_capacity(n);
    while let Some(r) = set.join_next().await {
        conns.push(r??);
    }
    Ok(conns)
}

/// A PKCE verifier and its S256 challenge.
pub struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    /// A new random pair.
    pub fn new() -> Self {
        let verifier = latchkey_core::secret::random_b64(32, &OsRandom);
        let challenge = latchkey_core::pkce::s256_challenge(&verifier);
        Self { verifier, challenge }
    }
}

/// A prepared refresh token (and, for DPoP, its key and the last nonce).
pub struct Grant {
    /// The access token.
    pub access: String,
    /// The refresh token.
    pub refresh: String,
    dpop: Option<Dpop>,
}

/// A DPoP key and the server's last nonce.
pub struct Dpop {
    key: DpopKey,
    nonce: Option<String>,
}

/// A token endpoint's answer: its status and body.
type Answer = anyhow::Result<(reqwest::StatusCode, bytes::Bytes)>;

impl Conn {
    /// Sends a request; its status, `Location` and body.
    pub async fn page(&self, r: reqwest::RequestBuilder) -> anyhow::Result<(u16, Option<String>, String)> {
        let r = r.send().await?;
        let status = r.status().as_u16();
        let location = r.headers().get("location").and_then(|v| v.to_str().ok()).map(str::to_owned);
        Ok((status, location, r.text().await?))
    }

    /// An authorization code through the real pages, as a browser goes: follows redirects and submits each form
    /// (sign-in the first time only, then consent) with its hidden inputs and what the user fills in, until the
    /// server redirects to the app.
    pub async fn code(&self, pkce: &Pkce) -> anyhow::Result<String> {
        let t = &self.target;
        // node-oidc-provider's refresh tokens (offline_access) are only issued with an explicit consent prompt.
        let prompt = (t.kind == TargetKind::OidcProvider).then_some(("prompt", "consent"));
        let params = [("client_id", t.client_id.as_str()), ("redirect_uri", REDIRECT_URI), ("response_type", "code")]
            .into_iter()
            .chain([("scope", t.endpoints.scope), ("code_challenge", &pkce.challenge), ("state", "bench")])
            .chain([("code_challenge_method", "S256")].into_iter().chain(prompt));
        let mut url = Url::parse_with_params(&t.endpoints.authorize, params)?;
        let (mut next, mut signed_in) = (self.http.get(url.as_str()), false);
        for _ in 0..12 {
            let (status, location, body) = self.page(next).await?;
            if let Some(loc) = location {
                if loc.starts_with(REDIRECT_URI) {
                    return code_of(&loc);
                }
                url = url.join(&loc)?;
                next = self.http.get(url.as_str());
                continue;
            }
            let page = Page::parse(&body);
            let action =
                page.action.as_deref().with_context(|| format!("no form and no redirect ({status}): {body}"))?;
            let mut form = page.hidden();
            let fill = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            form.extend::<Vec<_>>(match (page.asks_password(), t.kind) {
                (true, _) if signed_in => bail!("sign-in refused ({status}): {body}"),
                (true, TargetKind::Latchkey) => fill(&[("email", t.email(self.index)), ("password", &t.password)]),
                (true, TargetKind::OidcProvider) => fill(&[("login", t.email(self.index)), ("password", &t.password)]),
                (false, TargetKind::Latchkey) => fill(&[("scope", t.endpoints.scope), ("decision", "allow")]),
                (false, TargetKind::OidcProvider) => vec![],
                (_, TargetKind::Trivial) => bail!("the trivial server has no pages"),
            });
            signed_in |= page.asks_password();
            url = url.join(action)?;
            next = self.http.post(url.as_str()).form(&form);
        }
        bail!("no code after 12 pages")
    }

    /// A token request; with DPoP, a proof with the last nonce, and one retry when the server asks for a new
    /// nonce (`use_dpop_nonce`, counted in `retries`). Its status and body.
    async fn token(&self, form: &[(&str, &str)], mut dpop: Option<&mut Dpop>, retries: &mut u64) -> Answer {
        let url = &self.target.endpoints.token;
        for attempt in 0..2 {
            let mut req = self.http.post(url).form(form);
            if let Some(Dpop { key, nonce }) = &dpop {
                let jti = latchkey_core::secret::random_b64(16, &OsRandom);
                req = req.header("DPoP", key.proof("POST", url, &jti, nonce.as_deref(), SystemClock.now().0)?);
            }
            let r = req.send().await?;
            let new_nonce = r.headers().get("dpop-nonce").and_then(|v| v.to_str().ok()).map(str::to_owned);
            let (status, body) = (r.status(), r.bytes().await?);
            if let (Some(d), Some(n)) = (&mut dpop, new_nonce) {
                d.nonce = Some(n);
            }
            if attempt == 0
                && dpop.is_some()
                && !status.is_success()
                && body.windows(14).any(|w| w == b"use_dpop_nonce")
            {
                *retries += 1;
                continue;
            }
            return Ok((status, body));
        }
        bail!("the server asked for a DPoP nonce twice")
    }

    /// Exchanges a code; with `dpop`, binds the refresh token to the key.
    pub async fn exchange(&self, code: &str, pkce: &Pkce, dpop: Option<&mut Dpop>) -> Answer {
        let form = [
            ("grant_type", "authorization_code"),
            ("client_id", &self.target.client_id),
            ("code", code),
            ("code_verifier", &pkce.verifier),
            ("redirect_uri", REDIRECT_URI),
        ];
        self.token(&form, dpop, &mut 0).await
    }

    /// A new grant through the pages and the code exchange; with `dpop`, bound to a new key.
    pub async fn grant(&self, dpop: bool) -> anyhow::Result<Grant> {
        let pkce = Pkce::new();
        let code = self.code(&pkce).await?;
        let mut dpop = if dpop { Some(Dpop { key: new_dpop_key()?, nonce: None }) } else { None };
        let (status, body) = self.exchange(&code, &pkce, dpop.as_mut()).await?;
        let body: serde_json::Value = serde_json::from_slice(&body)?;
        if !status.is_success() {
            bail!("code exchange failed ({status}): {body}");
        }
        let text = |k: &str| body[k].as_str().map(str::to_owned).with_context(|| format!("no {k}: {body}"));
        Ok(Grant { access: text("access_token")?, refresh: text("refresh_token")?, dpop })
    }

    /// A grant for `--target trivial`, which takes any token: made up, with a new DPoP key for `dpop`.
    pub fn made_up_grant(dpop: bool) -> anyhow::Result<Grant> {
        let token = |prefix: &str| format!("{prefix}{}", latchkey_core::secret::random_b64(60, &OsRandom));
        let dpop = if dpop { Some(Dpop { key: new_dpop_key()?, nonce: None }) } else { None };
        Ok(Grant { access: token("ya29."), refresh: token("1//"), dpop })
    }

    /// One refresh; whether it succeeded.
    pub async fn refresh(&self, grant: &mut Grant, retries: &mut u64) -> anyhow::Result<bool> {
        let form =
            [("grant_type", "refresh_token"), ("client_id", &self.target.client_id), ("refresh_token", &grant.refresh)];
        Ok(self.token(&form, grant.dpop.as_mut(), retries).await?.0.is_success())
    }
}

/// A new P-256 DPoP key, kept in memory only.
fn new_dpop_key() -> anyhow::Result<DpopKey> {
    let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
    let pkcs8 = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &ring::rand::SystemRandom::new())
        .map_err(|_| anyhow::anyhow!("cannot generate a DPoP key"))?;
    Ok(DpopKey::from_pkcs8(pkcs8.as_ref())?)
}

/// The code in the redirect to the app.
fn code_of(location: &str) -> anyhow::Result<String> {
    let loc = Url::parse(location)?;
    let code = loc.query_pairs().find(|(k, _)| k == "code").map(|(_, v)| v.into_owned());
    code.with_context(|| format!("no code in the redirect: {loc}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_is_taken_from_the_redirect_to_the_app() {
        let code = code_of("http://127.0.0.1:8765/callback?code=abc%2Fd&state=bench").expect("code");
        assert_eq!(code, "abc/d");
        assert!(code_of("http://127.0.0.1:8765/callback?error=access_denied").is_err());
    }
}
