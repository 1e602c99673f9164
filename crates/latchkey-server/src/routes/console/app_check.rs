//! A client's page with its App Check panel (mobile-platform clients: the state table of `docs/decisions.md`, "App
//! Check", with its confirmations and propagation delay, a debug secret, metrics per category and hour) and its
//! ownership panel (browser-extension clients: Verify Ownership).

use super::auth::{Developer, Posted};
use super::projects::row;
use super::{access_client, see_other};
use crate::error::admin_status;
use crate::state::AppState;
use crate::views::console::{
    date, AppCheckView, Bar, ClientPage, ClientView, ConfirmPage, Detail, MetricRow, OwnershipView, SecretPage, Shown,
};
use crate::views::page;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use latchkey_admin::results::HourCount;
use latchkey_admin::{self as admin, Access, AdminError, ClientRef, StoreDirectory};
use latchkey_core::app_check::{self, AppCheckAction, AppCheckError, AppCheckState, Category};
use latchkey_core::client::{Client, ClientType};
use latchkey_core::time::UnixTime;

/// Width of the metrics bars, in pixels.
const BAR_WIDTH: u64 = 200;

fn state_label(s: AppCheckState) -> &'static str {
    match s {
        AppCheckState::Disabled => "Disabled",
        AppCheckState::Enabled => "Enabled, not enforced",
        AppCheckState::Enforced => "Enforced",
    }
}

fn category_label(c: Category) -> &'static str {
    match c {
        Category::Verified => "Verified",
        Category::UnverifiedOutdatedClient => "Unverified: likely outdated client",
        Category::UnverifiedUnknownOrigin => "Unverified: unknown origin",
        Category::UnverifiedInvalid => "Unverified: invalid",
    }
}

/// The propagation delay as people read it.
fn delay(secs: i64) -> String {
    match secs {
        s if s <= 0 => "a moment".into(),
        s if s % 60 == 0 => format!("up to {} minute{}", s / 60, if s == 60 { "" } else { "s" }),
        s => format!("up to {s} seconds"),
    }
}

fn details(c: &Client) -> Vec<Detail> {
    let d = &c.details;
    let shown = |v: &Option<String>| v.clone().unwrap_or_else(|| "Not set".into());
    match c.client_type {
        ClientType::Mobile => vec![
            Detail { label: "Bundle ID", value: shown(&d.bundle_id) },
            Detail { label: "App Store ID", value: shown(&d.store_id) },
            Detail { label: "Team ID", value: shown(&d.team_id) },
        ],
        ClientType::UniversalDesktop => vec![
            Detail { label: "Store ID", value: shown(&d.uwp_store_id) },
            Detail { label: "Package SID", value: shown(&d.package_sid) },
        ],
        ClientType::BrowserExtension => vec![Detail { label: "Item ID", value: shown(&d.extension_item_id) }],
        ClientType::Desktop => {
            vec![Detail { label: "Loopback redirects", value: "Accepted on any port, no registration needed".into() }]
        }
        ClientType::Tv => {
            vec![Detail { label: "Sign-in", value: "The device flow (RFC 8628): no redirect URI".into() }]
        }
    }
}

