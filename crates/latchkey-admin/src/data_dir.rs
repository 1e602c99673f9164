//! The data directory and the files only the server's account may read: the directory is created 0700, the SQLite
//! database files and the system secret file 0600, and looser ones found at start are tightened with a warning
//! (`docs/design.md`, "Design choices"). Elsewhere than on Unix the platform's defaults apply.

use crate::clock::OsRandom;
use latchkey_core::secret::random_b64;
use std::io::Write;
use std::path::Path;

/// Creates `dir` (and its missing parents) readable by its owner only, or tightens it when it exists.
pub fn ensure_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)?;
    tighten(dir)
}

/// Makes the SQLite database file 0600 before SQLite opens it: an empty file when there is none (SQLite takes
/// it for a new database), else the file tightened; SQLite then creates its `-wal` and `-shm` files with the
/// database file's mode. Existing `-wal` and `-shm` files are tightened too.
pub fn prepare_database(path: &Path) -> std::io::Result<()> {
    let parent_exists = path.parent().is_none_or(|p| p.as_os_str().is_empty() || p.is_dir());
    if parent_exists {
        match private_options().create_new(true).open(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        tighten(Path::new(&name))?;
    }
    Ok(())
}

/// Makes a file only its owner may read, with `bytes`, unless it exists; false when it existed. The content is
/// complete from the moment the file appears (it is written aside and linked into place), so a process making
/// the same file at the same moment either wins or reads the winner's content.
pub fn create_private(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let tmp = write_aside(path, bytes)?;
    let linked = std::fs::hard_link(&tmp, path);
    std::fs::remove_file(&tmp)?;
    match linked {
        Ok(()) => sync_dir(path).map(|()| true),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Replaces a file with one only its owner may read, holding `bytes`, atomically (written aside, then renamed).
pub fn replace_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = write_aside(path, bytes)?;
    std::fs::rename(&tmp, path)?;
    sync_dir(path)
}

/// Tightens an existing file or directory that other accounts may access: group and other bits are cleared, with a
/// warning. A path that does not exist is left alone.
pub fn tighten(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = match std::fs::metadata(path) {
            Ok(meta) => meta.permissions().mode() & 0o777,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        if mode & 0o077 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
            tracing::warn!(
                path = %path.display(),
                was = format!("{mode:o}"),
                now = format!("{:o}", mode & 0o700),
                "other accounts could access this; tightened its permissions"
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Open options for a new file of mode 0600.
fn private_options() -> std::fs::OpenOptions {
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    options
}

/// Writes `bytes` to a new private file beside `path`, synced; returns its path.
fn write_aside(path: &Path, bytes: &[u8]) -> std::io::Result<std::path::PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("latchkey");
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", random_b64(6, &OsRandom)));
    let mut file = private_options().create_new(true).open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(tmp)
}

/// Makes a new name in the directory of `path` durable.
fn sync_dir(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
    }

    #[test]
    fn a_new_data_directory_and_database_file_are_private() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("a/data");
        ensure_private_dir(&dir).expect("dir");
        prepare_database(&dir.join("latchkey.db")).expect("db");
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("latchkey.db")), 0o600);
        assert_eq!(std::fs::metadata(dir.join("latchkey.db")).expect("metadata").len(), 0, "an empty database");
    }

    #[test]
    fn looser_existing_ones_are_tightened_and_stricter_ones_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let db = dir.path().join("latchkey.db");
        for (name, m) in [("latchkey.db", 0o644), ("latchkey.db-wal", 0o664), ("latchkey.db-shm", 0o400)] {
            std::fs::write(dir.path().join(name), b"x").expect("write");
            std::fs::set_permissions(dir.path().join(name), std::fs::Permissions::from_mode(m)).expect("chmod");
        }
        ensure_private_dir(dir.path()).expect("dir");
        prepare_database(&db).expect("db");
        assert_eq!(mode(dir.path()), 0o700);
        assert_eq!(mode(&db), 0o600);
        assert_eq!(mode(&dir.path().join("latchkey.db-wal")), 0o600);
        assert_eq!(mode(&dir.path().join("latchkey.db-shm")), 0o400, "owner-only already");
        assert_eq!(std::fs::read(&db).expect("read"), b"x", "the content is kept");
    }

    #[test]
    fn a_private_file_is_created_once_and_replaced_atomically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("secret");
        assert!(create_private(&path, b"first").expect("create"));
        assert!(!create_private(&path, b"second").expect("exists"), "the first one stays");
        assert_eq!(std::fs::read(&path).expect("read"), b"first");
        replace_private(&path, b"third").expect("replace");
        assert_eq!((std::fs::read(&path).expect("read"), mode(&path)), (b"third".to_vec(), 0o600));
        let names: Vec<_> =
            std::fs::read_dir(dir.path()).expect("list").map(|e| e.expect("entry").file_name()).collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }
}
