#!/usr/bin/env python3
"""Interop: authlib (unmodified) as an installed app against the real latchkey binary.

RFC 6749 authorization code grant with RFC 7636 PKCE (S256), an RFC 8252 loopback redirect received by a
real local HTTP server, the browser part done by headless Chromium through Selenium, then token exchange,
API call, refresh, RFC 7662 introspection and RFC 7009 revocation through authlib's OAuth2Session.

Environment: LATCHKEY_BIN (required) is the latchkey binary. Optional: CHROMIUM (default /usr/bin/chromium),
CHROMEDRIVER (default /usr/bin/chromedriver), LATCHKEY_INTEROP_KEEP=1 keeps the data directory.
Prints "N passed, M failed" and exits non-zero on any failure.
"""

import http.server
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

import requests
from authlib.integrations.requests_client import OAuth2Session
from joserfc import jwt
from joserfc.jwk import KeySet
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

READONLY = "https://latchkey.dev/auth/readonly"
UPLOAD = "https://latchkey.dev/auth/upload"
SCOPES = ["openid", "email", READONLY, UPLOAD]
EMAIL = "ada@example.com"
PASSWORD = "interop password " + secrets.token_hex(4)

RESULTS = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    """Records one assertion; never stops the run."""
    if ok:
        RESULTS["passed"] += 1
        print(f"ok   {name}")
    else:
        RESULTS["failed"] += 1
        print(f"FAIL {name}" + (f": {detail}" if detail else ""))
    return ok


class Abort(Exception):
    """A failed assertion the rest of the run depends on (already counted)."""


def require(name, ok, detail=""):
    """An assertion the rest of the run depends on."""
    if not check(name, ok, detail):
        raise Abort(name)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Latchkey:
    """The real binary: `serve` in the background, `admin` for setup."""

    def __init__(self, binary):
        self.binary = binary
        self.data_dir = tempfile.mkdtemp(prefix="latchkey-interop-")
        self.port = free_port()
        self.base = f"https://127.0.0.1:{self.port}"
        self.cert = os.path.join(self.data_dir, "tls", "cert.pem")
        self.log = open(os.path.join(self.data_dir, "serve.log"), "w+")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--data-dir", self.data_dir, "--listen", f"127.0.0.1:{self.port}"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"latchkey serve exited with {self.proc.returncode}:\n{self.output()}")
            if os.path.exists(self.cert):
                try:
                    r = requests.get(f"{self.base}/healthz", verify=self.cert, timeout=2)
                    if r.status_code == 200:
                        return
                    last = f"status {r.status_code}"
                except requests.RequestException as e:
                    last = e
            time.sleep(0.2)
        raise RuntimeError(f"latchkey did not become healthy: {last}\n{self.output()}")

    def admin(self, *args, stdin=None):
        r = subprocess.run(
            [self.binary, "admin", "--data-dir", self.data_dir, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            raise RuntimeError(f"latchkey admin {' '.join(args)} failed ({r.returncode}): {r.stderr}")
        out = r.stdout.strip()
        return json.loads(out) if out else None

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        if os.environ.get("LATCHKEY_INTEROP_KEEP") == "1":
            print(f"data directory kept: {self.data_dir}")
        else:
            shutil.rmtree(self.data_dir, ignore_errors=True)


class Loopback:
    """The app's RFC 8252 loopback listener: takes the callback and tells the user to close the window."""

    PAGE = b"<!doctype html><title>Signed in</title><p id=done>You can close this window and return to the app.</p>"

    def __init__(self):
        received = {}
        arrived = threading.Event()
        page = self.PAGE

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if urllib.parse.urlsplit(self.path).path != "/callback":
                    self.send_error(404)
                    return
                received["path"] = self.path
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)
                arrived.set()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.redirect_uri = f"http://127.0.0.1:{self.port}/callback"
        self.received = received
        self.arrived = arrived
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def callback_url(self, timeout):
        if not self.arrived.wait(timeout):
            return None
        return f"http://127.0.0.1:{self.port}{self.received['path']}"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def chrome():
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-dev-shm-usage",
        "--ignore-certificate-errors",
    ):
        options.add_argument(arg)
    service = Service(executable_path=os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.set_page_load_timeout(30)
    return driver


def browser_part(driver, authorize_url, loopback, scopes=SCOPES):
    """What the user does in the system browser: sign in, tick every scope (those of `scopes`), Allow."""
    wait = WebDriverWait(driver, 20)
    driver.get(authorize_url)
    wait.until(EC.presence_of_element_located((By.NAME, "password")))
    check("the authorization URL opens the sign-in page", "Sign in" in driver.title, driver.title)
    email = driver.find_element(By.NAME, "email")
    email.clear()
    email.send_keys(EMAIL)
    driver.find_element(By.NAME, "password").send_keys(PASSWORD)
    driver.find_element(By.CSS_SELECTOR, "form[action='/signin'] button[type=submit]").click()

    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "button[name=decision][value=allow]")))
    boxes = driver.find_elements(By.CSS_SELECTOR, "input[type=checkbox][name=scope]")
    offered = sorted(b.get_attribute("value") for b in boxes)
    check("the consent page offers every requested scope", offered == sorted(scopes), f"offered {offered}")
    for box in boxes:
        if not box.is_selected():
            box.click()
    driver.find_element(By.CSS_SELECTOR, "button[name=decision][value=allow]").click()

    callback = loopback.callback_url(timeout=20)
    require("the browser lands on the app's loopback redirect URI", callback is not None, driver.current_url)
    wait.until(EC.presence_of_element_located((By.ID, "done")))
    check(
        "the loopback page tells the user to close the window",
        "close this window" in driver.find_element(By.TAG_NAME, "body").text,
    )
    return callback


