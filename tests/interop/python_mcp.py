#!/usr/bin/env python3
"""Interop: the official MCP Python SDK (`mcp`, unmodified) as an MCP client that finds latchkey on its own.

An MCP server written with the SDK's own server (MCPServer, AuthSettings, a TokenVerifier introspecting at latchkey,
RFC 7662) trusts latchkey; the SDK's client (`OAuthClientProvider`), given only the MCP server's URL and no client
made in the console first:
- RFC 9728: reads the protected resource metadata the MCP server's 401 names, finding latchkey there;
- RFC 8414: reads latchkey's authorization server metadata, with its registration_endpoint (registration is open
  for one project);
- RFC 7591: registers itself as a public native client with a loopback redirect;
- signs in and consents in headless Chromium (Selenium), code flow with PKCE, `resource` (RFC 8707) the MCP server;
- calls a tool; after the (short) access token expired, calls it again: the SDK refreshes first, and latchkey
  rotates the refresh token of a self-registered client.

The MCP server listens on loopback over HTTPS (a certificate made here): latchkey registers only https resource
URIs, and the resource URI is the MCP server's own URL, as MCP wants.

Environment as python_authlib.py's (LATCHKEY_BIN required). Prints "N passed, M failed".
"""

import json
import os
import ssl
import sys
import threading
import time
import traceback
import urllib.parse

import anyio
import httpx2
import requests
import uvicorn
from mcp.client import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from ssf_support import self_signed

# The runner, the browser part and the bookkeeping are python_authlib.py's (same directory).
from python_authlib import (
    EMAIL,
    PASSWORD,
    Abort,
    Latchkey,
    Loopback,
    browser_part,
    check,
    chrome,
    free_port,
    main,
    require,
)

SCOPE = "mcp:tools"
# Short, so that the second tool call comes after the access token expired and the SDK must refresh.
LIFETIME = 5


class Introspection(TokenVerifier):
    """The MCP server's TokenVerifier: asks latchkey (RFC 7662, HTTP Basic with the API's id and secret)."""

    def __init__(self, endpoint, resource_id, secret, trust):
        self.endpoint = endpoint
        self.auth = (resource_id, secret)
        self.trust = trust
        self.seen = []  # (access token, introspection response), in order

    async def verify_token(self, token):
        async with httpx2.AsyncClient(verify=self.trust, timeout=10) as http:
            r = await http.post(self.endpoint, data={"token": token}, auth=self.auth)
        info = r.json() if r.status_code == 200 else {"status": r.status_code, "body": r.text}
        self.seen.append((token, info))
        if info.get("active") is not True:
            return None
        aud = info.get("aud")
        return AccessToken(
            token=token,
            client_id=info.get("client_id", ""),
            scopes=str(info.get("scope", "")).split(),
            expires_at=info.get("exp"),
            resource=aud if isinstance(aud, str) else None,
            subject=info.get("sub"),
            claims={"iss": info["iss"]} if info.get("iss") else None,
        )


class McpServer:
    """The MCP server trusting latchkey: the SDK's MCPServer over streamable HTTP, uvicorn in a thread."""

    def __init__(self, port, issuer, verifier, cert, key):
        self.url = f"https://127.0.0.1:{port}/mcp"
        mcp = MCPServer(
            "latchkey interop",
            token_verifier=verifier,
            # MCPServer configures the root logger; INFO would log every HTTP request of the client too.
            log_level="WARNING",
            auth=AuthSettings(
                issuer_url=issuer,
                resource_server_url=self.url,
                required_scopes=[SCOPE],
                validate_token_resource=True,
            ),
        )

        @mcp.tool()
        def whoami() -> str:
            """Who the access token is for: the user (sub) and the app (client_id)."""
            token = get_access_token()
            return json.dumps({"sub": token.subject, "client_id": token.client_id})

        app = mcp.streamable_http_app(host="127.0.0.1")
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, ssl_certfile=cert, ssl_keyfile=key, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self):
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the MCP server did not start")
            time.sleep(0.05)

    def stop(self):
        self.server.should_exit = True
        self.thread.join(timeout=10)


