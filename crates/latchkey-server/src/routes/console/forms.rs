//! The client form of each type: exactly its fields (`docs/decisions.md`, "Clients"), their hints, and the
//! conversion of a posted form into the operations' input.

use super::auth::Posted;
use crate::views::console::{Field, FieldKind, TypeChoice};
use latchkey_admin::{ClientEdit, NewClient};
use latchkey_core::client::{Client, ClientDetails, ClientType, FieldError};

/// The type chooser's entries, in the console's order.
pub(super) fn type_choices() -> Vec<TypeChoice> {
    ClientType::ALL
        .into_iter()
        .map(|t| TypeChoice { value: t.as_str(), label: t.label(), description: description(t) })
        .collect()
}

/// When to choose a type.
fn description(t: ClientType) -> &'static str {
    match t {
        ClientType::Desktop => "Apps on Windows, macOS and Linux that receive the response on a loopback address.",
        ClientType::Mobile => {
            "Phone and tablet apps that receive the response through a custom URI scheme (deep link)."
        }
        ClientType::UniversalDesktop => {
            "Universal desktop platform apps, identified by their store ID and package SID."
        }
        ClientType::BrowserExtension => "Browser extensions that sign in through the browser's identity API.",
        ClientType::Tv => {
            "TVs, consoles, cameras, printers and command lines without a browser: the person enters a short code on \
             another device."
        }
    }
}

/// What a type is for and how its apps receive the response.
pub(super) fn help(t: ClientType) -> &'static str {
    match t {
        ClientType::Desktop => {
            "The app listens on a loopback address: http://127.0.0.1:<any port>/<path> and http://[::1]:<any port>/<path> \
             work without registration. Register http://localhost or custom-scheme redirect URIs below if the app uses them."
        }
        ClientType::Mobile => {
            "The app receives the response through a custom URI scheme, for example com.example.app:/oauth2redirect. \
             Loopback redirects are not supported. App Check can verify that requests come from your genuine app."
        }
        ClientType::UniversalDesktop => {
            "The redirect URI has the shape <platform_scheme>://<package_sid_lowercase>; the custom URI scheme is at \
             most 39 characters. Loopback redirects are not supported."
        }
        ClientType::BrowserExtension => {
            "The browser's identity API delivers the response directly to the extension, so no redirect URI is needed. \
             Custom URI schemes are not supported."
        }
        ClientType::Tv => {
            "The device asks for a code (POST /device/code) and shows it with the address /device; the person signs \
             in on a phone or computer and enters it. No redirect URI; the client secret is optional."
        }
    }
}

/// A text field.
fn text(name: &'static str, label: &'static str, hint: &str, required: bool) -> Field {
    Field {
        name,
        label,
        hint: hint.into(),
        value: String::new(),
        error: None,
        kind: FieldKind::Text,
        required,
        readonly: false,
        inputmode: "",
    }
}

/// The fields of a type's form, empty; `editing` leaves out the App Check switch (the App Check panel manages
/// it) and freezes the bundle ID once App Check is used.
pub(super) fn fields(t: ClientType, editing: Option<&Client>) -> Vec<Field> {
    let mut f =
        vec![text("name", "Name", "Shown in the project's client list and on the consent screen users see.", true)];
    let uris_hint = match t {
        ClientType::Desktop => "Optional. One per line. Loopback IP addresses need no registration.",
        ClientType::Mobile => "One per line, for example com.example.app:/oauth2redirect.",
        ClientType::UniversalDesktop => "One per line, of the shape <platform_scheme>://<package_sid_lowercase>.",
        ClientType::BrowserExtension => "Optional. One per line, https only: the identity API needs none.",
        ClientType::Tv => "",
    };
    let uris = Field { kind: FieldKind::Lines, ..text("redirect_uris", "Authorized redirect URIs", uris_hint, false) };
    match t {
        ClientType::Mobile => {
            let frozen = editing.is_some_and(|c| c.details.app_check);
            let bundle_hint = if frozen {
                "The app's bundle identifier. It cannot be changed: App Check is used."
            } else {
                "The app's bundle identifier, for example com.example.app. It cannot be changed once App Check is used, \
                 and must not contain * when App Check is enabled."
            };
            f.push(Field { readonly: frozen, ..text("bundle_id", "Bundle ID", bundle_hint, true) });
            f.push(Field {
                inputmode: "numeric",
                ..text("store_id", "App Store ID", "Optional. Digits only: the last part of the app-store URL.", false)
            });
            f.push(text("team_id", "Team ID", "Optional; required when App Check is enabled.", false));
            if editing.is_none() {
                f.push(Field {
                    kind: FieldKind::Checkbox,
                    ..text(
                        "app_check",
                        "Enable App Check",
                        "Counts token requests by whether they come from your genuine app; needs a team ID and a \
                         bundle ID without *. You can enforce it later.",
                        false,
                    )
                });
            }
            f.push(uris);
        }
        ClientType::UniversalDesktop => {
            f.push(text("uwp_store_id", "Store ID", "Exactly 12 characters, from the app's store listing.", true));
            f.push(text(
                "package_sid",
                "Package SID",
                "Optional. The app's package security identifier, in lower case: it forms the redirect URI.",
                false,
            ));
            f.push(uris);
        }
        ClientType::BrowserExtension => {
            f.push(text(
                "extension_item_id",
                "Item ID",
                "The extension's item ID in the extension store; owner verification looks its listing up.",
                true,
            ));
            f.push(uris);
        }
        ClientType::Desktop => f.push(uris),
        // The device flow has no redirect.
        ClientType::Tv => {}
    }
    f
}

