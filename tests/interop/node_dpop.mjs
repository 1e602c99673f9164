#!/usr/bin/env node
// Interop: panva's oauth4webapi (unmodified) as a DPoP (RFC 9449) installed app against the real latchkey binary.
//
// Authorization code grant with PKCE (S256) and state, an RFC 8252 loopback redirect received by a real local HTTP
// server, the browser part done by headless Chromium through playwright-core, then the code exchange with a DPoP
// proof (retried once on `use_dpop_nonce`, the way oauth4webapi documents it), a Bearer call to the data API, two
// DPoP refreshes, and two refreshes that must fail: one without a proof, one signed with another key.
//
// Node reads NODE_EXTRA_CA_CERTS only at start-up, and the server's certificate exists only once the server runs.
// So the script runs in two processes: the parent starts `latchkey serve`, sets up the project, client and user
// with `latchkey admin`, then runs itself again as a child with NODE_EXTRA_CA_CERTS=<data dir>/tls/cert.pem; the
// child is the app. Node's fetch (which oauth4webapi uses) then trusts the server through the ordinary CA store;
// nothing in the client turns TLS verification off. Only the browser context ignores certificate errors.
//
// Environment: LATCHKEY_BIN (required) is the latchkey binary. Optional: CHROMIUM (default /usr/bin/chromium),
// LATCHKEY_INTEROP_KEEP=1 keeps the data directory. Prints "N passed, M failed" and exits 1 on any failure.

import http from 'node:http';
import { Abort, check, childDone, info, main, require_, results, short, sleep } from './harness.mjs';

const READONLY = 'https://latchkey.dev/auth/readonly';
const EMAIL = 'grace@example.com';

/** The server side: a project with the data API, a desktop client and a user. */
async function setup(server) {
  const project = server.admin(['project', 'create', '--name', 'Node DPoP interop']).project_id;
  server.admin(['project', 'enable-api', '--project', project]);
  const client = server.admin([
    'client', 'create', '--project', project, '--type', 'desktop', '--name', 'oauth4webapi interop',
  ]);
  const password = `interop password ${Math.random().toString(36).slice(2, 10)}`;
  server.admin(['user', 'create', '--email', EMAIL, '--password-stdin', '--name', 'Grace'], password);
  return {
    LATCHKEY_INTEROP_CLIENT_ID: client.client_id,
    LATCHKEY_INTEROP_EMAIL: EMAIL,
    LATCHKEY_INTEROP_PASSWORD: password,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Child: the app. Everything OAuth here is oauth4webapi's own API, used as its documentation shows.
// ---------------------------------------------------------------------------------------------------------------

/** The app's RFC 8252 loopback listener: takes the callback and tells the user to close the window. */
function loopback() {
  const page = '<!doctype html><title>Signed in</title><p id=done>You can close this window and return to the app.</p>';
  let deliver;
  const arrived = new Promise((resolve) => {
    deliver = resolve;
  });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method !== 'GET' || url.pathname !== '/callback') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
    deliver(new URL(req.url, `http://127.0.0.1:${server.address().port}`));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolve({
        redirectUri: `http://127.0.0.1:${port}/callback`,
        callback(timeoutMs) {
          return Promise.race([arrived, sleep(timeoutMs).then(() => null)]);
        },
        stop() {
          server.closeAllConnections?.();
          return new Promise((r) => server.close(() => r()));
        },
      });
    });
  });
}

/** What the user does in the system browser: sign in, tick the scope, Allow. */
async function browserPart(browser, authorizationUrl, listener, email, password) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    await page.goto(authorizationUrl.href);
    await page.waitForSelector('input[name=password]');
    check('the authorization URL opens the sign-in page', (await page.title()).includes('Sign in'), await page.title());
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await page.click("form[action='/signin'] button[type=submit]");

    await page.waitForSelector('button[name=decision][value=allow]');
    const box = page.locator(`input[name=scope][value="${READONLY}"]`);
    check('the consent page offers the requested scope', (await box.count()) === 1);
    check('the scope is not ticked in advance', !(await box.isChecked()));
    await box.check();
    await page.click('button[name=decision][value=allow]');

    const callback = await listener.callback(20_000);
    require_('the browser lands on the app\'s loopback redirect URI', callback !== null, page.url());
    await page.waitForSelector('#done');
    check('the loopback page tells the user to close the window', (await page.textContent('body')).includes('close this window'));
    return callback;
  } finally {
    await context.close();
  }
}