class Storage:
    """The SDK's TokenStorage, in memory, keeping every token set stored."""

    def __init__(self):
        self.tokens = []
        self.client_info = None

    async def get_tokens(self):
        return self.tokens[-1] if self.tokens else None

    async def set_tokens(self, tokens):
        self.tokens.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Traffic:
    """What the client sends and gets back (httpx2 event hooks; the SDK's OAuth requests go through them)."""

    def __init__(self, issuer):
        self.issuer = issuer
        self.exchanges = []  # dicts: method, url, form (token requests), json (registration), status, headers, body

    async def on_request(self, request):
        entry = {"method": request.method, "url": str(request.url), "request": request}
        ctype = request.headers.get("content-type", "")
        if "x-www-form-urlencoded" in ctype:
            entry["form"] = dict(urllib.parse.parse_qsl(request.content.decode()))
        elif "json" in ctype and str(request.url).startswith(self.issuer):
            entry["json"] = json.loads(request.content or b"null")
        self.exchanges.append(entry)

    async def on_response(self, response):
        entry = next(e for e in reversed(self.exchanges) if e["request"] is response.request)
        entry["status"] = response.status_code
        entry["headers"] = dict(response.headers)
        # Latchkey's and the metadata answers are small JSON; the MCP server's streams are left alone.
        if str(response.request.url).startswith(self.issuer) or "/.well-known/" in str(response.request.url):
            await response.aread()
            try:
                entry["body"] = response.json()
            except ValueError:
                entry["body"] = response.text

    def dump(self):
        """The exchanges, for a failure's report."""
        for e in self.exchanges:
            sent = e.get("form") or e.get("json")
            print(f"  {e['method']} {e['url']} {json.dumps(sent) if sent else ''}-> {e.get('status')} "
                  f"{json.dumps(e.get('body'))[:600] if 'body' in e else ''}")

    def find(self, method, url_start, **form):
        return [
            e
            for e in self.exchanges
            if e["method"] == method
            and e["url"].startswith(url_start)
            and all(e.get("form", {}).get(k) == v for k, v in form.items())
        ]


def text_of(result):
    return "".join(getattr(c, "text", "") for c in result.content)


