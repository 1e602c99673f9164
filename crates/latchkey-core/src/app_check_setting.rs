//! A client's App Check setting (`docs/decisions.md`, "App Check"): the state in force and the change
//! on its way. The rules that change it and check tokens are in `app_check`.

use crate::time::UnixTime;

/// The states of the App Check table (`docs/decisions.md`, "App Check").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum AppCheckState {
    /// No monitoring, no enforcement.
    #[default]
    Disabled,
    /// Enabled, not enforced: requests are classified and counted; none is blocked.
    Enabled,
    /// Only requests with a valid App Check token succeed.
    Enforced,
}

impl AppCheckState {
    /// The state's name in the store, the CLI and the JSON API.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Disabled => "disabled",
            Self::Enabled => "enabled",
            Self::Enforced => "enforced",
        }
    }

    /// Parses the state's name.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Disabled, Self::Enabled, Self::Enforced].into_iter().find(|t| t.as_str() == s)
    }
}

/// A client's App Check setting: the state in force and the change on its way (in force from its time on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AppCheck {
    /// The state in force before the pending change.
    pub state: AppCheckState,
    /// The requested state and when it takes effect.
    pub pending: Option<(AppCheckState, UnixTime)>,
}

impl AppCheck {
    /// The state in force at `now`.
    pub fn effective(&self, now: UnixTime) -> AppCheckState {
        match self.pending {
            Some((s, at)) if now >= at => s,
            _ => self.state,
        }
    }

    /// The state last asked for (in force or pending): what the next action starts from.
    pub fn target(&self) -> AppCheckState {
        self.pending.map_or(self.state, |(s, _)| s)
    }
}
