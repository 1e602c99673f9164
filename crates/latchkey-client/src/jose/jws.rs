//! The compact JWS a signed token travels in (RFC 7515): its three parts, and the header checks of RFC 8725 (an
//! explicit `typ`, an allowed algorithm, a `kid`), which SETs (RFC 8417 §2.3) and JWT access tokens (RFC 9068
//! §2.1) share.

use super::JoseError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;

/// The signing algorithms a token may use; `none` and the HMAC family never are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (what latchkey signs SETs with).
    Rs256,
    /// ECDSA on P-256 with SHA-256 (what latchkey signs ID tokens and JWT access tokens with by default).
    Es256,
}

impl Alg {
    /// The algorithm's JOSE name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Es256 => "ES256",
        }
    }
}

/// A compact JWS whose header passed the checks; the signature is not verified yet.
#[derive(Debug)]
pub(crate) struct CompactJws<'a> {
    /// The header's `alg`.
    pub(crate) alg: Alg,
    /// The header's `kid`.
    pub(crate) kid: String,
    /// `BASE64URL(header) '.' BASE64URL(payload)`: the bytes the signature covers.
    pub(crate) signing_input: &'a [u8],
    /// The decoded payload (the claims, not yet read).
    pub(crate) payload: Vec<u8>,
    /// The decoded signature.
    pub(crate) signature: Vec<u8>,
}

/// The header members that are checked.
#[derive(Deserialize)]
struct Header {
    alg: Option<String>,
    typ: Option<String>,
    kid: Option<String>,
    crit: Option<serde_json::Value>,
}

/// Splits a compact JWS and checks its header: `typ` is `typ` (`secevent+jwt` for a SET, `at+jwt` for an access
/// token; with or without the `application/` prefix, in any case), `alg` is RS256 or ES256, a `kid` is given, and
/// no `crit` extension is asked for (none is understood).
pub(crate) fn parse<'a>(body: &'a [u8], typ: &str) -> Result<CompactJws<'a>, JoseError> {
    let body = body.trim_ascii();
    let malformed = |what: &str| JoseError::Malformed(format!("not a compact JWS: {what}"));
    let mut parts = body.split(|b| *b == b'.');
    let (Some(header), Some(payload), Some(signature), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(malformed("it must have three parts separated by dots"));
    };
    let decode = |part: &[u8], name: &str| {
        URL_SAFE_NO_PAD.decode(part).map_err(|_| malformed(&format!("the {name} is not base64url")))
    };
    let header: Header = serde_json::from_slice(&decode(header, "header")?)
        .map_err(|e| malformed(&format!("the header is not a JSON object: {e}")))?;
    let payload_bytes = decode(payload, "payload")?;
    let signature = decode(signature, "signature")?;
    check_typ(header.typ.as_deref(), typ)?;
    if header.crit.is_some() {
        return Err(JoseError::Malformed("the header asks for crit extensions, which are not understood".into()));
    }
    let alg = match header.alg.as_deref() {
        Some("RS256") => Alg::Rs256,
        Some("ES256") => Alg::Es256,
        Some(other) => return Err(JoseError::Key(format!("the algorithm {other} is not accepted"))),
        None => return Err(JoseError::Malformed("the header has no alg".into())),
    };
    let kid = header.kid.filter(|k| !k.is_empty()).ok_or_else(|| JoseError::Key("the header has no kid".into()))?;
    let signing_input = &body[..header_and_payload_len(body)];
    Ok(CompactJws { alg, kid, signing_input, payload: payload_bytes, signature })
}