async def client_part(mcp_url, issuer, trust, loopback, driver, traffic, storage, verifier):
    """The MCP client: the SDK's OAuthClientProvider on an httpx2 client, the browser part in Chromium."""
    visits = []

    async def redirect_handler(authorization_url):
        visits.append(authorization_url)
        callback = await anyio.to_thread.run_sync(lambda: browser_part(driver, authorization_url, loopback, [SCOPE]))
        visits.append(callback)

    async def callback_handler():
        got = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(visits[-1]).query))
        return AuthorizationCodeResult(code=got.get("code", ""), state=got.get("state"), iss=got.get("iss"))

    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(
            client_name="MCP Python SDK interop",
            redirect_uris=[loopback.redirect_uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )
    http = httpx2.AsyncClient(
        auth=provider,
        verify=trust,
        timeout=httpx2.Timeout(30, read=300),
        event_hooks={"request": [traffic.on_request], "response": [traffic.on_response]},
    )
    async with http, Client(streamable_http_client(mcp_url, http_client=http)) as client:
        first = await client.call_tool("whoami", {})
        refreshes_before = len(traffic.find("POST", issuer, grant_type="refresh_token"))
        tokens_before = len(storage.tokens)
        seen_before = len(verifier.seen)
        # Past the access token's expiry (the SDK counts from expires_in), so the next call must refresh first.
        await anyio.sleep(LIFETIME + 1.5)
        second = await client.call_tool("whoami", {})
    return {
        "visits": visits,
        "first": first,
        "second": second,
        "refreshes_before": refreshes_before,
        "tokens_before": tokens_before,
        "seen_before": seen_before,
    }


def run(binary):
    os.environ["LATCHKEY_ACCESS_TOKEN_LIFETIME"] = str(LIFETIME)
    server = Latchkey(binary)
    loopback = Loopback()
    mcp_server = None
    driver = None
    traffic = None
    try:
        # Set up the store before the server starts, so that it serves all of it from the first request.
        server.admin("migrate")
        project = server.admin("project", "create", "--name", "MCP clients")["project_id"]
        server.admin("project", "update", "--project", project, "--open-registration", "on")
        user = server.admin("user", "create", "--email", EMAIL, "--password-stdin", "--name", "Ada", stdin=PASSWORD)
        mcp_port = free_port()
        mcp_url = f"https://127.0.0.1:{mcp_port}/mcp"
        resource = server.admin(
            "resource", "create", "--project", project, "--uri", mcp_url, "--name", "MCP tools",
            "--scope", f"{SCOPE}|Use the MCP server's tools",
        )
        require("latchkey registers the MCP server's URL as an API", resource.get("uri") == mcp_url, resource)
        before = server.admin("client", "list", "--project", project)["clients"]
        require("before the run the open-registration project has no client", before == [], before)

        server.start()
        issuer = server.base
        meta = requests.get(f"{issuer}/.well-known/oauth-authorization-server", verify=server.cert, timeout=10).json()
        trust = ssl.create_default_context(cafile=server.cert)
        tls_dir = os.path.join(server.data_dir, "mcp-tls")
        os.makedirs(tls_dir, exist_ok=True)
        cert, key = self_signed(tls_dir)
        client_trust = ssl.create_default_context(cafile=server.cert)
        client_trust.load_verify_locations(cafile=cert)

        verifier = Introspection(meta["introspection_endpoint"], resource["resource_id"], resource["secret"], trust)
        mcp_server = McpServer(mcp_port, issuer, verifier, cert, key)
        mcp_server.start()

        driver = chrome()
        traffic = Traffic(issuer)
        storage = Storage()
        out = anyio.run(client_part, mcp_url, issuer, client_trust, loopback, driver, traffic, storage, verifier)

        # RFC 9728: the 401 names the metadata, which names latchkey.
        first_401 = next((e for e in traffic.exchanges if e["url"] == mcp_url and e.get("status") == 401), None)
        challenge = (first_401 or {}).get("headers", {}).get("www-authenticate", "")
        check(
            "the MCP server answers the client's first request 401 with a Bearer challenge",
            bool(first_401) and challenge.startswith("Bearer "),
            challenge,
        )
        prm_url = f"https://127.0.0.1:{mcp_port}/.well-known/oauth-protected-resource/mcp"
        check(
            "the challenge names the protected resource metadata (RFC 9728)",
            f'resource_metadata="{prm_url}"' in challenge,
            challenge,
        )
        prm = next((e for e in traffic.find("GET", prm_url) if e.get("status") == 200), {}).get("body", {})
        check(
            "the client reads the protected resource metadata: this resource, latchkey its authorization server",
            prm.get("resource") == mcp_url
            and [s.rstrip("/") for s in prm.get("authorization_servers", [])] == [issuer],
            prm,
        )
        # RFC 8414.
        as_meta = traffic.find("GET", f"{issuer}/.well-known/oauth-authorization-server")
        as_body = as_meta[0].get("body", {}) if as_meta else {}
        check(
            "the client reads latchkey's RFC 8414 metadata, which names the registration endpoint",
            bool(as_meta)
            and as_meta[0].get("status") == 200
            and as_body.get("registration_endpoint") == f"{issuer}/register",
            as_meta[:1],
        )
        # RFC 7591.
        registrations = traffic.find("POST", f"{issuer}/register")
        reg = registrations[0] if registrations else {}
        reg_body = reg.get("body") if isinstance(reg.get("body"), dict) else {}
        require(
            "the client registers itself once at latchkey's /register (RFC 7591) and gets a client_id",
            len(registrations) == 1 and reg.get("status") == 201 and bool(reg_body.get("client_id")),
            f"{len(registrations)} registrations: {reg.get('status')} {reg.get('body')} (sent {reg.get('json')})",
        )
        client_id = reg_body["client_id"]
        check(
            "latchkey registers it as a public client with the loopback redirect",
            reg_body.get("token_endpoint_auth_method") == "none"
            and reg_body.get("redirect_uris") == [loopback.redirect_uri]
            and not reg_body.get("client_secret"),
            reg_body,
        )
        check(
            "the registration answer carries a registration access token (RFC 7592)",
            bool(reg_body.get("registration_access_token")),
            sorted(reg_body),
        )

        visits = out["visits"]
        check("the person was sent to the browser once", len(visits) == 2, visits)
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(visits[0]).query)) if visits else {}
        check(
            "the authorization request goes to latchkey's endpoint, for the registered client",
            bool(visits)
            and visits[0].startswith(meta["authorization_endpoint"] + "?")
            and query.get("client_id") == client_id,
            visits[:1],
        )
        check(
            "it asks for the MCP server as resource (RFC 8707), its scope, with S256 PKCE",
            query.get("resource") == mcp_url
            and query.get("scope") == SCOPE
            and query.get("code_challenge_method") == "S256",
            query,
        )

        codes = traffic.find("POST", meta["token_endpoint"], grant_type="authorization_code")
        code = codes[0] if codes else {}
        require("the code exchange succeeds", len(codes) == 1 and code.get("status") == 200, codes)
        check(
            "the code exchange names the MCP server as resource, no client secret",
            code["form"].get("resource") == mcp_url
            and code["form"].get("client_id") == client_id
            and "client_secret" not in code["form"],
            code["form"],
        )
        issued = code.get("body", {})
        check(
            "latchkey issues a Bearer token for the MCP scope, with a refresh token",
            str(issued.get("token_type", "")).lower() == "bearer"
            and issued.get("scope") == SCOPE
            and bool(issued.get("refresh_token")),
            {k: v for k, v in issued.items() if not k.endswith("token")},
        )
        check(f"expires_in is the configured {LIFETIME} seconds", issued.get("expires_in") == LIFETIME, issued)

        first = out["first"]
        who = json.loads(text_of(first)) if not first.is_error else {}
        check("the first tool call works", not first.is_error and who.get("client_id") == client_id, text_of(first))
        check("the tool sees the signed-in user as the token's subject", who.get("sub") == user["user_id"], who)
        active = [info for _, info in verifier.seen[: out["seen_before"]] if info.get("active")]
        check(
            "latchkey's introspection tells the MCP server the token is for it (aud), its scope, this client",
            bool(active) and all(
                i.get("aud") == mcp_url and i.get("scope") == SCOPE and i.get("client_id") == client_id for i in active
            ),
            active[:1],
        )
        check(
            "no refresh before the access token expired",
            out["refreshes_before"] == 0 and out["tokens_before"] == 1,
            f"{out['refreshes_before']} refreshes, {out['tokens_before']} token sets stored",
        )

        second = out["second"]
        who2 = json.loads(text_of(second)) if not second.is_error else {}
        check(
            "a second tool call after the access token expired works, for the same user and client",
            not second.is_error and who2 == who,
            text_of(second),
        )
        refreshes = traffic.find("POST", meta["token_endpoint"], grant_type="refresh_token")
        check(
            "the SDK refreshed once, naming the MCP server as resource, and latchkey answered 200",
            len(refreshes) == 1
            and refreshes[0].get("status") == 200
            and refreshes[0]["form"].get("resource") == mcp_url
            and refreshes[0]["form"].get("client_id") == client_id,
            [(r.get("status"), r.get("form", {}).get("resource"), r.get("body")) for r in refreshes],
        )
        check(
            "the client did not register or send the person to the browser again",
            len(traffic.find("POST", f"{issuer}/register")) == 1 and len(visits) == 2,
        )
        tokens = storage.tokens
        require("the refreshed tokens were stored", len(tokens) == 2, f"{len(tokens)} token sets stored")
        check(
            "latchkey rotated the refresh token: the stored refresh token changed",
            bool(tokens[1].refresh_token) and tokens[1].refresh_token != tokens[0].refresh_token,
        )
        check("the refresh gave a new access token", tokens[1].access_token != tokens[0].access_token)
        later = [token for token, _ in verifier.seen[out["seen_before"]:]]
        check(
            "the second tool call carried the new access token",
            tokens[1].access_token in later and tokens[0].access_token not in later,
            f"{len(later)} tokens introspected",
        )

        def introspect(token):
            return requests.post(
                meta["introspection_endpoint"],
                data={"token": token},
                auth=(resource["resource_id"], resource["secret"]),
                verify=server.cert,
                timeout=10,
            )

        r = introspect(tokens[0].access_token)
        check(
            "the expired access token introspects as inactive",
            r.status_code == 200 and r.json() == {"active": False},
            f"{r.status_code} {r.text[:200]}",
        )
        r = introspect(tokens[1].access_token)
        check(
            "the refreshed access token is active and for the MCP server",
            r.status_code == 200 and r.json().get("active") is True and r.json().get("aud") == mcp_url,
            f"{r.status_code} {r.text[:200]}",
        )

        after = server.admin("client", "list", "--project", project)["clients"]
        check(
            "after the run the project has exactly one client, the one that registered itself",
            [(c.get("client_id"), c.get("registration")) for c in after] == [(client_id, "dynamic")],
            after,
        )
        check(
            "it is a desktop client with the name and redirect it registered",
            bool(after)
            and after[0].get("type") == "desktop"
            and after[0].get("name") == "MCP Python SDK interop"
            and after[0].get("redirect_uris") == [loopback.redirect_uri],
            after[:1],
        )
    except Abort as e:
        print(f"stopped after: {e}")
        if traffic is not None:
            print("what the MCP client sent and got:")
            traffic.dump()
        print("latchkey serve output:\n" + server.output())
    except Exception:
        check("the run completes", False, traceback.format_exc())
        if traffic is not None:
            print("what the MCP client sent and got:")
            traffic.dump()
        if server.log and not server.log.closed:
            print("latchkey serve output:\n" + server.output())
    finally:
        if driver is not None:
            driver.quit()
        if mcp_server is not None:
            mcp_server.stop()
        loopback.stop()
        server.stop()


if __name__ == "__main__":
    sys.exit(main(run))
