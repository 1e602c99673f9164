#!/usr/bin/env python3
"""Interop: PyJWT (unmodified, with `cryptography`) as a Shared Signals receiver of the real latchkey binary.

An app's backend receives the security events (SETs, RFC 8417) latchkey sends about the accounts that granted
the app access: pushed to an HTTPS receiver of its own (RFC 8935, with its own self-signed certificate that
latchkey trusts through `events.push_ca_file`), to a plain-HTTP loopback receiver
(`events.allow_insecure_loopback_push`), and polled (RFC 8936). Every SET is verified the way a receiver
written in Python would: `jwt.PyJWKClient` on the `jwks_uri` of `/.well-known/ssf-configuration`, then
`jwt.decode(..., algorithms=["RS256"], audience=client_id, issuer=issuer)`. The grant the events are about is
a real authorization code flow with PKCE, its sign-in and consent forms posted by a plain `requests` session.

This file holds the test flow; the receiver, the PyJWT checks, the certificate and the sign-in/consent/PKCE
helpers it uses are in ssf_support.py (same directory).

Environment: LATCHKEY_BIN (required) is the latchkey binary; LATCHKEY_INTEROP_KEEP=1 keeps the data directory.
Prints "N passed, M failed" and exits non-zero on any failure. Every wait is bounded.
"""

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

import jwt
import requests

# The runner, the ok/FAIL bookkeeping and the summary are python_authlib.py's (same directory).
from python_authlib import RESULTS, Abort, Latchkey, check, main, require

# The receiver, the PyJWT checks, the certificate and the sign-in/consent flow are ssf_support.py's (same directory).
from ssf_support import (
    ACCOUNT_DISABLED,
    ACCOUNT_ENABLED,
    CREDENTIAL_CHANGE_REQUIRED,
    DEVELOPER,
    EMAIL,
    PASSWORD,
    POLL,
    PUSH,
    TOKEN_REVOKED,
    VERIFICATION,
    Receiver,
    SetVerifier,
    check_set,
    grant,
    self_signed,
    tampered,
    wait_until,
)