/// RFC 8725 §3.11 (RFC 8417 §2.3, RFC 9068 §2.1): a token is explicitly typed, so that it cannot be mistaken for
/// another JWT (an ID token, a SET, an access token) signed with the same key.
fn check_typ(typ: Option<&str>, expected: &str) -> Result<(), JoseError> {
    let Some(typ) = typ else {
        return Err(JoseError::Malformed(format!("the header has no typ; it must be {expected}")));
    };
    let bare = match typ.get(..12) {
        Some(prefix) if prefix.eq_ignore_ascii_case("application/") => &typ[12..],
        _ => typ,
    };
    if bare.eq_ignore_ascii_case(expected) {
        Ok(())
    } else {
        Err(JoseError::Malformed(format!("the header's typ is {typ}, not {expected}")))
    }
}

/// The length of `header.payload` in a body known to hold exactly two dots.
fn header_and_payload_len(body: &[u8]) -> usize {
    body.iter().rposition(|b| *b == b'.').unwrap_or(body.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jws(header: &str) -> String {
        format!("{}.{}.{}", URL_SAFE_NO_PAD.encode(header), URL_SAFE_NO_PAD.encode("{}"), URL_SAFE_NO_PAD.encode("s"))
    }

    #[test]
    fn the_typ_may_carry_the_media_type_prefix_in_any_case() {
        for typ in ["secevent+jwt", "application/secevent+jwt", "Application/SECEVENT+JWT"] {
            let body = jws(&format!(r#"{{"alg":"RS256","typ":"{typ}","kid":"k"}}"#));
            let parsed = parse(body.as_bytes(), "secevent+jwt").expect(typ);
            assert_eq!((parsed.alg, parsed.kid.as_str(), parsed.signature.as_slice()), (Alg::Rs256, "k", &b"s"[..]));
        }
        let body = jws(r#"{"alg":"RS256","typ":"JWT","kid":"k"}"#);
        assert!(matches!(parse(body.as_bytes(), "secevent+jwt"), Err(JoseError::Malformed(_))));
    }

    #[test]
    fn the_typ_asked_for_is_the_one_accepted() {
        for typ in ["at+jwt", "application/at+jwt", "AT+JWT"] {
            let body = jws(&format!(r#"{{"alg":"ES256","typ":"{typ}","kid":"k"}}"#));
            assert!(parse(body.as_bytes(), "at+jwt").is_ok(), "{typ}");
            assert!(matches!(parse(body.as_bytes(), "secevent+jwt"), Err(JoseError::Malformed(_))), "{typ}");
        }
        let body = jws(r#"{"alg":"ES256","typ":"application/secevent+jwt","kid":"k"}"#);
        assert!(matches!(parse(body.as_bytes(), "at+jwt"), Err(JoseError::Malformed(_))));
    }

    #[test]
    fn the_signing_input_is_the_first_two_parts() {
        let body = jws(r#"{"alg":"ES256","typ":"secevent+jwt","kid":"k"}"#);
        let with_newline = format!("{body}\r\n");
        let parsed = parse(with_newline.as_bytes(), "secevent+jwt").expect("parsed");
        assert_eq!(parsed.signing_input, body.rsplit_once('.').expect("dot").0.as_bytes());
        assert_eq!(parsed.alg, Alg::Es256);
    }

    #[test]
    fn malformed_bodies_are_malformed_and_other_algorithms_refused() {
        for body in ["", "a.b", "a.b.c.d", "!!.e30.cw", &jws("[1]"), &jws(r#"{"typ":"secevent+jwt","kid":"k"}"#)] {
            assert!(matches!(parse(body.as_bytes(), "secevent+jwt"), Err(JoseError::Malformed(_))), "{body}");
        }
        let crit = jws(r#"{"alg":"RS256","typ":"secevent+jwt","kid":"k","crit":["exp"]}"#);
        assert!(matches!(parse(crit.as_bytes(), "secevent+jwt"), Err(JoseError::Malformed(_))));
        for alg in ["none", "HS256", "RS384"] {
            let body = jws(&format!(r#"{{"alg":"{alg}","typ":"secevent+jwt","kid":"k"}}"#));
            assert!(matches!(parse(body.as_bytes(), "secevent+jwt"), Err(JoseError::Key(_))), "{alg}");
        }
    }
}