/// The lines of a textarea (redirect URIs, an API's scopes): one per line, trimmed, blank lines left out.
pub(super) fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
}

/// Fills the fields with the posted values and puts each error next to its field.
pub(super) fn refill(fields: &mut [Field], form: &Posted, errors: &[FieldError]) {
    for f in fields.iter_mut() {
        if f.readonly {
            // Keeps the stored value.
        } else if f.kind == FieldKind::Checkbox {
            f.value = if form.get(f.name).is_empty() { String::new() } else { "on".into() };
        } else {
            f.value = form.get(f.name).to_owned();
        }
        let own = |e: &&FieldError| e.field == f.name || (f.name == "redirect_uris" && e.field == "redirect_uri");
        let messages: Vec<&str> = errors.iter().filter(own).map(|e| e.message.as_str()).collect();
        f.error = (!messages.is_empty()).then(|| messages.join(" "));
    }
    // An error of a field the form does not show (the App Check switch's rules) goes to the first field.
    let shown = |e: &FieldError| {
        fields.iter().any(|f| f.name == e.field || (f.name == "redirect_uris" && e.field == "redirect_uri"))
    };
    let orphans: Vec<&str> = errors.iter().filter(|e| !shown(e)).map(|e| e.message.as_str()).collect();
    if let (false, Some(first)) = (orphans.is_empty(), fields.first_mut()) {
        let text = orphans.join(" ");
        first.error = Some(first.error.take().map_or(text.clone(), |e| format!("{e} {text}")));
    }
}

/// Fills the fields with a stored client's values.
pub(super) fn stored(fields: &mut [Field], c: &Client) {
    let d = &c.details;
    for f in fields.iter_mut() {
        f.value = match f.name {
            "name" => c.name.clone(),
            "redirect_uris" => c.redirect_uris.join("\n"),
            "bundle_id" => d.bundle_id.clone().unwrap_or_default(),
            "store_id" => d.store_id.clone().unwrap_or_default(),
            "team_id" => d.team_id.clone().unwrap_or_default(),
            "uwp_store_id" => d.uwp_store_id.clone().unwrap_or_default(),
            "package_sid" => d.package_sid.clone().unwrap_or_default(),
            "extension_item_id" => d.extension_item_id.clone().unwrap_or_default(),
            _ => String::new(),
        };
    }
}

/// A value of the form, `None` when empty.
fn opt(form: &Posted, name: &str) -> Option<String> {
    Some(form.get(name).trim().to_owned()).filter(|v| !v.is_empty())
}

/// The new client a create form describes. The form shows only its type's fields; a field of another type that
/// is posted anyway is passed on, for `admin::client_create` to refuse as the CLI and the JSON API do.
pub(super) fn new_client(form: &Posted, project_id: &str, t: ClientType) -> NewClient {
    let details = ClientDetails {
        bundle_id: opt(form, "bundle_id"),
        store_id: opt(form, "store_id"),
        team_id: opt(form, "team_id"),
        app_check: !form.get("app_check").is_empty(),
        uwp_store_id: opt(form, "uwp_store_id"),
        package_sid: opt(form, "package_sid"),
        extension_item_id: opt(form, "extension_item_id"),
    };
    NewClient {
        project_id: project_id.into(),
        client_type: t,
        name: form.get("name").to_owned(),
        redirect_uris: lines(form.get("redirect_uris")),
        details,
    }
}

/// The edit an edit form describes: every field of the type (an empty one clears it). A field of another type,
/// which the form does not show, is passed on when posted, for `admin::client_update` to refuse as the CLI and
/// the JSON API do.
pub(super) fn edit(form: &Posted, c: &Client) -> ClientEdit {
    let t = c.client_type;
    let field = |name: &str, of: ClientType| {
        if t == of {
            Some(form.get(name).trim().to_owned())
        } else {
            opt(form, name)
        }
    };
    ClientEdit {
        name: Some(form.get("name").to_owned()),
        redirect_uris: Some(lines(form.get("redirect_uris"))),
        // A frozen bundle ID is shown read-only: it is not part of the form's fields to change.
        bundle_id: if t == ClientType::Mobile && c.details.app_check {
            None
        } else {
            field("bundle_id", ClientType::Mobile)
        },
        store_id: field("store_id", ClientType::Mobile),
        team_id: field("team_id", ClientType::Mobile),
        uwp_store_id: field("uwp_store_id", ClientType::UniversalDesktop),
        package_sid: field("package_sid", ClientType::UniversalDesktop),
        extension_item_id: field("extension_item_id", ClientType::BrowserExtension),
    }
}
