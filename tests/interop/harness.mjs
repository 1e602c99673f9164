// The interop scripts' shared harness: assertions counted without stopping the run, and the real `latchkey serve`
// with its `latchkey admin`, run by a parent process that starts the app as a child with NODE_EXTRA_CA_CERTS set
// (Node reads it only at start-up, and the server's certificate exists only once the server runs).

import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const CHILD_ENV = 'LATCHKEY_INTEROP_NODE_CHILD';

export const results = { passed: 0, failed: 0 };

/** Records one assertion; never stops the run. */
export function check(name, ok, detail = '') {
  if (ok) {
    results.passed += 1;
    console.log(`ok   ${name}`);
  } else {
    results.failed += 1;
    console.log(`FAIL ${name}${detail ? `: ${detail}` : ''}`);
  }
  return ok;
}

/** A failed assertion the rest of the run depends on (already counted). */
export class Abort extends Error {}

/** An assertion the rest of the run depends on. */
export function require_(name, ok, detail = '') {
  if (!check(name, ok, detail)) throw new Abort(name);
}

export function info(text) {
  console.log(`info ${text}`);
}

export function short(value) {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text && text.length > 300 ? `${text.slice(0, 300)}...` : text;
}

// ---------------------------------------------------------------------------------------------------------------
// Parent: the server and its administrator.
// ---------------------------------------------------------------------------------------------------------------

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function healthz(base, ca) {
  return new Promise((resolve) => {
    const req = https.get(`${base}/healthz`, { ca, timeout: 2000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (e) => resolve(e));
  });
}

export class Latchkey {
  constructor(binary) {
    this.binary = binary;
    this.dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'latchkey-interop-node-'));
    this.cert = path.join(this.dataDir, 'tls', 'cert.pem');
    this.logPath = path.join(this.dataDir, 'serve.log');
    this.proc = null;
  }

  async start() {
    this.port = await freePort();
    this.base = `https://127.0.0.1:${this.port}`;
    const log = fs.openSync(this.logPath, 'w');
    this.proc = spawn(
      this.binary,
      ['serve', '--data-dir', this.dataDir, '--listen', `127.0.0.1:${this.port}`],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    this.exited = new Promise((resolve) => this.proc.once('exit', (code, signal) => resolve({ code, signal })));
    let exit = null;
    this.exited.then((e) => {
      exit = e;
    });
    const deadline = Date.now() + 60_000;
    let last = null;
    while (Date.now() < deadline) {
      if (exit) throw new Error(`latchkey serve exited with ${JSON.stringify(exit)}:\n${this.output()}`);
      if (fs.existsSync(this.cert)) {
        const status = await healthz(this.base, fs.readFileSync(this.cert));
        if (status === 200) return;
        last = status;
      }
      await sleep(200);
    }
    throw new Error(`latchkey did not become healthy: ${last}\n${this.output()}`);
  }

  admin(args, input) {
    let out;
    try {
      out = execFileSync(this.binary, ['admin', '--data-dir', this.dataDir, ...args], {
        input,
        encoding: 'utf8',
        timeout: 60_000,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
    } catch (e) {
      throw new Error(`latchkey admin ${args.join(' ')} failed (${e.status}): ${e.stderr}`);
    }
    out = out.trim();
    return out ? JSON.parse(out) : null;
  }

  output() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch {
      return '';
    }
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null && this.proc.signalCode === null) {
      this.proc.kill('SIGTERM');
      const timer = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
      await this.exited;
      clearTimeout(timer);
    }
    if (process.env.LATCHKEY_INTEROP_KEEP === '1') {
      console.log(`data directory kept: ${this.dataDir}`);
    } else {
      fs.rmSync(this.dataDir, { recursive: true, force: true });
    }
  }
}

export function runChild(script, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [fileURLToPath(script)], {
      env: { ...process.env, ...env },
      stdio: 'inherit',
    });
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}


/**
 * The parent's run: starts the server, lets `setup(server)` make what the app needs (it returns the child's
 * environment), runs the script again as the app, and adds the child's results to this process's.
 */
async function parent(script, binary, setup) {
  const server = new Latchkey(binary);
  const stop = () => {
    if (server.proc && server.proc.exitCode === null) server.proc.kill('SIGTERM');
  };
  process.once('SIGINT', () => {
    stop();
    process.exit(130);
  });
  process.once('SIGTERM', () => {
    stop();
    process.exit(143);
  });
  let showLog = false;
  try {
    await server.start();
    check('latchkey serve answers /healthz over TLS with its generated certificate', true);
    const env = await setup(server);
    const resultsFile = path.join(server.dataDir, 'node-child-results.json');
    const exit = await runChild(script, {
      ...env,
      [CHILD_ENV]: '1',
      NODE_EXTRA_CA_CERTS: server.cert,
      LATCHKEY_INTEROP_ISSUER: server.base,
      LATCHKEY_INTEROP_RESULTS: resultsFile,
    });
    let child = null;
    try {
      child = JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
    } catch {
      // reported below
    }
    if (child) {
      results.passed += child.passed;
      results.failed += child.failed;
      showLog = child.showLog;
    }
    check(
      'the client process ran to the end',
      child !== null && exit.code === (child.failed ? 1 : 0),
      `exit ${JSON.stringify(exit)}, results ${child ? 'written' : 'missing'}`,
    );
    if (!child) showLog = true;
  } catch (e) {
    console.log(e.stack || String(e));
    results.failed += 1;
    showLog = true;
  } finally {
    if (showLog) console.log(`latchkey serve output:\n${server.output()}`);
    await server.stop();
  }
}

/** The child's end: its results, for the parent. */
export function childDone(showLog) {
  fs.writeFileSync(process.env.LATCHKEY_INTEROP_RESULTS, JSON.stringify({ ...results, showLog }));
  return results.failed === 0 ? 0 : 1;
}

/** Runs a script: as the app (`child`) in the child process, else as the parent with `setup`. */
export async function main(script, setup, child) {
  if (process.env[CHILD_ENV] === '1') {
    return child();
  }
  const binary = process.env.LATCHKEY_BIN;
  try {
    fs.accessSync(binary ?? '', fs.constants.X_OK);
  } catch {
    console.error(`LATCHKEY_BIN must name the latchkey binary (got ${JSON.stringify(binary)})`);
    return 2;
  }
  await parent(script, binary, setup);
  console.log(`${results.passed} passed, ${results.failed} failed`);
  return results.failed === 0 ? 0 : 1;
}
