//! What an app's developer reads on the error page when a redirect URI is refused: the forms of URI the
//! client accepts and a hint for the likely cause. Only the client's own data: the page is about the `client_id`
//! the request named.

use super::{Loopback, OOB};
use crate::client::{scheme_of, Client, ClientType};

/// The forms of redirect URI `client` accepts, as a developer would write them.
pub fn accepted_forms(client: &Client) -> Vec<String> {
    let mut forms = Vec::new();
    if client.client_type == ClientType::Desktop {
        forms.push("http://127.0.0.1:<any port>/<any path>".to_owned());
        forms.push("http://[::1]:<any port>/<any path>".to_owned());
    }
    if client.client_type == ClientType::UniversalDesktop {
        if let Some(sid) = client.details.package_sid.as_deref().filter(|s| !s.is_empty()) {
            forms.push(format!("<platform scheme>://{sid}"));
        }
    }
    for uri in &client.redirect_uris {
        let form = match Loopback::parse(uri) {
            Some(l) if client.client_type == ClientType::Desktop && l.port.is_some() => {
                format!("http://{}:<any port>{}", l.host, l.rest)
            }
            _ => uri.clone(),
        };
        if !forms.contains(&form) {
            forms.push(form);
        }
    }
    forms
}

/// A hint for why `uri` was refused for `client` (`None` for an unknown client), when one applies.
pub fn hint(client: Option<&Client>, uri: Option<&str>) -> Option<&'static str> {
    let Some(client) = client else {
        return Some(
            "No client has this client_id: copy it whole from the console's client page (it starts with lkapp-).",
        );
    };
    let uri = uri.filter(|u| !u.is_empty())?;
    if OOB.contains(&uri) {
        return Some("The out-of-band flow is gone: desktop apps redirect to a loopback address, mobile apps to their custom scheme.");
    }
    let loopback = Loopback::parse(uri);
    match client.client_type {
        ClientType::Tv => Some("TVs and Limited Input devices use the device flow: POST /device/code, then the person enters the code at /device."),
        ClientType::Desktop => match loopback {
            None if scheme_of(uri).is_some_and(|s| s != "http" && s != "https") => {
                Some("Desktop clients use a loopback redirect: http://127.0.0.1:PORT/ or http://[::1]:PORT/, any port. A custom scheme is for mobile clients.")
            }
            Some(l) if l.host == "localhost" => Some(
                "localhost is accepted only when a localhost redirect with this path is registered (then on any port): use http://127.0.0.1:PORT/ (any port is accepted) or register this URI.",
            ),
            _ => Some("Desktop clients use a loopback redirect: http://127.0.0.1:PORT/ or http://[::1]:PORT/, any port."),
        },
        _ if loopback.is_some() => Some(
            "Loopback redirects are for desktop clients: this client redirects to a URI registered for it (its custom scheme).",
        ),
        ClientType::UniversalDesktop => {
            Some("Universal desktop platform clients redirect to <platform scheme>://<package SID, lower case>.")
        }
        ClientType::Mobile | ClientType::BrowserExtension => Some(
            "The redirect URI must be one registered for this client, character for character (scheme, path and trailing slash).",
        ),
    }
}
