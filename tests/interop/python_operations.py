#!/usr/bin/env python3
"""Interop: operating the real latchkey binary (docs/operations.md).

- `/metrics`, scraped with the bearer token from LATCHKEY_METRICS_TOKEN, parses with Prometheus's own text-format
  parser (`prometheus_client.parser`), and its counters move with the requests sent.
- A redirect_uri mismatch in headless Chromium: the error page shows the redirect URI, the client id and a request
  id, and the server's log (JSON lines) holds one `refused` line with the same request id, the error code and the
  client id.

Environment: LATCHKEY_BIN (required) is the latchkey binary. Prints "N passed, M failed"; exits non-zero on a failure.
"""

import json
import os
import sys
import time
import traceback
import urllib.parse

import requests
from prometheus_client.parser import text_string_to_metric_families
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

# The runner, the ok/FAIL bookkeeping and the summary are python_authlib.py's (same directory).
from python_authlib import RESULTS, Abort, Latchkey, check, chrome, main, require

METRICS_TOKEN = "interop-metrics-token-0123456789"


def scrape(server):
    """Every sample of /metrics: {(name, frozenset(labels)): value}, read by Prometheus's parser."""
    r = requests.get(f"{server.base}/metrics", verify=server.cert, timeout=10, headers={"Authorization": f"Bearer {METRICS_TOKEN}"})
    require("/metrics answers 200 with the token", r.status_code == 200, f"{r.status_code} {r.text[:200]}")
    samples = {}
    for family in text_string_to_metric_families(r.text):
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def refused_lines(server, request_id, wait=10):
    """The log's `refused` lines with `request_id` (the log is written in batches: waits for it)."""
    deadline = time.monotonic() + wait
    while True:
        found = []
        for line in server.output().splitlines():
            if request_id not in line:
                continue
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            fields = entry.get("fields", {})
            if fields.get("message") == "refused" and fields.get("request_id") == request_id:
                found.append(fields)
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def run(binary):
    os.environ["LATCHKEY_METRICS_TOKEN"] = METRICS_TOKEN
    os.environ["LATCHKEY_LOG_FORMAT"] = "json"
    server = Latchkey(binary)
    driver = None
    try:
        server.start()
        project = server.admin("project", "create", "--name", "Operations")["project_id"]
        server.admin("project", "enable-api", "--project", project)
        client_id = server.admin("client", "create", "--project", project, "--type", "desktop", "--name", "Ops app")["client_id"]

        r = requests.get(f"{server.base}/metrics", verify=server.cert, timeout=10)
        check("/metrics without the token is 401", r.status_code == 401, f"{r.status_code}")
        before = scrape(server)
        check(
            "the parser finds the request counter",
            any(name == "latchkey_http_requests_total" for name, _ in before),
            sorted({n for n, _ in before})[:20],
        )
        for _ in range(3):
            requests.post(
                f"{server.base}/token",
                data={"grant_type": "refresh_token", "refresh_token": "lkr_nope", "client_id": client_id},
                verify=server.cert,
                timeout=10,
            )
        after = scrape(server)
        moved = lambda name, **labels: value(after, name, **labels) - value(before, name, **labels)
        check(
            "requests_total{route=/token,status=400} moved by 3",
            moved("latchkey_http_requests_total", route="/token", status="400") == 3,
            moved("latchkey_http_requests_total", route="/token", status="400"),
        )
        check(
            "oauth_errors_total{error=invalid_grant} moved by 3",
            moved("latchkey_oauth_errors_total", route="/token", error="invalid_grant") == 3,
        )
        check(
            "the refresh histogram counted them",
            moved("latchkey_token_request_duration_seconds_count", grant_type="refresh_token") == 3,
        )
        check(
            "store operations are timed",
            value(after, "latchkey_store_operation_duration_seconds_count", backend="sqlite", op="read") > 0,
        )
        check("the process's memory is there", value(after, "process_resident_memory_bytes") > 0)

        # A custom scheme on a desktop client, in Chromium.
        query = urllib.parse.urlencode(
            {
                "client_id": client_id,
                "redirect_uri": "com.example.ops:/oauth2redirect",
                "response_type": "code",
                "scope": "https://latchkey.dev/auth/readonly",
                "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
                "code_challenge_method": "S256",
            }
        )
        driver = chrome()
        driver.get(f"{server.base}/o/oauth2/v2/auth?{query}")
        wait = WebDriverWait(driver, 15)
        wait.until(EC.presence_of_element_located((By.ID, "request-details")))
        page_client = driver.find_element(By.ID, "detail-client-id").text
        page_uri = driver.find_element(By.ID, "detail-redirect-uri").text
        request_id = driver.find_element(By.ID, "request-id").text
        check("the page shows the client id", page_client == client_id, page_client)
        check("the page shows the redirect URI sent", page_uri == "com.example.ops:/oauth2redirect", page_uri)
        check("the page hints at loopback", "loopback" in driver.find_element(By.ID, "hint").text)
        check("the page shows a request id", len(request_id) == 16, request_id)
        lines = refused_lines(server, request_id)
        check("the log holds one refused line with that request id", len(lines) == 1, lines)
        if lines:
            line = lines[0]
            check("the log line names the error", line.get("error") == "redirect_uri_mismatch", line)
            check("the log line names the client", line.get("client_id") == client_id, line)
            check("the log line says why", "redirect URI" in line.get("description", ""), line)
    except Abort as e:
        print(f"stopped after: {e}")
        print("latchkey serve output:\n" + server.output())
    except Exception:
        traceback.print_exc(file=sys.stdout)
        RESULTS["failed"] += 1
    finally:
        if driver is not None:
            driver.quit()
        server.stop()


if __name__ == "__main__":
    sys.exit(main(run))
