//! The sign-in throttle: how many passwords may be checked for an account, for an account from one address, and
//! from one address, in a window.
//!
//! An attempt is counted under each of its three keys before its password is checked, in one write that gives it
//! its number in each key's window ([`latchkey_store::Users::record_login_attempts`]). Concurrent guesses for one
//! account therefore each take a number, and no more than the limit are ever checked, however many arrive at once.
//! Past a limit the answer is 429 with `Retry-After` and no check; a window that reached its limit is followed by
//! one twice as long (up to a day). An attempt that succeeds, or that the password gate refused before checking
//! it, is taken back. The keys:
//! - the address (`login-ip:{address}`): 20 times `login_max_failures`, across all e-mails, counted first;
//! - the account (`login:{account}`): `login_account_max_failures` checks, from any addresses, except from an
//!   address that signed in to it within 30 days (`login-known:{account}|{address}`);
//! - the account from one address (`login:{account}|{address}`): `login_max_failures`.
//!
//! A second step (an authenticator app's code, a recovery code) is counted the same way under keys of its own
//! (`2sv:...`, [`admit_second_step`]).
//!
//! The account is its user id (so that no other spelling of its e-mail counts apart), or for an e-mail with no
//! account the address as typed, lower case.
//!
//! An address is an IPv4 address or an IPv6 /64 ([`crate::rate_limit::address_group`]). The same throttle guards
//! every check of a password: the sign-in form and the account page's password change.

use crate::rate_limit::address_group;
use crate::state::AppState;
use latchkey_admin::password::Busy;
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
    known: String,
}

/// How long an address stays known to an account after a sign-in from it.
const KNOWN_FOR_SECS: i64 = 30 * 86_400;

/// Counts an attempt to check the password of `account` (its user id, or for an address with no account the
/// e-mail as typed, lower case) from `addr`; refuses it when a limit is reached. The address is counted first, and
/// an attempt over the address's limit writes nothing more. An address that signed in to the account within 30
/// days is not held back by the account-wide limit (only by its own), so guesses from elsewhere cannot keep the
/// account's owner out.
pub async fn admit<'s>(state: &'s AppState, account: &str, addr: Option<IpAddr>) -> Result<Attempt<'s>, NotChecked> {
    admit_under(state, "login", account, addr).await
}

/// Counts an attempt at a second step (an authenticator app's code or a recovery code) of `user_id` from `addr`,
/// under the same limits as passwords but keys of its own (`2sv:...`): a right password, which clears its own
/// counts, never clears these, so knowing the password does not buy more guesses at the code.
pub async fn admit_second_step<'s>(
    state: &'s AppState,
    user_id: &str,
    addr: Option<IpAddr>,
) -> Result<Attempt<'s>, NotChecked> {
    admit_under(state, "2sv", user_id, addr).await
}

async fn admit_under<'s>(
    state: &'s AppState,
    kind: &str,
    account: &str,
    addr: Option<IpAddr>,
) -> Result<Attempt<'s>, NotChecked> {
    let address = addr.map(address_group).unwrap_or_default();
    let keys = [format!("{kind}:{account}"), format!("{kind}:{account}|{address}"), format!("{kind}-ip:{address}")];
    let c = &state.config;
    let windows = LoginWindows { base: c.login_failure_window, longest: LONGEST_LOGIN_WINDOW };
    let now = state.clock.now();
    let store = &state.store;
    let per_address = c.login_max_failures.saturating_mul(PER_ADDRESS_FACTOR);
    let counted = store.record_login_attempts(&[(&keys[2], per_address)], now, windows).await;
    let address_count = counted.map_err(NotChecked::Store)?.first().copied();
    if let Some(n) = address_count.filter(|n| n.count > per_address) {
        return Err(NotChecked::Throttled(retry_after(now, n.until)));
    }
    let known_key = format!("{kind}-known:{account}|{address}");
    let known = store.login_failures(&known_key, now).await.map_err(NotChecked::Store)? > 0;
    let limits = [(keys[0].as_str(), c.login_account_max_failures), (keys[1].as_str(), c.login_max_failures)];
    let counts = store.record_login_attempts(&limits, now, windows).await.map_err(NotChecked::Store)?;
    let over = counts
        .iter()
        .zip(limits)
        .enumerate()
        .filter(|(i, (n, (_, limit)))| n.count > *limit && !(*i == 0 && known))
        .map(|(_, (n, _))| n.until)
        .max();
    if let Some(until) = over {
        return Err(NotChecked::Throttled(retry_after(now, until)));
    }
    Ok(Attempt { state, keys, known: known_key })
}

fn retry_after(now: UnixTime, until: UnixTime) -> u64 {
    u64::try_from(until.0 - now.0).unwrap_or(0).max(1)
}

impl Attempt<'_> {
    /// Checks the password with the server's password gate. A right password takes the attempt back (it was no
    /// guess) and clears the account's count from this address. A check the gate refused (its queue full) is taken
    /// back too: it checked nothing.
    pub async fn check(self, password: &str, phc: Option<String>) -> Result<bool, NotChecked> {
        let store = &self.state.store;
        match self.state.passwords.verify(password.to_owned(), phc).await {
            Ok(ok) => self.settle(ok).await,
            Err(Busy) => {
                let [account, pair, address] = &self.keys;
                store.forgive_login_attempts(&[account, pair, address]).await.map_err(NotChecked::Store)?;
                Err(NotChecked::Busy)
            }
        }
    }

    /// Settles an attempt checked elsewhere (a second step's code): a right one is taken back and makes the
    /// address known to the account, as a right password does; a wrong one stays counted.
    pub async fn settle(self, ok: bool) -> Result<bool, NotChecked> {
        let [account, pair, address] = &self.keys;
        let store = &self.state.store;
        match ok {
            true => {
                store.clear_login_failures(pair).await.map_err(NotChecked::Store)?;
                store.forgive_login_attempts(&[account, address]).await.map_err(NotChecked::Store)?;
                // This address is now known to the account (for 30 days from its latest sign-in).
                let known = LoginWindows { base: KNOWN_FOR_SECS, longest: KNOWN_FOR_SECS };
                store.clear_login_failures(&self.known).await.map_err(NotChecked::Store)?;
                let now = self.state.clock.now();
                store.record_login_attempts(&[(&self.known, u32::MAX)], now, known).await.map_err(NotChecked::Store)?;
                Ok(true)
            }
            false => Ok(false),
        }
    }
}