def run(binary):
    server = Latchkey(binary)
    loopback = Loopback()
    driver = None
    try:
        server.start()
        check("latchkey serve answers /healthz over TLS with its generated certificate", True)

        project = server.admin("project", "create", "--name", "Interop")["project_id"]
        server.admin("project", "enable-api", "--project", project)
        client_id = server.admin(
            "client", "create", "--project", project, "--type", "desktop", "--name", "authlib interop"
        )["client_id"]
        server.admin("user", "create", "--email", EMAIL, "--password-stdin", "--name", "Ada", stdin=PASSWORD)

        meta = requests.get(f"{server.base}/.well-known/openid-configuration", verify=server.cert, timeout=10).json()
        check("discovery names the issuer", meta.get("issuer") == server.base, meta.get("issuer"))
        check("discovery offers S256", "S256" in meta.get("code_challenge_methods_supported", []))
        authorization_endpoint = meta["authorization_endpoint"]
        token_endpoint = meta["token_endpoint"]
        revocation_endpoint = meta["revocation_endpoint"]
        userinfo_endpoint = meta["userinfo_endpoint"]
        channels = f"{server.base}/video/v3/channels?part=snippet&mine=true"

        session = OAuth2Session(
            client_id,
            scope=" ".join(SCOPES),
            redirect_uri=loopback.redirect_uri,
            code_challenge_method="S256",
            verify=server.cert,
            # requests lets REQUESTS_CA_BUNDLE from the environment override a session's verify (psf/requests
            # #3829); an app pinning its server's certificate turns the environment off.
            trust_env=False,
        )
        code_verifier = secrets.token_urlsafe(48)
        url, state = session.create_authorization_url(authorization_endpoint, code_verifier=code_verifier)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query))
        check("authlib sends an S256 code_challenge", query.get("code_challenge_method") == "S256", url)

        driver = chrome()
        callback = browser_part(driver, url, loopback)
        got = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(callback).query))
        check("the callback carries the state unchanged", got.get("state") == state, got.get("state"))
        check("the callback carries iss (RFC 9207)", got.get("iss") == meta["issuer"], got.get("iss"))
        require("the callback carries a code", bool(got.get("code")), callback)

        token = session.fetch_token(token_endpoint, authorization_response=callback, code_verifier=code_verifier)
        check("the token type is Bearer", str(token.get("token_type", "")).lower() == "bearer", token.get("token_type"))
        granted = sorted(str(token.get("scope", "")).split())
        check("the token response lists the granted scopes", granted == sorted(SCOPES), token.get("scope"))
        check("expires_in is 3600", token.get("expires_in") == 3600, token.get("expires_in"))
        check("an installed app gets a refresh token", bool(token.get("refresh_token")))
        check("openid scope returns an id_token", bool(token.get("id_token")))
        first_access = token["access_token"]
        if token.get("id_token"):
            jwks = requests.get(meta["jwks_uri"], verify=server.cert, timeout=10).json()
            try:
                decoded = jwt.decode(token["id_token"], KeySet.import_key_set(jwks), algorithms=["ES256"])
                jwt.JWTClaimsRegistry(
                    iss={"essential": True, "value": meta["issuer"]},
                    aud={"essential": True, "value": client_id},
                    sub={"essential": True},
                    exp={"essential": True},
                ).validate(decoded.claims)
                check("the id_token verifies against the JWKS (joserfc)", decoded.claims.get("email") == EMAIL, decoded.claims)
            except Exception as e:
                check("the id_token verifies against the JWKS (joserfc)", False, repr(e))

        r = session.get(channels, timeout=10)
        check("channels.list works with the session's token", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
        if r.status_code == 200:
            body = r.json()
            kind = (body.get("items") or [{}])[0].get("kind")
            check("channels.list returns a channel", kind == "video#channel", body)
        r = session.get(userinfo_endpoint, timeout=10)
        check(
            "userinfo returns the signed-in email",
            r.status_code == 200 and r.json().get("email") == EMAIL,
            f"{r.status_code} {r.text[:200]}",
        )

        refreshed = session.refresh_token(token_endpoint)
        check("refresh returns a new access token", refreshed.get("access_token") not in (None, first_access))
        check(
            "authlib keeps the refresh token after refresh",
            refreshed.get("refresh_token") == token["refresh_token"],
        )
        r = session.get(channels, timeout=10)
        check("channels.list works with the refreshed token", r.status_code == 200, f"{r.status_code}")

        introspection_endpoint = meta.get("introspection_endpoint")
        require("discovery names the introspection endpoint", bool(introspection_endpoint), meta)
        r = session.introspect_token(introspection_endpoint, token=session.token["access_token"])
        info = r.json() if r.status_code == 200 else {}
        check(
            "introspection (RFC 7662) says the access token is active, for this client and user",
            info.get("active") is True and info.get("client_id") == client_id and bool(info.get("sub")),
            f"{r.status_code} {r.text[:300]}",
        )
        check("introspection names the scopes granted", sorted(str(info.get("scope", "")).split()) == sorted(SCOPES), info)
        r = session.introspect_token(
            introspection_endpoint, token=session.token["refresh_token"], token_type_hint="refresh_token"
        )
        check("the refresh token introspects as active", r.status_code == 200 and r.json().get("active") is True, r.text[:300])

        r = session.revoke_token(revocation_endpoint, token=session.token["refresh_token"], token_type_hint="refresh_token")
        check("revocation answers 200", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
        r = session.introspect_token(introspection_endpoint, token=session.token["access_token"])
        check(
            "after revocation the access token introspects as inactive",
            r.status_code == 200 and r.json() == {"active": False},
            f"{r.status_code} {r.text[:200]}",
        )
        r = session.get(channels, timeout=10)
        check("after revocation the API answers 401", r.status_code == 401, f"{r.status_code} {r.text[:200]}")
        check(
            "the 401 carries a Bearer challenge",
            r.headers.get("WWW-Authenticate", "").lower().startswith("bearer"),
            r.headers.get("WWW-Authenticate"),
        )
        try:
            session.refresh_token(token_endpoint)
            check("refresh after revocation fails with invalid_grant", False, "refresh succeeded")
        except Exception as e:  # authlib raises OAuthError with .error
            error = getattr(e, "error", None)
            check("refresh after revocation fails with invalid_grant", error == "invalid_grant", repr(e))

        try:
            session.fetch_token(token_endpoint, authorization_response=callback, code_verifier=code_verifier)
            check("a reused code fails with invalid_grant", False, "the code was accepted twice")
        except Exception as e:
            check("a reused code fails with invalid_grant", getattr(e, "error", None) == "invalid_grant", repr(e))
    except Abort as e:
        print(f"stopped after: {e}")
        print("latchkey serve output:\n" + server.output())
    except Exception:
        traceback.print_exc(file=sys.stdout)
        RESULTS["failed"] += 1
        print("latchkey serve output:\n" + server.output() if server.log and not server.log.closed else "")
    finally:
        if driver is not None:
            driver.quit()
        loopback.stop()
        server.stop()


def main(run=run):
    """Runs `run` on the binary LATCHKEY_BIN names and reports; the exit status."""
    binary = os.environ.get("LATCHKEY_BIN")
    if not binary or not os.access(binary, os.X_OK):
        print(f"LATCHKEY_BIN must name the latchkey binary (got {binary!r})", file=sys.stderr)
        return 2
    run(binary)
    print(f"{RESULTS['passed']} passed, {RESULTS['failed']} failed")
    return 0 if RESULTS["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
