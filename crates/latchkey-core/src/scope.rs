//! Scopes: the seven data-API scopes (`docs/decisions.md`, "Scopes"), the OpenID Connect identity scopes, and
//! the scopes of the APIs a deployment registered (`crate::resource`).
//!
//! A granted set is a [`ScopeSet`], a bit set over the registry, so that it can travel inside an access token
//! and be checked without string work on the data-API path.

use crate::OAuthError;
use std::borrow::Cow;
use std::sync::Arc;

/// One scope the server knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeInfo {
    /// The scope identifier as requested and granted.
    pub id: String,
    /// The summary shown on the consent page.
    pub summary: Cow<'static, str>,
    /// Whether this is an identity scope (`openid`, `email`, `profile`).
    pub identity: bool,
    /// Its bit in scope sets.
    pub bit: u32,
    /// The registered API that defines it; `None` for a well-known scope.
    pub api: Option<Arc<ApiInfo>>,
}

/// A registered API, as its scopes name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiInfo {
    /// Its id.
    pub resource_id: String,
    /// Its project.
    pub project_id: String,
    /// Its resource identifier.
    pub uri: String,
    /// Its name, shown on the consent page.
    pub name: String,
    /// Whether any client may ask for its scopes (else only its project's).
    pub public: bool,
    /// Whether it wants JWT access tokens.
    pub jwt: bool,
    /// Whether they are to be signed RS256 (else ES256).
    pub rs256: bool,
}

/// A set of scopes of one registry, as bits: the well-known scopes' ([`Scope`]) below [`FIRST_REGISTERED`], the
/// registered APIs' scopes from there to [`LAST_REGISTERED`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ScopeSet(pub u64);

/// The first bit a registered API's scope may hold.
pub const FIRST_REGISTERED: u32 = 10;
/// The last bit a registered API's scope may hold (bit 63 stays clear, so that a set stored as a signed 64-bit
/// integer is never negative).
pub const LAST_REGISTERED: u32 = 62;

impl ScopeSet {
    /// The empty set.
    pub const EMPTY: ScopeSet = ScopeSet(0);

    /// The set as stored: a 64-bit integer column.
    pub const fn to_stored(self) -> i64 {
        self.0 as i64
    }

    /// The set of a stored integer (its bits as they are).
    pub const fn from_stored(bits: i64) -> Self {
        ScopeSet(bits as u64)
    }

    /// The set holding just the scope of bit `index`.
    pub const fn bit(index: u32) -> Self {
        ScopeSet(1 << index)
    }

    /// The scopes in either set.
    pub const fn union(self, other: ScopeSet) -> ScopeSet {
        ScopeSet(self.0 | other.0)
    }

    /// Whether no scope is in the set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `other` is entirely inside `self`.
    pub const fn contains_all(self, other: ScopeSet) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the two sets share a scope.
    pub const fn intersects(self, other: ScopeSet) -> bool {
        self.0 & other.0 != 0
    }

    /// The scopes in both sets.
    pub const fn intersection(self, other: ScopeSet) -> ScopeSet {
        ScopeSet(self.0 & other.0)
    }

    /// Whether the scope with bit `index` is in the set.
    pub const fn has(self, index: Scope) -> bool {
        self.0 & (1 << index as u64) != 0
    }
}

/// The well-known scopes, by their bit index in every registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Scope {
    /// `{scope_base}/auth/readonly`: view the user's account.
    Readonly = 0,
    /// `{scope_base}/auth/force-ssl`: view, edit and permanently delete videos, ratings, comments, captions.
    ForceSsl = 1,
    /// `{scope_base}/auth/manage`: manage the user's account.
    Manage = 2,
    /// `{scope_base}/auth/channel-memberships.creator`: list current active channel members.
    ChannelMembershipsCreator = 3,
    /// `{scope_base}/auth/upload`: manage the user's videos.
    Upload = 4,
    /// `{scope_base}/auth/partner`: view and manage the user's assets and related content.
    Partner = 5,
    /// `{scope_base}/auth/partner-channel-audit`: private channel information during a partner audit.
    PartnerChannelAudit = 6,
    /// `openid`: sign the user in; an id_token is returned.
    OpenId = 7,
    /// `email`: the user's e-mail address.
    Email = 8,
    /// `profile`: the user's name.
    Profile = 9,
}

