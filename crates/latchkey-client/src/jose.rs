//! The JOSE pieces the SDK verifies signed tokens with, shared by the receiver of Security Event Tokens
//! ([`crate::events`]) and the verifier of JWT access tokens ([`crate::resource_server`]): the compact JWS and its
//! header checks ([`jws`]), the issuer's public keys ([`keys`]), their cache ([`key_cache`]), and the reading of
//! the registered claims both kinds of token carry ([`claims`]).

pub(crate) mod claims;
pub(crate) mod jws;
pub(crate) mod key_cache;
pub(crate) mod keys;
#[cfg(test)]
pub(crate) mod test_keys;

/// Why a signed token failed the checks shared by every kind of token; each user maps it to its own error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum JoseError {
    /// Not a compact JWS, a header that is not JSON, no `alg`, the wrong `typ`, a `crit` extension.
    Malformed(String),
    /// An algorithm that is not accepted, no `kid`, a key the issuer does not have or of another type, or a
    /// signature that does not verify.
    Key(String),
    /// The token names a key that is not held and the issuer's keys could not be fetched: the token may be valid.
    KeysUnavailable(String),
}
