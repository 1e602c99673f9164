//! Opening the store the configuration names, with the data directory's files made private first.

use crate::Config;
use anyhow::Context;
use latchkey_admin::data_dir;
use latchkey_store::Store;
use std::sync::Arc;

/// Opens the store the configuration names. On SQLite the data directory (0700) and the database file (0600)
/// are made first, or tightened when looser, so that SQLite's `-wal` and `-shm` files, which take the database
/// file's mode, are private too.
pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    prepare_data_dir(config)?;
    latchkey_store::open_with(&config.database_url(), config.pool_settings()).await.context("opening the store")
}

/// On SQLite, makes the data directory (0700) and the database files (0600), or tightens looser ones, before the
/// store is opened.
pub fn prepare_data_dir(config: &Config) -> anyhow::Result<()> {
    if let Some(path) = config.sqlite_path() {
        data_dir::ensure_private_dir(&config.data_dir)
            .with_context(|| format!("creating the data directory {}", config.data_dir.display()))?;
        data_dir::prepare_database(&path).with_context(|| format!("preparing {}", path.display()))?;
    }
    Ok(())
}