async fn app_check_view(
    state: &AppState,
    dev: &Developer,
    c: &Client,
    now: UnixTime,
) -> Result<AppCheckView, AdminError> {
    let propagation = state.config.app_check_propagation_secs;
    let pending = c.app_check.pending.filter(|(_, at)| *at > now).map(|(s, at)| {
        format!(
            "Changing to “{}” at {} (App Check changes take {} to take effect).",
            state_label(s),
            date(at),
            delay(propagation)
        )
    });
    let target = c.app_check.target();
    let enable_blocker = match app_check::apply(c, c.app_check, AppCheckAction::Enable, false, now, 0) {
        Err(e @ (AppCheckError::NeedsTeamId | AppCheckError::BadBundleId)) => {
            Some(format!("To enable App Check, {e}: edit the client first."))
        }
        _ => None,
    };
    let m = admin::client_app_check_metrics(
        &*state.store,
        &dev.actor(),
        ClientRef::within(&c.project_id, &c.client_id),
        24,
        now,
    )
    .await?;
    let mut hours: Vec<(i64, Vec<u64>)> = Vec::new();
    for &HourCount { hour, category: cat, count: n } in &m.hourly {
        if hours.last().is_none_or(|(last, _)| *last != hour) {
            hours.push((hour, vec![0; Category::ALL.len()]));
        }
        if let (Some((_, counts)), Some(i)) = (hours.last_mut(), Category::ALL.iter().position(|c| *c == cat)) {
            counts[i] += n;
        }
    }
    let max = hours.iter().map(|(_, c)| c.iter().sum::<u64>()).max().unwrap_or(0).max(1);
    let metrics = hours
        .into_iter()
        .rev()
        .map(|(hour, counts)| {
            let mut x = 0u64;
            let bars = counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| {
                    let width = (n * BAR_WIDTH / max).max(1);
                    let bar = Bar { class: ["s1", "s2", "s3", "s4"][i], x: x as u32, width: width as u32 };
                    x += width;
                    bar
                })
                .collect();
            MetricRow { hour: date(UnixTime(hour)), counts, bars }
        })
        .collect();
    let totals = Category::ALL.iter().map(|c| m.totals.get(c.as_str()).copied().unwrap_or(0)).collect();
    Ok(AppCheckView {
        state: c.app_check.effective(now).as_str(),
        state_label: state_label(c.app_check.effective(now)),
        pending,
        target: target.as_str(),
        enable_blocker,
        propagation: delay(propagation),
        categories: Category::ALL.iter().map(|c| category_label(*c)).collect(),
        metrics,
        totals,
    })
}

/// Renders a client's page.
pub(super) async fn client_page(
    state: &AppState,
    dev: Developer,
    access: &Access,
    c: &Client,
    status: StatusCode,
    notice: Option<String>,
    error: Option<String>,
) -> Response {
    let now = state.clock.now();
    let app_check = match c.client_type {
        ClientType::Mobile => match app_check_view(state, &dev, c, now).await {
            Ok(v) => Some(v),
            Err(e) => return dev.failure(&e),
        },
        _ => None,
    };
    let ownership = match (c.client_type, &c.details.extension_item_id) {
        (ClientType::BrowserExtension, Some(item)) => {
            Some(OwnershipView { item_id: item.clone(), verified: c.ownership_verified_at.map(date) })
        }
        _ => None,
    };
    let action = format!("/console/projects/{}/clients/{}/secrets", access.project.id, c.client_id);
    let secrets = crate::views::console::SecretsPanel::of(&c.secrets, action, c.deleted_at.is_none());
    let client = ClientView {
        id: c.client_id.clone(),
        name: c.name.clone(),
        type_label: c.client_type.label(),
        created: date(c.created_at),
        last_used: c.last_used_at.map_or_else(|| "Never".into(), date),
        deleted: c.deleted_at.map(date),
        redirect_uris: c.redirect_uris.clone(),
        details: details(c),
        secrets,
    };
    page(status, &ClientPage { layout: dev.layout, project: row(access), notice, error, client, app_check, ownership })
}

/// The client's page again with the error of an action on it (App Check refused, ownership not verified).
pub(super) async fn refused(state: &AppState, dev: Developer, access: &Access, c: &Client, e: AdminError) -> Response {
    let (status, _) = admin_status(&e);
    if status == StatusCode::NOT_FOUND || status.is_server_error() {
        return dev.failure(&e);
    }
    let message = crate::error::admin_message(&e);
    client_page(state, dev, access, c, status, None, Some(message)).await
}

fn parse_action(name: &str) -> Option<AppCheckAction> {
    match name {
        "enable" => Some(AppCheckAction::Enable),
        "enforce" => Some(AppCheckAction::Enforce),
        "unenforce" => Some(AppCheckAction::Unenforce),
        "disable" => Some(AppCheckAction::Disable),
        _ => None,
    }
}