async function child() {
  const oauth = await import('oauth4webapi');
  const { chromium } = await import('playwright-core');

  const issuer = new URL(process.env.LATCHKEY_INTEROP_ISSUER);
  const email = process.env.LATCHKEY_INTEROP_EMAIL;
  const password = process.env.LATCHKEY_INTEROP_PASSWORD;
  const channels = new URL('/video/v3/channels?part=snippet&mine=true', issuer);

  let showLog = false;
  let browser = null;
  let listener = null;
  try {
    // Discovery (OpenID Connect metadata), checked by the library against the issuer identifier.
    const as = await oauth
      .discoveryRequest(issuer, { algorithm: 'oidc' })
      .then((response) => oauth.processDiscoveryResponse(issuer, response));
    check('oauth4webapi accepts the discovery document for the issuer', as.issuer === issuer.origin, as.issuer);
    check('discovery offers S256', as.code_challenge_methods_supported?.includes('S256') === true);
    check(
      'discovery advertises DPoP with ES256',
      JSON.stringify(as.dpop_signing_alg_values_supported) === JSON.stringify(['ES256']),
      short(as.dpop_signing_alg_values_supported),
    );

    // An installed app is a public client (RFC 8252 §8.4): client_id alone, no secret.
    const client = { client_id: process.env.LATCHKEY_INTEROP_CLIENT_ID };
    const clientAuth = oauth.None();
    const keyPair = await oauth.generateKeyPair('ES256');
    const DPoP = oauth.DPoP(client, keyPair);

    listener = await loopback();
    const redirectUri = listener.redirectUri;
    const codeVerifier = oauth.generateRandomCodeVerifier();
    const codeChallenge = await oauth.calculatePKCECodeChallenge(codeVerifier);
    const state = oauth.generateRandomState();
    const authorizationUrl = new URL(as.authorization_endpoint);
    authorizationUrl.searchParams.set('client_id', client.client_id);
    authorizationUrl.searchParams.set('redirect_uri', redirectUri);
    authorizationUrl.searchParams.set('response_type', 'code');
    authorizationUrl.searchParams.set('scope', READONLY);
    authorizationUrl.searchParams.set('code_challenge', codeChallenge);
    authorizationUrl.searchParams.set('code_challenge_method', 'S256');
    authorizationUrl.searchParams.set('state', state);

    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
    const callback = await browserPart(browser, authorizationUrl, listener, email, password);
    await browser.close();
    browser = null;

    check('the callback carries iss (RFC 9207)', callback.searchParams.get('iss') === as.issuer, callback.searchParams.get('iss'));
    let params;
    try {
      params = oauth.validateAuthResponse(as, client, callback, state);
    } catch (e) {
      require_('oauth4webapi validates the authorization response (state, iss)', false, `${e.name}: ${e.message} ${callback}`);
    }
    check('oauth4webapi validates the authorization response (state, iss)', true);

    // Code exchange with DPoP, as oauth4webapi's examples/dpop.ts does it: on use_dpop_nonce, retry once (the
    // handle has cached the DPoP-Nonce from the error response).
    let response;
    const authorizationCodeGrantRequest = () =>
      oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, codeVerifier, { DPoP });
    const processAuthorizationCodeResponse = () => oauth.processAuthorizationCodeResponse(as, client, response);
    response = await authorizationCodeGrantRequest();
    let nonceError = null;
    const token = await processAuthorizationCodeResponse().catch(async (err) => {
      if (oauth.isDPoPNonceError(err)) {
        nonceError = err;
        response = await authorizationCodeGrantRequest();
        return processAuthorizationCodeResponse();
      }
      throw err;
    }).catch((err) => {
      require_('the code exchange with DPoP succeeds', false, describe(err));
    });
    check(
      'the first code exchange (random jti, no nonce) is answered use_dpop_nonce, as docs/decisions.md says',
      nonceError !== null,
      'no use_dpop_nonce round trip happened',
    );
    if (nonceError) {
      check(
        'the use_dpop_nonce answer is a 400 carrying a DPoP-Nonce header',
        nonceError.status === 400 && !!nonceError.response?.headers.get('dpop-nonce'),
        `status ${nonceError.status}, DPoP-Nonce ${nonceError.response?.headers.get('dpop-nonce')}`,
      );
    }
    require_('the code exchange with DPoP succeeds', true);
    check('the code exchange response carries a fresh DPoP-Nonce', !!response.headers.get('dpop-nonce'));
    check('token_type is bearer (only the refresh token is bound)', token.token_type === 'bearer', token.token_type);
    check('the token response grants the requested scope', token.scope === READONLY, token.scope);
    check('expires_in is 3600', token.expires_in === 3600, token.expires_in);
    require_('an installed app gets a refresh token', typeof token.refresh_token === 'string' && token.refresh_token.length > 0);
    await checkApi(oauth, token.access_token, channels, 'the code exchange\'s access token');

    // Two refreshes with the same DPoP key. The handle already holds the nonce from the last token response, so
    // the library normally needs no retry here; it would retry once if it did.
    let refreshToken = token.refresh_token;
    let accessToken = token.access_token;
    for (const n of [1, 2]) {
      const { result, retried, response: res, error } = await refresh(oauth, as, client, clientAuth, refreshToken, DPoP);
      if (!check(`refresh ${n} with DPoP succeeds`, result !== null, describe(error))) continue;
      info(`refresh ${n}: ${retried ? 'needed a use_dpop_nonce retry' : 'used the nonce cached from the previous token response; no retry'}`);
      check(`refresh ${n} returns a new access token`, result.access_token !== accessToken);
      check(`refresh ${n} token_type is bearer`, result.token_type === 'bearer', result.token_type);
      check(`refresh ${n} response carries a fresh DPoP-Nonce`, !!res.headers.get('dpop-nonce'));
      accessToken = result.access_token;
      if (result.refresh_token) refreshToken = result.refresh_token;
      await checkApi(oauth, accessToken, channels, `refresh ${n}'s access token`);
    }

    // The same key in a new handle (an app restarted with its persisted key but no nonce): a bound refresh token
    // always needs a server nonce, so the library gets use_dpop_nonce once and succeeds on its retry.
    {
      const restarted = oauth.DPoP(client, keyPair);
      const { result, retried, error } = await refresh(oauth, as, client, clientAuth, refreshToken, restarted);
      check(
        'a refresh with the same key but no cached nonce gets use_dpop_nonce, then succeeds on the retry',
        result !== null && retried,
        result ? 'no use_dpop_nonce round trip happened' : describe(error),
      );
      if (result) await checkApi(oauth, result.access_token, channels, 'that refresh\'s access token');
    }

    // The refresh token is bound to the key: no proof at all fails.
    {
      const res = await oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken);
      const outcome = await oauth.processRefreshTokenResponse(as, client, res).then(
        (r) => ({ ok: r }),
        (e) => ({ err: e }),
      );
      check(
        'a refresh without DPoP fails with 400 (the refresh token is bound)',
        outcome.err !== undefined && res.status === 400,
        outcome.ok ? 'the refresh succeeded' : `status ${res.status} ${describe(outcome.err)}`,
      );
      if (outcome.err) info(`refresh without DPoP: ${res.status} ${describe(outcome.err)}`);
    }

    // A proof signed with another key fails, also after the library's nonce retry.
    {
      const other = oauth.DPoP(client, await oauth.generateKeyPair('ES256'));
      const { result, retried, response: res, error } = await refresh(oauth, as, client, clientAuth, refreshToken, other);
      check(
        'a refresh with a DPoP proof from another key fails with 400',
        result === null && res?.status === 400 && !oauth.isDPoPNonceError(error),
        result ? 'the refresh succeeded' : `status ${res?.status} ${describe(error)}`,
      );
      if (!result) info(`refresh with another key${retried ? ' (after a use_dpop_nonce retry)' : ''}: ${res?.status} ${describe(error)}`);
    }

    // Not an assertion (RFC 9449 does not say whether a wrong-key attempt revokes the grant): the right key again.
    {
      const { result, error } = await refresh(oauth, as, client, clientAuth, refreshToken, DPoP);
      info(`after the failed attempts, a refresh with the original key ${result ? 'still succeeds' : `fails: ${describe(error)}`}`);
    }
  } catch (e) {
    if (e instanceof Abort) {
      console.log(`stopped after: ${e.message}`);
    } else {
      console.log(e.stack || String(e));
      results.failed += 1;
    }
    showLog = true;
  } finally {
    if (browser) await browser.close().catch(() => {});
    if (listener) await listener.stop();
  }
  return childDone(showLog);
}

