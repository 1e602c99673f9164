//! Organisations and their administrators' policies over apps: the one place that decides whether an account
//! may authorize a client for some scopes, and how it consents.
//!
//! [`decide`] runs the checks that need the account, after the request's own checks
//! ([`crate::authorize::validate`]), in this order:
//!
//! 1. **Audience**: an `internal` project's clients serve only the members of the project's organisation
//!    (`org_internal`).
//! 2. **Self-registered apps**: where the member's organisation blocks every app that registered itself (dynamic
//!    registration or a client ID metadata document), such an app is refused every scope (`admin_policy_enforced`).
//! 3. **Domain-wide delegation**: a client the member's organisation delegated may have any of the scopes listed
//!    for it; a request for any other data-API scope is refused (`admin_policy_enforced`). It skips the consent
//!    page only when its identity is assured (App Check enforced, or a client of the
//!    organisation's own projects: RFC 8252 §8.6); any other delegated client gets the all-or-none consent page,
//!    since a native app's loopback redirect and secret prove nothing about who asks (RFC 8252 §8.5).
//! 4. **App access**: the client's access in the member's organisation (its own listing, else *trusted* when it
//!    is one of the organisation's own apps and internal apps are trusted, and did not register itself, else the
//!    organisation's default: a self-registered app is an unlisted app)
//!    gives the scopes it may have: *trusted* every one, *limited* the unrestricted ones, *specific* those
//!    listed, *blocked* none (not even sign-in). A request for any other scope is refused
//!    (`admin_policy_enforced`, naming them).
//! 5. **Consent**: a trusted app gets all its requested scopes or none (no per-scope choice); every other app
//!    keeps granular consent.
//!
//! The same function judges a grant already issued when a policy changes ([`decide`] with the grant's scopes): a grant
//! it refuses is revoked, the strict answer (`docs/decisions.md`, "Organisations"). Accounts outside any organisation
//! are judged by the audience check alone.

use crate::client::Client;
use crate::scope::{ScopeRegistry, ScopeSet, IDENTITY};
use crate::{ErrorCode, OAuthError};

/// Who a project's clients serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Audience {
    /// Any account (the default).
    #[default]
    External,
    /// Only the members of the project's organisation.
    Internal,
}

impl Audience {
    /// The name in the store, the API and the CLI.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::External => "external",
            Self::Internal => "internal",
        }
    }

    /// The audience named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "external" => Some(Self::External),
            "internal" => Some(Self::Internal),
            _ => None,
        }
    }
}

/// What an organisation lets one app (client id) have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppAccess {
    /// Every scope, restricted or not; consent is all or none.
    Trusted,
    /// The organisation's unrestricted scopes only (the default for apps not listed).
    Limited,
    /// Exactly the listed data-API scopes.
    Specific(ScopeSet),
    /// Nothing: the app cannot be authorized by the organisation's members at all.
    Blocked,
}

impl AppAccess {
    /// The names, as the API and the CLI take them.
    pub const NAMES: [&'static str; 4] = ["trusted", "limited", "specific", "blocked"];

    /// The access's name.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Trusted => "trusted",
            Self::Limited => "limited",
            Self::Specific(_) => "specific",
            Self::Blocked => "blocked",
        }
    }

    /// The access named `name`; `scopes` is used by `specific` only.
    pub fn parse(name: &str, scopes: ScopeSet) -> Option<Self> {
        match name {
            "trusted" => Some(Self::Trusted),
            "limited" => Some(Self::Limited),
            "specific" => Some(Self::Specific(scopes)),
            "blocked" => Some(Self::Blocked),
            _ => None,
        }
    }

    /// The listed scopes of a `specific` access (empty for the others).
    pub const fn scopes(self) -> ScopeSet {
        match self {
            Self::Specific(s) => s,
            _ => ScopeSet::EMPTY,
        }
    }
}

