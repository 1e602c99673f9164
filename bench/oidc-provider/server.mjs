// node-oidc-provider configured like latchkey, for the side-by-side run of docs/benchmarks.md:
// a public native client (no secret), PKCE S256 required, DPoP with server nonces required, refresh tokens
// not rotated, opaque access tokens, the built-in in-memory store, HTTPS. Its dev interactions (any login and
// password, then a consent page) stand in for latchkey's sign-in and consent pages, so `latchkey bench
// --target oidc-provider` drives it through the same steps.
//
// Usage: node server.mjs PORT CERT_PEM KEY_PEM   (serves https://127.0.0.1:PORT)
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import Provider from 'oidc-provider';

const [port, certFile, keyFile] = process.argv.slice(2);
if (!port || !certFile || !keyFile) {
  console.error('usage: node server.mjs PORT CERT_PEM KEY_PEM');
  process.exit(2);
}

const issuer = `https://127.0.0.1:${port}`;
const provider = new Provider(issuer, {
  clients: [{
    client_id: 'bench',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    redirect_uris: ['http://127.0.0.1:8765/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  }],
  // Public clients always need PKCE (S256 only in v9).
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access'],
  claims: { openid: ['sub'] },
  findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
  features: {
    devInteractions: { enabled: true },
    dPoP: { enabled: true, nonceSecret: randomBytes(32), requireNonce: () => true },
    revocation: { enabled: true },
    userinfo: { enabled: true },
  },
  // latchkey does not rotate refresh tokens (the spec's refresh token stays valid).
  rotateRefreshToken: false,
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 600,
    Grant: 365 * 24 * 3600,
    IdToken: 3600,
    Interaction: 3600,
    RefreshToken: 365 * 24 * 3600,
    Session: 14 * 24 * 3600,
  },
});

createServer({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, provider.callback())
  .listen(Number(port), '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
