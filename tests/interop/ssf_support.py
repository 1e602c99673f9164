"""Reusable parts of the Shared Signals receiver interop test (python_ssf_receiver.py, same directory).

What a receiver written in Python needs, and the grant its events are about:
- the event-type and delivery-method URIs, the test account and the bound of every wait;
- `SetVerifier`: PyJWT's check of a SET (`jwt.PyJWKClient` on latchkey's jwks_uri, then `jwt.decode` RS256 with
  the client as audience and latchkey as issuer), and `check_set`, the checks every SET gets;
- `Receiver`: an RFC 8935 push receiver over HTTPS (its own certificate, from `self_signed`) or plain HTTP;
- `grant`: an authorization code flow with PKCE, its sign-in and consent forms posted by a `requests` session
  (`Forms` parses them, `walk` follows the redirects by hand);
- small helpers: base64url, `tampered` (a SET with a forged payload), `wait_until`.

The ok/FAIL bookkeeping is python_authlib.py's (same directory), shared with the test that imports this.
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
import ssl
import threading
import time
import urllib.parse

import jwt
import requests
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# The ok/FAIL bookkeeping and the free port are python_authlib.py's (same directory).
from python_authlib import READONLY, check, free_port, require

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
