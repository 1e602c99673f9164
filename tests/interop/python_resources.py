#!/usr/bin/env python3
"""Interop: an API registered with latchkey checks tokens with standard Python libraries, unmodified.

- RFC 8707: authlib's OAuth2Session asks for two registered APIs' scopes with `resource`, and narrows the access
  token to one of them at the token endpoint; an unknown resource is `invalid_target`.
- RFC 9068: the API that asked for JWTs verifies its token with PyJWT (PyJWKClient on the discovered jwks_uri,
  `typ` at+jwt, ES256, `aud`, `iss`).
- RFC 7662: the API that kept opaque tokens introspects with authlib (its resource id and secret by HTTP Basic);
  the other API is told `active: false` about the same token.

Environment as python_authlib.py's (LATCHKEY_BIN required). Prints "N passed, M failed".
"""

import secrets
import ssl
import sys
import time
import traceback
import urllib.parse

import jwt
import requests
from authlib.integrations.requests_client import OAuth2Session

# The runner, the browser part and the bookkeeping are python_authlib.py's (same directory).
from python_authlib import EMAIL, PASSWORD, Abort, Latchkey, Loopback, browser_part, check, chrome, main, require

NOTES = "https://notes.example.com/mcp"
WIKI = "https://wiki.example.com"
SCOPES = ["notes:read", "wiki:read"]


def run(binary):
    server = Latchkey(binary)
    loopback = Loopback()
    driver = None
    try:
        server.start()
        project = server.admin("project", "create", "--name", "Own APIs")["project_id"]
        client_id = server.admin(
            "client", "create", "--project", project, "--type", "desktop", "--name", "resources interop"
        )["client_id"]
        server.admin("user", "create", "--email", EMAIL, "--password-stdin", "--name", "Ada", stdin=PASSWORD)
        notes = server.admin(
            "resource", "create", "--project", project, "--uri", NOTES, "--name", "Notes",
            "--scope", "notes:read|Read your notes", "--token-format", "jwt",
        )
        wiki = server.admin(
            "resource", "create", "--project", project, "--uri", WIKI, "--name", "Wiki", "--scope", "wiki:read|Read the wiki"
        )
        require("resource create prints the id, URI and secret", notes.get("secret") and notes.get("uri") == NOTES, notes)
        # A running server reads APIs registered elsewhere within five seconds.
        time.sleep(6)

        meta = requests.get(f"{server.base}/.well-known/openid-configuration", verify=server.cert, timeout=10).json()
        session = OAuth2Session(
            client_id, scope=" ".join(SCOPES), redirect_uri=loopback.redirect_uri, code_challenge_method="S256",
            verify=server.cert, trust_env=False,
        )
        verifier = secrets.token_urlsafe(48)
        url, _ = session.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier)
        url += "&" + urllib.parse.urlencode([("resource", NOTES), ("resource", WIKI)])
        driver = chrome()
        callback = browser_part(driver, url, loopback, scopes=SCOPES)

        token = session.fetch_token(
            meta["token_endpoint"], authorization_response=callback, code_verifier=verifier, resource=NOTES
        )
        check("the code exchange narrowed to one resource grants its scope", token.get("scope") == "notes:read", token)
        access = token["access_token"]
        header = jwt.get_unverified_header(access)
        check("the Notes API's token is typed at+jwt (RFC 9068)", header.get("typ") == "at+jwt", header)
        keys = jwt.PyJWKClient(meta["jwks_uri"], ssl_context=ssl.create_default_context(cafile=server.cert), timeout=10)
        try:
            claims = jwt.decode(
                access, keys.get_signing_key_from_jwt(access).key, algorithms=["ES256"], audience=NOTES,
                issuer=meta["issuer"], options={"require": ["exp", "iat", "sub", "jti", "client_id", "scope"]},
            )
            check("PyJWT verifies it with the JWKS, aud and iss", claims["client_id"] == client_id, claims)
        except jwt.PyJWTError as e:
            check("PyJWT verifies it with the JWKS, aud and iss", False, repr(e))
        try:
            jwt.decode(access, keys.get_signing_key_from_jwt(access).key, algorithms=["ES256"], audience=WIKI)
            check("PyJWT refuses it for the other API's audience", False, "accepted")
        except jwt.InvalidAudienceError:
            check("PyJWT refuses it for the other API's audience", True)

        wiki_token = session.refresh_token(meta["token_endpoint"], resource=WIKI)
        check("a refresh narrowed to the other resource gets its scope", wiki_token.get("scope") == "wiki:read", wiki_token)
        opaque = wiki_token["access_token"]
        api = OAuth2Session(wiki["resource_id"], wiki["secret"], verify=server.cert, trust_env=False)
        r = api.introspect_token(meta["introspection_endpoint"], token=opaque)
        info = r.json() if r.status_code == 200 else {}
        check(
            "the Wiki API introspects with authlib (Basic) and is told the token is for it",
            info.get("active") is True and info.get("aud") == WIKI and info.get("scope") == "wiki:read",
            f"{r.status_code} {r.text[:300]}",
        )
        other = OAuth2Session(notes["resource_id"], notes["secret"], verify=server.cert, trust_env=False)
        r = other.introspect_token(meta["introspection_endpoint"], token=opaque)
        check("the Notes API is told active: false about it", r.status_code == 200 and r.json() == {"active": False}, r.text)
        wrong = OAuth2Session(wiki["resource_id"], "not the secret", verify=server.cert, trust_env=False)
        r = wrong.introspect_token(meta["introspection_endpoint"], token=opaque)
        check("a wrong API secret is 401 invalid_client", r.status_code == 401 and "invalid_client" in r.text, r.text)
        try:
            session.refresh_token(meta["token_endpoint"], resource="https://unknown.example.com")
            check("an unknown resource is invalid_target", False, "accepted")
        except Exception as e:
            check("an unknown resource is invalid_target", getattr(e, "error", None) == "invalid_target", repr(e))
    except Abort as e:
        print(f"stopped after: {e}")
        print("latchkey serve output:\n" + server.output())
    except Exception:
        check("the run completes", False, traceback.format_exc())
    finally:
        if driver is not None:
            driver.quit()
        loopback.stop()
        server.stop()


if __name__ == "__main__":
    sys.exit(main(run))
