#!/usr/bin/env python3
"""Interop: service-account client libraries (unmodified) against the real latchkey binary (docs/service-accounts.md).

A content owner's tool loads the key file `latchkey admin service-account key create` wrote, as it is, and gets an
access token with the JWT bearer grant (RFC 7523) at the file's `token_uri`, then lists the owner's channels on its
behalf. Two libraries do it:

- google-auth: `google.oauth2.service_account.Credentials.from_service_account_file` (the best-known provider's
  own library: scope as a claim, no `jti`), with `google.auth.transport.requests.AuthorizedSession`;
- authlib: `AssertionSession` (RFC 7521/7523 generic client: scope as a form parameter, a `jti`).

Refusals come back as the libraries' own errors: a disabled account, an unknown key, a disabled key, a token
stopped when its key is disabled, and an account without the owner's role (403 accountDelegationForbidden).

Environment: LATCHKEY_BIN (required) is the latchkey binary; LATCHKEY_INTEROP_KEEP=1 keeps the data directory.
Prints "N passed, M failed" and exits non-zero on any failure. Every wait is bounded.
"""

import json
import os
import sys
import traceback

import google.auth.exceptions
import google.auth.transport.requests
import requests
from authlib.integrations.requests_client import AssertionSession
from google.oauth2 import service_account
from joserfc.jwk import RSAKey

# The runner, the ok/FAIL bookkeeping and the summary are python_authlib.py's (same directory).
from python_authlib import RESULTS, Abort, Latchkey, check, main, require

READONLY = "https://latchkey.dev/auth/readonly"
PASSWORD = "correct horse battery staple"


def session(cert):
    s = requests.Session()
    s.verify = cert
    return s


def channels(http, server, owner, token=None, query="managedByMe=true"):
    url = f"{server.base}/video/v3/channels?part=snippet&{query}&onBehalfOfContentOwner={owner}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return http.get(url, headers=headers, timeout=10)


def run(binary):
    # The server runs on a port of its own, named by `serve --listen` alone: the key file's token_uri is the one
    # `serve` recorded in the store, with no configuration of `admin`'s to match it.
    server = Latchkey(binary)
    # requests prefers REQUESTS_CA_BUNDLE over a session's `verify`: name the server's certificate there, as an
    # operator of a private CA would for these libraries.
    os.environ["REQUESTS_CA_BUNDLE"] = server.cert
    os.environ.pop("CURL_CA_BUNDLE", None)
    try:
        server.start()
        check("latchkey serve starts", True)
        for email in ("artist@example.com", "band@example.com"):
            server.admin("user", "create", "--email", email, "--password-stdin", stdin=PASSWORD)
        project = server.admin("project", "create", "--name", "Label tools")["project_id"]
        server.admin("project", "enable-api", "--project", project)
        owner = server.admin("content-owner", "create", "--name", "Big Label")["content_owner_id"]
        for email in ("artist@example.com", "band@example.com"):
            server.admin("content-owner", "link-channel", "--owner", owner, "--email", email)
        email = server.admin("service-account", "create", "--project", project, "--name", "uploader")["email"]
        server.admin("content-owner", "grant", "--owner", owner, "--service-account", email)
        key_path = os.path.join(server.data_dir, "uploader-key.json")
        key_id = server.admin("service-account", "key", "create", "--account", email, "--out", key_path)["key_id"]
        with open(key_path) as f:
            key_file = json.load(f)
        require("the key file names latchkey's token endpoint", key_file["token_uri"] == f"{server.base}/token",
                key_file["token_uri"])

        google_auth(server, key_path, owner, email, key_id)
        authlib(server, key_file, owner)
    except Abort:
        pass
    except Exception:
        check("the run completes", False, traceback.format_exc())
    finally:
        server.stop()


def google_auth(server, key_path, owner, email, key_id):
    http = session(server.cert)
    request = google.auth.transport.requests.Request(session=http)
    creds = service_account.Credentials.from_service_account_file(key_path, scopes=[READONLY])
    check("google-auth loads the key file as it is", creds.service_account_email == email)
    try:
        creds.refresh(request)
    except google.auth.exceptions.RefreshError as e:
        require("google-auth obtains an access token", False, str(e))
    require("google-auth obtains an access token", creds.valid and creds.token.startswith("lka_"))
    authed = google.auth.transport.requests.AuthorizedSession(creds)
    authed.verify = server.cert
    r = authed.get(f"{server.base}/video/v3/channels?part=snippet&managedByMe=true&onBehalfOfContentOwner={owner}")
    items = r.json().get("items", []) if r.status_code == 200 else []
    check("google-auth's AuthorizedSession lists the owner's two channels", len(items) == 2, f"{r.status_code} {r.text}")

    # The token stops at its next use once its key is disabled, and works again once it is enabled.
    server.admin("service-account", "key", "disable", "--key", key_id)
    r = channels(http, server, owner, creds.token)
    check("a disabled key's token is refused (401)", r.status_code == 401, r.text)
    fresh = service_account.Credentials.from_service_account_file(key_path, scopes=[READONLY])
    refused(fresh, request, "a disabled key gets no new token", "Invalid JWT Signature")
    server.admin("service-account", "key", "enable", "--key", key_id)
    check("enabled again, the token works", channels(http, server, owner, creds.token).status_code == 200)

    with open(key_path) as f:
        info = json.load(f)
    info["private_key_id"] = "0" * 40
    unknown = service_account.Credentials.from_service_account_info(info, scopes=[READONLY])
    refused(unknown, request, "an unknown private_key_id is refused", "Invalid JWT Signature")
    wrong_scope = service_account.Credentials.from_service_account_file(key_path, scopes=["openid"])
    refused(wrong_scope, request, "a person's scope is refused", "invalid_scope")

    server.admin("service-account", "disable", "--account", email)
    disabled = service_account.Credentials.from_service_account_file(key_path, scopes=[READONLY])
    refused(disabled, request, "a disabled account gets no token", "disabled")
    server.admin("service-account", "enable", "--account", email)

    # An account without the owner's role: 403 accountDelegationForbidden, the reason in the platform's error body.
    other = server.admin("content-owner", "create", "--name", "Other Label")["content_owner_id"]
    r = channels(http, server, other, creds.token)
    reason = r.json().get("error", {}).get("errors", [{}])[0].get("reason") if r.status_code == 403 else None
    check("another owner's channels are 403 accountDelegationForbidden", reason == "accountDelegationForbidden", r.text)


def refused(creds, request, name, text):
    try:
        creds.refresh(request)
        check(name, False, "a token was issued")
    except google.auth.exceptions.RefreshError as e:
        check(name, text in str(e), str(e))


def authlib(server, key_file, owner):
    s = AssertionSession(
        token_endpoint=key_file["token_uri"],
        issuer=key_file["client_email"],
        subject=None,
        scope=READONLY,
        key=RSAKey.import_key(key_file["private_key"]),
        alg="RS256",
        header={"kid": key_file["private_key_id"]},
    )
    s.verify = server.cert
    try:
        token = s.refresh_token()
    except Exception as e:
        require("authlib's AssertionSession obtains a token (scope as a parameter, a jti)", False, repr(e))
    require("authlib's AssertionSession obtains a token (scope as a parameter, a jti)",
            token.get("token_type") == "Bearer" and "refresh_token" not in token, str(token))
    r = s.get(f"{server.base}/video/v3/channels?part=id&id=UCnone&onBehalfOfContentOwner={owner}")
    check("authlib's session calls the data API with it", r.status_code == 200 and r.json()["items"] == [], r.text)


if __name__ == "__main__":
    sys.exit(main(run))
