//! APIs as resources (RFC 8707): a project registers its own APIs beside its clients, each with an HTTPS resource
//! identifier, a name, the scopes it defines, who may ask for them, the access-token format it wants, and
//! credentials to introspect tokens with. The rules for what a registration may hold live here.
//!
//! Each registered scope holds one bit of the deployment's scope sets ([`crate::scope::FIRST_REGISTERED`] to
//! [`crate::scope::LAST_REGISTERED`]), so that every rule written for scope sets (consent, narrowing, organisation
//! policies, access tokens) holds for registered APIs unchanged. A scope taken away keeps its bit from new scopes
//! until [`BIT_QUARANTINE`] has passed: by then no token that carries the bit is still alive.

use crate::client::ClientSecret;
use crate::scope::{ApiInfo, ScopeRegistry, ScopeSet, FIRST_REGISTERED, LAST_REGISTERED};
use crate::time::UnixTime;

/// How long a retired scope's bit stays unused: longer than any access token (at most 6 days), code or device code
/// lives. Grants, codes and organisations' settings lose the bit when it is retired, so only access tokens issued
/// before then still carry it.
pub const BIT_QUARANTINE: i64 = 7 * 86_400;
/// The longest resource identifier.
pub const MAX_URI_LEN: usize = 512;
/// The longest scope name.
pub const MAX_SCOPE_LEN: usize = 200;
/// The longest scope description.
pub const MAX_DESCRIPTION_LEN: usize = 300;

/// Which clients may ask for an API's scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Visibility {
    /// The clients of the API's own project.
    #[default]
    Project,
    /// Any client of the deployment.
    Public,
}

impl Visibility {
    /// The name in the CLI, the API and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Project => "project",
            Self::Public => "public",
        }
    }

    /// Parses [`Visibility::as_str`]'s names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "project" => Some(Self::Project),
            "public" => Some(Self::Public),
            _ => None,
        }
    }
}

/// The access-token format an API asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenFormat {
    /// latchkey's opaque, MAC'd token, checked by introspection.
    #[default]
    Opaque,
    /// A JWT access token (RFC 9068), verified with the JWKS alone, signed ES256 with the id_token key.
    Jwt,
    /// A JWT access token signed RS256, with the deployment's RSA signing key (the one security events are signed
    /// with), for APIs whose libraries verify RSA only.
    JwtRs256,
}

impl TokenFormat {
    /// The name in the CLI, the API and the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Opaque => "opaque",
            Self::Jwt => "jwt",
            Self::JwtRs256 => "jwt-rs256",
        }
    }

    /// Parses [`TokenFormat::as_str`]'s names.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "opaque" => Some(Self::Opaque),
            "jwt" => Some(Self::Jwt),
            "jwt-rs256" => Some(Self::JwtRs256),
            _ => None,
        }
    }
}

/// One scope an API defines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceScope {
    /// Its bit in the deployment's scope sets.
    pub bit: u32,
    /// The scope as requested and granted.
    pub name: String,
    /// What it allows, shown on the consent page.
    pub description: String,
}

/// A registered API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// Its id (`res_…`), which names it in the console, the API, the CLI and introspection.
    pub id: String,
    /// The project it belongs to.
    pub project_id: String,
    /// Its resource identifier (RFC 8707 §2): an absolute `https` URI without a fragment.
    pub uri: String,
    /// Its name, shown on the consent page.
    pub name: String,
    /// Who may ask for its scopes.
    pub visibility: Visibility,
    /// The access-token format it wants.
    pub token_format: TokenFormat,
    /// Its scopes.
    pub scopes: Vec<ResourceScope>,
    /// Its introspection secrets, stored as hashes (rotated like a client's).
    pub secrets: Vec<ClientSecret>,
    /// When it was registered.
    pub created_at: UnixTime,
}

impl Resource {
    /// The set of its scopes' bits.
    pub fn scope_set(&self) -> ScopeSet {
        self.scopes.iter().fold(ScopeSet::EMPTY, |set, s| set.union(ScopeSet::bit(s.bit)))
    }

    /// Whether `presented` is one of its enabled introspection secrets, compared in constant time.
    pub fn accepts_secret(&self, presented: &str) -> bool {
        crate::client::accepts(&self.secrets, presented)
    }
}

/// The prefix of an API's id, which tells an API's credentials from a client's.
pub const ID_PREFIX: &str = "res_";

/// The deployment's scopes: the well-known ones under `scope_base`, and those of `resources`.
pub fn registry(scope_base: &str, resources: &[Resource]) -> ScopeRegistry {
    resources.iter().fold(ScopeRegistry::new(scope_base), |registry, r| {
        let api = ApiInfo {
            resource_id: r.id.clone(),
            project_id: r.project_id.clone(),
            uri: r.uri.clone(),
            name: r.name.clone(),
            public: r.visibility == Visibility::Public,
            jwt: r.token_format != TokenFormat::Opaque,
            rs256: r.token_format == TokenFormat::JwtRs256,
        };
        registry.with_api(api, r.scopes.iter().map(|s| (s.bit, s.name.clone(), s.description.clone())))
    })
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceRefusal {
    /// The resource identifier is not an absolute `https` URI without a fragment (or is too long).
    BadUri,
    /// The identifier is the built-in data API's, or another API's.
    UriTaken,
    /// A scope name is empty, too long or holds a character a scope cannot (RFC 6749 §3.3), or a description is
    /// too long; the offending name.
    BadScope(String),
    /// A scope name is a well-known scope's or another API's, or named twice; the name.
    ScopeTaken(String),
    /// Every bit for registered scopes is in use.
    NoFreeBit,
    /// The name is empty or too long.
    BadName,
}

impl std::fmt::Display for ResourceRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::BadUri => write!(
                f,
                "The resource identifier must be an absolute https URI without a fragment, at most {MAX_URI_LEN} \
                 characters (RFC 8707 section 2)."
            ),
            Self::UriTaken => write!(f, "Another API already has this resource identifier."),
            Self::BadScope(name) => write!(
                f,
                "The scope {name:?} is not valid: 1 to {MAX_SCOPE_LEN} visible ASCII characters without spaces, \
                 quotes or backslashes, and a description of at most {MAX_DESCRIPTION_LEN} characters."
            ),
            Self::ScopeTaken(name) => write!(f, "The scope {name:?} is already defined (scope names are unique)."),
            Self::NoFreeBit => write!(
                f,
                "The deployment holds {} API scopes, the most it can: remove scopes no longer used first.",
                LAST_REGISTERED - FIRST_REGISTERED + 1
            ),
            Self::BadName => write!(f, "An API needs a name of 1 to 100 characters."),
        }
    }
}

