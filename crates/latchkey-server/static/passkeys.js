// Passkeys: the WebAuthn ceremonies of the account page ("Add a passkey") and of the sign-in page ("Sign in with a
// passkey", and passkeys offered by the e-mail field's autofill where the browser can). Each ceremony asks the
// server for its options, hands them to navigator.credentials, and posts the answer back as a form with the page's
// CSRF token; the server answers { next } (where to go) or { error } (what to say here). No inline script: the
// pages' CSP is script-src 'self', connect-src 'self'.
(function () {
  'use strict';

  function decode(text) {
    const b64 = text.replace(/-/g, '+').replace(/_/g, '/');
    const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
    return Uint8Array.from(raw, function (c) { return c.charCodeAt(0); }).buffer;
  }

  function encode(buffer) {
    let raw = '';
    new Uint8Array(buffer).forEach(function (b) { raw += String.fromCharCode(b); });
    return btoa(raw).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  }

  async function post(url, fields) {
    let response;
    try {
      response = await fetch(url, {
        method: 'POST',
        body: new URLSearchParams(fields),
        credentials: 'same-origin',
        headers: { Accept: 'application/json' },
      });
    } catch (e) {
      return { error: 'The server could not be reached. Check your connection and try again.' };
    }
    try {
      return await response.json();
    } catch (e) {
      return { error: 'This page has expired. Reload it and try again.' };
    }
  }

  function show(element, message) {
    if (!element) return;
    element.textContent = message;
    element.hidden = false;
  }

  // Posts the authenticator's answer with the ceremony's id; goes where the server says, or shows why not.
  async function finish(url, fields, ceremony, answer, error) {
    fields.ceremony = ceremony;
    fields.credential = JSON.stringify(answer);
    const finished = await post(url, fields);
    if (finished.error) { show(error, finished.error); return; }
    window.location.assign(finished.next);
  }

  // The JSON of a credential the browser made or used (its `response`'s binary fields in base64url).
  function answerOf(credential, response) {
    return {
      id: credential.id,
      rawId: encode(credential.rawId),
      type: credential.type,
      response: response,
      extensions: credential.getClientExtensionResults(),
    };
  }

  function refusedByBrowser(e) {
    if (e && e.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out.';
    if (e && e.name === 'InvalidStateError') return 'This device already holds a passkey for this account.';
    return 'Your browser could not use a passkey here' + (e && e.message ? ': ' + e.message : '.');
  }

  // The account page: "Add a passkey".
  const add = document.getElementById('add-passkey');
  if (add) {
    add.addEventListener('submit', async function (event) {
      event.preventDefault();
      const error = document.getElementById('passkey-error');
      error.hidden = true;
      const fields = {
        csrf: add.elements.csrf.value,
        account: add.elements.account.value,
        name: add.elements.name.value,
      };
      if (!window.PublicKeyCredential) {
        show(error, 'This browser does not support passkeys.');
        return;
      }
      const started = await post(add.dataset.options, fields);
      if (started.error) { show(error, started.error); return; }
      const options = started.options.publicKey;
      options.challenge = decode(options.challenge);
      options.user.id = decode(options.user.id);
      (options.excludeCredentials || []).forEach(function (c) { c.id = decode(c.id); });
      let credential;
      try {
        credential = await navigator.credentials.create({ publicKey: options });
      } catch (e) {
        show(error, refusedByBrowser(e));
        return;
      }
      const answer = answerOf(credential, {
        attestationObject: encode(credential.response.attestationObject),
        clientDataJSON: encode(credential.response.clientDataJSON),
        transports: credential.response.getTransports ? credential.response.getTransports() : undefined,
      });
      await finish(add.action, fields, started.ceremony, answer, error);
    });
  }

  // The sign-in page: "Sign in with a passkey", and the e-mail field's autofill.
  const button = document.getElementById('passkey-signin');
  if (button) {
    const form = button.form || document.getElementById('signin-form');
    const error = document.getElementById('passkey-error');
    let pending = null;

    async function signIn(conditional) {
      const fields = { csrf: form.elements.csrf.value };
      const started = await post('/signin/passkey/options', fields);
      if (started.error) { if (!conditional) show(error, started.error); return; }
      const options = started.options.publicKey;
      options.challenge = decode(options.challenge);
      (options.allowCredentials || []).forEach(function (c) { c.id = decode(c.id); });
      const request = { publicKey: options };
      if (conditional) {
        pending = new AbortController();
        request.mediation = 'conditional';
        request.signal = pending.signal;
      }
      let credential;
      try {
        credential = await navigator.credentials.get(request);
      } catch (e) {
        if (!conditional) show(error, refusedByBrowser(e));
        return;
      }
      const answer = answerOf(credential, {
        authenticatorData: encode(credential.response.authenticatorData),
        clientDataJSON: encode(credential.response.clientDataJSON),
        signature: encode(credential.response.signature),
        userHandle: credential.response.userHandle ? encode(credential.response.userHandle) : null,
      });
      fields.continue = form.elements.continue.value;
      await finish('/signin/passkey', fields, started.ceremony, answer, error);
    }

    button.addEventListener('click', function (event) {
      event.preventDefault();
      error.hidden = true;
      if (!window.PublicKeyCredential) { show(error, 'This browser does not support passkeys.'); return; }
      if (pending) { pending.abort(); pending = null; }
      signIn(false);
    });

    // Autofill: once the person uses the e-mail field (not on its autofocus: a page that only loaded asks nothing),
    // where the browser offers passkeys in it.
    const email = document.getElementById('email');
    if (email && window.PublicKeyCredential && PublicKeyCredential.isConditionalMediationAvailable) {
      const once = async function () {
        email.removeEventListener('pointerdown', once);
        email.removeEventListener('keydown', once);
        if (!pending && await PublicKeyCredential.isConditionalMediationAvailable()) signIn(true);
      };
      email.addEventListener('pointerdown', once);
      email.addEventListener('keydown', once);
    }
  }
})();
