//! `latchkey-bench es256`: how many DPoP proofs one thread verifies per second, with the functions latchkey's
//! token endpoint calls, on real proofs (made by `latchkey-client`'s `DpopKey`, as in the `refresh-dpop`
//! workload). Two figures: the ES256 signature alone (`latchkey_core::jws::verify_es256`, which is *ring*'s
//! P-256 verification), the ceiling that no DPoP request can pass on that core; and every stateless check of a
//! proof (`latchkey_core::dpop::verify`: the JWS form, the JSON, the key, the signature, `htm`, `htu`, `iat`,
//! the thumbprint). `scripts/bench.sh` runs it pinned to the server's core, in the same run as the server.

use anyhow::{bail, Context};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use latchkey_client::DpopKey;
use latchkey_core::dpop::{self, Window};
use latchkey_core::jws::verify_es256;
use latchkey_core::time::UnixTime;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use std::time::{Duration, Instant};

/// The options of `es256`.
#[derive(clap::Args)]
pub struct Es256Args {
    /// Measured seconds for each of the two figures.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// One JSON object per figure on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// Distinct keys (and proofs) verified in turn, as from many clients.
const KEYS: usize = 64;
/// The token endpoint the proofs are made for.
const HTU: &str = "https://127.0.0.1:9443/token";
/// The time the proofs are made at and checked at.
const NOW: i64 = 1_800_000_000;

/// One proof: the whole compact JWS, and its parts as the signature check takes them.
struct Sample {
    proof: String,
    point: [u8; 65],
    signing_input: Vec<u8>,
    signature: Vec<u8>,
}

/// Runs both measurements and prints them.
pub fn run(args: &Es256Args) -> anyhow::Result<()> {
    if args.duration <= 0.0 {
        bail!("--duration must be positive");
    }
    let samples = (0..KEYS).map(sample).collect::<anyhow::Result<Vec<_>>>()?;
    let duration = Duration::from_secs_f64(args.duration);
    let signature = rate(&samples, duration, |s| verify_es256(&s.point, &s.signing_input, &s.signature))?;
    let proof =
        rate(&samples, duration, |s| dpop::verify(&s.proof, "POST", HTU, UnixTime(NOW), Window::default()).is_ok())?;
    for (name, per_s) in [("es256-verify", signature), ("dpop-proof-verify", proof)] {
        if args.json {
            let round = |x: f64| (x * 10.0).round() / 10.0;
            println!(
                "{}",
                serde_json::json!({ "workload": name, "req_per_s": round(per_s), "us_per_op": round(1e6 / per_s) })
            );
        } else {
            println!("{name}: {per_s:.0} per second, {:.1} µs each", 1e6 / per_s);
        }
    }
    Ok(())
}

/// A proof of a new key, with a nonce of the size latchkey issues.
fn sample(i: usize) -> anyhow::Result<Sample> {
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
        .map_err(|_| anyhow::anyhow!("cannot generate a P-256 key"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &SystemRandom::new())
        .map_err(|_| anyhow::anyhow!("cannot read the P-256 key"))?;
    let proof =
        DpopKey::from_pkcs8(pkcs8.as_ref())?.proof("POST", HTU, &format!("{i:022}"), Some(&"n".repeat(75)), NOW)?;
    let (signing_input, s64) = proof.rsplit_once('.').context("a compact JWS")?;
    Ok(Sample {
        point: pair.public_key().as_ref().try_into().context("an uncompressed P-256 point")?,
        signing_input: signing_input.as_bytes().to_vec(),
        signature: URL_SAFE_NO_PAD.decode(s64)?,
        proof,
    })
}

/// Calls `check` on the samples in turn for half a second (a warm-up), then for `duration`: checks per second.
fn rate(samples: &[Sample], duration: Duration, check: impl Fn(&Sample) -> bool) -> anyhow::Result<f64> {
    let run = |window: Duration| -> anyhow::Result<f64> {
        let (start, mut checked) = (Instant::now(), 0u64);
        while start.elapsed() < window {
            if !samples.iter().all(&check) {
                bail!("a proof did not verify");
            }
            checked += samples.len() as u64;
        }
        Ok(checked as f64 / start.elapsed().as_secs_f64())
    };
    run(Duration::from_millis(500))?;
    run(duration)
}