/** A refresh_token grant with DPoP, retried once on use_dpop_nonce as oauth4webapi documents. */
async function refresh(oauth, as, client, clientAuth, refreshToken, DPoP) {
  let response;
  let retried = false;
  const request = () => oauth.refreshTokenGrantRequest(as, client, clientAuth, refreshToken, { DPoP });
  const processResponse = () => oauth.processRefreshTokenResponse(as, client, response);
  try {
    response = await request();
    const result = await processResponse().catch(async (err) => {
      if (oauth.isDPoPNonceError(err)) {
        retried = true;
        response = await request();
        return processResponse();
      }
      throw err;
    });
    return { result, retried, response };
  } catch (error) {
    return { result: null, retried, response, error };
  }
}

/** The data API with a plain Bearer access token (the access token is not DPoP-bound). */
async function checkApi(oauth, accessToken, url, what) {
  try {
    const res = await oauth.protectedResourceRequest(accessToken, 'GET', url);
    const body = await res.text();
    if (!check(`channels.list works with ${what} as plain Bearer`, res.status === 200, `${res.status} ${short(body)}`)) return;
    const kind = JSON.parse(body).items?.[0]?.kind;
    check(`channels.list with ${what} returns a channel`, kind === 'video#channel', short(body));
  } catch (e) {
    check(`channels.list works with ${what} as plain Bearer`, false, describe(e));
  }
}

function describe(err) {
  if (!err) return '';
  const parts = [`${err.name}: ${err.message}`];
  if (err.error) parts.push(`error=${err.error}`);
  if (err.error_description) parts.push(`error_description=${JSON.stringify(err.error_description)}`);
  if (err.code) parts.push(`code=${err.code}`);
  if (err.cause && !err.error) parts.push(`cause=${short(err.cause)}`);
  return parts.join(' ');
}

// ---------------------------------------------------------------------------------------------------------------

process.exitCode = await main(import.meta.url, setup, child);
