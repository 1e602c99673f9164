//! The ids that `latchkey admin` commands take as flags (`--project`, `--client`, `--user`, `--item-id`), each with
//! the hidden positional form of earlier releases, kept for one release.

use clap::Args;

/// Defines a named id flag `--$flag` with the hidden positional form of earlier releases (kept for one release).
macro_rules! id_arg {
    ($name:ident, $field:ident, $legacy:ident, $flag:literal, $doc:literal) => {
        #[doc = concat!("Names ", $doc, ": `--", $flag, "`.")]
        #[derive(Args)]
        pub(super) struct $name {
            #[doc = concat!("The ", $doc, ".")]
            #[arg(long = $flag, required_unless_present = stringify!($legacy))]
            $field: Option<String>,
            /// The positional form of earlier releases.
            #[arg(hide = true, conflicts_with = stringify!($field))]
            $legacy: Option<String>,
        }

        impl $name {
            pub(super) fn get(self) -> String {
                self.$field.or(self.$legacy).unwrap_or_default()
            }
        }
    };
}

id_arg!(ProjectId, project, legacy_project, "project", "project id");
id_arg!(ClientId, client, legacy_client, "client", "client id");
id_arg!(ItemId, item_id, legacy_item_id, "item-id", "listing's item ID");