impl Scope {
    /// The set holding just this scope.
    pub const fn set(self) -> ScopeSet {
        ScopeSet(1 << self as u64)
    }
}

/// The scopes that allow `channels.list`: readonly, force-ssl, manage or partner (`docs/decisions.md`, "Scopes").
pub const CHANNELS_LIST: ScopeSet =
    ScopeSet(Scope::Readonly.set().0 | Scope::ForceSsl.set().0 | Scope::Manage.set().0 | Scope::Partner.set().0);

/// The identity scopes; any of them makes the code exchange return an id_token.
pub const IDENTITY: ScopeSet = ScopeSet(Scope::OpenId.set().0 | Scope::Email.set().0 | Scope::Profile.set().0);
/// The scopes whose id_token claims come from the user's account (`email`, `name`).
pub const PROFILE_CLAIMS: ScopeSet = ScopeSet(Scope::Email.set().0 | Scope::Profile.set().0);

/// The data API's seven scopes.
pub const DATA_API: ScopeSet = ScopeSet((1 << 7) - 1);

/// The scopes registered APIs may hold.
pub const REGISTERED: ScopeSet = ScopeSet(((1 << (LAST_REGISTERED + 1)) - 1) & !((1 << FIRST_REGISTERED) - 1));

/// The scopes of one deployment, built from its `scope_base`.
#[derive(Debug, Clone)]
pub struct ScopeRegistry {
    scopes: Vec<ScopeInfo>,
    /// The data API's resource identifier (RFC 8707), when the deployment named it.
    data_api_uri: Option<String>,
}

impl ScopeRegistry {
    /// The registry for `scope_base` (for example `https://latchkey.dev`), without a trailing slash.
    pub fn new(scope_base: &str) -> Self {
        let base = scope_base.trim_end_matches('/');
        let data = [
            ("readonly", "View your account"),
            ("force-ssl", "See, edit, and permanently delete your videos, ratings, comments and captions"),
            ("manage", "Manage your account"),
            (
                "channel-memberships.creator",
                "See a list of your current active channel members, their current level, and when they became a member",
            ),
            ("upload", "Manage your videos"),
            ("partner", "View and manage your assets and associated content"),
            (
                "partner-channel-audit",
                "View private information of your channel relevant during the audit process with a partner",
            ),
        ];
        let well_known = |(i, (id, summary, identity)): (usize, (String, &'static str, bool))| ScopeInfo {
            id,
            summary: Cow::Borrowed(summary),
            identity,
            bit: i as u32,
            api: None,
        };
        let identity = [
            ("openid", "Associate you with your personal info"),
            ("email", "See your primary email address"),
            ("profile", "See your personal info, including any personal info you've made publicly available"),
        ];
        let scopes = data
            .iter()
            .map(|(name, summary)| (format!("{base}/auth/{name}"), *summary, false))
            .chain(identity.iter().map(|(id, summary)| ((*id).to_owned(), *summary, true)))
            .enumerate()
            .map(well_known)
            .collect();
        Self { scopes, data_api_uri: None }
    }

    /// This registry with the data API's resource identifier, so that a `resource` parameter can name it.
    pub fn with_data_api_uri(mut self, uri: impl Into<String>) -> Self {
        self.data_api_uri = Some(uri.into());
        self
    }

    /// The resource named `uri` (RFC 8707): its scopes, and its registration (`None` for the data API); `None`
    /// for a resource this registry does not know.
    pub fn resource(&self, uri: &str) -> Option<(ScopeSet, Option<&ApiInfo>)> {
        if self.data_api_uri.as_deref() == Some(uri) {
            return Some((DATA_API, None));
        }
        let mut found: Option<(ScopeSet, &ApiInfo)> = None;
        for s in &self.scopes {
            if let Some(api) = s.api.as_deref().filter(|a| a.uri == uri) {
                let set = found.map_or(ScopeSet::EMPTY, |(set, _)| set);
                found = Some((set.union(ScopeSet::bit(s.bit)), api));
            }
        }
        found.map(|(set, api)| (set, Some(api)))
    }

    /// The resource identifiers a set's scopes belong to (a token's audience): the data API first, then the
    /// registered APIs in the order of their first scope, each once.
    pub fn audience(&self, set: ScopeSet) -> Vec<&str> {
        let mut audience: Vec<&str> = Vec::new();
        if set.intersects(DATA_API) {
            audience.extend(self.data_api_uri.as_deref());
        }
        for api in self.iter(set.intersection(REGISTERED)).filter_map(|s| s.api.as_deref()) {
            if !audience.contains(&api.uri.as_str()) {
                audience.push(&api.uri);
            }
        }
        audience
    }

    /// The registered API a set's scopes all belong to, when every scope of the set is of that one API: the one
    /// case where a token is for that API alone (one with an identity scope is for UserInfo too).
    pub fn sole_api(&self, set: ScopeSet) -> Option<&ApiInfo> {
        if set.intersects(ScopeSet(!REGISTERED.0)) || !set.intersects(REGISTERED) {
            return None;
        }
        let mut apis = self.iter(set.intersection(REGISTERED)).filter_map(|s| s.api.as_deref());
        let first = apis.next()?;
        apis.all(|a| a.resource_id == first.resource_id).then_some(first)
    }

    /// This registry with a registered API's scopes (bit, name, description) added; a scope whose bit is not one
    /// registered scopes may hold is left out.
    pub fn with_api(mut self, api: ApiInfo, scopes: impl IntoIterator<Item = (u32, String, String)>) -> Self {
        let api = Arc::new(api);
        for (bit, id, summary) in scopes {
            if (FIRST_REGISTERED..=LAST_REGISTERED).contains(&bit) {
                let info = ScopeInfo { id, summary: Cow::Owned(summary), identity: false, bit, api: Some(api.clone()) };
                self.scopes.push(info);
            }
        }
        self.scopes.sort_by_key(|s| s.bit);
        self
    }

    /// Every scope, in bit order.
    pub fn all(&self) -> &[ScopeInfo] {
        &self.scopes
    }

    /// The scope of a bit.
    pub fn get(&self, bit: usize) -> Option<&ScopeInfo> {
        self.scopes.iter().find(|s| s.bit as usize == bit)
    }

    /// The bit of a scope identifier.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.scopes.iter().find(|s| s.id == id).map(|s| s.bit as usize)
    }