/// An organisation's policy as it bears on one client, for one of its members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The member's organisation.
    pub org_id: String,
    /// Whether the member administers it.
    pub admin: bool,
    /// The organisation's restricted data-API scopes.
    pub restricted: ScopeSet,
    /// The access of apps the organisation has not listed.
    pub default_access: AppAccess,
    /// Whether the clients of the organisation's own projects are trusted.
    pub trust_internal: bool,
    /// Whether every app that registered itself is blocked for the organisation's members.
    pub block_self_registered: bool,
    /// The client's own listing, if any.
    pub access: Option<AppAccess>,
    /// The scopes the client is delegated for every member, if it is.
    pub delegated: Option<ScopeSet>,
    /// The organisation's sign-in policy.
    pub sign_in: crate::sign_in::Policy,
}

/// Where a client's project stands: its organisation and audience; and whether the client's identity is assured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Placement<'a> {
    /// The project's organisation, if any.
    pub org_id: Option<&'a str>,
    /// Who the project's clients serve.
    pub audience: Audience,
    /// Whether a request can only come from the client itself ([`crate::client::Client::identity_assured`]):
    /// only then may a delegated client skip the consent page (RFC 8252 §8.6). A client of the member's own
    /// organisation's projects counts as assured too (the organisation vouches for it).
    pub identity_assured: bool,
    /// Whether the client registered itself (dynamic registration or a metadata document): never trusted as an
    /// internal app, and blocked where the organisation blocks all such apps.
    pub self_registered: bool,
}

/// How the account consents to an allowed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Consent {
    /// The consent page with a checkbox per scope.
    Granular,
    /// The consent page without checkboxes: Allow grants every requested scope, Deny none (a trusted app).
    AllOrNone,
    /// No consent page: every requested scope is granted (a delegated app whose identity is assured).
    Skip,
}

/// Why the account may not authorize the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client's project serves only the members of its organisation (`org_internal`).
    OrgInternal,
    /// The member's organisation does not allow these requested scopes for this client
    /// (`admin_policy_enforced`).
    Policy {
        /// The requested scopes the policy does not allow.
        blocked: ScopeSet,
    },
}

impl Refusal {
    /// The refusal as the authorization endpoint shows it (a user-facing page, never a redirect): `org_internal`,
    /// or `admin_policy_enforced` naming the client and the permissions the policy does not allow.
    pub fn error(self, client: &Client, registry: &ScopeRegistry) -> OAuthError {
        let page = |code, description: String| OAuthError { redirectable: false, ..OAuthError::new(code, description) };
        match self {
            Self::OrgInternal => page(
                ErrorCode::OrgInternal,
                format!(
                    "{} is limited to the accounts of its organisation, and this account is not one of them. Sign in \
                     with an account of that organisation, or ask its administrator.",
                    client.name
                ),
            ),
            Self::Policy { blocked } => {
                let names: Vec<&str> = registry.iter(blocked).map(|s| &*s.summary).collect();
                page(
                    ErrorCode::AdminPolicyEnforced,
                    format!(
                        "Your organisation's administrator has not allowed {} ({}) to have these permissions: {}. \
                         Ask your administrator to allow this app.",
                        client.name,
                        client.client_id,
                        names.join("; ")
                    ),
                )
            }
        }
    }
}

/// The domain of an e-mail address, lower case ("" without one): what a verified domain is matched against.
pub fn email_domain(email: &str) -> String {
    email.rsplit_once('@').map_or("", |(_, d)| d).to_ascii_lowercase()
}

/// Every scope bit a registry can hold.
const EVERY: ScopeSet = ScopeSet(u64::MAX);

