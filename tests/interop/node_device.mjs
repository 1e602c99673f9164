#!/usr/bin/env node
// Interop: panva's openid-client 6 (unmodified) as a TV app using the device authorization grant (RFC 8628) against
// the real latchkey binary, with headless Chromium (playwright-core) as the person who types the code on another
// device.
//
// Discovery names the device authorization endpoint; the app asks for its codes and polls once by hand before the
// person decides (authorization_pending). Then the library's own polling loop runs while the person opens
// verification_uri_complete, signs in, confirms the pre-filled code, reads the warning and allows one scope; the loop
// ends with the tokens, the app calls the data API with the access token, and a poll after that is refused (the
// device code is single use).
//
// Environment: LATCHKEY_BIN (required), CHROMIUM (default /usr/bin/chromium), LATCHKEY_INTEROP_KEEP=1 keeps the
// data directory. Prints "N passed, M failed" and exits 1 on any failure.

import { Abort, check, childDone, info, main, require_, sleep } from './harness.mjs';

const READONLY = 'https://latchkey.dev/auth/readonly';
const EMAIL = 'hedy@example.com';

/** The server side: a project with the data API, a TV client and a user. */
async function setup(server) {
  const project = server.admin(['project', 'create', '--name', 'Node device interop']).project_id;
  server.admin(['project', 'enable-api', '--project', project]);
  const client = server.admin(['client', 'create', '--project', project, '--type', 'tv', '--name', 'Living Room TV']);
  const password = `interop password ${Math.random().toString(36).slice(2, 10)}`;
  server.admin(['user', 'create', '--email', EMAIL, '--password-stdin', '--name', 'Hedy'], password);
  return {
    LATCHKEY_INTEROP_CLIENT_ID: client.client_id,
    LATCHKEY_INTEROP_EMAIL: EMAIL,
    LATCHKEY_INTEROP_PASSWORD: password,
  };
}

/** The person, on a phone or computer: opens the complete URI, signs in, confirms the code, allows. */
async function person(browser, uri, userCode, email, password) {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  page.setDefaultTimeout(20_000);
  try {
    await page.goto(uri);
    await page.waitForSelector('input[name=password]');
    check('the verification URI asks the person to sign in first', (await page.title()).includes('Sign in'));
    await page.fill('input[name=email]', email);
    await page.fill('input[name=password]', password);
    await page.click("form[action='/signin'] button[type=submit]");
    await page.waitForSelector('input[name=user_code]');
    check('the code is pre-filled, a click away', (await page.inputValue('input[name=user_code]')) === userCode);
    await page.click('#device-continue');
    await page.waitForSelector('#device-warning');
    const body = await page.textContent('body');
    check('the consent page names the app', body.includes('Living Room TV'));
    check('and warns to go on only for a device of one\'s own', body.includes('a device you own'));
    await page.locator(`input[name=scope][value="${READONLY}"]`).check();
    await page.click('button[name=decision][value=allow]');
    await page.waitForSelector('#heading');
    check('the person is told to go back to the device', (await page.textContent('body')).includes('Go back to your device'));
  } finally {
    await context.close();
  }
}

async function child() {
  const client = await import('openid-client');
  const { chromium } = await import('playwright-core');
  const issuer = new URL(process.env.LATCHKEY_INTEROP_ISSUER);
  const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
  let showLog = false;
  let browser = null;
  try {
    const config = await client.discovery(issuer, process.env.LATCHKEY_INTEROP_CLIENT_ID, undefined, client.None());
    const as = config.serverMetadata();
    require_('discovery names the device authorization endpoint', !!as.device_authorization_endpoint);
    check('discovery lists the device grant', as.grant_types_supported?.includes(DEVICE_GRANT) === true);
    const codes = await client.initiateDeviceAuthorization(config, { scope: READONLY });
    check('the user code reads XXXX-XXXX', /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/.test(codes.user_code));
    check('the interval is 5 s', codes.interval === 5, codes.interval);
    info(`device code issued; verification_uri ${codes.verification_uri}`);

    // One poll by hand before the person decides; the library's own polling loop comes after.
    const once = () =>
      client
        .genericGrantRequest(config, DEVICE_GRANT, { device_code: codes.device_code })
        .then((tokens) => ({ tokens }), (error) => ({ error }));
    const early = await once();
    check('a poll before the person decides is authorization_pending', early.error?.error === 'authorization_pending', early.error?.error);

    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    // The library polls at the interval (and honours slow_down) while the person decides.
    const polling = client
      .pollDeviceAuthorizationGrant(config, codes, undefined, { signal: AbortSignal.timeout(60_000) })
      .then((tokens) => ({ tokens }), (error) => ({ error }));
    await person(browser, codes.verification_uri_complete, codes.user_code, process.env.LATCHKEY_INTEROP_EMAIL, process.env.LATCHKEY_INTEROP_PASSWORD);
    const result = await polling;
    require_('the device gets its tokens once the person allowed', !!result.tokens, result.error?.error ?? result.error?.message);
    check('the tokens carry the scope allowed', result.tokens.scope === READONLY, result.tokens.scope);
    check('and a refresh token', typeof result.tokens.refresh_token === 'string');
    const api = await client.fetchProtectedResource(
      config,
      result.tokens.access_token,
      new URL('/video/v3/channels?part=snippet&mine=true', issuer),
      'GET',
    );
    check('the access token opens the data API', api.status === 200, api.status);
    await sleep(codes.interval * 1000);
    const again = await once();
    check('the device code is single use', again.error?.error === 'invalid_grant', again.error?.error);
  } catch (e) {
    if (e instanceof Abort) {
      console.log(`stopped after: ${e.message}`);
    } else {
      console.log(e.stack || String(e));
      check('the run finished without an exception', false);
    }
    showLog = true;
  } finally {
    if (browser) await browser.close().catch(() => {});
  }
  return childDone(showLog);
}

process.exitCode = await main(import.meta.url, setup, child);
