//! Refresh tokens: `lkr_`, the grant's id (22 base64url characters), then 32 random bytes (43 characters).
//!
//! The token names its grant so that the store finds the grant through its time-ordered id and only compares
//! the token's hash with the stored one (in constant time), instead of searching an index of hashes: that index
//! took one random page write per issued grant and stopped fitting any cache with millions of grants. The id is
//! no secret (it is also inside every access token); the random part is what makes the token unguessable, and
//! only its hash (of the whole token) is stored.
//!
//! Tokens issued before this format (`lkr_` and 43 characters) carry no id; [`grant_id`] returns `None` for
//! them, and their grants are found by hash (the store's legacy lookup).

use crate::access_token::{GrantId, MacKey};
use crate::secret::{Random, Secret};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// The prefix of every refresh token.
pub const PREFIX: &str = "lkr_";
/// The length of a grant id's text form.
const ID_CHARS: usize = 22;
/// The length of the random part's text form (32 bytes).
const SECRET_CHARS: usize = 43;

/// A fresh refresh token for the grant `id`.
pub fn generate(id: &GrantId, random: &dyn Random) -> Secret {
    let mut bytes = [0u8; 32];
    random.fill(&mut bytes);
    Secret::new(format!("{PREFIX}{}{}", id.encode(), URL_SAFE_NO_PAD.encode(bytes)))
}

/// What a rotation's MAC is over, before the retired token: kept apart from the key's other uses.
const ROTATION_CONTEXT: &[u8] = b"latchkey refresh-token rotation\0";

/// The refresh token that replaces `token` when grant `id`'s token rotates: the grant's id, then the MAC under
/// `key` of the retired token. Made again from the same token and key, it is the same, so that a response lost on
/// its way can be given again in the grace period without the new token being stored; without the key, the
/// retired token tells nothing of its successor.
pub fn successor(id: &GrantId, token: &str, key: &MacKey) -> Secret {
    let mut data = Vec::with_capacity(ROTATION_CONTEXT.len() + token.len());
    data.extend_from_slice(ROTATION_CONTEXT);
    data.extend_from_slice(token.as_bytes());
    Secret::new(format!("{PREFIX}{}{}", id.encode(), URL_SAFE_NO_PAD.encode(key.tag(&data))))
}

/// The grant a refresh token names, when it has this module's form; `None` for anything else (a token of the
/// earlier form, a foreign string). Whether the token is the grant's is for the hash comparison to say.
pub fn grant_id(token: &str) -> Option<GrantId> {
    let body = token.strip_prefix(PREFIX)?;
    if body.len() != ID_CHARS + SECRET_CHARS || !body.is_char_boundary(ID_CHARS) {
        return None;
    }
    GrantId::decode(&body[..ID_CHARS])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::{self, Counter};
    use crate::time::UnixTime;

    #[test]
    fn a_token_names_its_grant_and_is_unique() {
        let rng = Counter::default();
        let id = GrantId::generate_at(UnixTime(1_700_000_000), &rng);
        let (a, b) = (generate(&id, &rng), generate(&id, &rng));
        assert_eq!(a.expose().len(), PREFIX.len() + ID_CHARS + SECRET_CHARS);
        assert!(a.expose().bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'));
        assert_eq!(grant_id(a.expose()), Some(id));
        assert_ne!(a.expose(), b.expose(), "the random part differs");
    }

    #[test]
    fn a_successor_is_a_token_of_the_grant_made_again_only_with_the_key() {
        let rng = Counter::default();
        let id = GrantId::generate_at(UnixTime(1_700_000_000), &rng);
        let old = generate(&id, &rng);
        let (key, other) = (MacKey::new(1, b"one key"), MacKey::new(2, b"another key"));
        let next = successor(&id, old.expose(), &key);
        assert_eq!(grant_id(next.expose()), Some(id), "the new token has the form, and names the grant");
        assert_eq!(next.expose(), successor(&id, old.expose(), &key).expose(), "made again, the same");
        assert_ne!(next.expose(), successor(&id, old.expose(), &other).expose(), "another key, another token");
        assert_ne!(next.expose(), old.expose());
        let after = successor(&id, next.expose(), &key);
        assert_ne!(after.expose(), next.expose(), "each rotation a new token");
    }

    #[test]
    fn other_forms_name_no_grant() {
        let rng = Counter::default();
        let legacy = Secret::generate(PREFIX, &rng);
        assert_eq!(grant_id(legacy.expose()), None, "the earlier form: lkr_ and 43 characters");
        let id = GrantId::generate(&rng).encode();
        let secret = secret::random_b64(32, &rng);
        assert_eq!(grant_id(&format!("lka_{id}{secret}")), None, "another prefix");
        assert_eq!(grant_id(&format!("{PREFIX}{id}{secret}x")), None, "too long");
        assert_eq!(grant_id(&format!("{PREFIX}{}{secret}", "!".repeat(22))), None, "not base64url");
        assert_eq!(grant_id(&format!("{PREFIX}{}é{}", &id[..21], &secret[..42])), None, "not ASCII");
        assert_eq!(grant_id(""), None);
    }
}
