use super::*;
use latchkey_core::secret::random_bytes;

const FIRST: &str = "the first system secret, long enough to be a key";
const SECOND: &str = "the second system secret, long enough to be a key";

fn secrets(list: &[&str]) -> SystemSecrets {
    SystemSecrets::parse(list.iter().copied(), "test").expect("secrets")
}

#[test]
fn a_sealed_key_opens_under_its_secret_and_does_not_contain_the_material() {
    let material = random_bytes(32, &OsRandom);
    let s = secrets(&[FIRST]);
    let blob = s.seal(KeyKind::Mac, &material).expect("seal");
    assert!(blob.starts_with(MAGIC));
    assert!(!blob.windows(8).any(|w| material.windows(8).any(|m| m == w)), "no 8 bytes of the key in the clear");
    assert_eq!(sealed_by(&blob).expect("header"), Some(s.current()));
    let opened = s.open(KeyKind::Mac, &blob).expect("open");
    assert_eq!((opened.material.expose(), opened.protection), (&material[..], Protection::Current));
    assert_ne!(s.seal(KeyKind::Mac, &material).expect("seal"), blob, "every seal takes a fresh nonce");
}

#[test]
fn a_key_sealed_under_another_secret_does_not_open() {
    let blob = secrets(&[FIRST]).seal(KeyKind::IdToken, b"pkcs8").expect("seal");
    let other = secrets(&[SECOND]);
    assert!(matches!(other.open(KeyKind::IdToken, &blob), Err(SecretsError::UnknownSecret(f)) if f != other.current()));
    // Even a forged header naming the other secret's fingerprint gets nothing: the tag does not verify.
    let mut forged = blob.clone();
    forged[MAGIC.len() + 1..HEADER_LEN].copy_from_slice(&other.current().0);
    assert!(matches!(other.open(KeyKind::IdToken, &forged), Err(SecretsError::Undecryptable(_))));
}

#[test]
fn a_tampered_blob_does_not_open() {
    let s = secrets(&[FIRST]);
    let blob = s.seal(KeyKind::Mac, &[7; 32]).expect("seal");
    for i in [HEADER_LEN, HEADER_LEN + aead::NONCE_LEN, blob.len() - 1] {
        let mut tampered = blob.clone();
        tampered[i] ^= 1;
        assert!(matches!(s.open(KeyKind::Mac, &tampered), Err(SecretsError::Undecryptable(_))), "byte {i}");
    }
    assert!(matches!(s.open(KeyKind::Mac, &blob[..blob.len() - 1]), Err(SecretsError::Undecryptable(_))));
    assert!(matches!(s.open(KeyKind::Mac, &blob[..HEADER_LEN - 1]), Err(SecretsError::Truncated)));
    let mut version = blob.clone();
    version[MAGIC.len()] = 9;
    assert!(matches!(s.open(KeyKind::Mac, &version), Err(SecretsError::UnknownVersion(9))));
}

#[test]
fn a_blob_of_one_kind_does_not_open_as_the_other() {
    let s = secrets(&[FIRST]);
    let blob = s.seal(KeyKind::Mac, &[1; 32]).expect("seal");
    assert!(matches!(s.open(KeyKind::IdToken, &blob), Err(SecretsError::Undecryptable(_))));
}

#[test]
fn keys_stored_in_the_clear_are_recognised_as_such() {
    let s = secrets(&[FIRST]);
    let mac = random_bytes(32, &OsRandom);
    let pkcs8 = latchkey_core::jws::SigningKey::generate_pkcs8(&OsRandom).expect("key");
    for (kind, material) in [(KeyKind::Mac, &mac), (KeyKind::IdToken, &pkcs8)] {
        assert_eq!(sealed_by(material).expect("header"), None);
        let opened = s.open(kind, material).expect("open");
        assert_eq!((opened.material.expose(), opened.protection), (&material[..], Protection::Plaintext));
    }
}

#[test]
fn during_a_rotation_keys_under_the_old_secret_still_open_and_new_ones_take_the_new() {
    let old = secrets(&[FIRST]);
    let blob = old.seal(KeyKind::Mac, &[3; 32]).expect("seal");
    let rotating = secrets(&[SECOND, FIRST]);
    let opened = rotating.open(KeyKind::Mac, &blob).expect("old blob");
    assert_eq!(opened.protection, Protection::Older(old.current()));
    let resealed = rotating.seal(KeyKind::Mac, opened.material.expose()).expect("seal");
    assert_eq!(sealed_by(&resealed).expect("header"), Some(rotating.current()));
    let rotated = secrets(&[SECOND]);
    assert_eq!(rotated.open(KeyKind::Mac, &resealed).expect("open").material.expose(), &[3; 32]);
    assert!(matches!(rotated.open(KeyKind::Mac, &blob), Err(SecretsError::UnknownSecret(_))), "the old is gone");
}

#[test]
fn short_or_missing_secrets_are_refused_and_none_is_ever_printed() {
    assert!(matches!(SystemSecret::new("too short"), Err(SecretsError::TooShort)));
    assert!(matches!(SystemSecrets::parse([], "nowhere"), Err(SecretsError::Empty(_))));
    let s = secrets(&[FIRST, SECOND]);
    let shown = format!("{s:?}");
    assert!(!shown.contains("system secret") && shown.contains(&s.current().to_string()), "{shown}");
    let generated = SystemSecret::generate();
    assert!(SystemSecret::new(generated.expose()).is_ok(), "a generated secret is long enough");
    assert!(!format!("{generated:?}").contains(generated.expose()));
    let opened = s.open(KeyKind::Mac, b"plain key material").expect("open");
    assert!(!format!("{opened:?}").contains("plain"));
}

#[cfg(unix)]
#[test]
fn a_secret_file_is_made_once_private_and_read_at_every_use() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("data");
    let source = SecretSource::from_settings(None, None, &data_dir).expect("source");
    let file = source.default_file().expect("the default file");
    assert!(matches!(source.load(), Err(SecretsError::MissingFile(_))));
    file.create().expect("create");
    let first = source.load().expect("load").current();
    file.create().expect("create again");
    assert_eq!(source.load().expect("load").current(), first, "an existing file is kept");
    let mode = |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!((mode(file.path()), mode(&data_dir)), (0o600, 0o700));
    let new = SystemSecret::generate();
    let old = file.read_secrets().expect("read");
    file.write(&[&new, &old[0]]).expect("write");
    assert_eq!(source.load().expect("load").fingerprints()[1], first, "the next read sees the rotation");
    std::fs::set_permissions(file.path(), std::fs::Permissions::from_mode(0o644)).expect("chmod");
    file.tighten();
    assert_eq!(mode(file.path()), 0o600, "a looser file is tightened");
}