/// Checks a resource identifier: an absolute `https` URI with a host and without a fragment (RFC 8707 §2), not
/// `data_api`'s.
pub fn check_uri(uri: &str, data_api: &str) -> Result<(), ResourceRefusal> {
    let well_formed = uri.len() <= MAX_URI_LEN
        && uri.strip_prefix("https://").is_some_and(|rest| {
            let host = rest.split(['/', '?']).next().unwrap_or("");
            !host.is_empty() && !host.contains('@')
        })
        && !uri.contains('#')
        && uri.bytes().all(|b| b.is_ascii_graphic());
    if !well_formed {
        return Err(ResourceRefusal::BadUri);
    }
    if uri == data_api {
        return Err(ResourceRefusal::UriTaken);
    }
    Ok(())
}

/// Checks an API's name.
pub fn check_name(name: &str) -> Result<(), ResourceRefusal> {
    match name.trim().chars().count() {
        1..=100 => Ok(()),
        _ => Err(ResourceRefusal::BadName),
    }
}

/// Checks one scope's name (RFC 6749 §3.3's `scope-token`) and description.
pub fn check_scope(name: &str, description: &str) -> Result<(), ResourceRefusal> {
    let token_char = |b: u8| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b);
    let fine = !name.is_empty()
        && name.len() <= MAX_SCOPE_LEN
        && name.bytes().all(token_char)
        && description.chars().count() <= MAX_DESCRIPTION_LEN;
    if fine {
        Ok(())
    } else {
        Err(ResourceRefusal::BadScope(name.chars().take(MAX_SCOPE_LEN).collect()))
    }
}

/// Reads `name|description` (the CLI's and the form's way of writing a scope): the text after the first `|` is
/// the description, which a URI scope cannot contain unencoded. Without a `|`, the description is empty.
pub fn parse_scope(written: &str) -> (String, String) {
    match written.split_once('|') {
        Some((name, description)) => (name.trim().to_owned(), description.trim().to_owned()),
        None => (written.trim().to_owned(), String::new()),
    }
}

/// The lowest bit a new scope may take: not `used`, and not retired less than [`BIT_QUARANTINE`] before `now`.
pub fn free_bit(used: &[u32], retired: &[(u32, UnixTime)], now: UnixTime) -> Option<u32> {
    (FIRST_REGISTERED..=LAST_REGISTERED)
        .find(|bit| !used.contains(bit) && !retired.iter().any(|(b, at)| b == bit && now.0 - at.0 < BIT_QUARANTINE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_identifier_is_an_absolute_https_uri_without_a_fragment() {
        let api = "https://api.example.com/video/v3";
        for good in ["https://mcp.example.com", "https://api.example.com/v1", "https://x.example:8443/a?b=c"] {
            assert_eq!(check_uri(good, api), Ok(()), "{good}");
        }
        for bad in ["http://api.example.com", "https://", "https:///x", "https://a.example/#f", "api", "https://a b"] {
            assert_eq!(check_uri(bad, api), Err(ResourceRefusal::BadUri), "{bad}");
        }
        assert_eq!(check_uri(api, api), Err(ResourceRefusal::UriTaken));
        assert_eq!(check_uri(&format!("https://a.example/{}", "x".repeat(600)), api), Err(ResourceRefusal::BadUri));
    }

    #[test]
    fn scope_names_are_scope_tokens_and_the_text_after_the_bar_describes_them() {
        assert_eq!(check_scope("https://mcp.example.com/tools.read", "Read tools"), Ok(()));
        assert_eq!(check_scope("notes:write", ""), Ok(()));
        for bad in ["", "two words", "quo\"te", "back\\slash", "é"] {
            assert!(check_scope(bad, "").is_err(), "{bad:?}");
        }
        assert!(check_scope("ok", &"d".repeat(301)).is_err());
        assert_eq!(
            parse_scope("notes:read|Read your notes | all of them"),
            ("notes:read".into(), "Read your notes | all of them".into())
        );
        assert_eq!(parse_scope(" notes:read "), ("notes:read".into(), String::new()));
    }

    #[test]
    fn a_new_scope_takes_the_lowest_bit_neither_used_nor_lately_retired() {
        let now = UnixTime(1_000_000);
        assert_eq!(free_bit(&[], &[], now), Some(FIRST_REGISTERED));
        assert_eq!(free_bit(&[10, 11], &[(12, UnixTime(now.0 - 10))], now), Some(13), "12 is in quarantine");
        assert_eq!(free_bit(&[10, 11], &[(12, UnixTime(now.0 - BIT_QUARANTINE))], now), Some(12), "served its time");
        let all: Vec<u32> = (FIRST_REGISTERED..=LAST_REGISTERED).collect();
        assert_eq!(free_bit(&all, &[], now), None);
    }
}