    /// The registered APIs' scopes of a set that a client of `project_id` may not ask for: those of APIs of other
    /// projects that are not public.
    pub fn hidden_from(&self, project_id: &str, set: ScopeSet) -> ScopeSet {
        self.iter(set.intersection(REGISTERED))
            .filter(|s| s.api.as_ref().is_some_and(|a| !a.public && a.project_id != project_id))
            .fold(ScopeSet::EMPTY, |hidden, s| hidden.union(ScopeSet::bit(s.bit)))
    }

    /// Parses a space-separated `scope` parameter. Unknown identifiers fail with `invalid_scope`.
    pub fn parse(&self, scope: &str) -> Result<ScopeSet, OAuthError> {
        let mut set = 0u64;
        for id in scope.split(' ').filter(|s| !s.is_empty()) {
            match self.index_of(id) {
                Some(i) => set |= 1 << i,
                None => {
                    return Err(OAuthError::new(
                        latchkey_proto::ErrorCode::InvalidScope,
                        format!("Some requested scopes were invalid: {{invalid={}}}", truncate(id)),
                    ))
                }
            }
        }
        Ok(ScopeSet(set))
    }

    /// Parses a scope string, keeping only the identifiers this registry knows (used for stored data and for
    /// narrowing on refresh, where unknown scopes are left out rather than refused).
    pub fn parse_known(&self, scope: &str) -> ScopeSet {
        let mut set = 0u64;
        for id in scope.split(' ') {
            if let Some(i) = self.index_of(id) {
                set |= 1 << i;
            }
        }
        ScopeSet(set)
    }

    /// The space-separated form of a set, in registry order.
    pub fn format(&self, set: ScopeSet) -> String {
        self.iter(set).map(|s| s.id.as_str()).collect::<Vec<_>>().join(" ")
    }

    /// The scopes of a set, in registry order.
    pub fn iter(&self, set: ScopeSet) -> impl Iterator<Item = &ScopeInfo> {
        self.scopes.iter().filter(move |s| set.0 & (1 << s.bit) != 0)
    }
}

/// Caps a client-supplied value before it goes into an error description.
fn truncate(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests;