/// `GET .../app-check/{enforce|unenforce}`: the confirmation enforcing and unenforcing ask for.
pub async fn confirm_get(
    State(state): State<AppState>,
    dev: Developer,
    Path((project, client, action)): Path<(String, String, String)>,
) -> Response {
    let (_, c) = or_page!(access_client(&state, &dev, &project, &client).await);
    let when = delay(state.config.app_check_propagation_secs);
    let (heading, paragraphs, label) = match action.as_str() {
        "enforce" => (
            format!("Enforce App Check for {}?", c.name),
            vec![
                "Once enforced, only token requests with a valid App Check token succeed: all unverified requests \
                 are rejected, including those of older versions of your app that do not send App Check tokens."
                    .to_owned(),
                "Check the metrics first: enforce when nearly all requests are verified.".into(),
                format!("The change takes effect after {when}."),
            ],
            "Enforce App Check",
        ),
        "unenforce" => (
            format!("Stop enforcing App Check for {}?", c.name),
            vec![
                "All requests are allowed again, verified or not; they are still counted.".to_owned(),
                format!("The change takes effect after {when}."),
            ],
            "Unenforce App Check",
        ),
        _ => return dev.failure(&AdminError::NotFound(format!("page {action}"))),
    };
    let view = ConfirmPage {
        layout: dev.layout,
        heading,
        paragraphs,
        action: format!("/console/projects/{project}/clients/{client}/app-check"),
        hidden: vec![("action", action.clone()), ("confirm", "yes".into())],
        confirm_label: label.into(),
        cancel_href: format!("/console/projects/{project}/clients/{client}#app-check"),
    };
    page(StatusCode::OK, &view)
}

/// `POST .../app-check`: `action=enable|enforce|unenforce|disable`, `confirm=yes` for enforce and unenforce.
pub async fn app_check_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    let Some(action) = parse_action(form.get("action")) else {
        let e = AdminError::Invalid("choose enable, enforce, unenforce or disable".into());
        return refused(&state, form.dev, &access, &c, e).await;
    };
    let confirmed = form.get("confirm") == "yes";
    let delay = state.config.app_check_propagation_secs;
    match admin::client_app_check(
        &*state.store,
        &form.dev.actor(),
        ClientRef::within(&project, &c.client_id),
        action,
        confirmed,
        delay,
        state.clock.now(),
    )
    .await
    {
        Ok(_) => see_other(&format!(
            "/console/projects/{project}/clients/{client}?done=app-check-{}#app-check",
            form.get("action")
        )),
        Err(e) => {
            let e = match e {
                AdminError::Invalid(m) => {
                    AdminError::Invalid(m.trim_start_matches(&format!("client {}: ", c.client_id)).to_owned())
                }
                other => other,
            };
            refused(&state, form.dev, &access, &c, e).await
        }
    }
}

/// `POST .../app-check/debug-secret`: registers a debug secret and shows it, this once.
pub async fn debug_secret_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    match admin::client_app_check_debug_secret(
        &*state.store,
        &form.dev.actor(),
        ClientRef::within(&project, &c.client_id),
    )
    .await
    {
        Ok(v) => {
            let view = SecretPage {
                layout: form.dev.layout,
                heading: format!("Debug secret for {}", c.name),
                shown: vec![Shown { label: "Debug secret", value: v.debug_secret, id: "debug-secret" }],
                note: format!(
                    "It is shown only this once and replaces any earlier debug secret. Builds of your app that hold \
                     it get App Check tokens from the debug provider (POST {}); keep it out of release builds.",
                    crate::routes::APP_CHECK_DEBUG_PATH
                ),
                continue_href: format!("/console/projects/{project}/clients/{client}#app-check"),
                continue_label: "Back to the client".into(),
                download: None,
            };
            page(StatusCode::OK, &view)
        }
        Err(e) => refused(&state, form.dev, &access, &c, e).await,
    }
}

/// `POST .../verify-ownership`: Verify Ownership (`docs/decisions.md`, "Clients"), for the signed-in developer.
pub async fn verify_ownership_post(
    State(state): State<AppState>,
    Path((project, client)): Path<(String, String)>,
    form: Posted,
) -> Response {
    let (access, c) = or_page!(access_client(&state, &form.dev, &project, &client).await);
    let store = &*state.store;
    let email = form.dev.user.email.clone();
    match admin::verify_ownership(
        store,
        &form.dev.actor(),
        &StoreDirectory(store),
        ClientRef::within(&project, &c.client_id),
        &email,
        state.clock.now(),
    )
    .await
    {
        Ok(_) => see_other(&format!("/console/projects/{project}/clients/{client}?done=ownership-verified#ownership")),
        Err(e) => refused(&state, form.dev, &access, &c, e).await,
    }
}
