//! Micro-benchmarks of the hot paths: DPoP proof checking (parse + verify + replay recording in the store),
//! PKCE, access-token minting and verification, and the raw argon2id password hash.
//!
//! Run with `cargo bench -p latchkey-server --bench hot_paths`.

#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use latchkey_admin::clock::OsRandom;
use latchkey_core::access_token::{self, AccessClaims, GrantId, Holder, MacKey};
use latchkey_core::dpop::{self, Window};
use latchkey_core::jws::{sign_parts, EcJwk};
use latchkey_core::pkce::{self, ChallengeMethod};
use latchkey_core::scope::ScopeSet;
use latchkey_core::time::UnixTime;
use latchkey_store::Replay;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use serde_json::json;
use std::hint::black_box;

const URL: &str = "https://127.0.0.1:8443/token";
const NOW: UnixTime = UnixTime(1_700_000_000);

fn key() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("key");
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).expect("key")
}

fn proof(k: &EcdsaKeyPair, jti: &str) -> String {
    let jwk = EcJwk::from_point(k.public_key().as_ref()).expect("jwk");
    sign_parts(
        k,
        &json!({ "typ": "dpop+jwt", "alg": "ES256", "jwk": jwk }),
        &json!({ "jti": jti, "htm": "POST", "htu": URL, "iat": NOW.0 }),
        &OsRandom,
    )
    .expect("sign")
}

fn dpop_benches(c: &mut Criterion) {
    let k = key();
    let p = proof(&k, "bench-jti");
    c.bench_function("dpop/parse_and_verify", |b| {
        b.iter(|| dpop::verify(black_box(&p), "POST", URL, NOW, Window::default()).expect("valid"))
    });

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("bench.db").display());
    let store = runtime.block_on(latchkey_store::sqlite::SqliteStore::open(&url)).expect("store");
    let proofs: Vec<String> = (0..20_000).map(|i| proof(&k, &format!("jti-{i}"))).collect();
    let mut next = 0usize;
    c.bench_function("dpop/parse_verify_and_record_jti_sqlite", |b| {
        b.to_async(&runtime).iter(|| {
            let p = &proofs[next % proofs.len()];
            next += 1;
            let store = &store;
            async move {
                let checked = dpop::verify(p, "POST", URL, NOW, Window::default()).expect("valid");
                // Replays after the first pass through the list are expected; the cost is the same write.
                let _ = store.record_once(&[(dpop::replay_key(&checked), NOW.plus(66))], NOW).await.expect("record");
            }
        })
    });

    let mac = MacKey::new(1, b"0123456789abcdef0123456789abcdef");
    c.bench_function("dpop/issue_nonce", |b| b.iter(|| dpop::issue_nonce(&mac, NOW, NOW.plus(300), &OsRandom)));
    let n = dpop::issue_nonce(&mac, NOW, NOW.plus(300), &OsRandom);
    c.bench_function("dpop/check_nonce", |b| {
        b.iter(|| dpop::check_nonce(std::slice::from_ref(&mac), black_box(&n), NOW).expect("valid"))
    });
}

fn token_benches(c: &mut Criterion) {
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
    c.bench_function("pkce/verify_s256", |b| {
        b.iter(|| pkce::verify(ChallengeMethod::S256, challenge, black_box(verifier)).expect("valid"))
    });
    let mac = MacKey::new(1, b"0123456789abcdef0123456789abcdef");
    let claims = AccessClaims {
        holder: Holder::Grant(GrantId::generate(&OsRandom)),
        expires_at: NOW.plus(3600),
        scopes: ScopeSet(0b11),
    };
    c.bench_function("access_token/mint", |b| b.iter(|| access_token::mint(&mac, black_box(&claims), &OsRandom)));
    let t = access_token::mint(&mac, &claims, &OsRandom);
    c.bench_function("access_token/verify", |b| {
        b.iter(|| access_token::verify(std::slice::from_ref(&mac), black_box(&t), NOW).expect("valid"))
    });
}

/// The raw argon2id hash with the default parameters (19 MiB, 2 passes, 1 lane): what bounds sign-ins.
fn password_benches(c: &mut Criterion) {
    let phc = latchkey_admin::password::hash("correct horse battery staple").expect("hash");
    let mut group = c.benchmark_group("password");
    group.sample_size(20);
    group.bench_function("argon2id_verify", |b| {
        b.iter(|| latchkey_admin::password::verify(black_box("correct horse battery staple"), Some(&phc)))
    });
    group.finish();
}

criterion_group!(benches, dpop_benches, token_benches, password_benches);
criterion_main!(benches);
