//! Files that only their owner may read.

use crate::Error;
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` with mode 0600 (owner read/write only), atomically: a temporary file in the same
/// directory is written, synced and renamed over the target. The temporary file has a random name and is created
/// new (`O_EXCL`: an existing file or a symbolic link in its place is never opened), so that another user who can
/// write to the directory can neither predict it nor redirect the write. A directory made here is 0700.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error::Storage(format!("{}: {e}", path.display()));
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir).map_err(fail)?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("latchkey");
    let (tmp, mut file) = create_new_private(dir, name).map_err(fail)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all()).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map_err(fail)
}

/// A new file of mode 0600 with a random name beside `name` in `dir`.
fn create_new_private(dir: &Path, name: &str) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let rng = ring::rand::SystemRandom::new();
    let mut last = None;
    for _ in 0..8 {
        let mut random = [0u8; 8];
        ring::rand::SecureRandom::fill(&rng, &mut random).map_err(|_| std::io::Error::other("no randomness"))?;
        let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let tmp = dir.join(format!(".{name}.{suffix}.tmp"));
        match options.open(&tmp) {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no temporary name was free")))
}

/// Reads a file, `None` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Storage(format!("{}: {e}", path.display()))),
    }
}

/// Removes a file; a missing one is fine.
pub(crate) fn remove(path: &Path) -> Result<(), Error> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(Error::Storage(format!("{}: {e}", path.display()))),
    }
}

#[cfg(all(test, unix))]
mod tests {
    #[test]
    fn private_files_are_mode_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sub/secret.json");
        super::write_private(&path, b"x").expect("write");
        super::write_private(&path, b"y").expect("overwrite");
        assert_eq!(std::fs::read(&path).expect("read"), b"y");
        assert_eq!(std::fs::metadata(&path).expect("meta").permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(dir.path().join("sub")).expect("meta").permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_planted_link_at_the_old_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("attacker-readable");
        std::fs::write(&target, b"before").expect("plant");
        std::os::unix::fs::symlink(&target, dir.path().join(".secret.json.tmp")).expect("link");
        let path = dir.path().join("secret.json");
        super::write_private(&path, b"tokens").expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"before", "the link's target is untouched");
        assert_eq!(std::fs::read(&path).expect("read"), b"tokens");
        let left: Vec<_> = std::fs::read_dir(dir.path()).expect("list").filter_map(Result::ok).collect();
        assert_eq!(left.len(), 3, "no temporary file is left behind");
    }
}
