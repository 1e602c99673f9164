//! The core reads no randomness of its own: every function that needs random bytes takes a
//! `latchkey_core::secret::Random` from its caller, and the operating system's source lives in the server. The
//! check reads the core's sources (tests left out) for the names of the ways to reach the operating system's
//! generator.

mod crate_sources;

use crate_sources::{code, sources};
use std::path::Path;

/// Names that reach the operating system's randomness: `rand`'s, `getrandom`'s and *ring*'s.
const FORBIDDEN: &[&str] = &["OsRng", "SystemRandom", "getrandom", "thread_rng", "rand::rng", "rand::random"];

/// The forbidden names in a file's code (comments and its test module left out), as `file:line: name`.
fn uses(file: &Path, text: &str) -> Vec<String> {
    let mut found = vec![];
    for (i, line) in code(text).lines().enumerate() {
        for name in FORBIDDEN.iter().filter(|n| line.contains(*n)) {
            found.push(format!("{}:{}: {name}", file.display(), i + 1));
        }
    }
    found
}

#[test]
fn the_core_reads_no_randomness_of_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![];
    sources(&src, &mut files);
    assert!(files.len() > 10, "the core's sources are found: {files:?}");
    let found: Vec<String> = files.iter().flat_map(|f| uses(f, &std::fs::read_to_string(f).expect("read"))).collect();
    assert!(found.is_empty(), "the core takes randomness from its caller (secret::Random): {found:#?}");
}

#[test]
fn the_core_does_not_depend_on_a_random_number_crate() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml")).expect("read");
    let deps = manifest.split("[dependencies]").nth(1).expect("[dependencies]");
    let deps = deps.split("\n[").next().unwrap_or("");
    for name in ["rand", "rand_core", "getrandom"] {
        assert!(
            !deps.lines().any(|l| l.split(['.', ' ', '=']).next() == Some(name)),
            "{name} is a dependency of latchkey-core"
        );
    }
}

#[test]
fn the_check_sees_a_use_outside_tests_only() {
    let file = Path::new("x.rs");
    let text = "use ring::rand::SystemRandom;\n/// Not *ring*'s `SystemRandom`.\nfn f() {}\n#[cfg(test)]\nmod tests { use rand::rngs::OsRng; }\n";
    assert_eq!(uses(file, text), vec!["x.rs:1: SystemRandom".to_owned()]);
    assert!(uses(file, "fn f(random: &dyn Random) {}\n").is_empty());
}
