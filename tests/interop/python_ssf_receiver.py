#!/usr/bin/env python3
"""Interop: PyJWT (unmodified, with `cryptography`) as a Shared Signals receiver of the real latchkey binary.

An app's backend receives the security events (SETs, RFC 8417) latchkey sends about the accounts that granted
the app access: pushed to an HTTPS receiver of its own (RFC 8935, with its own self-signed certificate that
latchkey trusts through `events.push_ca_file`), to a plain-HTTP loopback receiver
(`events.allow_insecure_loopback_push`), and polled (RFC 8936). Every SET is verified the way a receiver
written in Python would: `jwt.PyJWKClient` on the `jwks_uri` of `/.well-known/ssf-configuration`, then
`jwt.decode(..., algorithms=["RS256"], audience=client_id, issuer=issuer)`. The grant the events are about is
a real authorization code flow with PKCE, its sign-in and consent forms posted by a plain `requests` session.

Environment: LATCHKEY_BIN (required) is the latchkey binary; LATCHKEY_INTEROP_KEEP=1 keeps the data directory.
Prints "N passed, M failed" and exits non-zero on any failure. Every wait is bounded.
"""

import base64
import datetime
import hashlib
import html.parser
import http.server
import ipaddress
import json
import os
import secrets
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

import jwt
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# The runner, the ok/FAIL bookkeeping and the summary are python_authlib.py's (same directory).
from python_authlib import READONLY, RESULTS, Abort, Latchkey, check, free_port, main, require

RISC = "https://schemas.openid.net/secevent/risc/event-type/"
VERIFICATION = "https://schemas.openid.net/secevent/ssf/event-type/verification"
ACCOUNT_DISABLED = RISC + "account-disabled"
ACCOUNT_ENABLED = RISC + "account-enabled"
CREDENTIAL_CHANGE_REQUIRED = RISC + "account-credential-change-required"
TOKEN_REVOKED = "https://schemas.openid.net/secevent/oauth/event-type/token-revoked"
PUSH = "urn:ietf:rfc:8935"
POLL = "urn:ietf:rfc:8936"

SCOPES = ["openid", "email", READONLY]
EMAIL = "grace@example.com"
DEVELOPER = "dev@example.com"
PASSWORD = "interop password " + secrets.token_hex(4)
WAIT = 30  # seconds: the bound of every wait

# Pushes answered with an RFC 8935 error, by the PyJWT exception that refused them.
PUSH_ERRORS = {
    jwt.InvalidIssuerError: "invalid_issuer",
    jwt.InvalidAudienceError: "invalid_audience",
    jwt.InvalidSignatureError: "invalid_key",
    jwt.PyJWKClientError: "invalid_key",
}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SetVerifier:
    """The receiver's SET check: PyJWKClient on latchkey's jwks_uri (trusting latchkey's certificate), then
    jwt.decode with RS256 only, the client as audience and latchkey as issuer."""

    def __init__(self, jwks_uri, cafile, issuer):
        self.jwks = jwt.PyJWKClient(jwks_uri, ssl_context=ssl.create_default_context(cafile=cafile), timeout=10)
        self.issuer = issuer
        self.lock = threading.Lock()  # the push receiver's threads share the client

    def decode(self, token, audience):
        with self.lock:
            key = self.jwks.get_signing_key_from_jwt(token)
        return jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=audience,
            issuer=self.issuer,
            options={"require": ["iat", "jti"]},
        )


