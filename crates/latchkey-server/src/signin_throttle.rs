//! The sign-in throttle: how many passwords may be checked for an account, for an account from one address, and
//! from one address, in a window.
//!
//! An attempt is counted under each of its three keys before its password is checked, in one write that gives it
//! its number in each key's window ([`latchkey_store::Users::record_login_attempts`]). Concurrent guesses for one
//! account therefore each take a number, and no more than the limit are ever checked, however many arrive at once.
//! Past a limit the answer is 429 with `Retry-After` and no check; a window that reached its limit is followed by
//! one twice as long (up to a day). An attempt that succeeds, or that the password gate refused before checking
//! it, is taken back. The keys:
//! - the account (`login:{e-mail}`): `login_account_max_failures` checks, from any addresses;
//! - the account from one address (`login:{e-mail}|{address}`): `login_max_failures`;
//! - the address (`login-ip:{address}`): 20 times `login_max_failures`, across all e-mails.
//!
//! An address is an IPv4 address or an IPv6 /64 ([`crate::rate_limit::address_group`]). The same throttle guards
//! every check of a password: the sign-in form and the account page's password change.

use crate::password::Busy;
use crate::rate_limit::address_group;
use crate::state::AppState;
use latchkey_core::time::UnixTime;
use latchkey_store::{LoginWindows, StoreError, LONGEST_LOGIN_WINDOW};
use std::net::IpAddr;

/// Each address may have this many times the per-(account, address) limit across all accounts.
const PER_ADDRESS_FACTOR: u32 = 20;

/// Why a password was not checked.
#[derive(Debug)]
pub enum NotChecked {
    /// A limit was reached: try again in this many seconds.
    Throttled(u64),
    /// The password gate's queue is full: try again in a moment.
    Busy,
    /// The store failed.
    Store(StoreError),
}

/// An attempt counted under its keys, its password checked or not yet.
pub struct Attempt<'s> {
    state: &'s AppState,
    keys: [String; 3],
}

/// Counts an attempt to check `email`'s password from `addr`; refuses it when a limit is reached.
pub async fn admit<'s>(state: &'s AppState, email: &str, addr: Option<IpAddr>) -> Result<Attempt<'s>, NotChecked> {
    let email = email.trim().to_lowercase();
    let address = addr.map(address_group).unwrap_or_default();
    let keys = [format!("login:{email}"), format!("login:{email}|{address}"), format!("login-ip:{address}")];
    let c = &state.config;
    let limits = [c.login_account_max_failures, c.login_max_failures, c.login_max_failures * PER_ADDRESS_FACTOR];
    let windows = LoginWindows { base: c.login_failure_window, longest: LONGEST_LOGIN_WINDOW };
    let now = state.clock.now();
    let counted: Vec<(&str, u32)> = keys.iter().map(String::as_str).zip(limits).collect();
    let counts = state.store.record_login_attempts(&counted, now, windows).await.map_err(NotChecked::Store)?;
    let over = counts.iter().zip(limits).filter(|(n, limit)| n.count > *limit).map(|(n, _)| n.until).max();
    if let Some(until) = over {
        return Err(NotChecked::Throttled(retry_after(now, until)));
    }
    Ok(Attempt { state, keys })
}

fn retry_after(now: UnixTime, until: UnixTime) -> u64 {
    u64::try_from(until.0 - now.0).unwrap_or(0).max(1)
}

impl Attempt<'_> {
    /// Checks the password with the server's password gate. A right password takes the attempt back (it was no
    /// guess) and clears the account's count from this address. A check the gate refused (its queue full) is taken
    /// back too: it checked nothing.
    pub async fn check(self, password: &str, phc: Option<String>) -> Result<bool, NotChecked> {
        let [account, pair, address] = &self.keys;
        let store = &self.state.store;
        match self.state.passwords.verify(password.to_owned(), phc).await {
            Ok(true) => {
                store.clear_login_failures(pair).await.map_err(NotChecked::Store)?;
                store.forgive_login_attempts(&[account, address]).await.map_err(NotChecked::Store)?;
                Ok(true)
            }
            Ok(false) => Ok(false),
            Err(Busy) => {
                store.forgive_login_attempts(&[account, pair, address]).await.map_err(NotChecked::Store)?;
                Err(NotChecked::Busy)
            }
        }
    }
}
