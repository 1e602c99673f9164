// node-oidc-provider configured like latchkey, for the side-by-side run of docs/benchmarks.md:
// a public native client (no secret), PKCE S256 required, DPoP with server nonces required, refresh tokens
// not rotated, opaque access tokens, HTTPS, and a zero-overhead in-memory store (plain Maps: the built-in
// development adapter is an LRU of 1,000 entries, which evicts the codes a benchmark obtains in advance).
// Every authorization makes a new grant (as latchkey's consent does), so revoking one refresh token does not
// revoke the tokens obtained for the next requests. Its dev interactions (any login and
// password, then a consent page) stand in for latchkey's sign-in and consent pages, so `latchkey-bench
// --target oidc-provider` drives it through the same steps.
//
// Usage: NODE_ENV=production node server.mjs PORT CERT_PEM KEY_PEM   (serves https://127.0.0.1:PORT)
// scripts/bench.sh runs it in production mode, as node-oidc-provider's documentation asks of a deployment; the dev
// interactions still work there (it prints a warning that they are enabled).
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import Provider from 'oidc-provider';

const [port, certFile, keyFile] = process.argv.slice(2);
if (!port || !certFile || !keyFile) {
  console.error('usage: node server.mjs PORT CERT_PEM KEY_PEM');
  process.exit(2);
}

/** Entries by model name, then by id: { payload, expiresAt (ms) }. */
const models = new Map();
/** grantId -> [model name, id] of every entry of the grant. */
const byGrant = new Map();

class MapAdapter {
  constructor(name) {
    if (!models.has(name)) models.set(name, new Map());
    this.name = name;
    this.entries = models.get(name);
  }

  async upsert(id, payload, expiresIn) {
    this.entries.set(id, { payload, expiresAt: expiresIn ? Date.now() + expiresIn * 1000 : Infinity });
    if (payload.grantId) {
      if (!byGrant.has(payload.grantId)) byGrant.set(payload.grantId, []);
      byGrant.get(payload.grantId).push([this.name, id]);
    }
  }

  async find(id) {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      this.entries.delete(id);
      return undefined;
    }
    return entry.payload;
  }

  async findByUid(uid) {
    for (const [id, entry] of this.entries) if (entry.payload.uid === uid) return this.find(id);
    return undefined;
  }

  async findByUserCode(userCode) {
    for (const [id, entry] of this.entries) if (entry.payload.userCode === userCode) return this.find(id);
    return undefined;
  }

  async consume(id) {
    const entry = this.entries.get(id);
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    this.entries.delete(id);
  }

  async revokeByGrantId(grantId) {
    for (const [name, id] of byGrant.get(grantId) ?? []) models.get(name)?.delete(id);
    byGrant.delete(grantId);
  }
}

const issuer = `https://127.0.0.1:${port}`;
// Its own ES256 signing key, as latchkey signs with ES256: without one the provider signs with its quick-start
// RS256 development key, and an RSA signature costs several times an ES256 one.
const signingKey = { ...generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' }), alg: 'ES256', use: 'sig' };

const provider = new Provider(issuer, {
  jwks: { keys: [signingKey] },
  clients: [{
    client_id: 'bench',
    application_type: 'native',
    token_endpoint_auth_method: 'none',
    id_token_signed_response_alg: 'ES256',
    redirect_uris: ['http://127.0.0.1:8765/callback'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
  }],
  adapter: MapAdapter,
  // A new grant for every authorization (the default reuses the session's grant for the client).
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId;
    return grantId ? ctx.oidc.provider.Grant.find(grantId) : undefined;
  },
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
  // latchkey does not rotate refresh tokens (docs/decisions.md, "Refresh tokens": the refresh token stays valid).
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