def run(binary):
    tls_dir = tempfile.mkdtemp(prefix="ssf-receiver-")
    receiver_cert, receiver_key = self_signed(tls_dir)
    server = Latchkey(binary)
    # `serve` and `admin` read these (admin: the poll URL it prints, the push URL rule, verification interval).
    os.environ.update(
        {
            "LATCHKEY_LISTEN": f"127.0.0.1:{server.port}",
            "LATCHKEY_EVENTS_PUSH_CA_FILE": receiver_cert,
            "LATCHKEY_EVENTS_WORKER_INTERVAL_MS": "200",
            "LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH": "true",
            "LATCHKEY_EVENTS_MIN_VERIFICATION_INTERVAL": "0",
        }
    )
    push_auth = "Bearer receiver-" + secrets.token_hex(8)
    plain_auth = "Bearer plain-" + secrets.token_hex(8)
    receivers = []
    try:
        server.start()
        check("latchkey serve starts with the receiver's certificate as events.push_ca_file", True)

        server.admin("user", "create", "--email", DEVELOPER, "--password-stdin", stdin=PASSWORD + "dev")
        project = server.admin("project", "create", "--name", "SSF interop", "--owner", DEVELOPER)["project_id"]
        server.admin("project", "enable-api", "--project", project)
        push_client = server.admin("client", "create", "--project", project, "--type", "desktop", "--name", "SSF push")[
            "client_id"
        ]
        poll_client = server.admin("client", "create", "--project", project, "--type", "desktop", "--name", "SSF poll")[
            "client_id"
        ]
        user_id = server.admin(
            "user", "create", "--email", EMAIL, "--password-stdin", "--name", "Grace", stdin=PASSWORD
        )["user_id"]
        api_key = server.admin("api-key", "create", "--email", DEVELOPER, "--name", "ssf interop")["api_key"]
        console = {"Authorization": f"Bearer {api_key}"}

        get = lambda path: requests.get(f"{server.base}{path}", verify=server.cert, timeout=10)  # noqa: E731
        meta = get("/.well-known/openid-configuration").json()
        issuer = meta["issuer"]
        ssf = get("/.well-known/ssf-configuration")
        require("ssf-configuration answers 200", ssf.status_code == 200, f"{ssf.status_code} {ssf.text[:200]}")
        ssf = ssf.json()
        check("ssf-configuration names the issuer", ssf.get("issuer") == issuer, ssf.get("issuer"))
        check("its jwks_uri is the OpenID one", ssf.get("jwks_uri") == meta.get("jwks_uri"), ssf.get("jwks_uri"))
        check(
            "it offers push and poll",
            set(ssf.get("delivery_methods_supported", [])) >= {PUSH, POLL},
            ssf.get("delivery_methods_supported"),
        )
        endpoints = {
            "configuration_endpoint": "/ssf/stream",
            "status_endpoint": "/ssf/status",
            "add_subject_endpoint": "/ssf/subjects/add",
            "remove_subject_endpoint": "/ssf/subjects/remove",
            "verification_endpoint": "/ssf/verify",
        }
        check(
            "it names the stream, status, subject and verification endpoints",
            all(ssf.get(k) == issuer + v for k, v in endpoints.items()),
            {k: ssf.get(k) for k in endpoints},
        )
        risc = get("/.well-known/risc-configuration")
        check(
            "risc-configuration is the same document", risc.status_code == 200 and risc.json() == ssf, risc.text[:200]
        )

        # The grants the events are about: one per client, each a code flow with PKCE.
        push_token = grant(server, meta, push_client)
        grant(server, meta, poll_client)
        check("the user granted both clients access (code flow with PKCE)", True)

        # The push stream, made by the receiver over SSF's HTTP API. It comes first: the first stream makes the RS256
        # event key, and the serving instance publishes (and polls sign with) one that `latchkey admin` made only
        # after its next key reload (up to 60 s).
        https_receiver = Receiver(push_client, push_auth, tls=(receiver_cert, receiver_key))
        receivers.append(https_receiver)
        body = {
            "aud": push_client,
            "delivery": {"method": PUSH, "endpoint_url": https_receiver.url, "authorization_header": push_auth},
            "description": "PyJWT receiver",
        }
        # Up to 60 s: this request makes the 2048-bit RSA key, which the debug build the suite runs takes seconds to
        # find, and more while the other interop scripts share the machine's cores (10 s was once too few).
        r = requests.post(ssf["configuration_endpoint"], json=body, headers=console, verify=server.cert, timeout=60)
        require(
            "POST /ssf/stream with a console API key makes the push stream (201)",
            r.status_code == 201,
            f"{r.status_code} {r.text[:300]}",
        )
        stream = r.json()
        stream_id = stream["stream_id"]
        check(
            "the stream shows the push URL and not the authorization",
            stream.get("delivery") == {"method": PUSH, "endpoint_url": https_receiver.url} and push_auth not in r.text,
            stream.get("delivery"),
        )
        check("the stream's aud is the client", stream.get("aud") == push_client, stream.get("aud"))
        r = requests.post(ssf["configuration_endpoint"], json=body, headers=console, verify=server.cert, timeout=10)
        check(
            "a second stream for the client is refused (409)", r.status_code == 409, f"{r.status_code} {r.text[:200]}"
        )
        r = requests.post(ssf["configuration_endpoint"], json=body, verify=server.cert, timeout=10)
        check("the stream endpoint wants a console API key (401)", r.status_code == 401, f"{r.status_code}")

        jwks = requests.get(ssf["jwks_uri"], verify=server.cert, timeout=10).json()
        rsa = [k for k in jwks.get("keys", []) if k.get("kty") == "RSA"]
        check(
            "the JWKS holds the RSA event key once a stream exists",
            len(rsa) >= 1,
            [k.get("kty") for k in jwks.get("keys", [])],
        )
        verifier = SetVerifier(ssf["jwks_uri"], server.cert, issuer)
        https_receiver.verifier = verifier

        # The poll stream, made by the operator's CLI.
        poll_stream = server.admin("stream", "create", "--client", poll_client, "--poll")
        poll_url = poll_stream.get("delivery", {}).get("endpoint_url")
        check(
            "admin stream create --poll prints the stream and latchkey's poll URL",
            poll_stream.get("delivery", {}).get("method") == POLL
            and poll_url == f"{issuer}/ssf/poll/{poll_stream.get('stream_id')}",
            poll_stream,
        )

        # The actions, in order: verification first (the stream's own subject), then the account's four.
        state = "state-" + secrets.token_hex(4)
        r = requests.post(
            ssf["verification_endpoint"],
            json={"stream_id": stream_id, "state": state},
            headers=console,
            verify=server.cert,
            timeout=10,
        )
        check("POST /ssf/verify answers 204", r.status_code == 204, f"{r.status_code} {r.text[:200]}")
        require("the verification event is pushed", len(https_receiver.wait_for(1)) >= 1, "nothing arrived")
        server.admin("user", "disable", "--email", EMAIL)
        server.admin("user", "enable", "--email", EMAIL)
        server.admin("user", "require-password-change", "--email", EMAIL)
        revoked = server.admin("user", "revoke-app", "--email", EMAIL, "--client", push_client)
        check("admin user revoke-app removes the push client's access", revoked is not None, revoked)
        pushes = https_receiver.wait_for(5)
        require("five SETs are pushed", len(pushes) == 5, f"{len(pushes)} arrived: {[p['error'] for p in pushes]}")

        for p in pushes:
            check(
                "PyJWT (PyJWKClient + jwt.decode RS256, aud, iss, iat, jti) verifies the pushed SET",
                p["claims"] is not None and p["status"] == 202,
                p["error"],
            )
        require("every pushed SET verified", all(p["claims"] for p in pushes))
        check(
            "every push is Content-Type application/secevent+jwt",
            all((p["content_type"] or "").split(";")[0].strip() == "application/secevent+jwt" for p in pushes),
            [p["content_type"] for p in pushes],
        )
        check(
            "every push carries the configured Authorization header",
            all(p["authorization"] == push_auth for p in pushes),
            [p["authorization"] for p in pushes],
        )
        account = {"format": "iss_sub", "iss": issuer, "sub": user_id}
        kinds = []
        for i, p in enumerate(pushes):
            subject = {"format": "opaque", "id": stream_id} if i == 0 else account
            kinds.append(check_set(f"pushed SET {i + 1}", p["set"], p["claims"], issuer, push_client, subject))
        expected = [VERIFICATION, ACCOUNT_DISABLED, ACCOUNT_ENABLED, CREDENTIAL_CHANGE_REQUIRED, TOKEN_REVOKED]
        check("the events arrive in the order of the actions", kinds == expected, kinds)
        events = [p["claims"]["events"] for p in pushes]
        check("the verification event carries the state", events[0].get(VERIFICATION) == {"state": state}, events[0])
        revoked_event = events[4].get(TOKEN_REVOKED, {})
        check(
            "token-revoked names the refresh token by its prefix",
            revoked_event == {"token_identifier_alg": "prefix", "token": push_token["refresh_token"][:26]},
            revoked_event,
        )
        check(
            "each SET has its own jti and txn",
            len({p["claims"]["jti"] for p in pushes}) == 5 and len({p["claims"]["txn"] for p in pushes}) == 5,
            [(p["claims"]["jti"], p["claims"]["txn"]) for p in pushes],
        )

        # A receiver's refusals, through PyJWT.
        original = pushes[1]["set"]
        try:
            verifier.decode(tampered(original), push_client)
            check("a SET tampered in its payload fails PyJWT verification", False, "it verified")
        except jwt.InvalidSignatureError:
            check("a SET tampered in its payload fails PyJWT verification", True)
        try:
            verifier.decode(original, poll_client)
            check("a SET for another client fails PyJWT's audience check", False, "it verified")
        except jwt.InvalidAudienceError:
            check("a SET for another client fails PyJWT's audience check", True)
        try:
            jwt.decode(original, verifier.jwks.get_signing_key_from_jwt(original), algorithms=["ES256"])
            check("PyJWT refuses a SET whose alg is not the one allowed", False, "it verified")
        except jwt.InvalidAlgorithmError:
            check("PyJWT refuses a SET whose alg is not the one allowed", True)

        r = requests.delete(
            ssf["configuration_endpoint"],
            params={"stream_id": stream_id},
            headers=console,
            verify=server.cert,
            timeout=10,
        )
        check(
            "DELETE /ssf/stream deletes the push stream (204)", r.status_code == 204, f"{r.status_code} {r.text[:200]}"
        )

        # A plain-HTTP loopback receiver: refused without events.allow_insecure_loopback_push, then accepted.
        plain = Receiver(push_client, plain_auth)
        receivers.append(plain)
        plain.verifier = verifier
        refused = subprocess.run(
            [
                binary,
                "admin",
                "--data-dir",
                server.data_dir,
                "stream",
                "create",
                "--client",
                push_client,
                "--push-url",
                plain.url,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "LATCHKEY_EVENTS_ALLOW_INSECURE_LOOPBACK_PUSH": "false"},
        )
        check(
            "an http:// push URL is refused without allow_insecure_loopback_push",
            refused.returncode != 0 and "allow_insecure_loopback_push" in refused.stderr,
            f"{refused.returncode} {refused.stderr[:200]}",
        )
        plain_stream = server.admin(
            "stream", "create", "--client", push_client, "--push-url", plain.url, "--push-authorization", plain_auth
        )
        plain_id = plain_stream["stream_id"]
        check(
            "with it, admin stream create takes the http:// loopback push URL",
            plain_stream.get("delivery") == {"method": PUSH, "endpoint_url": plain.url},
            plain_stream,
        )
        server.admin("stream", "verify", plain_id, "--state", "plain")
        got = plain.wait_for(1)
        ok = len(got) == 1 and got[0]["claims"] is not None
        check("the plain-HTTP receiver gets a SET that PyJWT verifies", ok, got and got[0]["error"])
        if ok:
            check_set(
                "plain-HTTP SET",
                got[0]["set"],
                got[0]["claims"],
                issuer,
                push_client,
                {"format": "opaque", "id": plain_id},
            )
            check(
                "it carries the configured Authorization",
                got[0]["authorization"] == plain_auth,
                got[0]["authorization"],
            )
            check(
                "it is the verification asked for",
                got[0]["claims"]["events"] == {VERIFICATION: {"state": "plain"}},
                got[0]["claims"],
            )
        # A 400 with an RFC 8935 error is final: latchkey records it and does not send the SET again.
        plain.refuse_state = "refuse"
        server.admin("stream", "verify", plain_id, "--state", "refuse")
        got = plain.wait_for(2)
        check("the refused SET arrives", len(got) == 2 and got[-1]["status"] == 400, [p["status"] for p in got])
        if len(got) == 2 and got[-1]["claims"]:
            jti = got[-1]["claims"]["jti"]

            def recorded():
                rows = server.admin("stream", "deliveries", plain_id)["deliveries"]
                row = next((d for d in rows if d["jti"] == jti), None)
                return row if row and row["state"] != "pending" else None

            row = wait_until(recorded)
            check(
                "latchkey records the 400 as final (failed, with the receiver's err)",
                row is not None and row["state"] == "failed" and "invalid_request" in (row.get("last_error") or ""),
                row,
            )
            time.sleep(2)  # ten worker passes
            arrivals = sum(1 for p in plain.pushes if p["claims"] and p["claims"]["jti"] == jti)
            check("the refused SET is not sent again", arrivals == 1, f"{arrivals} arrivals")
        server.admin("stream", "delete", plain_id)

        # The poll stream (RFC 8936): the same account's events for the other client, verified by PyJWT.
        poll_id = poll_stream["stream_id"]

        def poll(body, headers=console):
            return requests.post(poll_url, json=body, headers=headers, verify=server.cert, timeout=20)

        r = poll({"maxEvents": 10, "returnImmediately": True}, headers={})
        check("the poll endpoint wants a console API key (401)", r.status_code == 401, f"{r.status_code}")
        r = poll({"maxEvents": 1, "returnImmediately": True})
        require("a poll answers 200", r.status_code == 200, f"{r.status_code} {r.text[:300]}")
        first = r.json()
        check(
            "maxEvents 1 returns one SET and says more are available",
            len(first.get("sets", {})) == 1 and first.get("moreAvailable") is True,
            first,
        )
        r = poll({"maxEvents": 10, "returnImmediately": True})
        polled = r.json()
        sets = polled.get("sets", {})
        check(
            "the poll returns the account's three events, no more",
            len(sets) == 3 and polled.get("moreAvailable") is False,
            list(sets),
        )
        check(
            "an unacknowledged SET is offered again",
            set(first.get("sets", {})) <= set(sets),
            (list(first.get("sets", {})), list(sets)),
        )
        poll_kinds = []
        for jti, token in sorted(sets.items(), key=lambda kv: int(kv[0].rsplit(".", 1)[-1])):
            try:
                claims = verifier.decode(token, poll_client)
            except Exception as e:
                check("PyJWT verifies the polled SET", False, repr(e))
                continue
            check("PyJWT verifies the polled SET", claims.get("jti") == jti, (jti, claims.get("jti")))
            poll_kinds.append(check_set("polled SET", token, claims, issuer, poll_client, account))
        check(
            "the polled events are the account's, in order (no token-revoked: that was the other client)",
            poll_kinds == [ACCOUNT_DISABLED, ACCOUNT_ENABLED, CREDENTIAL_CHANGE_REQUIRED],
            poll_kinds,
        )
        r = poll({"ack": list(sets), "maxEvents": 0, "returnImmediately": True})
        check(
            "acknowledging the SETs answers 200",
            r.status_code == 200 and r.json().get("sets") == {},
            f"{r.status_code} {r.text[:200]}",
        )
        r = poll({"maxEvents": 10, "returnImmediately": True})
        check(
            "after the acknowledgement the next poll is empty",
            r.status_code == 200 and r.json() == {"sets": {}, "moreAvailable": False},
            f"{r.status_code} {r.text[:200]}",
        )
        deliveries = server.admin("stream", "deliveries", poll_id)["deliveries"]
        check(
            "the acknowledged SETs are recorded as delivered",
            sorted(d["jti"] for d in deliveries if d["state"] == "delivered") == sorted(sets),
            [(d["jti"], d["state"]) for d in deliveries],
        )
    except Abort as e:
        print(f"stopped after: {e}")
        print("latchkey serve output:\n" + server.output())
    except Exception:
        traceback.print_exc(file=sys.stdout)
        RESULTS["failed"] += 1
        if server.log and not server.log.closed:
            print("latchkey serve output:\n" + server.output())
    finally:
        for receiver in receivers:
            receiver.stop()
        server.stop()
        shutil.rmtree(tls_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(run))
