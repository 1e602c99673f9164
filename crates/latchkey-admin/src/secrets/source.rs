//! Where the system secrets come from: `secrets_system` in the configuration (`LATCHKEY_SECRETS_SYSTEM`), the file
//! `secrets_system_file`, or by default `<data_dir>/system-secret`, made on first use. A file holds one secret a
//! line, first the one that encrypts, and is read at every use, so that a rotation reaches running instances.

use super::{SecretsError, SystemSecret, SystemSecrets};
use crate::data_dir;
use latchkey_core::secret::Secret;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The name of the default secret file in the data directory.
pub const DEFAULT_FILE: &str = "system-secret";

/// Where an instance takes its system secrets from.
#[derive(Debug)]
pub enum SecretSource {
    /// Listed in the configuration (`secrets_system`): fixed while the process runs.
    Listed(Arc<SystemSecrets>),
    /// A file, read at every use.
    File(SecretFile),
}

impl SecretSource {
    /// The source these settings name (the configuration's, see `Config::secret_source`): the secrets
    /// `listed` (`secrets_system`), else the secret `file` (`secrets_system_file`), else the default file in
    /// `data_dir`.
    pub fn from_settings(
        listed: Option<&[String]>,
        file: Option<&Path>,
        data_dir: &Path,
    ) -> Result<Self, SecretsError> {
        if let Some(list) = listed {
            let secrets = SystemSecrets::parse(list.iter().map(String::as_str), "secrets_system")?;
            return Ok(Self::Listed(Arc::new(secrets)));
        }
        Ok(Self::File(match file {
            Some(path) => SecretFile { path: path.to_owned(), default: false },
            None => SecretFile { path: data_dir.join(DEFAULT_FILE), default: true },
        }))
    }

    /// The secrets in force now.
    pub fn load(&self) -> Result<Arc<SystemSecrets>, SecretsError> {
        match self {
            Self::Listed(secrets) => Ok(Arc::clone(secrets)),
            Self::File(file) => file.read().map(Arc::new),
        }
    }

    /// The default secret file, which may be made while no stored key is encrypted.
    pub fn default_file(&self) -> Option<&SecretFile> {
        match self {
            Self::File(file) if file.default => Some(file),
            _ => None,
        }
    }
}

/// A file of system secrets, one a line (blank lines and lines starting with `#` are skipped).
#[derive(Debug, Clone)]
pub struct SecretFile {
    path: PathBuf,
    default: bool,
}

impl SecretFile {
    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The secrets written in the file, first the one that encrypts.
    pub fn read_secrets(&self) -> Result<Vec<Secret>, SecretsError> {
        let io = |source| SecretsError::Io { path: self.path.clone(), source };
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(SecretsError::MissingFile(self.path.clone()))
            }
            Err(e) => return Err(io(e)),
        };
        let lines = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#'));
        Ok(lines.map(|l| Secret::new(l.to_owned())).collect())
    }

    /// Tightens the file to 0600 when other accounts may read it (with a warning). A file that cannot be changed
    /// (a read-only mount) is left as it is, with a warning: it is still read.
    pub fn tighten(&self) {
        if let Err(e) = data_dir::tighten(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "cannot tighten the system secret file");
        }
    }

    /// The secrets in the file, ready to use.
    pub fn read(&self) -> Result<SystemSecrets, SecretsError> {
        let secrets = self.read_secrets()?;
        SystemSecrets::parse(secrets.iter().map(Secret::expose), &self.path.display().to_string())
    }

    /// Makes the file (and its directory, 0700) with a new secret, unless it exists. Of processes making it at
    /// the same moment one wins, and all use its secret.
    pub fn create(&self) -> Result<(), SecretsError> {
        let io = |source| SecretsError::Io { path: self.path.clone(), source };
        if let Some(dir) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            data_dir::ensure_private_dir(dir).map_err(io)?;
        }
        let secret = SystemSecret::generate();
        if data_dir::create_private(&self.path, format!("{}\n", secret.expose()).as_bytes()).map_err(io)? {
            tracing::info!(path = %self.path.display(), "made a new system secret; back it up with the database");
        }
        Ok(())
    }

    /// Replaces the file's secrets, atomically; the first encrypts from now on.
    pub fn write(&self, secrets: &[&Secret]) -> Result<(), SecretsError> {
        let text: String = secrets.iter().map(|s| format!("{}\n", s.expose())).collect();
        data_dir::replace_private(&self.path, text.as_bytes())
            .map_err(|source| SecretsError::Io { path: self.path.clone(), source })
    }
}
