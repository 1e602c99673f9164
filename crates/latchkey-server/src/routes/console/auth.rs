//! Who is asking: a signed-in developer (pages; sent to the sign-in page and back when not signed in), with the
//! CSRF check of every posted form.

use crate::extract::{self, Pairs};
use crate::session;
use crate::state::AppState;
use crate::views::console::{Layout, MessagePage};
use crate::views::page;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{Method, StatusCode};
use axum::response::Response;
use latchkey_admin::Actor;
use latchkey_store::{Session, User};

/// A signed-in developer.
pub struct Developer {
    /// The account.
    pub user: User,
    /// The session.
    pub session: Session,
    /// The page header (e-mail address, CSRF token).
    pub layout: Layout,
}

impl Developer {
    /// The developer as an actor of administrative operations ([`Actor`]: their project roles decide).
    pub fn actor(&self) -> Actor {
        Actor::Developer(self.user.clone())
    }
}

/// Where the sign-in page sends a developer back to: this page, or the console's start for a form post.
fn sign_in_redirect(parts: &Parts) -> Response {
    let back = match (&parts.method, parts.uri.path_and_query()) {
        (&Method::GET, Some(pq)) => pq.as_str().to_owned(),
        _ => "/console".to_owned(),
    };
    let target: String = form_urlencoded::Serializer::new(String::new()).append_pair("continue", &back).finish();
    super::see_other(&format!("/signin?{target}"))
}

impl FromRequestParts<AppState> for Developer {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        match session::current(state, &parts.headers).await {
            Ok(Some(s)) if s.user.disabled_at.is_none() => {
                let csrf = session::csrf_token(state, &s.session);
                let layout = Layout { email: s.user.email.clone(), csrf };
                Ok(Self { user: s.user, session: s.session, layout })
            }
            Ok(_) => Err(sign_in_redirect(parts)),
            Err(e) => {
                let e = crate::error::store_error(e);
                Err(crate::views::error_page(StatusCode::SERVICE_UNAVAILABLE, &e, None))
            }
        }
    }
}

/// A form posted by a signed-in developer, its CSRF token checked.
pub struct Posted {
    /// The developer.
    pub dev: Developer,
    /// The form's fields.
    pub fields: Pairs,
}

impl Posted {
    /// A field's value (the first, trimmed of nothing), or "".
    pub fn get(&self, name: &str) -> &str {
        self.fields.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

impl FromRequest<AppState> for Posted {
    type Rejection = Response;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Response> {
        let (mut parts, body) = req.into_parts();
        let dev = Developer::from_request_parts(&mut parts, state).await?;
        let expired = |dev: &Developer, message: &str| {
            let page_ = MessagePage {
                layout: dev.layout.clone(),
                heading: "This page has expired".into(),
                message: message.into(),
            };
            page(StatusCode::FORBIDDEN, &page_)
        };
        let bytes = match axum::body::to_bytes(body, 64 * 1024).await {
            Ok(b) => b,
            Err(_) => return Err(expired(&dev, "The form could not be read. Go back, reload the page and try again.")),
        };
        let fields = match extract::form(&parts.headers, &bytes) {
            Ok(f) => f,
            Err(e) => return Err(expired(&dev, &e.description)),
        };
        let token = fields.iter().find(|(k, _)| k == "csrf").map_or("", |(_, v)| v.as_str());
        if !session::csrf_ok(state, &dev.session, token) {
            return Err(expired(
                &dev,
                "The form's security token is missing or out of date. Go back, reload the page and try again.",
            ));
        }
        Ok(Self { dev, fields })
    }
}