/// Runs the checks of the module's doc, in order, for an account (`member`: its organisation's policy for this
/// client, `None` outside any organisation) asking a client of a project placed at `placement` for `requested`.
pub fn decide(placement: Placement<'_>, member: Option<&Membership>, requested: ScopeSet) -> Result<Consent, Refusal> {
    let internal = |m: &Membership| placement.org_id == Some(m.org_id.as_str());
    // 1. Audience.
    if placement.audience == Audience::Internal && !member.is_some_and(internal) {
        return Err(Refusal::OrgInternal);
    }
    let Some(m) = member else { return Ok(Consent::Granular) };
    // 2. Apps that registered themselves, where the organisation blocks them all.
    if placement.self_registered && m.block_self_registered {
        return Err(Refusal::Policy { blocked: requested });
    }
    // 3. Domain-wide delegation.
    if let Some(delegated) = m.delegated {
        // A self-registered app is never the organisation's own, nor assured: its redirect proves nothing.
        let assured = (placement.identity_assured || internal(m)) && !placement.self_registered;
        return match outside(requested, ScopeSet(delegated.0 | IDENTITY.0)) {
            ScopeSet::EMPTY if assured => Ok(Consent::Skip),
            ScopeSet::EMPTY => Ok(Consent::AllOrNone),
            blocked => Err(Refusal::Policy { blocked }),
        };
    }
    // 4. App access: a self-registered app is an unlisted app unless listed, even in the organisation's own projects.
    let access = match m.access {
        Some(a) => a,
        None if m.trust_internal && internal(m) && !placement.self_registered => AppAccess::Trusted,
        None => m.default_access,
    };
    let allowed = match access {
        AppAccess::Trusted => EVERY,
        AppAccess::Limited => ScopeSet(!m.restricted.0 | IDENTITY.0),
        AppAccess::Specific(s) => ScopeSet(s.0 | IDENTITY.0),
        AppAccess::Blocked => ScopeSet::EMPTY,
    };
    match outside(requested, allowed) {
        ScopeSet::EMPTY => {}
        blocked => return Err(Refusal::Policy { blocked }),
    }
    // 5. Consent.
    Ok(if access == AppAccess::Trusted { Consent::AllOrNone } else { Consent::Granular })
}

/// The scopes of `requested` that are not in `allowed`.
const fn outside(requested: ScopeSet, allowed: ScopeSet) -> ScopeSet {
    ScopeSet(requested.0 & !allowed.0)
}

/// Why a change to an organisation (or a project's placement) was refused; nothing was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OrgRefusal {
    /// There is no such organisation.
    #[error("there is no such organisation")]
    UnknownOrg,
    /// There is no such user.
    #[error("there is no such user")]
    UnknownUser,
    /// There is no such client.
    #[error("there is no such client")]
    UnknownClient,
    /// There is no such project.
    #[error("there is no such project")]
    UnknownProject,
    /// The domain belongs to another organisation.
    #[error("the domain belongs to another organisation")]
    DomainTaken,
    /// The user belongs to another organisation (a user belongs to at most one).
    #[error("the user belongs to another organisation")]
    MemberElsewhere,
    /// The user is not a member of this organisation.
    #[error("the user is not a member of this organisation")]
    NotMember,
    /// An internal project needs an organisation.
    #[error("an internal project needs an organisation: set its organisation too")]
    InternalWithoutOrg,
}

/// A change to an organisation. Each runs in one unit of work with the revocation of the grants the changed
/// policy no longer allows, and their audit records and account events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrgChange {
    /// Adds a verified domain: accounts with addresses at it join (unless in another organisation), now and
    /// when created.
    AddDomain(String),
    /// Adds an account as a member, or (with `admin`) as an administrator; an existing member is made an
    /// administrator when `admin` is set.
    AddMember {
        /// The account.
        user_id: String,
        /// Whether it administers the organisation.
        admin: bool,
    },
    /// Removes a member.
    RemoveMember {
        /// The account.
        user_id: String,
    },
    /// Lists a client with its access, or (`None`) removes its listing so that it follows the default.
    AppAccess {
        /// The client.
        client_id: String,
        /// Its access.
        access: Option<AppAccess>,
    },
    /// Restricts data-API scopes, or lifts their restriction.
    ScopeAccess {
        /// The scopes.
        scopes: ScopeSet,
        /// Restricted (true) or unrestricted.
        restricted: bool,
    },
    /// Trusts every client of the organisation's own projects, or stops.
    TrustInternalApps(bool),
    /// Blocks every app that registered itself, or stops.
    BlockSelfRegisteredApps(bool),
    /// The access of apps not listed.
    DefaultAccess(AppAccess),
    /// The sign-in policy: each setting given changes, the other stays.
    SignInPolicy {
        /// Whether a member's password sign-in needs a second step.
        require_two_step: Option<bool>,
        /// Whether members sign in with passkeys only.
        passkeys_only: Option<bool>,
    },
    /// Delegates a client for these scopes for every member, or (`None`) ends its delegation.
    Delegate {
        /// The client.
        client_id: String,
        /// The scopes.
        scopes: Option<ScopeSet>,
    },
}

#[cfg(test)]
pub(crate) mod tests;