class Receiver:
    """An RFC 8935 push receiver at /events, over HTTPS with its own certificate (`tls` = (cert, key) files) or
    plain HTTP. It verifies each SET (answering 202, or 400 with an RFC 8935 error: final for latchkey) and
    keeps every push: the SET, its Content-Type and Authorization, and the claims or the error."""

    def __init__(self, audience, authorization, tls=None):
        self.audience = audience
        self.authorization = authorization
        self.verifier = None  # set once latchkey's event key exists
        self.refuse_state = None  # a verification event with this state is refused (400)
        self.pushes = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if urllib.parse.urlsplit(self.path).path != "/events":
                    self.send_error(404)
                    return
                status, error = receiver.receive(self.headers, body.decode("ascii", "replace"))
                payload = json.dumps(error).encode() if error else b""
                self.send_response(status)
                if payload:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            scheme = "https"
        self.url = f"{scheme}://127.0.0.1:{self.server.server_address[1]}/events"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def receive(self, headers, token):
        push = {
            "set": token,
            "content_type": headers.get("Content-Type"),
            "authorization": headers.get("Authorization"),
            "claims": None,
            "error": None,
        }
        answer = (202, None)
        if push["authorization"] != self.authorization:
            push["error"] = "authentication_failed"
            answer = (400, {"err": "authentication_failed", "description": "wrong Authorization"})
        elif self.verifier is None:
            push["error"] = "no verifier yet"
            answer = (503, None)
        else:
            try:
                push["claims"] = self.verifier.decode(token, self.audience)
            except Exception as e:  # PyJWT's refusal: final (400) for latchkey
                push["error"] = repr(e)
                err = next((v for k, v in PUSH_ERRORS.items() if isinstance(e, k)), "invalid_request")
                answer = (400, {"err": err, "description": str(e)})
            else:
                state = push["claims"].get("events", {}).get(VERIFICATION, {}).get("state")
                if self.refuse_state is not None and state == self.refuse_state:
                    answer = (400, {"err": "invalid_request", "description": "this receiver refuses that state"})
        push["status"] = answer[0]
        with self.changed:
            self.pushes.append(push)
            self.changed.notify_all()
        return answer

    def distinct(self):
        """The pushes in arrival order, the first of each jti (delivery is at least once)."""
        seen, out = set(), []
        with self.changed:
            pushes = list(self.pushes)
        for p in pushes:
            jti = p["claims"].get("jti") if p["claims"] else p["set"]
            if jti not in seen:
                seen.add(jti)
                out.append(p)
        return out

    def wait_for(self, count, timeout=WAIT):
        """Waits until `count` distinct SETs have arrived; those that did."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while len(self.distinct()) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(min(left, 0.5))
        return self.distinct()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def self_signed(directory):
    """A certificate for https://127.0.0.1 and its key (PEM files), made with `cryptography`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ssf receiver interop")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    with open(cert_path, "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, "wb") as f:
        f.write(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
    return cert_path, key_path


class Forms(html.parser.HTMLParser):
    """The forms of a page: action, inputs and buttons (attributes unescaped)."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.forms = []
        self.open = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.open = {"action": a.get("action", ""), "inputs": [], "buttons": []}
            self.forms.append(self.open)
        elif self.open is not None and tag == "input":
            self.open["inputs"].append(a)
        elif self.open is not None and tag == "button":
            self.open["buttons"].append(a)

    def handle_endtag(self, tag):
        if tag == "form":
            self.open = None

    def find(self, action):
        return next((f for f in self.forms if f["action"] == action), None)


def walk(session, method, url, data, redirect_uri):
    """A request and its redirects, followed by hand until the app's redirect URI: (page, None) or (None,
    callback URL)."""
    for _ in range(10):
        r = session.request(method, url, data=data, allow_redirects=False, timeout=10)
        if r.status_code not in (301, 302, 303, 307, 308):
            return r, None
        url = urllib.parse.urljoin(url, r.headers["Location"])
        if url.startswith(redirect_uri):
            return None, url
        method, data = "GET", None
    raise RuntimeError(f"too many redirects, last {url}")


def grant(server, meta, client_id):
    """One authorization code grant with PKCE (S256) for EMAIL, the HTML forms posted by a requests session; the
    token response."""
    session = requests.Session()
    session.verify = server.cert
    session.trust_env = False  # REQUESTS_CA_BUNDLE must not override verify
    redirect_uri = f"http://127.0.0.1:{free_port()}/callback"  # never called: the redirect is read
    verifier = secrets.token_urlsafe(48)
    state = secrets.token_urlsafe(16)
    query = urllib.parse.urlencode(
        {
            "response_type": "code",
            "client_id": client_id,
            "redirect_uri": redirect_uri,
            "scope": " ".join(SCOPES),
            "state": state,
            "code_challenge": b64url(hashlib.sha256(verifier.encode()).digest()),
            "code_challenge_method": "S256",
        }
    )
    page, callback = walk(session, "GET", f"{meta['authorization_endpoint']}?{query}", None, redirect_uri)
    for _ in range(3):
        if callback:
            break
        if page is None or page.status_code != 200:
            require(
                "the authorization flow shows a page",
                False,
                page is not None and f"{page.status_code} {page.text[:300]}",
            )
        forms = Forms(page.text)
        signin, consent = forms.find("/signin"), forms.find("/o/oauth2/v2/auth")
        if signin:
            data = [(i["name"], i.get("value", "")) for i in signin["inputs"] if i.get("type") == "hidden"]
            data += [("email", EMAIL), ("password", PASSWORD)]
            page, callback = walk(session, "POST", urllib.parse.urljoin(page.url, "/signin"), data, redirect_uri)
        elif consent:
            data = []
            for i in consent["inputs"]:
                kind = i.get("type")
                if kind == "hidden" or (kind == "radio" and "checked" in i) or kind == "checkbox":
                    data.append((i["name"], i.get("value", "")))
            data.append(("decision", "allow"))
            url = urllib.parse.urljoin(page.url, consent["action"])
            page, callback = walk(session, "POST", url, data, redirect_uri)
        else:
            require("the page is the sign-in or the consent form", False, page.text[:300])
    require("the consent's Allow redirects to the app with a code", callback is not None, page and page.text[:300])
    got = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))
    require("the callback carries the state and a code", got.get("state") == state and got.get("code"), callback)
    r = session.post(
        meta["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": got["code"],
            "redirect_uri": redirect_uri,
            "client_id": client_id,
            "code_verifier": verifier,
        },
        timeout=10,
    )
    require("the code is exchanged for tokens", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
    token = r.json()
    require("the grant has a refresh token", bool(token.get("refresh_token")), token)
    return token


def event_of(claims):
    events = claims.get("events") or {}
    return (next(iter(events)) if len(events) == 1 else None), events


def check_set(label, token, claims, issuer, audience, subject):
    """The checks every SET gets: header, claims, one event, the subject."""
    header = jwt.get_unverified_header(token)
    check(f"{label}: header typ is secevent+jwt", header.get("typ") == "secevent+jwt", header)
    check(f"{label}: header alg RS256 with a kid", header.get("alg") == "RS256" and header.get("kid"), header)
    check(f"{label}: no exp (a SET is not a token)", "exp" not in claims, claims)
    check(f"{label}: iss and aud", claims.get("iss") == issuer and claims.get("aud") == audience, claims)
    check(
        f"{label}: jti, iat and txn",
        all(isinstance(claims.get(k), t) for k, t in (("jti", str), ("iat", int), ("txn", str))),
        claims,
    )
    kind, events = event_of(claims)
    check(f"{label}: exactly one event", kind is not None, events)
    check(f"{label}: sub_id names the subject", claims.get("sub_id") == subject, claims.get("sub_id"))
    return kind


def tampered(token):
    """The SET with another subject in its payload and the original signature."""
    head, payload, signature = token.split(".")
    claims = json.loads(unb64url(payload))
    claims["sub_id"] = {"format": "iss_sub", "iss": claims.get("iss"), "sub": "someone-else"}
    return ".".join([head, b64url(json.dumps(claims).encode()), signature])


def wait_until(predicate, timeout=WAIT, step=0.2):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(step)


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
        r = requests.post(ssf["configuration_endpoint"], json=body, headers=console, verify=server.cert, timeout=10)
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
