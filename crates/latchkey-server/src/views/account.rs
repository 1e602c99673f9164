//! The account page (`/account`): the apps with access to the account, and its security actions.

use askama::Template;
use latchkey_admin::accounts::AppAccess;
use latchkey_core::passkey::PasskeyRecord;
use latchkey_core::time::UnixTime;

/// A day as the account page shows it: `2024-05-01`.
pub fn day(t: i64) -> String {
    super::console::date(UnixTime(t)).chars().take(10).collect()
}

/// One signed-in account in the page's switcher.
pub struct Switch<'a> {
    /// Its e-mail address.
    pub email: &'a str,
    /// Its id (the `authuser` of its page).
    pub id: &'a str,
    /// Whether it is the account shown.
    pub current: bool,
}

/// The account page.
#[derive(Template)]
#[template(path = "account.html")]
pub struct AccountPage<'a> {
    /// The account shown.
    pub email: &'a str,
    /// Its id, which every form names.
    pub user_id: &'a str,
    /// The CSRF token of its session.
    pub csrf: &'a str,
    /// Every signed-in account of the browser.
    pub accounts: Vec<Switch<'a>>,
    /// The apps with access.
    pub apps: &'a [AppAccess],
    /// The account's passkeys.
    pub passkeys: &'a [PasskeyRecord],
    /// Why passkeys are unavailable on this server, if they are.
    pub passkeys_unavailable: Option<&'a str>,
    /// Whether the account has a password (else it signs in with passkeys only).
    pub has_password: bool,
    /// When 2-step verification was turned on, while it is on.
    pub two_step_since: Option<i64>,
    /// The recovery codes left.
    pub recovery_codes_left: u32,
    /// What the last action did.
    pub notice: Option<&'a str>,
    /// Why the last action failed.
    pub error: Option<&'a str>,
}

impl AccountPage<'_> {
    /// A day, for the template.
    pub fn day(&self, t: &i64) -> String {
        day(*t)
    }

    /// A date and time, for the template.
    pub fn when(&self, t: &i64) -> String {
        super::console::date(UnixTime(*t))
    }

    /// A passkey's last use, in words.
    pub fn last_used(&self, k: &PasskeyRecord) -> String {
        k.last_used_at.map_or_else(|| "Not used yet".into(), |t| format!("Last used {}", self.when(&t.0)))
    }
}
