//! The URLs an admin command prints or writes (key files' `token_uri`, streams' `iss` and poll endpoint): those of
//! the server that runs on the store, as `latchkey serve` recorded them at start, so that a server started with
//! `--listen` or `--public-url` on its command line is named, not the one this command's configuration describes.

use latchkey_config::{Config, Urls};
use latchkey_store::Store;

/// The served URLs, or this configuration's when no server has started on the store yet. When the configuration
/// names a server of its own (`public_url`, or a `listen` address other than the default) and it is another one,
/// says so on stderr.
pub(super) async fn served_urls(store: &dyn Store, config: &Config) -> Urls {
    let configured = Urls::new(config, config.listen);
    let served = match store.served_urls().await {
        Ok(Some(served)) => Urls::from_served(&served),
        Ok(None) => return configured,
        Err(e) => {
            eprintln!("warning: the served URLs could not be read ({e}); using this configuration's");
            return configured;
        }
    };
    let names_a_server = config.public_url.is_some() || config.listen != Config::default().listen;
    if names_a_server && served.issuer != configured.issuer {
        eprintln!(
            "warning: this configuration names {}, but the server that last started on this store serves {}: \
             its URLs are used",
            configured.issuer, served.issuer
        );
    }
    served
}
